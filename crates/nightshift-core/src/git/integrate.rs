//! The one integrator: bring a commit's work onto a target branch. The engine (for each
//! attempt, a journaled step at a time) and `accept` (all at once) both go through it:
//!
//! 1. [`Integrator::prepare`] — merge the work onto the target's tip in memory
//!    (`merge-tree --write-tree`), and make the commit that would land (squash, merge or
//!    rebase), its parent the tip. Nothing moves.
//! 2. the caller checks that commit (the check on the merged result: a journaled phase of the
//!    engine, a scratch checkout of `accept`'s).
//! 3. [`Integrator::land`] — move the target to it: where the target is checked out, by
//!    `merge --ff-only` there (never over the user's uncommitted edits to the files it moves);
//!    elsewhere by compare-and-swap of the ref. A target that moved since the merge was made is
//!    a [`Landing::Moved`] or a lost race ([`Landing::Lost`]), never overwritten.
//!
//! What the caller does with a conflict, a dirty checkout or a lost race is its own (the engine
//! repairs, waits and merges again; `accept` refuses); what counts as each is decided here.

use std::path::{Path, PathBuf};

use super::cmd::{Git, GitError};
use super::worktree::MergeOutcome;
use crate::config::Strategy;

/// Brings work onto a target in one repository.
pub struct Integrator<'g> {
    git: &'g Git,
    common_dir: &'g Path,
}

/// What [`Integrator::prepare`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepared {
    /// The commit that would land (its first parent is the tip it was merged onto). `tree` is
    /// its tree when the merge computed it (a squash or a merge onto a moved tip); otherwise
    /// the caller knows it (the candidate's tree, onto an unmoved tip) or git does.
    Ready {
        commit: String,
        tree: Option<String>,
    },
    /// The work conflicts with the tip in these paths; nothing was made.
    Conflict { paths: Vec<String> },
}

/// How [`Integrator::land`] ended. Only `Landed` moved anything.
#[derive(Debug)]
pub enum Landing {
    /// The target is now the merged commit (the ref moved, or the checkout fast-forwarded).
    Landed,
    /// The target already holds the merged commit: an earlier landing's effect happened.
    AlreadyLanded,
    /// The target is no longer at the tip the merge was made onto (seen before moving it).
    Moved { tip: String },
    /// The target moved while it was being moved (git's reason): a lost race.
    Lost { why: String },
    /// The ref refuses to move although it is still at the tip (a stale `.lock` file,
    /// permissions): retrying would never end.
    Stuck { why: String },
    /// The target is checked out at `checkout` with uncommitted edits to `paths`, which the
    /// merged commit also changes: moving it would move files under someone's work.
    Dirty {
        checkout: PathBuf,
        paths: Vec<String>,
    },
    /// The checkout of the target cannot be fast-forwarded (git refuses: it would overwrite an
    /// untracked file, say), and the target did not move meanwhile.
    FastForwardRefused { checkout: PathBuf, error: GitError },
    /// The target branch does not exist.
    Gone,
}

