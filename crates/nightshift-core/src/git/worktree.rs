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

/// Where attempt branches live: `refs/heads/nightshift/<item>/<n>`.
pub const ATTEMPT_BRANCHES: &str = "refs/heads/nightshift/";
const ATTEMPT_PREFIX: &str = "nightshift/";

fn ident() -> Vec<(&'static str, &'static OsStr)> {
    IDENT.iter().map(|(k, v)| (*k, OsStr::new(*v))).collect()
}

/// Whether a commit's `author` or `committer` value is nightshift's own ident.
pub(super) fn is_own_ident(value: &str) -> bool {
    super::object::ident_is(value, IDENT[0].1, IDENT[1].1)
        && IDENT[0].1 == IDENT[2].1
        && IDENT[1].1 == IDENT[3].1
}

/// The last few `diff --raw` answers between two commits, by (from, to).
type RecentDiffs = Vec<((String, String), Vec<RawChange>)>;

/// One path of `git diff --raw`: its mode in the newer commit and its status letter.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RawChange {
    path: String,
    new_mode: String,
    status: String,
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
        Ok(self
            .raw_diff(from, to)?
            .iter()
            .map(|c| (c.path.clone(), c.status.starts_with('D')))
            .collect())
    }

    /// `diff --raw` between two commits, renames split. Between two commits named by their
    /// full object names in an attempt's clone (where replace refs are never read, git/cmd.rs)
    /// the answer cannot change, so the last few are kept: the commit step's gitlink check and
    /// the guards ask the same question of the same two commits.
    fn raw_diff(&self, from: &str, to: &str) -> Result<Vec<RawChange>, GitError> {
        static RECENT: std::sync::Mutex<RecentDiffs> = std::sync::Mutex::new(Vec::new());
        let full =
            |s: &str| (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit());
        let cacheable = self.pristine().is_some() && full(from) && full(to);
        let key = (from.to_owned(), to.to_owned());
        if cacheable
            && let Ok(recent) = RECENT.lock()
            && let Some((_, changes)) = recent.iter().find(|(k, _)| *k == key)
        {
            return Ok(changes.clone());
        }
        let out = self.run(&[
            "diff",
            "--raw",
            "-z",
            "--no-renames",
            "--no-abbrev",
            from,
            to,
        ])?;
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            let mut parts = meta.trim_start_matches(':').split(' ');
            let new_mode = parts.nth(1).unwrap_or_default().to_owned();
            let status = parts.nth(2).unwrap_or_default().to_owned();
            changes.push(RawChange {
                path: path.to_owned(),
                new_mode,
                status,
            });
        }
        if cacheable && let Ok(mut recent) = RECENT.lock() {
            if recent.len() >= 8 {
                recent.remove(0);
            }
            recent.push((key, changes.clone()));
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
        self.stage_and_commit_env(message, &[])
    }

    /// [`Git::stage_and_commit`] with extra environment (another object directory).
    pub(super) fn stage_and_commit_env(
        &self,
        message: &str,
        env: &[(&str, &OsStr)],
    ) -> Result<(), GitError> {
        self.run_env(&["add", "--all"], env)?;
        let message = super::message::sanitize(message);
        let mut with_ident = ident();
        with_ident.extend_from_slice(env);
        let out = self.output_with_input(
            &["commit", "--quiet", "--no-verify", "-F", "-"],
            &with_ident,
            Some(message.as_bytes()),
        )?;
        if out.code != 0 {
            // Nothing staged is fine (the work may already be committed); anything else is not.
            let staged = self.output(&["diff", "--cached", "--quiet"], env)?;
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
            // A nested repository would be a gitlink to commits that exist nowhere else (or
            // fail `add` when it has none): its files are preserved as plain files instead.
            let mut nested = self.nested_repositories()?;
            // Gitlinks HEAD holds to commits this repository lacks (an agent committed a
            // nested repository): their checkouts' files are what can be kept.
            let staged = self.run_env(&["ls-files", "--stage", "-z"], &env_index)?;
            for entry in staged.split('\0') {
                let Some((meta, path)) = entry.split_once('\t') else {
                    continue;
                };
                let mut meta = meta.split(' ');
                if meta.next() != Some("160000") {
                    continue;
                }
                let oid = meta.next().unwrap_or_default();
                let known = self
                    .output(&["cat-file", "-e", &format!("{oid}^{{commit}}")], &[])?
                    .code
                    == 0;
                if !known && self.dir().join(path).join(".git").exists() {
                    self.run_env(&["update-index", "--force-remove", "--", path], &env_index)?;
                    nested.push(format!("{path}/"));
                }
            }
            let mut add: Vec<String> = vec!["add".into(), "--all".into()];
            if !nested.is_empty() {
                add.extend(["--".into(), ".".into()]);
                add.extend(nested.iter().map(|n| format!(":(exclude,literal){n}")));
            }
            self.run_env(&add, &env_index)?;
            for dir in &nested {
                self.add_as_plain_files(dir, &env_index)?;
            }
            let tree = self.run_env(&["write-tree"], &env_index)?.trim().to_owned();
            let mut args = vec!["commit-tree".to_owned(), tree, "-p".into(), head.clone()];
            if let Some(extra) = extra_parent.filter(|p| *p != head) {
                args.push("-p".into());
                args.push(extra.to_owned());
            }
            args.extend(["-F".into(), "-".into()]);
            let message = super::message::sanitize(message);
            Ok(self
                .run_input(&args, &ident(), Some(message.as_bytes()))?
                .trim()
                .to_owned())
        })();
        let _ = std::fs::remove_file(scratch_index);
        result
    }

    /// Untracked, not ignored directories of this worktree that hold a repository of their
    /// own (a `.git` directory or file: an agent's `git init` or `git clone`), `/`-terminated
    /// and relative to the worktree. `git add --all` fails on one without a commit and
    /// records one with a commit as a gitlink to commits that exist nowhere else.
    pub fn nested_repositories(&self) -> Result<Vec<String>, GitError> {
        if !may_hold_a_repository(self.dir()) {
            return Ok(Vec::new());
        }
        let out = self.run(&["ls-files", "--others", "--exclude-standard", "-z"])?;
        Ok(out
            .split('\0')
            .filter(|p| p.ends_with('/'))
            .map(str::to_owned)
            .collect())
    }

    /// The gitlinks (submodule entries, mode 160000) that `to` adds or changes against
    /// `from`: commits another repository holds, which nightshift never ships unless it got
    /// them from the base tree.
    pub fn new_gitlinks(&self, from: &str, to: &str) -> Result<Vec<String>, GitError> {
        Ok(self
            .raw_diff(from, to)?
            .into_iter()
            .filter(|c| c.new_mode == "160000")
            .map(|c| c.path)
            .collect())
    }

    /// Adds the files of the nested repository at `dir` (relative, `/`-terminated) to the
    /// index `env_index` names as plain files: what its own git lists as tracked or
    /// untracked-not-ignored, its `.git` left out, repositories nested in it likewise.
    fn add_as_plain_files(&self, dir: &str, env_index: &[(&str, &OsStr)]) -> Result<(), GitError> {
        let nested = self.at(self.dir().join(dir));
        let listed = nested.run(&[
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ])?;
        let mut files = Vec::new();
        let mut links: Vec<(String, String)> = Vec::new();
        for entry in listed.split('\0').filter(|e| !e.is_empty()) {
            let path = format!("{dir}{entry}");
            if entry.ends_with('/') {
                self.add_as_plain_files(&path, env_index)?;
                continue;
            }
            // Listed from the index but deleted, or a name git's line protocol cannot carry.
            let Ok(meta) = std::fs::symlink_metadata(self.dir().join(&path)) else {
                continue;
            };
            if path.contains('\n') || !(meta.is_file() || meta.is_symlink()) {
                continue;
            }
            if meta.is_symlink() {
                // A link's blob is its target, which `--stdin-paths` would follow.
                let Ok(target) = std::fs::read_link(self.dir().join(&path)) else {
                    continue;
                };
                let target = std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec();
                let blob = self.run_input(&["hash-object", "-w", "--stdin"], &[], Some(&target))?;
                links.push((path, blob.trim().to_owned()));
                continue;
            }
            let mode = if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0
            {
                "100755"
            } else {
                "100644"
            };
            files.push((path, mode));
        }
        if files.is_empty() && links.is_empty() {
            return Ok(());
        }
        let mut info = Vec::new();
        for (path, blob) in &links {
            info.extend_from_slice(format!("120000 {blob}\t{path}").as_bytes());
            info.push(0);
        }
        let mut paths = String::new();
        for (path, _) in &files {
            paths.push_str(path);
            paths.push('\n');
        }
        let blobs = if files.is_empty() {
            String::new()
        } else {
            self.run_input(
                &["hash-object", "-w", "--no-filters", "--stdin-paths"],
                &[],
                Some(paths.as_bytes()),
            )?
        };
        for ((path, mode), blob) in files.iter().zip(blobs.lines()) {
            info.extend_from_slice(format!("{mode} {blob}\t{path}").as_bytes());
            info.push(0);
        }
        self.run_input(
            &["update-index", "-z", "--add", "--index-info"],
            env_index,
            Some(&info),
        )?;
        Ok(())
    }

    /// The user's branches that would block nightshift's attempt branches
    /// (`nightshift/<item>/<n>`): a branch named `nightshift` (git cannot have both
    /// `refs/heads/nightshift` and `refs/heads/nightshift/…`, a directory/file conflict) and a
    /// branch `nightshift/<item>` for any of `items`. Short names, sorted.
    pub fn attempt_branch_blockers(&self, items: &[&str]) -> Result<Vec<String>, GitError> {
        let refs = self.refs_under(&[ATTEMPT_BRANCHES.trim_end_matches('/')])?;
        Ok(refs
            .iter()
            .filter_map(|r| r.strip_prefix("refs/heads/"))
            .filter(|name| {
                *name == "nightshift"
                    || name
                        .strip_prefix(ATTEMPT_PREFIX)
                        .is_some_and(|rest| items.contains(&rest))
            })
            .map(str::to_owned)
            .collect())
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
        args.extend(["-F".into(), "-".into()]);
        let message = super::message::sanitize(message);
        Ok(self
            .run_input(&args, &ident(), Some(message.as_bytes()))?
            .trim()
            .to_owned())
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
            .run_input(
                &["commit-tree", tree, "-p", parent, "-F", "-"],
                &env,
                Some(super::message::sanitize(&message).as_bytes()),
            )?
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
        // `merge -F` reads no stdin; sanitized, the message is below the argument limit.
        let message = super::message::sanitize(message);
        let out = self.output(
            &[
                "merge",
                "--no-ff",
                "--no-commit",
                "--no-verify",
                "-m",
                &message,
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

    /// Deletes the refs `names` (full names) in one transaction, a missing one being fine.
    pub fn delete_refs(&self, names: &[String]) -> Result<(), GitError> {
        self.update_refs(&[], names)
    }

    /// Points each ref of `set` (full name, commit) at its commit and deletes the refs
    /// `delete` (a missing one being fine), all in one transaction: all happen or none.
    pub fn update_refs(&self, set: &[(&str, &str)], delete: &[String]) -> Result<(), GitError> {
        let mut commands: String = set
            .iter()
            .map(|(name, commit)| format!("update {name} {commit}\n"))
            .collect();
        commands.extend(delete.iter().map(|n| format!("delete {n}\n")));
        self.run_input(&["update-ref", "--stdin"], &[], Some(commands.as_bytes()))?;
        Ok(())
    }
}

/// Entries [`may_hold_a_repository`] reads before it leaves the answer to git.
const MAX_WALKED: usize = 200_000;

/// Whether some directory below `root` (not `root` itself) has an entry named `.git`: without
/// one there is no nested repository, and `ls-files --others` (which walks the same tree, and
/// more slowly) need not be asked. Links are not followed (git does not either); an unreadable
/// directory, or a tree of more than [`MAX_WALKED`] entries, says "maybe".
fn may_hold_a_repository(root: &Path) -> bool {
    let mut dirs = vec![(root.to_owned(), true)];
    let mut walked = 0;
    while let Some((dir, top)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return true;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                return true;
            };
            walked += 1;
            if walked > MAX_WALKED {
                return true;
            }
            let name = entry.file_name();
            if name == ".git" {
                if top {
                    continue;
                }
                return true;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => dirs.push((entry.path(), false)),
                Ok(_) => {}
                Err(_) => return true,
            }
        }
    }
    false
}
