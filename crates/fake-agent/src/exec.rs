//! The interpreter: runs a parsed [`Script`] against a [`Context`].
//!
//! Nothing here reads the process cwd or environment; [`Context`] carries both, so tests run
//! scripts against a temporary directory without touching global state.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use crate::claude::{self, SessionInfo};
use crate::script::{Emit, Script, Step, Var};

/// Everything a script can see of its invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The work tree: relative paths in the script resolve against it.
    pub cwd: PathBuf,
    /// `NIGHTSHIFT_ITEM`.
    pub item: Option<String>,
    /// `NIGHTSHIFT_ATTEMPT`, 1-based.
    pub attempt: u64,
    /// `NIGHTSHIFT_ITERATION`, 1-based.
    pub iteration: u64,
    /// `NIGHTSHIFT_PROMPT_FILE`.
    pub prompt_file: Option<PathBuf>,
    /// `NIGHTSHIFT_FEEDBACK_FILE`.
    pub feedback_file: Option<PathBuf>,
}

/// An environment variable the fake agent cannot make sense of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A counter that is not a positive integer.
    #[error("{var} must be a positive integer, got `{value}`")]
    NotPositive {
        /// The variable's name.
        var: &'static str,
        /// Its value (lossily decoded).
        value: String,
    },
    /// A value that must be text but is not UTF-8.
    #[error("{var} is not valid UTF-8")]
    NotUtf8 {
        /// The variable's name.
        var: &'static str,
    },
}

impl Context {
    /// A context for `cwd` with no item, attempt 1 and iteration 1.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            item: None,
            attempt: 1,
            iteration: 1,
            prompt_file: None,
            feedback_file: None,
        }
    }

    /// Reads the `NIGHTSHIFT_*` variables through `lookup` (e.g. `|key| std::env::var_os(key)`).
    /// Absent or empty values fall back to the defaults of [`Context::new`].
    pub fn from_env(
        cwd: impl Into<PathBuf>,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, EnvError> {
        let present = |var: &str| lookup(var).filter(|value| !value.is_empty());
        let counter = |var: &'static str| match present(var) {
            None => Ok(1),
            Some(value) => value
                .to_str()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .filter(|&n| n >= 1)
                .ok_or_else(|| EnvError::NotPositive {
                    var,
                    value: value.to_string_lossy().into_owned(),
                }),
        };
        let item = match present("NIGHTSHIFT_ITEM") {
            None => None,
            Some(value) => Some(value.into_string().map_err(|_| EnvError::NotUtf8 {
                var: "NIGHTSHIFT_ITEM",
            })?),
        };
        Ok(Self {
            cwd: cwd.into(),
            item,
            attempt: counter("NIGHTSHIFT_ATTEMPT")?,
            iteration: counter("NIGHTSHIFT_ITERATION")?,
            prompt_file: present("NIGHTSHIFT_PROMPT_FILE").map(PathBuf::from),
            feedback_file: present("NIGHTSHIFT_FEEDBACK_FILE").map(PathBuf::from),
        })
    }

    fn value_of(&self, var: Var) -> u64 {
        match var {
            Var::Iteration => self.iteration,
            Var::Attempt => self.attempt,
        }
    }
}

/// The exit code for a runtime failure of a step (and for syntax and usage errors).
pub const FAILURE_EXIT: i32 = 2;

/// What to do after a step.
enum Flow {
    Continue,
    Exit(i32),
}

/// Runs `script`: stdout output goes to `out`, stderr output and error messages to `err`.
/// Returns the exit code: that of an `exit` step, 0 at the end of the script, or 2 when a
/// step fails (after printing `fake-agent: <file>:<line>: <what failed>` to `err`).
pub fn execute<O, E>(script: &Script, ctx: &Context, out: &mut O, err: &mut E) -> i32
where
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    let started = Instant::now();
    for statement in &script.statements {
        if let Some(guard) = statement.guard
            && !guard.holds(|var| ctx.value_of(var))
        {
            continue;
        }
        match run_step(&statement.step, ctx, started, out, err) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Exit(code)) => return finish(code, out, err),
            Err(message) => {
                // If stderr itself is broken there is nobody left to tell; the code still says it.
                let _ = writeln!(
                    err,
                    "fake-agent: {}:{}: {message}",
                    script.name, statement.line
                );
                return FAILURE_EXIT;
            }
        }
    }
    finish(0, out, err)
}

