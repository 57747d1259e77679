//! The `Clock` seam: every timestamp the core writes, and every deadline it keeps, comes through
//! here, so tests can fix time (DESIGN §5, "Deadlines" and "Stall").
//!
//! Three clocks, because a laptop that sleeps overnight makes them disagree:
//!
//! | clock  | counts through suspend | may step | used for |
//! |--------|------------------------|----------|----------|
//! | `mono` | no                     | no       | stall (silence) timers |
//! | `boot` | yes (Linux)            | no       | session deadlines |
//! | `wall` | yes                    | yes, both ways | journal timestamps; may only *expire* a deadline |
//!
//! `mono` and `boot` are durations since an arbitrary, per-clock origin: only differences between
//! two readings of the *same* clock mean anything.
//!
//! [`Deadline`] and [`StallTimer`] are pure evaluations over a clock; nothing here sleeps or
//! wakes anyone. The caller re-evaluates on a short tick ([`TICK`]), because a timer armed on the
//! monotonic clock (tokio's included) does not see time that passed while the host was suspended.

mod deadline;
mod fake;

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod os;
#[cfg(not(target_os = "linux"))]
#[path = "fallback.rs"]
mod os;

use std::time::Duration;

use jiff::Timestamp;

pub use deadline::{Deadline, StallTimer, TICK};
pub use fake::FakeClock;

/// A source of time: wall-clock timestamps for the journal, and two steady clocks for deadlines.
pub trait Clock: Send + Sync {
    /// The current wall-clock time. May step backwards or forwards (NTP, an operator, a VM
    /// restore); never measure a duration with it alone.
    fn wall(&self) -> Timestamp;

    /// Monotonic time since an arbitrary origin. Never goes backwards; does **not** advance
    /// while the host is suspended (Linux `CLOCK_MONOTONIC`).
    fn mono(&self) -> Duration;

    /// Boot time since an arbitrary origin. Never goes backwards; on Linux it keeps counting
    /// while the host is suspended (`CLOCK_BOOTTIME`). On platforms without such a clock it is
    /// the same reading as [`Clock::mono`], so suspended time is then seen only through the wall
    /// clock (which [`Deadline`] also consults).
    fn boot(&self) -> Duration;
}

/// The real system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn wall(&self) -> Timestamp {
        Timestamp::now()
    }

    fn mono(&self) -> Duration {
        os::mono()
    }

    fn boot(&self) -> Duration {
        os::boot()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn system_clock_steady_clocks_do_not_go_backwards() {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let (m1, b1) = (clock.mono(), clock.boot());
        let (m2, b2) = (clock.mono(), clock.boot());
        assert!(m2 >= m1, "mono went backwards: {m1:?} -> {m2:?}");
        assert!(b2 >= b1, "boot went backwards: {b1:?} -> {b2:?}");
        // Both are real readings, not a stub returning zero forever.
        assert!(b1 > Duration::ZERO || m1 > Duration::ZERO);
    }

    #[test]
    fn system_clock_deadline_is_live() {
        let clock = SystemClock;
        let zero = Deadline::after(&clock, Duration::ZERO);
        assert!(zero.expired(&clock));
        let long = Deadline::after(&clock, Duration::from_secs(3600));
        assert!(!long.expired(&clock));
        assert!(long.remaining(&clock) <= Duration::from_secs(3600));
    }
}
