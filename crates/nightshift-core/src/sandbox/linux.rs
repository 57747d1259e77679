//! `__exec` on Linux: fork the target into its own session, confine it, exec it, relay its end.
//!
//! This runs in a fresh single-threaded process (the binary dispatches `__exec` before anything
//! can start a thread), which is what `unshare(CLONE_NEWUSER)` and Landlock's `restrict_self`
//! need. The parent stays small: it forwards termination signals to the target's group (the
//! session that spawned us signals *our* group, which the target left with `setsid`), waits,
//! and ends the way the target ended. It is a child subreaper: whatever the target's subtree
//! orphans (a `setsid` grandchild included) is re-parented to it, not to the engine, and when
//! the target ends (or the engine dies) it kills its whole subtree and waits it out, bounded,
//! before it exits. So a session's leftovers end with its helper, and no sweep of the engine
//! needs to reach into a sibling session (decision 100).

use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, killpg, raise, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, getgid, getpid, getppid, getuid, setsid};

use super::{Held, Network, SETUP_FAILED, Spec, keep_env, read_rules};

/// Our PDEATHSIG (see [`exec`]): a signal no CLI uses, caught by the relay loop.
const PARENT_DIED: Signal = Signal::SIGPWR;

/// How long the helper keeps killing and reaping its subtree after the target ended, before it
/// exits anyway (what is left is then re-parented to the engine, whose sweep takes it).
const SUBTREE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Signals forwarded to the target's group.
const FORWARD: [Signal; 6] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

pub(super) fn exec(spec: &Spec, argv: &[OsString], probe: bool) -> i32 {
    let status = match &spec.status {
        Some(path) => match std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
        {
            Ok(file) => Some(file),
            Err(err) => {
                eprintln!(
                    "nightshift __exec: failed to open the status file {}: {err}",
                    path.display()
                );
                return SETUP_FAILED;
            }
        },
        None => None,
    };
    let mut mask = SigSet::empty();
    for sig in FORWARD {
        mask.add(sig);
    }
    mask.add(Signal::SIGCHLD);
    mask.add(PARENT_DIED);
    let mut old = SigSet::empty();
    if let Err(err) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), Some(&mut old)) {
        eprintln!("nightshift __exec: failed to block signals: {err}");
        return SETUP_FAILED;
    }
    // A death signal of our own, armed here rather than by the engine (which spawns us with
    // `posix_spawn`, no `pre_exec` step; a SIGKILL it armed would end this process alone, and
    // the target's children — a CLI's wrapper script starts the real binary — would live on,
    // unwatched, spending and writing): on it, the target's whole group goes.
    let engine = spec
        .parent
        .and_then(|pid| i32::try_from(pid).ok())
        .map_or_else(getppid, Pid::from_raw);
    let _ = nix::sys::prctl::set_pdeathsig(PARENT_DIED);
    if getppid() != engine {
        return SETUP_FAILED; // the engine died before the signal was armed
    }
    // Orphans of the target's subtree (a `setsid` daemon, a double fork) come to us, not to the
    // engine: we end them with the target (`end_subtree`).
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let parent = getpid();
    // SAFETY: this process is single-threaded (`__exec` is dispatched before anything starts a
    // thread), so the child may do anything the parent could.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let code = child(spec, argv, probe, status, parent, &old);
            // SAFETY: _exit ends the forked child without running the parent's atexit state.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(status);
            relay(child, engine, &mask)
        }
        Err(err) => {
            eprintln!("nightshift __exec: failed to fork: {err}");
            SETUP_FAILED
        }
    }
}

