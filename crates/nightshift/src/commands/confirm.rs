//! `nightshift confirm ITEM`: an operator did what an `awaiting_operator` item listed (a DNS
//! record, a secret); record it and ship the item's kept work, the check re-run on the merged
//! result first.

use crate::CommandResult;
use crate::cli::AcceptArgs;

pub fn run(args: &AcceptArgs) -> CommandResult {
    super::accept::shipped(args, true)
}
