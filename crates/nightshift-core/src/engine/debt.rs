//! Review debt: work that shipped without its review owes one, and a log line is not a
//! queue. Open debts are paid as review-only work at the next opportunity of the run (before
//! any new item starts) and of the next run. A debt review with a high-severity finding reopens
//! the item — a new attempt on top of the shipped code, with the findings — and wakes a person.

use std::path::PathBuf;

use super::review::{PromptParts, ReviewRun, review_prompt};
use super::{Engine, EngineError, io_err};
use crate::git::{Scratch, ScratchError};
use crate::notify::{self, Alert, AlertKind};
use crate::session::{Budget, Outcome};
use crate::store::{DebtRow, EventKind};
use crate::verdict::Decision;

/// The oldest open debt run `run_id` may still try (each run tries one at most
/// `max_review_cycles` times; what is left keeps the run from exiting 10).
pub(super) fn next_debt(
    store: &crate::store::Store,
    config: &crate::config::Config,
    run_id: &str,
) -> Result<Option<DebtRow>, EngineError> {
    let max = config.review.review.max_review_cycles;
    Ok(store
        .open_debts()?
        .into_iter()
        .find(|d| d.last_run.as_deref() != Some(run_id) || d.tries < max))
}

impl Engine<'_> {
    /// One review-only session over a shipped commit, in a detached worktree of its own.
    pub(super) fn review_debt(&mut self, debt: &DebtRow) -> Result<(), EngineError> {
        if super::budget::run_budget_spent(&self.config, self.run()?, &self.dispatch) {
            self.halt_requested = Some(crate::halt::HaltReason::BudgetExceeded);
            return Ok(());
        }
        let run_id = self.run_id();
        let try_number = if debt.last_run.as_deref() == Some(run_id.as_str()) {
            debt.tries + 1
        } else {
            1
        };
        let stem = format!("{}-a{}-debt{try_number}", debt.item, debt.attempt);
        let logs = self.ws.logs(&run_id);
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        let item = self
            .store
            .items(&run_id)?
            .into_iter()
            .find(|i| i.id == debt.item);
        let task = item.as_ref().map(|i| i.prompt.clone()).unwrap_or_default();
        // The try is counted first: a debt whose commit cannot be checked out (rewritten away,
        // a git failure) is settled `unresolved` with the reason, never an engine error that a
        // restart would meet again at the head of every run.
        self.record(EventKind::DebtReviewStarted {
            item: debt.item.clone(),
            attempt: debt.attempt,
            log: logs
                .join(format!("{stem}.review.log"))
                .display()
                .to_string(),
        })?;
        let prepared = Scratch::add(
            &self.git,
            &self.ws.worktrees(),
            &format!("debt-{}-{}", debt.item, debt.attempt),
            &debt.commit,
        )
        .map_err(scratch_err)
        .and_then(|tree| {
            let diff = self
                .git
                .run(&["diff", debt.base.as_str(), debt.commit.as_str()])?;
            Ok((tree, diff))
        });
        let (tree, diff) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => {
                let why = format!(
                    "could not check out the shipped commit {} for review: {e}",
                    super::attempt::short(&debt.commit)
                );
                notify::attention(
                    &self.ws,
                    self.clock.as_ref(),
                    &format!("{}: review debt unresolved: {why}", debt.item),
                );
                self.record(EventKind::DebtSettled {
                    item: debt.item.clone(),
                    attempt: debt.attempt,
                    outcome: "unresolved".into(),
                    why,
                    verdict: None,
                    feedback: None,
                    spend: None,
                })?;
                return Ok(());
            }
        };
        let prompt = review_prompt(&PromptParts {
            item: &debt.item,
            task: &task,
            diff: &diff,
            check: &format!("the check was green when it shipped ({})", debt.reason),
            check_output: "",
            debt: true,
        });
        let env = vec![
            ("NIGHTSHIFT_RUN".into(), run_id.clone()),
            ("NIGHTSHIFT_ITEM".into(), debt.item.clone()),
            ("NIGHTSHIFT_ATTEMPT".into(), debt.attempt.to_string()),
            ("NIGHTSHIFT_REVIEW".into(), "debt".into()),
            ("NIGHTSHIFT_REVIEW_CYCLE".into(), try_number.to_string()),
        ];
        let budget = match &item {
            Some(item) => {
                super::budget::session_budget(&self.config, self.run()?, item, &self.dispatch)
            }
            None => Budget {
                limits: Vec::new(),
                soft: self.config.budget.soft,
                cache_read_weight: self.config.budget.cache_read_weight,
                ledger: None,
            },
        };
        let agent = self
            .config
            .review
            .agent
            .clone()
            .unwrap_or_else(|| self.config.agent.clone());
        let ended = self.review_session(ReviewRun {
            agent: &agent,
            item: &debt.item,
            attempt: debt.attempt,
            cwd: tree.tree().to_owned(),
            stem: stem.clone(),
            prompt,
            env,
            budget,
        });
        // The review-only tree goes whatever happened (the shipped commit is on the target).
        tree.remove().map_err(scratch_err)?;
        let ended = ended?;
        if ended.end.outcome == Outcome::Stopped {
            return Ok(());
        }
        let (outcome, why, verdict, feedback) = match ended.verdict {
            Ok(v) if v.verdict == Decision::Escalate || v.has_high() => {
                let file = logs.join(format!("{stem}.findings.txt"));
                std::fs::write(&file, v.feedback()).map_err(io_err(&file))?;
                let why = format!("high-severity finding: {}", v.reason);
                (
                    "reopened",
                    why,
                    Some(v.clone()),
                    Some(file.display().to_string()),
                )
            }
            Ok(v) => ("paid", format!("reviewed: {}", v.reason), Some(v), None),
            Err(e) => (
                "unresolved",
                format!("{:?}: {e}", ended.end.outcome).to_lowercase(),
                None,
                None,
            ),
        };
        if outcome == "unresolved" && ended.end.outcome.is_environmental() {
            let now = self.clock.wall().as_second();
            let wait = self.config.session.fault_backoff.as_secs().max(1) as i64;
            self.pause(
                format!(
                    "{}: the debt review of {} waits",
                    if ended.end.outcome == Outcome::RateLimited {
                        "rate_limited"
                    } else {
                        "env_fault: transient"
                    },
                    debt.item
                ),
                now + wait,
                &debt.item,
            )?;
        }
        self.record(EventKind::DebtSettled {
            item: debt.item.clone(),
            attempt: debt.attempt,
            outcome: outcome.into(),
            why: why.clone(),
            verdict,
            feedback: feedback.clone(),
            spend: ended.spend,
        })?;
        if outcome == "reopened" {
            let requeued = item.is_some();
            notify::raise(
                &self.ws,
                self.clock.as_ref(),
                &self.config.notify,
                &Alert {
                    kind: AlertKind::HumanRequired,
                    summary: format!(
                        "{}: the review it shipped without found a problem: {why}; {}",
                        debt.item,
                        if requeued {
                            "the item is reopened on top of the shipped code"
                        } else {
                            "the item is not in this run's plan: reopen it by hand"
                        }
                    ),
                    detail: feedback
                        .as_ref()
                        .map(|f| super::review::tail_of(&PathBuf::from(f), 4096)),
                    run_id: Some(run_id),
                    item: Some(debt.item.clone()),
                },
            );
        }
        Ok(())
    }
}

fn scratch_err(e: ScratchError) -> EngineError {
    match e {
        ScratchError::Git(e) => EngineError::Git(e),
        ScratchError::Io { path, source } => io_err(&path)(source),
    }
}
