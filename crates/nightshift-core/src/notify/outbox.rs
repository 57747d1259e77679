//! The outbox: alerts waiting for their channels, one JSON file each in `.nightshift/outbox/`,
//! and the deliverer that empties it.
//!
//! `raise` writes an entry (write to a temporary name, fsync, rename) and makes sure a deliverer
//! runs; it never waits for one. The deliverer holds `.nightshift/outbox/lock` (an `flock`, so a
//! killed deliverer frees it), tries every pending delivery that is due, records each try in the
//! entry, sleeps until the next one is due, and deletes an entry once every channel has delivered
//! or given up (a give-up is written to ATTENTION). After letting go of the lock it looks once
//! more, so an alert queued while it was finishing is never stranded.
//!
//! Retry schedule per channel: 1 s, 2 s, 4 s, … doubling, at most 60 s between tries; webhooks
//! get 8 tries (about two minutes), commands 3, the desktop 2.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::store::{LockError, RunLock};
use crate::workspace::Workspace;

use super::channel::Channel;
use super::{ALERT_VERSION, Alert, AlertKind, attention};

/// The outbox directory of a repository.
pub fn outbox_dir(ws: &Workspace) -> PathBuf {
    ws.dir().join("outbox")
}

/// What a channel receives: the alert, when and where it was raised, and a version.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    pub version: u32,
    /// Unique per alert: a receiver can drop a duplicate (a try whose answer was lost).
    pub id: String,
    pub kind: AlertKind,
    pub summary: String,
    pub detail: Option<String>,
    pub run_id: Option<String>,
    pub item: Option<String>,
    /// RFC 3339, UTC.
    pub raised_at: String,
    /// The repository's root directory.
    pub repo: String,
}

impl Envelope {
    pub(super) fn new(alert: &Alert, raised_at: String, id: String, root: &Path) -> Envelope {
        Envelope {
            version: ALERT_VERSION,
            id,
            kind: alert.kind,
            summary: alert.summary.clone(),
            detail: alert.detail.clone(),
            run_id: alert.run_id.clone(),
            item: alert.item.clone(),
            raised_at,
            repo: root.display().to_string(),
        }
    }
}

/// One alert in the outbox, with where each of its channels stands.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub envelope: Envelope,
    pub deliveries: Vec<Delivery>,
}

/// One channel's delivery of one alert.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Delivery {
    pub channel: Channel,
    pub tries: u32,
    /// When the next try is due (milliseconds since the Unix epoch).
    pub next_at_ms: i64,
    pub state: DeliveryState,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

/// What one deliverer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliverReport {
    pub delivered: usize,
    pub failed: usize,
    pub tries: usize,
}

