//! `--as claude|codex`: the fake agent keeps the real CLI's session rules, so the engine's
//! launches are checked the way the real CLI would check them.
//!
//! Sessions live in `$HOME/.fake-agent/<cli>/<id>` (one empty file per session), like the real
//! CLIs keep theirs under `$HOME`:
//!
//! * Claude: `--session-id ID` starts session ID, and a second process with the same ID exits 1
//!   with `Error: Session ID ID is already in use.` on stderr (Claude Code 2.1.332, captured in
//!   `claude-*_ns_crash_resume*`); `--resume ID` continues it, and exits 1 with
//!   `No conversation found with session ID: ID` when there is none. `-p` is required.
//! * Codex: `exec [..] resume ID [..]` continues thread ID (exit 1 `Error: thread ID not found`
//!   when there is none); `exec` alone starts a new thread with a fresh id.
//!
//! `--version` prints the real CLI's version line and opens no session.
//!
//! The session id is what the script's `emit`, `busy` and `usage-limit` print as the stream's
//! `session_id` / `thread_id`. Every launch is appended to `$HOME/.fake-agent/<cli>/launches`
//! (`new ID` or `resume ID`), for tests to read.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A CLI whose rules the fake agent keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
}

impl Cli {
    /// By its `--as` name.
    pub fn from_name(name: &str) -> Option<Cli> {
        match name {
            "claude" => Some(Cli::Claude),
            "codex" => Some(Cli::Codex),
            _ => None,
        }
    }

    /// What the real CLI's `--version` prints (the version the adapters were tested with).
    pub fn version_line(self) -> String {
        match self {
            Cli::Claude => "2.1.332 (Claude Code)".to_owned(),
            Cli::Codex => "codex-cli 0.171.0".to_owned(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
        }
    }
}

/// Why the real CLI would refuse this launch: its stderr line (exit code 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// Applies the CLI's session rules to `args` (the CLI's own argv, without the program) and
/// returns the session this process runs.
pub fn open_session(cli: Cli, args: &[OsString], home: Option<&Path>) -> Result<String, Refused> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let home = home.ok_or_else(|| Refused("Error: HOME is not set".into()))?;
    let dir = home.join(".fake-agent").join(cli.name());
    std::fs::create_dir_all(&dir)
        .map_err(|e| Refused(format!("Error: cannot create {}: {e}", dir.display())))?;
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (id, resumed) = match cli {
        Cli::Claude => {
            if !args.iter().any(|a| a == "-p" || a == "--print") {
                return Err(Refused(
                    "Error: fake-agent --as claude expects a headless `-p` run".into(),
                ));
            }
            match (value_of("--resume"), value_of("--session-id")) {
                (Some(id), _) => (id, true),
                (None, Some(id)) => (id, false),
                (None, None) => (fresh_id(&dir), false),
            }
        }
        Cli::Codex => match value_of("resume") {
            Some(id) => (id, true),
            None => (fresh_id(&dir), false),
        },
    };
    if id.is_empty() || id.contains(['/', '\0']) || id.starts_with('.') {
        return Err(Refused(format!("Error: invalid session id `{id}`")));
    }
    let file = dir.join(&id);
    match (resumed, file.exists(), cli) {
        (false, true, Cli::Claude) => {
            return Err(Refused(format!(
                "Error: Session ID {id} is already in use."
            )));
        }
        (true, false, Cli::Claude) => {
            return Err(Refused(format!(
                "No conversation found with session ID: {id}"
            )));
        }
        (true, false, Cli::Codex) => {
            return Err(Refused(format!("Error: thread {id} not found")));
        }
        _ => {}
    }
    std::fs::write(&file, b"")
        .map_err(|e| Refused(format!("Error: cannot write {}: {e}", file.display())))?;
    let log = dir.join("launches");
    let line = format!("{} {id}\n", if resumed { "resume" } else { "new" });
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| Refused(format!("Error: cannot write {}: {e}", log.display())))?;
    Ok(id)
}

/// A new UUID-shaped id: the number of sessions so far in `dir`, plus the pid.
fn fresh_id(dir: &Path) -> String {
    let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        std::process::id(),
        n as u64
    )
}

/// `$HOME`, from the fake agent's environment lookup.
pub fn home(env: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn claude_refuses_a_reused_session_id_and_resumes_only_a_known_one() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let h = Some(home.path());
        let fresh = args(&["-p", "--session-id", "s1", "--output-format", "stream-json"]);
        assert_eq!(open_session(Cli::Claude, &fresh, h), Ok("s1".into()));
        assert_eq!(
            open_session(Cli::Claude, &fresh, h),
            Err(Refused("Error: Session ID s1 is already in use.".into()))
        );
        assert_eq!(
            open_session(Cli::Claude, &args(&["-p", "--resume", "s1"]), h),
            Ok("s1".into())
        );
        assert_eq!(
            open_session(Cli::Claude, &args(&["-p", "--resume", "s2"]), h),
            Err(Refused("No conversation found with session ID: s2".into()))
        );
        let log = std::fs::read_to_string(home.path().join(".fake-agent/claude/launches"))
            .unwrap_or_default();
        assert_eq!(log, "new s1\nresume s1\n");
    }

    #[test]
    fn codex_starts_threads_and_resumes_known_ones() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let h = Some(home.path());
        let t = open_session(Cli::Codex, &args(&["exec", "--json", "-"]), h)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let again = open_session(Cli::Codex, &args(&["exec", "--json", "-"]), h)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_ne!(t, again);
        let resume = args(&["exec", "resume", &t, "--json", "-"]);
        assert_eq!(open_session(Cli::Codex, &resume, h), Ok(t));
        assert!(open_session(Cli::Codex, &args(&["exec", "resume", "nope"]), h).is_err());
    }
}
