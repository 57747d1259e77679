//! `nightshift status`: the latest run and each item's state.

use crate::CommandResult;
use crate::cli::StatusArgs;
use crate::json::{Status, status_schema};
use crate::render;

pub fn run(args: &StatusArgs) -> CommandResult {
    if args.json_schema {
        outln!(
            "{}",
            serde_json::to_string_pretty(&status_schema()).unwrap_or_default()
        );
        return Ok(0);
    }
    let ws = super::workspace(&args.repo)?;
    let (run, items, debts) = match super::read_store(&ws)? {
        Some(store) => {
            let debts = store.debts()?;
            match store.latest_run()? {
                Some(run) => {
                    let items = store.items(&run.id)?;
                    (Some(run), items, debts)
                }
                None => (None, Vec::new(), debts),
            }
        }
        None => (None, Vec::new(), Vec::new()),
    };
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&Status::new(run.as_ref(), &items, &debts))
                .unwrap_or_default()
        );
    } else {
        match &run {
            Some(run) => {
                out!("{}", render::status(run, &items));
                if nightshift_core::control::pause_requested(&ws)
                    && run.is_running()
                    && run.pause_reason.as_deref() != Some(nightshift_core::control::OPERATOR_PAUSE)
                {
                    outln!("pause asked: the run pauses after the step in flight");
                }
                out!("{}", render::debts(&debts));
            }
            None => outln!("no run has started in {}", ws.root().display()),
        }
    }
    Ok(0)
}
