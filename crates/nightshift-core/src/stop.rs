//! Operator stop: `nightshift stop` sends SIGTERM to the engine (SIGUSR1 for `--graceful`);
//! the engine turns it into a flag that the session loop and the scheduler read, so a stop is
//! handled at a safe point, with the work preserved and the run resumable.

use std::sync::atomic::{AtomicU8, Ordering};

static REQUEST: AtomicU8 = AtomicU8::new(0);

/// What an operator asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopRequest {
    /// Finish the in-flight step, then stop.
    Graceful,
    /// End the running session now (its process group, verified), then stop.
    Now,
}

extern "C" fn on_signal(signal: nix::libc::c_int) {
    // Only an atomic store: async-signal-safe.
    let level = if signal == nix::libc::SIGUSR1 { 1 } else { 2 };
    REQUEST.fetch_max(level, Ordering::SeqCst);
}

/// Installs the handlers (SIGTERM, SIGINT → now; SIGUSR1 → graceful).
pub fn install() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGUSR1] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        let _ = unsafe { sigaction(signal, &action) };
    }
}

/// The strongest stop asked for so far.
pub fn requested() -> Option<StopRequest> {
    match REQUEST.load(Ordering::SeqCst) {
        0 => None,
        1 => Some(StopRequest::Graceful),
        _ => Some(StopRequest::Now),
    }
}

/// Whether a stop that must interrupt a running session was asked for: by an operator (the
/// whole run), or by the dispatcher for the session running on this thread
/// ([`SessionStop::request`]).
pub fn now_requested() -> bool {
    requested() == Some(StopRequest::Now)
        || SESSION_STOP.with(|flag| {
            flag.borrow()
                .as_ref()
                .is_some_and(|f| f.load(Ordering::SeqCst))
        })
}

thread_local! {
    /// The stop flag of the session this thread runs (a session runs on its own thread).
    static SESSION_STOP: std::cell::RefCell<Option<std::sync::Arc<std::sync::atomic::AtomicBool>>> =
        const { std::cell::RefCell::new(None) };
}

/// The dispatcher's way to end one session without stopping the run (a halt decided while
/// other sessions run): the session's thread [`SessionStop::enter`]s it before supervising,
/// and the session ends as `stopped` at its next tick once [`SessionStop::request`]ed.
#[derive(Debug, Clone, Default)]
pub struct SessionStop(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl SessionStop {
    /// Makes this the stop flag of the calling thread's session.
    pub fn enter(&self) {
        let flag = self.0.clone();
        SESSION_STOP.with(|f| *f.borrow_mut() = Some(flag));
    }

    /// Asks the session to end now.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether it was asked to end.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
