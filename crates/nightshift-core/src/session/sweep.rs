//! Finding and ending what a session left behind. A process that escaped its group with
//! `setsid` (a test runner, a language server) is found three ways: its working directory is
//! in the worktree, it holds a file in the worktree open, or it was re-parented to the engine
//! (which is a child subreaper on Linux). Kills are verified, not assumed.
//!
//! Several sessions may run at once (`[run] max_parallel`), so a sweep after one of them must
//! not reach a sibling: [`Reach::Session`] leaves alone every process this one [`spare`]s (a
//! live session's top process and the alert deliverer), their descendants, and every process
//! holding a live sibling's worktree ([`spare_worktree`]). Decision 100 (docs/decisions.md).

use std::path::{Path, PathBuf};
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

/// Children this process started on purpose that outlive a step (the alert deliverer, a live
/// session's top process): never a session's leftover, so a sweep leaves them alone (and,
/// with [`Reach::Session`], everything below them).
static SPARED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// The worktrees of live sessions ([`spare_worktree`]), once per registration.
static LIVE_WORKTREES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Marks a child of this process as not a leftover, until [`unspare`]: the alert deliverer, or
/// a running session's top process (its confinement helper, or the agent or check itself when
/// confinement is off). A [`Reach::Session`] sweep spares its descendants too.
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

/// Marks `dir` as the worktree of a live session, until [`unspare_worktree`]: a
/// [`Reach::Session`] sweep of any other directory leaves alone every process holding it (its
/// cwd or an open file inside it), whoever its parent. Registrations nest (each
/// [`unspare_worktree`] undoes one).
pub fn spare_worktree(dir: &Path) {
    if let Ok(mut live) = LIVE_WORKTREES.lock() {
        live.push(dir.to_path_buf());
    }
}

/// Undoes one [`spare_worktree`] of `dir`.
pub fn unspare_worktree(dir: &Path) {
    if let Ok(mut live) = LIVE_WORKTREES.lock()
        && let Some(at) = live.iter().position(|d| d == dir)
    {
        live.remove(at);
    }
}

fn spared() -> Vec<i32> {
    SPARED.lock().map(|s| s.clone()).unwrap_or_default()
}

