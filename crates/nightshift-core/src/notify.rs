//! Reaching a person. For now the channel that always works: `.nightshift/ATTENTION`, one line
//! per thing a human should know, appended the moment it happens (desktop, webhook and command
//! channels come with issue 6).

use std::io::Write;

use crate::clock::Clock;
use crate::workspace::Workspace;

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

/// Raises an alert: the `ATTENTION` line always, and (issue 6) every configured channel.
/// Best effort and never blocking: a channel that fails never stops a run.
pub fn raise(ws: &Workspace, clock: &dyn Clock, alert: &Alert) {
    attention(ws, clock, &alert.summary);
}
