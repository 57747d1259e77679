//! `nightshift completions SHELL` and `nightshift man`: generated from the command line's own
//! definition (clap_complete, clap_mangen), so they never drift from it.

use std::io::Write as _;

use clap::CommandFactory;

use nightshift_core::halt::ExitClass;

use crate::CommandResult;
use crate::cli::{Cli, CompletionsArgs};
use crate::error::CommandError;

pub fn completions(args: &CompletionsArgs) -> CommandResult {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "nightshift", &mut std::io::stdout());
    Ok(0)
}

/// The man page: the synopsis, every (visible) subcommand with its summary, the options.
pub fn man() -> CommandResult {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| {
            CommandError::new(ExitClass::Execution, format!("render the man page: {e}"))
        })?;
    std::io::stdout()
        .write_all(&out)
        .map_err(|e| CommandError::new(ExitClass::Execution, format!("write the man page: {e}")))?;
    Ok(0)
}
