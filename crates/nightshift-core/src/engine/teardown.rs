//! Preserve before destroy, and teardown that is housekeeping: a failure here is a warning
//! event, reconciled at the next start, never a crashed run.
//!
//! Owns: the ends of an attempt (fail, park, verdict, stop, abandon, reconcile), which journal,
//! on the engine; [`Housekeeping`], the git and file side (the preserving snapshot, worktree
//! removal to the pool or the disk, stale git locks, stray processes), which never journals.

use std::path::{Path, PathBuf};

use super::{Engine, EngineError};
use crate::halt::HaltReason;
use crate::store::{AttemptRow, EventKind, ItemState, Phase};

/// The clone's ref a preserve snapshot is fetched from.
const KEPT_IN_CLONE: &str = "refs/nightshift/kept";

/// Where an ended attempt's work is kept: `refs/nightshift/preserve/<item>/<attempt>`.
fn preserve_ref_name(att: &AttemptRow) -> String {
    format!("refs/nightshift/preserve/{}/{}", att.item, att.attempt)
}

/// How an attempt ends without shipping, beside its reason (what `attempt_failed` journals).
/// The default fails it: the item goes round again if it has attempts left.
#[derive(Debug, Default)]
pub(super) struct Ending {
    /// Park the item now, whatever attempts it has left.
    park: bool,
    /// Keep the attempt's branch for a person.
    keep_branch: bool,
    /// The loop-contract reason it ended on.
    halt: Option<HaltReason>,
    /// The item's verdict, `escalated` or `awaiting_operator` (branch kept, so `nightshift
    /// accept`/`confirm` can integrate it without a new session).
    verdict: Option<ItemState>,
    /// What only a person can do (an `awaiting_operator` verdict).
    actions: Vec<String>,
}

impl Ending {
    /// The item parked now, whatever attempts it has left.
    pub(super) fn parked() -> Ending {
        Ending {
            park: true,
            ..Ending::default()
        }
    }

    /// On the loop-contract reason `halt`.
    pub(super) fn halting(self, halt: HaltReason) -> Ending {
        Ending {
            halt: Some(halt),
            ..self
        }
    }

    /// With the attempt's branch kept for a person.
    pub(super) fn keeping_branch(self) -> Ending {
        Ending {
            keep_branch: true,
            ..self
        }
    }

    /// The item's verdict `verdict` (parked, branch kept), with the actions a person must take.
    pub(super) fn verdict(verdict: ItemState, actions: Vec<String>) -> Ending {
        Ending {
            verdict: Some(verdict),
            actions,
            ..Ending::parked().keeping_branch()
        }
    }
}

