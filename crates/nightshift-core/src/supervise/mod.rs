//! The layer above the run (DESIGN.md §3 "Processes"): `nightshift run` is a small, boring
//! supervisor that starts the engine (`nightshift engine`) as a child, restarts it when it dies
//! (back-off, burst limit: [`Policy`]), keeps `.nightshift/health.json` fresh, raises the alerts
//! only it can (nothing shipped for hours, a restart storm), and keeps the machine awake.
//!
//! The supervisor never writes the store (the engine is its single writer): it reads it. A
//! restarted engine resumes the unfinished run on its own, from the journal.

pub mod health;
pub mod inhibit;
pub mod live;
mod policy;
pub mod service;
mod signals;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::halt::HaltReason;
use crate::notify::{Alert, AlertKind};
use crate::store::Store;
use crate::workspace::Workspace;

pub use health::{Health, SupervisorFacts, Tracker};
pub use inhibit::Inhibitor;
pub use policy::{Decision, EngineExit, Policy, Restarts};

/// Hours with nothing shipped before an alert.
// lead: wire config.alert.no_ship_hours
pub const NO_SHIP_HOURS: f64 = 6.0;

/// How often `health.json` is refreshed while the engine runs.
pub const HEALTH_EVERY: Duration = Duration::from_secs(5);

/// How often the supervisor looks at its engine and its signals.
const POLL: Duration = Duration::from_millis(50);

/// What the supervisor needs.
pub struct Options {
    pub workspace: Workspace,
    pub clock: Arc<dyn Clock>,
    pub policy: Policy,
    /// Builds the engine's command line for a [`Start`], so an operator's `--fresh` is never
    /// passed to a restarted engine (which must resume, and never starts a new run).
    pub engine: Box<dyn FnMut(Start) -> Command>,
    /// `[run] prevent_sleep`.
    pub prevent_sleep: bool,
    /// The run fuses, for health (`[limits] run_tokens`, `run_usd`).
    pub tokens_limit: Option<u64>,
    pub usd_limit: Option<f64>,
    /// Alert when nothing shipped for this many hours (`0`: never).
    pub no_ship_hours: f64,
    /// `[notify]`: where alerts go besides ATTENTION.
    pub notify: crate::config::NotifyConfig,
}

/// Which start of the engine a command line is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The user's `nightshift run`: opens a run (resumes the unfinished one, or starts one).
    First,
    /// A restart after a death. `journal_from` is the journal position before the first start:
    /// the restarted engine resumes the run opened since, and if that run has halted it exits
    /// with the halt instead of starting a new run (issue 13).
    Restart {
        journal_from: i64,
        /// How the previous engine ended (the restarted engine journals it: an agent that
        /// kills its engine does not go unseen).
        previous: EngineExit,
    },
}

/// Errors that stop the supervisor itself.
#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    #[error("start the engine")]
    Spawn(#[source] std::io::Error),
    #[error("wait for the engine")]
    Wait(#[source] std::io::Error),
}

/// How supervision ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// The exit code to leave with.
    pub code: i32,
    /// The halt: the journal's for the run this supervisor worked on, or `restart_storm`.
    /// `None` when no engine got as far as halting a run (e.g. a stop before any run opened).
    pub halt: Option<HaltReason>,
}

