//! Confinement for agent and check processes (DESIGN.md §3 "Processes", §5 "Spawn").
//!
//! A spawn site wraps its argv with [`Confinement::wrap`]: the process then starts as
//! `nightshift __exec --spec <json> -- <argv…>`, a single-threaded re-exec of the binary that
//! forks the target into its own process session (`setsid`, so it shares no group with the
//! engine or the supervisor), sets `PR_SET_PDEATHSIG`, puts checks in a network namespace with
//! no route out, applies Landlock (writes only to the checkout, its temp dir and the CLI's own
//! state dirs; reads everything except the repository's `.nightshift/` and the receipt key;
//! no signals or abstract sockets outside the sandbox), and execs the target. The level that
//! held is written to [`Confinement::status`] before the exec, so the parent can record it.
//!
//! The helper must be registered by the binary ([`set_helper`]); without one (a library test,
//! another embedder) [`Confinement::wrap`] leaves the argv alone and the level is `none`.
//! Linux code lives in `linux.rs`; elsewhere `other.rs` runs the target unconfined and says so.

mod allow;
mod env;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(not(target_os = "linux"))]
mod other;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use allow::read_rules;
pub use env::{agent_env_names, env_allowlist, keep_env};

#[cfg(target_os = "linux")]
use linux as os;
#[cfg(not(target_os = "linux"))]
use other as os;

/// The hidden subcommand the binary dispatches to [`exec_main`].
pub const SUBCOMMAND: &str = "__exec";

/// The exit code of `__exec` when it could not set up or start the target (like `env(1)`'s 125).
pub const SETUP_FAILED: i32 = 125;

/// The network a confined process gets.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// The host's network (agents: their CLI talks to its API).
    #[default]
    Host,
    /// A fresh network namespace with only a loopback device (checks): no route out.
    None,
}

/// What `__exec` is asked to do before it execs the target. Paths only; no secrets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// Trees the process may read (and execute) from, minus `deny`. Usually `/`.
    pub read: Vec<PathBuf>,
    /// Trees the process may neither read nor write, even below a `read` tree (the repository's
    /// `.nightshift/`, the receipt key's directory). A `write` tree inside one stays writable.
    pub deny: Vec<PathBuf>,
    /// Trees (or files) the process may write; missing ones are skipped.
    pub write: Vec<PathBuf>,
    /// Directories created (0700) if missing, then writable: the temp dir, CLI state dirs.
    pub make: Vec<PathBuf>,
    /// The process's temp dir: created, writable, and set as `TMPDIR`.
    pub tmp: Option<PathBuf>,
    pub network: Network,
    /// Environment names kept (a trailing `*` matches a prefix); `None` keeps everything.
    pub env_keep: Option<Vec<String>>,
    /// Refuse to start the target unless every layer asked for held.
    pub require: bool,
    /// Where the level that held is written (JSON, 0600) before the target starts.
    pub status: Option<PathBuf>,
}

/// The level of confinement that held for one process, as recorded in its receipt.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Held {
    /// Landlock restricted the filesystem (and signals, abstract sockets where the ABI has them).
    pub landlock: bool,
    /// The Landlock ABI of the kernel (0: none).
    pub landlock_abi: i32,
    /// The process ran in a network namespace with loopback only.
    pub netns: bool,
    /// The process ran in its own process session.
    pub session: bool,
    /// Why a layer that was asked for did not hold (old kernel, userns restricted, macOS…).
    pub reasons: Vec<String>,
}

impl Held {
    /// `landlock+netns`, `landlock`, `netns` or `none`: the name the receipt and doctor show.
    pub fn level(&self) -> String {
        let parts: Vec<&str> = [(self.landlock, "landlock"), (self.netns, "netns")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join("+")
        }
    }

    /// Whether every layer the spec asked for held.
    pub fn is_full_for(&self, spec: &Spec) -> bool {
        self.landlock && self.session && (spec.network == Network::Host || self.netns)
    }