impl Engine<'_> {
    /// The housekeeping over this engine's parts.
    pub(super) fn housekeeping(&self) -> Housekeeping<'_> {
        Housekeeping {
            ws: &self.ws,
            git: &self.git,
            common_dir: &self.common_dir,
            clock: self.clock.as_ref(),
        }
    }

    /// Ends an attempt without shipping: preserve its work, record the verdict, tear down.
    pub(super) fn fail(&mut self, att: &AttemptRow, reason: String) -> Result<(), EngineError> {
        self.end_attempt(att, reason, Ending::default())
    }

    /// Ends an attempt on a loop-contract reason (no progress, oscillation, regression); the
    /// item goes round again if it has attempts left.
    pub(super) fn fail_halting(
        &mut self,
        att: &AttemptRow,
        reason: String,
        halt: HaltReason,
    ) -> Result<(), EngineError> {
        self.end_attempt(att, reason, Ending::default().halting(halt))
    }

    /// Ends an attempt and parks its item on a loop-contract reason (a guard failed).
    pub(super) fn park_halting(
        &mut self,
        att: &AttemptRow,
        reason: String,
        halt: HaltReason,
    ) -> Result<(), EngineError> {
        self.end_attempt(att, reason, Ending::parked().halting(halt))
    }

    /// Ends an attempt and parks its item now, whatever attempts it has left.
    pub(super) fn park(&mut self, att: &AttemptRow, reason: String) -> Result<(), EngineError> {
        self.end_attempt(att, reason, Ending::parked())
    }

    /// Parks the item and keeps the attempt's branch for a person (an unresolved conflict).
    pub(super) fn park_keeping_branch(
        &mut self,
        att: &AttemptRow,
        reason: String,
    ) -> Result<(), EngineError> {
        self.end_attempt(att, reason, Ending::parked().keeping_branch())
    }

    /// Ends an attempt without shipping, as `ending` says: preserve its work, record the
    /// verdict, tear down. The one place that journals every way an attempt ends; the wrappers
    /// above name the common ones.
    pub(super) fn end_attempt(
        &mut self,
        att: &AttemptRow,
        reason: String,
        ending: Ending,
    ) -> Result<(), EngineError> {
        let Ending {
            park,
            keep_branch,
            halt,
            verdict,
            actions,
        } = ending;
        let verdict = verdict.map(|v| v.as_str().to_owned());
        let run_id = self.run_id();
        let preserve_ref = match self.preserve_to(&run_id, att, preserve_ref_name(att)) {
            Ok(r) => Some(r),
            Err(err) => {
                self.record(EventKind::TeardownFailed {
                    item: att.item.clone(),
                    attempt: att.attempt,
                    error: format!("preserve the attempt's work (the worktree is kept): {err}"),
                })?;
                None
            }
        };
        let listed = actions.clone();
        self.record(EventKind::AttemptFailed {
            item: att.item.clone(),
            attempt: att.attempt,
            reason,
            preserve_ref,
            park,
            keep_branch,
            halt,
            verdict,
            actions,
        })?;
        // What the item's state now asks of a person, said once for watchers (`wait`).
        let ended = self.store.item(&run_id, &att.item)?;
        if let Some(item) = ended {
            let reason = item.reason.clone().unwrap_or_default();
            match item.state {
                ItemState::Parked => self.record(EventKind::ItemParked {
                    item: item.id,
                    reason,
                })?,
                ItemState::Escalated => self.record(EventKind::ItemEscalated {
                    item: item.id,
                    reason,
                })?,
                ItemState::AwaitingOperator => self.record(EventKind::ItemAwaitingOperator {
                    item: item.id,
                    reason,
                    actions: listed,
                })?,
                _ => return self.teardown_attempt(&run_id, &att.item, att.attempt),
            };
        }
        self.teardown_attempt(&run_id, &att.item, att.attempt)
    }

    /// Keeps the attempt's commits and dirty tree (untracked files included) under `ref_name`
    /// ([`preserve_ref_name`], or another: e.g. before triage puts the tree back), journaled
    /// `preserved`. Touches neither the worktree nor its index.
    pub(super) fn preserve_to(
        &mut self,
        run_id: &str,
        att: &AttemptRow,
        ref_name: String,
    ) -> Result<String, EngineError> {
        let commit = self.housekeeping().snapshot(run_id, att, &ref_name)?;
        self.git.set_ref(&ref_name, &commit)?;
        self.journal_preserved(run_id, att, &ref_name, commit)?;
        Ok(ref_name)
    }

    fn journal_preserved(
        &mut self,
        run_id: &str,
        att: &AttemptRow,
        ref_name: &str,
        commit: String,
    ) -> Result<(), EngineError> {
        let kind = EventKind::Preserved {
            item: att.item.clone(),
            attempt: att.attempt,
            ref_name: ref_name.to_owned(),
            commit,
        };
        self.record_for(run_id, kind)
    }

    /// [`Engine::preserve_to`] under [`preserve_ref_name`]; a failure is journaled as
    /// `teardown_failed` (the worktree is kept) and answers `false`.
    fn preserve_or_warn(&mut self, run_id: &str, att: &AttemptRow) -> Result<bool, EngineError> {
        match self.preserve_to(run_id, att, preserve_ref_name(att)) {
            Ok(_) => Ok(true),
            Err(err) => {
                self.record_for(
                    run_id,
                    EventKind::TeardownFailed {
                        item: att.item.clone(),
                        attempt: att.attempt,
                        error: format!("preserve the attempt's work (the worktree is kept): {err}"),
                    },
                )?;
                Ok(false)
            }
        }
    }

    /// Journals an event for `run_id`, which may be an earlier run being reconciled.
    fn record_for(&mut self, run_id: &str, kind: EventKind) -> Result<(), EngineError> {
        if run_id == self.run_id() {
            self.record(kind)?;
        } else {
            let at = self.clock.wall().to_string();
            let event = self.store.record(run_id, &at, kind)?;
            (self.observe)(&event);
        }
        Ok(())
    }

    /// Removes a finished attempt's worktree and branch, after making sure its work is kept.
    /// Every failure becomes a `teardown_failed` warning; the run goes on.
    pub(super) fn teardown_attempt(
        &mut self,
        run_id: &str,
        item: &str,
        attempt: u32,
    ) -> Result<(), EngineError> {
        let Some(att) = self.store.attempt(run_id, item, attempt)? else {
            return Ok(());
        };
        self.write_receipt_once(run_id, &att);
        if !att.worktree_present {
            return Ok(());
        }
        // A shipped attempt's work is its candidate, on the target already: its preserve ref
        // is set in the one transaction that drops the attempt's other refs, once the
        // worktree is gone (a git call fewer, decision 106). Anything else is preserved
        // before its worktree is touched.
        let shipped = (att.preserve_ref.is_none() && att.phase == Phase::Integrated)
            .then(|| att.candidate.clone())
            .flatten();
        if att.preserve_ref.is_none()
            && shipped.is_none()
            && !self.preserve_or_warn(run_id, &att)?
        {
            return Ok(());
        }
        let path = PathBuf::from(&att.worktree);
        // Nothing may still be running in it when git touches it (seed 003).
        let swept = crate::session::sweep(
            &path,
            self.config.session.kill_grace,
            crate::session::Reach::Session,
            Some(self.started_boot),
        );
        if !swept.survivors.is_empty() {
            if shipped.is_some() && !self.preserve_or_warn(run_id, &att)? {
                return Ok(());
            }
            return self.quarantine(run_id, &att, &path, &swept.survivors);
        }
        match self.housekeeping().remove_worktree(&path) {
            Ok(()) => {
                // The prepared merge's keep-alive ref (merge.rs, `prepare_merge`), and the
                // attempt's branch unless it is kept: one git call, which also keeps a
                // shipped attempt's candidate under its preserve ref.
                let mut gone = vec![super::attempt::merge_ref(item, attempt)];
                if !att.keep_branch {
                    gone.push(format!("refs/heads/{}", att.branch));
                }
                match shipped {
                    Some(candidate) => {
                        let name = preserve_ref_name(&att);
                        if self.git.update_refs(&[(&name, &candidate)], &gone).is_ok() {
                            self.journal_preserved(run_id, &att, &name, candidate)?;
                        } else {
                            // One at a time, then: the preserve ref first (its failure is a
                            // warning; the work is on the target).
                            self.preserve_or_warn(run_id, &att)?;
                            let _ = self.git.delete_refs(&gone);
                        }
                    }
                    None => {
                        let _ = self.git.delete_refs(&gone);
                    }
                }
                self.record_for(
                    run_id,
                    EventKind::WorktreeRemoved {
                        item: item.into(),
                        attempt,
                    },
                )
            }
            Err(error) => {
                if shipped.is_some() && !self.preserve_or_warn(run_id, &att)? {
                    return Ok(());
                }
                self.record_for(
                    run_id,
                    EventKind::TeardownFailed {
                        item: item.into(),
                        attempt,
                        error,
                    },
                )
            }
        }
    }

    /// Processes that survive SIGKILL (stuck in the kernel) still hold the worktree: move it
    /// aside for a person, clear git's entry, alert, and let the run go on.
    fn quarantine(
        &mut self,
        run_id: &str,
        att: &AttemptRow,
        path: &Path,
        survivors: &[i32],
    ) -> Result<(), EngineError> {
        let dir = self.ws.dir().join("quarantine");
        let stamp = self.clock.wall().strftime("%Y%m%dT%H%M%SZ");
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let target = dir.join(format!("{name}-{stamp}"));
        let moved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::rename(path, &target));
        let error = match moved {
            Ok(()) => {
                let _ = self.git.worktree_remove(path);
                let _ = self.git.worktree_prune();
                format!(
                    "processes {survivors:?} survived SIGKILL in the worktree; it is quarantined at {}",
                    target.display()
                )
            }
            Err(e) => format!(
                "processes {survivors:?} survived SIGKILL in the worktree, and moving it aside failed: {e}"
            ),
        };
        self.alerts().alert(
            crate::notify::AlertKind::Integrity,
            format!("{}: {error}", att.item),
            Some(&att.item),
        );
        self.record_for(
            run_id,
            EventKind::TeardownFailed {
                item: att.item.clone(),
                attempt: att.attempt,
                error,
            },
        )?;
        if !path.exists() {
            self.record_for(
                run_id,
                EventKind::WorktreeRemoved {
                    item: att.item.clone(),
                    attempt: att.attempt,
                },
            )?;
        }
        Ok(())
    }

    /// At start: finish the housekeeping a crash interrupted, for attempts of any run that
    /// reached a verdict but still have a worktree.
    pub(super) fn reconcile_teardowns(&mut self) -> Result<(), EngineError> {
        // What a crash left half-done in the pool (an index copy without its clone, …).
        crate::git::ClonePool::new(self.ws.pool()).tidy(&self.ws.worktrees());
        for (run_id, att) in self.store.lingering_attempts()? {
            let open_here = run_id == self.run_id() && !att.is_finished();
            if !open_here && att.is_finished() {
                self.teardown_attempt(&run_id, &att.item, att.attempt)?;
            }
        }
        Ok(())
    }

    /// An operator stop: every open attempt's work is snapshotted under its preserve ref (the
    /// worktree stays, so resuming continues in place), the stop is journaled, and the run stays
    /// resumable.
    pub(super) fn stop(
        &mut self,
        graceful: bool,
        halt_reason: Option<crate::halt::HaltReason>,
    ) -> Result<(), EngineError> {
        let run_id = self.run_id();
        for att in self.store.attempts(&run_id)? {
            if !att.is_finished() && att.worktree_present && Path::new(&att.worktree).exists() {
                self.preserve_to(&run_id, &att, preserve_ref_name(&att))?;
            }
        }
        self.record(EventKind::RunStopped {
            graceful,
            halt_reason,
        })?;
        Ok(())
    }

    /// For `--fresh`: close the unfinished run's open attempts, work preserved. An attempt
    /// whose commit already reached the target (killed between the effect and its
    /// confirmation) is recorded as shipped, not failed: it must not ship twice.
    pub(super) fn abandon_open_attempts(&mut self, reason: &str) -> Result<(), EngineError> {
        let run_id = self.run_id();
        let target = self.run()?.target.clone();
        for att in self.store.attempts(&run_id)? {
            if att.is_finished() {
                continue;
            }
            let landed = match (att.phase, att.merged.as_deref()) {
                (Phase::Integrating | Phase::MergeGreen, Some(merged)) => {
                    match self.git.resolve(&format!("refs/heads/{target}"))? {
                        Some(tip) => self.git.is_ancestor(merged, &tip)?,
                        None => false,
                    }
                }
                _ => false,
            };
            if landed {
                let push = self.config.integrate.push;
                self.record(EventKind::Integrated {
                    item: att.item.clone(),
                    attempt: att.attempt,
                    commit: att.merged.clone().unwrap_or_default(),
                    push,
                    awaiting_push: push
                        && self.config.integrate.done == crate::config::Done::Pushed,
                })?;
                self.teardown_attempt(&run_id, &att.item, att.attempt)?;
            } else {
                self.fail(&att, reason.to_owned())?;
            }
        }
        Ok(())
    }
}

