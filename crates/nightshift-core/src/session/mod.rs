//! Supervising one process (an agent session or a check): spawn in its own process group with
//! PDEATHSIG, tee its output to a log, enforce a deadline, and leave nothing of its group behind.
//! One `select!` over output, exit and timers, so a stuck pipe can never block a deadline.
//!
//! This room knows nothing about git, items or runs.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

/// How a supervised process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exited 0.
    Completed,
    /// Exited non-zero, or died of a signal we did not send.
    Failed,
    /// Ran past its deadline and was ended.
    Timeout,
    /// Could not be started at all.
    SpawnFailed,
}

/// Everything one supervised process needs.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment on top of the inherited one.
    pub env: Vec<(String, String)>,
    /// Wall-time bound, after which the group gets SIGTERM, then SIGKILL after `kill_grace`.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Where stdout and stderr are teed (appended to, never truncated).
    pub log: PathBuf,
    /// How many trailing bytes of output to keep in memory.
    pub tail_bytes: usize,
}

/// How a process ended, with what it said.
#[derive(Debug, Clone)]
pub struct ProcessEnd {
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration: Duration,
    /// The last `tail_bytes` of stdout and stderr, interleaved as they arrived.
    pub tail: Vec<u8>,
    /// SHA-256 of all output, hex.
    pub output_sha256: String,
    /// Why it could not start, for `SpawnFailed`.
    pub spawn_error: Option<String>,
}

/// Errors that stop supervision itself (not the supervised process's own failures).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("create the session log {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("wait for the supervised process")]
    Wait(#[source] std::io::Error),
}

/// After the process exits, how long its pipes may stay open (held by a leaked descendant)
/// before we stop reading them.
const LEAK_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs one process to its end under supervision.
pub fn run(spec: &ProcessSpec) -> Result<ProcessEnd, SessionError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SessionError::Runtime)?;
    rt.block_on(supervise(spec))
}

struct Collector {
    log: std::fs::File,
    hasher: Sha256,
    tail: VecDeque<u8>,
    tail_bytes: usize,
}

impl Collector {
    fn push(&mut self, bytes: &[u8]) {
        // The log is best effort: a full disk must not kill supervision.
        let _ = self.log.write_all(bytes);
        self.hasher.update(bytes);
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.tail_bytes);
        self.tail.drain(..excess);
    }
}

async fn supervise(spec: &ProcessSpec) -> Result<ProcessEnd, SessionError> {
    // Never truncate an earlier log (a session re-run after a crash keeps the first one).
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&spec.log)
        .map_err(|source| SessionError::Log {
            path: spec.log.clone(),
            source,
        })?;
    let mut sink = Collector {
        log,
        hasher: Sha256::new(),
        tail: VecDeque::new(),
        tail_bytes: spec.tail_bytes,
    };
    let started = Instant::now();
    let Some((program, args)) = spec.argv.split_first() else {
        return Ok(spawn_failed(started, "empty command".into()));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    os::harden(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            sink.push(format!("nightshift: could not start {program}: {err}\n").as_bytes());
            return Ok(spawn_failed(started, format!("{program}: {err}")));
        }
    };
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];

    let deadline = tokio::time::sleep(spec.timeout);
    tokio::pin!(deadline);
    let kill_at = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(kill_at);
    let leak_at = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(leak_at);
    let mut timed_out = false;
    let mut killed = false;
    let mut status = None;

    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            n = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match n {
                Some(n) => sink.push(&out_buf[..n]),
                None => stdout = None,
            },
            n = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match n {
                Some(n) => sink.push(&err_buf[..n]),
                None => stderr = None,
            },
            st = child.wait(), if status.is_none() => {
                status = Some(st.map_err(SessionError::Wait)?);
                // The process is gone; anything left in its group is a leftover. Sweep it, and
                // give pipes held by escaped descendants a bounded time to close.
                signal_group(pgid, Signal::SIGKILL);
                leak_at.as_mut().reset(tokio::time::Instant::now() + LEAK_TIMEOUT);
            },
            () = &mut deadline, if !timed_out && status.is_none() => {
                timed_out = true;
                signal_group(pgid, Signal::SIGTERM);
                kill_at.as_mut().reset(tokio::time::Instant::now() + spec.kill_grace);
            },
            () = &mut kill_at, if timed_out && !killed && status.is_none() => {
                killed = true;
                signal_group(pgid, Signal::SIGKILL);
                // Also the child itself, in case it moved to another process group.
                let _ = child.start_kill();
            },
            () = &mut leak_at, if status.is_some() => {
                sink.push(b"\nnightshift: output pipes still held by a descendant after exit; stopped reading\n");
                break;
            },
        }
    }
    let status = match status {
        Some(st) => st,
        None => child.wait().await.map_err(SessionError::Wait)?,
    };
    use std::os::unix::process::ExitStatusExt;
    let outcome = if timed_out {
        Outcome::Timeout
    } else if status.success() {
        Outcome::Completed
    } else {
        Outcome::Failed
    };
    Ok(ProcessEnd {
        outcome,
        exit_code: status.code(),
        signal: status.signal(),
        duration: started.elapsed(),
        tail: sink.tail.into_iter().collect(),
        output_sha256: hex(&sink.hasher.finalize()),
        spawn_error: None,
    })
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    let pipe = pipe.as_mut()?;
    match pipe.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (the group is already empty) is the expected, good case.
        let _ = killpg(pgid, signal);
    }
}

fn spawn_failed(started: Instant, error: String) -> ProcessEnd {
    ProcessEnd {
        outcome: Outcome::SpawnFailed,
        exit_code: None,
        signal: None,
        duration: started.elapsed(),
        tail: Vec::new(),
        output_sha256: hex(&Sha256::digest(b"")),
        spawn_error: Some(error),
    }
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(target_os = "linux")]
mod os {
    /// Kill the child if the engine dies (PR_SET_PDEATHSIG), so a `kill -9` of the engine does
    /// not leave an agent running unsupervised.
    pub(super) fn harden(cmd: &mut tokio::process::Command) {
        // SAFETY: the closure only calls prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            });
        }
    }

    /// Processes whose current directory lies inside `dir`.
    pub(super) fn processes_with_cwd_under(dir: &std::path::Path) -> Vec<nix::unistd::Pid> {
        let me = std::process::id();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != me)
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .map(|cwd| cwd.starts_with(dir))
                    .unwrap_or(false)
            })
            .map(|pid| nix::unistd::Pid::from_raw(pid as i32))
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub(super) fn harden(_cmd: &mut tokio::process::Command) {}

    pub(super) fn processes_with_cwd_under(_dir: &std::path::Path) -> Vec<nix::unistd::Pid> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests;

/// Sends SIGKILL to every process whose working directory is inside `dir` (Linux: read from
/// `/proc`), then waits, bounded, until none is left (a killed process loses its cwd link once
/// it is a zombie). Returns how many were signalled and whether any survived the wait.
pub fn kill_processes_under(dir: &std::path::Path) -> (usize, bool) {
    const WAIT: Duration = Duration::from_secs(5);
    let signalled = os::processes_with_cwd_under(dir)
        .into_iter()
        .filter(|pid| nix::sys::signal::kill(*pid, Signal::SIGKILL).is_ok())
        .count();
    if signalled == 0 {
        return (0, false);
    }
    let started = Instant::now();
    while started.elapsed() < WAIT {
        if os::processes_with_cwd_under(dir).is_empty() {
            return (signalled, false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (signalled, true)
}
