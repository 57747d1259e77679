//! The command channel, and the way of running a notifier the desktop channel shares: the alert
//! as JSON on stdin, its own process group, ended (SIGKILL to the group) past its timeout.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::bounded::process::Bounded;
use crate::config::CommandChannelConfig;

use super::channel::{ChannelReport, ChannelState};
use super::outbox::Envelope;

/// Inert when the program is a bare name that is not on PATH.
pub(super) fn check(cmd: &CommandChannelConfig) -> ChannelReport {
    let program = cmd.argv.first().map(String::as_str).unwrap_or_default();
    if program.contains('/') {
        return ChannelReport::new(
            ChannelState::Unchecked,
            format!("`{program}` is a path, resolved from the repository root when it runs"),
        );
    }
    match on_path(program) {
        Some(found) => ChannelReport::new(ChannelState::Live, found.display().to_string()),
        None => ChannelReport::new(ChannelState::Inert, format!("`{program}` is not on PATH")),
    }
}

/// Runs the command with the alert JSON on stdin; delivered when it exits 0 in time.
pub(super) fn send(
    cmd: &CommandChannelConfig,
    envelope: &Envelope,
    root: &Path,
) -> Result<String, String> {
    let json = serde_json::to_vec(envelope).map_err(|e| format!("encode the alert: {e}"))?;
    let Some((program, args)) = cmd.argv.split_first() else {
        return Err("the command is empty".into());
    };
    let mut command = Command::new(program);
    command.args(args).current_dir(root);
    run_bounded(command, Some(&json), cmd.timeout)
        .map(|()| format!("`{program}` exited 0"))
        .map_err(|e| format!("`{program}` {e}"))
}

/// Runs `command` with `stdin` (or /dev/null), stdout discarded, stderr kept for the error,
/// through the one bounded runner ([`Bounded`]). `Ok` when it exits 0 within `timeout`;
/// otherwise a fragment saying how it ended.
pub(super) fn run_bounded(
    command: Command,
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> Result<(), String> {
    // A grandchild may still hold stderr: wait for it briefly, never for long.
    let mut bounded = Bounded::new(timeout)
        .stderr(64 * 1024)
        .linger(Duration::from_secs(1));
    if let Some(bytes) = stdin {
        bounded = bounded.input(bytes);
    }
    let done = bounded.run(command).map_err(|e| e.to_string())?;
    let status = done.status;
    if status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&done.stderr);
    let last = stderr.trim().lines().last().unwrap_or_default();
    let how = match status.code() {
        Some(code) => format!("exited {code}"),
        None => format!("was killed ({status})"),
    };
    if last.is_empty() {
        Err(how)
    } else {
        Err(format!(
            "{how}: {}",
            last.chars().take(300).collect::<String>()
        ))
    }
}

/// The first `program` on PATH.
pub(super) fn on_path(program: &str) -> Option<std::path::PathBuf> {
    if program.is_empty() {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
