//! Worktree lifecycle and the object-level operations integration needs: create, commit,
//! snapshot (preserve), merge without a checkout, compare-and-swap a ref, tear down.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::cmd::{Git, GitError};

/// The identity nightshift's own commits carry.
const IDENT: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "nightshift"),
    ("GIT_AUTHOR_EMAIL", "nightshift@localhost"),
    ("GIT_COMMITTER_NAME", "nightshift"),
    ("GIT_COMMITTER_EMAIL", "nightshift@localhost"),
];

fn ident() -> Vec<(&'static str, &'static OsStr)> {
    IDENT.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect()
}

/// One entry of `git worktree list --porcelain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    pub path: PathBuf,
    pub head: Option<String>,
    /// The checked-out branch (short name), if not detached.
    pub branch: Option<String>,
    pub prunable: bool,
}

/// The result of merging two commits without touching any checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The merged tree.
    Clean { tree: String },
    /// The paths that conflict.
    Conflict { paths: Vec<String> },
}

impl Git {
    /// Adds a worktree at `path` on a new branch `branch` at `base`, locked with `reason`.
    pub fn worktree_add(
        &self,
        path: &Path,
        branch: &str,
        base: &str,
        reason: &str,
    ) -> Result<(), GitError> {
        let path = path.to_string_lossy();
        self.run(&[
            "worktree", "add", "--quiet", "--lock", "--reason", reason, "-B", branch, &path, base,
        ])?;
        Ok(())
    }

    /// All worktrees of the repository.
    pub fn worktree_list(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        let out = self.run(&["worktree", "list", "--porcelain", "-z"])?;
        let mut list = Vec::new();
        let mut current: Option<WorktreeInfo> = None;
        for field in out.split('\0') {
            if field.is_empty() {
                if let Some(info) = current.take() {
                    list.push(info);
                }
                continue;
            }
            let (key, value) = field.split_once(' ').unwrap_or((field, ""));
            match key {
                "worktree" => {
                    if let Some(info) = current.take() {
                        list.push(info);
                    }
                    current = Some(WorktreeInfo {
                        path: PathBuf::from(value),
                        head: None,
                        branch: None,
                        prunable: false,
                    });
                }
                "HEAD" => {
                    if let Some(info) = current.as_mut() {
                        info.head = Some(value.to_owned());
                    }
                }
                "branch" => {
                    if let Some(info) = current.as_mut() {
                        info.branch = Some(
                            value
                                .strip_prefix("refs/heads/")
                                .unwrap_or(value)
                                .to_owned(),
                        );
                    }
                }
                "prunable" => {
                    if let Some(info) = current.as_mut() {
                        info.prunable = true;
                    }
                }
                _ => {}
            }
        }
        if let Some(info) = current.take() {
            list.push(info);
        }
        Ok(list)
    }

    /// Whether the tracked files of this checkout match its HEAD (untracked files ignored).
    pub fn is_clean_tracked(&self) -> Result<bool, GitError> {
        Ok(self
            .run(&["status", "--porcelain", "-z", "--untracked-files=no"])?
            .is_empty())
    }

    /// The tracked paths of this checkout whose index or file differs from HEAD (both sides of
    /// a staged rename), untracked files ignored.
    pub fn dirty_tracked_paths(&self) -> Result<Vec<String>, GitError> {
        let out = self.run(&["status", "--porcelain", "-z", "--untracked-files=no"])?;
        let mut paths = Vec::new();
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        while let Some(entry) = fields.next() {
            let (Some(status), Some(path)) = (entry.get(..2), entry.get(3..)) else {
                continue;
            };
            paths.push(path.to_owned());
            if status.contains(['R', 'C'])
                && let Some(original) = fields.next()
            {
                paths.push(original.to_owned());
            }
        }
        Ok(paths)
    }

    /// Stages everything in this worktree and commits it as nightshift (hooks off). Returns
    /// HEAD afterwards; commits nothing when there is nothing to commit. (The engine uses
    /// [`Git::stage_and_commit`] and [`Git::head_descending_from`]; this is the tests' shorthand.)
    #[cfg(test)]
    pub fn commit_all(&self, message: &str) -> Result<String, GitError> {
        self.stage_and_commit(message)?;
        self.resolve("HEAD")?.ok_or_else(|| GitError::Parse {
            args: "rev-parse HEAD".into(),
            what: "no HEAD after commit".into(),
        })
    }

