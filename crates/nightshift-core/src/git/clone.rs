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

use std::ffi::OsStr;
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
        // `shallow` would cut the history nightshift's own git reads (and travel in a fetch).
        for file in ["config.worktree", "commondir", "gitdir", "shallow"] {
            let path = self.git_dir.join(file);
            if std::fs::symlink_metadata(&path).is_ok() {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }
}

/// The loose ref file of the branch the clone's HEAD names, when HEAD is a plain file naming a
/// branch whose ref is a plain file holding `base`, with no link on the way (a link would make
/// nightshift read, and then write, a file outside the clone). A loose ref is what git reads
/// before `packed-refs`, so git agrees that HEAD is `base`.
fn branch_file_at(git_dir: &Path, base: &str) -> Option<PathBuf> {
    let plain = |path: &Path| -> Option<String> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() || meta.len() > 4096 {
            return None;
        }
        std::fs::read_to_string(path).ok()
    };
    let head = plain(&git_dir.join("HEAD"))?;
    let name = head.strip_prefix("ref: ")?.strip_suffix('\n')?;
    let rest = name.strip_prefix("refs/heads/")?;
    if rest
        .split('/')
        .any(|c| c.is_empty() || c.starts_with('.') || c.ends_with(".lock"))
        || name.contains(['\\', ' ', '\0', ':', '~', '^', '?', '*', '['])
    {
        return None;
    }
    let mut dir = git_dir.to_owned();
    let mut parts: Vec<&str> = name.split('/').collect();
    let file = parts.pop()?;
    for part in parts {
        dir.push(part);
        if !super::pool::real_dir(&dir) {
            return None;
        }
    }
    let path = dir.join(file);
    (plain(&path)?.trim_end() == base).then_some(path)
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
        let clone = self.clone_init(common_dir, path, branch, base)?;
        clone.run(&["read-tree", "--reset", "-u", "HEAD"])?;
        Ok(())
    }

    /// The git directory of a clone at `path` as nightshift makes it, written without running
    /// git (what `git init --template=` writes, then [`Pristine`]): `HEAD` on `branch`, its
    /// pristine config and alternates, empty `objects/` and `refs/`, and `branch` at `base`
    /// (a loose ref: the clone's refs are files). Returns the git of the clone. The `.git`
    /// must not exist.
    fn clone_init(
        &self,
        common_dir: &Path,
        path: &Path,
        branch: &str,
        base: &str,
    ) -> Result<Git, GitError> {
        let git_dir = path.join(".git");
        let made = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(path)?;
            std::fs::create_dir(&git_dir)?;
            for dir in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
                std::fs::create_dir_all(git_dir.join(dir))?;
            }
            std::fs::write(git_dir.join("HEAD"), format!("ref: refs/heads/{branch}\n"))?;
            let branch_ref = git_dir.join("refs/heads").join(branch);
            if let Some(parent) = branch_ref.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(branch_ref, format!("{base}\n"))
        })();
        let clone = self.checkout_at(common_dir, path);
        // The pristine config and alternates are written before the first call in the clone.
        let made = made.and_then(|()| clone.pristine().map_or(Ok(()), Pristine::restore));
        made.map_err(|source| GitError::Spawn {
            args: "init".into(),
            dir: path.to_owned(),
            source,
        })?;
        Ok(clone)
    }

    /// Makes the used clone at `path` (taken from the pool, see [`super::pool`]) exactly what
    /// [`Git::clone_add`] makes, trusting nothing the previous attempt left in it:
    ///
    /// 1. `path` and its `.git` must be directories, not links (else an error: the caller
    ///    deletes the clone);
    /// 2. its `.git` is deleted whole (config, alternates, hooks, `info/`, refs, reflogs,
    ///    `packed-refs`, `refs/replace`, `shallow`, grafts, its own objects, commit-graph,
    ///    index) and made again as a fresh clone's ([`Git::clone_init`]);
    /// 3. `index` — nightshift's copy of the index as the clone's last reset left it, kept
    ///    out of the agent's reach — is installed with its own mtime (git's racy-entry rule
    ///    then re-reads any file written in the second the copy was taken), unless the
    ///    attributes files differ between it and `base` (a file checked out under other
    ///    attributes would not be written again);
    /// 4. `clean -ffdx` (untracked and ignored files, nested repositories: a planted
    ///    `.gitattributes` would otherwise steer the checkout), `read-tree --reset -u base`
    ///    with ctime and the full stat data trusted (a file the agent touched is written
    ///    again), `clean -ffdx` again;
    /// 5. `status --porcelain --ignored --untracked-files=all` must be empty.
    ///
    /// Without `index` every file is written: the cost of a fresh clone.
    pub fn clone_reset(
        &self,
        common_dir: &Path,
        path: &Path,
        branch: &str,
        base: &str,
        index: Option<&Path>,
    ) -> Result<(), GitError> {
        let io = |what: &str, source: std::io::Error| GitError::Spawn {
            args: format!("reset the reused clone ({what})"),
            dir: path.to_owned(),
            source,
        };
        let git_dir = path.join(".git");
        if !(super::pool::real_dir(path) && super::pool::real_dir(&git_dir)) {
            return Err(io(
                "check",
                std::io::Error::other("the clone or its .git is not a directory"),
            ));
        }
        std::fs::remove_dir_all(&git_dir).map_err(|e| io("delete .git", e))?;
        let clone = self.clone_init(common_dir, path, branch, base)?;
        if let Some(index) = index
            && let Ok(mtime) = std::fs::metadata(index).and_then(|m| m.modified())
        {
            let installed = git_dir.join("index");
            let copied = std::fs::copy(index, &installed).and_then(|_| {
                std::fs::File::options()
                    .write(true)
                    .open(&installed)?
                    .set_modified(mtime)
            });
            let usable = copied.is_ok()
                && clone
                    .run(&[
                        "diff-index",
                        "--cached",
                        "--name-only",
                        base,
                        "--",
                        ":(glob)**/.gitattributes",
                    ])
                    .is_ok_and(|changed| changed.trim().is_empty());
            if !usable {
                let _ = std::fs::remove_file(&installed);
            }
        }
        let strict = [
            "-c",
            "core.trustctime=true",
            "-c",
            "core.checkStat=default",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "core.splitIndex=false",
        ];
        let with = |args: &[&str]| -> Vec<String> {
            strict.iter().chain(args).map(|s| (*s).to_owned()).collect()
        };
        clone.run(&with(&["clean", "-ffdxq"]))?;
        crate::failpoint::hit("pool_reset_cleaned");
        clone.run(&with(&["read-tree", "--reset", "-u", base]))?;
        crate::failpoint::hit("pool_reset_checked_out");
        clone.run(&with(&["clean", "-ffdxq"]))?;
        let left = clone.run(&with(&[
            "status",
            "--porcelain",
            "--ignored",
            "--untracked-files=all",
        ]))?;
        if !left.trim().is_empty() {
            return Err(io(
                "verify",
                std::io::Error::other(format!("the reset left changes: {}", left.trim())),
            ));
        }
        Ok(())
    }

    /// Copies the clone's index at `path` to `to` (written aside, then renamed), for its next
    /// reuse ([`Git::clone_reset`]).
    pub fn save_clone_index(path: &Path, to: &Path) -> std::io::Result<()> {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut tmp = to.as_os_str().to_os_string();
        tmp.push(".tmp");
        std::fs::copy(path.join(".git/index"), &tmp)?;
        std::fs::rename(&tmp, to)
    }

    /// Commits the work of this clone (its git, [`Git::checkout_at`]) straight into the user's
    /// object store, `common_dir/objects`, on `base`: `add --all` and `commit` run with that
    /// store as their only object directory, and the clone's branch moves to the commit as
    /// usual. No fetch is then needed to bring the work over (a fetch from the clone cost as
    /// much as the rest of an item's git calls together, issue 14), and nothing of the clone's
    /// own object store is read: an object the agent planted there is never shipped, and an
    /// index entry naming an object the user's store lacks fails the commit.
    ///
    /// `None` (nothing done) unless the clone is as nightshift left it for the session apart
    /// from its files and index: HEAD its branch, at `base` (both plain files), no merge,
    /// cherry-pick, revert or rebase under way. The caller then commits in the clone and
    /// fetches ([`Git::stage_and_commit`], [`Git::fetch_from_clone`]): the agent's own commits
    /// live only in the clone's store. Otherwise HEAD afterwards: `base` itself when there was
    /// nothing to commit.
    pub fn commit_into_user_store(
        &self,
        common_dir: &Path,
        base: &str,
        message: &str,
    ) -> Result<Option<String>, GitError> {
        let objects = common_dir.join("objects");
        if self.pristine().is_none() || !objects.is_absolute() {
            return Ok(None);
        }
        let git_dir = self.dir().join(".git");
        let Some(branch_ref) = branch_file_at(&git_dir, base) else {
            return Ok(None);
        };
        let busy = [
            "MERGE_HEAD",
            "CHERRY_PICK_HEAD",
            "REVERT_HEAD",
            "rebase-merge",
            "rebase-apply",
            "sequencer",
        ];
        if busy
            .iter()
            .any(|f| std::fs::symlink_metadata(git_dir.join(f)).is_ok())
        {
            return Ok(None);
        }
        // No reflog for nightshift's own commit (a reflog nobody reads is five directories and
        // two files made for every attempt); the agent's own ref updates keep theirs.
        let env = [
            ("GIT_OBJECT_DIRECTORY", objects.as_os_str()),
            ("GIT_CONFIG_COUNT", OsStr::new("1")),
            ("GIT_CONFIG_KEY_0", OsStr::new("core.logAllRefUpdates")),
            ("GIT_CONFIG_VALUE_0", OsStr::new("false")),
        ];
        self.stage_and_commit_env(message, &env)?;
        // HEAD is the branch, a plain file that `commit` rewrote (or left at `base`).
        let head = std::fs::read_to_string(&branch_ref)
            .ok()
            .map(|s| s.trim_end().to_owned())
            .filter(|s| s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit()));
        match head {
            Some(head) => Ok(Some(head)),
            None => Ok(self.resolve("HEAD")?),
        }
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
            // The connectivity check walks from the fetched tip down to what the repository's
            // refs reach; nightshift's own (a preserve ref per finished attempt) are left out of
            // it, or it would read every one of them on every fetch (issue 14).
            "-c",
            "fetch.hideRefs=refs/nightshift/",
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
