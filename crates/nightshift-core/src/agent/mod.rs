//! Agent adapters: one per CLI. Pure: bytes in, [`AgentEvent`]s out; tested on recorded streams.
//!
//! This is the parsing half of an adapter. A [`StreamParser`] is fed the agent's stdout one line
//! at a time (as bytes: lines may be invalid UTF-8, may hold a JSON object with junk glued on, or
//! may be banners that are not JSON at all) and answers with normalised [`AgentEvent`]s. It never
//! fails: a line it cannot read becomes [`AgentEvent::Malformed`], which callers log and skip.
//!
//! * [`claude::ClaudeParser`]: `claude -p --output-format stream-json --verbose` (and, through
//!   [`claude::parse_json_output`], the single object of `--output-format json`).
//! * [`codex::CodexParser`]: `codex exec --json`.
//! * [`gemini::GeminiParser`]: `gemini --output-format stream-json`.
//!
//! Usage is reported twice, for two readers. [`AgentEvent::Usage`] carries *deltas* as they
//! arrive (deduplicated: a Claude message's usage counts once per `message.id`), for budgets that
//! trip mid-session. [`StreamParser::totals`] is the best statement of the session so far: when
//! the CLI reports authoritative totals (Claude's `result.usage`) they replace the running sum.
//! The deltas never go negative, so when a final report is *smaller* than the running sum in some
//! field, the sum of the deltas over-counts that field (the safe direction for a budget).
//!
//! Reset times in text ("try again at 3:28 PM", "resets 4pm (UTC)", "try again in 3 days 6 hours")
//! are resolved against the wall-clock time given with [`StreamParser::set_now`]; without it only
//! absolute forms resolve. See [`reset`].

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

pub use adapter::{Adapter, Invocation, Launch, ResumeRule, adapter_for};

pub mod adapter;
pub mod aider;
mod classify;
pub mod claude;
pub mod codex;
pub mod gemini;
mod line;
pub mod reset;
mod wire;

#[cfg(test)]
mod real_tests;
#[cfg(test)]
mod tests;

/// One normalised thing an agent said. One name per idea, whatever the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The CLI opened (or resumed) a session. `session_id` is what `--resume` takes (Codex: the
    /// thread id).
    SessionStarted {
        session_id: String,
        model: Option<String>,
    },
    /// Assistant text (Gemini: one `delta` fragment per event).
    Text { text: String },
    /// The agent asked for a tool.
    ToolCall { name: String },
    /// A tool call came back.
    ToolResult { ok: bool },
    /// A tool changed this file (reported when the change succeeded).
    FileChanged { path: String },
    /// Tokens spent since the previous `Usage` event: a delta, already deduplicated.
    Usage(Usage),
    /// The CLI is retrying an API call itself: "waiting on the API", not hung.
    Retrying {
        status: Option<u16>,
        delay_ms: Option<u64>,
        reason: String,
    },
    /// The provider's view of the subscription's rate limit.
    RateLimit {
        state: RateLimitState,
        /// Epoch seconds.
        resets_at: Option<i64>,
        /// For example `five_hour`, `seven_day`.
        kind: Option<String>,
    },
    /// The CLI refused a tool call for want of permission (Claude `permission_denials`; Codex a
    /// command it declined or its sandbox refused). `target` is the path or command.
    PermissionDenied {
        tool: String,
        target: Option<String>,
    },
    /// The CLI took a user message written to its stdin (Claude `--replay-user-messages`: a
    /// `user` line with `isReplay`), mid-turn or as a new turn; `text` is the message as it
    /// echoed it.
    InputAccepted { text: String },
    /// The session (one CLI process) ended and said how.
    Finished(Finished),
    /// A well-formed event of a type this parser does not know.
    Unknown { raw_type: String },
    /// A line that could not be read. Logged and skipped, never fatal.
    Malformed { line: usize, error: String },
}

/// Rate-limit state as the provider reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateLimitState {
    Allowed,
    Warning,
    Rejected,
}

/// How a session ended, with what the CLI reported about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    pub kind: FinishKind,
    /// Total cost in USD as the CLI reports it (Claude only; all models, side models included).
    pub cost_usd: Option<f64>,
    /// Turns as the CLI counts them (Claude `num_turns`, which `--max-turns` is checked against;
    /// it is not always the number of API calls). Codex: `turn.started` events so far.
    pub turns: Option<u32>,
    /// The authoritative totals when the CLI reports them (Claude `result.usage`: main model
    /// only; Codex: the sum of `turn.completed`; Gemini: `result.stats`).
    pub result_usage: Option<Usage>,
}

/// The `fault` of a session whose CLI could not resume the session it was given.
pub const RESUME_UNAVAILABLE: &str = "resume_unavailable";

/// The classification of an ending, from structured fields first and text patterns last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FinishKind {
    /// The CLI says it finished normally (whether the work is good is the oracle's call).
    Ok,
    /// Stopped at `--max-turns` (or the CLI's turn limit).
    MaxTurns,
    /// Stopped at `--max-budget-usd`.
    MaxBudget,
    /// A subscription or quota limit; retry after `resets_at` (epoch s) when known.
    QuotaExhausted { resets_at: Option<i64> },
    /// Overload, server error, dropped connection: retry soon.
    Transient,
    /// Credentials (or billing) need a human: halt and notify.
    Auth,
    /// The prompt no longer fits the context window: resuming loops, start a fresh session.
    ContextOverflow,
    /// The CLI could not resume the session it was given (Claude: "No conversation found with
    /// session ID …" when the process that opened it was killed before its transcript was
    /// written): the same iteration runs again in a fresh session, spending no attempt.
    ResumeUnavailable,
    /// Any other failure the agent reported.
    AgentError { message: String },
}

