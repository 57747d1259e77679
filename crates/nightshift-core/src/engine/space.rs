//! A full disk pauses the run; it never crashes the engine (DESIGN.md §1.1, issue 13). A full
//! disk would fail every item in turn and every restarted engine at once ("database or disk is
//! full" five times, then a restart storm). Instead the engine alerts once, waits until there is
//! space again, and goes on by itself:
//!
//! - a journal transaction that fails on a full disk (SQLite's `SQLITE_FULL`) failed as a
//!   whole, so it is retried as it is, in place, once space returns;
//! - any other step that fails on a full disk (git, a log file: ENOSPC) is run again from the
//!   attempt's journaled phase, like a resume.
//!
//! Test seam: `NIGHTSHIFT_FAULT_DISK_FULL_FILE=<path>` makes the disk read as full while that
//! file exists ([`crate::failpoint::disk_full`]).

use std::time::Duration;

use super::EngineError;
use crate::clock::Clock;
use crate::store::{Event, EventKind, Store, StoreError, Unusable};
use crate::workspace::Workspace;

/// How often a run paused on a full disk looks again.
pub(crate) const RETRY_EVERY: Duration = Duration::from_secs(2);

/// The free space `.nightshift/` needs before the run goes on.
pub(crate) const MIN_FREE_BYTES: u64 = 16 * 1024 * 1024;

/// Whether `error` is, at its root, a full disk.
pub(crate) fn is_disk_full(error: &EngineError) -> bool {
    if let EngineError::Store(e) = error
        && e.unusable() == Some(Unusable::DiskFull)
    {
        return true;
    }
    let mut next: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && (io.kind() == std::io::ErrorKind::StorageFull
                || io.raw_os_error() == Some(nix::libc::ENOSPC))
        {
            return true;
        }
        let text = e.to_string();
        if text.contains("No space left on device") || text.contains("database or disk is full") {
            return true;
        }
        next = e.source();
    }
    false
}

/// Whether the disk holding `.nightshift/` has room again.
fn space_returned(ws: &Workspace) -> bool {
    if crate::failpoint::disk_full() {
        return false;
    }
    match nix::sys::statvfs::statvfs(&ws.dir()) {
        Ok(stat) => {
            #[cfg_attr(
                target_os = "linux",
                expect(
                    clippy::useless_conversion,
                    reason = "the block count is u64 on Linux, u32 on macOS"
                )
            )]
            let blocks = u64::from(stat.blocks_available());
            let free = blocks.saturating_mul(stat.fragment_size());
            free >= MIN_FREE_BYTES
        }
        Err(_) => true, // cannot tell: try again
    }
}

/// Waits out a full disk ([`wait_for_space`], alerting for run `run_id`); any other error is
/// returned, and so is a full disk's when a stop ends the wait.
pub(super) fn wait_if_disk_full(
    ws: &Workspace,
    clock: &dyn Clock,
    notify: &crate::config::NotifyConfig,
    run_id: &str,
    error: EngineError,
) -> Result<(), EngineError> {
    if !is_disk_full(&error) {
        return Err(error);
    }
    let cause = super::error_chain(&error);
    if wait_for_space(ws, clock, notify, run_id, &cause) {
        Ok(())
    } else {
        Err(error)
    }
}

/// Waits until the disk has room again (or a stop is asked for: `false`). Alerts once.
pub(crate) fn wait_for_space(
    ws: &Workspace,
    clock: &dyn Clock,
    notify: &crate::config::NotifyConfig,
    run_id: &str,
    cause: &str,
) -> bool {
    let mut alert = crate::notify::Alert::new(
        crate::notify::AlertKind::Paused,
        format!(
            "disk_full: the disk holding {} is full ({cause}); the run is paused and goes on by itself when space returns",
            ws.dir().display()
        ),
    );
    alert.run_id = Some(run_id.to_owned());
    crate::notify::raise(ws, clock, notify, &alert);
    loop {
        std::thread::sleep(RETRY_EVERY);
        if crate::stop::requested().is_some() {
            return false;
        }
        if space_returned(ws) {
            crate::notify::attention(
                ws,
                clock,
                "disk_full cleared: there is space again; the run goes on",
            );
            return true;
        }
    }
}

/// Journals `kind`; a transaction that fails on a full disk is retried once space returns.
pub(crate) fn record(
    store: &mut Store,
    ws: &Workspace,
    clock: &dyn Clock,
    notify: &crate::config::NotifyConfig,
    run_id: &str,
    kind: EventKind,
) -> Result<Event, StoreError> {
    loop {
        let at = clock.wall().to_string();
        match store.record(run_id, &at, kind.clone()) {
            Err(e) if e.unusable() == Some(Unusable::DiskFull) => {
                let cause = format!(
                    "database or disk is full; {} waits to be journaled",
                    kind.name()
                );
                if !wait_for_space(ws, clock, notify, run_id, &cause) {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_recognised_through_every_layer_and_nothing_else_is() {
        let enospc = EngineError::Io {
            path: "x".into(),
            source: std::io::Error::from_raw_os_error(nix::libc::ENOSPC),
        };
        assert!(is_disk_full(&enospc));
        let sqlite_full = EngineError::Store(StoreError::Sql(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        )));
        assert!(is_disk_full(&sqlite_full));
        let git = EngineError::Workspace {
            what: "run git commit: fatal: unable to write new index file: No space left on device"
                .into(),
            help: None,
        };
        assert!(is_disk_full(&git));
        let other = EngineError::Io {
            path: "x".into(),
            source: std::io::Error::from_raw_os_error(nix::libc::EACCES),
        };
        assert!(!is_disk_full(&other));
    }
}
