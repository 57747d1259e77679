//! Platforms without a known boot clock: both steady clocks are `std::time::Instant`.
//!
//! Whether `Instant` counts suspended time is the platform's choice (on macOS it does not). A
//! deadline still sees a suspend through the wall clock, which advances while the host sleeps
//! and may expire a deadline; a stall timer may then either ignore the suspend (as intended) or,
//! where `Instant` counts it, fire early after resume.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

pub(super) fn mono() -> Duration {
    origin().elapsed()
}

pub(super) fn boot() -> Duration {
    mono()
}
