//! The morning report (issue 15): what shipped, what did not and why, what it cost, what needs a
//! person, and whether the night can be trusted — from the store and the receipts only.
//!
//! [`build`] is a pure function of a [`Store`] (read-only), a run, a [`ReceiptSet`] (the run's
//! receipt files as bytes and the public key) and the configured caps: no agent, no network, no
//! clock. The same inputs give the same [`Morning`]; every claim in it is read from the journal or
//! from a receipt that verifies, and a receipt that does not verify (or that disagrees with the
//! journal) turns the headline `not_verified`.
//!
//! The headline, first match wins:
//! 1. **not_verified** — nothing shipped in the run; or a shipped item's receipt is missing, does
//!    not verify, says something else than the journal (item, commit), or records no green check
//!    on the merged result.
//! 2. **verified_with_gaps** — every shipped item's receipt verifies with a green merged check,
//!    but there is a gap, each named: a gate in `log` mode fired, a check was untrusted (it
//!    contradicted itself on one tree), a shipped item owes a review (an open debt), an item was
//!    shipped by `accept`/`confirm` (its merged check is journaled, not in a signed receipt), or a
//!    receipt says `unverified` (facts missing from it, listed).
//! 3. **verified** — otherwise.

mod pr;
pub mod receipts;
pub use pr::pr_body;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::halt::HaltReason;
use crate::receipt::Verdict as ReceiptVerdict;
use crate::store::{
    AttemptRow, CheckStage, DebtRow, Event, EventKind, ItemRow, ItemState, Outcome, RunRow, Spend,
    Store, StoreError,
};

use receipts::{Checked, check};
pub use receipts::{LoadError, ReceiptSet, digest};

/// The version of the [`Morning`] shape (what `report --json` prints inside its envelope).
pub const MORNING_VERSION: u32 = 1;

/// The journal kinds the report reads.
const KINDS: &[&str] = &[
    "run_started",
    "session_started",
    "session_ended",
    "budget_tripped",
    "run_stopped",
    "run_finished",
    "gate_warned",
    "check_ended",
    "integrated",
    "merge_prepared",
    "review_ended",
    "review_decided",
    "debt_settled",
    "accepted",
    "attempt_failed",
    "attempt_started",
    "item_escalated",
    "item_awaiting_operator",
    "operator_message",
    "operator_message_delivered",
];

/// What building the report can fail with.
#[derive(Debug, thiserror::Error)]
pub enum MorningError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Limits the spend chart is drawn against (`[limits]` of the configuration, when it loads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
pub struct Caps {
    /// `[limits] run_tokens` (weighted tokens).
    pub run_tokens: Option<u64>,
    /// `[limits] run_usd`.
    pub run_usd: Option<f64>,
}

/// Whether the night can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeadlineKind {
    Verified,
    VerifiedWithGaps,
    NotVerified,
}

impl HeadlineKind {
    /// The words at the top of the report.
    pub fn title(self) -> &'static str {
        match self {
            HeadlineKind::Verified => "VERIFIED",
            HeadlineKind::VerifiedWithGaps => "VERIFIED WITH GAPS",
            HeadlineKind::NotVerified => "NOT VERIFIED",
        }
    }
}

/// The headline and the facts it was computed from.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Headline {
    pub kind: HeadlineKind,
    /// For `not_verified`: every reason, one sentence each.
    pub failures: Vec<String>,
    /// For `verified_with_gaps` (and listed under `not_verified` too): every gap.
    pub gaps: Vec<Gap>,
}

/// One gap in an otherwise verified night.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Gap {
    /// `logged_gate`, `untrusted_check`, `review_debt`, `accepted_unsigned`, `receipt_unverified`.
    pub kind: String,
    pub item: Option<String>,
    pub detail: String,
}

/// How an item ended up, in the report's words. Nothing failed reads as success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// Its work is on the target, shipped by the run.
    Shipped,
    /// Escalated (or parked) and then shipped by `nightshift accept`.
    Accepted,
    /// Awaited an operator, who did what it asked (`nightshift confirm`).
    Confirmed,
    /// Shipped by an earlier run; not attempted in this one.
    ShippedEarlier,
    /// Parked: the check never went green within its attempts.
    ParkedByCheck,
    /// Parked: a guard failed (the oracle was weakened, or a blocked path edited).
    ParkedByIntegrity,
    /// Parked or cut: a budget limit ended it.
    BudgetCut,
    /// Waits on actions only a person can take.
    AwaitingOperator,
    /// A review escalated it: waits on a person's decision.
    Escalated,
    /// Attempted, did not ship, queued for another attempt.
    Retrying,
    /// An attempt is open.
    Running,
    /// Never attempted in this run.
    NotAttempted,
}

impl OutcomeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Shipped => "shipped",
            OutcomeKind::Accepted => "accepted",
            OutcomeKind::Confirmed => "confirmed",
            OutcomeKind::ShippedEarlier => "shipped_earlier",
            OutcomeKind::ParkedByCheck => "parked_by_check",
            OutcomeKind::ParkedByIntegrity => "parked_by_integrity",
            OutcomeKind::BudgetCut => "budget_cut",
            OutcomeKind::AwaitingOperator => "awaiting_operator",
            OutcomeKind::Escalated => "escalated",
            OutcomeKind::Retrying => "retrying",
            OutcomeKind::Running => "running",
            OutcomeKind::NotAttempted => "not_attempted",
        }
    }

    /// Whether the item's work is on the target.
    pub fn is_shipped(self) -> bool {
        matches!(
            self,
            OutcomeKind::Shipped
                | OutcomeKind::Accepted
                | OutcomeKind::Confirmed
                | OutcomeKind::ShippedEarlier
        )
    }
}

