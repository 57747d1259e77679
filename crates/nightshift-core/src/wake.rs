//! Exit-to-wake: which journal events should wake whoever watches a run from outside
//! (`nightshift wait`), and with which exit code. Pure decisions over events; the command
//! follows the store and prints.
//!
//! The shape comes from the field: a watcher that does no reasoning polls read-only state and,
//! on the first actionable condition, writes one JSON event and exits. A process that exits
//! cannot fail silently.

use crate::halt::{ExitClass, HaltReason};
use crate::store::{Event, EventKind};

/// What a watcher waits for (`nightshift wait --for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitFor {
    /// Something a person or a supervisor should act on: an item parked, escalated or awaiting
    /// an operator, a pause that will not clear by itself, or the run halting.
    #[default]
    Actionable,
    /// The run halted (`run_finished`) or stopped (`run_stopped`: operator, `--until`).
    Finished,
    /// Any of the above, and every pause (usage limits, operator pauses) too.
    Any,
}

impl WaitFor {
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitFor::Actionable => "actionable",
            WaitFor::Finished => "finished",
            WaitFor::Any => "any",
        }
    }
}

/// The class of a wake, as printed in the `wake` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeClass {
    /// An item needs a person's look (parked; exit 11).
    Parked,
    /// A person must decide or act (escalation, awaiting an operator, a pause that needs a
    /// person such as an agent CLI logged out; exit 16).
    HumanRequired,
    /// Dispatch paused for a reason that clears by itself (a usage limit, an operator pause;
    /// only `--for any`; exit 19).
    Paused,
    /// The run halted or stopped (exit: the halt reason's class; 0 for an operator stop).
    Finished,
}

/// The event kinds that can wake a watcher, and their class. **Extend this list** when a new
/// kind means "a person should look" (e.g. issue 7's escalation kinds). A `run_paused` is
/// classified by its reason's cause (see [`PauseCause::clears_by_itself`]).
///
/// [`PauseCause::clears_by_itself`]: crate::store::PauseCause::clears_by_itself
pub const WAKE_KINDS: &[(&str, WakeClass)] = &[
    ("item_parked", WakeClass::Parked),
    ("item_escalated", WakeClass::HumanRequired),
    ("escalation_pending", WakeClass::HumanRequired),
    ("awaiting_operator", WakeClass::HumanRequired),
    ("item_awaiting_operator", WakeClass::HumanRequired),
    ("run_paused", WakeClass::HumanRequired),
    ("run_finished", WakeClass::Finished),
    ("run_stopped", WakeClass::Finished),
];

/// A decision to wake: the class and the exit code to leave with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wake {
    pub class: WakeClass,
    pub exit_code: i32,
    /// For a halt or stop: why.
    pub halt_reason: Option<HaltReason>,
}

/// Whether `event` wakes a watcher waiting `for_`, and how.
pub fn classify(event: &Event, for_: WaitFor) -> Option<Wake> {
    let name = event.kind.name();
    let (_, class) = WAKE_KINDS.iter().find(|(kind, _)| *kind == name)?;
    let (class, halt_reason) = match &event.kind {
        EventKind::RunPaused { reason, .. }
            if crate::store::PauseCause::of(reason).clears_by_itself() =>
        {
            (WakeClass::Paused, None)
        }
        EventKind::RunFinished { halt_reason, .. } => (WakeClass::Finished, Some(*halt_reason)),
        EventKind::RunStopped { halt_reason, .. } => (
            WakeClass::Finished,
            Some(halt_reason.unwrap_or(HaltReason::OperatorStop)),
        ),
        _ => (*class, None),
    };
    let wanted = match for_ {
        WaitFor::Any => true,
        WaitFor::Finished => class == WakeClass::Finished,
        WaitFor::Actionable => class != WakeClass::Paused,
    };
    if !wanted {
        return None;
    }
    let exit_code = match (&event.kind, class) {
        (EventKind::RunFinished { exit_code, .. }, _) => *exit_code,
        (_, WakeClass::Finished) => halt_reason.map_or(0, |h| h.class().code()),
        (_, WakeClass::Parked) => ExitClass::DrainedWithWorkLeft.code(),
        (_, WakeClass::HumanRequired) => ExitClass::HumanRequired.code(),
        (_, WakeClass::Paused) => ExitClass::Liveness.code(),
    };
    Some(Wake {
        class,
        exit_code,
        halt_reason,
    })
}

/// The exit code of `nightshift wait --timeout` when nothing woke it (liveness: nothing
/// happened within the bound; the printed line says `"wake": "timeout"`).
pub const TIMEOUT_EXIT: i32 = 19;

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind) -> Event {
        Event {
            seq: 1,
            run_id: "r".into(),
            at: "2026-01-01T00:00:00Z".into(),
            kind,
        }
    }

    #[test]
    fn classes_and_codes() {
        let parked = ev(EventKind::ItemParked {
            item: "a".into(),
            reason: "x".into(),
        });
        assert_eq!(
            classify(&parked, WaitFor::Actionable).map(|w| w.exit_code),
            Some(11)
        );
        assert_eq!(classify(&parked, WaitFor::Finished), None);
        let fin = ev(EventKind::RunFinished {
            halt_reason: HaltReason::QueueDrainedAllShipped,
            exit_code: 10,
        });
        for f in [WaitFor::Actionable, WaitFor::Finished, WaitFor::Any] {
            assert_eq!(classify(&fin, f).map(|w| w.exit_code), Some(10));
        }
        let stop = ev(EventKind::RunStopped {
            graceful: true,
            halt_reason: Some(HaltReason::DeadlineReached),
        });
        assert_eq!(
            classify(&stop, WaitFor::Finished).map(|w| w.exit_code),
            Some(19)
        );
        let op = ev(EventKind::RunStopped {
            graceful: false,
            halt_reason: None,
        });
        assert_eq!(
            classify(&op, WaitFor::Finished).map(|w| w.exit_code),
            Some(0)
        );
        let rate = ev(EventKind::RunPaused {
            reason: "rate_limited: a hit its usage limit".into(),
            until: 1,
        });
        assert_eq!(classify(&rate, WaitFor::Actionable), None);
        assert_eq!(
            classify(&rate, WaitFor::Any).map(|w| (w.class, w.exit_code)),
            Some((WakeClass::Paused, 19))
        );
        let auth = ev(EventKind::RunPaused {
            reason: "env_fault: auth: a — a person must log the agent CLI in".into(),
            until: 1,
        });
        assert_eq!(
            classify(&auth, WaitFor::Actionable).map(|w| w.exit_code),
            Some(16)
        );
        let noise = ev(EventKind::RunUnpaused);
        assert_eq!(classify(&noise, WaitFor::Any), None);
    }
}
