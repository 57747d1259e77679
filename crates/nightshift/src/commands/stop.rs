//! `nightshift stop [--graceful]`: ask the engine holding the run lock to stop at a safe point,
//! and wait until it has.

use std::time::{Duration, Instant};

use nightshift_core::halt::ExitClass;
use nightshift_core::store::{LockError, RunLock, read_holder};

use crate::CommandResult;
use crate::cli::StopArgs;
use crate::error::CommandError;

/// How long `stop` waits for the engine to let go of the lock.
const WAIT: Duration = Duration::from_secs(120);

pub fn run(args: &StopArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let lock_path = ws.lock();
    // Whoever holds the lock is the engine; if we can take it, nothing is running.
    match RunLock::acquire(&lock_path, "nightshift stop (probe)") {
        Ok(free) => {
            drop(free);
            // A supervisor waiting out a back-off between engines: tell it not to start another.
            if let Some(pid) = restarting_supervisor(&ws) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
                outln!(
                    "the supervisor (pid {pid}) was between engines; asked it not to start another. `nightshift run` resumes"
                );
                return Ok(0);
            }
            outln!("no run is working in {}", ws.root().display());
            return Ok(0);
        }
        Err(LockError::Held { .. }) => {}
        Err(other) => return Err(CommandError::new(ExitClass::Workspace, other.to_string())),
    }
    let holder = read_holder(&lock_path).unwrap_or_default();
    let pid: i32 = holder
        .strip_prefix("pid ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| {
            CommandError::new(
                ExitClass::Workspace,
                format!("find the running engine: the lock names `{holder}`"),
            )
        })?;
    let signal = if args.graceful {
        nix::sys::signal::Signal::SIGUSR1
    } else {
        nix::sys::signal::Signal::SIGTERM
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("signal the engine (pid {pid}): {e}"),
        )
    })?;
    outln!(
        "asked the run (pid {pid}) to stop{}; waiting",
        if args.graceful {
            " after the step in flight"
        } else {
            ""
        }
    );
    let started = Instant::now();
    while started.elapsed() < WAIT {
        if RunLock::acquire(&lock_path, "nightshift stop (probe)").is_ok() {
            outln!("stopped; `nightshift run` resumes it");
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(CommandError::new(
        ExitClass::Liveness,
        format!(
            "stop the run: pid {pid} still holds the lock after {}s",
            WAIT.as_secs()
        ),
    )
    .hint("it may be finishing a long step; `nightshift status` shows where it is"))
}

/// The pid of a live supervisor that `health.json` says is waiting to restart its engine.
fn restarting_supervisor(ws: &nightshift_core::workspace::Workspace) -> Option<i32> {
    use nightshift_core::supervise::health;
    let h = health::read(&health::path(ws))?;
    let pid = i32::try_from(h.supervisor_pid).ok()?;
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    (h.state == "restarting" && alive).then_some(pid)
}
