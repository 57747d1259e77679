//! Every `--json` shape lives here, with a JSON Schema and a version. Changing a shape is a
//! deliberate, versioned act, pinned by snapshot tests.

use schemars::JsonSchema;
use serde::Serialize;

use nightshift_core::store::{DebtRow, ItemRow, RunRow};

/// The version of the `status --json` shape.
pub const STATUS_VERSION: u32 = 1;
/// The version of the `log --json` line shape.
pub const LOG_VERSION: u32 = 1;
/// The version of the `wait` line shape.
pub const WAIT_VERSION: u32 = 1;
/// The version of the `explain --json` shape.
pub const EXPLAIN_VERSION: u32 = 1;

/// `nightshift status --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Status {
    /// Shape version; bumped on any incompatible change.
    pub version: u32,
    /// The latest run, or null when none has started here.
    pub run: Option<RunStatus>,
    /// The latest run's items in plan order.
    pub items: Vec<ItemStatus>,
    /// Review debts not yet paid (any run): work shipped without its review. While one is open
    /// a run never exits 10.
    pub debts: Vec<DebtStatus>,
}

/// Work shipped without its review; reviewed review-only at the next opportunity.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DebtStatus {
    pub item: String,
    pub attempt: u32,
    /// The run that shipped it.
    pub run_id: String,
    /// The commit on the target that owes the review.
    pub commit: String,
    /// Why it shipped without its review.
    pub reason: String,
    /// `open` (the only state listed here for now).
    pub state: String,
    /// Debt reviews tried by the run that last tried.
    pub tries: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RunStatus {
    pub id: String,
    /// `running` or `finished`.
    pub state: String,
    pub target: String,
    /// The target's commit when the run started.
    pub base: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Why it stopped (see docs/exit-codes.md), when finished.
    pub halt_reason: Option<String>,
    pub exit_code: Option<i32>,
    /// 1 for the first pass over the queue; parked items are retried in later passes.
    pub pass: u32,
    pub counts: Counts,
    /// What is true right now, read from the run lock, the engine's heartbeat, the journal and
    /// health.json: `running`, `heartbeat_stale`, `stopped`, `restart_storm`, `dead` (no engine
    /// alive, nothing halted the run) or `finished`. Absent in older output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
    /// The engine holding the run lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_pid: Option<u32>,
    /// Seconds since the engine's last heartbeat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_age_s: Option<u64>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Counts {
    pub queued: u32,
    pub running: u32,
    pub shipped: u32,
    pub parked: u32,
    pub escalated: u32,
    pub awaiting_operator: u32,
    pub integrated_local: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemStatus {
    pub id: String,
    /// One of `queued`, `running`, `shipped`, `integrated_local` (on the local target, its push
    /// still owed), `parked`, `escalated`, `awaiting_operator`.
    pub state: String,
    /// Attempts started in this run.
    pub attempts: u32,
    /// Why it is parked, or the last failure of an item going round again.
    pub reason: Option<String>,
    /// Where the last attempt's work is kept.
    pub preserve_ref: Option<String>,
    /// The commit on the target, when shipped.
    pub commit: Option<String>,
    /// For `awaiting_operator`: what only a person can do (`nightshift confirm ITEM` after).
    pub operator_actions: Vec<String>,
}

impl Status {
    pub fn new(run: Option<&RunRow>, items: &[ItemRow], debts: &[DebtRow]) -> Status {
        let run = run.map(|r| {
            let mut counts = Counts::default();
            for i in items {
                use nightshift_core::store::ItemState;
                match i.state {
                    ItemState::Queued => counts.queued += 1,
                    ItemState::Running => counts.running += 1,
                    ItemState::Shipped => counts.shipped += 1,
                    ItemState::Parked => counts.parked += 1,
                    ItemState::Escalated => counts.escalated += 1,
                    ItemState::AwaitingOperator => counts.awaiting_operator += 1,
                    ItemState::IntegratedLocal => counts.integrated_local += 1,
                }
            }
            RunStatus {
                id: r.id.clone(),
                state: r.state.to_string(),
                target: r.target.clone(),
                base: r.base.clone(),
                started_at: r.started_at.clone(),
                finished_at: r.finished_at.clone(),
                halt_reason: r.halt_reason.clone(),
                exit_code: r.exit_code,
                pass: r.pass,
                counts,
                live: None,
                engine_pid: None,
                heartbeat_age_s: None,
            }
        });
        Status {
            version: STATUS_VERSION,
            run,
            items: items
                .iter()
                .map(|i| ItemStatus {
                    id: i.id.clone(),
                    state: i.state.to_string(),
                    attempts: i.attempts,
                    reason: i.reason.clone(),
                    preserve_ref: i.preserve_ref.clone(),
                    commit: i.shipped_commit.clone(),
                    operator_actions: i
                        .operator_actions
                        .as_deref()
                        .unwrap_or_default()
                        .lines()
                        .map(str::to_owned)
                        .collect(),
                })
                .collect(),
            debts: debts
                .iter()
                .filter(|d| d.is_open())
                .map(|d| DebtStatus {
                    item: d.item.clone(),
                    attempt: d.attempt,
                    run_id: d.run_id.clone(),
                    commit: d.commit.clone(),
                    reason: d.reason.clone(),
                    state: d.state.clone(),
                    tries: d.tries,
                })
                .collect(),
        }
    }
}

/// One line of `nightshift log --json`: a journal event, with `kind` and its fields inline.
#[derive(Debug, Serialize)]
pub struct LogLine<'a> {
    pub version: u32,
    #[serde(flatten)]
    pub event: &'a nightshift_core::store::Event,
}

