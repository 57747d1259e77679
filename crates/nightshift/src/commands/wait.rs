//! `nightshift wait [--for actionable|finished|any] [--timeout D]`: exit-to-wake. Follows the
//! journal read-only from its current end and, the moment an event of the asked class is
//! recorded, prints it as one JSON line and exits with its class (docs/operator-control.md).
//! A run that has already halted (the journal ends with its `run_finished` or `run_stopped`) is
//! reported at once.
//!
//! An engine that writes no event because it cannot (frozen, or dead with nobody to restart
//! it) must not keep `wait` waiting forever: while the journal is quiet, `wait` reads what is
//! true of the open run as `status` does ([`live::run_life`]) and wakes on `heartbeat_stale`,
//! `restart_storm`, or `dead` (no engine and no live supervisor, for [`DEAD_GRACE`]).

use std::io::Write;
use std::time::{Duration, Instant};

use nightshift_core::halt::ExitClass;
use nightshift_core::store::{Event, EventKind};
use nightshift_core::supervise::live;
use nightshift_core::wake::{self, WaitFor, Wake};

use crate::CommandResult;
use crate::cli::WaitArgs;
use crate::error::CommandError;
use crate::json::{WAIT_VERSION, WaitLine, wait_schema};

/// How often the journal is read (readers never block the engine: WAL). Well under the
/// one-second promise.
const POLL: Duration = Duration::from_millis(100);

/// How often the run's life (lock holder, heartbeat, supervisor) is read while nothing is
/// journaled.
const LIFE_EVERY: Duration = Duration::from_millis(500);

/// How long a run must stay dead (no engine, no live supervisor) before `wait` says so: an
/// engine just started by `nightshift run` takes the lock a moment after its supervisor starts.
const DEAD_GRACE: Duration = Duration::from_secs(2);

pub fn run(args: &WaitArgs) -> CommandResult {
    if args.json_schema {
        outln!(
            "{}",
            serde_json::to_string_pretty(&wait_schema()).unwrap_or_default()
        );
        return Ok(0);
    }
    let for_ = match args.for_.as_str() {
        "finished" => WaitFor::Finished,
        "any" => WaitFor::Any,
        _ => WaitFor::Actionable,
    };
    let timeout = match &args.timeout {
        None => None,
        Some(text) => Some(
            nightshift_core::config::parse_duration(text).map_err(|reason| {
                CommandError::new(
                    ExitClass::Invariant,
                    format!("read --timeout `{text}`: {reason}"),
                )
                .hint(format!(
                    "give a duration such as {}",
                    nightshift_core::config::DURATION_FORMS
                ))
            })?,
        ),
    };
    let ws = super::workspace(&args.repo)?;
    let started = Instant::now();
    let mut store = ready_store(&ws, started)?;
    let mut after = 0;
    if let Some(store) = &store {
        after = store.last_seq()?;
        // A run that already halted wakes at once: waiting for it would never end.
        if let Some(last) = store.events_after(after - 1, 1)?.into_iter().next()
            && matches!(
                last.kind,
                EventKind::RunFinished { .. } | EventKind::RunStopped { .. }
            )
            && let Some(wake) = wake::classify(&last, for_)
        {
            return Ok(emit(Some(&last), Some(wake)));
        }
    }
    // The handshake line: from here on every new event is seen.
    eoutln!(
        "nightshift wait: watching for {} events after journal entry {after}",
        for_.as_str()
    );
    let clock = super::testclock::clock();
    let mut life_read: Option<Instant> = None;
    let mut dead_since: Option<Instant> = None;
    loop {
        if store.is_none() {
            store = ready_store(&ws, started)?;
        }
        if let Some(store) = &store {
            loop {
                let events = store.events_after(after, 1000)?;
                if events.is_empty() {
                    break;
                }
                for event in &events {
                    after = event.seq;
                    if let Some(wake) = wake::classify(event, for_) {
                        return Ok(emit(Some(event), Some(wake)));
                    }
                }
                dead_since = None;
            }
            if life_read.is_none_or(|at| at.elapsed() >= LIFE_EVERY) {
                life_read = Some(Instant::now());
                if let Some(code) = engine_down(&ws, store, clock.as_ref(), &mut dead_since)? {
                    return Ok(code);
                }
            }
        }
        if timeout.is_some_and(|t| started.elapsed() >= t) {
            return Ok(emit(None, None));
        }
        std::thread::sleep(POLL);
    }
}

