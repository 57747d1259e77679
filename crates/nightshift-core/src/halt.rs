//! The loop contract: why a run stopped, and the exit class a machine can branch on
//! (DESIGN.md §7). Both the names and the numbers are stable interfaces.

use serde::{Deserialize, Serialize};

/// The exit-code class of a halt or an error. The numbers are a public contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitClass {
    Ok,
    Converged,
    DrainedWithWorkLeft,
    IterationCap,
    Integrity,
    OracleUntrusted,
    OracleInadequate,
    HumanRequired,
    NoConvergence,
    Budget,
    Liveness,
    Invariant,
    Workspace,
    Execution,
    Internal,
}

impl ExitClass {
    /// The process exit code for this class.
    pub fn code(self) -> i32 {
        match self {
            ExitClass::Ok => 0,
            ExitClass::Converged => 10,
            ExitClass::DrainedWithWorkLeft => 11,
            ExitClass::IterationCap => 12,
            ExitClass::Integrity => 13,
            ExitClass::OracleUntrusted => 14,
            ExitClass::OracleInadequate => 15,
            ExitClass::HumanRequired => 16,
            ExitClass::NoConvergence => 17,
            ExitClass::Budget => 18,
            ExitClass::Liveness => 19,
            ExitClass::Invariant => 20,
            ExitClass::Workspace => 30,
            ExitClass::Execution => 40,
            ExitClass::Internal => 50,
        }
    }
}

/// Why a run (or a loop) stopped. Serialized names are stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HaltReason {
    /// Every item of the plan is on the target.
    QueueDrainedAllShipped,
    /// The queue is empty and some items are parked.
    QueueDrainedWithParked,
    /// The plan had nothing to do.
    NoActionableItems,
    /// An operator asked the run to stop.
    OperatorStop,
    /// A run budget (tokens or USD) is spent.
    BudgetExceeded,
    /// The queue is drained but the remote keeps refusing the push; the work is on the local
    /// target, and the next run retries.
    PushRejected,
}

impl HaltReason {
    /// The exit class of this halt reason.
    pub fn class(self) -> ExitClass {
        match self {
            HaltReason::QueueDrainedAllShipped => ExitClass::Converged,
            HaltReason::QueueDrainedWithParked | HaltReason::NoActionableItems => {
                ExitClass::DrainedWithWorkLeft
            }
            HaltReason::OperatorStop => ExitClass::Ok,
            HaltReason::BudgetExceeded => ExitClass::Budget,
            HaltReason::PushRejected => ExitClass::DrainedWithWorkLeft,
        }
    }

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            HaltReason::QueueDrainedAllShipped => "queue_drained_all_shipped",
            HaltReason::QueueDrainedWithParked => "queue_drained_with_parked",
            HaltReason::NoActionableItems => "no_actionable_items",
            HaltReason::OperatorStop => "operator_stop",
            HaltReason::BudgetExceeded => "budget_exceeded",
            HaltReason::PushRejected => "push_rejected",
        }
    }
}

impl std::fmt::Display for HaltReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_are_the_contract() {
        for (reason, name, code) in [
            (
                HaltReason::QueueDrainedAllShipped,
                "queue_drained_all_shipped",
                10,
            ),
            (
                HaltReason::QueueDrainedWithParked,
                "queue_drained_with_parked",
                11,
            ),
            (HaltReason::NoActionableItems, "no_actionable_items", 11),
            (HaltReason::OperatorStop, "operator_stop", 0),
            (HaltReason::BudgetExceeded, "budget_exceeded", 18),
            (HaltReason::PushRejected, "push_rejected", 11),
        ] {
            assert_eq!(reason.as_str(), name);
            assert_eq!(reason.class().code(), code);
            assert_eq!(
                serde_json::to_value(reason).ok(),
                Some(serde_json::Value::String(name.into()))
            );
        }
        assert_eq!(ExitClass::Workspace.code(), 30);
        assert_eq!(ExitClass::Invariant.code(), 20);
    }
}