/// Supervises engines until one halts (or a storm).
/// `note` receives one-line messages for a person (the binary prints them to stderr).
pub fn run(mut opts: Options, note: &mut dyn FnMut(&str)) -> Result<Ended, SuperviseError> {
    let ws = opts.workspace.clone();
    let clock = opts.clock.clone();
    let inhibitor = opts
        .prevent_sleep
        .then(|| Inhibitor::acquire(&format!("nightshift run in {}", ws.root().display())));
    if let Some(why) = inhibitor.as_ref().and_then(Inhibitor::unavailable) {
        note(&format!("prevent_sleep unavailable: {why}"));
    }
    signals::install();
    // ATTENTION and health.json live here, even when no engine ever gets as far as creating it.
    let _ = std::fs::create_dir_all(ws.dir());
    let mut beat = Heartbeat {
        ws: ws.clone(),
        clock: clock.clone(),
        store: None,
        tracker: Tracker::new(),
        tz: jiff::tz::TimeZone::system(),
        last: None,
        no_ship_hours: opts.no_ship_hours,
        notify: opts.notify.clone(),
        no_ship_alerted: None,
        owned: false,
        facts: SupervisorFacts {
            state: "starting".into(),
            supervisor_pid: std::process::id(),
            prevent_sleep: health::PreventSleep {
                requested: opts.prevent_sleep,
                active: inhibitor.as_ref().and_then(Inhibitor::how).is_some(),
                how: inhibitor
                    .as_ref()
                    .and_then(Inhibitor::how)
                    .map(str::to_owned),
                unavailable: inhibitor
                    .as_ref()
                    .and_then(Inhibitor::unavailable)
                    .map(str::to_owned),
            },
            tokens_limit: opts.tokens_limit,
            usd_limit: opts.usd_limit,
            ..SupervisorFacts::default()
        },
    };
    let mut restarts = Restarts::new(opts.policy);
    // Where the journal stood before the first engine: a restarted engine resumes the run
    // opened after it, or exits with that run's halt.
    let journal_from = journal_position(&ws);
    let mut start = Start::First;
    let mut stop_requested = false;
    loop {
        let mut cmd = (opts.engine)(start);
        // The engine gets a process group of its own (issue 12): what kills its group (an
        // agent's `kill -9 -PGID`) does not kill the supervisor, which restarts it. Signals
        // for the run (a terminal's ^C reaches the supervisor's group) are forwarded below.
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        restarts.started(clock.mono());
        let mut child = cmd.spawn().map_err(SuperviseError::Spawn)?;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        beat.facts.engine_pid = Some(child.id());
        beat.facts.engine_starts += 1;
        beat.facts.engine_restarts = restarts.restarts();
        beat.facts.last_engine_start = Some(clock.wall());
        beat.facts.state = "running".into();
        beat.refresh();
        let mut stale_alerted = false;
        let status = loop {
            for signal in signals::take() {
                stop_requested = true;
                let _ = nix::sys::signal::kill(pid, signal);
            }
            if let Some(status) = child.try_wait().map_err(SuperviseError::Wait)? {
                break status;
            }
            if beat.due() {
                watch_heartbeat(&mut beat, &mut stale_alerted, child.id(), note);
                beat.refresh();
            }
            std::thread::sleep(POLL);
        };
        let exit = EngineExit::from_status(status);
        start = Start::Restart {
            journal_from,
            previous: exit,
        };
        beat.facts.engine_pid = None;
        beat.facts.last_engine_exit = Some(exit.to_string());
        match restarts.decide(exit, stop_requested, clock.mono()) {
            Decision::Finish(code) => {
                // The halt is the journal's (a run that finished or stopped since the first
                // start); health says it, and the caller words its last line from it.
                let halt = halted_since(&ws, journal_from);
                // Exit 0 is an operator stop (`nightshift stop` signals the engine itself).
                let state = if stop_requested || code == 0 {
                    "stopped"
                } else {
                    "finished"
                };
                beat.facts.halt_reason = halt.map(|h| h.as_str().to_owned());
                return Ok(Ended {
                    code: beat.finish(state, code),
                    halt,
                });
            }
            Decision::Restart { after } => {
                note(&format!(
                    "the engine ended unexpectedly ({exit}); restarting it in {}s (the run resumes)",
                    after.as_secs_f64()
                ));
                beat.facts.state = "restarting".into();
                beat.refresh();
                let until = clock.mono() + after;
                while clock.mono() < until {
                    if !signals::take().is_empty() {
                        note(
                            "stopped while waiting to restart the engine; `nightshift run` resumes",
                        );
                        return Ok(Ended {
                            code: beat.finish("stopped", 0),
                            halt: halted_since(&ws, journal_from),
                        });
                    }
                    std::thread::sleep(POLL);
                }
            }
            Decision::Storm => {
                let starts = beat.facts.engine_starts;
                let run_id = beat.last.as_ref().and_then(|h| h.run_id.clone());
                crate::notify::raise(
                    &ws,
                    clock.as_ref(),
                    &opts.notify,
                    &Alert {
                        kind: AlertKind::RestartStorm,
                        summary: format!(
                            "restart_storm: the engine died {starts} times in a row (last: {exit}); \
                             not restarting it. The run is resumable: fix the cause, then `nightshift run`"
                        ),
                        detail: None,
                        run_id,
                        item: None,
                    },
                );
                note(&format!(
                    "restart_storm: the engine died {starts} times in a row (last: {exit}); not restarting it"
                ));
                beat.facts.halt_reason = Some(HaltReason::RestartStorm.as_str().into());
                return Ok(Ended {
                    code: beat.finish("restart_storm", HaltReason::RestartStorm.class().code()),
                    halt: Some(HaltReason::RestartStorm),
                });
            }
        }
    }
}