/// Spend in labelled units. Tokens and turns are what the agent's stream reported; USD is the
/// agent CLI's own estimate (never a bill).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
pub struct SpendLabelled {
    pub sessions: u32,
    /// Sessions whose agent reported no spend: the totals undercount by theirs.
    pub sessions_without_spend: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Weighted tokens (cache reads weighted), what token limits count.
    pub weighted_tokens: f64,
    pub turns: u32,
    /// The CLI's estimate in USD; null when no session reported one.
    pub usd_estimate: Option<f64>,
}

impl SpendLabelled {
    fn add(&mut self, spend: Option<&Spend>) {
        self.sessions += 1;
        match spend {
            Some(s) => {
                self.input_tokens += s.input;
                self.output_tokens += s.output;
                self.weighted_tokens += s.weighted;
                self.turns += s.turns;
                if let Some(usd) = s.cost_usd {
                    *self.usd_estimate.get_or_insert(0.0) += usd;
                }
            }
            None => self.sessions_without_spend += 1,
        }
    }

    fn absorb(&mut self, other: &SpendLabelled) {
        self.sessions += other.sessions;
        self.sessions_without_spend += other.sessions_without_spend;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.weighted_tokens += other.weighted_tokens;
        self.turns += other.turns;
        if let Some(usd) = other.usd_estimate {
            *self.usd_estimate.get_or_insert(0.0) += usd;
        }
    }
}

/// A receipt as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReceiptRef {
    /// Relative to the repository root.
    pub path: String,
    /// SHA-256 of the file's bytes (hex).
    pub digest: String,
    /// `valid` (the signature holds), `invalid`, `no_key`.
    pub signature: String,
    /// What the receipt concludes (`success`, `unverified`, `failed`, `parked`), when valid.
    pub verdict: Option<String>,
    /// Facts missing from a valid `unverified` receipt.
    pub missing: Vec<String>,
    /// Why the signature does not hold, when it does not.
    pub problem: Option<String>,
    /// The command that re-checks it.
    pub replay: String,
}

/// One attempt of an item.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AttemptSection {
    pub attempt: u32,
    /// Why it ended, in one sentence (`running` while open).
    pub ended: String,
    /// The loop-contract reason, when it ended on one.
    pub halt: Option<String>,
    /// Agent sessions (dev sessions; reviews are in `spend`).
    pub sessions: u32,
    /// Work checks run.
    pub checks: u32,
    /// The failing-set size per work check (null: the output did not parse).
    pub failing: Vec<Option<usize>>,
    pub spend: SpendLabelled,
    /// Where the attempt's work is kept, when it did not ship.
    pub preserve_ref: Option<String>,
    pub receipt: Option<ReceiptRef>,
}

/// Where an item's work is.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// On the target as this commit.
    Commit { commit: String },
    /// Kept under a ref; `restore` makes it a branch.
    Preserved { ref_name: String, restore: String },
    /// The attempt's branch is kept for a person.
    Branch { branch: String },
    /// Nothing to point at (not attempted, or no work was kept).
    None,
}

/// One item of the run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ItemSection {
    pub id: String,
    /// The store's state (`shipped`, `parked`, …).
    pub state: String,
    pub outcome: OutcomeKind,
    /// Why it is where it is (the journal's reason), when it did not plainly ship.
    pub reason: Option<String>,
    pub attempts: Vec<AttemptSection>,
    pub spend: SpendLabelled,
    pub work: Work,
    /// For `awaiting_operator`: what only a person can do.
    pub operator_actions: Vec<String>,
    /// What operators told the item's sessions (`nightshift tell`).
    pub messages: Vec<OperatorMessage>,
}

/// Something a person should do, with the one command that does it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Action {
    /// 1 = first. Awaiting operator, escalations, parked by integrity, review debt, then the
    /// other parked items.
    pub rank: u32,
    /// `awaiting_operator`, `escalated`, `parked_by_integrity`, `review_debt`, `parked`.
    pub kind: String,
    pub item: String,
    pub why: String,
    pub command: String,
}

/// A decision the run took without a person, and what undoing it costs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Decision {
    /// `triage`, `false_positive`, `gate_logged`, `budget_cut`, `deadline_cut`, `review`.
    pub kind: String,
    pub item: Option<String>,
    pub at: String,
    pub what: String,
    /// What reversing it costs (a command, or what must be spent).
    pub reverse: String,
}

/// What an operator said to an item (`nightshift tell`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct OperatorMessage {
    pub item: String,
    pub who: String,
    pub at: String,
    pub text: String,
    /// How it reached the agent: `live` (the running session's CLI took it on its stdin),
    /// `prompt` (in the prompt of the item's next session), or `not_delivered` (no session of
    /// the item started after it).
    pub delivered: String,
    /// Where: `attempt A iteration I` of the session (and `CLI session ID` when live).
    pub delivered_to: Option<String>,
    /// When the session took it (live) or started (prompt).
    pub delivered_at: Option<String>,
}

