//! The launching half of an adapter: how one CLI is started unattended.
//!
//! Each CLI's [`Adapter`] lives in that CLI's file (beside its stream parser and classifier):
//! its command line, the environment it may see, its permission/sandbox posture, and whether
//! and how it resumes its own session. The engine asks the adapter and knows no CLI flag.
//!
//! Rules every adapter keeps:
//! * the prompt never goes in argv (it can be long, and argv is world-readable in `/proc`): it
//!   goes on stdin where the CLI reads it, else by file;
//! * the environment is an allowlist ([`BASE_ENV`], the CLI's own variables, the user's
//!   `[agent] env_pass`), never the engine's whole environment;
//! * the default posture lets the CLI write in its worktree and run the item's commands
//!   without a human, as root and as a normal user, and never disables the CLI's own sandbox
//!   or permission system unless the user asked for it.

use std::path::{Path, PathBuf};

use super::StreamParser;
use crate::config::{AgentConfig, AgentKind};

/// Variables every agent CLI may see: what a shell, a toolchain and TLS need.
pub const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "PYENV_ROOT",
    "NVM_DIR",
    "NIGHTSHIFT_*",
];

/// What one session launch is built from.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    pub agent: &'a AgentConfig,
    /// The prompt, written to a file before launch.
    pub prompt_file: &'a Path,
    /// A fresh CLI session id, unique to this process (journaled before launch). Used only
    /// when the CLI takes one and `resume` is `None`.
    pub session_id: &'a str,
    /// Resume this CLI session (the id the CLI reported) instead of starting one.
    pub resume: Option<&'a str>,
    /// nightshift's own confinement (Landlock, through the session helper) holds for this
    /// process: a CLI whose own sandbox cannot run inside it (Codex's bubblewrap needs to write
    /// `/proc/self/uid_map`) leaves the confining to nightshift.
    pub confined: bool,
}

/// A command line ready to spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    /// A file to connect to the CLI's stdin (the prompt); `None` is `/dev/null`.
    pub stdin: Option<PathBuf>,
    /// Variables set on top of the allowed ones (e.g. `IS_SANDBOX=1` when the user opted in).
    pub env: Vec<(String, String)>,
    /// Names (a trailing `*` matches a prefix) of the engine's variables the CLI may see;
    /// `None` passes the whole environment (`kind = "command"`, which is the user's own program).
    pub env_allow: Option<Vec<String>>,
}

/// How (and whether) a CLI continues its own session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeRule {
    /// No resume: a rerun starts a fresh session.
    Never,
    /// By the session id the CLI reported (Claude `--resume <id>`, Codex `exec resume <id>`).
    ById,
    /// The CLI's latest session in the worktree (Gemini `--resume latest`: its ids are not
    /// accepted by `--resume`).
    Latest,
}

/// One agent CLI.
pub trait Adapter: Sync {
    fn kind(&self) -> AgentKind;

    /// The program looked up on PATH when `[agent] binary` is not set.
    fn default_binary(&self) -> &'static str;

    /// The command line of one session.
    fn launch(&self, inv: &Invocation<'_>) -> Launch;

    /// The variables this CLI reads (credentials, endpoints, its own home), on top of
    /// [`BASE_ENV`].
    fn cli_env(&self) -> &'static [&'static str] {
        &[]
    }

    /// Variables any one of which supplies API credentials (doctor reports them by name,
    /// never by value; a CLI logged in through its own login needs none of them).
    fn credentials(&self) -> &'static [&'static str] {
        &[]
    }

    /// The permission/sandbox posture in words, for doctor and the docs.
    fn posture(&self, agent: &AgentConfig) -> String;

    /// The stream parser of this CLI's stdout; `None` for plain text.
    fn parser(&self, agent: &AgentConfig) -> Option<Box<dyn StreamParser>>;

    fn resume(&self) -> ResumeRule {
        ResumeRule::Never
    }

    /// `Some`: the CLI reads its input as a stream of messages on stdin (Claude's
    /// `--input-format stream-json`), and this is `text` as one message. The session then
    /// writes the prompt (the launch's `stdin` file) as the first message, keeps stdin open
    /// while the session is live (an operator's `tell` is written to it) and closes it after
    /// the CLI's final result. `None`: the `stdin` file is connected as is.
    fn encode_input(&self, _text: &str) -> Option<Vec<u8>> {
        None
    }

    /// Where the CLI writes a usage log beside its stream, tailed while it runs (Codex:
    /// `$CODEX_HOME/sessions`).
    fn usage_log_dir(&self) -> Option<PathBuf> {
        None
    }

    /// The CLI versions this adapter was tested against, for doctor.
    fn tested(&self) -> Option<TestedRange> {
        None
    }
}

