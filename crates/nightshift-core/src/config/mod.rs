//! `nightshift.toml`: the schema, its defaults, and validation with source spans.
//!
//! The file is deserialized into private raw structs (every table denies unknown keys) and then
//! validated into the public types below. Every problem comes back as a [`SourceError`] with the
//! byte span, line and column of the offending text, a message and, where there is one, a hint.
//!
//! ```toml
//! plan = "TODO.md"                 # optional Markdown checklist, relative to the repo root
//! [agent]
//! kind = "command"                 # optional, default "command" (the only kind for now)
//! command = ["sh", "agent.sh"]     # argv, run in the attempt's worktree
//! [check]
//! command = "sh check.sh"          # `sh -c` command line, exit 0 = green
//! timeout = "10m"                  # default 10m
//! [limits]
//! max_iterations = 3               # default 3, >= 1
//! max_attempts = 2                 # default 2, >= 1
//! [integrate]
//! target = "main"                  # default: the branch checked out when the run starts
//! [[item]]
//! id = "add-greeting"
//! prompt = "Add a greet() function …"
//! check = "sh check.sh greet"      # optional per-item override
//! ```

mod duration;
mod error;
mod notify;
mod raw;
mod review;
mod template;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use duration::{DURATION_FORMS, format_duration, parse_duration};
pub use error::{ConfigError, SourceError};
pub use notify::{
    AlertConfig, CommandChannelConfig, DEFAULT_COMMAND_TIMEOUT, DEFAULT_NO_SHIP_HOURS,
    NotifyConfig, WebhookConfig, WebhookFormat,
};

pub use review::{
    DEFAULT_MAX_REVIEW_CYCLES, DEFAULT_RISKY_LINES, OnTimeout, ReviewConfig, ReviewSetup,
    ReviewWhen, TriageAction, TriageConfig,
};
pub use template::template;

/// The configuration file's name, at the repository root.
pub const FILE_NAME: &str = "nightshift.toml";

/// Default for `[check].timeout`.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Default for `[limits].max_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 3;
/// Default for `[limits].max_attempts`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;

/// Default for `[limits].session_timeout`.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(90 * 60);
/// Default for `[limits].stall_grace`.
pub const DEFAULT_STALL_GRACE: Duration = Duration::from_secs(10 * 60);
/// Default for `[limits].stall_nudges`.
pub const DEFAULT_STALL_NUDGES: u32 = 2;
/// Default for `[limits].kill_grace`.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(10);
/// Default for `[limits].fault_backoff`.
pub const DEFAULT_FAULT_BACKOFF: Duration = Duration::from_secs(30);
/// Default for `[integrate].remote_timeout`: one `git push`, one `pr_command`.
pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Default for `[limits].budget_soft`: the share of a hard limit at which a wrap-up is asked.
pub const DEFAULT_BUDGET_SOFT: f64 = 0.8;
/// Default for `[limits].cache_read_weight`.
pub const DEFAULT_CACHE_READ_WEIGHT: f64 = 0.1;
/// Default for `[limits].rate_limit_max_wait`.
pub const DEFAULT_RATE_LIMIT_MAX_WAIT: Duration = Duration::from_secs(6 * 3600);

/// A validated `nightshift.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub agent: AgentConfig,
    pub check: CheckConfig,
    pub limits: Limits,
    /// How long and how quietly one session may run (`[limits]`).
    pub session: SessionLimits,
    /// Work bounds per session, item and run (`[limits]`).
    pub budget: BudgetLimits,
    /// Gate modes (`[gates]`, and the gates file for process gates).
    pub gates: crate::gate::Gates,
    /// Files and directories (usually gitignored) copied from the repository root into every
    /// attempt's worktree (`[worktree] seed`).
    pub seed: Vec<PathBuf>,
    /// Environment variables for every agent session and check of an attempt (`[worktree] env`),
    /// as written: `{repo}` in a value stands for the repository root (see
    /// [`Config::worktree_env`]).
    pub worktree_env: Vec<(String, String)>,
    pub integrate: IntegrateConfig,
    /// Integrity rules (`[guards]`).
    pub guards: GuardConfig,
    /// `[run]`: how the run process behaves on this machine.
    pub run: RunConfig,
    /// A Markdown checklist to take items from, relative to the repository root.
    pub plan: Option<PathBuf>,
    /// The `[[item]]` tables, in file order.
    pub items: Vec<ItemConfig>,
    /// Where alerts go (`[notify]`).
    pub notify: NotifyConfig,
    /// When alerts are raised (`[alert]`).
    pub alert: AlertConfig,
    /// `[review]`, `[triage]`, `[agent.review]` and `[agent.second_opinion]`.
    pub review: ReviewSetup,
    /// `[sandbox]`: how agent and check processes are confined.
    pub sandbox: SandboxConfig,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Refuse to start a run unless full confinement holds (`require`, default false: the run
    /// says at start which level held, and each receipt records it).
    pub require: bool,
}

