//! The journal's vocabulary. Every state transition is one of these, appended in the same
//! transaction that applies it to the state tables. Kinds are stable once shipped: add new
//! variants and optional fields; never rename or repurpose one.

use serde::{Deserialize, Serialize};

/// One journal entry as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the journal (1-based, strictly increasing).
    pub seq: i64,
    /// The run this event belongs to.
    pub run_id: String,
    /// When it was recorded (RFC 3339, UTC).
    pub at: String,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// An item as the run recorded it at start (the plan snapshot the run works from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedItem {
    pub id: String,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Set when an earlier run already shipped this item; it is not attempted again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shipped_by: Option<String>,
}

/// Which tree a check ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStage {
    /// The attempt's own work tree, after an agent session.
    Work,
    /// The attempt's work merged onto the current target tip, before the target moves.
    Merged,
}

/// A check's output read as test results, as the journal keeps it: the counts, and the
/// failing set by id (the trajectory `explain` and progress detection read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub format: String,
    pub tests: usize,
    pub skipped: usize,
    pub failing: Vec<String>,
}

impl CheckSummary {
    /// The summary of parsed results.
    pub fn of(results: &crate::check::results::Results) -> CheckSummary {
        CheckSummary {
            format: results.format.as_str().to_owned(),
            tests: results.test_count(),
            skipped: results.skipped_count(),
            failing: results.failing_stable().into_set().into_iter().collect(),
        }
    }
}

pub use crate::session::Outcome;
pub use crate::session::{Metric, Scope};