fn finish<O, E>(code: i32, out: &mut O, err: &mut E) -> i32
where
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    match out.flush() {
        Ok(()) => code,
        Err(error) => {
            let _ = writeln!(err, "fake-agent: cannot flush stdout: {error}");
            FAILURE_EXIT
        }
    }
}

fn run_step<O, E>(
    step: &Step,
    ctx: &Context,
    started: Instant,
    out: &mut O,
    err: &mut E,
) -> Result<Flow, String>
where
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    match step {
        Step::Write { path, content } => {
            let target = path.under(&ctx.cwd);
            create_parent(&target, &path.to_string())?;
            fs::write(&target, content).map_err(|e| format!("write {path}: {e}"))?;
        }
        Step::Append { path, content } => {
            let target = path.under(&ctx.cwd);
            create_parent(&target, &path.to_string())?;
            append(&target, content.as_bytes()).map_err(|e| format!("append {path}: {e}"))?;
        }
        Step::Replace { path, from, to } => {
            let target = path.under(&ctx.cwd);
            let text =
                fs::read_to_string(&target).map_err(|e| format!("replace in {path}: {e}"))?;
            if !text.contains(from.as_str()) {
                return Err(format!("replace in {path}: text {from:?} not found"));
            }
            fs::write(&target, text.replacen(from.as_str(), to, 1))
                .map_err(|e| format!("replace in {path}: {e}"))?;
        }
        Step::Delete { path } => {
            let target = path.under(&ctx.cwd);
            let metadata =
                fs::symlink_metadata(&target).map_err(|e| format!("delete {path}: {e}"))?;
            let removed = if metadata.is_dir() {
                fs::remove_dir_all(&target)
            } else {
                fs::remove_file(&target)
            };
            removed.map_err(|e| format!("delete {path}: {e}"))?;
        }
        Step::Mkdir { path } => {
            fs::create_dir_all(path.under(&ctx.cwd)).map_err(|e| format!("mkdir {path}: {e}"))?;
        }
        Step::Print(text) => write_line(out, text).map_err(|e| format!("print to stdout: {e}"))?,
        Step::Stderr(text) => write_line(err, text).map_err(|e| format!("print to stderr: {e}"))?,
        Step::Emit(Emit::Claude(emit)) => {
            let session = SessionInfo {
                session_id: claude::session_id(ctx.item.as_deref(), ctx.attempt, ctx.iteration),
                cwd: ctx.cwd.to_string_lossy().into_owned(),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            };
            for value in emit.stream(&session) {
                let line = serde_json::to_string(&value)
                    .map_err(|e| format!("emit claude: cannot encode JSON: {e}"))?;
                write_line(out, &line).map_err(|e| format!("emit claude: {e}"))?;
            }
        }
        Step::Record { path } => {
            let target = ctx.cwd.join(path);
            let shown = path.display().to_string();
            create_parent(&target, &shown)?;
            let record = json!({
                "item": ctx.item,
                "attempt": ctx.attempt,
                "iteration": ctx.iteration,
                "cwd": ctx.cwd.to_string_lossy(),
                "prompt_file": ctx.prompt_file.as_deref().map(Path::to_string_lossy),
                "feedback_file": ctx.feedback_file.as_deref().map(Path::to_string_lossy),
            });
            let mut line = serde_json::to_string(&record)
                .map_err(|e| format!("record {shown}: cannot encode JSON: {e}"))?;
            line.push('\n');
            // One write of a whole line under O_APPEND, so concurrent agents don't interleave.
            append(&target, line.as_bytes()).map_err(|e| format!("record {shown}: {e}"))?;
        }
        Step::Sleep(duration) => std::thread::sleep(*duration),
        Step::Exit(code) => return Ok(Flow::Exit(*code)),
    }
    Ok(Flow::Continue)
}

/// Writes `text` and a newline, then flushes, so a reader sees each line as it happens.
fn write_line<W: Write + ?Sized>(to: &mut W, text: &str) -> std::io::Result<()> {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    to.write_all(line.as_bytes())?;
    to.flush()
}

fn create_parent(target: &Path, shown: &str) -> Result<(), String> {
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the directory of {shown}: {e}")),
        _ => Ok(()),
    }
}