/// The schema of `status --json`.
pub fn status_schema() -> schemars::Schema {
    schemars::schema_for!(Status)
}

/// The version of the `replay --json` shape.
pub const REPLAY_VERSION: u32 = 1;

/// `nightshift replay --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Replay {
    /// Shape version; bumped on any incompatible change.
    pub version: u32,
    /// The receipt file.
    pub receipt: String,
    /// The id of the public key it was verified with.
    pub key_id: String,
    /// `valid`, `invalid` (altered), or `wrong_key` (signed by another key).
    pub signature: String,
    pub run_id: Option<String>,
    pub item: Option<String>,
    pub attempt: Option<u32>,
    /// The receipt's own verdict (`success`, `unverified`, `failed`, `parked`).
    pub verdict: Option<String>,
    /// The recorded check command that was replayed.
    pub command: Option<String>,
    /// The recorded commit it ran on.
    pub commit: Option<String>,
    /// The commit checked out instead, when the recorded one is gone: the receipt's shipped
    /// commit, accepted only when its tree is the recorded tree.
    pub checked_out: Option<String>,
    pub tree_recorded: Option<String>,
    pub tree_observed: Option<String>,
    pub fingerprint_recorded: Option<String>,
    pub fingerprint_observed: Option<String>,
    /// The replayed check's output.
    pub log: Option<String>,
    /// `match`, or why not: `bad_signature`, `no_green_check`, `commit_unknown`,
    /// `commit_missing`, `tree_mismatch`, `mismatch`.
    pub result: String,
    /// `objective_unverified` unless `result` is `match`.
    pub halt_reason: Option<String>,
    pub detail: Option<String>,
}

/// The one line `nightshift wait` prints.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitLine {
    /// Shape version; bumped on any incompatible change.
    pub version: u32,
    /// Why it woke: `parked`, `human_required`, `paused`, `finished`, or `timeout`; or, when
    /// the engine cannot journal, what `status` says of the run: `heartbeat_stale`,
    /// `restart_storm`, or `dead`.
    pub wake: String,
    /// The exit code `wait` leaves with (see docs/exit-codes.md).
    pub exit_code: i32,
    /// For `finished`: the halt reason (`operator_stop` for an operator's stop); also
    /// `heartbeat_stale` and `restart_storm` for those wakes.
    pub halt_reason: Option<String>,
    /// The journal event that woke it, as `log --json` prints events (without `version`);
    /// null on timeout.
    pub event: Option<serde_json::Value>,
    /// For `heartbeat_stale`, `restart_storm` and `dead`: what is wrong and what to do, as
    /// `status` says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The schema of the `wait` line.
pub fn wait_schema() -> schemars::Schema {
    schemars::schema_for!(WaitLine)
}

/// The version of the `probe --json` shape.
pub const PROBE_VERSION: u32 = 1;
/// The version of the `doctor --json` shape.
pub const DOCTOR_VERSION: u32 = 1;

/// `nightshift probe --json`: the report's fields inline, with the summary line and the exit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeOutput<'a> {
    pub version: u32,
    /// The line a person reads: the achieved bound, or the flake and its dimensions.
    pub summary: String,
    /// `check_flaky`, `execution_failure`, or null.
    pub halt_reason: Option<&'static str>,
    pub exit_code: i32,
    #[serde(flatten)]
    pub report: &'a nightshift_core::check::probe::ProbeReport,
}

/// `nightshift doctor --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DoctorOutput<'a> {
    pub version: u32,
    pub findings: &'a [nightshift_core::doctor::Finding],
    /// The halt reason of the finding that refuses a run, or null.
    pub halt_reason: Option<&'static str>,
    pub exit_code: i32,
}

/// The schema of `probe --json`.
pub fn probe_schema() -> schemars::Schema {
    schemars::schema_for!(ProbeOutput<'static>)
}

/// The schema of `doctor --json`.
pub fn doctor_schema() -> schemars::Schema {
    schemars::schema_for!(DoctorOutput<'static>)
}

/// `nightshift explain --json`: per item, each attempt's trajectory (one point per work check:
/// the failing set, or null when the output did not parse) and the verdict on retrying.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Explain {
    /// Shape version; bumped on any incompatible change.
    pub version: u32,
    /// The run explained (the latest), or null when none has started here.
    pub run_id: Option<String>,
    /// The items explained, in plan order; each item's `verdict` is its latest attempt's.
    pub items: Vec<nightshift_core::report::explain::ItemReport>,
    /// Items left out because they shipped (when no item was named).
    pub shipped_omitted: Vec<String>,
}

impl Explain {
    pub fn new(explanation: Option<nightshift_core::report::explain::Explanation>) -> Explain {
        match explanation {
            Some(e) => Explain {
                version: EXPLAIN_VERSION,
                run_id: Some(e.run_id),
                items: e.items,
                shipped_omitted: e.shipped_omitted,
            },
            None => Explain {
                version: EXPLAIN_VERSION,
                run_id: None,
                items: Vec::new(),
                shipped_omitted: Vec::new(),
            },
        }
    }
}

/// The schema of `explain --json`.
pub fn explain_schema() -> schemars::Schema {
    schemars::schema_for!(Explain)
}

/// The version of the `report --json` shape.
pub const REPORT_VERSION: u32 = 1;

/// `nightshift report --json`: the morning report of one run (null when none has started).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    /// Shape version; bumped on any incompatible change.
    pub version: u32,
    pub report: Option<nightshift_core::report::morning::Morning>,
}

/// The schema of `report --json`.
pub fn report_schema() -> schemars::Schema {
    schemars::schema_for!(Report)
}
