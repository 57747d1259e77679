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
mod raw;
mod template;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use duration::{DURATION_FORMS, format_duration, parse_duration};
pub use error::{ConfigError, SourceError};
pub use template::template;

/// The configuration file's name, at the repository root.
pub const FILE_NAME: &str = "nightshift.toml";

/// Default for `[check].timeout`.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Default for `[limits].max_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 3;
/// Default for `[limits].max_attempts`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;

/// A validated `nightshift.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub agent: AgentConfig,
    pub check: CheckConfig,
    pub limits: Limits,
    pub integrate: IntegrateConfig,
    /// A Markdown checklist to take items from, relative to the repository root.
    pub plan: Option<PathBuf>,
    /// The `[[item]]` tables, in file order.
    pub items: Vec<ItemConfig>,
}

/// Which agent adapter runs a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// Any program: `[agent].command` is run as given.
    Command,
}

impl AgentKind {
    /// Every kind accepted in `[agent].kind`.
    pub const ALL: &'static [AgentKind] = &[AgentKind::Command];

    /// The name used in `nightshift.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Command => "command",
        }
    }
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
    /// The argv, run in the attempt's worktree; never empty, `command[0]` never empty.
    pub command: Vec<String>,
}

/// `[check]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckConfig {
    /// A shell command line run with `sh -c`; exit 0 means green. `None` only when every item
    /// has its own check.
    pub command: Option<String>,
    /// How long one check run may take.
    pub timeout: Duration,
}

/// `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Agent sessions per attempt, at least 1.
    pub max_iterations: u32,
    /// Attempts per item, at least 1.
    pub max_attempts: u32,
}

/// `[integrate]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrateConfig {
    /// The branch green work is merged into; `None` means the branch checked out when the run
    /// starts.
    pub target: Option<String>,
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
    /// Byte span of the `[[item]]` table in the source: from its header to the end of its last
    /// value.
    pub span: Range<usize>,
}

impl Config {
    /// The check command line for an item: its own, else `[check].command`.
    pub fn check_command<'a>(&'a self, item_check: Option<&'a str>) -> Option<&'a str> {
        item_check.or(self.check.command.as_deref())
    }
}

/// Reads, parses and validates a `nightshift.toml`. Errors name the file as `path` is written.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let source = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&source, &path.display().to_string())
}

/// Parses and validates the text of a `nightshift.toml`; `file_name` is used in errors.
pub fn parse(source: &str, file_name: &str) -> Result<Config, ConfigError> {
    raw::parse(source, file_name).map_err(ConfigError::from)
}

#[cfg(test)]
mod tests;
