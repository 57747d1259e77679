//! A session's budget: the limits it runs under, from the config, what the item and the run
//! already spent, and its seat in the run's live ledger (decision 99).

use super::dispatch::Dispatch;
use crate::config::Config;
use crate::session::{Budget, Limit, Metric, Scope};
use crate::store::{ItemRow, RunRow};

/// The limits of the next session, with what the item and the run already spent.
pub(super) fn session_budget(
    config: &Config,
    run: &RunRow,
    item: &ItemRow,
    dispatch: &Dispatch,
) -> Budget {
    let b = &config.budget;
    let mut limits = Vec::new();
    let mut add = |scope, metric, hard: Option<f64>, baseline: f64| {
        if let Some(hard) = hard {
            limits.push(Limit {
                scope,
                metric,
                hard,
                baseline,
            });
        }
    };
    add(
        Scope::Session,
        Metric::Tokens,
        b.session_tokens.map(|v| v as f64),
        0.0,
    );
    add(
        Scope::Session,
        Metric::Turns,
        b.session_turns.map(f64::from),
        0.0,
    );
    add(Scope::Session, Metric::Usd, b.session_usd, 0.0);
    add(
        Scope::Item,
        Metric::Tokens,
        b.item_tokens.map(|v| v as f64),
        item.spent_tokens,
    );
    add(
        Scope::Run,
        Metric::Tokens,
        b.run_tokens.map(|v| v as f64),
        run.spent_tokens,
    );
    add(Scope::Run, Metric::Usd, b.run_usd, run.spent_usd);
    Budget {
        limits,
        soft: b.soft,
        cache_read_weight: b.cache_read_weight,
        ledger: dispatch.ledger_seat(),
    }
}

/// Whether a run fuse (`run_tokens`, `run_usd`) is spent, when the budget gate enforces.
pub(super) fn run_budget_spent(config: &Config, run: &RunRow, dispatch: &Dispatch) -> bool {
    if config.gates.mode("budget") != crate::gate::GateMode::Enforce {
        return false;
    }
    let b = config.budget;
    b.run_tokens.is_some_and(|l| run.spent_tokens >= l as f64)
        || b.run_usd.is_some_and(|l| run.spent_usd >= l)
        || dispatch.ledger_spent(b.run_tokens, b.run_usd)
}
