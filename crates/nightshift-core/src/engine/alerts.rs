//! The alerts the engine raises (issue 6): a pause on a systemic fault, a person required, the
//! run's fuse at 80%, nothing shipped for `alert.no_ship_hours`, a process that survived
//! teardown, and the run's end with its summary. Each goes to ATTENTION at once and to the
//! `[notify]` channels without waiting (see `notify::raise`).
//!
//! Owns: [`AlertState`] (what was alerted already, so a lasting condition alerts once) and
//! [`Alerter`], the engine's parts an alert needs (workspace, clock, `[notify]`, `[alert]`,
//! the open run), borrowed per use through `Engine::alerts`. It never journals.

use std::fmt::Write;

use crate::clock::Clock;
use crate::config::Config;
use crate::halt::HaltReason;
use crate::notify::{self, Alert, AlertKind};
use crate::store::{ItemRow, ItemState, RunRow};
use crate::workspace::Workspace;

use super::Engine;

/// Alerts that must not repeat while their condition lasts.
#[derive(Default)]
pub(super) struct AlertState {
    /// The key of the last pause alerted (`rate_limited`, `env_fault: auth: item`, …).
    pause: Option<String>,
    /// Shipped items counted at `since` (wall seconds): the no-ship clock restarts on a ship.
    shipped: Option<(usize, i64)>,
    /// The no-ship alert for the current window was raised.
    no_ship_raised: bool,
}

/// Raises the engine's alerts: its workspace, clock and config, the open run, and what was
/// alerted already (borrowed from the engine for one use).
pub(super) struct Alerter<'a> {
    ws: &'a Workspace,
    clock: &'a dyn Clock,
    config: &'a Config,
    run: Option<&'a RunRow>,
    state: &'a mut AlertState,
}

impl Engine<'_> {
    /// The alerter over this engine's parts.
    pub(super) fn alerts(&mut self) -> Alerter<'_> {
        Alerter {
            ws: &self.ws,
            clock: self.clock.as_ref(),
            config: &self.config,
            run: self.run.as_ref(),
            state: &mut self.alerts,
        }
    }
}

impl Alerter<'_> {
    /// Raises `kind` with `summary`, for this run and (optionally) one item.
    pub(super) fn alert(&self, kind: AlertKind, summary: String, item: Option<&str>) {
        let alert = Alert {
            kind,
            summary,
            detail: None,
            run_id: self.run.map(|r| r.id.clone()),
            item: item.map(str::to_owned),
        };
        notify::raise(self.ws, self.clock, &self.config.notify, &alert);
    }

    /// A pause on a systemic fault: once per cause while it lasts (a retried auth failure does
    /// not ring every back-off). An auth failure needs a person; the others clear by themselves.
    pub(super) fn pause(&mut self, key: &str, reason: &str, until: &str, item: &str) {
        if self.state.pause.as_deref() == Some(key) {
            notify::attention(
                self.ws,
                self.clock,
                &format!("paused until {until}: {reason}"),
            );
            return;
        }
        self.state.pause = Some(key.to_owned());
        let (kind, summary) = if key.starts_with("env_fault: auth") {
            (
                AlertKind::HumanRequired,
                format!(
                    "human required: the agent CLI is not logged in; paused until {until} and retrying: {reason}"
                ),
            )
        } else {
            (AlertKind::Paused, format!("paused until {until}: {reason}"))
        };
        self.alert(kind, summary, Some(item));
    }

    /// A session ended without a systemic fault: the next pause alerts again.
    pub(super) fn pause_cleared(&mut self) {
        self.state.pause = None;
    }

    /// Nothing shipped for `[alert] no_ship_hours` of this engine's running time: one alert per
    /// window; a ship starts a new window. `shipped` and `open` (not shipped) count the run's
    /// items.
    pub(super) fn no_ship(&mut self, shipped: usize, open: usize) {
        let hours = self.config.alert.no_ship_hours;
        if hours == 0 {
            return;
        }
        let now = self.clock.wall().as_second();
        match self.state.shipped {
            Some((count, _)) if count == shipped => {}
            _ => {
                self.state.shipped = Some((shipped, now));
                self.state.no_ship_raised = false;
                return;
            }
        }
        let since = self.state.shipped.map_or(now, |(_, since)| since);
        if self.state.no_ship_raised || now - since < i64::from(hours) * 3600 {
            return;
        }
        self.state.no_ship_raised = true;
        self.alert(
            AlertKind::NoShip,
            format!(
                "nothing shipped for {hours}h ({shipped} shipped, {open} not yet); see `nightshift status`"
            ),
            None,
        );
    }

    /// The engine stopped on an error (the run stays resumable, but nothing resumes it by
    /// itself): a person is required.
    pub(super) fn stopped(&self, error: &super::EngineError) {
        // A journal found behind its head as an entry was appended (issue 12): an integrity
        // stop, not a resumable one.
        if let super::EngineError::Store(crate::store::StoreError::Tampered(t)) = error {
            self.alert(
                AlertKind::Integrity,
                format!(
                    "store_tampered: {t}; the run does not go on (`nightshift doctor` says more)"
                ),
                None,
            );
            return;
        }
        let mut text = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.alert(
            AlertKind::HumanRequired,
            format!("run stopped, resumable with `nightshift run`: failed to {text}"),
            None,
        );
    }

    /// The run's end, with a plain-text morning summary as the detail.
    pub(super) fn run_finished(&self, run_id: &str, halt: HaltReason, items: &[ItemRow]) {
        let shipped = items
            .iter()
            .filter(|i| i.state == ItemState::Shipped)
            .count();
        let parked = items
            .iter()
            .filter(|i| i.state == ItemState::Parked)
            .count();
        let mut detail = String::new();
        for item in items {
            let _ = write!(detail, "{:<8} {}", item.state, item.id);
            if let Some(reason) = item
                .reason
                .as_deref()
                .filter(|_| item.state != ItemState::Shipped)
            {
                let _ = write!(detail, ": {reason}");
            }
            detail.push('\n');
        }
        let _ = write!(
            detail,
            "halt: {} (exit {}); `nightshift status` has the rest",
            halt.as_str(),
            halt.class().code()
        );
        let alert = Alert {
            kind: AlertKind::RunFinished,
            summary: format!(
                "run finished ({}): {shipped} of {} shipped, {parked} parked",
                halt.as_str(),
                items.len()
            ),
            detail: Some(detail),
            run_id: Some(run_id.to_owned()),
            item: None,
        };
        notify::raise(self.ws, self.clock, &self.config.notify, &alert);
    }
}
