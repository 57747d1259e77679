//! Finding and ending what a session left behind. A process that escaped its group with
//! `setsid` (a test runner, a language server) is found three ways: its working directory is
//! in the worktree, it holds a file in the worktree open, or it was re-parented to the engine
//! (which is a child subreaper on Linux). Kills are verified, not assumed.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Processes sent SIGKILL.
    pub killed: Vec<i32>,
    /// Processes still holding the directory when the wait ran out.
    pub survivors: Vec<i32>,
}

/// Makes this process the reaper of orphaned descendants (Linux `PR_SET_CHILD_SUBREAPER`), so
/// a grandchild that `setsid`s away is re-parented here, where a sweep can find it.
pub fn become_subreaper() -> bool {
    os::become_subreaper()
}

/// Children this process started on purpose that outlive a step (the alert deliverer): never a
/// session's leftover, so a sweep leaves them alone.
static SPARED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Marks a child of this process as not a leftover, until [`unspare`].
pub fn spare(pid: i32) {
    if let Ok(mut spared) = SPARED.lock() {
        spared.push(pid);
    }
}

/// Undoes [`spare`] (once the child is reaped).
pub fn unspare(pid: i32) {
    if let Ok(mut spared) = SPARED.lock() {
        spared.retain(|p| *p != pid);
    }
}

fn is_spared(pid: i32) -> bool {
    SPARED.lock().is_ok_and(|spared| spared.contains(&pid))
}

/// Whose leftovers a sweep takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Processes holding the directory (cwd or an open file inside it).
    Holders,
    /// Those, and every child of this process (orphans re-parented to a subreaper). Only for a
    /// process that has no child of its own running at that moment: the engine between steps.
    HoldersAndOrphans,
}

