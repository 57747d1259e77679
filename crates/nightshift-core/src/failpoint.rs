//! Failpoints for crash tests: `NIGHTSHIFT_FAILPOINT=<name>[@<n>]` makes the process kill itself
//! with SIGKILL the n-th time (default first) it passes the named point. Names are journal event
//! kinds (`Store::record` passes one for every event it journals, whichever process records it,
//! right after the event is durable) and a few effect points such as `integrate_effect_done`
//! (after git moved the target, before the journal says so).
//!
//! With `NIGHTSHIFT_FAILPOINT_ONCE=<path>` as well, the point fires only in the first process
//! that creates `<path>` (exclusively): a supervised run whose engines all inherit the
//! failpoint loses one engine there, and the restarted ones pass it.
//!
//! Unset, a failpoint costs one environment lookup on first use.

use std::sync::Mutex;
use std::sync::OnceLock;

/// The environment variable that arms a failpoint.
pub const ENV: &str = "NIGHTSHIFT_FAILPOINT";

/// The environment variable that makes an armed failpoint fire in one process only.
pub const ONCE_ENV: &str = "NIGHTSHIFT_FAILPOINT_ONCE";

struct Armed {
    name: String,
    remaining: u32,
}

fn armed() -> &'static Mutex<Option<Armed>> {
    static ARMED: OnceLock<Mutex<Option<Armed>>> = OnceLock::new();
    ARMED.get_or_init(|| {
        let parsed = std::env::var(ENV).ok().and_then(|spec| {
            let (name, n) = match spec.split_once('@') {
                Some((name, n)) => (name.to_owned(), n.parse().ok()?),
                None => (spec, 1),
            };
            Some(Armed { name, remaining: n })
        });
        Mutex::new(parsed)
    })
}

/// Passes the failpoint `name`; kills the process with SIGKILL if it is armed and due.
pub fn hit(name: &str) {
    let Ok(mut guard) = armed().lock() else {
        return;
    };
    let Some(armed) = guard.as_mut() else {
        return;
    };
    if armed.name != name {
        return;
    }
    armed.remaining = armed.remaining.saturating_sub(1);
    if armed.remaining == 0 && first_to_fire() {
        // SIGKILL, not abort: the point is to model `kill -9`, with no destructors and no flush.
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Whether this process may fire (always, unless [`ONCE_ENV`] names a file another process
/// created first).
fn first_to_fire() -> bool {
    match std::env::var_os(ONCE_ENV) {
        Some(path) if !path.is_empty() => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .is_ok(),
        _ => true,
    }
}

/// The environment variable of the full-disk seam: while the file it names exists, the state
/// database reads as full (`SQLITE_FULL` on every write) and the disk as without space.
pub const DISK_FULL_ENV: &str = "NIGHTSHIFT_FAULT_DISK_FULL_FILE";

/// Whether the full-disk seam says the disk is full now (never, unless [`DISK_FULL_ENV`] is set).
pub fn disk_full() -> bool {
    static PATH: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::var_os(DISK_FULL_ENV)
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from)
    })
    .as_ref()
    .is_some_and(|p| p.exists())
}
