//! `nightshift-exec`: the confinement helper alone (`nightshift __exec`, sandbox/mod.rs), a
//! small binary beside `nightshift` that every confined agent session and check starts. The
//! full binary answers `__exec` as well; this one exists because it starts in a fraction of the
//! time (it maps and relocates a few MiB, not all of `nightshift`), twice an attempt
//! (decision 106). `nightshift` uses it when it finds it next to itself.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    // Called as `nightshift` would be: `nightshift-exec __exec --spec … -- argv…`.
    if args
        .peek()
        .is_some_and(|a| a == nightshift_core::sandbox::SUBCOMMAND)
    {
        args.next();
    }
    // A spec this build cannot read came from a newer engine: the `nightshift` beside this
    // helper (the engine's own build) takes it instead.
    let full = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(format!("nightshift{}", std::env::consts::EXE_SUFFIX)));
    let code = nightshift_core::sandbox::exec_main_or_defer(args.collect(), full.as_deref());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