impl<'g> Integrator<'g> {
    /// `git` at the repository (the user's); `common_dir` its shared git directory.
    pub fn new(git: &'g Git, common_dir: &'g Path) -> Integrator<'g> {
        Integrator { git, common_dir }
    }

    /// Where `target` (a branch name) points, read from the ref files where it can.
    pub fn tip(&self, target: &str) -> Result<Option<String>, GitError> {
        self.git
            .resolve_ref(self.common_dir, &format!("refs/heads/{target}"))
    }

    /// Merges the work `base..candidate` onto `tip` and makes the commit that would land, by
    /// `strategy`, with `message` (squash and merge; rebase keeps each commit's own). A rebase
    /// of a history with merges, or one whose single step conflicts on its own, lands as one
    /// commit (whose merge is already known to be clean).
    pub fn prepare(
        &self,
        base: &str,
        candidate: &str,
        tip: &str,
        strategy: Strategy,
        message: &str,
    ) -> Result<Prepared, GitError> {
        if tip == base
            && strategy == Strategy::Squash
            && let Some(tree) = self.own_squash(base, candidate, message)
        {
            return Ok(Prepared::Ready {
                commit: candidate.to_owned(),
                tree: Some(tree),
            });
        }
        let (tree, merged_tree) = if tip == base {
            (format!("{candidate}^{{tree}}"), None)
        } else {
            match self.git.merge_tree(tip, candidate)? {
                MergeOutcome::Clean { tree } => (tree.clone(), Some(tree)),
                MergeOutcome::Conflict { paths } => return Ok(Prepared::Conflict { paths }),
            }
        };
        let (commit, tree) = match strategy {
            Strategy::Squash => (self.git.commit_tree(&tree, &[tip], message)?, merged_tree),
            Strategy::Merge => (
                self.git.commit_tree(&tree, &[tip, candidate], message)?,
                merged_tree,
            ),
            Strategy::Rebase => match self.replay(base, candidate, tip)? {
                Some(last) => (last, None),
                None => (self.git.commit_tree(&tree, &[tip], message)?, None),
            },
        };
        Ok(Prepared::Ready { commit, tree })
    }

    /// The candidate's tree when the candidate already is the commit a squash onto an unmoved
    /// target would make: nightshift's own single commit on `base`, with `message` (as `git
    /// commit` stored it) and nothing else in it (no signature, no other header), so the
    /// squash would differ from it only in its timestamps — which must be one time, not in the
    /// future and at most a week old, as nightshift's own commit's are (an agent that forged
    /// such a commit in its clone cannot so land a date of its choosing). Read from its loose
    /// object; `None` whenever that cannot be told without git (decision 106).
    fn own_squash(&self, base: &str, candidate: &str, message: &str) -> Option<String> {
        const WEEK: i64 = 7 * 24 * 3600;
        let object = super::object::read_loose_commit(&self.common_dir.join("objects"), candidate)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_secs()).ok())?;
        let when = super::object::ident_time(&object.committer)?;
        let same = object.parents == [base]
            && !object.other_headers
            && super::worktree::is_own_ident(&object.author)
            && super::worktree::is_own_ident(&object.committer)
            && super::object::ident_time(&object.author) == Some(when)
            && (now - WEEK..=now + 300).contains(&when)
            && object.message == super::object::stripspace(&super::message::sanitize(message));
        same.then_some(object.tree)
    }

    /// Replays the commits `base..candidate` one by one onto `tip`, authors kept. `None` when
    /// the history has merges or a single step does not apply cleanly.
    fn replay(&self, base: &str, candidate: &str, tip: &str) -> Result<Option<String>, GitError> {
        let (commits, merges) = self
            .git
            .commits_oldest_first(&format!("{base}..{candidate}"))?;
        if merges || commits.is_empty() {
            return Ok(None);
        }
        let mut current = tip.to_owned();
        for c in &commits {
            match self
                .git
                .merge_tree_from(Some(&format!("{c}^")), &current, c)?
            {
                MergeOutcome::Clean { tree } => {
                    current = self.git.replay_commit(&tree, &current, c)?
                }
                MergeOutcome::Conflict { .. } => return Ok(None),
            }
        }
        Ok(Some(current))
    }

    /// Moves `target` (a branch name) from `onto` to `merged`, a commit whose parent is `onto`.
    /// Re-entrant: a landing whose effect already happened says so. Where the target is
    /// checked out, the checkout moves with it (and its HEAD is the tip); elsewhere the ref
    /// moves by compare-and-swap.
    pub fn land(&self, target: &str, merged: &str, onto: &str) -> Result<Landing, GitError> {
        let refname = format!("refs/heads/{target}");
        let checkout = match checkout_from_files(self.common_dir, target) {
            Some(path) => path,
            None => self
                .git
                .worktree_list()?
                .into_iter()
                .find(|w| w.branch.as_deref() == Some(target) && !w.prunable)
                .map(|w| w.path),
        };
        // A checkout's HEAD names the branch: its commit is the branch's.
        let Some(tip) = self.tip(target)? else {
            return Ok(Landing::Gone);
        };
        // merged's parent is onto, so while the tip is still onto the effect has not happened.
        if tip == merged || (tip != onto && self.git.is_ancestor(merged, &tip)?) {
            return Ok(Landing::AlreadyLanded);
        }
        if tip != onto {
            return Ok(Landing::Moved { tip });
        }
        let Some(checkout) = checkout else {
            return self.compare_and_swap(&refname, target, merged, onto);
        };
        let user = self.git.at(&checkout);
        // git's own fast-forward never moves a file under uncommitted work (it refuses, and
        // leaves everything as it was) and carries edits to other files over: tried first, the
        // checkout's state is asked only when it refuses, to say why.
        let refused = match user.merge_ff_only(merged) {
            Ok(()) => return Ok(Landing::Landed),
            Err(error) => error,
        };
        let dirty = user.dirty_tracked_paths()?;
        // The user's uncommitted edits that the fast-forward would have to move.
        let blocking: Vec<String> = if dirty.is_empty() {
            Vec::new()
        } else {
            let moved: std::collections::HashSet<String> = self
                .git
                .changed_paths(onto, merged)?
                .into_iter()
                .map(|(path, _)| path)
                .collect();
            dirty.into_iter().filter(|p| moved.contains(p)).collect()
        };
        if !blocking.is_empty() && user.tracked_tree_equals(merged)? {
            // Our own fast-forward, interrupted after the files moved: finish it.
            let landing = self.compare_and_swap(&refname, target, merged, onto)?;
            if matches!(landing, Landing::Landed) {
                user.reset_index()?;
            }
            return Ok(landing);
        }
        if self.tip(target)?.as_deref() != Some(onto) {
            return Ok(Landing::Lost {
                why: refused.to_string(),
            });
        }
        if !blocking.is_empty() {
            return Ok(Landing::Dirty {
                checkout,
                paths: blocking,
            });
        }
        Ok(Landing::FastForwardRefused {
            checkout,
            error: refused,
        })
    }

    /// `update-ref refname merged onto`; a refusal is a lost race when the ref moved, else the
    /// ref is stuck.
    fn compare_and_swap(
        &self,
        refname: &str,
        target: &str,
        merged: &str,
        onto: &str,
    ) -> Result<Landing, GitError> {
        Ok(match self.git.cas_ref(refname, merged, onto)? {
            Ok(()) => Landing::Landed,
            Err(why) if self.tip(target)?.as_deref() != Some(onto) => Landing::Lost { why },
            Err(why) => Landing::Stuck { why },
        })
    }
}