/// The git and file side of teardown: snapshots, worktree removal, stale locks and strays
/// (borrowed from the engine for one use; it never journals).
pub(super) struct Housekeeping<'a> {
    ws: &'a crate::workspace::Workspace,
    git: &'a crate::git::Git,
    common_dir: &'a Path,
    clock: &'a dyn crate::clock::Clock,
}

impl Housekeeping<'_> {
    /// nightshift's git in an attempt's checkout (as `Engine::checkout`).
    fn checkout(&self, path: impl AsRef<Path>) -> crate::git::Git {
        self.git
            .checkout_at(self.common_dir, path.as_ref().to_path_buf())
    }

    /// The commit that keeps the attempt's work: its candidate once shipped, else a snapshot
    /// of its whole tree (fetched from a clone as `ref_name`), else its branch tip or base.
    fn snapshot(
        &self,
        run_id: &str,
        att: &AttemptRow,
        ref_name: &str,
    ) -> Result<String, EngineError> {
        let path = PathBuf::from(&att.worktree);
        // A shipped attempt's work is all in its candidate commit (committed before the check
        // that let it through); anything else gets a snapshot of the whole tree.
        let shipped = att.phase == Phase::Integrated;
        let branch_tip = if shipped {
            None
        } else {
            self.git.resolve(&format!("refs/heads/{}", att.branch))?
        };
        let commit = if let (true, Some(candidate)) = (shipped, &att.candidate) {
            candidate.clone()
        } else if path.join(".git").exists() {
            let message = format!(
                "nightshift: preserved attempt {} of {}\n\nNightshift-Run: {run_id}\n",
                att.attempt, att.item
            );
            let scratch = self
                .ws
                .dir()
                .join(format!("snapshot-{}-{}.index", att.item, att.attempt));
            let checkout = self.checkout(&path);
            let commit = checkout.snapshot(&message, branch_tip.as_deref(), &scratch)?;
            if checkout.pristine().is_some() {
                // Made in the clone's object store: fetched into the user's, as the ref.
                checkout.set_ref(KEPT_IN_CLONE, &commit)?;
                self.git
                    .fetch_from_clone(self.common_dir, &path, KEPT_IN_CLONE, ref_name)?;
            }
            commit
        } else if let Some(tip) = branch_tip {
            tip
        } else {
            att.candidate.clone().unwrap_or_else(|| att.base.clone())
        };
        Ok(commit)
    }

    /// remove → forced remove → (only inside `.nightshift/worktrees/`) delete the directory
    /// and prune. Git may drop its admin entry even when deleting the files fails (seed 003),
    /// so the fallback never depends on git still knowing the worktree.
    fn remove_worktree(&self, path: &Path) -> Result<(), String> {
        if crate::git::is_clone(self.common_dir, path) && self.ws.owns_worktree_path(path) {
            // A clone is only files: nothing of it is in the user's repository, and its work
            // is preserved (above). It goes to the pool for the next attempt, which resets it
            // wholly before use (git/pool.rs); past the pool's bound it is deleted.
            let pool = crate::git::ClonePool::new(self.ws.pool());
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let unique = format!(
                "{:020}-{}-{name}",
                self.clock.wall().as_nanosecond(),
                std::process::id()
            );
            if crate::git::pool::pool_pays(self.common_dir) && pool.put(path, &unique) {
                return Ok(());
            }
            pool.drop_held(path);
            return std::fs::remove_dir_all(path)
                .map_err(|e| format!("remove the attempt's clone {}: {e}", path.display()));
        }
        let git_result = self.git.worktree_remove(path);
        if git_result.is_ok() && !path.exists() {
            return Ok(());
        }
        if path.exists() {
            if !self.ws.owns_worktree_path(path) {
                return Err(format!(
                    "remove worktree {}: {}; it is outside .nightshift/worktrees, so it is left alone",
                    path.display(),
                    git_result.err().map(|e| e.to_string()).unwrap_or_default()
                ));
            }
            std::fs::remove_dir_all(path)
                .map_err(|e| format!("remove worktree directory {}: {e}", path.display()))?;
            // The admin entry may be locked; prune alone would keep it forever.
            let _ = self.git.worktree_remove(path);
        }
        self.git.worktree_prune().map_err(|e| e.to_string())
    }

    /// Removes `index.lock` files that a killed git left in the admin directories of
    /// nightshift's own worktrees (called after the stray sweep, so no git is running there).
    pub(super) fn clear_stale_git_locks(&self) {
        let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) else {
            return;
        };
        for entry in entries.flatten() {
            let admin = entry.path();
            let Ok(gitdir) = std::fs::read_to_string(admin.join("gitdir")) else {
                continue;
            };
            let worktree = Path::new(gitdir.trim()).parent().map(Path::to_path_buf);
            if worktree.is_some_and(|w| self.ws.owns_worktree_path(&w)) {
                let _ = std::fs::remove_file(admin.join("index.lock"));
            }
        }
    }

    /// Ends processes a killed engine left behind: anything whose working directory is inside
    /// `.nightshift/worktrees/` (agents and checks die with the engine through PDEATHSIG, but a
    /// descendant may not).
    pub(super) fn sweep_strays(&self) {
        crate::session::kill_processes_under(&self.ws.worktrees());
    }
}
