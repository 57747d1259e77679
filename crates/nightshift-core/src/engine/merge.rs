//! The merge stage of the item pipeline: the attempt's work merged onto the target's current
//! tip (`merge_prepared`), checked there (`run_check`, in the parent module), and landed
//! (`integrate_intended` → `integrated`); a conflict with the tip is a repair iteration. The
//! git side — what the merged commit is, and how the target moves — is the one integrator's
//! ([`crate::git::Integrator`]), which `accept` uses too; what is journaled, waited for or
//! retried is decided here.

use super::{MAX_CONFLICT_REPAIRS, merge_ref, short};
use crate::engine::{Engine, EngineError};
use crate::failpoint;
use crate::git::{Integrator, Landing, Prepared};
use crate::notify;
use crate::store::{AttemptRow, EventKind, ItemRow, Phase};

impl Engine<'_> {
    /// A conflict with the target's tip: merge the tip into the worktree (markers and all) and
    /// give the agent one iteration to resolve it.
    pub(in crate::engine) fn start_conflict_repair(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let wt = self.checkout(&att.worktree);
        if !wt.merge_in_progress()? {
            let onto = att.onto.clone().unwrap_or_default();
            wt.merge_no_commit(
                &onto,
                &format!("{}: bring in the target ({})", att.item, short(&onto)),
            )?;
        }
        self.run_session(item, att, att.iteration + 1)
    }

    /// Brings the attempt's work onto the target's current tip as one commit, in memory.
    pub(in crate::engine) fn prepare_merge(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let candidate = att.candidate.clone().unwrap_or_default();
        let tip = super::target_tip(&self.git, &self.common_dir, &self.run()?.target)?;
        let message = crate::engine::attempt::commit_message(&self.run_id(), item, att);
        let strategy = self.config.integrate.strategy;
        let (commit, tree) = match Integrator::new(&self.git, &self.common_dir)
            .prepare(&att.base, &candidate, &tip, strategy, &message)?
        {
            Prepared::Ready { commit, tree } => (commit, tree),
            Prepared::Conflict { paths } if att.conflict_repairs < MAX_CONFLICT_REPAIRS => {
                self.record(EventKind::ConflictFound {
                    item: att.item.clone(),
                    attempt: att.attempt,
                    onto: tip,
                    paths,
                })?;
                return Ok(());
            }
            Prepared::Conflict { paths } => {
                return self.park_keeping_branch(
                        att,
                        format!(
                            "merge conflict with the target ({}) in {}, still after a repair iteration; branch {} kept",
                            short(&tip),
                            paths.join(", "),
                            att.branch
                        ),
                    );
            }
        };
        // Until it lands, nothing but the journal names this commit: a `git gc --prune=now`
        // (a user's, a cron's) would delete it, and every later step of the attempt would
        // fail on the missing object. A ref keeps it alive; teardown deletes it. The candidate
        // itself (landing as it is, decision 106) is kept alive by the attempt's branch.
        if commit != candidate {
            self.git
                .set_ref(&merge_ref(&att.item, att.attempt), &commit)?;
        }
        // The next attempt's base is this commit: its tree is known already.
        match tree {
            Some(tree) => self.judge().know_tree(&commit, &tree),
            None if tip == att.base => {
                let tree = self.judge().tree_of_new(&candidate)?;
                self.judge().know_tree(&commit, &tree);
            }
            None => {}
        }
        self.record(EventKind::MergePrepared {
            item: att.item.clone(),
            attempt: att.attempt,
            commit,
            onto: tip,
        })?;
        Ok(())
    }

    /// Moves the target to the prepared commit: intent, effect, confirmation. Re-entrant: on
    /// resume it first asks git whether the effect already happened.
    pub(in crate::engine) fn integrate(&mut self, att: &AttemptRow) -> Result<(), EngineError> {
        let target = self.run()?.target.clone();
        let merged = att.merged.clone().unwrap_or_default();
        let onto = att.onto.clone().unwrap_or_default();
        if att.phase != Phase::Integrating {
            self.record(EventKind::IntegrateIntended {
                item: att.item.clone(),
                attempt: att.attempt,
                target: target.clone(),
                commit: merged.clone(),
                expected_old: onto.clone(),
            })?;
        }
        match Integrator::new(&self.git, &self.common_dir).land(&target, &merged, &onto)? {
            Landing::Landed => failpoint::hit("integrate_effect_done"),
            Landing::AlreadyLanded => {}
            Landing::Moved { .. } => {
                // Someone else moved the target: merge onto the new tip (and check again).
                let item = self
                    .store
                    .items(&self.run_id())?
                    .into_iter()
                    .find(|i| i.id == att.item);
                return match item {
                    Some(item) => self.prepare_merge(&item, att),
                    None => Ok(()),
                };
            }
            // Lost a race (or someone committed during the fast-forward); the next step
            // merges onto the new tip.
            Landing::Lost { .. } => return Ok(()),
            // Stuck at `onto` (a stale lock file, permissions): retrying in a loop would never
            // end, so the run halts, resumable, with git's reason.
            Landing::Stuck { why } => {
                return Err(EngineError::Workspace {
                    what: format!("move refs/heads/{target} to {}: {why}", short(&merged)),
                    help: Some(
                        "remove a stale `.lock` file if git names one; `nightshift run` then resumes"
                            .into(),
                    ),
                });
            }
            Landing::Dirty { checkout, paths } => {
                // Never move a file under someone's uncommitted work: the item waits in
                // `integrating`, a person is told, the wait is retried. Edits to other files do
                // not block (the integrator's fast-forward leaves them as they are).
                let mut named: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
                if paths.len() > 5 {
                    named.push("…");
                }
                // An agent's edit there is not the user's work: never advise committing it.
                let planted =
                    crate::engine::tamper::tampered_paths(&self.store, &self.run_id(), &paths)?;
                if !planted.is_empty() {
                    return self.wait_for_checkout(format!(
                        "the target `{target}` is checked out at {} with uncommitted changes to {} that an agent session made (control_plane_tampered): they are unreviewed, never commit them; inspect and discard them (`git restore -- {}`) and the item `{}` integrates",
                        checkout.display(),
                        planted.join(", "),
                        planted.join(" "),
                        att.item
                    ));
                }
                return self.wait_for_checkout(format!(
                    "the target `{target}` is checked out at {} with uncommitted changes to {} that `{}` also changes; commit or stash them and the item integrates",
                    checkout.display(),
                    named.join(", "),
                    att.item
                ));
            }
            Landing::FastForwardRefused { checkout, error } => {
                return self.wait_for_checkout(format!(
                    "the checkout of `{target}` at {} cannot be fast-forwarded ({error}); clear what blocks it and the item integrates",
                    checkout.display()
                ));
            }
            // Re-read for the error that says so (and a branch restored meanwhile is retried).
            Landing::Gone => {
                return super::target_tip(&self.git, &self.common_dir, &self.run()?.target)
                    .map(drop);
            }
        }
        let push = self.config.integrate.push;
        self.record(EventKind::Integrated {
            item: att.item.clone(),
            attempt: att.attempt,
            commit: merged,
            push,
            awaiting_push: push && self.config.integrate.done == crate::config::Done::Pushed,
        })?;
        self.teardown_attempt(&self.run_id(), &att.item, att.attempt)?;
        // Closeout is housekeeping too: a refused push is retried, never a failed item.
        self.push_owed()?;
        Ok(())
    }

    /// The prepared merge is gone: make it again from the attempt's candidate (its branch keeps
    /// that alive), once; when the candidate is gone too, or the new merge vanished as well,
    /// the attempt fails with the reason (never the engine: the next start would meet the same
    /// missing object).
    pub(in crate::engine) fn remake_merge(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let candidate = att.candidate.clone().unwrap_or_default();
        let merged = att.merged.clone().unwrap_or_default();
        let remade = self
            .store
            .attempt_events(
                &self.run_id(),
                &att.item,
                att.attempt,
                Some("merge_prepared"),
            )?
            .len()
            > 1;
        if remade || self.git.resolve(&candidate)?.is_none() {
            return self.fail(
                att,
                format!(
                    "the attempt's commit {} is missing from the repository (a concurrent `git gc \
                     --prune=now`?); its work is on branch {}",
                    short(&merged),
                    att.branch
                ),
            );
        }
        self.prepare_merge(item, att)
    }

    /// Pauses the run until the user's checkout of the target can take the item: ATTENTION
    /// the first time, then a quiet retry every `fault_backoff` (doubling, at most a minute).
    fn wait_for_checkout(&mut self, why: String) -> Result<(), EngineError> {
        if self.last_alert.as_deref() != Some(why.as_str()) {
            notify::attention(&self.ws, self.clock.as_ref(), &why);
            self.last_alert = Some(why.clone());
        }
        let wait = self
            .config
            .session
            .fault_backoff
            .as_secs_f64()
            .clamp(0.05, 60.0);
        let until = self.clock.wall().as_second() + wait.ceil() as i64;
        self.record(EventKind::RunPaused { reason: why, until })?;
        Ok(())
    }
}

/// Whether the attempt's prepared merge commit is gone from the object store (pruned by a
/// concurrent `git gc --prune=now` before its keep-alive ref existed, or by hand).
pub(in crate::engine) fn merged_is_missing(
    git: &crate::git::Git,
    common_dir: &std::path::Path,
    att: &AttemptRow,
) -> Result<bool, EngineError> {
    let Some(merged) = att.merged.as_deref() else {
        return Ok(false);
    };
    // Its keep-alive ref still naming it is enough (read from the files, no git call): git
    // refuses to write a ref to a missing object, and no gc deletes what a ref names.
    // A candidate landing as it is (decision 106) has no keep-alive ref: its branch names it.
    for kept in [
        merge_ref(&att.item, att.attempt),
        format!("refs/heads/{}", att.branch),
    ] {
        if git.resolve_ref(common_dir, &kept)?.as_deref() == Some(merged) {
            return Ok(false);
        }
    }
    Ok(git.resolve(merged)?.is_none())
}
