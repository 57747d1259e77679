//! Remote closeout: after the local target moves, push it (`[integrate] push`), run the PR
//! command per item, and keep retrying a refused push. A refused push never loses work: the
//! item stays integrated on the local target, and a person is told.

use super::{Engine, EngineError};
use crate::halt::HaltReason;
use crate::notify;
use crate::store::EventKind;

/// How many times a drained run retries a refused push (backing off from `fault_backoff`)
/// before it halts `push_rejected`.
const DRAIN_PUSH_RETRIES: u32 = 5;

impl Engine<'_> {
    /// Pushes the target if any item owes a push. Returns whether nothing is owed any more.
    pub(super) fn push_owed(&mut self) -> Result<bool, EngineError> {
        if !self.config.integrate.push {
            return Ok(true);
        }
        let run_id = self.run_id();
        let owed: Vec<_> = self
            .store
            .items(&run_id)?
            .into_iter()
            .filter(|i| i.push_pending)
            .collect();
        if owed.is_empty() {
            return Ok(true);
        }
        let target = self.run()?.target.clone();
        let remote = self.config.integrate.remote.clone();
        let refspec = format!("refs/heads/{target}:refs/heads/{target}");
        match self
            .git
            .push(&remote, &refspec, self.config.integrate.remote_timeout)
        {
            Ok(()) => {
                for item in &owed {
                    let commit = item.shipped_commit.clone().unwrap_or_default();
                    self.record(EventKind::Pushed {
                        item: item.id.clone(),
                        commit: commit.clone(),
                    })?;
                    PullRequests {
                        ws: &self.ws,
                        clock: self.clock.as_ref(),
                        store: &self.store,
                        config: &self.config,
                        run: self.run.as_ref(),
                    }
                    .open(&item.id, &commit, &target, &remote);
                }
                Ok(true)
            }
            Err(err) => {
                let error = err.to_string();
                let items: Vec<String> = owed.iter().map(|i| i.id.clone()).collect();
                notify::attention(
                    &self.ws,
                    self.clock.as_ref(),
                    &format!(
                        "push to {remote} refused ({}); the work is on the local `{target}`, and the push is retried: {error}",
                        items.join(", ")
                    ),
                );
                self.record(EventKind::PushFailed { items, error })?;
                Ok(false)
            }
        }
    }

    /// When the queue is drained but a push is still owed: retry with back-off, then halt.
    pub(super) fn drain_pushes(&mut self) -> Result<Option<HaltReason>, EngineError> {
        for retry in 0..DRAIN_PUSH_RETRIES {
            if self.push_owed()? {
                return Ok(None);
            }
            let wait = self.config.session.fault_backoff.as_secs_f64() * 2f64.powi(retry as i32);
            let until = self.clock.wall().as_second() + wait.min(600.0).ceil() as i64;
            self.record(EventKind::RunPaused {
                reason: "push refused: retrying".into(),
                until,
            })?;
            if super::safe_point::wait_pause(&self.ws, self.clock.as_ref(), self.run()?, None) {
                self.record(EventKind::RunUnpaused)?;
            }
        }
        if self.push_owed()? {
            Ok(None)
        } else {
            Ok(Some(HaltReason::PushRejected))
        }
    }
}

/// Opens the pull requests of pushed items: `[integrate] pr_command`, with the item's section of
/// the morning report as the body (borrowed from the engine for one use; it never journals).
struct PullRequests<'a> {
    ws: &'a crate::workspace::Workspace,
    clock: &'a dyn crate::clock::Clock,
    store: &'a crate::store::Store,
    config: &'a crate::config::Config,
    run: Option<&'a crate::store::RunRow>,
}

impl PullRequests<'_> {
    /// Runs `[integrate] pr_command` for a pushed item; a failure is a warning, not a stop.
    fn open(&self, item: &str, commit: &str, target: &str, remote: &str) {
        let template = &self.config.integrate.pr_command;
        if template.is_empty() {
            return;
        }
        // The item's section of the morning report, as the PR body: `{body_file}` and
        // NIGHTSHIFT_PR_BODY_FILE name it (an empty file when the report cannot be built).
        let body_file = self.body_file(item);
        let body_path = body_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let argv: Vec<String> = template
            .iter()
            .map(|a| {
                a.replace("{item}", item)
                    .replace("{commit}", commit)
                    .replace("{target}", target)
                    .replace("{remote}", remote)
                    .replace("{branch}", target)
                    .replace("{body_file}", &body_path)
            })
            .collect();
        let mut command = std::process::Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env("NIGHTSHIFT_PR_BODY_FILE", &body_path)
            .current_dir(self.ws.root());
        // Bounded like every short-lived child (decision 108): a `gh` that waits on a login
        // prompt or a dead network is ended at `remote_timeout`, not left to hold the run.
        let timeout = self.config.integrate.remote_timeout;
        let failure = match crate::bounded::process::Bounded::new(timeout)
            .stderr(16 * 1024)
            .linger(std::time::Duration::from_secs(1))
            .run(command)
        {
            Ok(done) if done.status.success() => None,
            Ok(done) => {
                let said = String::from_utf8_lossy(&done.stderr);
                let last = said.lines().rev().find(|l| !l.trim().is_empty());
                Some(match (done.status.code(), last) {
                    (Some(code), Some(line)) => format!("exit {code}: {}", line.trim()),
                    (Some(code), None) => format!("exit {code}"),
                    (None, _) => "ended by a signal".to_owned(),
                })
            }
            Err(err) => Some(err.to_string()),
        };
        if let Some(why) = failure {
            notify::attention(
                self.ws,
                self.clock,
                &format!("{item}: pr_command failed ({why}): {}", argv.join(" ")),
            );
        }
    }

    /// Writes the item's PR body to `.nightshift/pr/<run>/<item>.md`; `None` when it cannot be
    /// written (the command then gets an empty path, and ATTENTION says why).
    fn body_file(&self, item: &str) -> Option<std::path::PathBuf> {
        use crate::report::morning;
        let run = self.run?;
        let body = morning::receipts::load(self.ws, &run.id, None)
            .ok()
            .and_then(|receipts| {
                let caps = morning::Caps {
                    run_tokens: self.config.budget.run_tokens,
                    run_usd: self.config.budget.run_usd,
                };
                morning::build(self.store, run, &receipts, caps).ok()
            })
            .and_then(|report| morning::pr_body(&report, item))
            .unwrap_or_else(|| {
                format!("## nightshift: `{item}`\n\n(the run's report could not be built; `nightshift report` says why)\n")
            });
        let dir = self.ws.dir().join("pr").join(&run.id);
        let path = dir.join(format!("{item}.md"));
        match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, body)) {
            Ok(()) => Some(path),
            Err(e) => {
                notify::attention(
                    self.ws,
                    self.clock,
                    &format!(
                        "{item}: could not write the PR body {}: {e}",
                        path.display()
                    ),
                );
                None
            }
        }
    }
}
