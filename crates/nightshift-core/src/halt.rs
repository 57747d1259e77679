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

/// Why a run (or a loop) stopped. Serialized names are stable (DESIGN.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HaltReason {
    /// A one-item loop reached its fixpoint: the check is green with every guard intact.
    SuccessConditionMet,
    /// Every item of the plan is on the target.
    QueueDrainedAllShipped,
    /// The queue is empty and some items are parked.
    QueueDrainedWithParked,
    /// The plan had nothing to do.
    NoActionableItems,
    /// The queue is drained but the remote keeps refusing the push; the work is on the local
    /// target, and the next run retries.
    PushRejected,
    /// The queue is drained but work shipped without its review still owes one.
    DebtOutstanding,
    /// The iteration cap was reached before the check went green.
    MaxIterationsReached,
    /// The agent weakened the oracle: tests removed, skips added, assertions deleted.
    MetricIntegrityViolation,
    /// The agent changed a path it must not touch.
    BlockedPathModified,
    /// A receipt's verdict could not be reproduced, or its signature does not hold.
    ObjectiveUnverified,
    /// The journal's hash chain does not hold: a row of `.nightshift/state.db` was edited or
    /// removed outside nightshift (issue 12).
    StoreTampered,
    /// An agent session changed what lies outside its checkout: the user's checkout, refs,
    /// `.git/config`, `.git/info/` or hooks.
    ControlPlaneTampered,
    /// The check gave different verdicts on the same tree.
    CheckFlaky,
    /// Repeated checks of one commit fell below the determinism target.
    CheckNotDeterministic,
    /// The check depends on something outside the tree (time zone, order, network).
    CheckNotHermetic,
    /// A planted mutation did not turn the check red.
    CheckInadequate,
    /// A review escalated: a person must decide.
    EscalationPending,
    /// An item waits on actions only a person can take.
    AwaitingOperator,
    /// The failing set made no new best for k iterations.
    NoProgressDetected,
    /// The failing set returned to an earlier, different set.
    OscillationDetected,
    /// A test that had been fixed failed again.
    SameTestRegressed,
    /// A run budget (tokens or USD) is spent.
    BudgetExceeded,
    /// Spend ran far above its expected rate.
    CostAnomaly,
    /// The run's `--until` deadline passed: no new work after it.
    DeadlineReached,
    /// The engine stopped beating.
    HeartbeatStale,
    /// The engine died again and again; the supervisor stopped restarting it.
    RestartStorm,
    /// The repository is not in a state a run can use.
    WorkspaceInvalid,
    /// Another engine holds the run lock.
    RunLocked,
    /// The isolation asked for cannot be had here.
    IsolationUnsatisfiable,
    /// The agent or the check cannot be started.
    ExecutionFailure,
    /// A bug in nightshift.
    InternalError,
    /// An operator asked the run to stop.
    OperatorStop,
}

