//! `nightshift run`: run the plan, or resume the unfinished run, until it halts.

use std::io::Write;

use nightshift_core::engine::{self, RunOptions, Until};
use nightshift_core::halt::ExitClass;
use nightshift_core::{config, plan};

use crate::CommandResult;
use crate::cli::RunArgs;
use crate::error::CommandError;
use crate::json::{LOG_VERSION, LogLine};
use crate::render;

pub fn run(args: &RunArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    // Everything that can be wrong with the input is found before anything is written.
    let config = config::load(&ws.root().join(config::FILE_NAME))?;
    let plan = plan::load(&config, ws.root())?;
    let clock = super::testclock::clock();
    let until = match &args.until {
        None => None,
        Some(text) => {
            let tz = jiff::tz::TimeZone::system();
            let at = nightshift_core::control::parse_until(text, clock.wall(), &tz).map_err(
                |reason| {
                    CommandError::new(ExitClass::Invariant, format!("read --until: {reason}"))
                        .hint("give a local time like 07:00, or an RFC 3339 time like 2026-12-01T07:00:00+01:00")
                },
            )?;
            Some(Until {
                at,
                given: text.clone(),
            })
        }
    };
    // A channel that cannot deliver here is said now, on stderr and in ATTENTION (issue 6).
    for line in nightshift_core::notify::run_starting(&ws, clock.as_ref(), &config.notify) {
        eprintln!("warning: {line}");
    }
    super::doctor::gate_run(&ws, &config)?;
    let json = args.json;
    let mut observe = |event: &nightshift_core::store::Event| {
        let mut out = std::io::stdout().lock();
        if json {
            if let Ok(line) = serde_json::to_string(&LogLine {
                version: LOG_VERSION,
                event,
            }) {
                let _ = writeln!(out, "{line}");
            }
        } else if let Some(line) = render::event_line(event) {
            let _ = writeln!(out, "{line}");
        }
    };
    let summary = engine::run(
        RunOptions {
            workspace: ws.clone(),
            config,
            plan,
            fresh: args.fresh,
            clock,
            loop_mode: false,
            until,
        },
        &mut observe,
    )?;
    if summary.halt == nightshift_core::halt::HaltReason::OperatorStop && !json {
        println!("stopped; the work in flight is preserved. `nightshift run` resumes.");
        return Ok(summary.halt.class().code());
    }
    if !json
        && let Some(store) = super::read_store(&ws)?
        && let Some(run) = store.run(&summary.run_id)?
    {
        print!("{}", render::summary(&run, &summary.items));
    }
    Ok(summary.halt.class().code())
}
