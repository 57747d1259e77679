//! `nightshift report [RUN] [--html FILE] [--json]`: the morning report of a run, from the store
//! and the receipts only (no agent, no network). Exit 0 whatever it says (a reading command);
//! an unknown RUN is exit 20. No run here: a message and exit 0, as `status`.

mod html;
mod text;

use std::path::Path;

use nightshift_core::config;
use nightshift_core::halt::ExitClass;
use nightshift_core::report::morning::{self, Caps, Morning};
use nightshift_core::store::Store;
use nightshift_core::workspace::Workspace;

use crate::CommandResult;
use crate::cli::ReportArgs;
use crate::error::{CommandError, chain};
use crate::json::{REPORT_VERSION, Report, report_schema};

pub use html::page;
pub use text::{render, thousands};

pub fn run(args: &ReportArgs) -> CommandResult {
    if args.json_schema {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report_schema()).unwrap_or_default()
        );
        return Ok(0);
    }
    let ws = super::workspace(&args.repo)?;
    let report = match super::read_store(&ws)? {
        Some(store) => build(&ws, &store, args.run.as_deref(), args.key.as_deref())?,
        None => None,
    };
    if let (Some(path), Some(r)) = (&args.html, &report) {
        write_page(path, r)?;
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&Report {
                version: REPORT_VERSION,
                report,
            })
            .unwrap_or_default()
        );
        return Ok(0);
    }
    match &report {
        Some(r) => {
            out!("{}", render(r));
            if let Some(path) = &args.html {
                outln!("\nthe report as a page: {}", path.display());
            }
        }
        None => outln!("no run has started in {}", ws.root().display()),
    }
    Ok(0)
}

/// The report of `run_id` (default: the latest run), or `None` when no run has started.
pub fn build(
    ws: &Workspace,
    store: &Store,
    run_id: Option<&str>,
    key: Option<&Path>,
) -> Result<Option<Morning>, CommandError> {
    let run = match run_id {
        Some(id) => Some(store.run(id)?.ok_or_else(|| {
            CommandError::new(
                ExitClass::Invariant,
                format!("report on run `{id}`: no such run in this repository"),
            )
            .hint("`nightshift status` names the latest run; omit RUN to report on it")
        })?),
        None => store.latest_run()?,
    };
    let Some(run) = run else {
        return Ok(None);
    };
    let receipts = morning::receipts::load(ws, &run.id, key)
        .map_err(|e| CommandError::new(ExitClass::Workspace, chain(&e)))?;
    let report = morning::build(store, &run, &receipts, caps(ws)).map_err(|e| match e {
        morning::MorningError::Store(e) => CommandError::from(e),
    })?;
    Ok(Some(report))
}

/// The run caps the spend chart is drawn against: the configuration's, when it loads.
fn caps(ws: &Workspace) -> Caps {
    match config::load(&ws.root().join(config::FILE_NAME)) {
        Ok(c) => Caps {
            run_tokens: c.budget.run_tokens,
            run_usd: c.budget.run_usd,
        },
        Err(_) => Caps::default(),
    }
}

/// Writes the HTML page to `path`.
pub fn write_page(path: &Path, report: &Morning) -> Result<(), CommandError> {
    std::fs::write(path, page(report)).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("write the report page {}: {e}", path.display()),
        )
    })
}

/// The terminal report of the latest run, for `run` and `demo` to print at their end (empty when
/// it cannot be built: the run's own summary already said what happened).
pub fn terminal_report(ws: &Workspace) -> String {
    let Ok(Some(store)) = super::read_store(ws) else {
        return String::new();
    };
    match build(ws, &store, None, None) {
        Ok(Some(r)) => render(&r),
        _ => String::new(),
    }
}

/// How an operator's message reached the agent, in words.
fn delivery(m: &nightshift_core::report::morning::OperatorMessage) -> String {
    let to = m.delivered_to.as_deref().unwrap_or("?");
    let at = m.delivered_at.as_deref().unwrap_or("?");
    match m.delivered.as_str() {
        "live" => format!("delivered live to {to} at {at}"),
        "prompt" => format!("in the prompt of {to}, started {at}"),
        _ => "not delivered: no session of the item started after it".to_owned(),
    }
}
