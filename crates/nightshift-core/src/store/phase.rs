//! An attempt's phase and the one pure function that moves it: [`transition`]. The fold calls
//! it for every event of an attempt; the engine's `step` matches on the phase it leaves.
//!
//! A phase is stored as its `snake_case` name (`attempts.phase`), the same text as before it
//! was typed: the database and `--json` output are unchanged. The data a phase acts on (the
//! iteration, the candidate commit, the merge's `onto`, …) stays in the attempt's row beside
//! it; the phase says only what the attempt does next.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::event::{CheckStage, EventKind};

/// Where an attempt is: what its next step does (engine/attempt.rs `step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Intended: its worktree is being made.
    Preparing,
    /// The worktree exists; the first session (after the baseline check) comes next.
    Ready,
    /// A session started (and, after a crash, runs again).
    Session,
    /// The same iteration runs again: a nudge, a rate limit, an environment fault, a stop.
    SessionRetry,
    /// The session ended; its work is committed next.
    SessionEnded,
    /// The work is one commit; the check runs next.
    Committed,
    /// The check on the work tree started.
    Checking,
    /// The check is red: another iteration, or the attempt ends.
    Red,
    /// The check is green and every guard passed.
    Green,
    /// A guard failed (a weakened test, a blocked path): the item ends, halting.
    Violated,
    /// The check contradicted an earlier check of the same tree: the run halts.
    Untrusted,
    /// A session changed what lies outside its checkout: the attempt ends.
    Tampered,
    /// The primary review session started.
    Reviewing,
    /// A review's triage asked for a second opinion.
    SecondOpinion,
    /// The second-opinion review session started.
    SecondReviewing,
    /// A review session ended; its verdict is decided next.
    Reviewed,
    /// The review's findings go to a repair iteration.
    ReviewRepair,
    /// The review let the work through; the merge is prepared next.
    ReviewedOk,
    /// The work conflicts with the target's tip: a conflict repair iteration follows.
    Conflict,
    /// The work is one commit on the target's tip; the merged check runs next.
    MergePrepared,
    /// The check on the merged tree started.
    MergeChecking,
    /// The merged tree is green: the target moves next.
    MergeGreen,
    /// The merged tree is red: the attempt ends.
    MergeRed,
    /// Intended: the target moves to the merged commit.
    Integrating,
    /// Final: the target holds the attempt's work.
    Integrated,
    /// Final: the attempt ended without shipping.
    Failed,
}

impl Phase {
    /// Every phase, in the order an attempt meets them (for tests and docs).
    pub const ALL: [Phase; 26] = [
        Phase::Preparing,
        Phase::Ready,
        Phase::Session,
        Phase::SessionRetry,
        Phase::SessionEnded,
        Phase::Committed,
        Phase::Checking,
        Phase::Red,
        Phase::Green,
        Phase::Violated,
        Phase::Untrusted,
        Phase::Tampered,
        Phase::Reviewing,
        Phase::SecondOpinion,
        Phase::SecondReviewing,
        Phase::Reviewed,
        Phase::ReviewRepair,
        Phase::ReviewedOk,
        Phase::Conflict,
        Phase::MergePrepared,
        Phase::MergeChecking,
        Phase::MergeGreen,
        Phase::MergeRed,
        Phase::Integrating,
        Phase::Integrated,
        Phase::Failed,
    ];

    /// The phase an attempt starts in (`attempt_started`).
    pub const START: Phase = Phase::Preparing;

