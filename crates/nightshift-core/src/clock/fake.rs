//! A settable clock for tests, in this crate and others.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;

use super::Clock;

/// A fake [`Clock`]: nothing moves unless a test moves it.
///
/// Clones share one state, so a test can keep a handle while the code under test holds an
/// `Arc<dyn Clock>` of the same clock. `mono` and `boot` start at zero.
#[derive(Debug, Clone)]
pub struct FakeClock {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    mono: Duration,
    boot: Duration,
    wall: Timestamp,
}

impl Default for FakeClock {
    /// Starts the wall clock at 2025-06-15T15:06:40Z (an arbitrary fixed instant).
    fn default() -> Self {
        Self::new(Timestamp::constant(1_750_000_000, 0))
    }
}

impl FakeClock {
    /// A fake clock whose wall clock reads `wall`.
    pub fn new(wall: Timestamp) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                mono: Duration::ZERO,
                boot: Duration::ZERO,
                wall,
            })),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock cannot leave the state half-written
        // (every update is a plain assignment), so a poisoned lock is still good.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Time passes normally: `mono`, `boot` and `wall` all advance by `d`.
    pub fn advance(&self, d: Duration) {
        let mut s = self.state();
        s.mono = s.mono.saturating_add(d);
        s.boot = s.boot.saturating_add(d);
        s.wall = add_wall(s.wall, d);
    }

    /// Only the monotonic clock advances by `d`.
    pub fn advance_mono(&self, d: Duration) {
        let mut s = self.state();
        s.mono = s.mono.saturating_add(d);
    }

    /// Only the boot clock advances by `d`: the host was suspended for `d` and the wall clock
    /// did not notice (or was corrected back). See [`FakeClock::suspend`] for a full suspend.
    pub fn advance_boot(&self, d: Duration) {
        let mut s = self.state();
        s.boot = s.boot.saturating_add(d);
    }

    /// The host sleeps for `d`: `boot` and `wall` advance by `d`, `mono` stays frozen.
    pub fn suspend(&self, d: Duration) {
        let mut s = self.state();
        s.boot = s.boot.saturating_add(d);
        s.wall = add_wall(s.wall, d);
    }

    /// Step the wall clock to `ts`, forwards or backwards; `mono` and `boot` are untouched.
    pub fn set_wall(&self, ts: Timestamp) {
        self.state().wall = ts;
    }
}

fn add_wall(wall: Timestamp, d: Duration) -> Timestamp {
    // Only calendar units can make this fail; a plain duration saturates at Timestamp::MAX.
    wall.saturating_add(d).unwrap_or(Timestamp::MAX)
}

impl Clock for FakeClock {
    fn wall(&self) -> Timestamp {
        self.state().wall
    }

    fn mono(&self) -> Duration {
        self.state().mono
    }

    fn boot(&self) -> Duration {
        self.state().boot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn each_control_moves_exactly_its_clocks() {
        let c = FakeClock::default();
        let w0 = c.wall();
        c.advance(MIN);
        assert_eq!((c.mono(), c.boot()), (MIN, MIN));
        assert_eq!(c.wall().duration_since(w0).as_secs(), 60);

        c.advance_mono(MIN);
        assert_eq!((c.mono(), c.boot()), (2 * MIN, MIN));

        c.advance_boot(MIN);
        assert_eq!((c.mono(), c.boot()), (2 * MIN, 2 * MIN));
        assert_eq!(c.wall().duration_since(w0).as_secs(), 60);

        c.suspend(MIN);
        assert_eq!((c.mono(), c.boot()), (2 * MIN, 3 * MIN));
        assert_eq!(c.wall().duration_since(w0).as_secs(), 120);

        c.set_wall(w0);
        assert_eq!(c.wall(), w0);
        assert_eq!((c.mono(), c.boot()), (2 * MIN, 3 * MIN));
    }

    #[test]
    fn clones_share_state_through_dyn_clock() {
        let c = FakeClock::default();
        let shared: Arc<dyn Clock> = Arc::new(c.clone());
        c.advance(MIN);
        assert_eq!(shared.mono(), MIN);
        assert_eq!(shared.wall(), c.wall());
    }
}
