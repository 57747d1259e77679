//! Telling a live run from a dead one (issue 13). The run table says `running` from
//! `run_started` until `run_finished`: through an operator stop, a deadline, a restart storm and
//! a `kill -9` with nobody left to restart. What is true right now is read from the world: the
//! run lock's holder (a live process that holds the `flock`), the engine's heartbeat file (how
//! long since it last beat; a frozen engine does not beat), the journal (a stop since the last
//! open) and the supervisor's `health.json` (a storm).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::clock::Clock;
use crate::halt::HaltReason;
use crate::store::{EventKind, RunRow, Store, StoreError};
use crate::workspace::Workspace;

/// How often the engine beats.
pub const BEAT_EVERY: Duration = Duration::from_secs(5);

/// A heartbeat older than this is stale (`heartbeat_stale`): six missed beats.
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// A supervised engine that is stopped (SIGSTOP) and has not beaten for this long is killed,
/// and the restart policy restarts it: the run resumes. A stale beat of an engine that is not
/// stopped (a suspended machine, which wakes every process at once) is only reported.
pub const FROZEN_KILL_AFTER: Duration = Duration::from_secs(600);

/// How long the engine `pid`, started at `started`, has gone without a beat (its own beats
/// only; before its first one, since its start).
pub fn beat_age(
    ws: &Workspace,
    pid: u32,
    started: jiff::Timestamp,
    now: jiff::Timestamp,
) -> Duration {
    let last = read_beat(ws)
        .filter(|(_, by)| *by == pid)
        .map_or(started, |(at, _)| at.max(started));
    Duration::try_from(now.duration_since(last)).unwrap_or(Duration::ZERO)
}

/// `.nightshift/heartbeat`: the wall time of the engine's last beat (RFC 3339) and its pid.
pub fn beat_path(ws: &Workspace) -> PathBuf {
    ws.dir().join("heartbeat")
}

/// The engine's heartbeat: a thread that writes [`beat_path`] every [`BEAT_EVERY`] until
/// dropped. A thread, so a long session or check never delays it; a frozen process (SIGSTOP,
/// a suspended machine) stops every thread, so the beat goes stale exactly when nothing runs.
pub struct Beat {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Beat {
    pub fn start(ws: &Workspace, clock: Arc<dyn Clock>) -> Beat {
        let stop = Arc::new(AtomicBool::new(false));
        let path = beat_path(ws);
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("heartbeat".into())
            .spawn(move || {
                let pid = std::process::id();
                while !flag.load(Ordering::SeqCst) {
                    write_beat(&path, &clock.wall(), pid);
                    // Short naps, so a drop ends the thread promptly.
                    let mut slept = Duration::ZERO;
                    while slept < BEAT_EVERY && !flag.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(100));
                        slept += Duration::from_millis(100);
                    }
                }
            })
            .ok();
        Beat { stop, handle }
    }
}

impl Drop for Beat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// Best effort, atomically (a temp file, then a rename).
fn write_beat(path: &Path, at: &jiff::Timestamp, pid: u32) {
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, format!("{at} {pid}\n")).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// The last beat: when, and by which engine.
pub fn read_beat(ws: &Workspace) -> Option<(jiff::Timestamp, u32)> {
    let text = std::fs::read_to_string(beat_path(ws)).ok()?;
    let mut words = text.split_whitespace();
    let at = words.next()?.parse().ok()?;
    let pid = words.next()?.parse().ok()?;
    Some((at, pid))
}

/// The engine holding the run lock right now, if any: the pid the lock file names, alive, and
/// (where `/proc/locks` can be read) holding an `flock` on that very file.
pub fn lock_holder(ws: &Workspace) -> Option<u32> {
    let path = ws.lock();
    let pid = crate::store::read_holder(&path)?
        .strip_prefix("pid ")?
        .split_whitespace()
        .next()?
        .parse::<u32>()
        .ok()?;
    let alive = i32::try_from(pid)
        .is_ok_and(|p| nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok());
    if !alive {
        return None;
    }
    match holds_flock(&path, pid) {
        Some(false) => None,
        _ => Some(pid),
    }
}

