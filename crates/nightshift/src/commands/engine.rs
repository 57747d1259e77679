//! `nightshift engine` (hidden): the run loop. Runs the plan, or resumes the unfinished run,
//! until it halts. `nightshift run` starts it as a child and restarts it when it dies.

use std::io::Write;

use nightshift_core::engine::{self, RunOptions};
use nightshift_core::{config, failpoint, plan};

use crate::CommandResult;
use crate::cli::EngineArgs;
use crate::json::{LOG_VERSION, LogLine};
use crate::render;

/// The failpoint passed as an engine starts, before it reads anything (tests: an engine that
/// dies at once).
pub const START_FAILPOINT: &str = "engine_started";

pub fn run(args: &EngineArgs) -> CommandResult {
    failpoint::hit(START_FAILPOINT);
    let ws = super::workspace(&args.repo)?;
    // Everything that can be wrong with the input is found before anything is written.
    let (config, source) = config::load_with_source(&ws.root().join(config::FILE_NAME))?;
    let plan = plan::load(&config, ws.root())?;
    let clock = super::testclock::clock();
    let until = super::run::parse_until(args.until.as_deref(), clock.as_ref())?.map(|mut u| {
        if let Some(given) = &args.until_given {
            given.clone_into(&mut u.given);
        }
        u
    });
    let json = args.json;
    let mut progress = render::Progress::default();
    let mut observe = |event: &nightshift_core::store::Event| {
        let mut out = std::io::stdout().lock();
        if json {
            if let Ok(line) = serde_json::to_string(&LogLine {
                version: LOG_VERSION,
                event,
            }) {
                crate::out::note_stdout(writeln!(out, "{line}"));
            }
        } else if let Some(line) = progress.line(event) {
            crate::out::note_stdout(writeln!(out, "{line}"));
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
            restart_after: args.restart_after,
            config_source: Some(source),
            reload_config: args.reload_config,
            previous_exit: args.previous_exit.clone(),
            // Checks get `[check] network` from the copy the run pinned.
            confine_checks: true,
        },
        &mut observe,
    )?;
    if summary.already_halted {
        eoutln!(
            "nightshift: run {} already halted ({}); a restart starts no new run",
            summary.run_id,
            summary.halt.as_str()
        );
        return Ok(summary.halt.class().code());
    }
    if summary.halt == nightshift_core::halt::HaltReason::OperatorStop && !json {
        outln!("stopped; the work in flight is preserved. `nightshift run` resumes.");
        return Ok(summary.halt.class().code());
    }
    if !json
        && let Some(store) = super::read_store(&ws)?
        && let Some(run) = store.run(&summary.run_id)?
    {
        out!("{}", render::summary(&run, &summary.items));
        out!("{}", render::debts(&store.debts()?));
        out!("{}", super::report::terminal_report(&ws));
    }
    Ok(summary.halt.class().code())
}