/// One agent session on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionSpan {
    pub item: String,
    pub attempt: u32,
    pub iteration: u32,
    /// Milliseconds since the run started.
    pub start_ms: i64,
    pub end_ms: Option<i64>,
    pub outcome: Option<String>,
}

/// The run's cumulative spend after one session ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct SpendPoint {
    pub at_ms: i64,
    pub weighted_tokens: f64,
    pub usd_estimate: f64,
}

/// One work check of an item, on the failing-set chart.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FailingPoint {
    pub attempt: u32,
    pub iteration: u32,
    pub at_ms: i64,
    /// Null when the output did not parse.
    pub failing: Option<usize>,
    pub green: bool,
}

/// The night over time.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Timeline {
    /// Milliseconds from the run's start to its last event.
    pub span_ms: i64,
    pub sessions: Vec<SessionSpan>,
    pub spend: Vec<SpendPoint>,
    pub caps: Caps,
    /// Per item (plan order), its work checks.
    pub failing: Vec<(String, Vec<FailingPoint>)>,
}

/// The morning report of one run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Morning {
    pub run_id: String,
    pub target: String,
    pub base: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// `running` or `finished`.
    pub state: String,
    pub halt_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub headline: Headline,
    /// Items attempted in this run, plan order.
    pub items: Vec<ItemSection>,
    /// Items this run never attempted (kept apart from attempted-and-failed), with why.
    pub never_attempted: Vec<ItemSection>,
    /// Ranked, first first.
    pub needs_human: Vec<Action>,
    pub decisions: Vec<Decision>,
    pub spend: SpendLabelled,
    pub timeline: Timeline,
}

/// Per-attempt facts gathered in one pass over the journal.
#[derive(Default)]
struct AttemptFacts {
    sessions: u32,
    checks: u32,
    failing: Vec<Option<usize>>,
    spend: SpendLabelled,
    guard_failed: Option<String>,
    budget_tripped: Option<String>,
    over_budget: bool,
    integrated: Option<String>,
    accepted: Option<(String, bool, Option<String>)>,
    failed: Option<(String, Option<HaltReason>, Option<String>)>,
    green_merged: bool,
    /// The target tip the work was last brought onto (`merge_prepared`).
    merged_onto: Option<String>,
}

/// Builds the morning report of `run`; see the module docs. Pure over its inputs.
pub fn build(
    store: &Store,
    run: &RunRow,
    receipts: &ReceiptSet,
    caps: Caps,
) -> Result<Morning, MorningError> {
    let items = store.items(&run.id)?;
    let attempts = store.attempts(&run.id)?;
    let events = store.run_events(&run.id, KINDS)?;
    let debts: Vec<DebtRow> = store
        .debts()?
        .into_iter()
        .filter(|d| d.run_id == run.id)
        .collect();
    Ok(assemble(
        run, &items, &attempts, &events, &debts, receipts, caps,
    ))
}

