//! Process-level misbehaviours a supervisor must survive: a leaked grandchild in its own
//! session, an ignored SIGTERM, a crash.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{SigHandler, Signal, signal};

/// The orphan's loop. `$1` is the file, `$2` the pause in seconds; `$0` names the process.
const ORPHAN_LOOP: &str = "while :; do echo tick >> \"$1\"; sleep \"$2\"; done";

/// Starts `/bin/sh` appending `tick` to `file` every `interval` until killed, in a new session
/// (`setsid`), so it escapes the caller's process group and is not killed with it. Its cwd is
/// `cwd`, its standard streams are `/dev/null`, and it is never waited for. Returns its pid.
pub fn spawn_orphan(file: &Path, interval: Duration, cwd: &Path) -> std::io::Result<u32> {
    // At least 1ms, so a hand-built zero interval cannot make the loop spin.
    let interval = interval.max(Duration::from_millis(1));
    let seconds = format!("{}.{:03}", interval.as_secs(), interval.subsec_millis());
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(ORPHAN_LOOP)
        .arg("fake-agent-orphan")
        .arg(file)
        .arg(seconds)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure runs in the forked child between fork and exec, where only
    // async-signal-safe functions may be called. It calls setsid(2), which is, and on failure
    // converts the errno into an io::Error (a plain integer, no allocation). It touches no
    // locks and no memory shared with the parent.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    // The child is deliberately leaked: dropping `Child` neither kills nor waits for it.
    let child = command.spawn()?;
    Ok(child.id())
}

/// From now on SIGTERM is ignored by this process (and, inherited through exec, by anything
/// it starts afterwards).
pub fn ignore_sigterm() -> nix::Result<()> {
    // SAFETY: `SigIgn` installs no handler, so no code of ours ever runs in signal context;
    // replacing the process-wide disposition of SIGTERM is exactly the intent.
    unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }.map(drop)
}

/// Dies like a crashing program: `abort()`, so the process ends by SIGABRT (signal 6), with no
/// exit code and no further output. (`raise(SIGKILL)` would look like an external kill, not a
/// crash.) The core-file size limit is set to 0 first so that a crash leaves no core file in
/// the work tree.
pub fn crash() -> ! {
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_CORE) {
        // Best effort: if the limit cannot be lowered, a core file is the lesser evil.
        let _ = setrlimit(Resource::RLIMIT_CORE, 0, hard);
    }
    std::process::abort()
}
