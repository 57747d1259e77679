//! `nightshift run`: run the plan, or resume the unfinished run, until it halts.

use std::io::Write;
use std::sync::Arc;

use nightshift_core::clock::SystemClock;
use nightshift_core::engine::{self, RunOptions};
use nightshift_core::{config, plan};

use crate::CommandResult;
use crate::cli::RunArgs;
use crate::json::{LOG_VERSION, LogLine};
use crate::render;

pub fn run(args: &RunArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    // Everything that can be wrong with the input is found before anything is written.
    let config = config::load(&ws.root().join(config::FILE_NAME))?;
    let plan = plan::load(&config, ws.root())?;
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
            clock: Arc::new(SystemClock),
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
        print!("{}", render::debts(&store.debts()?));
    }
    Ok(summary.halt.class().code())
}