fn assemble(
    run: &RunRow,
    items: &[ItemRow],
    attempts: &[AttemptRow],
    events: &[Event],
    debts: &[DebtRow],
    receipts: &ReceiptSet,
    caps: Caps,
) -> Morning {
    let start = parse_ms(&run.started_at).unwrap_or(0);
    let mut facts: BTreeMap<(String, u32), AttemptFacts> = BTreeMap::new();
    let mut sessions: Vec<SessionSpan> = Vec::new();
    let mut spend_points: Vec<SpendPoint> = Vec::new();
    let mut failing: BTreeMap<String, Vec<FailingPoint>> = BTreeMap::new();
    let mut decisions: Vec<Decision> = Vec::new();
    let mut messages: BTreeMap<String, Vec<OperatorMessage>> = BTreeMap::new();
    // (seq, item) of every operator message, in journal order.
    let mut message_seqs: Vec<(i64, String)> = Vec::new();
    let mut gaps: Vec<Gap> = Vec::new();
    let mut run_spend = SpendLabelled::default();
    let mut last_ms = start;
    let shipped_commit_of = |item: &str| {
        items
            .iter()
            .find(|i| i.id == item)
            .and_then(|i| i.shipped_commit.clone())
    };

    for event in events {
        let at_ms = parse_ms(&event.at).map_or(0, |t| t - start);
        last_ms = last_ms.max(at_ms + start);
        let spent = |facts: &mut BTreeMap<(String, u32), AttemptFacts>,
                     run_spend: &mut SpendLabelled,
                     points: &mut Vec<SpendPoint>,
                     item: &str,
                     attempt: u32,
                     spend: Option<&Spend>| {
            facts
                .entry((item.to_owned(), attempt))
                .or_default()
                .spend
                .add(spend);
            run_spend.add(spend);
            points.push(SpendPoint {
                at_ms,
                weighted_tokens: run_spend.weighted_tokens,
                usd_estimate: run_spend.usd_estimate.unwrap_or(0.0),
            });
        };
        match &event.kind {
            EventKind::SessionStarted {
                item,
                attempt,
                iteration,
                told_through,
                ..
            } => {
                // Every message not yet delivered that its prompt read (all before it, in a
                // journal from before `told_through`) is in this session's prompt.
                let seqs: Vec<i64> = message_seqs
                    .iter()
                    .filter(|(_, i)| i == item)
                    .map(|(seq, _)| *seq)
                    .collect();
                for (m, seq) in messages.entry(item.clone()).or_default().iter_mut().zip(seqs) {
                    if m.delivered == "not_delivered" && told_through.is_none_or(|t| seq <= t) {
                        m.delivered = "prompt".into();
                        m.delivered_to = Some(format!("attempt {attempt} iteration {iteration}"));
                        m.delivered_at = Some(event.at.clone());
                    }
                }
                sessions.push(SessionSpan {
                item: item.clone(),
                attempt: *attempt,
                iteration: *iteration,
                start_ms: at_ms,
                end_ms: None,
                outcome: None,
            });
            }
            EventKind::SessionEnded {
                item,
                attempt,
                iteration,
                outcome,
                spend,
                duration_ms,
                ..
            } => {
                let open = sessions.iter_mut().rev().find(|s| {
                    s.item == *item
                        && s.attempt == *attempt
                        && s.iteration == *iteration
                        && s.end_ms.is_none()
                });
                match open {
                    Some(s) => {
                        s.end_ms = Some(at_ms.max(s.start_ms));
                        s.outcome = Some(outcome_name(*outcome));
                    }
                    None => sessions.push(SessionSpan {
                        item: item.clone(),
                        attempt: *attempt,
                        iteration: *iteration,
                        start_ms: at_ms.saturating_sub(i64::try_from(*duration_ms).unwrap_or(0)),
                        end_ms: Some(at_ms),
                        outcome: Some(outcome_name(*outcome)),
                    }),
                }
                let f = facts.entry((item.clone(), *attempt)).or_default();
                f.sessions += 1;
                if *outcome == Outcome::OverBudget {
                    f.over_budget = true;
                }
                spent(
                    &mut facts,
                    &mut run_spend,
                    &mut spend_points,
                    item,
                    *attempt,
                    spend.as_ref(),
                );
            }
            EventKind::ReviewEnded {
                item,
                attempt,
                spend,
                ..
            }
            | EventKind::DebtSettled {
                item,
                attempt,
                spend,
                ..
            } => spent(
                &mut facts,
                &mut run_spend,
                &mut spend_points,
                item,
                *attempt,
                spend.as_ref(),
            ),
            EventKind::BudgetTripped {
                item,
                attempt,
                scope,
                metric,
                used,
                limit,
                enforced,
            } => {
                let what = format!(
                    "{} {} limit {} crossed ({})",
                    serde_name(scope),
                    serde_name(metric),
                    number(*limit),
                    number(*used)
                );
                if *enforced {
                    facts
                        .entry((item.clone(), *attempt))
                        .or_default()
                        .budget_tripped = Some(what.clone());
                    decisions.push(Decision {
                        kind: "budget_cut".into(),
                        item: Some(item.clone()),
                        at: event.at.clone(),
                        what: format!("ended attempt {attempt}'s session: {what}"),
                        reverse: format!(
                            "raise `[limits] {}_{}` and `nightshift run` again: a new attempt spends at least as much again",
                            serde_name(scope),
                            serde_name(metric)
                        ),
                    });
                } else {
                    decisions.push(Decision {
                        kind: "gate_logged".into(),
                        item: Some(item.clone()),
                        at: event.at.clone(),
                        what: format!("budget_mode logged, did not enforce: {what}"),
                        reverse: "nothing to undo; `budget_mode = \"enforce\"` ends such sessions"
                            .into(),
                    });
                    gaps.push(Gap {
                        kind: "logged_gate".into(),
                        item: Some(item.clone()),
                        detail: format!("a budget limit in log mode was crossed: {what}"),
                    });
                }
            }
            EventKind::GateWarned {
                gate,
                class,
                detail,
            } => {
                decisions.push(Decision {
                    kind: "gate_logged".into(),
                    item: None,
                    at: event.at.clone(),
                    what: format!("gate `{gate}` ({class}) fired in log mode: {detail}"),
                    reverse: format!(
                        "nothing was stopped; set the `{gate}` gate to enforce to act on it next time"
                    ),
                });
                gaps.push(Gap {
                    kind: "logged_gate".into(),
                    item: None,
                    detail: format!("gate `{gate}` fired in log mode ({class}): {detail}"),
                });
            }
            EventKind::CheckEnded {
                item,
                attempt,
                iteration,
                stage,
                green,
                results,
                guards,
                untrusted,
                ..
            } => {
                let f = facts.entry((item.clone(), *attempt)).or_default();
                if let Some(why) = untrusted {
                    gaps.push(Gap {
                        kind: "untrusted_check".into(),
                        item: Some(item.clone()),
                        detail: format!("the check contradicted itself: {why}"),
                    });
                }
                match stage {
                    CheckStage::Work => {
                        f.checks += 1;
                        let count = results.as_ref().map(|r| r.failing.len());
                        f.failing.push(count);
                        if let Some(g) = guards
                            .iter()
                            .find(|g| g.state == crate::guard::GuardState::Fail)
                        {
                            f.guard_failed = Some(format!("guard `{}`: {}", g.guard, g.detail));
                        }
                        failing.entry(item.clone()).or_default().push(FailingPoint {
                            attempt: *attempt,
                            iteration: *iteration,
                            at_ms,
                            failing: count,
                            green: *green,
                        });
                    }
                    CheckStage::Merged => f.green_merged |= *green,
                }
            }
            EventKind::Integrated {
                item,
                attempt,
                commit,
                ..
            } => {
                facts.entry((item.clone(), *attempt)).or_default().integrated = Some(commit.clone());
            }
            EventKind::MergePrepared {
                item,
                attempt,
                onto,
                ..
            } => {
                facts.entry((item.clone(), *attempt)).or_default().merged_onto = Some(onto.clone());
            }
            EventKind::Accepted {
                item,
                attempt,
                commit,
                confirmed,
                debt,
                ..
            } => {
                facts.entry((item.clone(), *attempt)).or_default().accepted =
                    Some((commit.clone(), *confirmed, debt.clone()));
            }
            EventKind::AttemptFailed {
                item,
                attempt,
                reason,
                halt,
                preserve_ref,
                ..
            } => {
                facts.entry((item.clone(), *attempt)).or_default().failed =
                    Some((reason.clone(), *halt, preserve_ref.clone()));
            }
            EventKind::ReviewDecided {
                item,
                attempt,
                action,
                class: Some(class),
                why,
                ..
            } => {
                {
                    let shipped = shipped_commit_of(item);
                    let (kind, reverse) = match action.as_str() {
                        "ship_with_debt" => (
                            "false_positive",
                            match &shipped {
                                Some(c) => format!(
                                    "`git revert {}` on the target; the debt review already looks at it",
                                    short(c)
                                ),
                                None => "nothing shipped from it".into(),
                            },
                        ),
                        "escalate" => (
                            "triage",
                            format!("already waiting on you: `nightshift accept {item}` ships it"),
                        ),
                        "fix" => (
                            "triage",
                            "a repair iteration was spent; nothing to undo".into(),
                        ),
                        _ => ("triage", "nothing to undo".into()),
                    };
                    decisions.push(Decision {
                        kind: kind.into(),
                        item: Some(item.clone()),
                        at: event.at.clone(),
                        what: format!(
                            "attempt {attempt}: review triaged `{class}` → {action}: {why}"
                        ),
                        reverse,
                    });
                }
            }
            EventKind::RunStopped {
                halt_reason: Some(h),
                ..
            } if *h == HaltReason::DeadlineReached => decisions.push(Decision {
                kind: "deadline_cut".into(),
                item: None,
                at: event.at.clone(),
                what: "the `--until` deadline passed: no new session or attempt started after it"
                    .into(),
                reverse: "`nightshift run` resumes the run where it stopped".into(),
            }),
            EventKind::RunFinished { halt_reason, .. }
                if *halt_reason == HaltReason::BudgetExceeded =>
            {
                decisions.push(Decision {
                    kind: "budget_cut".into(),
                    item: None,
                    at: event.at.clone(),
                    what: "the run's budget was spent: nothing more was started".into(),
                    reverse: "raise `[limits] run_tokens`/`run_usd`, then `nightshift run --fresh` works the items left".into(),
                })
            }
            EventKind::OperatorMessage { item, who, text } => {
                message_seqs.push((event.seq, item.clone()));
                messages
                    .entry(item.clone())
                    .or_default()
                    .push(OperatorMessage {
                        item: item.clone(),
                        who: who.clone(),
                        at: event.at.clone(),
                        text: text.clone(),
                        delivered: "not_delivered".into(),
                        delivered_to: None,
                        delivered_at: None,
                    })
            }
            EventKind::OperatorMessageDelivered {
                item,
                attempt,
                message_seq,
                agent_session,
                ..
            } => {
                // The message's place among the item's messages, by its journal position.
                let nth = message_seqs
                    .iter()
                    .filter(|(_, i)| i == item)
                    .position(|(seq, _)| seq == message_seq);
                if let Some(m) = nth.and_then(|n| messages.get_mut(item)?.get_mut(n)) {
                    m.delivered = "live".into();
                    let iteration = sessions
                        .iter()
                        .rev()
                        .find(|s| s.item == *item && s.attempt == *attempt)
                        .map(|s| format!(" iteration {}", s.iteration))
                        .unwrap_or_default();
                    m.delivered_to = Some(match agent_session {
                        Some(id) => format!("attempt {attempt}{iteration}, CLI session {id}"),
                        None => format!("attempt {attempt}{iteration}"),
                    });
                    m.delivered_at = Some(event.at.clone());
                }
            }
            _ => {}
        }
    }

    let mut sections = Vec::new();
    let mut never = Vec::new();
    let mut failures = Vec::new();
    let mut needs: Vec<Action> = Vec::new();
    for row in items {
        let mine: Vec<&AttemptRow> = attempts.iter().filter(|a| a.item == row.id).collect();
        let mut spend = SpendLabelled::default();
        let mut attempt_sections = Vec::new();
        for att in mine.iter().copied() {
            let f = facts
                .remove(&(row.id.clone(), att.attempt))
                .unwrap_or_default();
            spend.absorb(&f.spend);
            let (receipt, facts) = match receipts.files.get(&(row.id.clone(), att.attempt)) {
                Some((path, bytes)) => {
                    let (r, facts) = receipt_ref(receipts, path, bytes);
                    (Some(r), facts)
                }
                None => (None, None),
            };
            attempt_sections.push((att, f, receipt, facts));
        }
        let outcome = outcome_of(row, &attempt_sections, run);
        let latest = attempt_sections.last();
        let reason = match outcome {
            OutcomeKind::Shipped | OutcomeKind::ShippedEarlier => None,
            OutcomeKind::NotAttempted => Some(not_attempted_why(run, row)),
            _ => latest
                .and_then(|(_, f, _, _)| {
                    f.guard_failed
                        .clone()
                        .filter(|_| outcome == OutcomeKind::ParkedByIntegrity)
                        .or_else(|| {
                            f.budget_tripped
                                .clone()
                                .filter(|_| outcome == OutcomeKind::BudgetCut)
                        })
                        .or_else(|| f.failed.as_ref().map(|(r, _, _)| r.clone()))
                })
                .or_else(|| row.reason.clone()),
        };
        let work = work_of(row, latest.map(|(a, _, _, _)| *a), outcome);
        let operator_actions: Vec<String> = row
            .operator_actions
            .as_deref()
            .map(|a| a.lines().map(str::to_owned).collect())
            .unwrap_or_default();

        // The headline's facts for a shipped item.
        if matches!(
            outcome,
            OutcomeKind::Shipped | OutcomeKind::Accepted | OutcomeKind::Confirmed
        ) {
            check_shipped(row, &attempt_sections, outcome, &mut failures, &mut gaps);
        }
        if let Some(action) = action_for(row, outcome, reason.as_deref(), &work) {
            needs.push(action);
        }

        let attempts_out = attempt_sections
            .into_iter()
            .map(|(att, f, receipt, _)| attempt_section(att, f, receipt))
            .collect();
        let section = ItemSection {
            id: row.id.clone(),
            state: row.state.to_string(),
            outcome,
            reason,
            attempts: attempts_out,
            spend,
            work,
            operator_actions,
            messages: messages.remove(&row.id).unwrap_or_default(),
        };
        if matches!(
            outcome,
            OutcomeKind::NotAttempted | OutcomeKind::ShippedEarlier
        ) {
            never.push(section);
        } else {
            sections.push(section);
        }
    }
    for debt in debts.iter().filter(|d| d.is_open()) {
        gaps.push(Gap {
            kind: "review_debt".into(),
            item: Some(debt.item.clone()),
            detail: format!(
                "{} shipped without its review ({}); it is owed",
                short(&debt.commit),
                debt.reason
            ),
        });
        needs.push(Action {
            rank: 4,
            kind: "review_debt".into(),
            item: debt.item.clone(),
            why: format!(
                "shipped {} without its review: {}",
                short(&debt.commit),
                debt.reason
            ),
            command: "nightshift run".into(),
        });
    }
    needs.sort_by_key(|a| a.rank);
    if !sections.iter().any(|s| s.outcome.is_shipped()) {
        failures.insert(0, "nothing shipped in this run".into());
    }
    let kind = if !failures.is_empty() {
        HeadlineKind::NotVerified
    } else if !gaps.is_empty() {
        HeadlineKind::VerifiedWithGaps
    } else {
        HeadlineKind::Verified
    };
    let order: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
    let mut failing: Vec<(String, Vec<FailingPoint>)> = failing.into_iter().collect();
    failing.sort_by_key(|(id, _)| order.iter().position(|o| o == id));
    Morning {
        run_id: run.id.clone(),
        target: run.target.clone(),
        base: run.base.clone(),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        state: run.state.to_string(),
        halt_reason: run.halt_reason.clone(),
        exit_code: run.exit_code,
        headline: Headline {
            kind,
            failures,
            gaps,
        },
        items: sections,
        never_attempted: never,
        needs_human: needs,
        decisions,
        spend: run_spend,
        timeline: Timeline {
            span_ms: last_ms - start,
            sessions,
            spend: spend_points,
            caps,
            failing,
        },
    }
}