    /// The stored name (`attempts.phase`, `--json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Preparing => "preparing",
            Phase::Ready => "ready",
            Phase::Session => "session",
            Phase::SessionRetry => "session_retry",
            Phase::SessionEnded => "session_ended",
            Phase::Committed => "committed",
            Phase::Checking => "checking",
            Phase::Red => "red",
            Phase::Green => "green",
            Phase::Violated => "violated",
            Phase::Untrusted => "untrusted",
            Phase::Tampered => "tampered",
            Phase::Reviewing => "reviewing",
            Phase::SecondOpinion => "second_opinion",
            Phase::SecondReviewing => "second_reviewing",
            Phase::Reviewed => "reviewed",
            Phase::ReviewRepair => "review_repair",
            Phase::ReviewedOk => "reviewed_ok",
            Phase::Conflict => "conflict",
            Phase::MergePrepared => "merge_prepared",
            Phase::MergeChecking => "merge_checking",
            Phase::MergeGreen => "merge_green",
            Phase::MergeRed => "merge_red",
            Phase::Integrating => "integrating",
            Phase::Integrated => "integrated",
            Phase::Failed => "failed",
        }
    }

    /// The phase of a stored name; `None` for a name this build does not know.
    pub fn parse(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Whether the attempt reached its verdict (shipped or failed): nothing moves it again.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Integrated | Phase::Failed)
    }

    /// Whether the next step acts without the attempt's worktree (making it, moving the
    /// target, or ending a tampered attempt).
    pub fn needs_worktree(self) -> bool {
        !matches!(
            self,
            Phase::Preparing | Phase::Integrating | Phase::MergeGreen | Phase::Tampered
        )
    }

    /// Whether nothing of the attempt has started to reach the target yet (no merge, no
    /// review): an item-level fault here fails the attempt rather than the engine.
    pub fn before_integration(self) -> bool {
        matches!(
            self,
            Phase::Preparing
                | Phase::Ready
                | Phase::Session
                | Phase::SessionRetry
                | Phase::SessionEnded
                | Phase::Committed
                | Phase::Checking
                | Phase::Red
        )
    }

    /// Whether the next step reruns the session of the current iteration (after a crash, a
    /// nudge or an environmental ending): the CLI's own session may be resumed.
    pub fn reruns_session(self) -> bool {
        matches!(self, Phase::Session | Phase::SessionRetry)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl rusqlite::types::ToSql for Phase {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for Phase {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let name = value.as_str()?;
        Phase::parse(name).ok_or_else(|| {
            rusqlite::types::FromSqlError::Other(Box::new(UnknownPhase(name.to_owned())))
        })
    }
}

/// A stored phase this build does not know (a newer nightshift wrote it).
#[derive(Debug, thiserror::Error)]
#[error(
    "read an attempt's phase `{0}`: this nightshift does not know it (a newer one wrote the database; upgrade)"
)]
pub struct UnknownPhase(pub String);

/// An event the fold refuses for an attempt in its phase: the journal would contradict itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The attempt already reached its verdict; only housekeeping (preserve, teardown,
    /// accept) may follow, never another phase.
    #[error("apply `{event}` to an attempt that already ended `{phase}`")]
    Finished { phase: Phase, event: &'static str },
    /// An attempt starts once.
    #[error("start an attempt that already exists (in phase `{phase}`)")]
    Restarted { phase: Phase },
}

/// What a review's decision (`review_decided`'s `action`) does to the attempt's phase.
/// `None`: the attempt ends next (`escalate`, `park`, `defer`) and keeps its phase until then.
fn after_review_decision(action: &str) -> Option<Phase> {
    match action {
        "approve" | "ship_with_debt" => Some(Phase::ReviewedOk),
        "repair" => Some(Phase::ReviewRepair),
        "fix" | "retry" => Some(Phase::Green),
        "second_opinion" => Some(Phase::SecondOpinion),
        _ => None,
    }
}

