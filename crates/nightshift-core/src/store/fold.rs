//! The fold: how each journal event changes the state tables. State is always the fold of the
//! journal; `Store::record` runs this in the same transaction that appends the event, and
//! `Store::refold` can rebuild the whole state from the journal to prove it.

use rusqlite::{Transaction, params};

use super::event::{CheckStage, EventKind};

/// Applies one event to the state tables.
pub fn apply(
    tx: &Transaction<'_>,
    run_id: &str,
    at: &str,
    kind: &EventKind,
) -> rusqlite::Result<()> {
    match kind {
        EventKind::RunStarted {
            target,
            base,
            max_iterations,
            max_attempts,
            items,
        } => {
            tx.execute(
                "INSERT INTO runs (id, started_at, target, base, max_iterations, max_attempts, state, pass)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', 1)",
                params![run_id, at, target, base, max_iterations, max_attempts],
            )?;
            for (position, item) in items.iter().enumerate() {
                let (state, reason) = match &item.shipped_by {
                    Some(run) => ("shipped", Some(format!("shipped by run {run}"))),
                    None => ("queued", None),
                };
                tx.execute(
                    "INSERT INTO items (run_id, id, position, prompt, check_command, state, attempts, allowed, reason)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8)",
                    params![run_id, item.id, position as i64, item.prompt, item.check, state, max_attempts, reason],
                )?;
            }
        }
        EventKind::RunResumed { .. } => {}
        EventKind::PassStarted { pass, requeued } => {
            tx.execute(
                "UPDATE runs SET pass = ?2 WHERE id = ?1",
                params![run_id, pass],
            )?;
            for item in requeued {
                tx.execute(
                    "UPDATE items SET state = 'queued', allowed = attempts + 1 WHERE run_id = ?1 AND id = ?2",
                    params![run_id, item],
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
            tx.execute(
                "UPDATE items SET state = 'running', attempts = attempts + 1, current_attempt = ?3
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, attempt],
            )?;
            tx.execute(
                "INSERT INTO attempts (run_id, item, attempt, base, branch, worktree, phase, iteration, worktree_present)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'preparing', 0, 1)",
                params![run_id, item, attempt, base, branch, worktree],
            )?;
        }
        EventKind::WorktreeReady { item, attempt } => {
            set_phase(tx, run_id, item, *attempt, "ready")?;
        }
        EventKind::SessionStarted {
            item,
            attempt,
            iteration,
            ..
        } => {
            set_phase(tx, run_id, item, *attempt, "session")?;
            tx.execute(
                "UPDATE attempts SET iteration = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, iteration],
            )?;
        }
        EventKind::SessionEnded { item, attempt, .. } => {
            set_phase(tx, run_id, item, *attempt, "session_ended")?;
        }
        EventKind::CheckStarted {
            item,
            attempt,
            stage,
            ..
        } => {
            let phase = match stage {
                CheckStage::Work => "checking",
                CheckStage::Merged => "merge_checking",
            };
            set_phase(tx, run_id, item, *attempt, phase)?;
        }
        EventKind::CheckEnded {
            item,
            attempt,
            stage,
            green,
            log,
            ..
        } => {
            let phase = match (stage, green) {
                (CheckStage::Work, true) => "green",
                (CheckStage::Work, false) => "red",
                (CheckStage::Merged, true) => "merge_green",
                (CheckStage::Merged, false) => "merge_red",
            };
            set_phase(tx, run_id, item, *attempt, phase)?;
            tx.execute(
                "UPDATE attempts SET last_check_log = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, log],
            )?;
        }
        EventKind::Committed {
            item,
            attempt,
            commit,
        } => {
            set_phase(tx, run_id, item, *attempt, "committed")?;
            tx.execute(
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
            set_phase(tx, run_id, item, *attempt, "merge_prepared")?;
            tx.execute(
                "UPDATE attempts SET merged = ?4, onto = ?5 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, commit, onto],
            )?;
        }
        EventKind::IntegrateIntended { item, attempt, .. } => {
            set_phase(tx, run_id, item, *attempt, "integrating")?;
        }
        EventKind::Integrated {
            item,
            attempt,
            commit,
        } => {
            set_phase(tx, run_id, item, *attempt, "integrated")?;
            tx.execute(
                "UPDATE items SET state = 'shipped', shipped_commit = ?3, reason = NULL,
                        shipped_pass = (SELECT pass FROM runs WHERE id = ?1)
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, commit],
            )?;
        }
        EventKind::Preserved {
            item,
            attempt,
            ref_name,
            ..
        } => {
            tx.execute(
                "UPDATE attempts SET preserve_ref = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, ref_name],
            )?;
            tx.execute(
                "UPDATE items SET preserve_ref = ?3 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, ref_name],
            )?;
        }
        EventKind::AttemptFailed {
            item,
            attempt,
            reason,
            ..
        } => {
            set_phase(tx, run_id, item, *attempt, "failed")?;
            tx.execute(
                "UPDATE attempts SET reason = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt, reason],
            )?;
            tx.execute(
                "UPDATE items SET reason = ?3,
                        state = CASE WHEN attempts >= allowed THEN 'parked' ELSE 'queued' END
                 WHERE run_id = ?1 AND id = ?2",
                params![run_id, item, reason],
            )?;
        }
        EventKind::WorktreeRemoved { item, attempt } => {
            tx.execute(
                "UPDATE attempts SET worktree_present = 0 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt],
            )?;
        }
        EventKind::TeardownFailed { .. } => {}
        EventKind::RunFinished {
            halt_reason,
            exit_code,
        } => {
            tx.execute(
                "UPDATE runs SET state = 'finished', finished_at = ?2, halt_reason = ?3, exit_code = ?4
                 WHERE id = ?1",
                params![run_id, at, halt_reason.as_str(), exit_code],
            )?;
        }
    }
    Ok(())
}

fn set_phase(
    tx: &Transaction<'_>,
    run_id: &str,
    item: &str,
    attempt: u32,
    phase: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE attempts SET phase = ?4 WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
        params![run_id, item, attempt, phase],
    )?;
    Ok(())
}
