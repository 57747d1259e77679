//! `nightshift pause` / `nightshift resume`: an operator pause that survives restarts. `pause`
//! leaves `.nightshift/control/pause`; the engine reads it at each safe point (after the step
//! in flight), journals `run_paused` with reason `operator`, and starts nothing new until
//! `resume` removes the file (it then journals `run_unpaused` within a second).

use nightshift_core::control;
use nightshift_core::halt::ExitClass;

use crate::CommandResult;
use crate::cli::PauseArgs;
use crate::error::CommandError;

pub fn pause(args: &PauseArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let note = format!(
        "paused by pid {} at {}",
        std::process::id(),
        jiff::Timestamp::now()
    );
    let new = control::request_pause(&ws, &note).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!(
                "write the pause request {}: {e}",
                control::pause_file(&ws).display()
            ),
        )
    })?;
    if new {
        outln!(
            "pause asked: the step in flight finishes, then nothing new starts (also after a restart); `nightshift resume` goes on"
        );
    } else {
        outln!("already paused; `nightshift resume` goes on");
    }
    Ok(0)
}

pub fn resume(args: &PauseArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let had = control::clear_pause(&ws).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!(
                "remove the pause request {}: {e}",
                control::pause_file(&ws).display()
            ),
        )
    })?;
    if had {
        outln!("resumed: the run goes on within a second or two");
    } else {
        outln!("not paused");
    }
    Ok(0)
}