/// Wakes (prints the line, returns the exit code) when the open run's engine cannot journal:
/// frozen or not beating (`heartbeat_stale`), given up on by its supervisor (`restart_storm`),
/// or dead with no supervisor alive to restart it for [`DEAD_GRACE`] (`dead`).
fn engine_down(
    ws: &nightshift_core::workspace::Workspace,
    store: &nightshift_core::store::Store,
    clock: &dyn nightshift_core::clock::Clock,
    dead_since: &mut Option<Instant>,
) -> Result<Option<i32>, CommandError> {
    let Some(run) = store.unfinished_run()? else {
        *dead_since = None;
        return Ok(None);
    };
    let life = live::run_life(ws, store, &run, clock)?;
    match life.state {
        "heartbeat_stale" | "restart_storm" => Ok(Some(emit_life(&life))),
        "dead" if !supervisor_alive(ws, &run.id) => {
            let since = *dead_since.get_or_insert_with(Instant::now);
            Ok((since.elapsed() >= DEAD_GRACE).then(|| emit_life(&life)))
        }
        _ => {
            *dead_since = None;
            Ok(None)
        }
    }
}

/// Whether a supervisor that is still working on `run_id` is alive (it restarts a dead engine).
fn supervisor_alive(ws: &nightshift_core::workspace::Workspace, run_id: &str) -> bool {
    use nightshift_core::supervise::health;
    health::read(&health::path(ws)).is_some_and(|h| {
        h.run_id.as_deref().is_none_or(|r| r == run_id)
            && !matches!(h.state.as_str(), "finished" | "stopped" | "restart_storm")
            && i32::try_from(h.supervisor_pid).is_ok_and(|pid| {
                pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
            })
    })
}

/// Prints the line for a run whose engine is down and returns the exit code (the halt's
/// class, liveness for a dead engine).
fn emit_life(life: &live::RunLife) -> i32 {
    let exit_code = life
        .halt
        .map_or(ExitClass::Liveness.code(), |h| h.class().code());
    let line = WaitLine {
        version: WAIT_VERSION,
        wake: life.state.to_owned(),
        exit_code,
        halt_reason: life.halt.map(|h| h.as_str().to_owned()),
        event: None,
        detail: Some(life.detail.clone()),
    };
    print_line(&line);
    exit_code
}

/// The store once it can be read: an engine may be creating it this very moment (the file
/// exists before its tables), so an unreadable journal counts as "not yet" for a while.
fn ready_store(
    ws: &nightshift_core::workspace::Workspace,
    started: Instant,
) -> Result<Option<nightshift_core::store::Store>, CommandError> {
    const GRACE: Duration = Duration::from_secs(10);
    match super::read_store(ws) {
        Ok(Some(store)) => match store.last_seq() {
            Ok(_) => Ok(Some(store)),
            Err(_) if started.elapsed() < GRACE => Ok(None),
            Err(e) => Err(e.into()),
        },
        Ok(None) => Ok(None),
        Err(_) if started.elapsed() < GRACE => Ok(None),
        Err(e) => Err(e),
    }
}

/// Prints the line and returns the exit code.
fn emit(event: Option<&Event>, wake: Option<Wake>) -> i32 {
    let exit_code = wake.map_or(wake::TIMEOUT_EXIT, |w| w.exit_code);
    let line = WaitLine {
        version: WAIT_VERSION,
        wake: wake.map_or_else(
            || "timeout".to_owned(),
            |w| {
                serde_json::to_value(w.class)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            },
        ),
        exit_code,
        halt_reason: wake
            .and_then(|w| w.halt_reason)
            .map(|h| h.as_str().to_owned()),
        event: event.and_then(|e| serde_json::to_value(e).ok()),
        detail: None,
    };
    print_line(&line);
    exit_code
}

fn print_line(line: &WaitLine) {
    let mut out = std::io::stdout().lock();
    if let Ok(text) = serde_json::to_string(line) {
        crate::out::note_stdout(writeln!(out, "{text}"));
    }
    crate::out::note_stdout(out.flush());
}
