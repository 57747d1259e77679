//! Reaching a person. Every alert is one line in `.nightshift/ATTENTION`, written at once (the
//! channel that always works), and then handed to the configured channels — desktop, webhooks,
//! commands — without waiting for them: it is written to a durable outbox
//! (`.nightshift/outbox/`), and a detached deliverer process (`nightshift __deliver`) sends it,
//! retrying with back-off, after the run that raised it has long exited if need be.
//!
//! A channel that cannot deliver on this machine (no D-Bus session, no `osascript`, a webhook
//! that is unreachable, a command that is not on PATH) is *inert*: [`inspect`] names it with its
//! reason, `nightshift run` warns about it at start, and a delivery that finally fails is written
//! to ATTENTION. Nothing is dropped silently. See `docs/notifications.md`.

mod channel;
mod command;
mod desktop;
mod outbox;
mod webhook;

use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use crate::clock::Clock;
use crate::config::NotifyConfig;
use crate::workspace::Workspace;

pub use channel::{Channel, ChannelReport, ChannelState, TestOutcome, TestResult};
pub use outbox::{DeliverReport, Entry, deliver, outbox_dir};
pub use webhook::{Payload, payload};

/// The version of the alert JSON a webhook (`format = "json"`) or a command receives.
pub const ALERT_VERSION: u32 = 1;

/// Appends one line to `.nightshift/ATTENTION`. Best effort: a failure here never stops a run.
pub fn attention(ws: &Workspace, clock: &dyn Clock, line: &str) {
    let path = ws.dir().join("ATTENTION");
    let stamp = clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ");
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{stamp}  {line}");
    }
}

/// What an alert is about: the classes a person may route differently (issue 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// Nothing shipped for `alert.no_ship_hours`.
    NoShip,
    /// The run paused on a systemic fault (rate limit, auth, environment).
    Paused,
    /// A person is required: an escalation, an item awaiting an operator, an auth failure.
    HumanRequired,
    /// The supervisor stopped restarting an engine that kept dying.
    RestartStorm,
    /// 80% of a run fuse is spent (or a limit was crossed).
    Budget,
    /// A guard found the oracle weakened, or a process survived teardown.
    Integrity,
    /// The run finished; the body is the morning summary.
    RunFinished,
    /// `nightshift notify test`.
    Test,
}

impl AlertKind {
    /// The name used in payloads (`no_ship`, `paused`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::NoShip => "no_ship",
            AlertKind::Paused => "paused",
            AlertKind::HumanRequired => "human_required",
            AlertKind::RestartStorm => "restart_storm",
            AlertKind::Budget => "budget",
            AlertKind::Integrity => "integrity",
            AlertKind::RunFinished => "run_finished",
            AlertKind::Test => "test",
        }
    }

    /// How loudly to ring: 3 a person must act now, 2 a person should look, 1 for the record.
    pub fn urgency(self) -> u8 {
        match self {
            AlertKind::HumanRequired | AlertKind::RestartStorm | AlertKind::Integrity => 3,
            AlertKind::NoShip | AlertKind::Paused | AlertKind::Budget => 2,
            AlertKind::RunFinished | AlertKind::Test => 1,
        }
    }
}

/// One thing a person should know.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Alert {
    pub kind: AlertKind,
    /// One line, readable on a lock screen.
    pub summary: String,
    /// More, when there is more (the morning summary, a list of paths).
    pub detail: Option<String>,
    pub run_id: Option<String>,
    pub item: Option<String>,
}

impl Alert {
    /// An alert with a summary only.
    pub fn new(kind: AlertKind, summary: impl Into<String>) -> Alert {
        Alert {
            kind,
            summary: summary.into(),
            detail: None,
            run_id: None,
            item: None,
        }
    }
}

/// Raises an alert: the `ATTENTION` line at once, then every configured channel that is not
/// inert here, through the outbox and a detached deliverer. Never blocks on a channel and never
/// fails: a problem queuing the alert is itself written to ATTENTION.
pub fn raise(ws: &Workspace, clock: &dyn Clock, notify: &NotifyConfig, alert: &Alert) {
    attention(ws, clock, &alert.summary);
    let channels: Vec<Channel> = Channel::all(notify)
        .into_iter()
        .filter(|c| c.quick_check().state != ChannelState::Inert)
        .collect();
    if channels.is_empty() {
        return;
    }
    match outbox::enqueue(ws, clock, alert, channels) {
        Ok(_) => outbox::ensure_deliverer(ws, clock),
        Err(e) => attention(
            ws,
            clock,
            &format!("notify: the alert above reached ATTENTION only: failed to queue it: {e}"),
        ),
    }
}