static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// A sortable, unique id: `<UTC time>-<pid>-<sequence>`.
pub(super) fn new_id(clock: &dyn Clock) -> String {
    format!(
        "{}-{}-{}",
        clock.wall().strftime("%Y%m%dT%H%M%S%.3fZ"),
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes an entry for `alert` and its channels, durably. Returns its path.
pub(super) fn enqueue(
    ws: &Workspace,
    clock: &dyn Clock,
    alert: &Alert,
    channels: Vec<Channel>,
) -> std::io::Result<PathBuf> {
    let dir = outbox_dir(ws);
    std::fs::create_dir_all(&dir)?;
    let id = new_id(clock);
    let now = clock.wall();
    let entry = Entry {
        envelope: Envelope::new(alert, now.to_string(), id.clone(), ws.root()),
        deliveries: channels
            .into_iter()
            .map(|channel| Delivery {
                channel,
                tries: 0,
                next_at_ms: now.as_millisecond(),
                state: DeliveryState::Pending,
                last_error: None,
            })
            .collect(),
    };
    let path = dir.join(format!("{id}.json"));
    write_entry(&path, &entry)?;
    Ok(path)
}

fn write_entry(path: &Path, entry: &Entry) -> std::io::Result<()> {
    use std::io::Write;
    let json = serde_json::to_vec_pretty(entry).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("tmp");
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&json)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// Starts a deliverer unless one holds the outbox lock. Never waits for it. A deliverer started
/// from the engine is spared by the engine's orphan sweeps and reaped by a thread.
pub(super) fn ensure_deliverer(ws: &Workspace, clock: &dyn Clock) {
    let lock = outbox_dir(ws).join("lock");
    match RunLock::acquire(&lock, "probe") {
        Ok(free) => drop(free),
        // The running deliverer looks again after letting go, so it will see this entry.
        Err(LockError::Held { .. }) => return,
        Err(e) => {
            attention(
                ws,
                clock,
                &format!("notify: cannot check the outbox lock: {e}"),
            );
            return;
        }
    }
    let Some(launch) = super::launcher() else {
        return;
    };
    match launch(ws.root()) {
        Ok(mut child) => {
            let pid = i32::try_from(child.id()).unwrap_or(0);
            crate::session::spare(pid);
            std::thread::spawn(move || {
                let _ = child.wait();
                crate::session::unspare(pid);
            });
        }
        Err(e) => attention(
            ws,
            clock,
            &format!(
                "notify: could not start the deliverer ({e}); alerts wait in {}",
                outbox_dir(ws).display()
            ),
        ),
    }
}

/// Delivers everything in the outbox, retrying on schedule, until it is empty; returns at once
/// when another deliverer holds the lock. This is `nightshift __deliver`.
pub fn deliver(ws: &Workspace) -> std::io::Result<DeliverReport> {
    let dir = outbox_dir(ws);
    std::fs::create_dir_all(&dir)?;
    let mut report = DeliverReport::default();
    let holder = format!("nightshift __deliver, pid {}", std::process::id());
    loop {
        let lock = match RunLock::acquire(&dir.join("lock"), &holder) {
            Ok(lock) => lock,
            Err(LockError::Held { .. }) => return Ok(report),
            Err(LockError::Io { source, .. }) => return Err(source),
        };
        drain(ws, &dir, &mut report);
        drop(lock);
        if entries(&dir).is_empty() {
            return Ok(report);
        }
    }
}

/// Whether alerts are waiting in the outbox.
pub(super) fn has_entries(ws: &Workspace) -> bool {
    !entries(&outbox_dir(ws)).is_empty()
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    paths
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// The pause before try `tries + 1`, after `tries` failed: 1 s, 2 s, 4 s, … at most 60 s.
pub(super) fn backoff(tries: u32) -> Duration {
    Duration::from_secs((1u64 << tries.saturating_sub(1).min(6)).min(60))
}

fn drain(ws: &Workspace, dir: &Path, report: &mut DeliverReport) {
    let clock = SystemClock;
    loop {
        let paths = entries(dir);
        if paths.is_empty() {
            return;
        }
        let mut next_due: Option<i64> = None;
        for path in paths {
            let entry = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<Entry>(&bytes).map_err(|e| e.to_string())
                });
            let mut entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    let aside = path.with_extension("unreadable");
                    let _ = std::fs::rename(&path, &aside);
                    attention(
                        ws,
                        &clock,
                        &format!(
                            "notify: an outbox entry could not be read ({e}); moved to {}",
                            aside.display()
                        ),
                    );
                    continue;
                }
            };
            let mut changed = false;
            for delivery in &mut entry.deliveries {
                if delivery.state != DeliveryState::Pending {
                    continue;
                }
                if delivery.next_at_ms > now_ms() {
                    next_due =
                        Some(next_due.map_or(delivery.next_at_ms, |n| n.min(delivery.next_at_ms)));
                    continue;
                }
                changed = true;
                delivery.tries += 1;
                report.tries += 1;
                match delivery.channel.send(&entry.envelope, ws.root()) {
                    Ok(_) => {
                        delivery.state = DeliveryState::Delivered;
                        delivery.last_error = None;
                        report.delivered += 1;
                    }
                    Err(why) if delivery.tries >= delivery.channel.max_tries() => {
                        delivery.state = DeliveryState::Failed;
                        report.failed += 1;
                        attention(
                            ws,
                            &clock,
                            &format!(
                                "notify: {} gave up after {} tries ({why}); the alert was: {}",
                                delivery.channel.name(),
                                delivery.tries,
                                entry.envelope.summary
                            ),
                        );
                        delivery.last_error = Some(why);
                    }
                    Err(why) => {
                        delivery.last_error = Some(why);
                        let due = now_ms()
                            + i64::try_from(backoff(delivery.tries).as_millis()).unwrap_or(60_000);
                        delivery.next_at_ms = due;
                        next_due = Some(next_due.map_or(due, |n| n.min(due)));
                    }
                }
            }
            if entry
                .deliveries
                .iter()
                .all(|d| d.state != DeliveryState::Pending)
            {
                let _ = std::fs::remove_file(&path);
            } else if changed && let Err(e) = write_entry(&path, &entry) {
                attention(
                    ws,
                    &clock,
                    &format!("notify: could not update {}: {e}", path.display()),
                );
            }
        }
        if let Some(due) = next_due {
            let wait = u64::try_from(due - now_ms()).unwrap_or(0).min(60_000);
            std::thread::sleep(Duration::from_millis(wait));
        }
    }
}
