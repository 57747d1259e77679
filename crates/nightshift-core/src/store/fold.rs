//! The fold: how each journal event changes the state tables. State is always the fold of the
//! journal; `Store::record` runs this in the same transaction that appends the event, and
//! `Store::refold` can rebuild the whole state from the journal to prove it.

use rusqlite::{OptionalExtension, Transaction, params};

use super::StoreError;
use super::cached::Cached;
use super::event::EventKind;
use super::phase::{Phase, transition};
use super::state::{ItemState, RunState, UnknownName};

/// Applies one event to the state tables. An event its attempt's phase refuses
/// ([`transition`]) is an error, and the transaction it came in applies nothing.
pub fn apply(
    tx: &Transaction<'_>,
    run_id: &str,
    at: &str,
    kind: &EventKind,
) -> Result<(), StoreError> {
    match kind {
        EventKind::RunStarted {
            target,
            base,
            max_iterations,
            max_attempts,
            items,
        } => {
            tx.execute_cached(
                "INSERT INTO runs (id, started_at, target, base, max_iterations, max_attempts, state, pass)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)",
                params![run_id, at, target, base, max_iterations, max_attempts, RunState::Running],
            )?;
            for (position, item) in items.iter().enumerate() {
                let (state, reason) = match &item.shipped_by {
                    Some(run) => (ItemState::Shipped, Some(format!("shipped by run {run}"))),
                    None => (ItemState::Queued, None),
                };
                tx.execute_cached(
                    "INSERT INTO items (run_id, id, position, prompt, check_command, state, attempts, allowed, reason)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8)",
                    params![run_id, item.id, position as i64, item.prompt, item.check, state, max_attempts, reason],
                )?;
            }
        }
        EventKind::RunResumed { .. }
        | EventKind::ControlPlanePinned { .. }
        | EventKind::ControlPlaneChanged { .. }
        | EventKind::EngineRestarted { .. }
        | EventKind::StoreRepaired { .. } => {}
        EventKind::PassStarted { pass, requeued } => {
            tx.execute_cached(
                "UPDATE runs SET pass = ?2 WHERE id = ?1",
                params![run_id, pass],
            )?;
            for item in requeued {
                tx.execute_cached(
                    "UPDATE items SET state = ?3, allowed = attempts + 1 WHERE run_id = ?1 AND id = ?2",
                    params![run_id, item, ItemState::Queued],
                )?;
            }
        }
        EventKind::AttemptStarted {
            item,
            attempt,
            base,
            branch,
            worktree,
        } => {
            tx.execute_cached(
                "UPDATE items SET state = ?4, attempts = attempts + 1, current_attempt = ?3
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, attempt, ItemState::Running],
            )?;
            tx.execute_cached(
                "INSERT INTO attempts (run_id, item, attempt, base, branch, worktree, phase, iteration, worktree_present)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 1)",
                params![run_id, item, attempt, base, branch, worktree, Phase::START],
            )?;
        }
        EventKind::WorktreeReady { item, attempt, .. } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
        }
        EventKind::SessionStarted {
            item,
            attempt,
            iteration,
            agent_session,
            resumed,
            ..
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            // The session a rerun may resume: the one this process continues, else none until
            // the CLI reports its own (never a session of another iteration).
            let resumable = agent_session.as_deref().filter(|_| *resumed);
            tx.execute_cached(
                "UPDATE attempts SET iteration = ?4, agent_session = ?5 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, iteration, resumable],
            )?;
        }
        EventKind::AgentSessionOpened {
            item,
            attempt,
            agent_session,
        } => {
            tx.execute_cached(
                "UPDATE attempts SET agent_session = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, agent_session],
            )?;
        }
        EventKind::SessionEnded {
            item,
            attempt,
            outcome,
            spend,
            agent_session,
            ..
        } => {
            let outcome_name = serde_json::to_value(outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned));
            tx.execute_cached(
                "UPDATE attempts SET last_outcome = ?4, agent_session = COALESCE(?5, agent_session)
                 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, outcome_name, agent_session],
            )?;
            // An environmental ending reruns the iteration (phase.rs).
            move_phase(tx, run_id, item, *attempt, kind)?;
            if outcome.is_environmental() {
                tx.execute_cached(
                    "UPDATE attempts SET env_retries = env_retries + 1 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                    params![run_id, item, attempt],
                )?;
            }
            if let Some(spend) = spend {
                let usd = spend.cost_usd.unwrap_or(0.0);
                tx.execute_cached(
                    "UPDATE items SET spent_tokens = spent_tokens + ?3, spent_turns = spent_turns + ?4,
                            spent_usd = spent_usd + ?5 WHERE run_id = ?1 AND id = ?2",
                    params![run_id, item, spend.weighted, spend.turns, usd],
                )?;
                tx.execute_cached(
                    "UPDATE runs SET spent_tokens = spent_tokens + ?2, spent_turns = spent_turns + ?3,
                            spent_usd = spent_usd + ?4 WHERE id = ?1",
                    params![run_id, spend.weighted, spend.turns, usd],
                )?;
            }
        }
        EventKind::SessionNudged { item, attempt, .. } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            tx.execute_cached(
                "UPDATE attempts SET nudges = nudges + 1 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt],
            )?;
        }
        EventKind::BudgetWarned { .. } | EventKind::BudgetTripped { .. } => {}
        EventKind::RunPaused { reason, until } => {
            tx.execute_cached(
                "UPDATE runs SET paused_until = ?2, pause_reason = ?3 WHERE id = ?1",
                params![run_id, until, reason],
            )?;
        }
        EventKind::RunStopped { .. }
        | EventKind::ItemParked { .. }
        | EventKind::ItemEscalated { .. }
        | EventKind::ItemAwaitingOperator { .. }
        | EventKind::DeadlineSet { .. }
        | EventKind::GateWarned { .. }
        | EventKind::OperatorMessage { .. }
        | EventKind::OperatorMessageDelivered { .. }
        | EventKind::OperatorMessageWritten { .. } => {}
        EventKind::RunUnpaused => {
            tx.execute_cached(
                "UPDATE runs SET paused_until = NULL, pause_reason = NULL WHERE id = ?1",
                params![run_id],
            )?;
        }
        EventKind::CheckStarted { item, attempt, .. } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
        }
        EventKind::CheckEnded {
            item, attempt, log, ..
        } => {
            // Guards dominate the oracle, an untrusted oracle judges nothing (phase.rs).
            move_phase(tx, run_id, item, *attempt, kind)?;
            tx.execute_cached(
                "UPDATE attempts SET last_check_log = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, log],
            )?;
        }
        EventKind::Committed {
            item,
            attempt,
            commit,
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            tx.execute_cached(
                "UPDATE attempts SET candidate = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, commit],
            )?;
        }
        EventKind::MergePrepared {
            item,
            attempt,
            commit,
            onto,
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            tx.execute_cached(
                "UPDATE attempts SET merged = ?4, onto = ?5 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, commit, onto],
            )?;
        }
        EventKind::ConflictFound {
            item,
            attempt,
            onto,
            paths,
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            tx.execute_cached(
                "UPDATE attempts SET conflict_repairs = conflict_repairs + 1, onto = ?4, conflict_paths = ?5
                 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, onto, paths.join("\n")],
            )?;
        }
        EventKind::IntegrateIntended { item, attempt, .. } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
        }
        EventKind::Integrated {
            item,
            attempt,
            commit,
            push,
            awaiting_push,
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            let state = if *awaiting_push {
                ItemState::IntegratedLocal
            } else {
                ItemState::Shipped
            };
            tx.execute_cached(
                "UPDATE items SET state = ?4, shipped_commit = ?3, reason = NULL, push_pending = ?5,
                        shipped_pass = (SELECT pass FROM runs WHERE id = ?1)
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, commit, state, push],
            )?;
            // Work shipped without its review owes one: a debt that blocks until paid.
            tx.execute_cached(
                "INSERT OR IGNORE INTO debts (item, attempt, run_id, commit_id, base, reason, state, created_at)
                 SELECT item, attempt, run_id, ?4, COALESCE(onto, base), review_debt, 'open', ?5
                 FROM attempts WHERE run_id = ?1 AND item = ?2 AND attempt = ?3 AND review_debt IS NOT NULL",
                params![run_id, item, attempt, commit, at],
            )?;
        }
        EventKind::Pushed { item, .. } => {
            tx.execute_cached(
                "UPDATE items SET state = ?3, push_pending = 0, reason = NULL,
                        shipped_pass = (SELECT pass FROM runs WHERE id = ?1)
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, ItemState::Shipped],
            )?;
        }
        EventKind::PushFailed { items, error } => {
            for item in items {
                tx.execute_cached(
                    "UPDATE items SET reason = ?3 WHERE run_id = ?1 AND id = ?2",
                    params![run_id, item, format!("push failed (retried): {error}")],
                )?;
            }
        }
        EventKind::ControlPlaneTampered { item, attempt, .. } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
        }
        EventKind::Preserved {
            item,
            attempt,
            ref_name,
            ..
        } => {
            tx.execute_cached(
                "UPDATE attempts SET preserve_ref = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, ref_name],
            )?;
            tx.execute_cached(
                "UPDATE items SET preserve_ref = ?3 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, ref_name],
            )?;
        }
        EventKind::AttemptFailed {
            item,
            attempt,
            reason,
            park,
            keep_branch,
            verdict,
            actions,
            ..
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            // The item's verdict instead of parked (`escalated`, `awaiting_operator`).
            let verdict = verdict
                .as_deref()
                .map(|name| {
                    ItemState::parse(name)
                        .filter(|s| s.awaits_person())
                        .ok_or_else(|| UnknownName {
                            what: "item verdict of attempt_failed",
                            name: name.to_owned(),
                        })
                })
                .transpose()?;
            tx.execute_cached(
                "UPDATE attempts SET keep_branch = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, keep_branch],
            )?;
            tx.execute_cached(
                "UPDATE attempts SET reason = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, reason],
            )?;
            tx.execute_cached(
                "UPDATE items SET reason = ?3,
                        state = CASE WHEN ?5 IS NOT NULL THEN ?5
                                     WHEN ?4 OR attempts >= allowed THEN ?7 ELSE ?8 END,
                        operator_actions = ?6
                 WHERE run_id = ?1 AND id = ?2",
                params![
                    run_id,
                    item,
                    reason,
                    park,
                    verdict,
                    (!actions.is_empty()).then(|| actions.join("\n")),
                    ItemState::Parked,
                    ItemState::Queued,
                ],
            )?;
        }
        EventKind::ReviewStarted { item, attempt, .. } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
        }
        EventKind::ReviewEnded {
            item,
            attempt,
            cycle,
            reviewer,
            outcome,
            verdict,
            error,
            spend,
        } => {
            move_phase(tx, run_id, item, *attempt, kind)?;
            let record = serde_json::json!({
                "reviewer": reviewer, "outcome": outcome, "verdict": verdict, "error": error,
            });
            // A review that ended on the environment (a rate limit) spends no cycle.
            let counts = reviewer == "review" && !outcome.reruns_iteration();
            tx.execute_cached(
                "UPDATE attempts SET review_verdict = ?4,
                        review_cycles = CASE WHEN ?5 THEN ?6 ELSE review_cycles END
                 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, record.to_string(), counts, cycle],
            )?;
            add_spend(tx, run_id, item, spend.as_ref())?;
        }
        EventKind::ReviewDecided {
            item,
            attempt,
            action,
            why,
            feedback,
            ..
        } => {
            // Escalate, park and defer keep the phase: the attempt ends next (phase.rs).
            move_phase(tx, run_id, item, *attempt, kind)?;
            if action == "ship_with_debt" {
                tx.execute_cached(
                    "UPDATE attempts SET review_debt = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                    params![run_id, item, attempt, why],
                )?;
            }
            if let Some(feedback) = feedback {
                tx.execute_cached(
                    "UPDATE attempts SET last_check_log = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                    params![run_id, item, attempt, feedback],
                )?;
            }
        }
        EventKind::DebtReviewStarted { item, attempt, .. } => {
            tx.execute_cached(
                "UPDATE debts SET tries = CASE WHEN last_run = ?1 THEN tries + 1 ELSE 1 END, last_run = ?1
                 WHERE item = ?2 AND attempt = ?3",
                params![run_id, item, attempt],
            )?;
        }
        EventKind::DebtSettled {
            item,
            attempt,
            outcome,
            why,
            feedback,
            spend,
            ..
        } => {
            add_spend(tx, run_id, item, spend.as_ref())?;
            if outcome == "paid" || outcome == "reopened" {
                tx.execute_cached(
                    "UPDATE debts SET state = ?3, settled_at = ?4, outcome = ?5 WHERE item = ?1 AND attempt = ?2",
                    params![item, attempt, outcome, at, why],
                )?;
            }
            if outcome == "reopened" {
                tx.execute_cached(
                    "UPDATE items SET state = ?5, allowed = attempts + 1, feedback = ?3,
                            reason = ?4, shipped_pass = NULL
                     WHERE run_id = ?1 AND id = ?2",
                    params![
                        run_id,
                        item,
                        feedback,
                        format!("reopened by its debt review: {why}"),
                        ItemState::Queued,
                    ],
                )?;
            }
        }
        EventKind::Accepted {
            item,
            attempt,
            commit,
            onto,
            debt,
            ..
        } => {
            tx.execute_cached(
                "UPDATE items SET state = ?4, shipped_commit = ?3, reason = NULL,
                        operator_actions = NULL, shipped_pass = (SELECT pass FROM runs WHERE id = ?1)
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, commit, ItemState::Shipped],
            )?;
            if let Some(debt) = debt {
                tx.execute_cached(
                    "INSERT OR IGNORE INTO debts (item, attempt, run_id, commit_id, base, reason, state, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'open', ?7)",
                    params![item, attempt, run_id, commit, onto, debt, at],
                )?;
            }
        }
        EventKind::WorktreeRemoved { item, attempt } => {
            tx.execute_cached(
                "UPDATE attempts SET worktree_present = 0 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt],
            )?;
        }
        EventKind::TeardownFailed { .. } | EventKind::BaselineChecked { .. } => {}
        EventKind::RunFinished {
            halt_reason,
            exit_code,
        } => {
            tx.execute_cached(
                "UPDATE runs SET state = ?5, finished_at = ?2, halt_reason = ?3, exit_code = ?4
                 WHERE id = ?1",
                params![
                    run_id,
                    at,
                    halt_reason.as_str(),
                    exit_code,
                    RunState::Finished
                ],
            )?;
        }
    }
    Ok(())
}