/// Whether `/proc/locks` shows an `flock` on `path` (by inode); `None` when it cannot tell.
/// The lock's own pid column is not compared: a lock taken before a fork shows the parent.
#[cfg(target_os = "linux")]
fn holds_flock(path: &Path, _pid: u32) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(path).ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    Some(locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 14947 fe:00:5767866 0 EOF`
        fields.get(1) == Some(&"FLOCK")
            && fields
                .get(5)
                .and_then(|dev_ino| dev_ino.rsplit(':').next())
                .and_then(|i| i.parse::<u64>().ok())
                == Some(ino)
    }))
}

#[cfg(not(target_os = "linux"))]
fn holds_flock(_path: &Path, _pid: u32) -> Option<bool> {
    None
}

/// Whether the process is stopped (SIGSTOP, a debugger): state `T` or `t` in `/proc/<pid>/stat`.
pub fn is_frozen(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "T" || state == "t")
}

/// What is true of a run right now.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLife {
    /// `running`, `heartbeat_stale` (an engine holds the lock but has not beaten for
    /// [`STALE_AFTER`]), `stopped` (an operator stop or the deadline; resumable),
    /// `restart_storm`, `dead` (no engine alive and nothing halted it: `kill -9` with no
    /// supervisor), or `finished`.
    pub state: &'static str,
    /// The halt: the run's own once finished; the stop's; `restart_storm`; `heartbeat_stale`.
    pub halt: Option<HaltReason>,
    /// The engine holding the run lock.
    pub engine_pid: Option<u32>,
    /// Seconds since the engine's last beat.
    pub heartbeat_age_s: Option<u64>,
    /// One line for a person: what is going on and what to do.
    pub detail: String,
}

/// Reads what is true of `run` right now (see the module doc).
pub fn run_life(
    ws: &Workspace,
    store: &Store,
    run: &RunRow,
    clock: &dyn Clock,
) -> Result<RunLife, StoreError> {
    let beat_age = read_beat(ws).map(|(at, _)| {
        let age = clock.wall().duration_since(at);
        u64::try_from(age.as_secs()).unwrap_or(0)
    });
    if !run.is_running() {
        return Ok(RunLife {
            state: "finished",
            halt: run.halt_reason.as_deref().and_then(HaltReason::from_name),
            engine_pid: None,
            heartbeat_age_s: None,
            detail: String::new(),
        });
    }
    if let Some(pid) = lock_holder(ws) {
        let frozen = is_frozen(pid);
        let stale = beat_age.is_some_and(|a| a >= STALE_AFTER.as_secs());
        if frozen || stale {
            let age = beat_age.map_or_else(|| "no beat".to_owned(), |a| format!("{a}s"));
            return Ok(RunLife {
                state: "heartbeat_stale",
                halt: Some(HaltReason::HeartbeatStale),
                engine_pid: Some(pid),
                heartbeat_age_s: beat_age,
                detail: format!(
                    "the engine (pid {pid}) holds the run lock but has not beaten for {age}{}",
                    if frozen {
                        "; it is stopped (SIGSTOP?): `kill -CONT` it, or `nightshift stop`"
                    } else {
                        ""
                    }
                ),
            });
        }
        return Ok(RunLife {
            state: "running",
            halt: None,
            engine_pid: Some(pid),
            heartbeat_age_s: beat_age,
            detail: format!("engine pid {pid}"),
        });
    }
    // Nobody holds the lock: why did the run stop?
    let last = store
        .run_events(&run.id, &["run_started", "run_resumed", "run_stopped"])?
        .pop();
    if let Some(EventKind::RunStopped { halt_reason, .. }) = last.map(|e| e.kind) {
        let halt = halt_reason.unwrap_or(HaltReason::OperatorStop);
        return Ok(RunLife {
            state: "stopped",
            halt: Some(halt),
            engine_pid: None,
            heartbeat_age_s: beat_age,
            detail: format!("stopped ({}); `nightshift run` resumes", halt.as_str()),
        });
    }
    let health = super::health::read(&super::health::path(ws))
        .filter(|h| h.run_id.as_deref() == Some(run.id.as_str()));
    if let Some(h) = health.as_ref().filter(|h| h.state == "restart_storm") {
        return Ok(RunLife {
            state: "restart_storm",
            halt: Some(HaltReason::RestartStorm),
            engine_pid: None,
            heartbeat_age_s: beat_age,
            detail: format!(
                "the engine kept dying ({} starts, last: {}); see .nightshift/ATTENTION, fix the cause, then `nightshift run` resumes",
                h.engine_starts,
                h.last_engine_exit.as_deref().unwrap_or("unknown")
            ),
        });
    }
    let last_exit = health
        .as_ref()
        .and_then(|h| h.last_engine_exit.clone())
        .map(|e| format!(" (last engine: {e})"))
        .unwrap_or_default();
    Ok(RunLife {
        state: "dead",
        halt: None,
        engine_pid: None,
        heartbeat_age_s: beat_age,
        detail: format!(
            "no engine is alive and the run did not halt{last_exit}; `nightshift run` resumes it"
        ),
    })
}