/// Which agent adapter runs a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// Any program: `[agent].command` is run as given.
    Command,
    /// Claude Code: `claude -p … --output-format stream-json --verbose`.
    Claude,
    /// OpenAI Codex: `codex exec --json …`.
    Codex,
    /// Gemini CLI: `gemini -p … --output-format stream-json`.
    Gemini,
    /// aider: `aider --message-file … --yes-always` (judged by the oracle and the diff only).
    Aider,
}

impl AgentKind {
    /// Every kind accepted in `[agent].kind`.
    pub const ALL: &'static [AgentKind] = &[
        AgentKind::Command,
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Aider,
    ];

    /// The name used in `nightshift.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Command => "command",
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Aider => "aider",
        }
    }
}

/// How a `command` agent's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// Plain text: only the exit code and the output's liveness are used.
    #[default]
    Text,
    /// Claude Code's stream-json (usage, rate limits and the result are read from it).
    ClaudeStream,
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[agent]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    pub kind: AgentKind,
    /// For `kind = "command"`: the argv, run in the attempt's worktree; never empty,
    /// `command[0]` never empty. Empty for the other kinds.
    pub command: Vec<String>,
    /// Another executable for the CLI of `kind` (default: its usual name on PATH).
    pub binary: Option<String>,
    /// The model to ask the CLI for.
    pub model: Option<String>,
    /// Extra arguments appended to the adapter's command line.
    pub args: Vec<String>,
    /// For `kind = "command"`: how its output is read.
    pub format: OutputFormat,
    /// The CLI's permission posture and environment (`permission_mode`, `allowed_tools`,
    /// `is_sandbox`, `env_pass`).
    pub policy: AgentPolicy,
}

/// `[agent]` keys that set what a CLI may do unattended and what it may see.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentPolicy {
    /// Claude `--permission-mode` (default `acceptEdits`), Codex `sandbox_mode` (default
    /// `workspace-write`), Gemini `--approval-mode` (default `yolo`). Validated per kind.
    pub permission_mode: Option<String>,
    /// Claude `--allowedTools`; `None` is the default list, empty passes no flag.
    pub allowed_tools: Option<Vec<String>>,
    /// Claude: set `IS_SANDBOX=1` (the user says the machine is a sandbox, so
    /// `bypassPermissions` may run as root).
    pub is_sandbox: bool,
    /// More of the engine's variables the CLI may see (a trailing `*` matches a prefix).
    pub env_pass: Vec<String>,
}

/// `[check]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckConfig {
    /// A shell command line run with `sh -c`; exit 0 means green. `None` only when every item
    /// has its own check.
    pub command: Option<String>,
    /// How long one check run may take.
    pub timeout: Duration,
    /// How the check's output is read into test results (`format`; default: detected).
    pub format: crate::check::results::FormatChoice,
    /// A results file the check writes (e.g. JUnit XML), relative to the worktree; parsed
    /// instead of the output when present.
    pub results: Option<PathBuf>,
    /// Iterations without a new best failing set before an attempt ends early
    /// (`no_progress_after`, default 3).
    pub no_progress_after: u32,
    /// `network`: `None` when unset (no route out where the kernel allows, else the host's).
    pub network: Option<crate::sandbox::Network>,
}

/// `[guards]`: integrity rules evaluated before a green check can count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardConfig {
    /// Globs (relative to the repository root) an agent must not change. `.nightshift/**`
    /// and `nightshift.toml` are always blocked.
    pub blocked_paths: Vec<String>,
    /// Globs naming test files (for assertion counts and `protect_tests`).
    pub test_paths: Vec<String>,
    /// Run the check with the test files the attempt changed restored from its base.
    pub protect_tests: bool,
}

/// Paths every run blocks, whatever the config says.
pub const ALWAYS_BLOCKED: &[&str] = &[".nightshift/**", "nightshift.toml"];

/// Default `[guards] test_paths`: the usual homes of tests in Rust, Python, JS/TS, Go, Ruby.
pub const DEFAULT_TEST_PATHS: &[&str] = &[
    "tests/**",
    "test/**",
    "**/tests/**",
    "**/test/**",
    "**/__tests__/**",
    "spec/**",
    "**/*_test.go",
    "**/test_*.py",
    "**/*_test.py",
    "**/*.test.{js,jsx,ts,tsx,mjs,cjs}",
    "**/*.spec.{js,jsx,ts,tsx,mjs,cjs}",
    "**/*_spec.rb",
];

/// Default for `[check] no_progress_after`.
pub const DEFAULT_NO_PROGRESS_AFTER: u32 = 3;

