//! `nightshift accept ITEM`: ship an escalated (or parked) item's kept work without a new dev
//! session, after the check passes on its work merged onto the target; a review debt is
//! recorded and paid by the next run before anything else.

use nightshift_core::accept::{AcceptError, AcceptOptions, Accepted};
use nightshift_core::config;
use nightshift_core::halt::ExitClass;
use nightshift_core::store::LockError;

use crate::CommandResult;
use crate::cli::AcceptArgs;
use crate::error::{CommandError, chain};

pub fn run(args: &AcceptArgs) -> CommandResult {
    shipped(args, false)
}

/// `accept` and `confirm` share everything but the state they start from.
pub(super) fn shipped(args: &AcceptArgs, confirm: bool) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let config = config::load(&ws.root().join(config::FILE_NAME))?;
    // The test hook's clock (`NIGHTSHIFT_FAKE_NOW_FILE`), as `run` uses, else the system's.
    let clock = super::testclock::clock();
    let result = nightshift_core::accept::accept(&AcceptOptions {
        workspace: &ws,
        config: &config,
        clock: &*clock,
        item: &args.item,
        confirm,
        also_guards: None,
    });
    match result {
        Ok(done) => {
            print(&done, confirm);
            Ok(0)
        }
        Err(err) => Err(error(err, confirm)),
    }
}

fn print(done: &Accepted, confirm: bool) {
    if confirm && !done.actions.is_empty() {
        outln!("{}: confirmed: {}", done.item, done.actions.join("; "));
    }
    outln!(
        "{}: shipped attempt {} onto {} as {}",
        done.item,
        done.attempt,
        done.target,
        done.commit.get(..10).unwrap_or(&done.commit)
    );
    if let Some(debt) = &done.debt {
        outln!(
            "{}: review debt recorded ({debt}); the next `nightshift run` reviews it first",
            done.item
        );
    }
}

fn error(err: AcceptError, confirm: bool) -> CommandError {
    let verb = if confirm { "confirm" } else { "accept" };
    match err {
        AcceptError::Locked(LockError::Held { holder, .. }) => CommandError::new(
            ExitClass::Workspace,
            format!("{verb}: run_locked: a run is live ({holder})"),
        )
        .hint(format!(
            "wait for it to halt, or `nightshift stop`, then {verb} again"
        )),
        e @ (AcceptError::NoRun
        | AcceptError::UnknownItem { .. }
        | AcceptError::WrongState { .. }
        | AcceptError::NoKeptWork { .. }) => CommandError::new(ExitClass::Invariant, chain(&e))
            .hint("`nightshift status` shows every item's state"),
        e @ (AcceptError::Conflict { .. } | AcceptError::CheckRed { .. }) => {
            CommandError::new(ExitClass::HumanRequired, chain(&e)).hint(
                "nothing moved; fix it on the kept branch (`nightshift restore ITEM`) or let a new run redo the item",
            )
        }
        e @ AcceptError::GuardFailed { .. } => CommandError::new(ExitClass::Integrity, chain(&e))
            .hint("nothing moved: the kept work weakens the oracle or touches a blocked path; `nightshift restore ITEM` shows it"),
        e @ AcceptError::TargetBlocked { .. } => CommandError::new(ExitClass::Workspace, chain(&e)),
        other => CommandError::new(ExitClass::Internal, chain(&other)),
    }
}
