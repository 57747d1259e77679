//! The desktop channel: Linux through the D-Bus notification service (`notify-send`, else
//! `gdbus`), macOS through `osascript`, Windows through a PowerShell toast. One platform part is
//! compiled in, behind the `platform` alias; each says why it is inert when it cannot deliver.

#[cfg(all(unix, not(target_os = "macos")))]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(windows)]
mod windows;

#[cfg(all(unix, not(target_os = "macos")))]
use linux as platform;
#[cfg(target_os = "macos")]
use macos as platform;
#[cfg(windows)]
use windows as platform;

use std::time::Duration;

use super::channel::ChannelReport;
use super::outbox::Envelope;

/// How long one desktop notification command may take.
const TIMEOUT: Duration = Duration::from_secs(15);

/// Whether a desktop notification can be shown here.
pub(super) fn check() -> ChannelReport {
    platform::check()
}

/// Shows the alert; `Ok` names the tool that took it.
pub(super) fn send(envelope: &Envelope) -> Result<String, String> {
    let check = check();
    if check.state == super::ChannelState::Inert {
        return Err(format!("inert: {}", check.reason.unwrap_or_default()));
    }
    platform::send(
        &title(envelope),
        &body(envelope),
        envelope.kind.urgency(),
        TIMEOUT,
    )
}

fn title(envelope: &Envelope) -> String {
    format!("nightshift: {}", envelope.summary)
}

fn body(envelope: &Envelope) -> String {
    match &envelope.detail {
        Some(detail) => detail.lines().take(12).collect::<Vec<_>>().join("\n"),
        None => envelope.repo.clone(),
    }
}