/// Kills every process holding `dir` (and, with [`Reach::HoldersAndOrphans`], every orphan
/// re-parented to this process), then waits, at most `wait`, until none is left, reaping our
/// zombies.
///
/// `since` (a time on the boot clock, as [`crate::clock::Clock::boot`] reads it) limits the sweep
/// to processes started after it: what existed before cannot be a leftover of this engine's
/// sessions, and checking only new processes keeps a sweep cheap.
pub fn sweep(dir: &Path, wait: Duration, reach: Reach, since: Option<Duration>) -> SweepReport {
    let me = std::process::id() as i32;
    // The engine is a child subreaper: everything a session left behind is in a subtree under
    // one of its children. With no children at all, nothing survived, and the full /proc scan
    // (what makes a sweep cost anything) is skipped. Processes that are not its descendants
    // (a person's editor, an indexer) are not a session's leftovers.
    if reach == Reach::HoldersAndOrphans && since.is_some() && os::has_no_children() {
        return SweepReport::default();
    }
    let mut report = SweepReport::default();
    let started = Instant::now();
    loop {
        let holders = os::holders(dir, me, reach == Reach::HoldersAndOrphans, since);
        if reach == Reach::HoldersAndOrphans {
            os::reap_zombie_children(me);
        }
        if holders.is_empty() {
            report.survivors.clear();
            return report;
        }
        for pid in &holders {
            if !report.killed.contains(pid) && kill(Pid::from_raw(*pid), Signal::SIGKILL).is_ok() {
                report.killed.push(*pid);
            }
        }
        if started.elapsed() >= wait {
            report.survivors = holders;
            return report;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The newest modification time of anything in `dir` (skipping `.git`), looking at no more
/// than 20,000 entries: a cheap "is it writing?" for stall detection.
pub(super) fn newest_mtime(dir: &Path) -> std::time::SystemTime {
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut stack = vec![dir.to_path_buf()];
    let mut budget = 20_000usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                return newest;
            }
            if entry.file_name() == ".git" {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if let Ok(m) = meta.modified() {
                newest = newest.max(m);
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    newest
}

/// One line of the process table, as the CPU count needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcCpu {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// utime + stime + cutime + cstime: its own CPU and that of the children it reaped, so a
    /// short-lived tool process's time stays counted after it ends.
    pub ticks: u64,
}

/// CPU time (clock ticks) of a supervised process's tree: the members of its process group
/// (`root` leads it) and every live descendant of `root`, wherever its group or session (the
/// confinement helper `setsid`s the CLI; CLIs start tool processes in groups of their own).
pub(super) fn tree_cpu_ticks(root: i32) -> u64 {
    tree_ticks(&os::proc_cpu(), root)
}

/// [`tree_cpu_ticks`] over a table read once.
pub(super) fn tree_ticks(table: &[ProcCpu], root: i32) -> u64 {
    let mut inside: std::collections::HashSet<i32> = table
        .iter()
        .filter(|p| p.pgrp == root || p.pid == root)
        .map(|p| p.pid)
        .collect();
    // Descendants: grow the set until no process's parent is newly inside (bounded by depth).
    loop {
        let before = inside.len();
        for p in table {
            if inside.contains(&p.ppid) {
                inside.insert(p.pid);
            }
        }
        if inside.len() == before {
            break;
        }
    }
    table
        .iter()
        .filter(|p| inside.contains(&p.pid))
        .map(|p| p.ticks)
        .sum()
}

#[cfg(target_os = "linux")]
mod os {
    use std::path::Path;

    pub(super) fn become_subreaper() -> bool {
        nix::sys::prctl::set_child_subreaper(true).is_ok()
    }

    /// (ppid, state) from `/proc/<pid>/stat`.
    fn stat(pid: i32) -> Option<(i32, char)> {
        let (ppid, state, _) = stat_full(pid)?;
        Some((ppid, state))
    }

    /// (ppid, state, start time since boot) from `/proc/<pid>/stat`.
    fn stat_full(pid: i32) -> Option<(i32, char, std::time::Duration)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        let state = fields.first()?.chars().next()?;
        let ppid = fields.get(1)?.parse().ok()?;
        // Field 22 of stat (the 20th after the command): start time in clock ticks since boot.
        let ticks: u64 = fields.get(19)?.parse().ok()?;
        // /proc reports USER_HZ ticks, which the Linux ABI fixes at 100.
        let hz = 100u64;
        let start = std::time::Duration::from_secs(ticks / hz)
            + std::time::Duration::from_nanos((ticks % hz) * 1_000_000_000 / hz);
        Some((ppid, state, start))
    }

    fn holds(pid: i32, dir: &Path) -> bool {
        if std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir)) {
            return true;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(dir)))
    }

    /// Live processes (not zombies) holding `dir`, or (with `orphans`) children of `me`,
    /// started after `since` when given.
    pub(super) fn holders(
        dir: &Path,
        me: i32,
        orphans: bool,
        since: Option<std::time::Duration>,
    ) -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        // Clock-tick granularity: allow one tick of slack.
        let since = since.map(|s| s.saturating_sub(std::time::Duration::from_millis(20)));
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| *pid != me)
            .filter(|pid| match stat_full(*pid) {
                Some((_, 'Z' | 'X', _)) | None => false,
                Some((_, _, start)) if since.is_some_and(|s| start < s) => false,
                Some((ppid, _, _)) => {
                    (orphans && ppid == me && !super::is_spared(*pid)) || holds(*pid, dir)
                }
            })
            .collect()
    }

    /// Whether this process has no child at all (`/proc/self/task/*/children`), and the kernel
    /// says so; when it cannot tell, `false` (the full scan runs).
    pub(super) fn has_no_children() -> bool {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return false;
        };
        for task in tasks.flatten() {
            match std::fs::read_to_string(task.path().join("children")) {
                Ok(list) if list.trim().is_empty() => {}
                _ => return false,
            }
        }
        true
    }

    /// The process table's CPU columns (`/proc/<pid>/stat`).
    pub(super) fn proc_cpu() -> Vec<super::ProcCpu> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| {
                let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
                // After the command: state ppid pgrp session tty tpgid flags minflt cminflt
                // majflt cmajflt utime stime cutime cstime …
                let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
                Some(super::ProcCpu {
                    pid,
                    ppid: fields.get(1)?.parse().ok()?,
                    pgrp: fields.get(2)?.parse().ok()?,
                    ticks: num(11)? + num(12)? + num(13).unwrap_or(0) + num(14).unwrap_or(0),
                })
            })
            .collect()
    }

    /// Reaps zombies that are this process's children (orphans re-parented here). Only called
    /// when the engine has no child of its own running.
    pub(super) fn reap_zombie_children(me: i32) {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        for pid in entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            if let Some((ppid, 'Z')) = stat(pid)
                && ppid == me
            {
                let _ = nix::sys::wait::waitpid(
                    nix::unistd::Pid::from_raw(pid),
                    Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                );
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use std::path::Path;

    pub(super) fn become_subreaper() -> bool {
        false
    }

    pub(super) fn holders(
        _dir: &Path,
        _me: i32,
        _orphans: bool,
        _since: Option<std::time::Duration>,
    ) -> Vec<i32> {
        Vec::new()
    }

    pub(super) fn reap_zombie_children(_me: i32) {}

    pub(super) fn has_no_children() -> bool {
        false
    }

    pub(super) fn proc_cpu() -> Vec<super::ProcCpu> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_counts_its_group_and_descendants_in_other_groups_not_strangers() {
        let p = |pid, ppid, pgrp, ticks| ProcCpu {
            pid,
            ppid,
            pgrp,
            ticks,
        };
        let table = [
            p(1, 0, 1, 1_000_000),  // init: a stranger
            p(100, 50, 100, 7),     // the supervised process (the confinement helper)
            p(101, 100, 101, 30),   // the CLI, `setsid` into a session of its own
            p(102, 101, 102, 500),  // a tool it runs in a group of its own
            p(103, 102, 102, 40),   // that tool's child
            p(104, 1, 100, 3),      // an orphan still in the group
            p(200, 50, 200, 9_999), // the engine's other child
        ];
        assert_eq!(tree_ticks(&table, 100), 7 + 30 + 500 + 40 + 3);
        assert_eq!(
            tree_ticks(&table, 999),
            0,
            "a tree that is gone has no time"
        );
    }

    #[test]
    fn a_setsid_writer_holding_the_directory_is_killed_and_verified_gone() {
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        // A grandchild that escaped with setsid (its parent exits at once), whose cwd is the
        // directory and which keeps writing there: seed 003's test runner.
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                "setsid sh -c 'touch ready; while :; do echo tick >> cache.txt; sleep 0.05; done' >/dev/null 2>&1 &",
            ])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready.exists() {
            assert!(Instant::now() < deadline, "the writer never started");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!os::holders(dir.path(), std::process::id() as i32, false, None).is_empty());
        let report = sweep(dir.path(), Duration::from_secs(10), Reach::Holders, None);
        assert!(!report.killed.is_empty(), "{report:?}");
        assert!(report.survivors.is_empty(), "{report:?}");
        assert!(os::holders(dir.path(), std::process::id() as i32, false, None).is_empty());
    }
}
