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
pub mod policy;

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
///
/// Unknown fields are refused, not dropped: a helper older than the engine that wrote the spec
/// (a stale `nightshift-exec` beside a rebuilt `nightshift`) would otherwise confine without a
/// rule it does not know of. The small helper then defers to the full binary beside it
/// ([`exec_main_or_defer`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Trees the process may read (and execute) from, minus `deny`. Usually `/`.
    pub read: Vec<PathBuf>,
    /// Trees the process may neither read nor write, even below a `read` tree (the repository's
    /// `.nightshift/`, the receipt key's directory). A `write` tree inside one stays writable.
    pub deny: Vec<PathBuf>,
    /// Files or trees readable even inside a `deny` tree (the session's prompt file).
    #[serde(default)]
    pub read_also: Vec<PathBuf>,
    /// Trees (or files) the process may write; missing ones are skipped.
    pub write: Vec<PathBuf>,
    /// Directories created (0700) if missing, then writable: the temp dir, CLI state dirs.
    pub make: Vec<PathBuf>,
    /// The process's temp dir: created, writable, and set as `TMPDIR`.
    pub tmp: Option<PathBuf>,
    pub network: Network,
    /// Environment names kept (a trailing `*` matches a prefix); `None` keeps everything.
    pub env_keep: Option<Vec<String>>,
    /// An agent session: the files the engine names in its environment pass (see
    /// [`READ_FROM_ENV`], [`WRITE_FROM_ENV`]).
    #[serde(default)]
    pub session_files: bool,
    /// Refuse to start the target unless every layer asked for held.
    pub require: bool,
    /// Where the level that held is written (JSON, 0600) before the target starts.
    pub status: Option<PathBuf>,
    /// The process that spawns the helper (the engine): the helper refuses to start the target
    /// once that one is gone. Named here, not read with `getppid` when the helper starts, so an
    /// engine that dies between the spawn and the helper's first instruction is not taken for
    /// the process that adopted it (the engine spawns it without a `pre_exec` step of its own
    /// to arm a death signal, decision 106).
    #[serde(default)]
    pub parent: Option<u32>,
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

/// `NIGHTSHIFT_SANDBOX=off` in the environment of `nightshift run` turns confinement off: agents
/// and checks start unwrapped and the level is `none` (`[sandbox] require = true` then refuses).
/// The integration tests' harness sets it for the fixtures that use the agent as a stand-in
/// for a person or a crash (it edits the user's checkout, `kill -9`s the engine).
pub const OFF_ENV: &str = "NIGHTSHIFT_SANDBOX";

fn turned_off() -> bool {
    std::env::var_os(OFF_ENV).is_some_and(|v| v == "off")
}

const OFF_REASON: &str = "confinement is turned off (NIGHTSHIFT_SANDBOX=off)";

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

    /// Lets the process read `path` although it lies in a denied tree (a prompt file).
    pub fn read_also(mut self, path: &Path) -> Self {
        self.spec.read_also.push(path.to_path_buf());
        self
    }

    /// Refuses to start unless every layer holds (`[sandbox] require = true`).
    pub fn require(mut self, require: bool) -> Self {
        self.spec.require = require;
        self
    }

    /// `[helper, "__exec", "--spec", <json>, "--", argv…]`, or `argv` unchanged when no helper
    /// is registered (the level is then `none`, and [`Confinement::held`] says why).
    ///
    /// A program that cannot be found is not wrapped either, so the spawn fails as it would
    /// unconfined (`spawn_failed`, which halts the run) instead of as the helper's exit 127.
    pub fn wrap(&self, argv: Vec<String>) -> Vec<String> {
        let Some(helper) = helper() else {
            return argv;
        };
        if turned_off() || !argv.first().is_some_and(|p| resolves(p)) {
            return argv;
        }
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

/// Extra trees agents and checks may write, `:`-separated (a cache a toolchain needs, a test
/// harness's handshake FIFOs).
pub const WRITE_ENV: &str = "NIGHTSHIFT_SANDBOX_WRITE";

fn extra_writes() -> Vec<PathBuf> {
    std::env::var_os(WRITE_ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `program` names an executable file (directly, or found on `PATH`).
fn resolves(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(program))))
}

/// Where the helper of the process logging to `log` writes its level.
pub fn status_path(log: &Path) -> PathBuf {
    let mut name = log
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".confinement.json");
    log.with_file_name(name)
}

/// The temp dir of the process logging to `log`.
pub fn tmp_path(log: &Path) -> PathBuf {
    let mut name = log
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".tmp");
    log.with_file_name(name)
}

/// The repository's `.nightshift/` above `checkout` (attempts and scratch trees live inside it).
fn state_root_of(checkout: &Path) -> PathBuf {
    checkout
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == crate::workspace::DIR))
        .map_or_else(|| checkout.join(crate::workspace::DIR), Path::to_path_buf)
}

