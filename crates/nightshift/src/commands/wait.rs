//! `nightshift wait [--for actionable|finished|any] [--timeout D]`: exit-to-wake. Follows the
//! journal read-only from its current end and, the moment an event of the asked class is
//! recorded, prints it as one JSON line and exits with its class (docs/operator-control.md).
//! A run that has already halted (the journal ends with its `run_finished` or `run_stopped`) is
//! reported at once.

use std::io::Write;
use std::time::{Duration, Instant};

use nightshift_core::halt::ExitClass;
use nightshift_core::store::{Event, EventKind};
use nightshift_core::wake::{self, WaitFor, Wake};

use crate::CommandResult;
use crate::cli::WaitArgs;
use crate::error::CommandError;
use crate::json::{WAIT_VERSION, WaitLine, wait_schema};

/// How often the journal is read (readers never block the engine: WAL). Well under the
/// one-second promise.
const POLL: Duration = Duration::from_millis(100);

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
            }
        }
        if timeout.is_some_and(|t| started.elapsed() >= t) {
            return Ok(emit(None, None));
        }
        std::thread::sleep(POLL);
    }
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
    };
    let mut out = std::io::stdout().lock();
    if let Ok(text) = serde_json::to_string(&line) {
        crate::out::note_stdout(writeln!(out, "{text}"));
    }
    crate::out::note_stdout(out.flush());
    exit_code
}