/// The target's side: set up, report the level, exec. Returns only on failure.
fn child(
    spec: &Spec,
    argv: &[OsString],
    probe: bool,
    status: Option<std::fs::File>,
    parent: Pid,
    old_mask: &SigSet,
) -> i32 {
    let mut held = Held {
        session: setsid().is_ok(),
        ..Held::default()
    };
    if !held.session {
        held.reasons.push("setsid failed".into());
    }
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if getppid() != parent {
        return SETUP_FAILED;
    }
    let mut make: Vec<&PathBuf> = spec.make.iter().collect();
    make.extend(spec.tmp.iter());
    for dir in &make {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    if spec.network == Network::None {
        match enter_netns() {
            Ok(()) => held.netns = true,
            Err(reason) => held.reasons.push(reason),
        }
    }
    let mut write: Vec<PathBuf> = spec.write.clone();
    write.extend(make.into_iter().cloned());
    let mut read_also = spec.read_also.clone();
    if spec.session_files {
        // A session: the files the engine named for it (see READ_FROM_ENV, WRITE_FROM_ENV).
        read_also.extend(
            super::READ_FROM_ENV
                .iter()
                .filter_map(std::env::var_os)
                .map(PathBuf::from),
        );
        for path in super::WRITE_FROM_ENV
            .iter()
            .filter_map(std::env::var_os)
            .map(PathBuf::from)
        {
            let _ = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .open(&path);
            write.push(path);
        }
    }
    match landlock(&spec.read, &spec.deny, &read_also, &write) {
        Ok(abi) => {
            held.landlock = true;
            held.landlock_abi = abi;
        }
        Err((abi, reason)) => {
            held.landlock_abi = abi;
            held.reasons.push(reason);
        }
    }
    if let Some(mut file) = status
        && let Ok(json) = serde_json::to_vec(&held)
    {
        let _ = file.write_all(&json);
    }
    if spec.require && !held.is_full_for(spec) {
        eprintln!(
            "nightshift: confinement did not fully hold ({held}); `[sandbox] require = true` in \
             nightshift.toml refuses to run unconfined"
        );
        return SETUP_FAILED;
    }
    if probe {
        return 0;
    }
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(old_mask), None);
    let env = environment(spec);
    let Some(program) = argv.first() else {
        return SETUP_FAILED;
    };
    let (Ok(program_c), Ok(args)) = (
        CString::new(program.as_bytes()),
        argv.iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>(),
    ) else {
        eprintln!("nightshift __exec: an argument holds a NUL byte");
        return SETUP_FAILED;
    };
    let err = nix::unistd::execvpe(&program_c, &args, &env).err();
    eprintln!(
        "nightshift: could not start {}: {}",
        program.to_string_lossy(),
        err.map(std::io::Error::from)
            .map_or_else(|| "unknown error".into(), |e| e.to_string())
    );
    // Like a shell: 127 for a missing program, 126 for one that cannot be run.
    if err == Some(nix::errno::Errno::ENOENT) {
        127
    } else {
        126
    }
}

fn environment(spec: &Spec) -> Vec<CString> {
    let mut env: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| spec.env_keep.as_ref().is_none_or(|a| keep_env(a, k)))
        })
        .filter(|(k, _)| !(spec.tmp.is_some() && k == "TMPDIR"))
        .filter_map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect();
    if let Some(tmp) = &spec.tmp {
        let mut kv = b"TMPDIR=".to_vec();
        kv.extend_from_slice(tmp.as_os_str().as_bytes());
        env.extend(CString::new(kv).ok());
    }
    env
}

/// A new network namespace (inside a new user namespace unless root) with `lo` up.
fn enter_netns() -> Result<(), String> {
    use nix::sched::{CloneFlags, unshare};
    let uid = getuid();
    let gid = getgid();
    if uid.is_root() {
        unshare(CloneFlags::CLONE_NEWNET).map_err(|e| format!("network namespace refused: {e}"))?;
    } else {
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).map_err(|e| {
            format!("user namespace refused ({e}): unprivileged user namespaces are restricted")
        })?;
        let map = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text)
                .map_err(|e| format!("failed to write /proc/self/{file}: {e}"))
        };
        map("setgroups", "deny".into())?;
        map("uid_map", format!("{uid} {uid} 1"))?;
        map("gid_map", format!("{gid} {gid} 1"))?;
    }
    loopback_up().map_err(|e| format!("failed to bring up lo in the network namespace: {e}"))
}

fn loopback_up() -> std::io::Result<()> {
    // SAFETY: plain syscalls on a socket we own, with a zeroed `ifreq` naming "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let result = if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        libc::close(fd);
        result
    }
}

