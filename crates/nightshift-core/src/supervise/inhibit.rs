//! Keeping the machine awake while a run works (`[run] prevent_sleep`): `systemd-inhibit` on
//! Linux, `caffeinate` on macOS. The inhibitor is held for the supervisor's lifetime (across
//! engine restarts) by a helper process that ends when the supervisor does. When none can be
//! had, the run goes on without, and the reason is reported.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::bounded::process::{Bounded, RunError};

/// A held inhibitor, or why there is none.
#[derive(Debug)]
pub enum Inhibitor {
    Held { how: &'static str, child: Child },
    Unavailable(String),
}

impl Inhibitor {
    /// Takes one for the life of this process.
    pub fn acquire(why: &str) -> Inhibitor {
        let pid = std::process::id().to_string();
        if cfg!(target_os = "macos") {
            return hold(
                "caffeinate",
                Command::new("caffeinate").args(["-i", "-w", &pid]),
            );
        }
        if !cfg!(target_os = "linux") {
            return Inhibitor::Unavailable("no inhibitor is known on this platform".into());
        }
        let base = |cmd: &mut Command| {
            cmd.args([
                "--what=idle:sleep",
                "--who=nightshift",
                &format!("--why={why}"),
                "--mode=block",
            ]);
        };
        // Probe once: without logind (containers, some VMs) it fails at once.
        let mut probe = Command::new("systemd-inhibit");
        base(&mut probe);
        probe.arg("true");
        if let Err(why) = probe_ok(probe) {
            return Inhibitor::Unavailable(why);
        }
        let mut cmd = Command::new("systemd-inhibit");
        base(&mut cmd);
        // `tail --pid` ends when the supervisor does, even if it is killed.
        cmd.args(["tail", &format!("--pid={pid}"), "-f", "/dev/null"]);
        hold("systemd-inhibit", &mut cmd)
    }

    /// A short description for health and stderr.
    pub fn how(&self) -> Option<&'static str> {
        match self {
            Inhibitor::Held { how, .. } => Some(how),
            Inhibitor::Unavailable(_) => None,
        }
    }

    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Inhibitor::Held { .. } => None,
            Inhibitor::Unavailable(why) => Some(why),
        }
    }
}

impl Drop for Inhibitor {
    fn drop(&mut self) {
        if let Inhibitor::Held { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn hold(how: &'static str, cmd: &mut Command) -> Inhibitor {
    match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => Inhibitor::Held { how, child },
        Err(e) => Inhibitor::Unavailable(format!("start {how}: {e}")),
    }
}

/// Runs `cmd` to completion (at most 5 s, the one bounded runner); `Err` says why it is not
/// usable.
fn probe_ok(cmd: Command) -> Result<(), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let done = Bounded::new(Duration::from_secs(5))
        .stderr(64 * 1024)
        .run(cmd)
        .map_err(|e| match e {
            RunError::TimedOut(_) => format!("{program} did not answer within 5 s"),
            RunError::Spawn(e) | RunError::Wait(e) => format!("{program}: {e}"),
        })?;
    if done.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&done.stderr);
    let line = text.lines().next().unwrap_or("").trim().to_owned();
    Err(if line.is_empty() {
        format!("{program} failed ({})", done.status)
    } else {
        format!("{program}: {line}")
    })
}
