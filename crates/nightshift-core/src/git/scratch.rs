//! The one scratch checkout: a detached worktree of one commit that nightshift makes for a
//! while and removes on every path out — `accept`'s check of the merged result, a debt
//! review, `replay`'s check, `probe`'s and `doctor`'s runs. (An attempt's checkout is a
//! detached clone instead, `clone.rs`, reused through `pool.rs`: an agent works there for
//! hours, and a worktree shares `.git` with the user's repository.)
//!
//! A scratch checkout lives inside a directory nightshift owns (`owner`: the workspace's
//! `worktrees/` or `scratch/`); only there is anything deleted. A leftover at its path (a
//! process killed before it could clean up) is replaced.

use std::path::{Path, PathBuf};

use super::cmd::{Git, GitError};

/// A detached worktree of `commit`, removed when dropped (or by [`Scratch::remove`], which
/// says what went wrong).
#[derive(Debug)]
pub struct Scratch {
    /// At the repository.
    git: Git,
    owner: PathBuf,
    /// What is removed: the tree itself, or the directory holding it and the caller's files.
    dir: PathBuf,
    tree: PathBuf,
    commit: String,
    removed: bool,
}

/// Why a scratch checkout could not be made or removed.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("prepare {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Scratch {
    /// Checks out `commit` detached at `owner/name`.
    pub fn add(git: &Git, owner: &Path, name: &str, commit: &str) -> Result<Scratch, ScratchError> {
        let dir = owner.join(name);
        Scratch::make(git, owner, dir.clone(), dir, commit)
    }

    /// Checks out `commit` detached at `owner/name/tree`, with `owner/name/` for the caller's
    /// own files beside it ([`Scratch::dir`]: logs), removed with it.
    pub fn add_with_room(
        git: &Git,
        owner: &Path,
        name: &str,
        commit: &str,
    ) -> Result<Scratch, ScratchError> {
        let dir = owner.join(name);
        Scratch::make(git, owner, dir.clone(), dir.join("tree"), commit)
    }

    fn make(
        git: &Git,
        owner: &Path,
        dir: PathBuf,
        tree: PathBuf,
        commit: &str,
    ) -> Result<Scratch, ScratchError> {
        let mut scratch = Scratch {
            git: git.clone(),
            owner: owner.to_owned(),
            dir,
            tree,
            commit: commit.to_owned(),
            removed: true,
        };
        scratch.clear()?;
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| ScratchError::Io { path, source }
        };
        let room = scratch.tree.parent().unwrap_or(&scratch.dir).to_owned();
        std::fs::create_dir_all(&room).map_err(io(&room))?;
        // From here on a half-made checkout is removed on the way out.
        scratch.removed = false;
        let path = scratch.tree.to_string_lossy().into_owned();
        git.run(&["worktree", "add", "--quiet", "--detach", &path, commit])?;
        Ok(scratch)
    }

    /// The checkout.
    pub fn tree(&self) -> &Path {
        &self.tree
    }

    /// The directory removed with the checkout: the checkout itself, or (made by
    /// [`Scratch::add_with_room`]) the one holding it and the caller's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The commit checked out.
    pub fn commit(&self) -> &str {
        &self.commit
    }

    /// git in the checkout.
    pub fn git(&self) -> Git {
        self.git.at(&self.tree)
    }

    /// Copies the gitignored files `seeds` (relative to `root`, as `[worktree] seed`) in and
    /// verifies them; how many were copied.
    pub fn seed(&self, root: &Path, seeds: &[PathBuf]) -> Result<usize, String> {
        super::seed_worktree(root, &self.tree, seeds)
    }

    /// Restores the tracked files to the commit (after a planted mutation).
    pub fn restore(&self) -> Result<(), GitError> {
        self.git()
            .run(&["checkout", "--quiet", "--force", "HEAD", "--", "."])?;
        Ok(())
    }

    /// Removes the checkout now, saying what went wrong (dropping it removes it quietly).
    pub fn remove(mut self) -> Result<(), ScratchError> {
        self.removed = true;
        self.clear()
    }

    /// Removes whatever is at the checkout's place: git's worktree, then (inside `owner`) the
    /// directory, then git's record of it.
    fn clear(&self) -> Result<(), ScratchError> {
        if self.tree.exists() {
            let _ = self.git.worktree_remove(&self.tree);
        }
        if self.dir.exists() && self.dir.starts_with(&self.owner) && self.dir != self.owner {
            std::fs::remove_dir_all(&self.dir).map_err(|source| ScratchError::Io {
                path: self.dir.clone(),
                source,
            })?;
        }
        self.git.worktree_prune()?;
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.clear();
        }
    }
}

