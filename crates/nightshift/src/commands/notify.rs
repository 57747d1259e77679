//! `nightshift notify test`, and the hidden `nightshift __deliver` that empties the outbox.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use nightshift_core::clock::SystemClock;
use nightshift_core::config;
use nightshift_core::halt::ExitClass;
use nightshift_core::notify::{self, TestResult};

use crate::CommandResult;
use crate::cli::{DeliverArgs, NotifyArgs, NotifyCommand};
use crate::error::CommandError;

pub fn run(args: &NotifyArgs) -> CommandResult {
    match &args.command {
        NotifyCommand::Test(test) => {
            let ws = super::workspace(&test.repo)?;
            let config = config::load(&ws.root().join(config::FILE_NAME))?;
            let outcomes = notify::send_test(&ws, &SystemClock, &config.notify);
            let width = outcomes.iter().map(|o| o.name.len()).max().unwrap_or(0);
            let mut all = true;
            for outcome in &outcomes {
                let (word, why) = match &outcome.result {
                    TestResult::Delivered(what) => ("delivered", what),
                    TestResult::Inert(why) => ("inert", why),
                    TestResult::Failed(why) => ("failed", why),
                };
                all &= matches!(outcome.result, TestResult::Delivered(_));
                outln!("{:<width$}  {word:<9}  {why}", outcome.name);
            }
            if all {
                Ok(0)
            } else {
                outln!(
                    "not every channel delivered: fix or remove it in [notify] of nightshift.toml"
                );
                Ok(ExitClass::Execution.code())
            }
        }
    }
}

pub fn deliver(args: &DeliverArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    notify::deliver(&ws).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!(
                "deliver alerts from {}: {e}",
                notify::outbox_dir(&ws).display()
            ),
        )
    })?;
    Ok(0)
}

/// Starts `nightshift __deliver -C <root>` from this executable, detached: its own process
/// group, no terminal, stdio to /dev/null (so whoever waits on our output does not wait on it).
pub fn launch_deliverer(root: &Path) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("__deliver")
        .arg("-C")
        .arg(root)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.spawn()
}
