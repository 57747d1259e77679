//! The one bounded process runner: a short-lived child (git, a notifier, `--version`, a
//! probe of `systemd-inhibit`) run to its end or to a deadline, never longer. The child gets a
//! process group of its own, and past the deadline the whole group is killed (SIGKILL) and
//! reaped. Captured output is capped, read by threads (a child that fills a pipe never blocks
//! on us), and input is written from a thread (a child that never reads its stdin never blocks
//! us). Sessions of agents and checks are `session`'s, with their own grace and sweeps.
//!
//! A descendant may hold a captured pipe after the child exits: by default that pipe must
//! still close by the deadline (git's rule: its answer is only whole at EOF), else the run
//! timed out; [`Bounded::linger`] instead takes what arrived within a short wait.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How to run one child: its deadline, input and what of its output is kept.
#[derive(Debug, Clone)]
pub struct Bounded {
    timeout: Duration,
    input: Option<Vec<u8>>,
    stdout: Option<u64>,
    stderr: Option<u64>,
    linger: Option<Duration>,
}

/// How a child that ended in time ended, and what it printed (as far as kept).
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a child did not end in time, or did not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("could not be started: {0}")]
    Spawn(std::io::Error),
    #[error("could not be waited for: {0}")]
    Wait(std::io::Error),
    #[error("did not finish within {}", crate::config::format_duration(*.0))]
    TimedOut(Duration),
}

impl Bounded {
    /// Ends the child (its process group) once `timeout` has passed. stdin is /dev/null and
    /// the output is discarded unless asked for.
    pub fn new(timeout: Duration) -> Bounded {
        Bounded {
            timeout,
            input: None,
            stdout: None,
            stderr: None,
            linger: None,
        }
    }

    /// Writes `bytes` to the child's stdin, then closes it.
    pub fn input(mut self, bytes: &[u8]) -> Bounded {
        self.input = Some(bytes.to_vec());
        self
    }

    /// Keeps the first `cap` bytes of stdout (the rest is read and dropped).
    pub fn stdout(mut self, cap: u64) -> Bounded {
        self.stdout = Some(cap);
        self
    }

    /// Keeps the first `cap` bytes of stderr (the rest is read and dropped).
    pub fn stderr(mut self, cap: u64) -> Bounded {
        self.stderr = Some(cap);
        self
    }

    /// After the child exits, waits at most `wait` for the captured pipes (a descendant may
    /// hold them) and keeps what arrived, instead of holding them to the deadline.
    pub fn linger(mut self, wait: Duration) -> Bounded {
        self.linger = Some(wait);
        self
    }

    /// Runs `command` to its end or the deadline. Its stdin, stdout, stderr and process group
    /// are set here.
    pub fn run(&self, mut command: Command) -> Result<Finished, RunError> {
        let deadline = Instant::now() + self.timeout;
        let piped = |keep: Option<u64>| {
            if keep.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            }
        };
        command
            .stdin(if self.input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(piped(self.stdout))
            .stderr(piped(self.stderr));
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(RunError::Spawn)?;
        if let (Some(bytes), Some(mut pipe)) = (self.input.clone(), child.stdin.take()) {
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let (done_tx, done_rx) = mpsc::channel();
        let stdout = drain(child.stdout.take(), self.stdout, done_tx.clone());
        let stderr = drain(child.stderr.take(), self.stderr, done_tx);
        let readers = usize::from(stdout.is_some()) + usize::from(stderr.is_some());
        let pgid = child.id();
        let (exit_tx, exit_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = exit_tx.send(child.wait());
        });
        let status = match exit_rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(status) => status.map_err(RunError::Wait)?,
            Err(_) => return Err(self.kill(pgid, &exit_rx)),
        };
        // The pipes: to the deadline (their EOF is part of the answer), or a short linger.
        let until = match self.linger {
            Some(wait) => Instant::now() + wait,
            None => deadline,
        };
        let mut closed = 0;
        while closed < readers {
            match done_rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(()) => closed += 1,
                Err(_) if self.linger.is_some() => break,
                Err(_) => return Err(self.kill(pgid, &exit_rx)),
            }
        }
        Ok(Finished {
            status,
            stdout: stdout.map(take).unwrap_or_default(),
            stderr: stderr.map(take).unwrap_or_default(),
        })
    }

    /// Past the deadline: SIGKILL to the child's group (it leads it, so the group outlives a
    /// child already reaped only as long as a descendant does), and the child reaped.
    fn kill(&self, pgid: u32, exit: &mpsc::Receiver<std::io::Result<ExitStatus>>) -> RunError {
        if let Ok(pgid) = i32::try_from(pgid) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = exit.recv();
        RunError::TimedOut(self.timeout)
    }
}