impl Default for GuardConfig {
    fn default() -> GuardConfig {
        GuardConfig {
            blocked_paths: Vec::new(),
            test_paths: DEFAULT_TEST_PATHS.iter().map(|s| (*s).to_owned()).collect(),
            protect_tests: false,
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Agent sessions per attempt, at least 1.
    pub max_iterations: u32,
    /// Attempts per item, at least 1.
    pub max_attempts: u32,
}

/// Session bounds from `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Wall-time bound of one session, counted through host suspend.
    pub timeout: Duration,
    /// Silence (no output, no parsed event, no CPU, no file change) before a nudge.
    pub stall_grace: Duration,
    /// Nudges before a silent session ends as `stalled`.
    pub stall_nudges: u32,
    /// Between SIGTERM and SIGKILL when a session is ended.
    pub kill_grace: Duration,
    /// First wait after an API or network fault; doubles per retry, at most 10 minutes.
    pub fault_backoff: Duration,
}

/// Whether budget limits end sessions or only warn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BudgetMode {
    /// Crossing a hard limit ends the session as `over_budget`.
    #[default]
    Enforce,
    /// Crossing a hard limit is journaled and written to ATTENTION; nothing is ended.
    Warn,
}

/// Work bounds from `[limits]`. Tokens are weighted: input + output + cache writes + cache
/// reads × `cache_read_weight`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetLimits {
    pub session_tokens: Option<u64>,
    pub session_turns: Option<u32>,
    pub session_usd: Option<f64>,
    pub item_tokens: Option<u64>,
    pub run_tokens: Option<u64>,
    pub run_usd: Option<f64>,
    pub mode: BudgetMode,
    /// The share of a hard limit at which a wrap-up is asked for (0 < soft < 1).
    pub soft: f64,
    pub cache_read_weight: f64,
    /// The longest a reported usage-limit reset is waited for before retrying anyway.
    pub rate_limit_max_wait: Duration,
}

impl Default for BudgetLimits {
    fn default() -> Self {
        BudgetLimits {
            session_tokens: None,
            session_turns: None,
            session_usd: None,
            item_tokens: None,
            run_tokens: None,
            run_usd: None,
            mode: BudgetMode::Enforce,
            soft: DEFAULT_BUDGET_SOFT,
            cache_read_weight: DEFAULT_CACHE_READ_WEIGHT,
            rate_limit_max_wait: DEFAULT_RATE_LIMIT_MAX_WAIT,
        }
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            timeout: DEFAULT_SESSION_TIMEOUT,
            stall_grace: DEFAULT_STALL_GRACE,
            stall_nudges: DEFAULT_STALL_NUDGES,
            kill_grace: DEFAULT_KILL_GRACE,
            fault_backoff: DEFAULT_FAULT_BACKOFF,
        }
    }
}

/// When an item counts as shipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Done {
    /// On the local target branch.
    #[default]
    Local,
    /// On the remote (`push = true`): until then the item is `integrated_local`.
    Pushed,
}

/// How an item's work lands on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// One commit per item on top of the target (the agent's commits stay under the preserve ref).
    #[default]
    Squash,
    /// A merge commit whose second parent is the attempt's history.
    Merge,
    /// The attempt's commits replayed one by one onto the target (authors kept).
    Rebase,
}

/// `[integrate]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrateConfig {
    /// The branch green work is merged into; `None` means the branch checked out when the run
    /// starts.
    pub target: Option<String>,
    pub strategy: Strategy,
    /// Push the target to `remote` after every local advance.
    pub push: bool,
    pub remote: String,
    pub done: Done,
    /// Run after a successful push, per item; placeholders `{item}`, `{commit}`, `{target}`,
    /// `{remote}`, `{branch}`.
    pub pr_command: Vec<String>,
    /// The deadline of one `git push` and of one `pr_command`: past it the child's process
    /// group is killed and the push counts as refused (retried), the command as failed.
    pub remote_timeout: Duration,
}

impl Default for IntegrateConfig {
    fn default() -> Self {
        IntegrateConfig {
            target: None,
            strategy: Strategy::Squash,
            push: false,
            remote: "origin".into(),
            done: Done::Local,
            pr_command: Vec::new(),
            remote_timeout: DEFAULT_REMOTE_TIMEOUT,
        }
    }
}

/// `[run]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// Keep the machine awake while a run works (`systemd-inhibit`, `caffeinate`).
    pub prevent_sleep: bool,
    /// Items whose sessions may run at once (default 1). Items run together only when their
    /// declared `paths` cannot overlap; an item without `paths` runs alone.
    pub max_parallel: u32,
}

/// The most sessions `[run] max_parallel` may ask for.
pub const MAX_PARALLEL: u32 = 64;

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            prevent_sleep: true,
            max_parallel: 1,
        }
    }
}

