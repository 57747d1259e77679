//! The `Clock` seam: every timestamp the core writes comes through here, so tests can fix time.

use jiff::Timestamp;

/// A source of wall-clock timestamps for the journal.
pub trait Clock: Send + Sync {
    /// The current wall-clock time.
    fn wall(&self) -> Timestamp;
}

/// The real system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn wall(&self) -> Timestamp {
        Timestamp::now()
    }
}