/// The confinement of an agent session of `kind` in `checkout` logging to `log`, reading its
/// `prompt_file`. The one call a spawn site makes.
pub fn for_agent(
    kind: crate::config::AgentKind,
    checkout: &Path,
    log: &Path,
    prompt_file: &Path,
) -> Confinement {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let state = home
        .map(|h| cli_state_dirs(kind, &h, nix::unistd::getuid().as_raw()))
        .unwrap_or_default();
    let mut c = Confinement::agent(checkout, &state_root_of(checkout), tmp_path(log), state)
        .read_also(prompt_file)
        .status(status_path(log));
    // The environment is the adapter's allowlist, applied by the session (`env_allow`).
    c.spec.session_files = true;
    c.spec.write.extend(extra_writes());
    c
}

/// Whether agent sessions of this process run under nightshift's Landlock confinement (the
/// helper is registered, confinement is not turned off, and the kernel grants Landlock):
/// probed once, by the helper itself.
pub fn agents_confined() -> bool {
    static CONFINED: OnceLock<bool> = OnceLock::new();
    *CONFINED.get_or_init(|| {
        if turned_off() || helper().is_none() {
            return false;
        }
        let tmp = std::env::temp_dir();
        let spec = Confinement::agent(&tmp, &tmp.join(".nightshift"), tmp.clone(), Vec::new()).spec;
        probe(&spec).landlock
    })
}

/// The confinement of a check in `checkout` logging to `log`, with the network the run chose
/// ([`set_check_network`]; the host's when none was chosen).
pub fn for_check(checkout: &Path, log: &Path) -> Confinement {
    let network = CHECK_OVERRIDE
        .with(std::cell::Cell::get)
        .or_else(|| CHECK_NETWORK.get().copied())
        .unwrap_or_default();
    let mut c = Confinement::check(checkout, &state_root_of(checkout), tmp_path(log), network)
        .status(status_path(log));
    c.spec.write.extend(extra_writes());
    c
}

static CHECK_NETWORK: OnceLock<Network> = OnceLock::new();

thread_local! {
    static CHECK_OVERRIDE: std::cell::Cell<Option<Network>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with checks started on this thread getting `network` (doctor's hermeticity run).
pub fn with_check_network<T>(network: Network, f: impl FnOnce() -> T) -> T {
    let before = CHECK_OVERRIDE.with(|c| c.replace(Some(network)));
    let out = f();
    CHECK_OVERRIDE.with(|c| c.set(before));
    out
}

/// Sets the network checks of this process get (the engine, at start, from [`policy`]).
pub fn set_check_network(network: Network) {
    let _ = CHECK_NETWORK.set(network);
}

/// The network checks of a run get, as [`configure_checks`] set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckNetwork {
    pub network: Network,
    /// The helper can make a network namespace here (probed only when `network` is `none`:
    /// with the host's network nothing is asked of it).
    pub netns: bool,
}

/// Probes this machine and sets the network checks get from `[check] network` (engine start).
pub fn configure_checks(root: &Path, config: &crate::config::Config) -> CheckNetwork {
    let ws = crate::workspace::Workspace::new(root);
    let netns = || {
        let check = Confinement::check(root, &ws.dir(), std::env::temp_dir(), Network::None);
        probe(&check.spec).netns
    };
    let chosen = match config.check.network {
        Some(Network::Host) => CheckNetwork {
            network: Network::Host,
            netns: false,
        },
        configured => {
            let netns = netns();
            CheckNetwork {
                network: policy::check_network(configured, netns),
                netns,
            }
        }
    };
    set_check_network(chosen.network);
    chosen
}

/// The level recorded for the process that logged to `log`, for its receipt; `None` when it ran
/// without the helper (no status file).
pub fn recorded(log: &Path) -> Option<String> {
    let bytes = std::fs::read(status_path(log)).ok()?;
    Some(serde_json::from_slice::<Held>(&bytes).map_or_else(
        |_| "none (the status file is not readable JSON)".into(),
        |h| h.to_string(),
    ))
}

/// Reads a status file written by `__exec`; a missing or unreadable one means `none`.
pub fn read_status(path: &Path) -> Held {
    if turned_off() {
        return Held::unconfined(OFF_REASON);
    }
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
        read_also: Vec::new(),
        write,
        make: Vec::new(),
        tmp: Some(tmp),
        network: Network::Host,
        env_keep: None,
        session_files: false,
        require: false,
        status: None,
        parent: Some(std::process::id()),
    }
}

/// Files the engine names in a session's environment that the session reads although they lie
/// in `.nightshift/logs` (its prompt, the check output it is to fix or review).
pub const READ_FROM_ENV: [&str; 3] = [
    "NIGHTSHIFT_PROMPT_FILE",
    "NIGHTSHIFT_FEEDBACK_FILE",
    "NIGHTSHIFT_CHECK_LOG",
];

/// Files the engine names in a session's environment that the session writes (created empty,
/// 0600, when missing: an empty one reads as "nothing written").
pub const WRITE_FROM_ENV: [&str; 2] = ["NIGHTSHIFT_VERDICT_FILE", "NIGHTSHIFT_OPERATOR_FILE"];

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
    exec_main_or_defer(args, None)
}