/// One `[[item]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemConfig {
    /// A valid item id (see [`crate::plan::validate_id`]), unique in the file.
    pub id: String,
    /// What the agent is asked to do; never blank, trimmed.
    pub prompt: String,
    /// A check command line for this item only, replacing `[check].command`.
    pub check: Option<String>,
    /// The paths the item works on (repository-relative globs): items run in parallel only
    /// when their paths cannot overlap. Empty: undeclared, the item runs alone.
    pub paths: Vec<String>,
    /// Byte span of the `[[item]]` table in the source: from its header to the end of its last
    /// value.
    pub span: Range<usize>,
}

impl Config {
    /// `[worktree] env` for the repository at `root`: `{repo}` in a value is replaced by the
    /// root's path, so one cache serves every attempt's worktree.
    pub fn worktree_env(&self, root: &Path) -> Vec<(String, String)> {
        let repo = root.display().to_string();
        self.worktree_env
            .iter()
            .map(|(name, value)| (name.clone(), value.replace("{repo}", &repo)))
            .collect()
    }

    /// The check command line for an item: its own, else `[check].command`.
    pub fn check_command<'a>(&'a self, item_check: Option<&'a str>) -> Option<&'a str> {
        item_check.or(self.check.command.as_deref())
    }
}

/// Reads, parses and validates a `nightshift.toml`. Errors name the file as `path` is written.
/// The file's directory is the repository root: every path the config names must stay inside
/// it, symlinks resolved.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with_source(path).map(|(config, _)| config)
}

/// [`load`], also returning the exact text the config was parsed from (what a run pins into
/// its journal, issue 12).
pub fn load_with_source(path: &Path) -> Result<(Config, String), ConfigError> {
    let source = read_source(path)?;
    parse_at(&source, path).map(|config| (config, source))
}

/// The text of a `nightshift.toml`, bounded.
pub fn read_source(path: &Path) -> Result<String, ConfigError> {
    crate::bounded::read_to_string(path, crate::bounded::CONFIG_BYTES).map_err(|source| {
        ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Parses `source` as the config at `path` (its directory the repository root, paths checked
/// against its symlinks). A run's pinned copy is parsed this way.
pub fn parse_at(source: &str, path: &Path) -> Result<Config, ConfigError> {
    let root = path.parent().map(|parent| {
        if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        }
    });
    raw::parse(source, &path.display().to_string(), root).map_err(ConfigError::from)
}

/// Parses and validates the text of a `nightshift.toml`; `file_name` is used in errors. Paths
/// are checked lexically only (no repository to resolve symlinks in): [`load`] does both.
pub fn parse(source: &str, file_name: &str) -> Result<Config, ConfigError> {
    raw::parse(source, file_name, None).map_err(ConfigError::from)
}

/// Whether a path the config names stays inside the directory it is relative to, by its text
/// alone: not empty, not absolute, no `..`. The error is a fragment after the path.
pub fn lexically_inside(path: &Path) -> Result<(), &'static str> {
    use std::path::Component;
    if path.as_os_str().is_empty() {
        return Err("is empty");
    }
    for component in path.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err("goes up with `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("is absolute"),
        }
    }
    Ok(())
}

/// A config path that leads out of its root.
#[derive(Debug, thiserror::Error)]
pub enum PathEscape {
    /// By its text: absolute, `..`, empty.
    #[error("{0}")]
    Lexical(&'static str),
    /// Through a symlink on the way.
    #[error("leads out of it through the symlink {link}")]
    Symlink { link: PathBuf },
    /// The root itself cannot be resolved.
    #[error("cannot be resolved: {0}")]
    Io(#[from] std::io::Error),
}

/// Resolves `relative` under `root`, following the symlinks of the part that exists, and
/// returns the resolved path when it is still inside `root` (the part that does not exist yet
/// has only plain components, so it cannot leave). Used before nightshift reads or removes a
/// file a config path names, in the repository or in an attempt's worktree, whose symlinks an
/// agent may have made.
pub fn resolve_inside(root: &Path, relative: &Path) -> Result<PathBuf, PathEscape> {
    lexically_inside(relative).map_err(PathEscape::Lexical)?;
    let root = root.canonicalize()?;
    let mut existing = root.clone();
    let mut rest = Vec::new();
    let mut components = relative.components();
    for component in components.by_ref() {
        let next = existing.join(component);
        if std::fs::symlink_metadata(&next).is_err() {
            rest.push(component);
            break;
        }
        let resolved = next
            .canonicalize()
            .map_err(|_| PathEscape::Symlink { link: next.clone() })?;
        if !resolved.starts_with(&root) {
            return Err(PathEscape::Symlink { link: next });
        }
        existing = resolved;
    }
    rest.extend(components);
    Ok(rest.into_iter().fold(existing, |path, c| path.join(c)))
}

#[cfg(test)]
mod tests;