/// Applies Landlock; returns the ABI that held, or the ABI and why it did not.
fn landlock(
    read: &[PathBuf],
    deny: &[PathBuf],
    read_also: &[PathBuf],
    write: &[PathBuf],
) -> Result<i32, (i32, String)> {
    let abi = ABI::V6;
    let all = AccessFs::from_all(abi);
    let reading = AccessFs::from_read(abi);
    let fail = |e: landlock::RulesetError| (0, format!("landlock: {e}"));
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    for path in read_rules(read, deny).iter().chain(read_also) {
        if path.exists() {
            ruleset = add(ruleset, path, reading).map_err(fail)?;
        }
    }
    for path in write {
        if path.exists() {
            ruleset = add(ruleset, path, all).map_err(fail)?;
        }
    }
    let status = ruleset.restrict_self().map_err(fail)?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
        LandlockStatus::NotEnabled => {
            return Err((
                0,
                "landlock is built in but not enabled (boot with lsm=…,landlock)".into(),
            ));
        }
        LandlockStatus::NotImplemented => {
            return Err((
                0,
                "landlock is not in this kernel (needs Linux 5.13+)".into(),
            ));
        }
    };
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(abi),
        RulesetStatus::PartiallyEnforced if abi >= 3 => Ok(abi),
        RulesetStatus::PartiallyEnforced => Err((
            abi,
            format!("landlock ABI {abi} is too old to stop renames and truncation (needs 3+)"),
        )),
        RulesetStatus::NotEnforced => Err((abi, "landlock did not enforce the ruleset".into())),
    }
}

fn add(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    let Ok(fd) = PathFd::new(path) else {
        // Vanished between listing and opening: nothing to allow.
        return Ok(ruleset);
    };
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(ABI::V6)
    };
    ruleset.add_rule(PathBeneath::new(fd, access))
}

/// Forwards termination signals to the target's group until it ends; then ends its subtree and
/// ends the same way.
fn relay(child: Pid, engine: Pid, mask: &SigSet) -> i32 {
    loop {
        let Ok(sig) = mask.wait() else {
            continue;
        };
        if sig == PARENT_DIED {
            // PDEATHSIG follows the spawning *thread*: one of the engine's threads ending is not
            // the engine ending (we are then reparented within it, same pid).
            if getppid() == engine {
                continue;
            }
            // Not reaped yet, so the pid is still the target's.
            let _ = kill(child, Signal::SIGKILL);
            end_subtree(child);
            return die_by(Signal::SIGKILL);
        }
        if sig != Signal::SIGCHLD {
            // Before the child's setsid its group does not exist yet: signal the child itself.
            if killpg(child, sig).is_err() {
                let _ = kill(child, sig);
            }
            continue;
        }
        // Reap whatever ended: the target, or an orphan of its subtree re-parented to us.
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                    end_subtree(child);
                    return code;
                }
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                    end_subtree(child);
                    return die_by(sig);
                }
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => return SETUP_FAILED,
            }
        }
    }
}

/// Kills the target's group and then every descendant of this process, wherever its group or
/// session (we are their subreaper, so what the target's subtree orphaned is below us), reaping
/// them, until none is left or [`SUBTREE_WAIT`] has passed.
fn end_subtree(child: Pid) {
    let _ = killpg(child, Signal::SIGKILL);
    let me = getpid().as_raw();
    let deadline = std::time::Instant::now() + SUBTREE_WAIT;
    loop {
        loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => continue,
                // No child at all: as their subreaper, no descendant either.
                Err(_) => return,
            }
        }
        if std::time::Instant::now() >= deadline {
            return;
        }
        // The whole subtree at once, so a process forking as it dies leaves orphans that are
        // ours and taken in the next round.
        for pid in descendants(me) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Every live process below `root` in the process table (`/proc/<pid>/stat`'s parent field).
fn descendants(root: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let table: Vec<(i32, i32)> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = text.rsplit_once(')')?.1.split_whitespace();
            // After the command: state ppid …; a zombie is only reaped, not killed.
            let state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            (state != "Z" && state != "X").then_some((pid, ppid))
        })
        .collect();
    let mut below: std::collections::HashSet<i32> = std::collections::HashSet::from([root]);
    loop {
        let before = below.len();
        for (pid, ppid) in &table {
            if below.contains(ppid) {
                below.insert(*pid);
            }
        }
        if below.len() == before {
            break;
        }
    }
    below.remove(&root);
    below.into_iter().collect()
}

/// Ends this process by `sig` (default action), so the session sees how the target ended.
fn die_by(sig: Signal) -> i32 {
    // SAFETY: restoring the default action of a signal is always sound.
    unsafe {
        let _ = nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl);
    }
    let mut one = SigSet::empty();
    one.add(sig);
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&one), None);
    let _ = raise(sig);
    128 + sig as i32
}