/// The live worktrees that are a sibling's for a sweep of `dir`: not `dir` itself, nor one
/// that contains it.
fn siblings_of(dir: &Path) -> Vec<PathBuf> {
    LIVE_WORKTREES
        .lock()
        .map(|live| {
            live.iter()
                .filter(|w| !dir.starts_with(w))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Whose leftovers a sweep takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Processes holding the directory (cwd or an open file inside it).
    Holders,
    /// Those, and every child of this process that is not [`spare`]d (orphans re-parented to a
    /// subreaper, but also a live sibling session's agent and the escaped processes it still
    /// uses). Only for a process with no session of its own running; the engine uses
    /// [`Reach::Session`].
    HoldersAndOrphans,
    /// One session's leftovers while sibling sessions may be running (decision 100):
    /// processes holding the directory, and orphans re-parented to this process (children
    /// outside its process session, or in a group that is neither its own nor theirs: nothing
    /// this process starts itself looks like that). Never a [`spare`]d process or a descendant
    /// of one, never a process holding a live sibling's worktree ([`spare_worktree`]); zombies
    /// are reaped only among such orphans.
    Session,
}

/// Kills every process holding `dir` (and, with [`Reach::HoldersAndOrphans`] or
/// [`Reach::Session`], every orphan re-parented to this process, within the reach's limits),
/// then waits, at most `wait`, until none is left, reaping our zombies.
///
/// `since` (a time on the boot clock, as [`crate::clock::Clock::boot`] reads it) limits the sweep
/// to processes started after it: what existed before cannot be a leftover of this engine's
/// sessions, and checking only new processes keeps a sweep cheap.
pub fn sweep(dir: &Path, wait: Duration, reach: Reach, since: Option<Duration>) -> SweepReport {
    // The engine is a child subreaper: everything a session left behind is in a subtree under
    // one of its children. With no children at all, nothing survived, and the full /proc scan
    // (what makes a sweep cost anything) is skipped. Processes that are not its descendants
    // (a person's editor, an indexer) are not a session's leftovers.
    if reach != Reach::Holders && since.is_some() && os::has_no_children() {
        return SweepReport::default();
    }
    let Some(me) = os::me() else {
        return SweepReport::default();
    };
    let siblings = siblings_of(dir);
    let mut report = SweepReport::default();
    let started = Instant::now();
    loop {
        let table = os::proc_table();
        let found = leftovers(
            &table,
            &Scope {
                me,
                dir,
                reach,
                since,
                spared: &spared(),
                siblings: &siblings,
            },
            &mut os::holds,
        );
        for pid in found.reap {
            os::reap(pid);
        }
        if found.take.is_empty() {
            report.survivors.clear();
            return report;
        }
        for pid in &found.take {
            if !report.killed.contains(pid) && kill(Pid::from_raw(*pid), Signal::SIGKILL).is_ok() {
                report.killed.push(*pid);
            }
        }
        if started.elapsed() >= wait {
            report.survivors = found.take;
            return report;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One line of the process table, as a sweep needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// The process session.
    pub sid: i32,
    /// `Z` for a zombie, `X` for one being reaped.
    pub state: char,
    /// Start time since boot.
    pub start: Duration,
}

/// The sweeping process: which children it started itself is told by their session and group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Me {
    pub pid: i32,
    pub pgrp: i32,
    pub sid: i32,
}

/// What one pass of a sweep looks at.
struct Scope<'a> {
    me: Me,
    dir: &'a Path,
    reach: Reach,
    since: Option<Duration>,
    spared: &'a [i32],
    siblings: &'a [PathBuf],
}

/// What one pass of a sweep found.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    /// Live leftovers, to be killed.
    take: Vec<i32>,
    /// Zombie children safe to reap: nothing of ours waits for them.
    reap: Vec<i32>,
}

/// Whether a child of `me` cannot be one `me` started itself: it left `me`'s process session,
/// or sits in a group that is neither `me`'s (a git call) nor its own (a session's top
/// process, the deliverer: started with `process_group(0)`). An orphan, re-parented here.
fn escaped(p: &ProcStat, me: Me) -> bool {
    p.sid != me.sid || (p.pgrp != me.pgrp && p.pgrp != p.pid)
}

/// The decision of one pass over one read of the process table; `holds(pid, dir)` says whether
/// a process has its cwd or an open file inside `dir`.
fn leftovers(
    table: &[ProcStat],
    scope: &Scope<'_>,
    holds: &mut dyn FnMut(i32, &Path) -> bool,
) -> Found {
    let me = scope.me;
    // Clock-tick granularity: allow one tick of slack.
    let since = scope
        .since
        .map(|s| s.saturating_sub(Duration::from_millis(20)));
    let parent: std::collections::HashMap<i32, i32> =
        table.iter().map(|p| (p.pid, p.ppid)).collect();
    // Whether an ancestor of `pid` (below `me`) is spared: a live session's subtree.
    let below_spared = |pid: i32| {
        let mut at = parent.get(&pid).copied();
        for _ in 0..table.len() {
            match at {
                Some(p) if p == me.pid || p <= 1 => return false,
                Some(p) if scope.spared.contains(&p) => return true,
                Some(p) => at = parent.get(&p).copied(),
                None => return false,
            }
        }
        false
    };
    let mut found = Found::default();
    for p in table {
        if p.pid == me.pid {
            continue;
        }
        let orphan = p.ppid == me.pid && !scope.spared.contains(&p.pid);
        if matches!(p.state, 'Z' | 'X') {
            let ours = match scope.reach {
                Reach::Holders => false,
                Reach::HoldersAndOrphans => orphan,
                Reach::Session => orphan && escaped(p, me),
            };
            if ours && p.state == 'Z' {
                found.reap.push(p.pid);
            }
            continue;
        }
        if since.is_some_and(|s| p.start < s) {
            continue;
        }
        let taken = match scope.reach {
            Reach::Holders => holds(p.pid, scope.dir),
            Reach::HoldersAndOrphans => orphan || holds(p.pid, scope.dir),
            Reach::Session => {
                !scope.spared.contains(&p.pid)
                    && ((orphan && escaped(p, me)) || holds(p.pid, scope.dir))
                    && !below_spared(p.pid)
                    && !scope.siblings.iter().any(|w| holds(p.pid, w))
            }
        };
        if taken {
            found.take.push(p.pid);
        }
    }
    found
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

    /// One line of `/proc/<pid>/stat`.
    fn stat(pid: i32) -> Option<super::ProcStat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        // After the command: state ppid pgrp session …
        let state = fields.first()?.chars().next()?;
        let num = |i: usize| fields.get(i).and_then(|f| f.parse::<i32>().ok());
        // Field 22 of stat (the 20th after the command): start time in clock ticks since boot.
        let ticks: u64 = fields.get(19)?.parse().ok()?;
        // /proc reports USER_HZ ticks, which the Linux ABI fixes at 100.
        let hz = 100u64;
        let start = std::time::Duration::from_secs(ticks / hz)
            + std::time::Duration::from_nanos((ticks % hz) * 1_000_000_000 / hz);
        Some(super::ProcStat {
            pid,
            ppid: num(1)?,
            pgrp: num(2)?,
            sid: num(3)?,
            state,
            start,
        })
    }

    /// The whole process table (what can be read of it).
    pub(super) fn proc_table() -> Vec<super::ProcStat> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(stat)
            .collect()
    }

    /// This process: its pid, group and session.
    pub(super) fn me() -> Option<super::Me> {
        let pid = nix::unistd::getpid();
        Some(super::Me {
            pid: pid.as_raw(),
            pgrp: nix::unistd::getpgrp().as_raw(),
            sid: nix::unistd::getsid(None).ok()?.as_raw(),
        })
    }

    /// Whether `pid`'s working directory, or a file it holds open, is inside `dir`.
    pub(super) fn holds(pid: i32, dir: &Path) -> bool {
        if std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir)) {
            return true;
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(dir)))
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

    /// Reaps one zombie child (an orphan re-parented here that nothing else waits for).
    pub(super) fn reap(pid: i32) {
        let _ = nix::sys::wait::waitpid(
            nix::unistd::Pid::from_raw(pid),
            Some(nix::sys::wait::WaitPidFlag::WNOHANG),
        );
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    use std::path::Path;

    pub(super) fn become_subreaper() -> bool {
        false
    }

    pub(super) fn proc_table() -> Vec<super::ProcStat> {
        Vec::new()
    }

    pub(super) fn me() -> Option<super::Me> {
        None
    }

    pub(super) fn holds(_pid: i32, _dir: &Path) -> bool {
        false
    }

    pub(super) fn reap(_pid: i32) {}

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

    /// Live processes holding `dir`.
    fn holders_of(dir: &Path) -> Vec<i32> {
        os::proc_table()
            .iter()
            .filter(|p| !matches!(p.state, 'Z' | 'X') && os::holds(p.pid, dir))
            .map(|p| p.pid)
            .collect()
    }

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
        assert!(!holders_of(dir.path()).is_empty());
        let report = sweep(dir.path(), Duration::from_secs(10), Reach::Holders, None);
        assert!(!report.killed.is_empty(), "{report:?}");
        assert!(report.survivors.is_empty(), "{report:?}");
        assert!(holders_of(dir.path()).is_empty());
    }

    #[test]
    fn a_session_sweep_takes_its_leftovers_and_nothing_of_a_sibling_or_the_engine() {
        let (a, b) = (Path::new("/w/a"), Path::new("/w/b"));
        let me = Me {
            pid: 50,
            pgrp: 40,
            sid: 30,
        };
        let p = |pid, ppid, pgrp, sid, state| ProcStat {
            pid,
            ppid,
            pgrp,
            sid,
            state,
            start: Duration::from_secs(100),
        };
        let mut stranger = p(90, 1, 90, 90, 'S');
        stranger.start = Duration::from_secs(1);
        let table = [
            p(50, 1, 40, 30, 'S'),  // the engine
            p(60, 50, 60, 30, 'S'), // B's top process (its helper, or its agent), spared
            p(61, 60, 60, 30, 'S'), // B's agent's child, in A's worktree
            p(62, 50, 62, 62, 'S'), // B's escaped tool, working in B's worktree
            p(70, 50, 70, 70, 'S'), // A's escaped leftover in A's worktree
            p(71, 50, 71, 71, 'S'), // A's escaped leftover elsewhere
            p(72, 50, 65, 30, 'S'), // A's orphan that kept the engine's session
            p(80, 50, 40, 30, 'S'), // a git call of the engine's
            p(81, 50, 81, 30, 'S'), // C's top process, started, not spared yet
            stranger,               // an editor in A's worktree since before the run
            p(91, 50, 91, 91, 'Z'), // an escaped orphan that died
            p(92, 50, 40, 30, 'Z'), // a git call that ended, its waiter not there yet
            p(95, 50, 95, 30, 'Z'), // the deliverer, spared, ended
            p(96, 50, 96, 96, 'S'), // an escaped orphan in A's worktree, a file of B's open
        ];
        let held: std::collections::HashMap<i32, Vec<&Path>> = [
            (61, vec![a]),
            (62, vec![b]),
            (70, vec![a]),
            (90, vec![a]),
            (96, vec![a, b]),
        ]
        .into_iter()
        .collect();
        let mut holds = |pid: i32, dir: &Path| held.get(&pid).is_some_and(|d| d.contains(&dir));
        let run = |reach, holds: &mut dyn FnMut(i32, &Path) -> bool| {
            leftovers(
                &table,
                &Scope {
                    me,
                    dir: a,
                    reach,
                    since: Some(Duration::from_secs(50)),
                    spared: &[60, 95],
                    siblings: &[b.to_path_buf()],
                },
                holds,
            )
        };
        assert_eq!(
            run(Reach::Session, &mut holds),
            Found {
                take: vec![70, 71, 72],
                reap: vec![91],
            }
        );
        // The reach the engine had before issue 14: B's tool, the engine's own git calls and a
        // sibling just started are all "orphans" (the spared B agent alone is left), and the
        // git call's exit is reaped from under its waiter.
        assert_eq!(
            run(Reach::HoldersAndOrphans, &mut holds),
            Found {
                take: vec![61, 62, 70, 71, 72, 80, 81, 96],
                reap: vec![91, 92],
            }
        );
        assert_eq!(
            run(Reach::Holders, &mut holds),
            Found {
                take: vec![61, 70, 96],
                reap: vec![],
            }
        );
    }

    #[test]
    fn a_live_worktree_is_a_sibling_of_every_sweep_but_its_own_and_its_parents() {
        let (a, b) = (Path::new("/r/wt/a"), Path::new("/r/wt/b"));
        spare_worktree(a);
        spare_worktree(b);
        spare_worktree(b);
        let of = |dir: &Path| {
            siblings_of(dir)
                .into_iter()
                .filter(|w| w == a || w == b)
                .collect::<Vec<_>>()
        };
        assert_eq!(of(a), vec![b.to_path_buf(), b.to_path_buf()]);
        assert_eq!(of(Path::new("/r/wt/a/sub")), vec![b.to_path_buf(); 2]);
        // A sweep of every worktree (engine start) spares each live one.
        assert_eq!(of(Path::new("/r/wt")).len(), 3);
        unspare_worktree(b);
        assert_eq!(of(a), vec![b.to_path_buf()]);
        unspare_worktree(b);
        unspare_worktree(a);
        assert!(of(Path::new("/r/wt")).is_empty());
    }

    /// Set by [`two_sessions_at_once`] for the process it starts: which reach A's sweep uses.
    const SCENARIO_ENV: &str = "NIGHTSHIFT_TEST_SWEEP_REACH";

    /// Two sessions at once, in a process of their own (the sweep kills children of the
    /// process it runs in, which in the test binary would include other tests' processes): A
    /// leaks two `setsid` processes (one in its worktree, one outside) and ends; B's agent is
    /// still running and waits for a tool it started that escaped too (`setsid`, double fork)
    /// and works in B's worktree. A's sweep must end A's leftovers and neither B's agent nor
    /// its tool: B then finishes normally. The old reach, run the same way, kills B's tool, and
    /// B fails.
    #[test]
    fn a_sessions_sweep_ends_its_leftovers_and_a_running_sibling_finishes() {
        for (reach, expect) in [("session", "b finished"), ("orphans", "b lost its tool")] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "session::sweep::tests::two_sessions_at_once",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(SCENARIO_ENV, reach)
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "{reach}: {text}");
            assert!(
                text.contains(&format!("scenario: {expect}")),
                "{reach}: {text}"
            );
        }
    }

    /// Kills the pids it holds when dropped, so a failing scenario leaks nothing.
    struct Reaper(Vec<i32>);

    impl Drop for Reaper {
        fn drop(&mut self) {
            for pid in &self.0 {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            }
        }
    }

    /// Bounded wait for a real event.
    fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn pid_in(path: &Path) -> Option<i32> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    fn parent_of(pid: i32) -> Option<i32> {
        os::proc_table()
            .into_iter()
            .find(|p| p.pid == pid)
            .map(|p| p.ppid)
    }

    fn running(pid: i32) -> bool {
        os::proc_table()
            .iter()
            .any(|p| p.pid == pid && !matches!(p.state, 'Z' | 'X'))
    }

    fn spec(dir: &Path, script: &str) -> super::super::ProcessSpec {
        super::super::ProcessSpec {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            cwd: dir.to_path_buf(),
            env: Vec::new(),
            env_allow: None,
            stdin: None,
            timeout: Duration::from_secs(120),
            kill_grace: Duration::from_millis(200),
            log: dir.with_extension("log"),
            tail_bytes: 4096,
            log_limit: None,
        }
    }

    /// The body of [`a_sessions_sweep_ends_its_leftovers_and_a_running_sibling_finishes`];
    /// does nothing unless that test started it.
    #[test]
    #[ignore = "run in a process of its own by a_sessions_sweep_ends_its_leftovers_and_a_running_sibling_finishes"]
    fn two_sessions_at_once() {
        let reach = match std::env::var(SCENARIO_ENV).as_deref() {
            Ok("session") => Reach::Session,
            Ok("orphans") => Reach::HoldersAndOrphans,
            _ => return,
        };
        assert!(become_subreaper(), "this test needs PR_SET_CHILD_SUBREAPER");
        let me = std::process::id() as i32;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (wa, wb) = (root.join("a"), root.join("b"));
        for w in [&wa, &wb] {
            std::fs::create_dir(w).unwrap();
        }
        let go = wb.join("go");
        nix::unistd::mkfifo(&go, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // The dispatcher's part: both worktrees are live while their sessions run.
        spare_worktree(&wa);
        spare_worktree(&wb);

        // B: its tool escapes (a double fork and setsid, so it is re-parented to this process)
        // and answers on a pipe once told to go; B waits for the answer.
        let b_script = "echo $$ > b.pid; \
             out=$( (setsid sh -c 'echo $$ > tool.pid; read x < go; echo tool-ok' \
             </dev/null 2>/dev/null &) ); \
             echo \"tool said: $out\"; [ \"$out\" = tool-ok ] && echo b-done";
        let b_spec = spec(&wb, b_script);
        let b = std::thread::spawn(move || super::super::run(&b_spec));
        until("B's agent and its tool", || {
            pid_in(&wb.join("b.pid")).is_some() && pid_in(&wb.join("tool.pid")).is_some()
        });
        let (b_pid, tool) = (
            pid_in(&wb.join("b.pid")).unwrap(),
            pid_in(&wb.join("tool.pid")).unwrap(),
        );
        let mut reaper = Reaper(vec![tool]);
        // What the lead's dispatcher does with the pid the session reports.
        spare(b_pid);
        until("B's tool to be re-parented here", || {
            parent_of(tool) == Some(me)
        });

        // A: leaks one process in its worktree and one outside it, both in sessions of their
        // own and re-parented here, and ends.
        let a_script = format!(
            "(setsid sh -c 'echo $$ > in.pid; exec sleep 300' </dev/null >/dev/null 2>&1 &); \
             (cd / && setsid sh -c 'echo $$ > {out}; exec sleep 300' </dev/null >/dev/null 2>&1 &); \
             while [ ! -s in.pid ] || [ ! -s {out} ]; do sleep 0.01; done",
            out = wa.join("out.pid").display()
        );
        let a_end = super::super::run(&spec(&wa, &a_script)).unwrap();
        assert_eq!(a_end.exit_code, Some(0), "{a_end:?}");
        let leaks = [
            pid_in(&wa.join("in.pid")).unwrap(),
            pid_in(&wa.join("out.pid")).unwrap(),
        ];
        reaper.0.extend(leaks);
        until("A's leftovers to be re-parented here", || {
            leaks.iter().all(|l| parent_of(*l) == Some(me))
        });

        // A's sweep, while B runs.
        let report = sweep(&wa, Duration::from_secs(10), reach, None);
        assert!(report.survivors.is_empty(), "{report:?}");
        for leak in leaks {
            assert!(report.killed.contains(&leak), "{leak}: {report:?}");
            assert!(!running(leak), "A's leftover {leak} is still running");
        }
        assert!(!report.killed.contains(&b_pid), "{report:?}");
        if reach == Reach::Session {
            assert!(
                !report.killed.contains(&tool),
                "B's tool was killed: {report:?}"
            );
            assert!(running(tool), "B's tool is gone");
            assert!(running(b_pid), "B's agent is gone");
            // Go: open the FIFO once the tool is reading it (ENXIO until then).
            use std::os::unix::fs::OpenOptionsExt;
            let mut writer = None;
            until("B's tool to read its FIFO", || {
                writer = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&go)
                    .ok();
                writer.is_some()
            });
            std::io::Write::write_all(&mut writer.unwrap(), b"go\n").unwrap();
        } else {
            assert!(report.killed.contains(&tool), "{report:?}");
        }
        let b_end = b.join().unwrap().unwrap();
        let tail = String::from_utf8_lossy(&b_end.tail).into_owned();
        unspare(b_pid);
        unspare_worktree(&wb);
        unspare_worktree(&wa);
        if reach == Reach::Session {
            assert_eq!(b_end.exit_code, Some(0), "{tail}");
            assert!(tail.contains("tool said: tool-ok\nb-done"), "{tail}");
            println!("scenario: b finished");
        } else {
            // B's agent itself was spared (the old reach honoured that); it lost its tool.
            assert_eq!(b_end.exit_code, Some(1), "{tail}");
            assert!(!tail.contains("b-done"), "{tail}");
            println!("scenario: b lost its tool");
        }
    }
}