/// `heartbeat_stale`: the engine has not beaten for [`live::STALE_AFTER`]. Said in health and
/// alerted once per episode; an engine that is also stopped (SIGSTOP) past
/// [`live::FROZEN_KILL_AFTER`] is killed, and the restart policy starts it again.
fn watch_heartbeat(beat: &mut Heartbeat, alerted: &mut bool, pid: u32, note: &mut dyn FnMut(&str)) {
    let started = beat
        .facts
        .last_engine_start
        .unwrap_or_else(|| beat.clock.wall());
    let age = live::beat_age(&beat.ws, pid, started, beat.clock.wall());
    if age < live::STALE_AFTER {
        if beat.facts.state == "heartbeat_stale" {
            beat.facts.state = "running".into();
        }
        *alerted = false;
        return;
    }
    beat.facts.state = "heartbeat_stale".into();
    let frozen = live::is_frozen(pid);
    if !*alerted {
        *alerted = true;
        let line = format!(
            "heartbeat_stale: the engine (pid {pid}) has not beaten for {}s{}",
            age.as_secs(),
            if frozen {
                format!(
                    "; it is stopped (SIGSTOP?) and is killed and restarted after {} min",
                    live::FROZEN_KILL_AFTER.as_secs() / 60
                )
            } else {
                String::new()
            }
        );
        note(&line);
        let run_id = beat.last.as_ref().and_then(|h| h.run_id.clone());
        crate::notify::raise(
            &beat.ws,
            beat.clock.as_ref(),
            &beat.notify,
            &Alert {
                kind: AlertKind::HumanRequired,
                summary: line,
                detail: None,
                run_id,
                item: None,
            },
        );
    }
    if frozen && age >= live::FROZEN_KILL_AFTER {
        note(&format!(
            "heartbeat_stale: the engine (pid {pid}) stayed stopped for {}s; killing it (the run resumes)",
            age.as_secs()
        ));
        if let Ok(raw) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(raw),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The halt of the run opened after journal position `from`, once it halted.
fn halted_since(ws: &Workspace, from: i64) -> Option<HaltReason> {
    let store = Store::open_read_only(&ws.state_db()).ok()?;
    match store.since(from).ok()? {
        crate::store::Since::Halted { halt, .. } => Some(halt),
        _ => None,
    }
}

/// The position of the newest journal entry (0 without a journal).
fn journal_position(ws: &Workspace) -> i64 {
    if !ws.state_db().exists() {
        return 0;
    }
    Store::open_read_only(&ws.state_db())
        .and_then(|s| s.last_seq())
        .unwrap_or(0)
}

/// Reads the store and writes `health.json`; raises the no-ship alert.
struct Heartbeat {
    ws: Workspace,
    clock: Arc<dyn Clock>,
    store: Option<Store>,
    tracker: Tracker,
    tz: jiff::tz::TimeZone,
    last: Option<Health>,
    facts: SupervisorFacts,
    no_ship_hours: f64,
    notify: crate::config::NotifyConfig,
    /// The last ship (or run) the no-ship alert was raised for, so it is raised once per gap.
    no_ship_alerted: Option<String>,
    /// Whether one of this supervisor's engines has held the run lock.
    owned: bool,
}

impl Heartbeat {
    fn due(&self) -> bool {
        let Some(last) = &self.last else { return true };
        let Ok(at) = last.updated_at.parse::<jiff::Timestamp>() else {
            return true;
        };
        // A wall step backwards must not stop the beat: any difference beyond HEALTH_EVERY, in
        // either direction, is due.
        let gap = self.clock.wall().duration_since(at).abs();
        Duration::try_from(gap).unwrap_or(Duration::MAX) >= HEALTH_EVERY
    }

    fn finish(&mut self, state: &str, code: i32) -> i32 {
        self.facts.state = state.into();
        self.facts.exit_code = Some(code);
        self.refresh();
        code
    }

    /// Whether this supervisor may write `health.json`: not while another live engine (another
    /// supervisor's, refused with `run_locked` here) holds the run lock.
    fn may_write(&mut self) -> bool {
        let holder = crate::store::read_holder(&self.ws.lock()).and_then(|h| {
            h.strip_prefix("pid ")?
                .split_whitespace()
                .next()?
                .parse::<u32>()
                .ok()
        });
        let Some(holder) = holder else {
            return true;
        };
        if Some(holder) == self.facts.engine_pid {
            self.owned = true;
            return true;
        }
        let alive = i32::try_from(holder)
            .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok());
        self.owned || !alive
    }

    /// Best effort: a store that cannot be read yet, or a file that cannot be written, is
    /// tried again at the next beat; the run never stops for its heartbeat.
    fn refresh(&mut self) {
        if !self.may_write() {
            return;
        }
        if self.store.is_none() && self.ws.state_db().exists() {
            self.store = Store::open_read_only(&self.ws.state_db()).ok();
        }
        let mut run = None;
        if let Some(store) = &self.store {
            let read = self.tracker.update(store).and_then(|()| {
                Ok(match store.unfinished_run()? {
                    Some(r) => Some(r),
                    None => store.latest_run()?,
                })
            });
            match read {
                Ok(r) => run = r,
                Err(_) => self.store = None, // reopened at the next beat
            }
        }
        let health = self
            .tracker
            .health(run.as_ref(), &self.facts, self.clock.wall(), &self.tz);
        self.alert_no_ship(&health);
        let _ = health::write(&health::path(&self.ws), &health);
        self.last = Some(health);
    }

    fn alert_no_ship(&mut self, health: &Health) {
        if !matches!(health.state.as_str(), "running" | "paused") {
            return;
        }
        let Some(hours) = health.hours_since_last_ship else {
            return;
        };
        let gap = health
            .last_ship_at
            .clone()
            .or_else(|| health.run_id.clone())
            .unwrap_or_default();
        if self.no_ship_hours <= 0.0
            || hours < self.no_ship_hours
            || self.no_ship_alerted.as_ref() == Some(&gap)
        {
            return;
        }
        self.no_ship_alerted = Some(gap);
        crate::notify::raise(
            &self.ws,
            self.clock.as_ref(),
            &self.notify,
            &Alert {
                kind: AlertKind::NoShip,
                summary: format!(
                    "no_ship: nothing shipped for {hours:.1} h (alert at {} h); `nightshift status` shows where the run is",
                    self.no_ship_hours
                ),
                detail: None,
                run_id: health.run_id.clone(),
                item: None,
            },
        );
    }
}
