//! **Test hook, not a feature**: `NIGHTSHIFT_FAKE_NOW_FILE=<path>` makes the engine's wall
//! clock read an RFC 3339 timestamp from that file at every reading (the real time when the file
//! is missing or unreadable), so a test can move "now" past a `--until` deadline with a
//! handshake instead of a sleep. The steady clocks (session deadlines, stalls) stay real. Read
//! only here, by the binary; the library never looks at the environment for time.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use nightshift_core::clock::{Clock, SystemClock};

/// The environment variable of the hook.
pub const ENV: &str = "NIGHTSHIFT_FAKE_NOW_FILE";

/// The clock the engine runs on: the system clock, or the test hook's.
pub fn clock() -> Arc<dyn Clock> {
    match std::env::var_os(ENV) {
        Some(path) if !path.is_empty() => Arc::new(FileClock {
            path: PathBuf::from(path),
        }),
        _ => Arc::new(SystemClock),
    }
}

struct FileClock {
    path: PathBuf,
}

impl Clock for FileClock {
    fn wall(&self) -> Timestamp {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or_else(Timestamp::now)
    }

    fn mono(&self) -> Duration {
        SystemClock.mono()
    }

    fn boot(&self) -> Duration {
        SystemClock.boot()
    }
}
