//! `nightshift log [-f] [--json]`: the journal, optionally followed live.

use std::io::Write;
use std::time::Duration;

use nightshift_core::store::EventKind;

use crate::CommandResult;
use crate::cli::LogArgs;
use crate::json::{LOG_VERSION, LogLine};
use crate::render;

/// How often `-f` looks for new events. Readers never block the engine (WAL).
const POLL: Duration = Duration::from_millis(200);

pub fn run(args: &LogArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let mut after = 0;
    let mut followed_run: Option<String> = None;
    loop {
        let Some(store) = super::read_store(&ws)? else {
            if args.follow {
                std::thread::sleep(POLL);
                continue;
            }
            return Ok(0);
        };
        if args.follow && followed_run.is_none() {
            followed_run = store.latest_run()?.map(|r| r.id);
        }
        let mut finished = false;
        loop {
            let events = store.events_after(after, 1000)?;
            if events.is_empty() {
                break;
            }
            let mut out = std::io::stdout().lock();
            for event in &events {
                after = event.seq;
                if args.json {
                    if let Ok(line) = serde_json::to_string(&LogLine {
                        version: LOG_VERSION,
                        event,
                    }) {
                        crate::out::note_stdout(writeln!(out, "{line}"));
                    }
                } else {
                    let text = render::event_line(event).unwrap_or_else(|| {
                        let (item, attempt) = event.kind.item_attempt();
                        format!(
                            "{}: {}{}",
                            item.unwrap_or("run"),
                            event.kind.name(),
                            attempt
                                .map(|a| format!(" (attempt {a})"))
                                .unwrap_or_default()
                        )
                    });
                    crate::out::note_stdout(writeln!(out, "{:>5} {}  {text}", event.seq, event.at));
                }
                if matches!(event.kind, EventKind::RunFinished { .. })
                    && followed_run.as_deref().is_none_or(|r| r == event.run_id)
                    && store.latest_run()?.is_some_and(|r| r.id == event.run_id)
                {
                    finished = true;
                }
            }
            crate::out::note_stdout(out.flush());
        }
        if !args.follow || finished || crate::out::stdout_gone() {
            return Ok(0);
        }
        drop(store);
        std::thread::sleep(POLL);
    }
}
