//! Writing to stdout and stderr without ever panicking (issue 13): `println!` panics when the
//! write fails (`nightshift run > /dev/full`, `nightshift log | head -1`), and a panicking engine
//! was restarted by its supervisor. Every line the binary prints goes through [`outln!`] and
//! friends, which record a failure here instead.
//!
//! What a failure means is decided once, at the end (`main`): a closed pipe (EPIPE) ends a
//! command quietly with its own exit code; any other failure (ENOSPC) of a reading command is an
//! error exit (30). For `run` and `engine` the output is a side channel of the journal: a
//! failure never changes the run's exit code. Loops that would print forever (`log -f`) stop
//! once stdout is gone ([`stdout_gone`]).

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a write to stdout failed.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);
/// The first failure to write stdout that was not a closed pipe.
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Writes formatted text to stdout; a failure is recorded, never a panic.
pub fn stdout(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let result = out.write_fmt(args).and_then(|()| out.flush());
    note_stdout(result);
}

/// Writes formatted text to stderr; a failure is ignored (there is nowhere left to say it).
pub fn stderr(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args);
}

/// Records the result of a write to stdout made by hand (a locked handle).
pub fn note_stdout(result: std::io::Result<()>) {
    let Err(e) = result else { return };
    STDOUT_FAILED.store(true, Ordering::SeqCst);
    if e.kind() != std::io::ErrorKind::BrokenPipe
        && let Ok(mut slot) = STDOUT_ERROR.lock()
        && slot.is_none()
    {
        *slot = Some(e.to_string());
    }
}

/// Whether stdout can no longer be written (a closed pipe, a full disk).
pub fn stdout_gone() -> bool {
    STDOUT_FAILED.load(Ordering::SeqCst)
}

/// The exit code of a command that returned `code`, given how its output went. `side_channel`:
/// the output is not the command's product (`run`, `engine`), so a failure changes nothing.
pub fn finish(code: i32, side_channel: bool) -> i32 {
    let error = STDOUT_ERROR.lock().ok().and_then(|slot| slot.clone());
    match error {
        Some(e) if !side_channel => {
            stderr(format_args!("error: failed to write the output: {e}\n"));
            if code == 0 {
                nightshift_core::halt::ExitClass::Workspace.code()
            } else {
                code
            }
        }
        _ => code,
    }
}

/// `print!` that never panics.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*)) };
}

/// `println!` that never panics.
macro_rules! outln {
    () => { $crate::out::stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that never panics.
macro_rules! eout {
    ($($arg:tt)*) => { $crate::out::stderr(format_args!($($arg)*)) };
}

/// `eprintln!` that never panics.
macro_rules! eoutln {
    () => { $crate::out::stderr(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::stderr(format_args!("{}\n", format_args!($($arg)*))) };
}