    fn unconfined(reason: impl Into<String>) -> Self {
        Held {
            reasons: vec![reason.into()],
            ..Held::default()
        }
    }
}

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.level())?;
        if !self.reasons.is_empty() {
            write!(f, " ({})", self.reasons.join("; "))?;
        }
        Ok(())
    }
}

static HELPER: OnceLock<PathBuf> = OnceLock::new();

/// Registers the executable that answers `__exec` (the `nightshift` binary registers itself).
pub fn set_helper(exe: PathBuf) {
    let _ = HELPER.set(exe);
}

/// The registered helper, if any.
pub fn helper() -> Option<&'static Path> {
    HELPER.get().map(PathBuf::as_path)
}

/// One confined spawn: the spec, ready to wrap an argv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Confinement {
    pub spec: Spec,
}

impl Confinement {
    /// The confinement of an agent session in `checkout`: writes to the checkout, its git dirs,
    /// `tmp` and the CLI's `state` dirs; no reads of `.nightshift/` (`state_root`) or the key dir.
    pub fn agent(checkout: &Path, state_root: &Path, tmp: PathBuf, state: Vec<PathBuf>) -> Self {
        let mut spec = base_spec(checkout, state_root, tmp);
        spec.make.extend(state);
        Confinement { spec }
    }

    /// The confinement of a check in `checkout`: like an agent's, plus `network`.
    pub fn check(checkout: &Path, state_root: &Path, tmp: PathBuf, network: Network) -> Self {
        let mut spec = base_spec(checkout, state_root, tmp);
        spec.network = network;
        Confinement { spec }
    }

    /// Sets where the level that held is written.
    pub fn status(mut self, path: PathBuf) -> Self {
        self.spec.status = Some(path);
        self
    }

    /// Refuses to start unless every layer holds (`[sandbox] require = true`).
    pub fn require(mut self, require: bool) -> Self {
        self.spec.require = require;
        self
    }

    /// `[helper, "__exec", "--spec", <json>, "--", argv…]`, or `argv` unchanged when no helper
    /// is registered (the level is then `none`, and [`Confinement::held`] says why).
    pub fn wrap(&self, argv: Vec<String>) -> Vec<String> {
        let Some(helper) = helper() else {
            return argv;
        };
        let Ok(json) = serde_json::to_string(&self.spec) else {
            return argv;
        };
        let mut out = vec![
            helper.display().to_string(),
            SUBCOMMAND.into(),
            "--spec".into(),
            json,
            "--".into(),
        ];
        out.extend(argv);
        out
    }

    /// The level that held for the process this confinement wrapped, read from its status file.
    pub fn held(&self) -> Held {
        match &self.spec.status {
            Some(path) => read_status(path),
            None => Held::unconfined("no status file was asked for"),
        }
    }
}

/// Reads a status file written by `__exec`; a missing or unreadable one means `none`.
pub fn read_status(path: &Path) -> Held {
    if helper().is_none() {
        return Held::unconfined("no confinement helper is registered");
    }
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Held::unconfined("the helper's status file is not readable JSON")),
        Err(_) => Held::unconfined("the helper did not report a level (it did not start)"),
    }
}

fn base_spec(checkout: &Path, state_root: &Path, tmp: PathBuf) -> Spec {
    let mut write = vec![checkout.to_path_buf()];
    write.extend(git_write_dirs(checkout));
    write.extend(DEVICES.iter().map(PathBuf::from));
    let mut deny = vec![state_root.to_path_buf()];
    if let Ok(key) = crate::receipt::key::key_path()
        && let Some(dir) = key.parent()
    {
        deny.push(dir.to_path_buf());
    }
    Spec {
        read: vec![PathBuf::from("/")],
        deny,
        write,
        make: Vec::new(),
        tmp: Some(tmp),
        network: Network::Host,
        env_keep: None,
        require: false,
        status: None,
    }
}