/// An inclusive range of tested CLI versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestedRange {
    pub low: (u32, u32, u32),
    pub high: (u32, u32, u32),
}

impl TestedRange {
    /// Whether `version` lies in the range.
    pub fn contains(&self, version: (u32, u32, u32)) -> bool {
        self.low <= version && version <= self.high
    }
}

impl std::fmt::Display for TestedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, b, c) = self.low;
        let (x, y, z) = self.high;
        if self.low == self.high {
            write!(f, "{a}.{b}.{c}")
        } else {
            write!(f, "{a}.{b}.{c}–{x}.{y}.{z}")
        }
    }
}

/// The first `N.N.N` in a `--version` output.
pub fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|word| {
            let mut parts = word.split('.').filter(|p| !p.is_empty());
            let a = parts.next()?.parse().ok()?;
            let b = parts.next()?.parse().ok()?;
            let c = parts.next()?.parse().ok()?;
            Some((a, b, c))
        })
}

/// The adapter of a kind.
pub fn adapter_for(kind: AgentKind) -> &'static dyn Adapter {
    match kind {
        AgentKind::Command => &CommandAdapter,
        AgentKind::Claude => &super::claude::ClaudeAdapter,
        AgentKind::Codex => &super::codex::CodexAdapter,
        AgentKind::Gemini => &super::gemini::GeminiAdapter,
        AgentKind::Aider => &super::aider::AiderAdapter,
    }
}

/// The program a session runs (for the preflight's PATH lookup and receipts).
pub fn program(agent: &AgentConfig) -> Option<String> {
    match agent.kind {
        AgentKind::Command => agent.command.first().cloned(),
        kind => Some(
            agent
                .binary
                .clone()
                .unwrap_or_else(|| adapter_for(kind).default_binary().to_owned()),
        ),
    }
}

/// The binary of a CLI adapter: `[agent] binary`, else its usual name.
pub(crate) fn binary(agent: &AgentConfig, default: &str) -> String {
    agent.binary.clone().unwrap_or_else(|| default.to_owned())
}

/// The allowlist for a CLI: [`BASE_ENV`], the CLI's variables, `[agent] env_pass`.
pub(crate) fn allowlist(adapter: &dyn Adapter, agent: &AgentConfig) -> Option<Vec<String>> {
    Some(
        BASE_ENV
            .iter()
            .chain(adapter.cli_env())
            .map(|s| (*s).to_owned())
            .chain(agent.policy.env_pass.iter().cloned())
            .collect(),
    )
}

/// Whether `name` is allowed by `patterns` (a trailing `*` matches a prefix).
pub fn env_allowed(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => p == name,
    })
}

/// `kind = "command"`: the user's program, as given, with the whole environment.
struct CommandAdapter;

impl Adapter for CommandAdapter {
    fn kind(&self) -> AgentKind {
        AgentKind::Command
    }

