//! macOS: `osascript` shows the notification (`display notification`). The text goes in as
//! arguments of the script, never spliced into it, so nothing needs quoting. Inert when
//! `osascript` is missing.

use std::process::Command;
use std::time::Duration;

use super::super::channel::{ChannelReport, ChannelState};
use super::super::command::{on_path, run_bounded};

pub(super) fn check() -> ChannelReport {
    match on_path("osascript") {
        Some(path) => ChannelReport::new(
            ChannelState::Live,
            format!(
                "{}; macOS shows it only if notifications from Script Editor are allowed \
                 (System Settings → Notifications)",
                path.display()
            ),
        ),
        None => ChannelReport::new(ChannelState::Inert, "`osascript` is not on PATH"),
    }
}

pub(super) fn send(
    title: &str,
    body: &str,
    urgency: u8,
    timeout: Duration,
) -> Result<String, String> {
    let sound = if urgency >= 3 {
        " sound name \"Sosumi\""
    } else {
        ""
    };
    let mut cmd = Command::new("osascript");
    cmd.args([
        "-e",
        "on run argv",
        "-e",
        &format!("display notification (item 2 of argv) with title (item 1 of argv){sound}"),
        "-e",
        "end run",
        title,
        body,
    ]);
    run_bounded(cmd, None, timeout)
        .map(|()| "osascript".to_owned())
        .map_err(|e| format!("osascript {e}"))
}
