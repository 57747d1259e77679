//! Supervising one process (an agent session or a check): spawn in its own process group with
//! PDEATHSIG, tee its output to a log, and end it on a computed condition — its deadline
//! (counted through host suspend), silence past the stall grace, or a budget crossed mid-session
//! — leaving nothing of its group behind. One `select!` over output, exit, timers and the
//! parsed stream, so a stuck pipe can never block a deadline (nextest's executor shape).
//!
//! This room knows nothing about git, items or runs.

mod budget;
mod imp;
mod live;
mod liveness;
mod sweep;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::{Finished, SessionTotals, StreamParser};
use crate::clock::{Clock, SystemClock};

pub use budget::{
    Budget, Crossing, Guard, LedgerSeat, Limit, Metric, RunLedger, RunSpend, Scope, SessionKey,
};
pub use live::{LiveInput, LiveMessage};
pub use sweep::{
    Reach, SweepReport, become_subreaper, spare, spare_worktree, sweep, unspare, unspare_worktree,
};

/// How a supervised process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exited 0.
    Completed,
    /// Exited non-zero.
    Failed,
    /// Ran past its deadline and was ended.
    Timeout,
    /// Could not be started at all.
    SpawnFailed,
    /// Silent past the stall grace (no output, no parsed event, no CPU) and was ended.
    Stalled,
    /// Crossed a hard budget limit (budget_mode = enforce) and was ended.
    OverBudget,
    /// Died of a signal nobody here sent (SIGSEGV, SIGABRT, an OOM kill…).
    Crashed,
    /// The CLI hit a usage limit; see `resets_at`. Not the item's fault: no attempt is spent.
    RateLimited,
    /// Network, API or auth trouble; see `fault`. Not the item's fault: no attempt is spent.
    EnvFault,
    /// Ended because an operator asked the run to stop now.
    Stopped,
    /// The CLI reported success but refused tool calls for want of permission; `fault` names
    /// the tools and paths (`Write /repo/f.txt`). Its work goes to the check as usual.
    PermissionDenied,
}

impl Outcome {
    /// Whether the fault is the environment's (the same iteration runs again, no attempt spent).
    pub fn is_environmental(self) -> bool {
        matches!(self, Outcome::RateLimited | Outcome::EnvFault)
    }

    /// Whether the same iteration runs again (environment faults, an operator stop).
    pub fn reruns_iteration(self) -> bool {
        self.is_environmental() || self == Outcome::Stopped
    }
}

/// Everything one supervised process needs.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment on top of the inherited one.
    pub env: Vec<(String, String)>,
    /// When set, only the engine's variables these names allow are inherited (a trailing `*`
    /// matches a prefix); `env` is set on top either way. `None` inherits everything.
    pub env_allow: Option<Vec<String>>,
    /// A file connected to stdin (an agent's prompt); `None` is `/dev/null`.
    pub stdin: Option<PathBuf>,
    /// Bound counted on the boot clock (suspend counts), after which the group gets SIGTERM,
    /// then SIGKILL after `kill_grace`.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Where stdout and stderr are teed (appended to, never truncated).
    pub log: PathBuf,
    /// How many trailing bytes of output to keep in memory.
    pub tail_bytes: usize,
    /// A cap on what the log keeps (checks); `None`: every line, each cut at 256 KiB (agents).
    pub log_limit: Option<LogLimit>,
}

/// What a capped log keeps: the first `head` bytes of output (to the end of the line they end
/// in) and the last `tail` bytes (from the start of a line), with one line saying how much was
/// cut between them. Memory holds at most `tail` bytes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimit {
    pub head: u64,
    pub tail: usize,
}

/// Everything one agent session needs: the process, how to read it, and what bounds it.
pub struct SessionPacket {
    pub spec: ProcessSpec,
    /// Reads stdout into agent events (usage, rate limits, the result); `None` for plain text.
    pub parser: Option<Box<dyn StreamParser>>,
    /// Silence that ends the session as `stalled`; `None` disables stall detection.
    pub stall_grace: Option<Duration>,
    pub budget: Budget,
    /// Whether crossing a hard limit ends the session (`enforce`) or only reports it (`warn`).
    pub enforce_budget: bool,
    /// The stall gate in `log` mode: silence past the grace is reported (`Stalled`, again after
    /// every further grace) but does not end the session.
    pub log_stall: bool,
    pub clock: Arc<dyn Clock>,
    /// Where the CLI writes a usage log beside its stream (Codex: `$CODEX_HOME/sessions`, its
    /// rollout files): tailed while the session runs, once the stream names its session, and
    /// fed to the parser's [`StreamParser::live_usage`].
    pub usage_log_dir: Option<PathBuf>,
    /// `Some`: the CLI reads messages on stdin while it works (the adapter's `encode_input`):
    /// stdin is a pipe kept open while the session is live, the opening message written at
    /// spawn instead of connecting `spec.stdin`, later ones as they come, and closed after
    /// the final result.
    pub live_input: Option<Box<dyn LiveInput>>,
}

