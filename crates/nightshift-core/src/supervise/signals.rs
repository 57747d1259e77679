//! The supervisor's signal handling: SIGTERM, SIGINT and SIGUSR1 are recorded (an atomic store,
//! async-signal-safe) and forwarded to the engine by the supervisor's loop.

use std::sync::atomic::{AtomicU32, Ordering};

use nix::sys::signal::Signal;

static PENDING: AtomicU32 = AtomicU32::new(0);

const FORWARDED: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGUSR1];

extern "C" fn on_signal(signal: nix::libc::c_int) {
    if let Some(i) = FORWARDED.iter().position(|s| *s as i32 == signal) {
        PENDING.fetch_or(1 << i, Ordering::SeqCst);
    }
}

/// Installs the handlers.
pub fn install() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, sigaction};
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in FORWARDED {
        // SAFETY: the handler only updates an atomic, which is async-signal-safe.
        let _ = unsafe { sigaction(signal, &action) };
    }
}

/// The signals received since the last call.
pub fn take() -> Vec<Signal> {
    let bits = PENDING.swap(0, Ordering::SeqCst);
    FORWARDED
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, s)| *s)
        .collect()
}