type Gathered<'a> = (
    &'a AttemptRow,
    AttemptFacts,
    Option<ReceiptRef>,
    Option<ReceiptFacts>,
);

fn outcome_of(row: &ItemRow, attempts: &[Gathered<'_>], run: &RunRow) -> OutcomeKind {
    let latest = attempts.last();
    match row.state {
        ItemState::Shipped | ItemState::IntegratedLocal => match latest {
            None => OutcomeKind::ShippedEarlier,
            Some((_, f, _, _)) => match &f.accepted {
                Some((_, true, _)) => OutcomeKind::Confirmed,
                Some((_, false, _)) => OutcomeKind::Accepted,
                None => OutcomeKind::Shipped,
            },
        },
        ItemState::Escalated => OutcomeKind::Escalated,
        ItemState::AwaitingOperator => OutcomeKind::AwaitingOperator,
        ItemState::Running => OutcomeKind::Running,
        _ if attempts.is_empty() => OutcomeKind::NotAttempted,
        state => {
            let Some((att, f, _, _)) = latest else {
                return OutcomeKind::NotAttempted;
            };
            let halt = f.failed.as_ref().and_then(|(_, h, _)| *h);
            if f.guard_failed.is_some()
                || matches!(
                    halt,
                    Some(
                        HaltReason::MetricIntegrityViolation
                            | HaltReason::BlockedPathModified
                            | HaltReason::ControlPlaneTampered
                    )
                )
            {
                OutcomeKind::ParkedByIntegrity
            } else if f.budget_tripped.is_some()
                || f.over_budget
                || halt == Some(HaltReason::BudgetExceeded)
                || (!att.is_finished()
                    && run.halt_reason.as_deref() == Some(HaltReason::BudgetExceeded.as_str()))
            {
                OutcomeKind::BudgetCut
            } else if state == ItemState::Parked {
                OutcomeKind::ParkedByCheck
            } else if !att.is_finished() {
                OutcomeKind::Running
            } else {
                OutcomeKind::Retrying
            }
        }
    }
}

fn not_attempted_why(run: &RunRow, row: &ItemRow) -> String {
    if row.state == ItemState::Shipped {
        return "shipped by an earlier run".into();
    }
    match run.halt_reason.as_deref() {
        Some(h) if h == HaltReason::BudgetExceeded.as_str() => {
            "the run's budget was spent before it was reached".into()
        }
        Some(h) if h == HaltReason::DeadlineReached.as_str() => {
            "the deadline passed before it was reached".into()
        }
        Some(h) => format!("the run halted ({h}) before it was reached"),
        None if run.is_running() => "not reached yet".into(),
        None => "not reached".into(),
    }
}

fn work_of(row: &ItemRow, latest: Option<&AttemptRow>, outcome: OutcomeKind) -> Work {
    if outcome.is_shipped() {
        return match &row.shipped_commit {
            Some(c) => Work::Commit { commit: c.clone() },
            None => Work::None,
        };
    }
    let preserve = latest
        .and_then(|a| a.preserve_ref.clone())
        .or_else(|| row.preserve_ref.clone());
    if let Some(r) = preserve {
        let restore = restore_command(&r, &row.id);
        return Work::Preserved {
            ref_name: r,
            restore,
        };
    }
    match latest {
        Some(a) if a.keep_branch => Work::Branch {
            branch: a.branch.clone(),
        },
        _ => Work::None,
    }
}

/// `refs/nightshift/preserve/<item>/<attempt>` → `nightshift restore <item> <attempt>`.
fn restore_command(r: &str, item: &str) -> String {
    r.strip_prefix("refs/nightshift/preserve/")
        .and_then(|rest| rest.rsplit_once('/'))
        .map(|(item, attempt)| format!("nightshift restore {item} {attempt}"))
        .unwrap_or_else(|| format!("nightshift restore {item}"))
}

fn action_for(
    row: &ItemRow,
    outcome: OutcomeKind,
    reason: Option<&str>,
    work: &Work,
) -> Option<Action> {
    let why = reason.unwrap_or("").to_owned();
    let (rank, kind, command) = match outcome {
        OutcomeKind::AwaitingOperator => (
            1,
            "awaiting_operator",
            format!("nightshift confirm {}", row.id),
        ),
        OutcomeKind::Escalated => (2, "escalated", format!("nightshift accept {}", row.id)),
        OutcomeKind::ParkedByIntegrity => (
            3,
            "parked_by_integrity",
            match work {
                Work::Preserved { restore, .. } => restore.clone(),
                _ => format!("nightshift explain {}", row.id),
            },
        ),
        OutcomeKind::ParkedByCheck | OutcomeKind::BudgetCut => {
            (5, "parked", format!("nightshift explain {}", row.id))
        }
        _ => return None,
    };
    let why = if outcome == OutcomeKind::AwaitingOperator && !why.is_empty() {
        why
    } else if why.is_empty() {
        outcome.as_str().replace('_', " ")
    } else {
        why
    };
    Some(Action {
        rank,
        kind: kind.into(),
        item: row.id.clone(),
        why,
        command,
    })
}

fn check_shipped(
    row: &ItemRow,
    attempts: &[Gathered<'_>],
    outcome: OutcomeKind,
    failures: &mut Vec<String>,
    gaps: &mut Vec<Gap>,
) {
    let shipping = attempts
        .iter()
        .rev()
        .find(|(_, f, _, _)| f.integrated.is_some() || f.accepted.is_some());
    let Some((att, f, receipt, facts)) = shipping else {
        failures.push(format!(
            "{}: shipped, but the journal records no attempt of this run shipping it",
            row.id
        ));
        return;
    };
    let Some(receipt) = receipt else {
        failures.push(format!(
            "{}: attempt {} shipped but has no receipt",
            row.id, att.attempt
        ));
        return;
    };
    match receipt.signature.as_str() {
        "valid" => {}
        "no_key" => {
            failures.push(format!(
                "{}: its receipt cannot be verified: {}",
                row.id,
                receipt.problem.as_deref().unwrap_or("no public key")
            ));
            return;
        }
        _ => {
            failures.push(format!(
                "{}: its receipt does not verify: {}",
                row.id,
                receipt.problem.as_deref().unwrap_or("bad signature")
            ));
            return;
        }
    }
    let Some(facts) = facts else {
        return;
    };
    if facts.item != row.id || facts.attempt != att.attempt {
        failures.push(format!(
            "{}: its receipt is of {} attempt {}, not of this attempt",
            row.id, facts.item, facts.attempt
        ));
    }
    match outcome {
        OutcomeKind::Shipped => {
            if facts.shipped_commit.as_deref() != f.integrated.as_deref()
                || row.shipped_commit.as_deref() != f.integrated.as_deref()
            {
                failures.push(format!(
                    "{}: its receipt names commit {}, the journal {}",
                    row.id,
                    facts.shipped_commit.as_deref().map_or("none", short),
                    f.integrated.as_deref().map_or("none", short)
                ));
            }
            // Work brought onto the base it started from is the merged result itself: the
            // engine runs no second check then, and the green work check is the one.
            let onto_base = f.merged_onto.as_deref() == Some(att.base.as_str());
            if !(facts.green_merged || (onto_base && facts.green_work)) {
                failures.push(format!(
                    "{}: its receipt records no green check on the merged result",
                    row.id
                ));
            }
            if facts.verdict == "unverified" {
                gaps.push(Gap {
                    kind: "receipt_unverified".into(),
                    item: Some(row.id.clone()),
                    detail: format!("its receipt lacks: {}", facts.missing.join("; ")),
                });
            }
        }
        _ => {
            gaps.push(Gap {
                kind: "accepted_unsigned".into(),
                item: Some(row.id.clone()),
                detail: format!(
                    "shipped by `nightshift {}`: the green check on the merged result is journaled, not in a signed receipt (its receipt says `{}`)",
                    if outcome == OutcomeKind::Confirmed { "confirm" } else { "accept" },
                    facts.verdict
                ),
            });
        }
    }
}

/// What the headline reads from a valid receipt (kept beside the [`ReceiptRef`]).
struct ReceiptFacts {
    item: String,
    attempt: u32,
    verdict: String,
    missing: Vec<String>,
    shipped_commit: Option<String>,
    green_merged: bool,
    /// The receipt records a green check of the attempt's own work.
    green_work: bool,
}

fn receipt_ref(set: &ReceiptSet, path: &str, bytes: &[u8]) -> (ReceiptRef, Option<ReceiptFacts>) {
    let digest = digest(bytes);
    let replay = format!("nightshift replay {path}");
    match check(set, bytes) {
        Checked::Valid(r) => {
            let green_merged = r
                .iterations
                .iter()
                .flat_map(|i| i.checks.iter())
                .any(|c| c.stage == CheckStage::Merged && c.green);
            let green_work = r
                .final_green_check()
                .is_some_and(|c| c.stage == CheckStage::Work);
            let facts = ReceiptFacts {
                green_work,
                item: r.item.clone(),
                attempt: r.attempt,
                verdict: r.verdict.as_str().to_owned(),
                missing: r.missing.clone(),
                shipped_commit: r.shipped_commit.clone(),
                green_merged,
            };
            let reference = ReceiptRef {
                path: path.to_owned(),
                digest,
                signature: "valid".into(),
                verdict: Some(r.verdict.as_str().to_owned()),
                missing: if r.verdict == ReceiptVerdict::Unverified {
                    r.missing.clone()
                } else {
                    Vec::new()
                },
                problem: None,
                replay,
            };
            (reference, Some(facts))
        }
        Checked::Invalid(why) => (
            ReceiptRef {
                path: path.to_owned(),
                digest,
                signature: "invalid".into(),
                verdict: None,
                missing: Vec::new(),
                problem: Some(why),
                replay,
            },
            None,
        ),
        Checked::NoKey(why) => (
            ReceiptRef {
                path: path.to_owned(),
                digest,
                signature: "no_key".into(),
                verdict: None,
                missing: Vec::new(),
                problem: Some(why),
                replay,
            },
            None,
        ),
    }
}

fn attempt_section(
    att: &AttemptRow,
    f: AttemptFacts,
    receipt: Option<ReceiptRef>,
) -> AttemptSection {
    let (ended, halt) = if let Some((commit, confirmed, debt)) = &f.accepted {
        let before = f
            .failed
            .as_ref()
            .map(|(r, _, _)| format!("{r}; then "))
            .unwrap_or_default();
        (
            format!(
                "{before}{} by an operator as {}{}",
                if *confirmed { "confirmed" } else { "accepted" },
                short(commit),
                debt.as_deref()
                    .map(|d| format!(" (review owed: {d})"))
                    .unwrap_or_default()
            ),
            None,
        )
    } else if let Some(commit) = &f.integrated {
        (format!("shipped as {}", short(commit)), None)
    } else if let Some((reason, halt, _)) = &f.failed {
        (
            match &f.budget_tripped {
                Some(b) if !reason.contains("budget") => format!("{reason} ({b})"),
                _ => reason.clone(),
            },
            halt.map(|h| h.as_str().to_owned()),
        )
    } else {
        (format!("running ({})", att.phase), None)
    };
    AttemptSection {
        attempt: att.attempt,
        ended,
        halt,
        sessions: f.sessions,
        checks: f.checks,
        failing: f.failing,
        spend: f.spend,
        preserve_ref: att.preserve_ref.clone(),
        receipt,
    }
}

fn outcome_name(o: Outcome) -> String {
    serde_name(&o)
}

/// A unit enum's serde name (`over_budget`).
fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn parse_ms(at: &str) -> Option<i64> {
    at.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// The first ten hex digits of a commit.
pub fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}
