//! The `fake-agent` executable: a thin wrapper around [`fake_agent::run_cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = fake_agent::run_cli(std::env::args_os().skip(1));
    // Codes are 0-255 by construction; anything else would be a bug, reported as failure.
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}