/// What a session spent, as its stream told it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Spend {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Weighted tokens (cache reads × `cache_read_weight`), what token limits count.
    pub weighted: f64,
    pub turns: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The part of `output` that was reasoning (Codex `reasoning_output_tokens`), for the
    /// record; already counted in `output`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What happened, with the data the fold needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A new run over a plan snapshot.
    RunStarted {
        target: String,
        base: String,
        max_iterations: u32,
        max_attempts: u32,
        items: Vec<PlannedItem>,
    },
    /// An engine picked up an unfinished run.
    RunResumed { pid: u32 },
    /// The queue drained; parked items are queued once more.
    PassStarted { pass: u32, requeued: Vec<String> },
    /// Intent: a fresh worktree for a new attempt at `base`.
    AttemptStarted {
        item: String,
        attempt: u32,
        base: String,
        branch: String,
        worktree: String,
    },
    /// The worktree exists, on `branch` at `base`.
    WorktreeReady {
        item: String,
        attempt: u32,
        /// The seeded files as the attempt's checkout got them (`seed`), path and SHA-256:
        /// what its receipt states, not the repository's copies as they are later.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        seeds: Vec<crate::receipt::ManifestEntry>,
    },
    /// Intent: an agent session is about to start.
    SessionStarted {
        item: String,
        attempt: u32,
        iteration: u32,
        log: String,
        /// The CLI session this process uses, when known before launch: the session it
        /// resumes, or Claude's fresh `--session-id` (unique to this process).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_session: Option<String>,
        /// Whether `agent_session` is resumed. A fresh id becomes resumable only once the CLI
        /// reports it (`agent_session_opened`): a crash before that starts afresh.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        resumed: bool,
        /// Who does the work: the agent's kind, binary, the version that binary said as this
        /// session was launched, model and arguments (what its receipt states).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<crate::receipt::AgentTuple>,
        /// The journal position the session's prompt read the item's operator messages up to:
        /// one told later (before this entry was written) is for the next session or its
        /// live input, not taken as in this prompt. Absent in older journals (then every
        /// message before this entry was).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        told_through: Option<i64>,
    },
    /// The CLI reported its own session id mid-session (Codex's `thread.started`), so a rerun
    /// after a crash can resume it.
    AgentSessionOpened {
        item: String,
        attempt: u32,
        agent_session: String,
    },
    SessionEnded {
        item: String,
        attempt: u32,
        iteration: u32,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        duration_ms: u64,
        /// What the session spent (absent when its output is not a parsed stream).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spend: Option<Spend>,
        /// For `rate_limited`: when the limit resets (epoch seconds), if the CLI said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resets_at: Option<i64>,
        /// For `env_fault`: `transient` or `auth`; for `permission_denied`: the refused tool
        /// calls (`Write /repo/f.txt; Bash printf ok > f.txt`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fault: Option<String>,
        /// The CLI's own session id (what its resume takes), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_session: Option<String>,
    },
    /// A silent session gets another go at the same iteration, told it went quiet.
    SessionNudged {
        item: String,
        attempt: u32,
        iteration: u32,
        nudge: u32,
    },
    /// A soft share of a budget limit was crossed mid-session: a wrap-up is asked for.
    BudgetWarned {
        item: String,
        attempt: u32,
        scope: Scope,
        metric: Metric,
        used: f64,
        limit: f64,
    },
    /// A hard budget limit was crossed mid-session (journaled the moment it happened).
    BudgetTripped {
        item: String,
        attempt: u32,
        scope: Scope,
        metric: Metric,
        used: f64,
        limit: f64,
        /// Whether the session is being ended for it (`budget_mode = "enforce"`).
        enforced: bool,
    },
    /// Dispatch is paused for the whole run (the quota is shared), until `until` (epoch s).
    RunPaused { reason: String, until: i64 },
    /// Dispatch goes on.
    RunUnpaused,
    /// An operator stopped the run; open attempts are preserved and it stays resumable.
    RunStopped {
        graceful: bool,
        /// Why, when it was not an operator's `stop`: `deadline_reached` (the `--until` time
        /// passed). The run stays resumable either way.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        halt_reason: Option<crate::halt::HaltReason>,
    },
    /// An item is parked: out of attempts, or parked outright (a notification for readers such
    /// as `nightshift wait`; the state change is the `attempt_failed` just before it).
    ItemParked { item: String, reason: String },
    /// The item waits on a person's decision (a review escalated it); its branch is kept for
    /// `nightshift accept`. Wakes `nightshift wait` (exit 16).
    ItemEscalated { item: String, reason: String },
    /// The item waits on actions only a person can take; `nightshift confirm` ships it. Wakes
    /// `nightshift wait` (exit 16).
    ItemAwaitingOperator {
        item: String,
        reason: String,
        actions: Vec<String>,
    },
    /// `run --until`: no new session or attempt starts after `until` (epoch seconds); the run
    /// then stops `deadline_reached`, resumable. In force until a `run_stopped` with that
    /// reason consumes it or another `deadline_set` replaces it.
    DeadlineSet {
        until: i64,
        /// The deadline as the operator wrote it (`07:00`, an RFC 3339 time).
        given: String,
    },
    /// A gate in `log` mode tripped: the warning is journaled instead of acting (counted per
    /// class in health).
    GateWarned {
        gate: String,
        class: String,
        detail: String,
    },
    /// Intent: the check is about to run.
    CheckStarted {
        item: String,
        attempt: u32,
        iteration: u32,
        stage: CheckStage,
        /// The command line that runs (from the pinned control plane; receipts sign this).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        /// Its timeout.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
        /// The names (never the values) of the variables nightshift sets for it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        env: Vec<String>,
    },
    CheckEnded {
        item: String,
        attempt: u32,
        iteration: u32,
        stage: CheckStage,
        green: bool,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        output_sha256: String,
        log: String,
        duration_ms: u64,
        /// The output read as test results; absent when nothing parsed (the exit code alone
        /// decided).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        results: Option<CheckSummary>,
        /// The guards evaluated on this check (work stage); a failure here ends the item.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        guards: Vec<crate::guard::Verdict>,
        /// Set when this check contradicts an earlier check of the same tree: the oracle is not
        /// deterministic, and the run halts `check_not_deterministic`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        untrusted: Option<String>,
    },
    /// The check ran on the attempt's base to learn the tests guards compare against.
    BaselineChecked {
        item: String,
        attempt: u32,
        tree: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        results: Option<CheckSummary>,
        log: String,
    },
    /// The attempt's work is one commit (nightshift's, hooks off) on its branch.
    Committed {
        item: String,
        attempt: u32,
        commit: String,
    },
    /// The attempt's work, brought onto the current target tip as one commit.
    MergePrepared {
        item: String,
        attempt: u32,
        commit: String,
        onto: String,
    },
    /// Bringing the work onto the target's tip conflicts: a repair iteration follows, with the
    /// target merged into the worktree and the conflicting paths in the agent's prompt.
    ConflictFound {
        item: String,
        attempt: u32,
        onto: String,
        paths: Vec<String>,
    },
    /// Intent: move `target` from `expected_old` to `commit`.
    IntegrateIntended {
        item: String,
        attempt: u32,
        target: String,
        commit: String,
        expected_old: String,
    },
    /// Confirmed: the target holds `commit`. The item is shipped, or `integrated_local` when it
    /// counts only once pushed (`done = "pushed"`).
    Integrated {
        item: String,
        attempt: u32,
        commit: String,
        /// A push to the remote is still owed (`push = true`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        push: bool,
        /// The item is shipped only once pushed (`done = "pushed"`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        awaiting_push: bool,
    },
    /// The remote holds the item's commit (and every earlier one).
    Pushed { item: String, commit: String },
    /// A push was refused or failed; it is retried. Never loses the local work.
    PushFailed { items: Vec<String>, error: String },
    /// Intent: a review session (`reviewer` = `review` or `second_opinion`) over the attempt's
    /// diff and check results, in a fresh session.
    ReviewStarted {
        item: String,
        attempt: u32,
        cycle: u32,
        reviewer: String,
        log: String,
    },
    /// A review session ended; `verdict` is what it returned, absent when it returned nothing
    /// readable (`error` says why).
    ReviewEnded {
        item: String,
        attempt: u32,
        cycle: u32,
        reviewer: String,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict: Option<crate::verdict::Verdict>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spend: Option<Spend>,
    },
    /// What the engine does with a review's ending: `approve`, `repair` (findings go to a
    /// repair iteration), `retry` (review again), or a triage `class` and its `action`
    /// (`fix`, `ship_with_debt`, `second_opinion`, `escalate`), or `park`/`defer`.
    ReviewDecided {
        item: String,
        attempt: u32,
        action: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        class: Option<String>,
        why: String,
        /// For `repair`: the file holding the findings for the next session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Intent: a review-only session over work shipped without its review.
    DebtReviewStarted {
        item: String,
        attempt: u32,
        log: String,
    },
    /// A debt review ended: `paid`, `reopened` (a high-severity finding: the item is queued
    /// again on top of the shipped code, with the findings), or `unresolved` (no verdict; the
    /// debt stays open).
    DebtSettled {
        item: String,
        attempt: u32,
        outcome: String,
        why: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict: Option<crate::verdict::Verdict>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spend: Option<Spend>,
    },
    /// `nightshift accept` / `confirm`: a kept attempt's work, checked again on the merged
    /// result, is on the target. `debt`: why it still owes a review.
    Accepted {
        item: String,
        attempt: u32,
        commit: String,
        onto: String,
        /// `confirm` (operator actions done) rather than `accept`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        confirmed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        debt: Option<String>,
    },
    /// An agent session changed what lies outside its checkout (the user's checkout, refs,
    /// `.git/config`, `.git/info/`, hooks): the attempt ends `control_plane_tampered`.
    ControlPlaneTampered {
        item: String,
        attempt: u32,
        iteration: u32,
        /// Each change, in words.
        changes: Vec<String>,
        /// What nightshift put back, in words.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        restored: Vec<String>,
        /// The user's checkout's paths the session changed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        paths: Vec<String>,
    },
    /// The attempt's commits and dirty tree are kept under `ref_name`.
    Preserved {
        item: String,
        attempt: u32,
        ref_name: String,
        commit: String,
    },
    /// The attempt ended without shipping; the item is queued again or parked.
    AttemptFailed {
        item: String,
        attempt: u32,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preserve_ref: Option<String>,
        /// Park the item now, whatever attempts it has left (e.g. its budget is spent).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        park: bool,
        /// Keep the attempt's branch for a person (e.g. an unresolved merge conflict).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep_branch: bool,
        /// The loop-contract reason, when the attempt ended on one (a guard, no progress).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        halt: Option<crate::halt::HaltReason>,
        /// The item's verdict instead of `parked`: `escalated` or `awaiting_operator`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict: Option<String>,
        /// For `awaiting_operator`: what only a person can do.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        actions: Vec<String>,
    },
    /// Housekeeping: the attempt's worktree is gone.
    WorktreeRemoved { item: String, attempt: u32 },
    /// Housekeeping failed; a warning, reconciled at the next start. Never fatal.
    TeardownFailed {
        item: String,
        attempt: u32,
        error: String,
    },
    /// `nightshift tell`: an operator's message to an item's sessions; the engine puts the
    /// messages not yet delivered into the item's next iteration's prompt.
    OperatorMessage {
        item: String,
        /// Who said it (the user name, or `--from`).
        who: String,
        text: String,
    },
    /// An operator's message (the `operator_message` at `message_seq`) was written to the stdin
    /// of the item's live session; `operator_message_delivered` follows when the CLI takes it.
    OperatorMessageWritten {
        item: String,
        attempt: u32,
        message_seq: i64,
    },
    /// An operator's message (the `operator_message` at `message_seq`) was taken by the item's
    /// live session: written to the CLI's stdin while it worked and echoed back by it
    /// (Claude's `--input-format stream-json`). Messages without one reach the item's next
    /// session's prompt.
    OperatorMessageDelivered {
        item: String,
        attempt: u32,
        message_seq: i64,
        /// Who sent it (as its `operator_message` says).
        who: String,
        /// The CLI session that took it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_session: Option<String>,
    },
    /// The run stopped on a computed condition.
    RunFinished {
        halt_reason: crate::halt::HaltReason,
        exit_code: i32,
    },
    /// What judges this run (issue 12): the exact `nightshift.toml` text and its SHA-256,
    /// pinned at run start, or again on `run --reload-config` (`reloaded`). Every later
    /// decision of the run uses the newest pinned copy, never the live file.
    ControlPlanePinned {
        sha256: String,
        source: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reloaded: bool,
    },
    /// The live `nightshift.toml` differs from the run's pinned copy (seen at a resume or an
    /// item's start). The pinned copy stays in force; the change applies to the next run.
    ControlPlaneChanged {
        /// SHA-256 of the pinned copy, and of the live file (or why it could not be read).
        pinned: String,
        live: String,
        /// What differs (`[check] command, [limits] max_iterations`).
        detail: String,
    },
    /// An engine started by the supervisor after its previous engine died (`exit`: how, e.g.
    /// `killed by SIGKILL`); the run resumes.
    EngineRestarted { exit: String },
    /// The state tables were not the fold of the journal (edited, e.g. an agent's
    /// `update items set check_command='true'`); they were rebuilt from the journal, whose
    /// chain holds. `detail` names the first table and row that differed.
    StoreRepaired { detail: String },
}

