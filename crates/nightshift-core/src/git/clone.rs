//! The attempt's checkout: a detached clone of the user's repository. A repository of its own
//! (its own `.git/config`, no hooks, its own refs, no remote) whose objects are the user's,
//! borrowed read-only through `objects/info/alternates`: what the agent commits lands in the
//! clone's object store, never in the user's, and nothing it does to the clone's git directory
//! reaches the user's repository. nightshift brings results over with a fetch from the user's
//! repository ([`Git::fetch_from_clone`]).
//!
//! The agent owns the clone's git directory, so nightshift trusts none of it: before each of
//! its own git calls in a clone, the configuration is rewritten to the one nightshift wrote,
//! the alternates to the user's object store, and `info/`, `hooks/`, `config.worktree`,
//! `commondir` are removed ([`Pristine`]) — a filter, fsmonitor, hook, attribute or
//! `include.path` the agent planted never runs in nightshift's git.

use std::path::{Path, PathBuf};

use super::cmd::{Git, GitError};

/// What a clone's git directory holds when nightshift made it; restored before each of
/// nightshift's git calls there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pristine {
    /// The clone's `.git`.
    git_dir: PathBuf,
    /// The user's object store.
    objects: PathBuf,
    /// The repository's object format (`sha1`, `sha256`).
    sha256: bool,
}

impl Pristine {
    fn config(&self) -> String {
        if self.sha256 {
            "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tlogallrefupdates = true\n[extensions]\n\tobjectformat = sha256\n".into()
        } else {
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n"
                .into()
        }
    }

    fn alternates(&self) -> String {
        format!("{}\n", self.objects.display())
    }

    /// Puts the clone's git directory back as nightshift made it (what git reads from it
    /// that could run a program, or change what is read from the files, or where objects
    /// come from). Refs, objects, the index and HEAD are the agent's to move.
    pub(crate) fn restore(&self) -> std::io::Result<()> {
        let meta = std::fs::symlink_metadata(&self.git_dir)?;
        if !meta.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is no longer a directory (the agent replaced it)",
                self.git_dir.display()
            )));
        }
        rewrite(&self.git_dir.join("config"), self.config().as_bytes())?;
        rewrite(
            &self.git_dir.join("objects/info/alternates"),
            self.alternates().as_bytes(),
        )?;
        for dir in ["info", "hooks"] {
            let path = self.git_dir.join(dir);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path)?,
                Ok(_) => std::fs::remove_file(&path)?,
                Err(_) => {}
            }
        }
        for file in ["config.worktree", "commondir", "gitdir"] {
            let path = self.git_dir.join(file);
            if std::fs::symlink_metadata(&path).is_ok() {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }
}

/// Writes `bytes` to `path` unless it already holds exactly them (a link or a directory
/// there is replaced).
fn rewrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {
            if std::fs::read(path)? == bytes {
                return Ok(());
            }
        }
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path)?,
        Ok(_) => std::fs::remove_file(path)?,
        Err(_) => {}
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)
}

/// Whether `path` is an attempt clone's checkout rather than a linked worktree of the user's
/// repository (whose admin entry lives in `common_dir/worktrees/<name>`): attempts made before
/// clones keep running as worktrees.
pub fn is_clone(common_dir: &Path, path: &Path) -> bool {
    let legacy = path
        .file_name()
        .is_some_and(|name| common_dir.join("worktrees").join(name).exists());
    !legacy
        && std::fs::symlink_metadata(path.join(".git")).is_ok_and(|m| m.is_dir() && !m.is_symlink())
}

impl Git {
    /// The hardened git for the attempt checkout at `path`: a clone's git directory is put
    /// back as nightshift made it before every call ([`Pristine`]); a legacy worktree is
    /// plain [`Git::at`].
    pub fn checkout_at(&self, common_dir: &Path, path: impl Into<PathBuf>) -> Git {
        let path = path.into();
        if !is_clone(common_dir, &path) {
            return self.at(path);
        }
        let pristine = Pristine {
            git_dir: path.join(".git"),
            objects: common_dir.join("objects"),
            sha256: self.sha256_repo(common_dir),
        };
        self.at(path).with_pristine(pristine)
    }

    /// Whether the user's repository at `common_dir` uses SHA-256 object names (read from its
    /// config file: no git call).
    fn sha256_repo(&self, common_dir: &Path) -> bool {
        std::fs::read_to_string(common_dir.join("config")).is_ok_and(|c| {
            c.lines().any(|l| {
                let l = l.trim().to_ascii_lowercase().replace(' ', "");
                l == "objectformat=sha256"
            })
        })
    }

    /// Creates the attempt's clone at `path` on its own branch `branch` at `base` (a commit of
    /// this repository, whose git directory is `common_dir`), its files checked out. A
    /// leftover at `path` must be gone first.
    pub fn clone_add(
        &self,
        common_dir: &Path,
        path: &Path,
        branch: &str,
        base: &str,
    ) -> Result<(), GitError> {
        let sha256 = self.sha256_repo(common_dir);
        let mut init = vec![
            "init".to_owned(),
            "--quiet".into(),
            // No templates: no hooks, no info/exclude the user's global template would add.
            "--template=".into(),
            format!("--initial-branch={branch}"),
        ];
        if sha256 {
            init.push("--object-format=sha256".into());
        }
        init.push(path.to_string_lossy().into_owned());
        self.run(&init)?;
        let clone = self.checkout_at(common_dir, path);
        // The pristine config and alternates are written before the first call in the clone.
        if let Some(p) = clone.pristine() {
            p.restore().map_err(|source| GitError::Spawn {
                args: "init".into(),
                dir: path.to_owned(),
                source,
            })?;
        }
        clone.run(&["update-ref", &format!("refs/heads/{branch}"), base])?;
        clone.run(&["read-tree", "--reset", "-u", "HEAD"])?;
        Ok(())
    }

    /// Brings `clone_ref` of the clone at `clone` into this repository as `local_ref`
    /// (forced: the ref is nightshift's). Only the objects the clone made itself travel.
    pub fn fetch_from_clone(
        &self,
        common_dir: &Path,
        clone: &Path,
        clone_ref: &str,
        local_ref: &str,
    ) -> Result<(), GitError> {
        // upload-pack reads the clone's config: put it back first.
        if let Some(p) = self.checkout_at(common_dir, clone).pristine() {
            p.restore().map_err(|source| GitError::Spawn {
                args: "fetch".into(),
                dir: clone.to_owned(),
                source,
            })?;
        }
        let refspec = format!("+{clone_ref}:{local_ref}");
        self.run(&[
            "-c",
            "protocol.file.allow=always",
            "-c",
            "fetch.fsckObjects=false",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--no-auto-gc",
            "--no-auto-maintenance",
            &clone.to_string_lossy(),
            &refspec,
        ])?;
        Ok(())
    }
}