/// Every halt reason, its stable name and its exit class: the table of DESIGN.md §7.
pub const TABLE: &[(HaltReason, &str, ExitClass)] = &[
    (
        HaltReason::SuccessConditionMet,
        "success_condition_met",
        ExitClass::Converged,
    ),
    (
        HaltReason::QueueDrainedAllShipped,
        "queue_drained_all_shipped",
        ExitClass::Converged,
    ),
    (
        HaltReason::QueueDrainedWithParked,
        "queue_drained_with_parked",
        ExitClass::DrainedWithWorkLeft,
    ),
    (
        HaltReason::NoActionableItems,
        "no_actionable_items",
        ExitClass::DrainedWithWorkLeft,
    ),
    (
        HaltReason::PushRejected,
        "push_rejected",
        ExitClass::DrainedWithWorkLeft,
    ),
    (
        HaltReason::DebtOutstanding,
        "debt_outstanding",
        ExitClass::DrainedWithWorkLeft,
    ),
    (
        HaltReason::MaxIterationsReached,
        "max_iterations_reached",
        ExitClass::IterationCap,
    ),
    (
        HaltReason::MetricIntegrityViolation,
        "metric_integrity_violation",
        ExitClass::Integrity,
    ),
    (
        HaltReason::BlockedPathModified,
        "blocked_path_modified",
        ExitClass::Integrity,
    ),
    (
        HaltReason::ObjectiveUnverified,
        "objective_unverified",
        ExitClass::Integrity,
    ),
    (
        HaltReason::StoreTampered,
        "store_tampered",
        ExitClass::Integrity,
    ),
    (
        HaltReason::ControlPlaneTampered,
        "control_plane_tampered",
        ExitClass::Integrity,
    ),
    (
        HaltReason::CheckFlaky,
        "check_flaky",
        ExitClass::OracleUntrusted,
    ),
    (
        HaltReason::CheckNotDeterministic,
        "check_not_deterministic",
        ExitClass::OracleUntrusted,
    ),
    (
        HaltReason::CheckNotHermetic,
        "check_not_hermetic",
        ExitClass::OracleUntrusted,
    ),
    (
        HaltReason::CheckInadequate,
        "check_inadequate",
        ExitClass::OracleInadequate,
    ),
    (
        HaltReason::EscalationPending,
        "escalation_pending",
        ExitClass::HumanRequired,
    ),
    (
        HaltReason::AwaitingOperator,
        "awaiting_operator",
        ExitClass::HumanRequired,
    ),
    (
        HaltReason::NoProgressDetected,
        "no_progress_detected",
        ExitClass::NoConvergence,
    ),
    (
        HaltReason::OscillationDetected,
        "oscillation_detected",
        ExitClass::NoConvergence,
    ),
    (
        HaltReason::SameTestRegressed,
        "same_test_regressed",
        ExitClass::NoConvergence,
    ),
    (
        HaltReason::BudgetExceeded,
        "budget_exceeded",
        ExitClass::Budget,
    ),
    (HaltReason::CostAnomaly, "cost_anomaly", ExitClass::Budget),
    (
        HaltReason::DeadlineReached,
        "deadline_reached",
        ExitClass::Liveness,
    ),
    (
        HaltReason::HeartbeatStale,
        "heartbeat_stale",
        ExitClass::Liveness,
    ),
    (
        HaltReason::RestartStorm,
        "restart_storm",
        ExitClass::Liveness,
    ),
    (
        HaltReason::WorkspaceInvalid,
        "workspace_invalid",
        ExitClass::Workspace,
    ),
    (HaltReason::RunLocked, "run_locked", ExitClass::Workspace),
    (
        HaltReason::IsolationUnsatisfiable,
        "isolation_unsatisfiable",
        ExitClass::Workspace,
    ),
    (
        HaltReason::ExecutionFailure,
        "execution_failure",
        ExitClass::Execution,
    ),
    (
        HaltReason::InternalError,
        "internal_error",
        ExitClass::Internal,
    ),
    (HaltReason::OperatorStop, "operator_stop", ExitClass::Ok),
];

impl HaltReason {
    /// The exit class of this halt reason.
    pub fn class(self) -> ExitClass {
        TABLE
            .iter()
            .find(|(r, _, _)| *r == self)
            .map_or(ExitClass::Internal, |(_, _, c)| *c)
    }

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        TABLE
            .iter()
            .find(|(r, _, _)| *r == self)
            .map_or("internal_error", |(_, n, _)| n)
    }

    /// The reason with this stable name.
    pub fn from_name(name: &str) -> Option<HaltReason> {
        TABLE
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(r, _, _)| *r)
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
        for (reason, name, class) in TABLE {
            assert_eq!(reason.as_str(), *name);
            assert_eq!(reason.class(), *class);
            assert_eq!(HaltReason::from_name(name), Some(*reason));
            assert_eq!(
                serde_json::to_value(reason).ok(),
                Some(serde_json::Value::String((*name).into()))
            );
        }
        assert_eq!(HaltReason::MetricIntegrityViolation.class().code(), 13);
        assert_eq!(HaltReason::RestartStorm.class().code(), 19);
        assert_eq!(HaltReason::CheckInadequate.class().code(), 15);
        assert_eq!(ExitClass::Invariant.code(), 20);
    }
}