    fn default_binary(&self) -> &'static str {
        ""
    }

    fn launch(&self, inv: &Invocation<'_>) -> Launch {
        let a = inv.agent;
        Launch {
            argv: a.command.iter().chain(&a.args).cloned().collect(),
            stdin: None,
            env: Vec::new(),
            env_allow: None,
        }
    }

    fn posture(&self, _agent: &AgentConfig) -> String {
        "your own command: nightshift passes no permission flags".to_owned()
    }

    fn parser(&self, agent: &AgentConfig) -> Option<Box<dyn StreamParser>> {
        match agent.format {
            crate::config::OutputFormat::ClaudeStream => super::parser_for("claude"),
            crate::config::OutputFormat::Text => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AgentPolicy, OutputFormat};

    fn agent(kind: AgentKind) -> AgentConfig {
        AgentConfig {
            kind,
            command: if kind == AgentKind::Command {
                vec!["sh".into(), "a.sh".into()]
            } else {
                vec![]
            },
            binary: None,
            model: Some("m1".into()),
            args: vec!["--extra".into()],
            format: OutputFormat::Text,
            policy: AgentPolicy::default(),
        }
    }

    fn launch(a: &AgentConfig, resume: Option<&str>) -> Launch {
        launch_in(a, resume, false)
    }

    fn launch_in(a: &AgentConfig, resume: Option<&str>, confined: bool) -> Launch {
        adapter_for(a.kind).launch(&Invocation {
            agent: a,
            prompt_file: Path::new("/logs/p.md"),
            session_id: "sid",
            resume,
            confined,
        })
    }

    fn argv(a: &AgentConfig, resume: Option<&str>) -> Vec<String> {
        launch(a, resume).argv
    }

    const TOOLS: &str = "Bash,Read,Edit,MultiEdit,Write,NotebookEdit,Glob,Grep,TodoWrite";

    #[test]
    fn claude_runs_unattended_with_accept_edits_and_the_prompt_on_stdin() {
        let a = agent(AgentKind::Claude);
        let l = launch(&a, None);
        assert_eq!(
            l.argv,
            [
                "claude",
                "-p",
                "--session-id",
                "sid",
                "--input-format",
                "stream-json",
                "--replay-user-messages",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                TOOLS,
                "--model",
                "m1",
                "--extra"
            ]
        );
        assert_eq!(l.stdin.as_deref(), Some(Path::new("/logs/p.md")));
        assert!(l.env.is_empty(), "no IS_SANDBOX unless the user opts in");
        // The prompt goes as a stream-json user message; stdin stays open for `tell`.
        let line = adapter_for(AgentKind::Claude)
            .encode_input("hi \"you\"\n")
            .expect("claude takes stream-json input");
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "user", "message": {"role": "user", "content": "hi \"you\"\n"}})
        );
        assert_eq!(adapter_for(AgentKind::Codex).encode_input("hi"), None);
        // A rerun resumes: the fresh id is never passed again.
        let r = argv(&a, Some("old"));
        assert_eq!(&r[..4], ["claude", "-p", "--resume", "old"]);
        assert!(!r.contains(&"--session-id".to_owned()));

        let mut bypass = agent(AgentKind::Claude);
        bypass.policy.permission_mode = Some("bypassPermissions".into());
        bypass.policy.allowed_tools = Some(vec![]);
        bypass.policy.is_sandbox = true;
        let l = launch(&bypass, None);
        assert!(
            l.argv
                .windows(2)
                .any(|w| w == ["--permission-mode", "bypassPermissions"])
        );
        assert!(!l.argv.contains(&"--allowedTools".to_owned()));
        assert_eq!(l.env, [("IS_SANDBOX".to_owned(), "1".to_owned())]);
    }

    #[test]
    fn codex_writes_in_its_worktree_and_user_args_cannot_break_exec_resume() {
        let a = agent(AgentKind::Codex);
        let tail = [
            "--json",
            "--skip-git-repo-check",
            "-c",
            "sandbox_mode=\"workspace-write\"",
            "-c",
            "approval_policy=\"never\"",
            "-m",
            "m1",
            "-",
        ];
        let fresh = launch(&a, None);
        let mut want = vec!["codex", "exec", "--extra"];
        want.extend(tail);
        assert_eq!(fresh.argv, want);
        assert_eq!(fresh.stdin.as_deref(), Some(Path::new("/logs/p.md")));
        let mut want = vec!["codex", "exec", "--extra", "resume", "th-1"];
        want.extend(tail);
        assert_eq!(argv(&a, Some("th-1")), want);
    }

    #[test]
    fn codex_inside_nightshifts_confinement_runs_without_its_own_sandbox_unless_told() {
        let a = agent(AgentKind::Codex);
        let confined = launch_in(&a, None, true).argv;
        assert!(
            confined.contains(&"sandbox_mode=\"danger-full-access\"".to_owned()),
            "{confined:?}"
        );
        assert!(!confined.contains(&"sandbox_mode=\"workspace-write\"".to_owned()));
        // The user's choice stands, confined or not.
        let mut chosen = agent(AgentKind::Codex);
        chosen.policy.permission_mode = Some("read-only".into());
        let argv = launch_in(&chosen, None, true).argv;
        assert!(
            argv.contains(&"sandbox_mode=\"read-only\"".to_owned()),
            "{argv:?}"
        );
    }

    #[test]
    fn gemini_skips_the_trust_prompt_and_approves_tools() {
        let a = agent(AgentKind::Gemini);
        let l = launch(&a, None);
        assert_eq!(
            l.argv,
            [
                "gemini",
                "--output-format",
                "stream-json",
                "--skip-trust",
                "--approval-mode",
                "yolo",
                "-m",
                "m1",
                "--extra",
                "-p",
                super::super::gemini::PROMPT_POINTER,
            ]
        );
        assert_eq!(l.stdin.as_deref(), Some(Path::new("/logs/p.md")));
        assert!(
            argv(&a, Some("x"))
                .windows(2)
                .any(|w| w == ["--resume", "latest"])
        );
    }

    #[test]
    fn aider_keeps_gitignore_alone_and_reports_real_usage() {
        let a = agent(AgentKind::Aider);
        assert_eq!(
            argv(&a, None),
            [
                "aider",
                "--message-file",
                "/logs/p.md",
                "--yes-always",
                "--no-auto-commits",
                "--no-gitignore",
                "--no-stream",
                "--no-check-update",
                "--no-show-release-notes",
                "--no-analytics",
                "--disable-playwright",
                "--model",
                "m1",
                "--extra"
            ]
        );
    }

    #[test]
    fn aider_never_opens_a_browser_or_asks_on_a_first_run() {
        let l = launch(&agent(AgentKind::Aider), None);
        // `--yes-always` would say yes to the release notes (a browser), the analytics opt-in
        // and installing Playwright; aider 0.86.2's --help names these switches.
        let help = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/agent-streams/real-2026-12/aider_help.txt"
        ));
        for flag in [
            "--no-show-release-notes",
            "--no-analytics",
            "--disable-playwright",
        ] {
            assert!(l.argv.iter().any(|a| a == flag), "{flag}");
            assert!(help.contains(flag), "aider 0.86.2 knows {flag}");
        }
        // "Open URL for more info?" is answered yes too: the browser is a no-op.
        assert_eq!(l.env, [("BROWSER".to_owned(), "true".to_owned())]);
    }

    #[test]
    fn a_command_runs_as_given_and_programs_resolve() {
        let c = agent(AgentKind::Command);
        assert_eq!(argv(&c, None), ["sh", "a.sh", "--extra"]);
        assert_eq!(launch(&c, None).env_allow, None, "a command inherits all");
        let mut custom = agent(AgentKind::Claude);
        custom.binary = Some("/opt/claude".into());
        assert_eq!(program(&custom).as_deref(), Some("/opt/claude"));
        assert_eq!(program(&agent(AgentKind::Codex)).as_deref(), Some("codex"));
    }

    #[test]
    fn the_environment_is_an_allowlist() {
        let mut a = agent(AgentKind::Claude);
        a.policy.env_pass = vec!["MY_TOKEN".into(), "CORP_*".into()];
        let allow = launch(&a, None).env_allow.unwrap_or_default();
        for name in [
            "PATH",
            "HOME",
            "LC_ALL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "NIGHTSHIFT_ITEM",
            "MY_TOKEN",
            "CORP_PROXY",
        ] {
            assert!(env_allowed(&allow, name), "{name}");
        }
        for name in [
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "IS_SANDBOX",
            "MY_TOKEN2",
        ] {
            assert!(!env_allowed(&allow, name), "{name}");
        }
        let codex = launch(&agent(AgentKind::Codex), None)
            .env_allow
            .unwrap_or_default();
        assert!(env_allowed(&codex, "OPENAI_API_KEY") && env_allowed(&codex, "CODEX_HOME"));
        assert!(!env_allowed(&codex, "ANTHROPIC_API_KEY"));
        let gemini = launch(&agent(AgentKind::Gemini), None)
            .env_allow
            .unwrap_or_default();
        assert!(env_allowed(&gemini, "GEMINI_API_KEY"));
        assert!(env_allowed(&gemini, "GOOGLE_GEMINI_BASE_URL"));
        let aider = launch(&agent(AgentKind::Aider), None)
            .env_allow
            .unwrap_or_default();
        assert!(env_allowed(&aider, "OPENAI_API_BASE"));
    }

    #[test]
    fn versions_parse_and_ranges_hold() {
        assert_eq!(parse_version("2.1.332 (Claude Code)"), Some((2, 1, 332)));
        assert_eq!(parse_version("codex-cli 0.171.0\n"), Some((0, 171, 0)));
        assert_eq!(parse_version("aider 0.86.2"), Some((0, 86, 2)));
        assert_eq!(parse_version("no version"), None);
        let r = adapter_for(AgentKind::Claude)
            .tested()
            .unwrap_or(TestedRange {
                low: (0, 0, 0),
                high: (0, 0, 0),
            });
        assert!(r.contains((2, 1, 200)) && !r.contains((2, 2, 0)));
        assert_eq!(r.to_string(), "2.1.197–2.1.332");
    }
}
