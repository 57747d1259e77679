//! The `nightshift` binary: parses, calls the core, renders. Exit codes follow DESIGN.md §7
//! (see `docs/exit-codes.md`).

#[macro_use]
mod out;
mod cli;
mod commands;
mod error;
mod json;
mod meter;
mod render;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::CommandError;

/// Whether `path` is an executable regular file.
fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn main() -> ExitCode {
    // The scripted agent runs inside this binary so `nightshift demo` needs nothing else
    // installed; it is dispatched before clap so its own arguments pass through untouched.
    let mut args = std::env::args_os();
    let _argv0 = args.next();
    let rest: Vec<_> = args.collect();
    if rest.first().is_some_and(|a| a == "__fake-agent") {
        return exit(fake_agent::run_cli(rest.into_iter().skip(1)));
    }
    // The confinement helper must stay single-threaded (user namespaces and Landlock need it):
    // it is dispatched before anything here can start a thread.
    if rest
        .first()
        .is_some_and(|a| a == nightshift_core::sandbox::SUBCOMMAND)
    {
        return exit(nightshift_core::sandbox::exec_main(
            rest.into_iter().skip(1).collect(),
        ));
    }
    if let Ok(exe) = std::env::current_exe() {
        // The small helper binary beside this one when it is there (decision 106), else this.
        let small = exe.with_file_name(format!("nightshift-exec{}", std::env::consts::EXE_SUFFIX));
        nightshift_core::sandbox::set_helper(if is_executable(&small) { small } else { exe });
    }
    // Alerts are delivered by a detached `nightshift __deliver`, so a run never waits on them.
    nightshift_core::notify::set_launcher(commands::notify::launch_deliverer);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = match err.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => nightshift_core::halt::ExitClass::Invariant.code(),
            };
            let _ = err.print();
            return exit(code);
        }
    };
    // The output of `run` and `engine` is a side channel of the journal (see `out`).
    let side_channel = matches!(cli.command, Command::Run(_) | Command::Engine(_));
    let result = match cli.command {
        Command::Init(args) => commands::init::run(&args),
        Command::Run(args) => commands::run::run(&args),
        Command::Status(args) => commands::status::run(&args),
        Command::Log(args) => commands::log::run(&args),
        Command::Demo(args) => commands::demo::run(&args),
        Command::Restore(args) => commands::restore::run(&args),
        Command::Clean(args) => commands::clean::run(&args),
        Command::Stop(args) => commands::stop::run(&args),
        Command::Loop(args) => commands::fixpoint::run(&args),
        Command::Replay(args) => commands::replay::run(&args),
        Command::Wait(args) => commands::wait::run(&args),
        Command::Pause(args) => commands::pause::pause(&args),
        Command::Resume(args) => commands::pause::resume(&args),
        Command::Notify(args) => commands::notify::run(&args),
        Command::Deliver(args) => commands::notify::deliver(&args),
        Command::Probe(args) => commands::probe::run(&args),
        Command::Doctor(args) => commands::doctor::run(&args),
        Command::Service(args) => commands::service::run(&args),
        Command::Engine(args) => commands::engine::run(&args),
        Command::Explain(args) => commands::explain::run(&args),
        Command::Accept(args) => commands::accept::run(&args),
        Command::Confirm(args) => commands::confirm::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Tell(args) => commands::tell::run(&args),
        Command::Attach(args) => commands::attach::run(&args),
        Command::Tui(args) => commands::tui::run(&args),
        Command::Completions(args) => commands::completions::completions(&args),
        Command::Man => commands::completions::man(),
    };
    let code = match result {
        Ok(code) => code,
        Err(err) => err.report(),
    };
    exit(out::finish(code, side_channel))
}

fn exit(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The result of a command: the exit code to leave with.
pub type CommandResult = Result<i32, CommandError>;
