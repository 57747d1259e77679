//! `.nightshift/health.json`: one small file that says whether the run is healthy, written by
//! the supervisor every few seconds while the engine runs and once at the end. Computed from the
//! store (read-only, folded incrementally from the journal) plus the supervisor's own counters.
//! The shape is versioned; its JSON Schema is [`schema`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::store::{EventKind, RunRow, Store, StoreError};
use crate::workspace::Workspace;

/// The version of the `health.json` shape; bumped on any incompatible change.
pub const VERSION: u32 = 1;

/// Where the file lives.
pub fn path(ws: &Workspace) -> PathBuf {
    ws.dir().join("health.json")
}

/// The heartbeat of a supervised run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// Shape version.
    pub version: u32,
    /// When this file was written (RFC 3339, UTC). A stale value means no supervisor is alive.
    pub updated_at: String,
    /// `starting`, `running`, `paused`, `restarting` (waiting out a back-off), `finished`,
    /// `stopped` (an operator stop) or `restart_storm`.
    pub state: String,
    /// The run being worked on (or the last one), once the engine has opened it.
    pub run_id: Option<String>,
    pub supervisor_pid: u32,
    /// The live engine process, if one is running.
    pub engine_pid: Option<u32>,
    /// Engines this supervisor started (the first included).
    pub engine_starts: u32,
    /// Engines this supervisor started again after one died.
    pub engine_restarts: u32,
    pub last_engine_start: Option<String>,
    /// How the last engine ended (`exit 11`, `killed by SIGKILL`), once one has.
    pub last_engine_exit: Option<String>,
    /// Items shipped today (local date of the supervisor), by any run.
    pub shipped_today: u32,
    /// Items shipped by this run.
    pub shipped_this_run: u32,
    /// When the last item shipped, by any run.
    pub last_ship_at: Option<String>,
    /// Hours since the last ship; when this run has shipped nothing yet and nothing shipped
    /// since it started, hours since the run started. What `no_ship_hours` alerts on.
    pub hours_since_last_ship: Option<f64>,
    /// The pause in force (a usage limit's reset, an environment back-off).
    pub pause: Option<Pause>,
    /// Every pause of this run, oldest first.
    pub pauses: Vec<Pause>,
    /// Warnings of this run per gate class (`safety`, `product`, `process`): every
    /// `gate_warned` by its class (a gate in `log` mode that tripped), and every
    /// `budget_warned` (a soft share of a fuse) as `process`.
    pub gate_warnings: BTreeMap<String, u32>,
    /// Review debts outstanding (work shipped without its review; any run): a run with debt
    /// never exits 10.
    pub debts_outstanding: u32,
    /// What this run spent, against its fuses.
    pub spend: SpendHealth,
    pub prevent_sleep: PreventSleep,
    /// Why the run stopped, once it has (or `restart_storm`).
    pub halt_reason: Option<String>,
    /// The supervisor's exit code, once decided.
    pub exit_code: Option<i32>,
}

/// One pause of dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Pause {
    /// When it was recorded.
    pub at: String,
    pub reason: String,
    /// Until when (RFC 3339), if known.
    pub until: Option<String>,
}

/// Spend so far and the run fuses (`[limits] run_tokens`, `run_usd`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpendHealth {
    /// Weighted tokens (what token limits count).
    pub tokens: f64,
    pub usd: f64,
    pub turns: u32,
    pub tokens_limit: Option<u64>,
    pub usd_limit: Option<f64>,
}

/// Whether the machine is kept awake while the run works (`[run] prevent_sleep`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PreventSleep {
    /// `[run] prevent_sleep`.
    pub requested: bool,
    /// Whether an inhibitor is held.
    pub active: bool,
    /// The tool holding it (`systemd-inhibit`, `caffeinate`).
    pub how: Option<String>,
    /// Why it is not active, when requested.
    pub unavailable: Option<String>,
}

/// What only the supervisor knows.
#[derive(Debug, Clone, Default)]
pub struct SupervisorFacts {
    pub state: String,
    pub supervisor_pid: u32,
    pub engine_pid: Option<u32>,
    pub engine_starts: u32,
    pub engine_restarts: u32,
    pub last_engine_start: Option<Timestamp>,
    pub last_engine_exit: Option<String>,
    pub prevent_sleep: PreventSleep,
    pub tokens_limit: Option<u64>,
    pub usd_limit: Option<f64>,
    pub halt_reason: Option<String>,
    pub exit_code: Option<i32>,
}

#[derive(Debug, Default)]
struct RunAcc {
    started_at: Option<Timestamp>,
    shipped: u32,
    pauses: Vec<Pause>,
    warnings: BTreeMap<String, u32>,
}

