//! The command line: argument parsing, finding the script, and wiring it to the interpreter.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::exec::{Context, FAILURE_EXIT, execute};
use crate::script::{WorkPath, parse};

/// `--help` text.
pub const USAGE: &str = "\
fake-agent: a scripted stand-in for an agent CLI

Usage:
  fake-agent --script FILE       run the script FILE
  fake-agent --script-dir DIR    run DIR/<NIGHTSHIFT_ITEM>.fake, or else DIR/default.fake
  fake-agent --help              print this help

Arguments after `--` are ignored (so a wrapper may pass agent flags through), unless
`--as claude|codex` is given: then they are read as that CLI's argv and its session rules
are kept (a reused `--session-id` is refused, `--resume` needs a known session; state in
$HOME/.fake-agent).
The script runs in the current directory. It reads NIGHTSHIFT_ITEM, NIGHTSHIFT_ATTEMPT,
NIGHTSHIFT_ITERATION (1-based; absent means 1), NIGHTSHIFT_PROMPT_FILE and
NIGHTSHIFT_FEEDBACK_FILE. Exit code: the script's `exit N`, 0 at its end, 2 on any error.
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Print [`USAGE`].
    Help,
    /// Run one script.
    Run(ScriptLocation),
}

/// Where the script comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptLocation {
    /// `--script FILE`.
    File(PathBuf),
    /// `--script-dir DIR`: `DIR/<item>.fake`, else `DIR/default.fake`.
    Dir(PathBuf),
}

/// A command line that makes no sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Parses the arguments (without `argv[0]`).
pub fn parse_args<I, S>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut args = args.into_iter().map(Into::into);
    let mut location: Option<ScriptLocation> = None;
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            return Err(UsageError(format!(
                "unknown argument `{}`",
                arg.to_string_lossy()
            )));
        };
        let (flag, inline_value) = match text.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(OsString::from(value))),
            _ => (text, None),
        };
        let make: fn(PathBuf) -> ScriptLocation = match flag {
            "--help" | "-h" => return Ok(Command::Help),
            "--" => break,
            "--as" => {
                // Read by `cli_mode`; here only its value is skipped.
                match inline_value.or_else(|| args.next()) {
                    Some(v) if crate::real::Cli::from_name(&v.to_string_lossy()).is_some() => {
                        continue;
                    }
                    _ => return Err(UsageError("`--as` needs `claude` or `codex`".to_owned())),
                }
            }
            "--script" => ScriptLocation::File,
            "--script-dir" => ScriptLocation::Dir,
            _ => return Err(UsageError(format!("unknown argument `{text}`"))),
        };
        let value = match inline_value.or_else(|| args.next()) {
            Some(value) if !value.is_empty() => value,
            _ => return Err(UsageError(format!("`{flag}` needs a value"))),
        };
        if location.is_some() {
            return Err(UsageError(
                "give exactly one of `--script FILE` or `--script-dir DIR`".to_owned(),
            ));
        }
        location = Some(make(PathBuf::from(value)));
    }
    // `--help` after `--` is ignored like everything else there.
    location
        .map(Command::Run)
        .ok_or_else(|| UsageError("missing `--script FILE` or `--script-dir DIR`".to_owned()))
}

/// [`crate::run_cli`] with the cwd, the environment and the output streams passed in.
/// Relative script paths resolve against `cwd`.
pub fn run_cli_in<I, S, O, E>(
    args: I,
    cwd: &Path,
    env: impl Fn(&str) -> Option<OsString>,
    out: &mut O,
    err: &mut E,
) -> i32
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    match prepare(args, cwd, env) {
        Ok(Prepared::Help) => match out.write_all(USAGE.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => 0,
            Err(error) => {
                let _ = writeln!(err, "fake-agent: cannot print help: {error}");
                FAILURE_EXIT
            }
        },
        Ok(Prepared::Run(script, ctx)) => execute(&script, &ctx, out, err),
        Ok(Prepared::Version(line)) => match writeln!(out, "{line}") {
            Ok(()) => 0,
            Err(_) => FAILURE_EXIT,
        },
        Ok(Prepared::Refused(line)) => {
            let _ = writeln!(err, "{line}");
            1
        }
        Err(message) => {
            let _ = writeln!(err, "fake-agent: {message}");
            FAILURE_EXIT
        }
    }
}

enum Prepared {
    Help,
    Run(crate::Script, Context),
    /// The real CLI would refuse this launch: its stderr line, exit 1.
    Refused(String),
    /// `--version` under `--as`: the line the real CLI prints.
    Version(String),
}

/// `--as NAME` (before `--`) and the CLI's argv after `--`.
fn cli_mode(args: &[OsString]) -> Option<(crate::real::Cli, Vec<OsString>)> {
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (own, rest) = args.split_at(split);
    let mut cli = None;
    for (i, a) in own.iter().enumerate() {
        let text = a.to_string_lossy();
        let value = match text.strip_prefix("--as=") {
            Some(v) => Some(v.to_owned()),
            None if text == "--as" => own.get(i + 1).map(|v| v.to_string_lossy().into_owned()),
            None => None,
        };
        if let Some(v) = value {
            cli = crate::real::Cli::from_name(&v);
        }
    }
    Some((cli?, rest.iter().skip(1).cloned().collect()))
}