/// Adds what a session spent to its item and its run.
fn add_spend(
    tx: &Transaction<'_>,
    run_id: &str,
    item: &str,
    spend: Option<&super::event::Spend>,
) -> rusqlite::Result<()> {
    let Some(spend) = spend else {
        return Ok(());
    };
    let usd = spend.cost_usd.unwrap_or(0.0);
    tx.execute_cached(
        "UPDATE items SET spent_tokens = spent_tokens + ?3, spent_turns = spent_turns + ?4,
                spent_usd = spent_usd + ?5 WHERE run_id = ?1 AND id = ?2",
        params![run_id, item, spend.weighted, spend.turns, usd],
    )?;
    tx.execute_cached(
        "UPDATE runs SET spent_tokens = spent_tokens + ?2, spent_turns = spent_turns + ?3,
                spent_usd = spent_usd + ?4 WHERE id = ?1",
        params![run_id, spend.weighted, spend.turns, usd],
    )?;
    Ok(())
}

/// Moves the attempt's phase as [`transition`] says for `kind`, one of its own events. An
/// attempt that is not there (an event of an unknown attempt) changes nothing, as an `UPDATE`
/// of no row did before phases were typed.
fn move_phase(
    tx: &Transaction<'_>,
    run_id: &str,
    item: &str,
    attempt: u32,
    kind: &EventKind,
) -> Result<(), StoreError> {
    let from: Option<Phase> = tx
        .query_row_cached(
            "SELECT phase FROM attempts WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
            params![run_id, item, attempt],
            |r| r.get(0),
        )
        .optional()?;
    let Some(from) = from else {
        return Ok(());
    };
    let to = transition(from, kind)?;
    if to != from {
        tx.execute_cached(
            "UPDATE attempts SET phase = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
            params![run_id, item, attempt, to],
        )?;
    }
    Ok(())
}
