//! The command channel, and the bounded process runner the desktop channel shares: the alert as
//! JSON on stdin, its own process group, ended (SIGKILL to the group) past its timeout.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Runs `command` with `stdin` (or /dev/null), stdout discarded, stderr kept for the error.
/// `Ok` when it exits 0 within `timeout`; otherwise a fragment saying how it ended.
pub(super) fn run_bounded(
    mut command: Command,
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> Result<(), String> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("could not be started: {e}"))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // A program that does not read its stdin must not block us: write from a thread.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(mut pipe) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.by_ref().take(64 * 1024).read_to_end(&mut text);
            let _ = tx.send(text);
        });
    }
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                kill_group(&mut child);
                let _ = child.wait();
                return Err(format!(
                    "did not finish within {}",
                    crate::config::format_duration(timeout)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("could not be waited for: {e}")),
        }
    };
    if status.success() {
        return Ok(());
    }
    // A grandchild may still hold stderr: wait for it briefly, never for long.
    let stderr = rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr);
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

fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let _ = child.kill();
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