/// A name no other process uses: `<label>-<pid>-<nonce>`, which [`remove_stale`] reads back.
pub fn unique_name(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{label}-{}-{nanos:08x}", std::process::id())
}

/// Removes the scratch checkouts under `owner` named by [`unique_name`] whose process is gone
/// (one killed with SIGKILL cannot clean up after itself).
pub fn remove_stale(git: &Git, owner: &Path) {
    let Ok(entries) = std::fs::read_dir(owner) else {
        return;
    };
    let mut removed = false;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.split('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        for tree in [entry.path().join("tree"), entry.path()] {
            if tree.join(".git").exists() {
                let _ = git.worktree_remove(&tree);
            }
        }
        let _ = std::fs::remove_dir_all(entry.path());
        removed = true;
    }
    if removed {
        let _ = git.worktree_prune();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Git, String) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("git init -q -b main . && echo a > f && git add f && git -c user.name=t -c user.email=t@t commit -qm base")
            .current_dir(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap_or_else(|e| panic!("sh: {e}"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let git = Git::new(dir.path());
        let head = git.resolve("HEAD").ok().flatten().unwrap_or_default();
        (dir, git, head)
    }

    fn worktrees(git: &Git) -> usize {
        git.worktree_list().map(|l| l.len()).unwrap_or(0)
    }

    #[test]
    fn a_scratch_checkout_is_the_commit_and_goes_with_its_room_when_dropped()
    -> Result<(), ScratchError> {
        let (dir, git, head) = repo();
        let owner = dir.path().join(".nightshift/scratch");
        let scratch = Scratch::add_with_room(&git, &owner, &unique_name("t"), &head)?;
        assert_eq!(
            scratch.git().resolve("HEAD")?.as_deref(),
            Some(head.as_str())
        );
        assert_eq!(
            std::fs::read_to_string(scratch.tree().join("f"))
                .ok()
                .as_deref(),
            Some("a\n")
        );
        std::fs::write(scratch.dir().join("log"), "x").map_err(|source| ScratchError::Io {
            path: scratch.dir().to_owned(),
            source,
        })?;
        assert_eq!(worktrees(&git), 2);
        let room = scratch.dir().to_owned();
        drop(scratch);
        assert!(!room.exists());
        assert_eq!(worktrees(&git), 1);
        Ok(())
    }

    #[test]
    fn a_leftover_at_the_place_is_replaced_and_remove_says_what_failed() -> Result<(), ScratchError>
    {
        let (dir, git, head) = repo();
        let owner = dir.path().join(".nightshift/worktrees");
        let first = Scratch::add(&git, &owner, "accept-a-1", &head)?;
        std::fs::write(first.tree().join("left"), "over").map_err(|source| ScratchError::Io {
            path: first.tree().to_owned(),
            source,
        })?;
        // A process killed here never drops it.
        std::mem::forget(first);
        let second = Scratch::add(&git, &owner, "accept-a-1", &head)?;
        assert!(!second.tree().join("left").exists());
        assert_eq!(worktrees(&git), 2);
        second.remove()?;
        assert!(!owner.join("accept-a-1").exists());
        assert_eq!(worktrees(&git), 1);
        Ok(())
    }

    #[test]
    fn a_commit_that_cannot_be_checked_out_leaves_nothing_behind() {
        let (dir, git, _) = repo();
        let owner = dir.path().join(".nightshift/worktrees");
        let missing = "0".repeat(40);
        assert!(Scratch::add(&git, &owner, "debt-a-1", &missing).is_err());
        assert!(!owner.join("debt-a-1").exists());
        assert_eq!(worktrees(&git), 1);
    }

    #[test]
    fn only_the_checkouts_of_processes_that_are_gone_are_stale() -> Result<(), ScratchError> {
        let (dir, git, head) = repo();
        let owner = dir.path().join(".nightshift/scratch");
        let live = Scratch::add_with_room(&git, &owner, &unique_name("probe"), &head)?;
        // pid 0 is never a process of ours: its checkout is stale.
        let dead = Scratch::add_with_room(&git, &owner, "probe-0-00000000", &head)?;
        let dead_dir = dead.dir().to_owned();
        std::mem::forget(dead);
        remove_stale(&git, &owner);
        assert!(!dead_dir.exists());
        assert!(live.tree().exists());
        assert_eq!(worktrees(&git), 2);
        Ok(())
    }
}
