//! `nightshift clean [--dry-run] [--older-than D]`.

use nightshift_core::clean::{self, Removal};
use nightshift_core::config::parse_duration;
use nightshift_core::halt::ExitClass;
use nightshift_core::store::{LockError, RunLock};

use crate::CommandResult;
use crate::cli::CleanArgs;
use crate::error::{CommandError, chain};

pub fn run(args: &CleanArgs) -> CommandResult {
    let older_than = parse_duration(&args.older_than).map_err(|e| {
        CommandError::new(
            ExitClass::Invariant,
            format!("read --older-than `{}`: {e}", args.older_than),
        )
    })?;
    let ws = super::workspace(&args.repo)?;
    // Never while a run works here: take its lock (when there is a .nightshift at all).
    let _lock = if ws.dir().exists() {
        Some(
            RunLock::acquire(
                &ws.lock(),
                &format!("nightshift clean, pid {}", std::process::id()),
            )
            .map_err(|e| match e {
                LockError::Held { holder, .. } => CommandError::new(
                    ExitClass::Workspace,
                    format!("clean: run_locked: a run is working here ({holder})"),
                )
                .hint("clean after the run halts"),
                other => CommandError::new(ExitClass::Workspace, chain(&other)),
            })?,
        )
    } else {
        None
    };
    let store = super::read_store(&ws)?;
    let plan = clean::plan(&ws, store.as_ref(), older_than)
        .map_err(|e| CommandError::new(ExitClass::Internal, chain(&e)))?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "remove"
    };
    for r in &plan.remove {
        match r {
            Removal::Ref { name, why } => outln!("{verb} ref    {name}  ({why})"),
            Removal::Branch { name, why } => outln!("{verb} branch {name}  ({why})"),
            Removal::Dir { path, why } => outln!("{verb} dir    {}  ({why})", path.display()),
        }
    }
    for k in &plan.keep {
        outln!("keep          {}  ({})", k.what, k.why);
    }
    if plan.remove.is_empty() {
        outln!("nothing to remove");
    } else if !args.dry_run {
        clean::apply(&ws, &plan).map_err(|e| CommandError::new(ExitClass::Internal, chain(&e)))?;
    }
    Ok(0)
}