fn append(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)?
        .write_all(bytes)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::Value;

    use super::*;
    use crate::script::parse;

    struct Run {
        code: i32,
        out: String,
        err: String,
    }

    fn run_in(dir: &Path, ctx: &Context, text: &str) -> Run {
        let script = match parse("t.fake", text) {
            Ok(script) => script,
            Err(error) => panic!("parse error: {error}"),
        };
        assert_eq!(ctx.cwd, dir);
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = execute(&script, ctx, &mut out, &mut err);
        Run {
            code,
            out: String::from_utf8_lossy(&out).into_owned(),
            err: String::from_utf8_lossy(&err).into_owned(),
        }
    }

    fn tempdir() -> tempfile::TempDir {
        match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(error) => panic!("tempdir: {error}"),
        }
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    #[test]
    fn file_steps_change_the_work_tree() {
        let dir = tempdir();
        let root = dir.path();
        fs::write(root.join("old.txt"), "bye").unwrap_or_else(|e| panic!("{e}"));
        let run = run_in(
            root,
            &Context::new(root),
            "write src/greet.sh <<EOF\ngreet() { echo \"hello, $1\"; }\nEOF\n\
             append notes/n.txt <<END\none\nEND\nappend notes/n.txt \"two\\n\"\n\
             replace src/greet.sh \"hello\" \"Hello\"\ndelete old.txt\nmkdir some/dir\n\
             mkdir gone/deep\ndelete gone\n",
        );
        assert_eq!((run.code, run.err.as_str(), run.out.as_str()), (0, "", ""));
        assert_eq!(
            read(&root.join("src/greet.sh")),
            "greet() { echo \"Hello, $1\"; }\n"
        );
        assert_eq!(read(&root.join("notes/n.txt")), "one\ntwo\n");
        assert!(!root.join("old.txt").exists());
        assert!(root.join("some/dir").is_dir());
        assert!(!root.join("gone").exists());
    }

    #[test]
    fn replace_changes_only_the_first_occurrence() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "write f \"a a a\"\nreplace f \"a\" \"b\"\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        assert_eq!(read(&root.join("f")), "b a a");
    }

    #[test]
    fn missing_replace_target_fails_with_line_number_and_stops() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "write f \"abc\"\n\nreplace f \"zzz\" \"y\"\nwrite after \"x\"\n",
        );
        assert_eq!(run.code, 2);
        assert!(run.err.starts_with("fake-agent: t.fake:3: "), "{}", run.err);
        assert!(run.err.contains("\"zzz\" not found"), "{}", run.err);
        assert!(
            !root.join("after").exists(),
            "steps after a failure must not run"
        );
    }

    #[test]
    fn io_failures_report_the_line() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(root, &Context::new(root), "print \"a\"\ndelete nope\n");
        assert_eq!(run.code, 2);
        assert_eq!(run.out, "a\n");
        assert!(
            run.err.starts_with("fake-agent: t.fake:2: delete nope: "),
            "{}",
            run.err
        );
        let run = run_in(root, &Context::new(root), "replace nope \"a\" \"b\"\n");
        assert_eq!(run.code, 2);
        assert!(run.err.contains("t.fake:1: replace in nope"), "{}", run.err);
    }

    #[test]
    fn print_stderr_and_exit() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "print \"out\\tline\"\nstderr \"err line\"\nexit 3\nprint \"never\"\n",
        );
        assert_eq!(run.code, 3);
        assert_eq!(run.out, "out\tline\n");
        assert_eq!(run.err, "err line\n");
    }

    #[test]
    fn when_blocks_follow_attempt_and_iteration() {
        let dir = tempdir();
        let root = dir.path();
        let script = "print \"start\"\nwhen iteration >= 2\nprint \"late\"\nwhen attempt == 1\n\
                      print \"first-attempt\"\nwhen attempt != 1\nexit 7\nalways\nprint \"end\"\n";
        let mut ctx = Context::new(root);
        let run = run_in(root, &ctx, script);
        assert_eq!(
            (run.code, run.out.as_str()),
            (0, "start\nfirst-attempt\nend\n")
        );
        ctx.iteration = 2;
        let run = run_in(root, &ctx, script);
        assert_eq!(
            (run.code, run.out.as_str()),
            (0, "start\nlate\nfirst-attempt\nend\n")
        );
        ctx.attempt = 2;
        let run = run_in(root, &ctx, script);
        assert_eq!((run.code, run.out.as_str()), (7, "start\nlate\n"));
    }

    #[test]
    fn record_appends_one_json_line_per_run() {
        let dir = tempdir();
        let root = dir.path();
        let log = root.join("logs/calls.jsonl");
        let mut ctx = Context::new(root);
        ctx.item = Some("item-9".into());
        ctx.feedback_file = Some("/tmp/feedback.md".into());
        let absolute = format!("record {}\n", log.display());
        assert_eq!(run_in(root, &ctx, &absolute).code, 0);
        ctx.attempt = 2;
        ctx.iteration = 3;
        assert_eq!(run_in(root, &ctx, "record logs/calls.jsonl\n").code, 0);
        let text = read(&log);
        let records: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0]["item"], "item-9");
        assert_eq!(records[0]["attempt"], 1);
        assert_eq!(records[0]["iteration"], 1);
        assert_eq!(records[0]["cwd"], root.to_string_lossy().as_ref());
        assert_eq!(records[0]["feedback_file"], "/tmp/feedback.md");
        assert!(records[0]["prompt_file"].is_null());
        assert_eq!(
            (&records[1]["attempt"], &records[1]["iteration"]),
            (&Value::from(2), &Value::from(3))
        );
    }

    #[test]
    fn emitted_claude_stream_is_consistent() {
        let dir = tempdir();
        let root = dir.path();
        let mut ctx = Context::new(root);
        ctx.item = Some("item-1".into());
        let run = run_in(
            root,
            &ctx,
            "emit claude text=\"Done.\" turns=4 input=1203 output=301 cache_read=15001 cache_write=2003 cost=0.05\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        let lines: Vec<Value> = run
            .out
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "system",
                "assistant",
                "assistant",
                "assistant",
                "assistant",
                "result"
            ]
        );
        let result = &lines[5];
        let mut seen = BTreeSet::new();
        let mut sums: BTreeMap<String, u64> = BTreeMap::new();
        for line in &lines[1..5] {
            if seen.insert(line["message"]["id"].to_string()) {
                let Some(usage) = line["message"]["usage"].as_object() else {
                    panic!("no usage in {line}");
                };
                for (key, value) in usage {
                    if let Some(n) = value.as_u64() {
                        *sums.entry(key.clone()).or_default() += n;
                    }
                }
            }
        }
        assert_eq!(seen.len(), 4);
        for key in [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ] {
            assert_eq!(Some(sums[key]), result["usage"][key].as_u64(), "{key}");
        }
        assert_eq!(result["usage"]["input_tokens"], 1203);
        let sid = claude::session_id(Some("item-1"), 1, 1);
        assert!(lines.iter().all(|l| l["session_id"] == sid.as_str()));
        assert_eq!(lines[0]["cwd"], root.to_string_lossy().as_ref());
    }

    #[test]
    fn context_from_env() {
        let vars: BTreeMap<&str, &str> = [
            ("NIGHTSHIFT_ITEM", "item-3"),
            ("NIGHTSHIFT_ATTEMPT", "2"),
            ("NIGHTSHIFT_ITERATION", "4"),
            ("NIGHTSHIFT_PROMPT_FILE", "/p.md"),
            ("NIGHTSHIFT_FEEDBACK_FILE", ""),
        ]
        .into();
        let ctx = Context::from_env("/w", |k| vars.get(k).map(OsString::from));
        assert_eq!(
            ctx,
            Ok(Context {
                cwd: "/w".into(),
                item: Some("item-3".into()),
                attempt: 2,
                iteration: 4,
                prompt_file: Some("/p.md".into()),
                feedback_file: None,
            })
        );
        assert_eq!(Context::from_env("/w", |_| None), Ok(Context::new("/w")));
        for bad in ["0", "-1", "x", "1.5"] {
            let error = Context::from_env("/w", |k| {
                (k == "NIGHTSHIFT_ITERATION").then(|| OsString::from(bad))
            });
            assert_eq!(
                error,
                Err(EnvError::NotPositive {
                    var: "NIGHTSHIFT_ITERATION",
                    value: bad.into()
                })
            );
        }
    }

    #[test]
    fn a_broken_stdout_is_an_error_not_a_panic() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let script = match parse("t.fake", "print \"x\"\n") {
            Ok(script) => script,
            Err(error) => panic!("{error}"),
        };
        let mut err = Vec::new();
        let code = execute(
            &script,
            &Context::new("/nonexistent"),
            &mut Broken,
            &mut err,
        );
        assert_eq!(code, 2);
        assert!(String::from_utf8_lossy(&err).contains("t.fake:1: print to stdout"));
    }
}