/// What each configured channel can do on this machine: `live`, `inert` (with why), or
/// `unchecked` (with why). Cheap local checks, plus one TCP connect (2 s bound) per webhook.
/// Used by `nightshift doctor`, at run start, and by `nightshift notify test`.
pub fn inspect(notify: &NotifyConfig) -> Vec<ChannelReport> {
    Channel::all(notify)
        .iter()
        .map(|c| ChannelReport {
            name: c.name(),
            ..c.inspect()
        })
        .collect()
}

/// At run start: one ATTENTION line per inert channel, returned too (for stderr); and alerts a
/// killed deliverer left in the outbox are sent again.
pub fn run_starting(ws: &Workspace, clock: &dyn Clock, notify: &NotifyConfig) -> Vec<String> {
    if outbox::has_entries(ws) {
        outbox::ensure_deliverer(ws, clock);
    }
    warn_inert(ws, clock, notify)
}

/// One ATTENTION line per inert channel; returns the lines.
pub fn warn_inert(ws: &Workspace, clock: &dyn Clock, notify: &NotifyConfig) -> Vec<String> {
    let lines: Vec<String> = inspect(notify)
        .into_iter()
        .filter(|r| r.state == ChannelState::Inert)
        .map(|r| {
            format!(
                "notify: channel {} is inert and will not deliver alerts: {}",
                r.name,
                r.reason.unwrap_or_default()
            )
        })
        .collect();
    if !lines.is_empty() {
        let _ = std::fs::create_dir_all(ws.dir());
    }
    for line in &lines {
        attention(ws, clock, line);
    }
    lines
}

/// `nightshift notify test`: a test alert through ATTENTION and every configured channel, one
/// try each (no outbox, no retries), reported per channel. The first outcome is ATTENTION's.
pub fn send_test(ws: &Workspace, clock: &dyn Clock, notify: &NotifyConfig) -> Vec<TestOutcome> {
    let alert = Alert {
        kind: AlertKind::Test,
        summary: "nightshift notify test: if you read this, this channel reaches you".into(),
        detail: Some(format!(
            "sent by `nightshift notify test` in {}",
            ws.root().display()
        )),
        run_id: None,
        item: None,
    };
    let mut outcomes = Vec::new();
    let attention_ok = std::fs::create_dir_all(ws.dir()).is_ok();
    attention(ws, clock, &alert.summary);
    let path = ws.dir().join("ATTENTION");
    outcomes.push(TestOutcome {
        name: "attention".into(),
        result: if attention_ok && path.exists() {
            TestResult::Delivered(path.display().to_string())
        } else {
            TestResult::Failed(format!("could not append to {}", path.display()))
        },
    });
    let envelope = outbox::Envelope::new(
        &alert,
        clock.wall().to_string(),
        outbox::new_id(clock),
        ws.root(),
    );
    for channel in Channel::all(notify) {
        let check = channel.quick_check();
        let result = if check.state == ChannelState::Inert {
            TestResult::Inert(check.reason.unwrap_or_default())
        } else {
            match channel.send(&envelope, ws.root()) {
                Ok(detail) => TestResult::Delivered(detail),
                Err(why) => TestResult::Failed(why),
            }
        };
        outcomes.push(TestOutcome {
            name: channel.name(),
            result,
        });
    }
    outcomes
}

/// Starts a detached deliverer for the repository at the given root and returns it. The library
/// does not assume which executable that is: the `nightshift` binary registers one with
/// [`set_launcher`] (it re-executes itself as `nightshift __deliver -C <root>`). The child must
/// not inherit stdout/stderr (a caller waiting on those pipes would wait for the deliverer).
pub type Launcher = fn(&Path) -> std::io::Result<std::process::Child>;

static LAUNCHER: OnceLock<Launcher> = OnceLock::new();

/// Registers how a deliverer process is started. Without one, alerts wait in the outbox until a
/// process that has one raises an alert or starts a run ([`run_starting`]), or something calls
/// [`deliver`].
pub fn set_launcher(launcher: Launcher) {
    let _ = LAUNCHER.set(launcher);
}

fn launcher() -> Option<Launcher> {
    LAUNCHER.get().copied()
}

#[cfg(test)]
mod tests;