    /// The paths that differ between two commits, renames split into a deletion and an
    /// addition: `(path, deleted in `to`)`.
    pub fn changed_paths(&self, from: &str, to: &str) -> Result<Vec<(String, bool)>, GitError> {
        let out = self.run(&["diff", "--name-status", "-z", "--no-renames", from, to])?;
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            changes.push((path.to_owned(), status.starts_with('D')));
        }
        Ok(changes)
    }

    /// The content of `path` at `rev` as text; `None` when absent there or not UTF-8.
    pub fn file_at(&self, rev: &str, path: &str) -> Result<Option<String>, GitError> {
        let out = self.output(&["cat-file", "blob", &format!("{rev}:{path}")], &[])?;
        Ok((out.code == 0).then_some(out.stdout))
    }

    /// The tree id of a commit.
    pub fn tree_of(&self, commit: &str) -> Result<String, GitError> {
        Ok(self
            .run(&["rev-parse", &format!("{commit}^{{tree}}")])?
            .trim()
            .to_owned())
    }

    /// Back to HEAD: tracked edits reverted, untracked files removed (ignored files kept).
    pub fn discard_changes(&self) -> Result<(), GitError> {
        self.run(&["reset", "--quiet", "--hard", "HEAD"])?;
        self.run(&["clean", "-f", "-d", "--quiet"])?;
        Ok(())
    }

    /// Puts `paths` in the index and worktree as they are at `rev` (absent there: removed).
    pub fn restore_paths(&self, rev: &str, paths: &[String]) -> Result<(), GitError> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut args: Vec<&str> = vec![
            "restore",
            "--source",
            rev,
            "--staged",
            "--worktree",
            "--no-overlay",
            "--",
        ];
        args.extend(paths.iter().map(String::as_str));
        self.run(&args)?;
        Ok(())
    }

    /// `add --all` and `commit`, nothing to commit being fine.
    pub fn stage_and_commit(&self, message: &str) -> Result<(), GitError> {
        self.run(&["add", "--all"])?;
        let out = self.output(
            &["commit", "--quiet", "--no-verify", "-m", message],
            &ident(),
        )?;
        if out.code != 0 {
            // Nothing staged is fine (the work may already be committed); anything else is not.
            let staged = self.output(&["diff", "--cached", "--quiet"], &[])?;
            if staged.code != 0 {
                return Err(GitError::Failed {
                    args: "commit".into(),
                    dir: self.dir().to_owned(),
                    code: out.code,
                    stderr: format!("{}{}", out.stderr.trim(), out.stdout.trim()),
                });
            }
        }
        Ok(())
    }

    /// HEAD, and whether `base` is an ancestor of (or equal to) it — in one git call in the
    /// usual case (`rev-list --boundary base..HEAD` lists HEAD first and `-base` as a boundary).
    pub fn head_descending_from(&self, base: &str) -> Result<(String, bool), GitError> {
        let out = self.run(&["rev-list", "--boundary", &format!("{base}..HEAD")])?;
        let mut head = None;
        let mut base_is_boundary = false;
        for line in out.lines() {
            match line.strip_prefix('-') {
                Some(boundary) => base_is_boundary |= boundary == base,
                None => {
                    head.get_or_insert_with(|| line.to_owned());
                }
            }
        }
        match head {
            Some(head) => Ok((head, base_is_boundary)),
            // Nothing in base..HEAD: HEAD is base, or an ancestor of it (history rewritten).
            None => {
                let head = self.resolve("HEAD")?.ok_or_else(|| GitError::Parse {
                    args: "rev-parse HEAD".into(),
                    what: "no HEAD".into(),
                })?;
                let descends = head == base;
                Ok((head, descends))
            }
        }
    }

    /// A commit holding the whole working tree of this worktree, untracked files included
    /// (ignored ones are not), whose parents are HEAD and `extra_parent` (when it differs).
    /// The worktree, its index and its branch are not touched: the snapshot is built in the
    /// scratch index file `scratch_index`, which is removed afterwards.
    pub fn snapshot(
        &self,
        message: &str,
        extra_parent: Option<&str>,
        scratch_index: &Path,
    ) -> Result<String, GitError> {
        let head = self.resolve("HEAD")?.ok_or_else(|| GitError::Parse {
            args: "rev-parse HEAD".into(),
            what: "the worktree has no HEAD".into(),
        })?;
        let _ = std::fs::remove_file(scratch_index);
        let env_index = [("GIT_INDEX_FILE", scratch_index.as_os_str())];
        let result = (|| {
            self.run_env(&["read-tree", "HEAD"], &env_index)?;
            self.run_env(&["add", "--all"], &env_index)?;
            let tree = self.run_env(&["write-tree"], &env_index)?.trim().to_owned();
            let mut args = vec!["commit-tree".to_owned(), tree, "-p".into(), head.clone()];
            if let Some(extra) = extra_parent.filter(|p| *p != head) {
                args.push("-p".into());
                args.push(extra.to_owned());
            }
            args.push("-m".into());
            args.push(message.to_owned());
            Ok(self.run_env(&args, &ident())?.trim().to_owned())
        })();
        let _ = std::fs::remove_file(scratch_index);
        result
    }

    /// Points `name` at `commit` unconditionally (for nightshift's own refs).
    pub fn set_ref(&self, name: &str, commit: &str) -> Result<(), GitError> {
        self.run(&["update-ref", name, commit])?;
        Ok(())
    }

    /// Moves `name` to `new` only if it is still at `expected_old` (compare-and-swap).
    /// A refusal leaves git's reason in the error; the caller tells a lost race (the ref moved)
    /// from a stuck one (a stale `.lock`, permissions) by reading the ref again.
    pub fn cas_ref(
        &self,
        name: &str,
        new: &str,
        expected_old: &str,
    ) -> Result<Result<(), String>, GitError> {
        let out = self.output(&["update-ref", name, new, expected_old], &[])?;
        Ok(if out.code == 0 {
            Ok(())
        } else {
            Err(out.stderr.trim().to_owned())
        })
    }

    /// The names of refs under the given prefixes (e.g. `refs/nightshift/preserve/x/`).
    pub fn refs_under(&self, prefixes: &[&str]) -> Result<Vec<String>, GitError> {
        let mut args = vec!["for-each-ref", "--format=%(refname)"];
        args.extend_from_slice(prefixes);
        Ok(self.run(&args)?.lines().map(str::to_owned).collect())
    }

    /// Whether the tracked files of this checkout equal `commit`'s tree.
    pub fn tracked_tree_equals(&self, commit: &str) -> Result<bool, GitError> {
        Ok(self.output(&["diff", "--quiet", commit, "--"], &[])?.code == 0)
    }

    /// Resets the index to HEAD, leaving the files alone (`reset --mixed`).
    pub fn reset_index(&self) -> Result<(), GitError> {
        self.run(&["reset", "--quiet", "--mixed"])?;
        Ok(())
    }

    /// Merges `theirs` into `ours` without touching any checkout.
    pub fn merge_tree(&self, ours: &str, theirs: &str) -> Result<MergeOutcome, GitError> {
        self.merge_tree_from(None, ours, theirs)
    }

    /// Like [`Git::merge_tree`], with an explicit merge base (to replay one commit: its parent).
    pub fn merge_tree_from(
        &self,
        base: Option<&str>,
        ours: &str,
        theirs: &str,
    ) -> Result<MergeOutcome, GitError> {
        let base_arg = base.map(|b| format!("--merge-base={b}"));
        let mut args = vec![
            "merge-tree",
            "--write-tree",
            "-z",
            "--name-only",
            "--no-messages",
        ];
        if let Some(b) = &base_arg {
            args.push(b);
        }
        args.extend([ours, theirs]);
        let out = self.output(&args, &[])?;
        let mut fields = out.stdout.split('\0').filter(|f| !f.is_empty());
        let tree = fields.next().unwrap_or_default().trim().to_owned();
        match out.code {
            0 => Ok(MergeOutcome::Clean { tree }),
            1 => {
                let mut paths: Vec<String> = fields.map(str::to_owned).collect();
                paths.dedup();
                Ok(MergeOutcome::Conflict { paths })
            }
            code => Err(GitError::Failed {
                args: format!("merge-tree --write-tree {ours} {theirs}"),
                dir: self.dir().to_owned(),
                code,
                stderr: out.stderr.trim().to_owned(),
            }),
        }
    }

    /// Creates a commit of `tree` with `parents`, as nightshift.
    pub fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, GitError> {
        let mut args = vec!["commit-tree".to_owned(), tree.to_owned()];
        for p in parents {
            args.push("-p".into());
            args.push((*p).to_owned());
        }
        args.push("-m".into());
        args.push(message.to_owned());
        Ok(self.run_env(&args, &ident())?.trim().to_owned())
    }

    /// The commits of `range` oldest first, and whether any of them is a merge.
    pub fn commits_oldest_first(&self, range: &str) -> Result<(Vec<String>, bool), GitError> {
        let out = self.run(&["rev-list", "--reverse", "--parents", range])?;
        let mut commits = Vec::new();
        let mut merges = false;
        for line in out.lines() {
            let mut ids = line.split(' ');
            if let Some(c) = ids.next() {
                commits.push(c.to_owned());
                merges |= ids.count() > 1;
            }
        }
        Ok((commits, merges))
    }

    /// Creates a commit of `tree` on `parent` carrying `original`'s message and author (a
    /// replayed commit); nightshift is the committer.
    pub fn replay_commit(
        &self,
        tree: &str,
        parent: &str,
        original: &str,
    ) -> Result<String, GitError> {
        let info = self.run(&["log", "-1", "--format=%an%x00%ae%x00%aI%x00%B", original])?;
        let mut parts = info.splitn(4, '\0');
        let (name, email, date, message) = (
            parts.next().unwrap_or("nightshift").to_owned(),
            parts.next().unwrap_or("nightshift@localhost").to_owned(),
            parts.next().unwrap_or("").to_owned(),
            parts.next().unwrap_or("").trim_end().to_owned(),
        );
        let mut env = ident();
        env.retain(|(k, _)| !k.starts_with("GIT_AUTHOR"));
        env.push(("GIT_AUTHOR_NAME", OsStr::new(&name)));
        env.push(("GIT_AUTHOR_EMAIL", OsStr::new(&email)));
        if !date.is_empty() {
            env.push(("GIT_AUTHOR_DATE", OsStr::new(&date)));
        }
        Ok(self
            .run_env(&["commit-tree", tree, "-p", parent, "-m", &message], &env)?
            .trim()
            .to_owned())
    }

    /// Checks out `commit` detached in this worktree, overwriting tracked files.
    /// Forced: leftovers of an earlier check are not work (the work is committed).
    pub fn checkout_detached(&self, commit: &str) -> Result<(), GitError> {
        self.run(&["checkout", "--quiet", "--force", "--detach", commit])?;
        Ok(())
    }

    /// Starts merging `commit` into this worktree's branch without committing, leaving any
    /// conflicts (with markers) for someone to resolve. Returns whether there are conflicts.
    pub fn merge_no_commit(&self, commit: &str, message: &str) -> Result<bool, GitError> {
        let out = self.output(
            &[
                "merge",
                "--no-ff",
                "--no-commit",
                "--no-verify",
                "-m",
                message,
                commit,
            ],
            &ident(),
        )?;
        match out.code {
            0 => Ok(false),
            1 => Ok(true),
            code => Err(GitError::Failed {
                args: format!("merge --no-commit {commit}"),
                dir: self.dir().to_owned(),
                code,
                stderr: out.stderr.trim().to_owned(),
            }),
        }
    }

    /// Whether a merge is in progress here (`MERGE_HEAD` exists).
    pub fn merge_in_progress(&self) -> Result<bool, GitError> {
        Ok(self.resolve("MERGE_HEAD")?.is_some())
    }

    /// `git log --oneline` of `range`, at most `max` commits.
    pub fn log_oneline(&self, range: &str, max: usize) -> Result<String, GitError> {
        self.run(&[
            "log",
            "--oneline",
            "--no-decorate",
            &format!("-{max}"),
            range,
        ])
    }

    /// Fast-forwards the branch checked out here to `commit`, updating the files.
    pub fn merge_ff_only(&self, commit: &str) -> Result<(), GitError> {
        self.run(&["merge", "--quiet", "--ff-only", "--no-verify", commit])?;
        Ok(())
    }

    /// Removes a worktree nightshift made, locked or dirty (its work is preserved before this
    /// is called). The caller handles whatever git leaves behind.
    pub fn worktree_remove(&self, path: &Path) -> Result<(), GitError> {
        let p = path.to_string_lossy();
        self.run(&["worktree", "remove", "--force", "--force", &p])?;
        Ok(())
    }

    /// Forgets worktrees whose directories are gone.
    pub fn worktree_prune(&self) -> Result<(), GitError> {
        self.run(&["worktree", "prune"])?;
        Ok(())
    }

    /// Deletes a local branch (a missing one is not an error).
    pub fn delete_branch(&self, branch: &str) -> Result<(), GitError> {
        self.run(&["update-ref", "-d", &format!("refs/heads/{branch}")])?;
        Ok(())
    }
}