fn prepare<I, S>(
    args: I,
    cwd: &Path,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Prepared, String>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let raw: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let location = match parse_args(raw.iter().cloned()) {
        Ok(Command::Help) => return Ok(Prepared::Help),
        Ok(Command::Run(location)) => location,
        Err(error) => return Err(format!("{error} (see `fake-agent --help`)")),
    };
    let home = crate::real::home(&env);
    let mut ctx = Context::from_env(cwd, env).map_err(|error| error.to_string())?;
    if let Some((cli, cli_args)) = cli_mode(&raw) {
        if cli_args.iter().any(|a| a == "--version" || a == "-v") {
            return Ok(Prepared::Version(cli.version_line()));
        }
        match crate::real::open_session(cli, &cli_args, home.as_deref()) {
            Ok(id) => ctx.cli_session = Some(id),
            Err(refused) => return Ok(Prepared::Refused(refused.0)),
        }
    }
    let path = match location {
        ScriptLocation::File(file) => cwd.join(file),
        ScriptLocation::Dir(dir) => find_in_dir(&cwd.join(dir), ctx.item.as_deref())?,
    };
    let name = path.display().to_string();
    let text = fs::read_to_string(&path).map_err(|e| format!("cannot read script {name}: {e}"))?;
    let script = parse(&name, &text).map_err(|error| error.to_string())?;
    Ok(Prepared::Run(script, ctx))
}

/// `DIR/<item>.fake` if it exists, else `DIR/default.fake`.
fn find_in_dir(dir: &Path, item: Option<&str>) -> Result<PathBuf, String> {
    let fallback = dir.join("default.fake");
    let Some(item) = item else {
        return if fallback.is_file() {
            Ok(fallback)
        } else {
            Err(format!(
                "no script: {} does not exist (NIGHTSHIFT_ITEM is not set)",
                fallback.display()
            ))
        };
    };
    let relative = WorkPath::new(&format!("{item}.fake"))
        .map_err(|why| format!("NIGHTSHIFT_ITEM `{item}` cannot name a script file: {why}"))?;
    let specific = dir.join(relative.as_path());
    if specific.is_file() {
        Ok(specific)
    } else if fallback.is_file() {
        Ok(fallback)
    } else {
        Err(format!(
            "no script for item `{item}`: neither {} nor {} exists",
            specific.display(),
            fallback.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Command, UsageError> {
        parse_args(list.iter().copied())
    }

    fn usage_error(list: &[&str]) -> String {
        match args(list) {
            Ok(command) => panic!("expected a usage error for {list:?}, got {command:?}"),
            Err(error) => error.0,
        }
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(
            args(&["--script", "a.fake"]),
            Ok(Command::Run(ScriptLocation::File("a.fake".into())))
        );
        assert_eq!(
            args(&["--script=a.fake"]),
            Ok(Command::Run(ScriptLocation::File("a.fake".into())))
        );
        assert_eq!(
            args(&["--script-dir", "d", "--", "-p", "prompt", "--script", "x"]),
            Ok(Command::Run(ScriptLocation::Dir("d".into())))
        );
        assert_eq!(args(&["--help"]), Ok(Command::Help));
        assert_eq!(args(&["--script", "a", "-h"]), Ok(Command::Help));
    }

    #[test]
    fn rejected_forms() {
        assert!(usage_error(&[]).contains("missing"));
        assert!(usage_error(&["--script"]).contains("needs a value"));
        assert!(usage_error(&["--script="]).contains("needs a value"));
        assert!(usage_error(&["--script", "a", "--script-dir", "b"]).contains("exactly one"));
        assert!(usage_error(&["--script", "a", "--script", "b"]).contains("exactly one"));
        assert!(usage_error(&["--verbose"]).contains("unknown argument `--verbose`"));
        assert!(usage_error(&["a.fake"]).contains("unknown argument `a.fake`"));
    }

    #[test]
    fn script_dir_lookup() {
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(error) => panic!("{error}"),
        };
        let root = dir.path();
        let error = find_in_dir(root, Some("it-1")).err().unwrap_or_default();
        assert!(error.contains("it-1.fake"), "{error}");
        assert!(error.contains("default.fake"), "{error}");
        let error = find_in_dir(root, None).err().unwrap_or_default();
        assert!(error.contains("default.fake"), "{error}");
        assert!(error.contains("NIGHTSHIFT_ITEM is not set"), "{error}");

        let write = |name: &str| fs::write(root.join(name), "").unwrap_or_else(|e| panic!("{e}"));
        write("default.fake");
        assert_eq!(
            find_in_dir(root, Some("it-1")),
            Ok(root.join("default.fake"))
        );
        assert_eq!(find_in_dir(root, None), Ok(root.join("default.fake")));
        write("it-1.fake");
        assert_eq!(find_in_dir(root, Some("it-1")), Ok(root.join("it-1.fake")));
        let error = find_in_dir(root, Some("../x")).err().unwrap_or_default();
        assert!(error.contains("cannot name a script file"), "{error}");
    }
}