/// [`exec_main`] for the small helper: a spec it cannot read (written by a newer engine, so
/// it may carry a rule this build does not know) is handed, with the same arguments, to
/// `full` (the `nightshift` beside it, the engine's own build), which reads it or refuses it.
pub fn exec_main_or_defer(args: Vec<OsString>, full: Option<&Path>) -> i32 {
    let mut original = full.map(|_| args.clone());
    let mut spec = None;
    let mut probe = false;
    let mut rest = args.into_iter();
    let mut argv = Vec::new();
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("--spec") => match rest.next().and_then(|s| s.into_string().ok()) {
                Some(json) => match serde_json::from_str::<Spec>(&json) {
                    Ok(s) => spec = Some(s),
                    Err(err) => {
                        if let (Some(full), Some(original)) = (full, original) {
                            return defer(full, original, &err);
                        }
                        return usage(&format!("the spec is not valid: {err}"));
                    }
                },
                None => return usage("--spec needs a JSON value"),
            },
            Some("--probe") => probe = true,
            // Handed on by a helper that could not read the spec: never hand it on again.
            Some(DEFERRED) => original = None,
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

/// The flag a deferring helper adds, so the binary it hands the spec to never defers again
/// (were `full` itself a copy of the small helper, they would hand it back and forth).
const DEFERRED: &str = "--deferred";

/// Replaces this process with `full __exec --deferred <args>`; returns only when that cannot start.
fn defer(full: &Path, args: Vec<OsString>, why: &serde_json::Error) -> i32 {
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(full)
        .args([OsString::from(SUBCOMMAND), OsString::from(DEFERRED)])
        .args(args)
        .exec();
    usage(&format!(
        "the spec is not valid for this helper ({why}), and {} could not take it: {err}",
        full.display()
    ))
}

fn usage(what: &str) -> i32 {
    eprintln!("nightshift __exec: {what}");
    eprintln!("usage: nightshift __exec --spec <json> [--probe] -- <program> [args…]");
    SETUP_FAILED
}

/// How long the helper's probe may take (it sets up namespaces and Landlock, then exits).
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs the helper on nothing to learn the level a spec would get on this machine (doctor and
/// run start use it; the library cannot confine itself: it may have threads).
pub fn probe(spec: &Spec) -> Held {
    if turned_off() {
        return Held::unconfined(OFF_REASON);
    }
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
        Ok(json) => {
            let mut command = std::process::Command::new(helper);
            command.args([SUBCOMMAND, "--spec", &json, "--probe"]);
            // Bounded like every short-lived child (decision 108): a helper that hangs in
            // namespace setup leaves `doctor` and the run's start an answer, not a wait.
            match crate::bounded::process::Bounded::new(PROBE_TIMEOUT).run(command) {
                Ok(_) => read_status(&status),
                Err(err) => Held::unconfined(format!("the confinement helper {err}")),
            }
        }
        Err(_) => Held::unconfined("could not encode the probe's spec"),
    };
    let _ = std::fs::remove_dir_all(&dir);
    held
}

#[cfg(test)]
mod tests;

/// What this machine gives agents and checks of one repository (doctor and run start).
#[derive(Debug, Clone, PartialEq)]
pub struct Survey {
    pub agent: Held,
    /// Probed with a network namespace, to learn whether one can be had.
    pub check: Held,
    /// The network checks will get (`[check] network`, or its default here).
    pub check_network: Network,
    /// The names, present in this environment, the agent will get.
    pub agent_env: Vec<String>,
}

/// Probes the helper as an agent and as a check of the repository at `root` would run.
pub fn survey(root: &Path, config: &crate::config::Config) -> Survey {
    let ws = crate::workspace::Workspace::new(root);
    let tmp = std::env::temp_dir();
    let agent = probe(&Confinement::agent(root, &ws.dir(), tmp.clone(), Vec::new()).spec);
    let check = probe(&Confinement::check(root, &ws.dir(), tmp, Network::None).spec);
    let check_network = policy::check_network(config.check.network, check.netns);
    // The adapter decides the agent's environment (`env_allow`; `None`: all of it).
    let launch = crate::agent::adapter_for(config.agent.kind).launch(&crate::agent::Invocation {
        agent: &config.agent,
        prompt_file: Path::new("prompt.md"),
        session_id: "00000000-0000-0000-0000-000000000000",
        resume: None,
        confined: false,
    });
    let mut agent_env: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            launch
                .env_allow
                .as_ref()
                .is_none_or(|allow| crate::agent::adapter::env_allowed(allow, k))
        })
        .collect();
    agent_env.sort();
    Survey {
        agent_env,
        agent,
        check,
        check_network,
    }
}

/// Writes `bytes` to a new file at `path` readable by its owner only (0600): logs, receipts.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(bytes)
}

/// Creates `dir` (and its parents) and makes it its owner's only (0700): `.nightshift/logs`.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