/// Devices every process writes to.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// What an agent's own `git commit` in a linked worktree writes: the worktree's private git dir,
/// the shared object store, branch refs and reflogs. Not the shared `config`, `hooks`, `info`
/// or `refs/nightshift` (preserve refs), which stay read-only.
pub fn git_write_dirs(checkout: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(checkout.join(".git")) else {
        return Vec::new();
    };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let gitdir = checkout.join(gitdir);
    let common = std::fs::read_to_string(gitdir.join("commondir"))
        .map(|c| gitdir.join(c.trim()))
        .unwrap_or_else(|_| gitdir.clone());
    let mut dirs = vec![gitdir];
    dirs.extend(
        ["objects", "refs/heads", "logs"]
            .iter()
            .map(|d| common.join(d)),
    );
    dirs
}

/// The state directories a CLI writes under `home` (and `/tmp/<cli>-<uid>`), per adapter.
pub fn cli_state_dirs(kind: crate::config::AgentKind, home: &Path, uid: u32) -> Vec<PathBuf> {
    use crate::config::AgentKind;
    let (names, tmp): (&[&str], Option<String>) = match kind {
        AgentKind::Claude => (
            &[".claude", ".claude.json", ".config/claude", ".cache/claude"],
            Some(format!("/tmp/claude-{uid}")),
        ),
        AgentKind::Codex => (&[".codex"], None),
        AgentKind::Gemini => (&[".gemini"], None),
        AgentKind::Aider => (
            &[".aider", ".aider.chat.history.md", ".aider.input.history"],
            None,
        ),
        AgentKind::Command => (&[], None),
    };
    let mut dirs: Vec<PathBuf> = names.iter().map(|n| home.join(n)).collect();
    dirs.extend(tmp.map(PathBuf::from));
    dirs
}

/// Answers `nightshift __exec --spec <json> [--probe] -- <argv…>`; never returns on success
/// (the target replaces this process's child, whose status this process relays).
pub fn exec_main(args: Vec<OsString>) -> i32 {
    let mut spec = None;
    let mut probe = false;
    let mut rest = args.into_iter();
    let mut argv = Vec::new();
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("--spec") => match rest.next().and_then(|s| s.into_string().ok()) {
                Some(json) => match serde_json::from_str::<Spec>(&json) {
                    Ok(s) => spec = Some(s),
                    Err(err) => return usage(&format!("the spec is not valid: {err}")),
                },
                None => return usage("--spec needs a JSON value"),
            },
            Some("--probe") => probe = true,
            Some("--") => {
                argv.extend(rest.by_ref());
                break;
            }
            _ => return usage(&format!("unexpected argument {}", arg.to_string_lossy())),
        }
    }
    let Some(spec) = spec else {
        return usage("--spec is required");
    };
    if argv.is_empty() && !probe {
        return usage("no command after --");
    }
    os::exec(&spec, &argv, probe)
}

fn usage(what: &str) -> i32 {
    eprintln!("nightshift __exec: {what}");
    eprintln!("usage: nightshift __exec --spec <json> [--probe] -- <program> [args…]");
    SETUP_FAILED
}

/// Runs the helper on nothing to learn the level a spec would get on this machine (doctor and
/// run start use it; the library cannot confine itself: it may have threads).
pub fn probe(spec: &Spec) -> Held {
    let Some(helper) = helper() else {
        return Held::unconfined("no confinement helper is registered");
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("nightshift-probe-{}-{nanos}", std::process::id()));
    if let Err(err) = std::fs::create_dir(&dir) {
        return Held::unconfined(format!("could not make a temp dir for the probe: {err}"));
    }
    let status = dir.join("status.json");
    let mut spec = spec.clone();
    spec.status = Some(status.clone());
    spec.tmp = Some(dir.join("tmp"));
    spec.require = false;
    let held = match serde_json::to_string(&spec) {
        Ok(json) => match std::process::Command::new(helper)
            .args([SUBCOMMAND, "--spec", &json, "--probe"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
        {
            Ok(_) => read_status(&status),
            Err(err) => Held::unconfined(format!("could not run the helper: {err}")),
        },
        Err(_) => Held::unconfined("could not encode the probe's spec"),
    };
    let _ = std::fs::remove_dir_all(&dir);
    held
}

#[cfg(test)]
mod tests;
