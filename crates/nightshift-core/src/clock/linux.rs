//! Linux: read `CLOCK_MONOTONIC` (stops during suspend) and `CLOCK_BOOTTIME` (does not).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::time::{ClockId, clock_gettime};

/// `clock_gettime(2)` for one clock; `None` if the kernel does not know the clock.
fn gettime(id: ClockId) -> Option<Duration> {
    let ts = clock_gettime(id).ok()?;
    Some(Duration::new(
        u64::try_from(ts.tv_sec()).ok()?,
        u32::try_from(ts.tv_nsec()).ok()?,
    ))
}

/// `CLOCK_MONOTONIC`. Cannot fail on any supported kernel; should it, fall back to `Instant`
/// (which is `CLOCK_MONOTONIC` in std too), consistently, since the failure would be permanent.
pub(super) fn mono() -> Duration {
    gettime(ClockId::CLOCK_MONOTONIC).unwrap_or_else(|| {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    })
}

/// `CLOCK_BOOTTIME` (Linux ≥ 2.6.39). Without it, the monotonic clock: suspend then counts
/// toward deadlines only through the wall clock.
pub(super) fn boot() -> Duration {
    gettime(ClockId::CLOCK_BOOTTIME).unwrap_or_else(mono)
}
