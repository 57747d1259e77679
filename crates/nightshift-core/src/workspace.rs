//! Where things live: the repository root and the `.nightshift/` directory beside it.

use std::path::{Path, PathBuf};

/// The name of nightshift's directory at the repository root.
pub const DIR: &str = ".nightshift";

/// The on-disk layout of one repository's nightshift state.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// The layout for the repository whose top level is `root`.
    pub fn new(root: impl Into<PathBuf>) -> Workspace {
        Workspace { root: root.into() }
    }

    /// The repository's top-level directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `.nightshift/`.
    pub fn dir(&self) -> PathBuf {
        self.root.join(DIR)
    }

    /// The SQLite state database.
    pub fn state_db(&self) -> PathBuf {
        self.dir().join("state.db")
    }

    /// The run lock file.
    pub fn lock(&self) -> PathBuf {
        self.dir().join("lock")
    }

    /// Where attempt worktrees are created. nightshift removes nothing outside it.
    pub fn worktrees(&self) -> PathBuf {
        self.dir().join("worktrees")
    }

    /// Finished attempts' clones kept for reuse (git/pool.rs); nightshift's own, like the
    /// worktrees directory.
    pub fn pool(&self) -> PathBuf {
        self.dir().join("pool")
    }

    /// The worktree of one attempt.
    pub fn worktree(&self, item: &str, attempt: u32) -> PathBuf {
        self.worktrees().join(format!("{item}-{attempt}"))
    }

    /// Raw session output, prompts and check output of one run.
    pub fn logs(&self, run_id: &str) -> PathBuf {
        self.dir().join("logs").join(run_id)
    }

    /// Creates the directories a run writes into.
    pub fn create_dirs(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.worktrees())?;
        crate::sandbox::create_private_dir(&self.dir().join("logs"))
    }

    /// Whether `path` lies inside the worktrees directory (the only place nightshift deletes
    /// directories on its own).
    pub fn owns_worktree_path(&self, path: &Path) -> bool {
        let base = self.worktrees();
        path.starts_with(&base) && path != base
    }
}