/// What a reader thread has read so far (all of it once it reported EOF).
type Kept = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// Reads `pipe` to EOF on a thread, keeping the first `cap` bytes; tells `done` at EOF.
fn drain(
    pipe: Option<impl Read + Send + 'static>,
    cap: Option<u64>,
    done: mpsc::Sender<()>,
) -> Option<Kept> {
    let (mut pipe, cap) = (pipe?, cap?);
    let kept = Kept::default();
    let into = kept.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(mut kept) = into.lock() {
                        let room = usize::try_from(cap)
                            .unwrap_or(usize::MAX)
                            .saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    Some(kept)
}

fn take(kept: Kept) -> Vec<u8> {
    kept.lock()
        .map(|mut k| std::mem::take(&mut *k))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    #[test]
    fn a_child_that_ends_in_time_gives_its_status_and_capped_output() -> Result<(), RunError> {
        let done = Bounded::new(Duration::from_secs(30))
            .input(b"hello")
            .stdout(3)
            .stderr(1 << 10)
            .run(sh("cat; echo oops >&2; exit 3"))?;
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stdout, b"hel");
        assert_eq!(done.stderr, b"oops\n");
        Ok(())
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_with_its_group() {
        // The grandchild writes its pid, then both sleep far past the deadline.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 600 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let err = Bounded::new(Duration::from_millis(300))
            .run(sh(&script))
            .expect_err("it sleeps past the deadline");
        assert!(matches!(err, RunError::TimedOut(_)), "{err}");
        assert!(
            err.to_string().starts_with("did not finish within"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(60));
        let pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok());
        if let Some(pid) = pid {
            // Killed with the group: gone, or a zombie until its reaper collects it. A SIGKILL
            // takes effect when the process is next scheduled, so its death is waited for
            // (bounded), not assumed to be instant.
            let state_of = || {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                stat.rsplit(") ").next().and_then(|s| s.chars().next())
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut state = state_of();
            while !matches!(state, None | Some('Z') | Some('X')) && Instant::now() < deadline {
                std::thread::yield_now();
                state = state_of();
            }
            assert!(matches!(state, None | Some('Z') | Some('X')), "{state:?}");
        }
    }

    #[test]
    fn a_descendant_holding_a_pipe_is_a_timeout_unless_the_caller_lingers() {
        // The child exits at once; its background sleeper keeps stderr open.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let pid_file = dir.path().join("pid");
        let script = format!(
            "echo early >&2; sleep 600 >/dev/null & echo $! > {}; exit 0",
            pid_file.display()
        );
        let held = Bounded::new(Duration::from_millis(300))
            .stderr(1 << 10)
            .run(sh(&script));
        assert!(matches!(held, Err(RunError::TimedOut(_))), "{held:?}");
        let lingered = Bounded::new(Duration::from_secs(30))
            .stderr(1 << 10)
            .linger(Duration::from_millis(200))
            .run(sh(&script));
        // Lingering leaves the sleeper alone (the child ended well): end it here.
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let lingered = lingered.unwrap_or_else(|e| panic!("{e}"));
        assert!(lingered.status.success());
        // What the child wrote before it exited, whether or not the reader got to it yet.
        assert!(lingered.stderr.is_empty() || lingered.stderr == b"early\n");
    }

    #[test]
    fn a_program_that_is_not_there_cannot_be_started() {
        let err = Bounded::new(Duration::from_secs(5))
            .run(Command::new("/nonexistent/program"))
            .expect_err("no such program");
        assert!(matches!(err, RunError::Spawn(_)), "{err}");
    }
}
