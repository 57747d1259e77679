//! `nightshift attach ITEM [--raw] [--no-follow]`: an item's agent sessions in this run, from
//! their logs under `.nightshift/logs/<run>/`, rendered readably in a plain terminal: the
//! agent's text, its tool calls (and edits), tool results, and each session's ending with its
//! spend. Follows the live session, and the next iteration's, until the item's attempt ends or
//! the run finishes (polling a few times a second; it reads only, and never takes the lock).
//! `--raw` prints the CLI's own lines as written.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use nightshift_core::halt::ExitClass;
use nightshift_core::store::{EventKind, Store};
use serde_json::Value;

use crate::CommandResult;
use crate::cli::AttachArgs;
use crate::error::CommandError;

/// How often a live session's log is read again.
const POLL: Duration = Duration::from_millis(250);
/// How much of a tool's input or result a line shows.
const CLIP: usize = 160;

pub fn run(args: &AttachArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let Some(store) = super::read_store(&ws)? else {
        println!("no run has started in {}", ws.root().display());
        return Ok(0);
    };
    let Some(run) = store.latest_run()? else {
        println!("no run has started in {}", ws.root().display());
        return Ok(0);
    };
    if !store.items(&run.id)?.iter().any(|i| i.id == args.item) {
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!("attach `{}`: run {} has no such item", args.item, run.id),
        ));
    }
    let mut shown: Vec<(PathBuf, u64, String)> = Vec::new();
    let mut out = std::io::stdout().lock();
    loop {
        for (log, header) in sessions(&store, &run.id, &args.item)? {
            let at = match shown.iter().position(|(p, _, _)| *p == log) {
                Some(at) => at,
                None => {
                    let _ = writeln!(out, "── {header}");
                    shown.push((log, 0, String::new()));
                    shown.len() - 1
                }
            };
            let (log, offset, partial) = &mut shown[at];
            let Ok(bytes) = std::fs::read(&*log) else {
                continue;
            };
            let Some(new) = bytes.get(*offset as usize..) else {
                continue;
            };
            *offset = bytes.len() as u64;
            partial.push_str(&String::from_utf8_lossy(new));
            while let Some(end) = partial.find('\n') {
                let line: String = partial.drain(..=end).collect();
                let line = line.trim_end();
                if args.raw {
                    let _ = writeln!(out, "{line}");
                } else if let Some(text) = render_line(line) {
                    let _ = writeln!(out, "{text}");
                }
            }
        }
        let _ = out.flush();
        if args.no_follow || !live(&store, &run.id, &args.item)? {
            break;
        }
        std::thread::sleep(POLL);
    }
    Ok(0)
}

/// The item's sessions in this run, oldest first: (log path, header line).
fn sessions(
    store: &Store,
    run_id: &str,
    item: &str,
) -> Result<Vec<(PathBuf, String)>, CommandError> {
    let mut found = Vec::new();
    for e in store.run_events(run_id, &["session_started"])? {
        if let EventKind::SessionStarted {
            item: i,
            attempt,
            iteration,
            log,
            ..
        } = e.kind
            && i == item
        {
            found.push((
                PathBuf::from(log),
                format!("{item} attempt {attempt} iteration {iteration} ({})", e.at),
            ));
        }
    }
    Ok(found)
}

/// Whether more can come: the run is open and the item is being worked.
fn live(store: &Store, run_id: &str, item: &str) -> Result<bool, CommandError> {
    let Some(run) = store.run(run_id)? else {
        return Ok(false);
    };
    if !run.is_running() {
        return Ok(false);
    }
    Ok(store.items(run_id)?.iter().any(|i| {
        i.id == item
            && matches!(
                i.state,
                nightshift_core::store::ItemState::Queued
                    | nightshift_core::store::ItemState::Running
            )
    }))
}

/// One line of a session's log, readably: Claude's stream-json events as words, any other line
/// as it is. `None` for bookkeeping lines.
pub fn render_line(line: &str) -> Option<String> {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return (!line.trim().is_empty()).then(|| format!("  {line}"));
    };
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "system" if v.get("subtype").and_then(Value::as_str) == Some("init") => Some(format!(
            "  session started: model {}",
            v.get("model").and_then(Value::as_str).unwrap_or("?")
        )),
        "assistant" | "user" => {
            let content = v.pointer("/message/content")?.as_array()?;
            let parts: Vec<String> = content.iter().filter_map(content_part).collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        "result" => Some(format!(
            "  session ended: {}{}{}",
            v.get("subtype").and_then(Value::as_str).unwrap_or("?"),
            v.get("num_turns")
                .and_then(Value::as_u64)
                .map(|n| format!(", {n} turns"))
                .unwrap_or_default(),
            v.get("total_cost_usd")
                .and_then(Value::as_f64)
                .map(|c| format!(", ~${c:.2} (CLI estimate)"))
                .unwrap_or_default()
        )),
        "" => Some(format!("  {}", clip(line))),
        _ => None,
    }
}

fn content_part(c: &Value) -> Option<String> {
    match c.get("type").and_then(Value::as_str)? {
        "text" => {
            let text = c.get("text").and_then(Value::as_str)?.trim();
            (!text.is_empty()).then(|| {
                text.lines()
                    .map(|l| format!("  agent: {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        "tool_use" => {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
            let input = c.get("input").cloned().unwrap_or(Value::Null);
            let what = ["command", "file_path", "path", "pattern", "description"]
                .iter()
                .find_map(|k| input.get(*k).and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| input.to_string());
            let verb = match name {
                "Edit" | "Write" | "MultiEdit" => "edit",
                _ => "tool",
            };
            Some(format!("  {verb} {name}: {}", clip(&what)))
        }
        "tool_result" => {
            let text = match c.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            };
            let error = c.get("is_error").and_then(Value::as_bool) == Some(true);
            Some(format!(
                "  {} {}",
                if error { "result (error):" } else { "result:" },
                clip(text.lines().next().unwrap_or(""))
            ))
        }
        _ => None,
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= CLIP {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(CLIP - 1).collect();
        t.push('…');
        t
    }
}
