//! Receipts: one signed JSON record per attempt, saying which oracle judged which commit, under
//! which agent and model, at what spend, with which guards intact (DESIGN.md §4, §7; issue 5).
//!
//! - [`Receipt`] is the versioned record (its `version` field is [`RECEIPT_VERSION`]).
//! - [`sign`] wraps it in an envelope signed with Ed25519 over its canonical bytes
//!   ([`canonical`]: the `receipt` object's JSON with keys sorted, no whitespace); [`verify`]
//!   checks the envelope against a public key and gives the receipt back.
//! - [`key`] keeps the signing key outside the repository (the user's data directory, 0600) and
//!   its public half in `.nightshift/receipts.pub`.
//!
//! The format is documented in `docs/receipts.md`.

pub mod key;
mod sign;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use sign::{ENVELOPE_FORMAT, SignError, VerifyError, canonical, sign, verify};

use crate::session::Outcome;
use crate::store::CheckStage;

/// The version of the [`Receipt`] shape; bumped on any incompatible change.
pub const RECEIPT_VERSION: u32 = 1;

/// One attempt, as it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// Shape version ([`RECEIPT_VERSION`]).
    pub version: u32,
    pub run_id: String,
    pub item: String,
    pub attempt: u32,
    /// When the receipt was written (RFC 3339, UTC).
    pub written_at: String,
    /// The branch the run ships onto.
    pub target: String,
    /// The target commit the attempt started from.
    pub base: String,
    /// `success` only when the attempt shipped and every fact below is known.
    pub verdict: Verdict,
    /// `verdict == success`.
    pub success: bool,
    /// The facts a `success` needs that this receipt cannot state (empty on success).
    pub missing: Vec<String>,
    /// The loop-contract reason the attempt stopped for, where one applies
    /// (`success_condition_met`, `max_iterations_reached`, `budget_exceeded`).
    pub halt_reason: Option<String>,
    /// The attempt's verdict in words (why it failed or parked), as the journal says it.
    pub reason: Option<String>,
    /// The item's state right after the attempt (`shipped`, `queued`, `parked`, …).
    pub item_state: Option<String>,
    /// The commit that landed on the target, for a shipped attempt.
    pub shipped_commit: Option<String>,
    pub agent: AgentTuple,
    /// The prompt files the attempt's sessions were given (`logs/<stem>.prompt.md`), and the
    /// feedback files beside them.
    pub prompt: Vec<ManifestEntry>,
    /// Context the agent found in its worktree: CLAUDE.md, AGENTS.md, GEMINI.md, .cursorrules at
    /// the base commit, and the seeded files (`[worktree] seed`).
    pub context: Vec<ManifestEntry>,
    /// The gitignored paths copied into the worktree from the repository root
    /// (`[worktree] seed`); `nightshift replay` copies them too.
    pub seeds: Vec<String>,
    pub iterations: Vec<Iteration>,
    /// What every session of the attempt spent, summed.
    pub spend: SpendTotals,
    /// Every guard's verdict (filled from the journal's guard events).
    pub guards: Vec<GuardVerdict>,
    /// Whether the guards were evaluated at all; `false` makes the receipt not a success.
    pub guards_complete: bool,
    /// Per checked tree: how many check runs, how many disagreed with the first.
    pub determinism: Vec<DeterminismRecord>,
    /// The achieved statistical bound on the check's flake rate, when computed.
    pub determinism_bound: Option<f64>,
}

/// What an attempt's receipt concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Shipped, and the receipt names the oracle, the commit, the agent and model, the spend,
    /// and evaluated guards.
    Success,
    /// Shipped, but some of those facts are missing (listed in `missing`).
    Unverified,
    /// Ended without shipping; the item goes round again.
    Failed,
    /// Ended without shipping; the item is parked.
    Parked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Success => "success",
            Verdict::Unverified => "unverified",
            Verdict::Failed => "failed",
            Verdict::Parked => "parked",
        }
    }
}

/// Who did the work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTuple {
    /// `[agent] kind`.
    pub kind: String,
    /// The executable (its configured or usual name; `command[0]` for `kind = "command"`).
    pub binary: Option<String>,
    /// What `<binary> --version` said (first line), `unknown` when it failed; `None` for a
    /// `command` agent, whose program is not asked.
    pub version: Option<String>,
    pub model: Option<String>,
    /// `[agent] args`.
    pub args: Vec<String>,
    /// For `kind = "command"`: the whole argv.
    pub argv: Option<Vec<String>>,
}

/// A file and the SHA-256 (hex) of its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub path: String,
    pub sha256: String,
}

/// One iteration: the sessions that ran for it and the checks that judged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    pub iteration: u32,
    pub sessions: Vec<SessionRecord>,
    pub checks: Vec<CheckRecord>,
}

/// One agent session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Token use as the agent's stream reported it; `None` when it reports none.
    pub tokens: Option<Tokens>,
    pub cost_usd: Option<f64>,
    /// The confinement level that held (`landlock+netns`, `landlock`, `netns`, `none`, with why a
    /// layer did not hold); absent when the process ran without the helper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
}

/// Token counts of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Cache reads weighted by `cache_read_weight`: what token limits count.
    pub weighted: f64,
    pub turns: u32,
}

/// One check run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    /// `work` (the attempt's own tree) or `merged` (its work on the target's tip).
    pub stage: CheckStage,
    /// The command, run with `sh -c` at the root of the checked tree.
    pub command: String,
    pub timeout_ms: u64,
    /// The environment nightshift added for the check.
    pub env: BTreeMap<String, String>,
    /// The commit that was checked.
    pub commit: Option<String>,
    /// That commit's tree (read with replace objects ignored).
    pub tree: Option<String>,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub green: bool,
    /// The failed test ids, when the output parsed; `None` when judged by exit code alone.
    pub failing: Option<Vec<String>>,
    /// The recognised report format.
    pub format: Option<String>,
    /// See `check::fingerprint`.
    pub fingerprint: String,
    /// The whole output, as kept in the log.
    pub log: Option<ManifestEntry>,
    pub duration_ms: u64,
    /// The confinement level that held (`landlock+netns`, `landlock`, `netns`, `none`, with why a
    /// layer did not hold); absent when the process ran without the helper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
}

/// Spend summed over the attempt's sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SpendTotals {
    pub sessions: u32,
    /// Sessions whose spend is unknown (their agent reports none).
    pub sessions_without_spend: u32,
    pub input: u64,
    pub output: u64,
    pub weighted_tokens: f64,
    pub turns: u32,
    /// `None` unless at least one session reported a cost.
    pub cost_usd: Option<f64>,
}

/// One guard's verdict on the attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardVerdict {
    pub name: String,
    pub verdict: GuardState,
    pub detail: Option<String>,
}

/// What a guard concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardState {
    Pass,
    Fail,
    /// Observed and recorded, not enforced.
    Logged,
    NotRun,
}

/// Repeated checks of one tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeterminismRecord {
    pub tree: String,
    /// The commits with this tree that were checked.
    pub commits: Vec<String>,
    pub runs: u32,
    /// Runs whose fingerprint differs from the first run's.
    pub disagreements: u32,
}

impl Receipt {
    /// The last green check: the verdict `nightshift replay` reproduces.
    pub fn final_green_check(&self) -> Option<&CheckRecord> {
        self.iterations
            .iter()
            .flat_map(|i| i.checks.iter())
            .rfind(|c| c.green)
    }
}