/// Where `target` is checked out, read from the worktrees' `HEAD` files as `git worktree list`
/// would say (`Some(None)`: nowhere; a worktree whose directory is gone is not one). `None`
/// where the files cannot say: a reftable repository, a git directory not named `.git` (a
/// separate git dir, a bare repository), an unreadable file.
fn checkout_from_files(common_dir: &Path, target: &str) -> Option<Option<PathBuf>> {
    if common_dir.join("reftable").exists() || common_dir.file_name()? != ".git" {
        return None;
    }
    let config = std::fs::read_to_string(common_dir.join("config")).ok()?;
    let normalized = config.to_ascii_lowercase().replace([' ', '\t'], "");
    if normalized.contains("bare=true") || normalized.contains("worktree=") {
        return None;
    }
    let wanted = format!("ref: refs/heads/{target}");
    let names = |head: &Path| -> Option<bool> {
        Some(std::fs::read_to_string(head).ok()?.trim_end() == wanted)
    };
    if names(&common_dir.join("HEAD"))? {
        return Some(Some(common_dir.parent()?.to_owned()));
    }
    let linked = match std::fs::read_dir(common_dir.join("worktrees")) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
        Err(_) => return None,
    };
    let mut admin: Vec<PathBuf> = linked.flatten().map(|e| e.path()).collect();
    admin.sort();
    for dir in admin {
        if !names(&dir.join("HEAD"))? {
            continue;
        }
        let gitdir = std::fs::read_to_string(dir.join("gitdir")).ok()?;
        // Relative to the admin directory where git wrote it so (`worktree.useRelativePaths`).
        let dot_git = dir.join(gitdir.trim_end());
        if dot_git.exists() {
            return Some(Some(dot_git.parent()?.to_owned()));
        }
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository on `main` with one commit, and `work` (a branch off it that changes `f`).
    struct Repo {
        _dir: tempfile::TempDir,
        root: PathBuf,
        git: Git,
        common: PathBuf,
        base: String,
        candidate: String,
    }

    fn sh(dir: &Path, script: &str) {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap_or_else(|e| panic!("sh: {e}"));
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn repo() -> Repo {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir.path().join("repo");
        std::fs::create_dir(&root).unwrap_or_else(|e| panic!("mkdir: {e}"));
        sh(
            &root,
            "git init -q -b main . && echo a > f && echo b > g && git add . && git commit -qm base \
             && git checkout -q -b work && echo changed > f && git commit -qam work \
             && git checkout -q --detach main",
        );
        let git = Git::new(&root);
        let common = git
            .common_dir()
            .unwrap_or_else(|e| panic!("common dir: {e}"));
        let resolve = |r: &str| {
            git.resolve(r)
                .ok()
                .flatten()
                .unwrap_or_else(|| panic!("resolve {r}"))
        };
        let (base, candidate) = (resolve("main"), resolve("work"));
        Repo {
            _dir: dir,
            root,
            git,
            common,
            base,
            candidate,
        }
    }

    fn ready(prepared: Prepared) -> String {
        match prepared {
            Prepared::Ready { commit, .. } => commit,
            Prepared::Conflict { paths } => panic!("conflict in {paths:?}"),
        }
    }

    #[test]
    fn a_prepared_commit_lands_by_compare_and_swap_and_a_second_landing_sees_it_done()
    -> Result<(), GitError> {
        let r = repo();
        let i = Integrator::new(&r.git, &r.common);
        let merged = ready(i.prepare(&r.base, &r.candidate, &r.base, Strategy::Squash, "m")?);
        assert!(matches!(i.land("main", &merged, &r.base)?, Landing::Landed));
        assert_eq!(i.tip("main")?.as_deref(), Some(merged.as_str()));
        assert!(matches!(
            i.land("main", &merged, &r.base)?,
            Landing::AlreadyLanded
        ));
        Ok(())
    }

    #[test]
    fn a_target_moved_before_the_landing_or_during_it_is_never_overwritten() -> Result<(), GitError>
    {
        let r = repo();
        let i = Integrator::new(&r.git, &r.common);
        let merged = ready(i.prepare(&r.base, &r.candidate, &r.base, Strategy::Squash, "m")?);
        sh(
            &r.root,
            "git checkout -q main && echo c > g && git commit -qam other && git checkout -q --detach",
        );
        let other = i.tip("main")?.unwrap_or_default();
        match i.land("main", &merged, &r.base)? {
            Landing::Moved { tip } => assert_eq!(tip, other),
            l => panic!("{l:?}"),
        }
        // The race itself: the ref moves between reading the tip and swapping it.
        match i.compare_and_swap("refs/heads/main", "main", &merged, &r.base)? {
            Landing::Lost { why } => assert!(!why.is_empty()),
            l => panic!("{l:?}"),
        }
        assert_eq!(i.tip("main")?, Some(other));
        Ok(())
    }

    #[test]
    fn a_ref_that_refuses_to_move_at_the_tip_is_stuck_not_a_lost_race() -> Result<(), GitError> {
        let r = repo();
        let i = Integrator::new(&r.git, &r.common);
        let merged = ready(i.prepare(&r.base, &r.candidate, &r.base, Strategy::Squash, "m")?);
        std::fs::write(r.common.join("refs/heads/main.lock"), "")
            .unwrap_or_else(|e| panic!("lock: {e}"));
        match i.land("main", &merged, &r.base)? {
            Landing::Stuck { why } => assert!(why.contains("lock"), "{why}"),
            l => panic!("{l:?}"),
        }
        assert_eq!(i.tip("main")?, Some(r.base.clone()));
        Ok(())
    }

    #[test]
    fn a_checked_out_target_fast_forwards_unless_its_edits_are_to_the_files_the_work_moves()
    -> Result<(), GitError> {
        let r = repo();
        let i = Integrator::new(&r.git, &r.common);
        let merged = ready(i.prepare(&r.base, &r.candidate, &r.base, Strategy::Squash, "m")?);
        sh(&r.root, "git checkout -q main && echo mine > f");
        match i.land("main", &merged, &r.base)? {
            Landing::Dirty { checkout, paths } => {
                assert_eq!(paths, ["f"]);
                assert_eq!(checkout.canonicalize().ok(), r.root.canonicalize().ok());
            }
            l => panic!("{l:?}"),
        }
        assert_eq!(i.tip("main")?, Some(r.base.clone()));
        // An edit to a file the work does not touch is carried over.
        sh(&r.root, "git checkout -q -- f && echo mine > g");
        assert!(matches!(i.land("main", &merged, &r.base)?, Landing::Landed));
        assert_eq!(i.tip("main")?, Some(merged));
        assert_eq!(
            std::fs::read_to_string(r.root.join("g")).ok().as_deref(),
            Some("mine\n")
        );
        Ok(())
    }

    #[test]
    fn an_interrupted_fast_forward_is_finished_not_taken_for_the_users_edits()
    -> Result<(), GitError> {
        let r = repo();
        let i = Integrator::new(&r.git, &r.common);
        let merged = ready(i.prepare(&r.base, &r.candidate, &r.base, Strategy::Squash, "m")?);
        // The files moved, the ref did not (a kill in the middle of `merge --ff-only`).
        sh(&r.root, "git checkout -q main && echo changed > f");
        assert!(matches!(i.land("main", &merged, &r.base)?, Landing::Landed));
        assert_eq!(i.tip("main")?, Some(merged));
        assert!(r.git.dirty_tracked_paths()?.is_empty());
        Ok(())
    }

    #[test]
    fn the_targets_checkout_is_read_from_the_worktrees_files_as_git_lists_it() {
        let r = repo();
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|e| panic!("{p:?}: {e}"));
        sh(
            &r.root,
            "git checkout -q main && git worktree add -q ../linked work",
        );
        let linked = r
            .root
            .parent()
            .map(|p| p.join("linked"))
            .unwrap_or_default();
        let found = |target: &str| checkout_from_files(&r.common, target);
        assert_eq!(
            found("main").flatten().map(|p| canon(&p)),
            Some(canon(&r.root))
        );
        assert_eq!(
            found("work").flatten().map(|p| canon(&p)),
            Some(canon(&linked))
        );
        assert_eq!(found("elsewhere"), Some(None));
        // A gitdir written relative to the admin directory (`worktree.useRelativePaths`).
        let admin = r.common.join("worktrees/linked");
        std::fs::write(admin.join("gitdir"), "../../../../linked/.git\n")
            .unwrap_or_else(|e| panic!("gitdir: {e}"));
        assert_eq!(
            found("work").flatten().map(|p| canon(&p)),
            Some(canon(&linked))
        );
        // A linked worktree whose directory is gone is nobody's checkout (git: prunable).
        std::fs::remove_dir_all(&linked).unwrap_or_else(|e| panic!("rm: {e}"));
        assert_eq!(found("work"), Some(None));
        let listed = r
            .git
            .worktree_list()
            .unwrap_or_else(|e| panic!("list: {e}"))
            .into_iter()
            .find(|w| w.branch.as_deref() == Some("work"))
            .map(|w| w.prunable);
        assert_eq!(listed, Some(true));
    }

    #[test]
    fn work_that_conflicts_with_a_moved_tip_prepares_nothing() -> Result<(), GitError> {
        let r = repo();
        sh(
            &r.root,
            "git checkout -q main && echo theirs > f && git commit -qam other && git checkout -q --detach",
        );
        let i = Integrator::new(&r.git, &r.common);
        let tip = i.tip("main")?.unwrap_or_default();
        assert_eq!(
            i.prepare(&r.base, &r.candidate, &tip, Strategy::Squash, "m")?,
            Prepared::Conflict {
                paths: vec!["f".into()]
            }
        );
        Ok(())
    }

    #[test]
    fn the_strategies_make_one_commit_a_merge_or_the_replayed_commits() -> Result<(), GitError> {
        let r = repo();
        sh(
            &r.root,
            "git checkout -q main && echo c > g && git commit -qam other && git checkout -q --detach",
        );
        let i = Integrator::new(&r.git, &r.common);
        let tip = i.tip("main")?.unwrap_or_default();
        let parents = |c: &str| -> Result<String, GitError> {
            Ok(r.git
                .run(&["log", "-1", "--format=%P", c])?
                .trim()
                .to_owned())
        };
        for (strategy, want) in [
            (Strategy::Squash, tip.clone()),
            (Strategy::Merge, format!("{tip} {}", r.candidate)),
            (Strategy::Rebase, tip.clone()),
        ] {
            let prepared = i.prepare(&r.base, &r.candidate, &tip, strategy, "m")?;
            let Prepared::Ready { commit, tree } = prepared else {
                panic!("{strategy:?} conflicts");
            };
            assert_eq!(parents(&commit)?, want, "{strategy:?}");
            assert_eq!(tree.is_some(), strategy != Strategy::Rebase, "{strategy:?}");
            let message = r.git.run(&["log", "-1", "--format=%s", &commit])?;
            let own = if strategy == Strategy::Rebase {
                "work"
            } else {
                "m"
            };
            assert_eq!(message.trim(), own, "{strategy:?}");
        }
        Ok(())
    }

    #[test]
    fn onto_an_unmoved_tip_only_nightshifts_own_commit_with_the_same_message_lands_itself()
    -> Result<(), GitError> {
        let r = repo();
        let message = "w: Fix it  \n\nMake f say changed.\n\nNightshift-Attempt: 1\n";
        // nightshift's own commit of the work, on the base, as the engine makes it.
        let own = |at: &str, extra: &str| {
            sh(
                &r.root,
                &format!(
                    "git checkout -q --detach {} && echo {at} > f && git add f && \
                     GIT_AUTHOR_NAME=nightshift GIT_AUTHOR_EMAIL=nightshift@localhost \
                     GIT_COMMITTER_NAME=nightshift GIT_COMMITTER_EMAIL=nightshift@localhost \
                     {extra} git commit -q --no-verify -F - <<'EOF'\n{message}EOF\n",
                    r.base
                ),
            );
            r.git.resolve("HEAD").ok().flatten().unwrap_or_default()
        };
        let i = Integrator::new(&r.git, &r.common);
        let candidate = own("mine", "");
        let tree = r.git.tree_of(&candidate)?;
        assert_eq!(
            i.prepare(&r.base, &candidate, &r.base, Strategy::Squash, message)?,
            Prepared::Ready {
                commit: candidate.clone(),
                tree: Some(tree)
            }
        );
        // Another message, another strategy, a moved tip, another author: a commit of its own.
        for (prepared, why) in [
            (
                i.prepare(&r.base, &candidate, &r.base, Strategy::Squash, "other")?,
                "message",
            ),
            (
                i.prepare(&r.base, &candidate, &r.base, Strategy::Merge, message)?,
                "merge",
            ),
            (
                i.prepare(&r.base, &r.candidate, &r.base, Strategy::Squash, "work")?,
                "author",
            ),
        ] {
            assert_ne!(ready(prepared), candidate, "{why}");
        }
        let ada = own("ada", "GIT_AUTHOR_NAME=Ada");
        assert_ne!(
            ready(i.prepare(&r.base, &ada, &r.base, Strategy::Squash, message)?),
            ada,
            "another author"
        );
        // nightshift's ident and message, but a date of the agent's choosing: squashed anew.
        for date in ["2001-01-01T00:00:00Z", "2099-01-01T00:00:00Z"] {
            let dated = own(
                date,
                &format!("GIT_AUTHOR_DATE={date} GIT_COMMITTER_DATE={date}"),
            );
            assert_ne!(
                ready(i.prepare(&r.base, &dated, &r.base, Strategy::Squash, message)?),
                dated,
                "dated {date}"
            );
        }
        Ok(())
    }
}
