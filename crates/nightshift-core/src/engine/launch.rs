//! One agent session's process, from its adapter (`[agent] kind`). The engine knows no CLI flag:
//! [`crate::agent::adapter`] does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Engine, EngineError, io_err};
use crate::agent::{Invocation, StreamParser, adapter_for};
use crate::config::AgentConfig;
use crate::git::{ClonePool, Git};
use crate::session::ProcessSpec;

impl Engine<'_> {
    /// Makes the attempt's checkout at `path` (which must not exist): a finished attempt's
    /// clone from the pool, reset to `base` on `branch` ([`Git::clone_reset`]: nothing of its
    /// previous agent is left), or, when the pool has none or its reset fails (or the
    /// repository is too small for the pool to pay, [`crate::git::pool::pool_pays`]), a fresh
    /// clone. Where the pool pays, the index as made is copied out of the agent's reach for
    /// the clone's next reuse.
    pub(super) fn make_checkout(
        &mut self,
        att: &crate::store::AttemptRow,
        path: &Path,
    ) -> Result<(), EngineError> {
        let (branch, base) = (att.branch.as_str(), att.base.as_str());
        let pool = ClonePool::new(self.ws.pool());
        let mut made = false;
        let pooled = crate::git::pool::pool_pays(&self.common_dir);
        if let Some(taken) = pooled.then(|| pool.take(path)).flatten() {
            let reset =
                self.git
                    .clone_reset(&self.common_dir, path, branch, base, taken.index.as_deref());
            match reset {
                Ok(()) => made = true,
                Err(err) => {
                    // Never used as it was: set aside (deleted at the next start, or by
                    // `clean`) and a fresh clone made in its place.
                    let aside = pool.dir().join(format!(
                        "trash-{:020}-{}",
                        self.clock.wall().as_nanosecond(),
                        std::process::id()
                    ));
                    if std::fs::rename(path, &aside).is_err() {
                        std::fs::remove_dir_all(path).map_err(io_err(path))?;
                    }
                    if let Err(e) = std::fs::remove_dir_all(&aside)
                        && aside.exists()
                    {
                        self.record(crate::store::EventKind::TeardownFailed {
                            item: att.item.clone(),
                            attempt: att.attempt,
                            error: format!(
                                "reuse a pooled clone ({err}); a fresh clone is made instead, and deleting the pooled one failed ({e}): it is left at {}",
                                aside.display()
                            ),
                        })?;
                    }
                }
            }
        }
        if !made {
            self.git.clone_add(&self.common_dir, path, branch, base)?;
        }
        match pool.held_index(path) {
            Some(held) if pooled && Git::save_clone_index(path, &held).is_ok() => {}
            _ => pool.drop_held(path),
        }
        Ok(())
    }
}

/// What a session's process is built from, besides the adapter.
pub(super) struct SessionSetup<'a> {
    pub agent: &'a AgentConfig,
    pub prompt_file: &'a Path,
    /// A fresh CLI session id (journaled before launch).
    pub session_id: &'a str,
    /// The CLI session to resume instead.
    pub resume: Option<&'a str>,
    pub cwd: PathBuf,
    /// The engine's `NIGHTSHIFT_*` variables.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub kill_grace: Duration,
    pub log: PathBuf,
    pub tail_bytes: usize,
    /// `[sandbox] require`: refuse to run the agent unconfined.
    pub sandbox_require: bool,
}

/// The process spec of a session.
pub(super) fn spec(s: SessionSetup<'_>) -> ProcessSpec {
    let launch = adapter_for(s.agent.kind).launch(&Invocation {
        agent: s.agent,
        prompt_file: s.prompt_file,
        session_id: s.session_id,
        resume: s.resume,
        confined: crate::sandbox::agents_confined(),
    });
    let mut env = s.env;
    env.extend(launch.env);
    // Confined by the session helper (`nightshift __exec`) where the kernel allows.
    let argv = crate::sandbox::for_agent(s.agent.kind, &s.cwd, &s.log, s.prompt_file)
        .require(s.sandbox_require)
        .wrap(launch.argv);
    ProcessSpec {
        argv,
        cwd: s.cwd,
        env,
        env_allow: launch.env_allow,
        stdin: launch.stdin,
        timeout: s.timeout,
        kill_grace: s.kill_grace,
        log: s.log,
        tail_bytes: s.tail_bytes,
        log_limit: None,
    }
}

/// The parser of this agent's stdout, if it has one.
pub(super) fn parser(agent: &AgentConfig) -> Option<Box<dyn StreamParser>> {
    adapter_for(agent.kind).parser(agent)
}

/// The program the preflight looks for on PATH.
pub(crate) fn program(agent: &AgentConfig) -> Option<String> {
    crate::agent::adapter::program(agent)
}

/// A UUID-shaped CLI session id, unique to one process: the session's coordinates plus the
/// wall clock, this engine's pid and a counter (Claude takes an id once; a rerun of the same
/// iteration needs a new one, or resumes).
pub(super) fn session_uuid(
    run: &str,
    item: &str,
    attempt: u32,
    iteration: u32,
    nudge: u32,
    clock: &dyn crate::clock::Clock,
) -> String {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = clock.wall().as_nanosecond();
    let pid = std::process::id();
    let digest = Sha256::digest(
        format!("{run}/{item}/{attempt}/{iteration}/{nudge}/{now}/{pid}/{n}").as_bytes(),
    );
    let h = crate::session::hex(&digest[..16]);
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_uuid_shaped_and_never_repeat_for_the_same_iteration() {
        let clock = crate::clock::SystemClock;
        let a = session_uuid("r", "i", 1, 1, 0, &clock);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        // The same coordinates (a rerun of the iteration) give a new id.
        assert_ne!(a, session_uuid("r", "i", 1, 1, 0, &clock));
    }
}