/// What happens during a session, reported upward the moment it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A soft share of a limit was crossed: time to wrap up.
    BudgetWarned(Crossing),
    /// A hard limit was crossed.
    BudgetTripped(Crossing),
    /// Silence past the grace; the session is being ended (unless the stall gate only logs).
    Stalled { silence: Duration },
    /// The CLI reported its usage limit as reached.
    RateLimited { resets_at: Option<i64> },
    /// The CLI named its session (Claude `system/init`, Codex `thread.started`): what a
    /// resume takes. Reported once per distinct id.
    AgentSession { id: String },
    /// The CLI took a message written to its live stdin (it echoed it back): the
    /// [`LiveMessage::id`] it was written with.
    InputDelivered { id: i64 },
    /// A message was written to the live stdin (the CLI has not necessarily taken it yet).
    InputWritten { id: i64 },
}

/// How a process ended, with what it said.
#[derive(Debug, Clone)]
pub struct ProcessEnd {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration: Duration,
    /// The last `tail_bytes` of stdout and stderr, interleaved as they arrived.
    pub tail: Vec<u8>,
    /// SHA-256 of all output, hex.
    pub output_sha256: String,
    /// Why it could not start, for `SpawnFailed`.
    pub spawn_error: Option<String>,
    /// What the parsed stream says was spent.
    pub totals: Option<SessionTotals>,
    /// The CLI's own account of its ending, when it gave one.
    pub finish: Option<Finished>,
    /// The session id the CLI last reported (what its resume takes).
    pub agent_session: Option<String>,
    /// For `RateLimited`: when the limit resets (epoch seconds), if the CLI said.
    pub resets_at: Option<i64>,
    /// For `EnvFault`: `transient` or `auth`; for `PermissionDenied`: what was refused
    /// (`Write /repo/f.txt; Bash printf ok > f.txt`).
    pub fault: Option<String>,
    /// The limit that ended it, for `OverBudget`.
    pub tripped: Option<Crossing>,
    /// From the moment an end was decided (deadline, stall, budget) to the process gone.
    pub ended_after: Option<Duration>,
}

/// Errors that stop supervision itself (not the supervised process's own failures).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("open the session log {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("wait for the supervised process")]
    Wait(#[source] std::io::Error),
    /// The task supervising it panicked (a bug of ours, not the agent's or the check's): the
    /// step fails like any step error, and the run goes on.
    #[error("supervise the process: its task panicked: {0}")]
    Panicked(String),
}

/// Runs one plain process (a check) to its end: deadline only, no parser, no budget.
pub fn run(spec: &ProcessSpec) -> Result<ProcessEnd, SessionError> {
    run_session(
        SessionPacket {
            spec: spec.clone(),
            parser: None,
            stall_grace: None,
            budget: Budget::default(),
            enforce_budget: false,
            log_stall: false,
            clock: Arc::new(SystemClock),
            usage_log_dir: None,
            live_input: None,
        },
        &mut |_| {},
    )
}

/// Runs one agent session to its end under supervision, reporting events as they happen.
pub fn run_session(
    packet: SessionPacket,
    on_event: &mut dyn FnMut(SessionEvent),
) -> Result<ProcessEnd, SessionError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SessionError::Runtime)?;
    rt.block_on(imp::supervise(packet, on_event))
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Sends SIGKILL to every process holding `dir` (and every orphan re-parented to this process,
/// within [`Reach::Session`]'s limits: never a live session's) and waits, bounded, until none is
/// left. Returns how many were signalled and whether any survived the wait.
pub fn kill_processes_under(dir: &std::path::Path) -> (usize, bool) {
    let report = sweep(dir, Duration::from_secs(5), Reach::Session, None);
    (report.killed.len(), !report.survivors.is_empty())
}

#[cfg(test)]
mod tests;