/// Folds the journal into what health needs, incrementally (each refresh reads only new events).
#[derive(Debug, Default)]
pub struct Tracker {
    last_seq: i64,
    /// When each ship happened, any run.
    ships: Vec<Timestamp>,
    /// Items integrated locally whose ship waits on the push (`done = "pushed"`).
    awaiting_push: HashSet<String>,
    runs: HashMap<String, RunAcc>,
    /// Open review debts at the last update.
    debts: u32,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Reads the journal entries recorded since the last call.
    pub fn update(&mut self, store: &Store) -> Result<(), StoreError> {
        self.debts = u32::try_from(store.open_debts()?.len()).unwrap_or(u32::MAX);
        loop {
            let events = store.events_after(self.last_seq, 1000)?;
            let Some(last) = events.last() else {
                return Ok(());
            };
            self.last_seq = last.seq;
            for event in &events {
                let at: Option<Timestamp> = event.at.parse().ok();
                let acc = self.runs.entry(event.run_id.clone()).or_default();
                match &event.kind {
                    EventKind::GateWarned { class, .. } => {
                        *acc.warnings.entry(class.clone()).or_default() += 1;
                    }
                    EventKind::BudgetWarned { .. } => {
                        *acc.warnings.entry("process".to_owned()).or_default() += 1;
                    }
                    _ => {}
                }
                match &event.kind {
                    EventKind::RunStarted { .. } => acc.started_at = at,
                    EventKind::Integrated {
                        item,
                        awaiting_push,
                        ..
                    } => {
                        if *awaiting_push {
                            self.awaiting_push.insert(item.clone());
                        } else {
                            acc.shipped += 1;
                            self.ships.extend(at);
                        }
                    }
                    EventKind::Pushed { item, .. } if self.awaiting_push.remove(item) => {
                        acc.shipped += 1;
                        self.ships.extend(at);
                    }
                    EventKind::RunPaused { reason, until } => acc.pauses.push(Pause {
                        at: event.at.clone(),
                        reason: reason.clone(),
                        until: epoch(*until),
                    }),
                    _ => {}
                }
            }
        }
    }

    /// The health of `run` (the unfinished or latest run) at `now`; "today" is the date in `tz`.
    pub fn health(
        &self,
        run: Option<&RunRow>,
        facts: &SupervisorFacts,
        now: Timestamp,
        tz: &jiff::tz::TimeZone,
    ) -> Health {
        let acc = run.and_then(|r| self.runs.get(&r.id));
        let today = now.to_zoned_datetime(tz.clone()).date();
        let shipped_today = self
            .ships
            .iter()
            .filter(|t| t.to_zoned_datetime(tz.clone()).date() == today)
            .count();
        let last_ship = self.ships.iter().max().copied();
        let since = match (last_ship, acc.and_then(|a| a.started_at)) {
            (Some(ship), Some(start)) => Some(ship.max(start)),
            (ship, start) => ship.or(start),
        };
        let hours_since_last_ship =
            since.map(|t| (now.duration_since(t).as_secs_f64() / 3600.0).max(0.0));
        let pause = run.and_then(|r| {
            let until = r.paused_until?;
            Some(Pause {
                at: acc
                    .and_then(|a| a.pauses.last())
                    .map(|p| p.at.clone())
                    .unwrap_or_default(),
                reason: r.pause_reason.clone().unwrap_or_default(),
                until: epoch(until),
            })
        });
        let state = if facts.state == "running" && pause.is_some() {
            "paused".to_owned()
        } else {
            facts.state.clone()
        };
        Health {
            version: VERSION,
            updated_at: now.to_string(),
            state,
            run_id: run.map(|r| r.id.clone()),
            supervisor_pid: facts.supervisor_pid,
            engine_pid: facts.engine_pid,
            engine_starts: facts.engine_starts,
            engine_restarts: facts.engine_restarts,
            last_engine_start: facts.last_engine_start.map(|t| t.to_string()),
            last_engine_exit: facts.last_engine_exit.clone(),
            shipped_today: u32::try_from(shipped_today).unwrap_or(u32::MAX),
            shipped_this_run: acc.map_or(0, |a| a.shipped),
            last_ship_at: last_ship.map(|t| t.to_string()),
            hours_since_last_ship,
            pause,
            pauses: acc.map(|a| a.pauses.clone()).unwrap_or_default(),
            gate_warnings: acc.map(|a| a.warnings.clone()).unwrap_or_default(),
            debts_outstanding: self.debts,
            spend: SpendHealth {
                tokens: run.map_or(0.0, |r| r.spent_tokens),
                usd: run.map_or(0.0, |r| r.spent_usd),
                turns: run.map_or(0, |r| r.spent_turns),
                tokens_limit: facts.tokens_limit,
                usd_limit: facts.usd_limit,
            },
            prevent_sleep: facts.prevent_sleep.clone(),
            halt_reason: facts
                .halt_reason
                .clone()
                .or_else(|| run.and_then(|r| r.halt_reason.clone())),
            exit_code: facts.exit_code,
        }
    }
}

fn epoch(seconds: i64) -> Option<String> {
    Timestamp::from_second(seconds).ok().map(|t| t.to_string())
}

