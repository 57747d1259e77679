//! `nightshift status`: the latest run and each item's state.

use nightshift_core::supervise::live;

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
    let clock = super::testclock::clock();
    let (run, items, debts, life) = match super::read_store(&ws)? {
        Some(store) => {
            // A journal whose chain does not hold is said first (issue 12): nothing below can
            // be trusted.
            if let nightshift_core::store::chain::Verdict::Broken(t) = store.verify_chain()? {
                eoutln!("warning: store_tampered: {t}; `nightshift doctor` says what to do");
            }
            let debts = store.debts()?;
            match store.latest_run()? {
                Some(run) => {
                    let items = store.items(&run.id)?;
                    let life = live::run_life(&ws, &store, &run, clock.as_ref())?;
                    (Some(run), items, debts, Some(life))
                }
                None => (None, Vec::new(), debts, None),
            }
        }
        None => (None, Vec::new(), Vec::new(), None),
    };
    if args.json {
        let mut status = Status::new(run.as_ref(), &items, &debts);
        if let (Some(r), Some(life)) = (status.run.as_mut(), &life) {
            r.live = Some(life.state.to_owned());
            r.engine_pid = life.engine_pid;
            r.heartbeat_age_s = life.heartbeat_age_s;
            if r.halt_reason.is_none()
                && let Some(halt) = life.halt
            {
                r.halt_reason = Some(halt.as_str().to_owned());
                r.exit_code = Some(halt.class().code());
            }
        }
        outln!(
            "{}",
            serde_json::to_string_pretty(&status).unwrap_or_default()
        );
    } else {
        match &run {
            Some(run) => {
                // The state shown is what is true now, not only what the run table says.
                let mut shown = run.clone();
                let mut state = run.state.as_str();
                if let Some(life) = life.as_ref().filter(|l| l.state != "finished") {
                    state = life.state;
                    if let Some(halt) = life.halt {
                        shown.halt_reason = Some(halt.as_str().to_owned());
                        shown.exit_code = Some(halt.class().code());
                    }
                }
                out!("{}", render::status(&shown, state, &items));
                if let Some(life) = life.as_ref().filter(|l| !l.detail.is_empty()) {
                    outln!("  {}", life.detail);
                }
                if nightshift_core::control::pause_requested(&ws)
                    && run.is_running()
                    && run.pause_cause() != Some(nightshift_core::store::PauseCause::Operator)
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