impl EventKind {
    /// The stable snake_case name of this kind (also the failpoint name after it is durable).
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::RunResumed { .. } => "run_resumed",
            EventKind::PassStarted { .. } => "pass_started",
            EventKind::AttemptStarted { .. } => "attempt_started",
            EventKind::WorktreeReady { .. } => "worktree_ready",
            EventKind::SessionStarted { .. } => "session_started",
            EventKind::SessionEnded { .. } => "session_ended",
            EventKind::AgentSessionOpened { .. } => "agent_session_opened",
            EventKind::SessionNudged { .. } => "session_nudged",
            EventKind::BudgetWarned { .. } => "budget_warned",
            EventKind::BudgetTripped { .. } => "budget_tripped",
            EventKind::RunPaused { .. } => "run_paused",
            EventKind::RunUnpaused => "run_unpaused",
            EventKind::RunStopped { .. } => "run_stopped",
            EventKind::ItemParked { .. } => "item_parked",
            EventKind::ItemEscalated { .. } => "item_escalated",
            EventKind::ItemAwaitingOperator { .. } => "item_awaiting_operator",
            EventKind::DeadlineSet { .. } => "deadline_set",
            EventKind::GateWarned { .. } => "gate_warned",
            EventKind::CheckStarted { .. } => "check_started",
            EventKind::CheckEnded { .. } => "check_ended",
            EventKind::BaselineChecked { .. } => "baseline_checked",
            EventKind::Committed { .. } => "committed",
            EventKind::MergePrepared { .. } => "merge_prepared",
            EventKind::ConflictFound { .. } => "conflict_found",
            EventKind::IntegrateIntended { .. } => "integrate_intended",
            EventKind::Integrated { .. } => "integrated",
            EventKind::Pushed { .. } => "pushed",
            EventKind::PushFailed { .. } => "push_failed",
            EventKind::ReviewStarted { .. } => "review_started",
            EventKind::ReviewEnded { .. } => "review_ended",
            EventKind::ReviewDecided { .. } => "review_decided",
            EventKind::DebtReviewStarted { .. } => "debt_review_started",
            EventKind::DebtSettled { .. } => "debt_settled",
            EventKind::Accepted { .. } => "accepted",
            EventKind::Preserved { .. } => "preserved",
            EventKind::ControlPlaneTampered { .. } => "control_plane_tampered",
            EventKind::AttemptFailed { .. } => "attempt_failed",
            EventKind::WorktreeRemoved { .. } => "worktree_removed",
            EventKind::TeardownFailed { .. } => "teardown_failed",
            EventKind::RunFinished { .. } => "run_finished",
            EventKind::OperatorMessage { .. } => "operator_message",
            EventKind::OperatorMessageDelivered { .. } => "operator_message_delivered",
            EventKind::OperatorMessageWritten { .. } => "operator_message_written",
            EventKind::ControlPlanePinned { .. } => "control_plane_pinned",
            EventKind::ControlPlaneChanged { .. } => "control_plane_changed",
            EventKind::EngineRestarted { .. } => "engine_restarted",
            EventKind::StoreRepaired { .. } => "store_repaired",
        }
    }

    /// The item and attempt this event is about, if any.
    pub fn item_attempt(&self) -> (Option<&str>, Option<u32>) {
        match self {
            EventKind::AttemptStarted { item, attempt, .. }
            | EventKind::WorktreeReady { item, attempt, .. }
            | EventKind::SessionStarted { item, attempt, .. }
            | EventKind::SessionEnded { item, attempt, .. }
            | EventKind::AgentSessionOpened { item, attempt, .. }
            | EventKind::SessionNudged { item, attempt, .. }
            | EventKind::BudgetWarned { item, attempt, .. }
            | EventKind::BudgetTripped { item, attempt, .. }
            | EventKind::CheckStarted { item, attempt, .. }
            | EventKind::CheckEnded { item, attempt, .. }
            | EventKind::BaselineChecked { item, attempt, .. }
            | EventKind::Committed { item, attempt, .. }
            | EventKind::MergePrepared { item, attempt, .. }
            | EventKind::ConflictFound { item, attempt, .. }
            | EventKind::IntegrateIntended { item, attempt, .. }
            | EventKind::Integrated { item, attempt, .. }
            | EventKind::OperatorMessageDelivered { item, attempt, .. }
            | EventKind::OperatorMessageWritten { item, attempt, .. }
            | EventKind::ReviewStarted { item, attempt, .. }
            | EventKind::ReviewEnded { item, attempt, .. }
            | EventKind::ReviewDecided { item, attempt, .. }
            | EventKind::DebtReviewStarted { item, attempt, .. }
            | EventKind::DebtSettled { item, attempt, .. }
            | EventKind::Accepted { item, attempt, .. }
            | EventKind::Preserved { item, attempt, .. }
            | EventKind::ControlPlaneTampered { item, attempt, .. }
            | EventKind::AttemptFailed { item, attempt, .. }
            | EventKind::WorktreeRemoved { item, attempt }
            | EventKind::TeardownFailed { item, attempt, .. } => (Some(item), Some(*attempt)),
            EventKind::RunStarted { .. }
            | EventKind::RunResumed { .. }
            | EventKind::PassStarted { .. }
            | EventKind::RunPaused { .. }
            | EventKind::Pushed { .. }
            | EventKind::PushFailed { .. }
            | EventKind::RunUnpaused
            | EventKind::RunStopped { .. }
            | EventKind::DeadlineSet { .. }
            | EventKind::GateWarned { .. }
            | EventKind::RunFinished { .. }
            | EventKind::ControlPlanePinned { .. }
            | EventKind::ControlPlaneChanged { .. }
            | EventKind::EngineRestarted { .. }
            | EventKind::StoreRepaired { .. } => (None, None),
            EventKind::ItemParked { item, .. }
            | EventKind::ItemEscalated { item, .. }
            | EventKind::ItemAwaitingOperator { item, .. }
            | EventKind::OperatorMessage { item, .. } => (Some(item), None),
        }
    }
}