/// The phase `event` moves an attempt in phase `from` to. `event` is one of this attempt's
/// own events (the fold matches them by item and attempt); an event that does not concern
/// the phase (spend, a preserve ref, teardown, an operator message) leaves it as it is.
///
/// Pure: the fold calls it, the model test (store/phase_tests.rs) checks it.
pub fn transition(from: Phase, event: &EventKind) -> Result<Phase, Refused> {
    let to = match event {
        EventKind::AttemptStarted { .. } => return Err(Refused::Restarted { phase: from }),
        EventKind::WorktreeReady { .. } => Phase::Ready,
        EventKind::SessionStarted { .. } => Phase::Session,
        // An environmental ending is not the item's fault: the same iteration runs again.
        EventKind::SessionEnded { outcome, .. } if outcome.reruns_iteration() => {
            Phase::SessionRetry
        }
        EventKind::SessionEnded { .. } => Phase::SessionEnded,
        EventKind::SessionNudged { .. } => Phase::SessionRetry,
        EventKind::CheckStarted {
            stage: CheckStage::Work,
            ..
        } => Phase::Checking,
        EventKind::CheckStarted {
            stage: CheckStage::Merged,
            ..
        } => Phase::MergeChecking,
        EventKind::CheckEnded {
            stage,
            green,
            guards,
            untrusted,
            ..
        } => {
            let failed = |g: &&crate::guard::Verdict| g.state == crate::guard::GuardState::Fail;
            let violated = guards.iter().any(|g| failed(&g));
            // A blocked path is the agent's act whatever the oracle says; a weakened test is
            // judged by an oracle, which must first be trusted.
            let blocked = guards
                .iter()
                .any(|g| g.guard == crate::guard::BLOCKED_PATHS && failed(&g));
            match (stage, green) {
                (CheckStage::Work, _) if blocked => Phase::Violated,
                // An oracle that contradicts itself judges nothing.
                _ if untrusted.is_some() => Phase::Untrusted,
                // A guard dominates the verdict: nothing violated ever counts as green.
                (CheckStage::Work, _) if violated => Phase::Violated,
                (CheckStage::Work, true) => Phase::Green,
                (CheckStage::Work, false) => Phase::Red,
                (CheckStage::Merged, true) => Phase::MergeGreen,
                (CheckStage::Merged, false) => Phase::MergeRed,
            }
        }
        EventKind::Committed { .. } => Phase::Committed,
        EventKind::MergePrepared { .. } => Phase::MergePrepared,
        EventKind::ConflictFound { .. } => Phase::Conflict,
        EventKind::IntegrateIntended { .. } => Phase::Integrating,
        EventKind::Integrated { .. } => Phase::Integrated,
        EventKind::ControlPlaneTampered { .. } => Phase::Tampered,
        EventKind::AttemptFailed { .. } => Phase::Failed,
        EventKind::ReviewStarted { reviewer, .. } if reviewer == "second_opinion" => {
            Phase::SecondReviewing
        }
        EventKind::ReviewStarted { .. } => Phase::Reviewing,
        EventKind::ReviewEnded { .. } => Phase::Reviewed,
        EventKind::ReviewDecided { action, .. } => match after_review_decision(action) {
            Some(to) => to,
            None => return Ok(from),
        },
        // Everything else leaves the phase as it is.
        EventKind::RunStarted { .. }
        | EventKind::RunResumed { .. }
        | EventKind::PassStarted { .. }
        | EventKind::AgentSessionOpened { .. }
        | EventKind::BudgetWarned { .. }
        | EventKind::BudgetTripped { .. }
        | EventKind::RunPaused { .. }
        | EventKind::RunUnpaused
        | EventKind::RunStopped { .. }
        | EventKind::ItemParked { .. }
        | EventKind::ItemEscalated { .. }
        | EventKind::ItemAwaitingOperator { .. }
        | EventKind::DeadlineSet { .. }
        | EventKind::GateWarned { .. }
        | EventKind::BaselineChecked { .. }
        | EventKind::Pushed { .. }
        | EventKind::PushFailed { .. }
        | EventKind::DebtReviewStarted { .. }
        | EventKind::DebtSettled { .. }
        | EventKind::Accepted { .. }
        | EventKind::Preserved { .. }
        | EventKind::WorktreeRemoved { .. }
        | EventKind::TeardownFailed { .. }
        | EventKind::OperatorMessage { .. }
        | EventKind::OperatorMessageWritten { .. }
        | EventKind::OperatorMessageDelivered { .. }
        | EventKind::ControlPlanePinned { .. }
        | EventKind::ControlPlaneChanged { .. }
        | EventKind::EngineRestarted { .. }
        | EventKind::StoreRepaired { .. }
        | EventKind::RunFinished { .. } => return Ok(from),
    };
    if from.is_finished() && to != from {
        return Err(Refused::Finished {
            phase: from,
            event: event.name(),
        });
    }
    Ok(to)
}
