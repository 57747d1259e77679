//! `nightshift tell ITEM "…"`: an operator's message to an item's agent. Journaled
//! (`operator_message`, with who and when) in the unfinished run, else the latest. A live
//! session whose CLI reads messages on stdin (Claude) is given it at once (the engine polls the
//! journal; `operator_message_written`, then `operator_message_delivered` when the CLI takes it);
//! otherwise the engine puts the messages told since an item's last session into its next
//! session's prompt. The store's busy timeout lets it write beside a live run (the fold of the
//! event changes nothing).

use nightshift_core::halt::ExitClass;
use nightshift_core::store::{EventKind, Store};

use crate::CommandResult;
use crate::cli::TellArgs;
use crate::error::CommandError;

pub fn run(args: &TellArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let path = ws.state_db();
    if !path.exists() {
        return Err(no_run(&ws));
    }
    let text = args.message.trim();
    if text.is_empty() {
        return Err(CommandError::new(
            ExitClass::Invariant,
            "tell: the message is empty".to_owned(),
        )
        .hint("nightshift tell ITEM \"what to say\""));
    }
    let mut store = Store::open(&path)?;
    let run = match store.unfinished_run()? {
        Some(r) => r,
        None => store.latest_run()?.ok_or_else(|| no_run(&ws))?,
    };
    let items = store.items(&run.id)?;
    let Some(item) = items.iter().find(|i| i.id == args.item) else {
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!("tell `{}`: run {} has no such item", args.item, run.id),
        )
        .hint(format!(
            "its items: {}",
            items
                .iter()
                .map(|i| i.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let who = args
        .from
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|w| !w.trim().is_empty())
        .unwrap_or_else(|| "operator".to_owned());
    let at = super::testclock::clock().wall().to_string();
    store.record(
        &run.id,
        &at,
        EventKind::OperatorMessage {
            item: item.id.clone(),
            who: who.clone(),
            text: text.to_owned(),
        },
    )?;
    use nightshift_core::store::ItemState;
    let when = match item.state {
        ItemState::Shipped
        | ItemState::IntegratedLocal
        | ItemState::Parked
        | ItemState::Escalated
        | ItemState::AwaitingOperator => format!(
            "it is {}: no session of it is due, so it is only in the journal (and the report) unless it runs again",
            item.state
        ),
        _ if !run.is_running() => {
            "the run is finished: its next session, if the item runs again, reads it".to_owned()
        }
        _ => "a live session that takes input (Claude) gets it now, on its stdin; otherwise its next session's prompt carries it".to_owned(),
    };
    println!("told {} (run {}) as {who}: {when}", item.id, run.id);
    Ok(0)
}

fn no_run(ws: &nightshift_core::workspace::Workspace) -> CommandError {
    CommandError::new(
        ExitClass::Invariant,
        format!("tell: no run has started in {}", ws.root().display()),
    )
    .hint("`nightshift run` starts one")
}
