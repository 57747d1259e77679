//! Running one git command, with output, status and a deadline.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::bounded::process::{Bounded, RunError};

/// The deadline for one git call. Generous: it is a hang detector, not a performance bound.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Errors from running git.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("run git {args} in {dir}")]
    Spawn {
        args: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("run git {args} in {dir}: exit {code}: {stderr}")]
    Failed {
        args: String,
        dir: PathBuf,
        code: i32,
        stderr: String,
    },
    #[error("run git {args} in {dir}: no answer within {secs}s, killed")]
    Timeout {
        args: String,
        dir: PathBuf,
        secs: u64,
    },
    #[error("read git's answer to {args}: {what}")]
    Parse { args: String, what: String },
}

/// A git CLI bound to one directory (a repository or one of its worktrees).
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    timeout: Duration,
    /// Set for an attempt clone: its git directory, put back before every call.
    pristine: Option<super::clone::Pristine>,
}

/// What a git call printed, and how it exited.
#[derive(Debug)]
pub(crate) struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Git {
    /// git, run in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            timeout: DEFAULT_TIMEOUT,
            pristine: None,
        }
    }

    /// The directory git runs in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The same git, run in another directory.
    pub fn at(&self, dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            timeout: self.timeout,
            pristine: None,
        }
    }

    /// This git, putting `pristine` back before every call (an attempt clone).
    pub(crate) fn with_pristine(mut self, pristine: super::clone::Pristine) -> Git {
        self.pristine = Some(pristine);
        self
    }

    /// What this git puts back before every call, if it works in an attempt clone.
    pub(crate) fn pristine(&self) -> Option<&super::clone::Pristine> {
        self.pristine.as_ref()
    }

    /// Pushes `refspec` to `remote` (never forced), ended past `timeout` (a remote that never
    /// answers, a credential helper that waits on a person: decision 108). The remote's own
    /// hooks run (nightshift's hooks override is not passed on, since for a local remote it
    /// would reach its receive-pack); the local pre-push hook does not (`--no-verify`).
    pub fn push(&self, remote: &str, refspec: &str, timeout: Duration) -> Result<(), GitError> {
        let args = || format!("push {remote} {refspec}");
        let mut cmd = self.bare_command();
        cmd.args([
            "-c",
            "core.fsmonitor=false",
            "push",
            "--no-verify",
            "--porcelain",
            remote,
            refspec,
        ]);
        // What a refused push says is kept for the journal; a remote's chatter past 64 KiB is not.
        let out = Bounded::new(timeout)
            .stdout(64 * 1024)
            .stderr(64 * 1024)
            .run(cmd)
            .map_err(|e| self.run_error(e, args(), timeout))?;
        if out.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        Err(GitError::Failed {
            args: args(),
            dir: self.dir.clone(),
            code: out.status.code().unwrap_or(-1),
            stderr: text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect::<Vec<_>>()
                .join("; "),
        })
    }

    /// What the bounded runner's failure to run `git <args>` (within `timeout`) is as git's.
    fn run_error(&self, e: RunError, args: String, timeout: Duration) -> GitError {
        match e {
            RunError::Spawn(source) | RunError::Wait(source) => GitError::Spawn {
                args,
                dir: self.dir.clone(),
                source,
            },
            RunError::TimedOut(_) => GitError::Timeout {
                args,
                dir: self.dir.clone(),
                secs: timeout.as_secs(),
            },
        }
    }

    /// git in this directory with a predictable environment: `LC_ALL=C`, no prompts, no
    /// inherited repository overrides, stdin closed, its own process group (a timeout ends git
    /// and anything it started together), output captured.
    fn bare_command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.current_dir(&self.dir)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_COMMON_DIR")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd
    }

    /// git for nightshift's own work — the one hardened git every call nightshift makes in the
    /// user's repository and its attempts goes through: hooks off, no file-system monitor (a
    /// `core.fsmonitor` program an agent planted would run on every status, add and diff), no
    /// background maintenance forked mid-run (it costs time per commit and may repack under a
    /// live worktree), and no signing prompt (unattended, it would fail every commit of the night). What an agent
    /// can still plant in the shared configuration (a clean filter, an `include.path`) is found
    /// by the after-session comparison ([`super::tamper`]) and put back before nightshift's
    /// next git call.
    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = self.bare_command();
        cmd.args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "advice.detachedHead=false",
            "-c",
            "maintenance.auto=false",
            "-c",
            "gc.auto=0",
            "-c",
            "commit.gpgSign=false",
        ])
        .args(args);
        cmd
    }

    /// Runs git and returns its output whatever the exit code.
    pub(crate) fn output<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &OsStr)],
    ) -> Result<Output, GitError> {
        self.output_with_input(args, env, None)
    }

    /// [`Git::output`], with `input` written to git's stdin (then closed): how commit
    /// messages reach git (`-F -`), so that no message is bounded by the argument limit
    /// (`E2BIG` past 128 KiB) or cut by a NUL.
    pub(crate) fn output_with_input<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &OsStr)],
        input: Option<&[u8]>,
    ) -> Result<Output, GitError> {
        let display = || {
            args.iter()
                .map(|a| a.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        if let Some(pristine) = &self.pristine {
            pristine.restore().map_err(|source| GitError::Spawn {
                args: display(),
                dir: self.dir.clone(),
                source,
            })?;
        }
        let mut cmd = self.command(args);
        if self.pristine.is_some() {
            // In an attempt's clone, objects as written, never as its `refs/replace/*` say: the
            // agent's replace ref would make the base look like the attempt to the guards'
            // diffs. (In the user's repository replace refs are the user's, and `replay` checks
            // what the user's git would see.)
            cmd.env("GIT_NO_REPLACE_OBJECTS", "1");
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        // The one bounded runner: git's own process group, killed past the timeout; the
        // answer is whole once its pipes close (by the deadline too). Input is written from a
        // thread: git may answer before it has read everything.
        let mut bounded = Bounded::new(self.timeout).stdout(u64::MAX).stderr(u64::MAX);
        if let Some(input) = input {
            bounded = bounded.input(input);
        }
        let done = bounded
            .run(cmd)
            .map_err(|e| self.run_error(e, display(), self.timeout))?;
        Ok(Output {
            code: done.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&done.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
        })
    }

    /// Runs git; a non-zero exit is an error.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, GitError> {
        self.run_env(args, &[])
    }

    /// Runs git with extra environment; a non-zero exit is an error.
    pub fn run_env<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &OsStr)],
    ) -> Result<String, GitError> {
        self.run_input(args, env, None)
    }

    /// [`Git::run_env`] with `input` on git's stdin.
    pub(crate) fn run_input<S: AsRef<OsStr>>(
        &self,
        args: &[S],
        env: &[(&str, &OsStr)],
        input: Option<&[u8]>,
    ) -> Result<String, GitError> {
        let out = self.output_with_input(args, env, input)?;
        if out.code != 0 {
            return Err(GitError::Failed {
                args: args
                    .iter()
                    .map(|a| a.as_ref().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
                dir: self.dir.clone(),
                code: out.code,
                stderr: out.stderr.trim().to_owned(),
            });
        }
        Ok(out.stdout)
    }

    /// The top-level directory of the repository containing this directory.
    pub fn toplevel(&self) -> Result<PathBuf, GitError> {
        Ok(PathBuf::from(
            self.run(&["rev-parse", "--show-toplevel"])?.trim(),
        ))
    }

    /// The commit `rev` names, or `None` when it names nothing.
    pub fn resolve(&self, rev: &str) -> Result<Option<String>, GitError> {
        let spec = format!("{rev}^{{commit}}");
        let out = self.output(&["rev-parse", "--verify", "--quiet", &spec], &[])?;
        Ok((out.code == 0).then(|| out.stdout.trim().to_owned()))
    }

    /// The commit a fully-qualified ref (`refs/heads/main`) points at, read from the ref files
    /// (loose, then `packed-refs`) under `common_dir` without starting git; git is asked when
    /// the files cannot say (a reftable repository, a symbolic ref, an unreadable file).
    pub fn resolve_ref(
        &self,
        common_dir: &Path,
        refname: &str,
    ) -> Result<Option<String>, GitError> {
        let is_oid = |s: &str| s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !common_dir.join("reftable").exists() {
            match std::fs::read_to_string(common_dir.join(refname)) {
                Ok(text) if is_oid(text.trim()) => return Ok(Some(text.trim().to_owned())),
                Ok(_) => return self.resolve(refname),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match std::fs::read_to_string(common_dir.join("packed-refs")) {
                        Ok(packed) => {
                            let found = packed.lines().find_map(|line| {
                                let (oid, name) = line.split_once(' ')?;
                                (name == refname && is_oid(oid)).then(|| oid.to_owned())
                            });
                            return Ok(found);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                        Err(_) => {}
                    }
                }
                Err(_) => {}
            }
        }
        self.resolve(refname)
    }

    /// The branch checked out here, or `None` on a detached HEAD.
    pub fn current_branch(&self) -> Result<Option<String>, GitError> {
        let out = self.output(&["symbolic-ref", "--quiet", "--short", "HEAD"], &[])?;
        Ok((out.code == 0).then(|| out.stdout.trim().to_owned()))
    }

    /// Whether `ancestor` is an ancestor of (or equal to) `descendant`.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, GitError> {
        let out = self.output(&["merge-base", "--is-ancestor", ancestor, descendant], &[])?;
        match out.code {
            0 => Ok(true),
            1 => Ok(false),
            code => Err(GitError::Failed {
                args: format!("merge-base --is-ancestor {ancestor} {descendant}"),
                dir: self.dir.clone(),
                code,
                stderr: out.stderr.trim().to_owned(),
            }),
        }
    }

    /// The git directory shared by all worktrees (`.git` of the main checkout).
    pub fn common_dir(&self) -> Result<PathBuf, GitError> {
        let out = self.run(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        Ok(PathBuf::from(out.trim()))
    }
}