/// Errors from writing `health.json`.
#[derive(Debug, thiserror::Error)]
#[error("write {path}")]
pub struct WriteError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// Writes `health` to `path` atomically: a temporary file beside it, then a rename, so a reader
/// sees the old file or the new one, never half of one.
pub fn write(path: &Path, health: &Health) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.display().to_string(),
        source,
    };
    let text = serde_json::to_string_pretty(health).map_err(|e| err(e.into()))?;
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&tmp).map_err(err)?;
    file.write_all(text.as_bytes()).map_err(err)?;
    file.write_all(b"\n").map_err(err)?;
    file.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Reads `health.json`, if there is one.
pub fn read(path: &Path) -> Option<Health> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The JSON Schema of `health.json`.
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(Health)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::halt::HaltReason;
    use crate::store::PlannedItem;

    const UTC: jiff::tz::TimeZone = jiff::tz::TimeZone::UTC;

    fn record(store: &mut Store, run: &str, at: &str, kind: EventKind) {
        store.record(run, at, kind).unwrap();
    }

    #[test]
    fn health_counts_ships_pauses_warnings_and_hours_since_the_last_ship() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("state.db")).unwrap();
        let run = "r1";
        let items = ["a", "b", "c"]
            .iter()
            .map(|id| PlannedItem {
                id: (*id).into(),
                prompt: "p".into(),
                check: None,
                shipped_by: None,
            })
            .collect();
        record(
            &mut store,
            run,
            "2026-11-30T01:00:00Z",
            EventKind::RunStarted {
                target: "main".into(),
                base: "b".into(),
                max_iterations: 1,
                max_attempts: 1,
                items,
            },
        );
        let mut tracker = Tracker::new();
        tracker.update(&store).unwrap();
        let facts = SupervisorFacts {
            state: "running".into(),
            supervisor_pid: 7,
            engine_restarts: 1,
            usd_limit: Some(5.0),
            ..SupervisorFacts::default()
        };
        let now: Timestamp = "2026-11-30T04:00:00Z".parse().unwrap();
        let row = store.run(run).unwrap();
        let h = tracker.health(row.as_ref(), &facts, now, &UTC);
        assert_eq!(h.shipped_this_run, 0);
        assert_eq!(
            h.hours_since_last_ship,
            Some(3.0),
            "from the run's start when nothing shipped"
        );
        for (item, at) in [("a", "2026-11-30T02:00:00Z"), ("b", "2026-11-30T02:30:00Z")] {
            record(
                &mut store,
                run,
                at,
                EventKind::Integrated {
                    item: item.into(),
                    attempt: 1,
                    commit: "c".into(),
                    push: false,
                    awaiting_push: false,
                },
            );
        }
        record(
            &mut store,
            run,
            "2026-11-30T02:40:00Z",
            EventKind::RunPaused {
                reason: "rate_limited".into(),
                until: 1_796_000_000,
            },
        );
        record(
            &mut store,
            run,
            "2026-11-30T02:41:00Z",
            EventKind::BudgetWarned {
                item: "c".into(),
                attempt: 1,
                scope: crate::store::Scope::Session,
                metric: crate::store::Metric::Tokens,
                used: 8.0,
                limit: 10.0,
            },
        );
        tracker.update(&store).unwrap();
        let row = store.run(run).unwrap();
        let h = tracker.health(row.as_ref(), &facts, now, &UTC);
        assert_eq!(h.shipped_this_run, 2);
        assert_eq!(h.shipped_today, 2);
        assert_eq!(h.last_ship_at.as_deref(), Some("2026-11-30T02:30:00Z"));
        assert_eq!(h.hours_since_last_ship, Some(1.5));
        assert_eq!(h.pauses.len(), 1);
        assert_eq!(h.state, "paused");
        assert_eq!(h.gate_warnings.get("process"), Some(&1));
        assert_eq!(h.engine_restarts, 1);
        assert_eq!(h.spend.usd_limit, Some(5.0));
        record(
            &mut store,
            run,
            "2026-11-30T03:00:00Z",
            EventKind::RunFinished {
                halt_reason: HaltReason::QueueDrainedWithParked,
                exit_code: 11,
            },
        );
        tracker.update(&store).unwrap();
        let row = store.run(run).unwrap();
        let next_day: Timestamp = "2026-12-01T04:00:00Z".parse().unwrap();
        let h = tracker.health(row.as_ref(), &facts, next_day, &UTC);
        assert_eq!(h.shipped_today, 0, "yesterday's ships are not today's");
        assert_eq!(h.shipped_this_run, 2);
        assert_eq!(h.halt_reason.as_deref(), Some("queue_drained_with_parked"));

        let file = dir.path().join("health.json");
        write(&file, &h).unwrap();
        assert_eq!(read(&file), Some(h));
        assert!(!dir.path().join("health.json.tmp").exists());
        let schema = serde_json::to_string(&schema()).unwrap();
        assert!(schema.contains("hours_since_last_ship"));
    }
}