/// Tokens, split the way budgets need them. `input` excludes cached tokens for every CLI
/// (Claude's convention); `reasoning` is the part of `output` that was reasoning (informational,
/// already counted in `output`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub reasoning: u64,
}

impl Usage {
    /// The usual weight of a cache read relative to a fresh input token.
    pub const DEFAULT_CACHE_READ_WEIGHT: f64 = 0.1;

    /// Weighted tokens for budgets: input + output + cache writes + cache reads ×
    /// `cache_read_weight`. Reasoning is not added again (it is part of `output`).
    pub fn weighted(&self, cache_read_weight: f64) -> f64 {
        (self.input + self.output + self.cache_write) as f64
            + self.cache_read as f64 * cache_read_weight
    }

    /// True when every field is zero.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    /// Field by field `self - other`, floored at zero.
    pub fn saturating_sub(self, other: Usage) -> Usage {
        Usage {
            input: self.input.saturating_sub(other.input),
            output: self.output.saturating_sub(other.output),
            cache_read: self.cache_read.saturating_sub(other.cache_read),
            cache_write: self.cache_write.saturating_sub(other.cache_write),
            reasoning: self.reasoning.saturating_sub(other.reasoning),
        }
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input: self.input.saturating_add(rhs.input),
            output: self.output.saturating_add(rhs.output),
            cache_read: self.cache_read.saturating_add(rhs.cache_read),
            cache_write: self.cache_write.saturating_add(rhs.cache_write),
            reasoning: self.reasoning.saturating_add(rhs.reasoning),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// What the stream says about the whole session so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionTotals {
    /// Claude: `result.usage` for every finished process (main model only), plus the running
    /// per-message sum of a process still going. Codex: Σ `turn.completed`. Gemini: Σ
    /// `result.stats`.
    pub usage: Usage,
    /// API calls: Claude's distinct assistant `message.id`s (a process that shows no messages,
    /// like `--output-format json`, counts its `num_turns`); Codex `turn.started`; Gemini runs
    /// of assistant output (a tool call or text after a tool result starts a new one).
    pub turns: u32,
    /// Claude's `total_cost_usd`, summed over finished processes. No other CLI reports cost.
    pub cost_usd: Option<f64>,
    /// Per model. Claude: `result.modelUsage` when present (side models included), else the
    /// per-message sums. Gemini: the `init` model. Codex: empty (the stream names no model).
    pub by_model: BTreeMap<String, Usage>,
}

/// A streaming parser for one agent CLI's output. Feed it every stdout line, then call
/// [`finish`](StreamParser::finish) at end of stream.
pub trait StreamParser: Send {
    /// Reads one line (with or without its `\n`). Never fails: unreadable input comes back as
    /// [`AgentEvent::Malformed`].
    fn feed_line(&mut self, line: &[u8]) -> Vec<AgentEvent>;

    /// End of stream: flushes what is still pending (a dangling line fragment becomes
    /// `Malformed`; Codex reports a fatal `error` that no `turn.failed` followed).
    fn finish(&mut self) -> Vec<AgentEvent>;

    /// The session so far, as the stream tells it.
    fn totals(&self) -> SessionTotals;

    /// The current wall-clock time (epoch seconds), used to resolve relative reset times in
    /// limit messages. Call it before feeding lines (cheap); without it only absolute reset
    /// times resolve.
    fn set_now(&mut self, now: i64);

    /// This process resumes a session that had already spent `prior` (and cost `prior_cost_usd`)
    /// in earlier processes: CLIs that report the conversation's running total after a resume
    /// (Codex `turn.completed`, Claude `total_cost_usd`) count only the difference.
    fn set_resumed_from(&mut self, _prior: Usage, _prior_cost_usd: Option<f64>) {}

    /// One line of the CLI's side usage log (Codex's rollout file), read while the session
    /// runs: usage the stream does not show until the turn ends.
    fn live_usage(&mut self, _line: &[u8]) -> Vec<AgentEvent> {
        Vec::new()
    }

    /// Whether a [`AgentEvent::Finished`] is the CLI's final word for the process, after which
    /// it should exit (Claude's `result`; Codex's `turn.completed` is not: an `exec` may run
    /// more turns). A process that lingers past a grace after it is ended as its result says.
    fn ends_on_finish(&self) -> bool {
        false
    }

    /// What a non-zero exit code means for this CLI when its stream gave no ending of its
    /// own (Gemini's exit-code table). `None`: the code says nothing more than "failed".
    fn exit_kind(&self, _code: i32) -> Option<FinishKind> {
        None
    }
}

/// The parser for a CLI by its adapter name: `claude`, `codex`, `gemini` or `aider`.
pub fn parser_for(kind: &str) -> Option<Box<dyn StreamParser>> {
    match kind {
        "claude" => Some(Box::new(claude::ClaudeParser::new())),
        "codex" => Some(Box::new(codex::CodexParser::new())),
        "gemini" => Some(Box::new(gemini::GeminiParser::new())),
        "aider" => Some(Box::new(aider::AiderParser::new())),
        _ => None,
    }
}
