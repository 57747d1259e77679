//! `doctor`: the preconditions of an unattended run, each a gate. A finding has a class —
//! **safety** (running could damage or lose something: the agent cannot start, git is mid-way
//! through something), **product** (what ships could not be trusted: the check cannot start, is
//! flaky, or does not notice a planted bug), **process** (a person might not hear about it) —
//! and a status. Failing safety and product findings refuse the run with their halt reason's
//! exit code; process findings only warn.
//!
//! The check runs happen in a scratch worktree at `HEAD` (see [`crate::check::probe::Scratch`]),
//! never in the user's checkout.

pub mod mutate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use crate::bounded::process::Bounded;
use crate::check::probe::{self, Dimension, Rng, Scratch};
use crate::config::{AgentKind, Config};
use crate::git::Git;
use crate::halt::HaltReason;
use crate::session::Outcome;
use crate::workspace::Workspace;

/// What kind of promise a finding guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateClass {
    /// Running could damage or lose something, or cannot work at all.
    Safety,
    /// What ships could not be trusted.
    Product,
    /// A person might not find out in time.
    Process,
}

/// How a finding came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// One precondition and what was found.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Finding {
    /// Stable name: `agent`, `git_repository`, `git_target`, `git_checkout`, `git_branches`,
    /// `git_locks`, `git_operation`, `check_runs`, `determinism`, `adequacy`, `config_template`,
    /// `notify`.
    pub name: String,
    pub class: GateClass,
    pub status: Status,
    /// What was found, in one or two sentences.
    pub detail: String,
    /// What to do about it, when something is to be done.
    pub action: Option<String>,
    /// The halt reason a failing finding refuses a run with.
    pub halt: Option<HaltReason>,
}

impl Finding {
    fn ok(name: &str, class: GateClass, detail: impl Into<String>) -> Finding {
        Finding {
            name: name.into(),
            class,
            status: Status::Ok,
            detail: detail.into(),
            action: None,
            halt: None,
        }
    }

    fn warn(name: &str, class: GateClass, detail: impl Into<String>, action: &str) -> Finding {
        Finding {
            name: name.into(),
            class,
            status: Status::Warn,
            detail: detail.into(),
            action: Some(action.into()),
            halt: None,
        }
    }

    fn fail(
        name: &str,
        class: GateClass,
        halt: HaltReason,
        detail: impl Into<String>,
        action: impl Into<String>,
    ) -> Finding {
        Finding {
            name: name.into(),
            class,
            status: Status::Fail,
            detail: detail.into(),
            action: Some(action.into()),
            halt: Some(halt),
        }
    }

    /// Whether this finding refuses a run: a failing safety or product finding.
    pub fn refuses(&self) -> bool {
        self.status == Status::Fail && self.class != GateClass::Process
    }
}

/// Every finding of one doctor pass.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    /// The finding that decides the exit: the failing safety or product finding with the
    /// highest exit code (an environment that cannot run at all outranks an untrusted oracle).
    pub fn refusal(&self) -> Option<&Finding> {
        self.findings
            .iter()
            .filter(|f| f.refuses())
            .max_by_key(|f| f.halt.map_or(0, |h| h.class().code()))
    }

    /// 0, or the exit code of [`Report::refusal`].
    pub fn exit_code(&self) -> i32 {
        self.refusal()
            .and_then(|f| f.halt)
            .map_or(0, |h| h.class().code())
    }
}

/// What a doctor pass does.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// Skip everything that runs the check (check runs, determinism, adequacy) and the version
    /// query of a `command` agent (which may be any program): what `run` does at its start.
    pub quick: bool,
    /// Check runs for determinism, the first included (default 3).
    pub determinism_runs: u32,
    /// The check to examine instead of the configured one.
    pub check: Option<String>,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        DoctorOptions {
            quick: false,
            determinism_runs: 3,
            check: None,
        }
    }
}

/// What a doctor pass tells its caller while it works.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A finding, the moment it is made.
    Finding(&'a Finding),
    /// A check run starts: the `index`-th (1-based) of at most `total` in this pass (the
    /// determinism runs, then up to three mutants; the total shrinks when fewer are needed),
    /// and what it is for. The caller times them for an ETA.
    CheckRun {
        index: u32,
        total: u32,
        what: &'a str,
    },
}

/// Runs every finding in order; `progress` sees each as it is made, and every check run as it
/// starts.
pub fn doctor(
    ws: &Workspace,
    config: &Config,
    opts: &DoctorOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Report {
    let mut findings = Vec::new();
    let push = |f: Finding, findings: &mut Vec<Finding>, progress: &mut dyn FnMut(Progress<'_>)| {
        let f = gated(config, f);
        progress(Progress::Finding(&f));
        findings.push(f);
    };
    push(agent(ws, config, opts.quick), &mut findings, progress);
    for f in confinement(ws, config) {
        push(f, &mut findings, progress);
    }
    for f in git_state(ws, config) {
        push(f, &mut findings, progress);
    }
    if let Some(f) = store_chain(ws) {
        push(f, &mut findings, progress);
    }
    if !opts.quick {
        let command = opts.check.clone().or_else(|| primary_check(config));
        match command {
            Some(command) => {
                for f in check_findings(ws, config, &command, opts.determinism_runs, progress) {
                    push(f, &mut findings, progress);
                }
            }
            None => push(
                Finding::warn(
                    "check_runs",
                    GateClass::Product,
                    "no check is configured ([check] command or an item's check)",
                    "set [check] command in nightshift.toml",
                ),
                &mut findings,
                progress,
            ),
        }
    }
    if let Some(f) = unedited_template(config) {
        push(f, &mut findings, progress);
    }
    push(attention_file(ws), &mut findings, progress);
    for f in notify_channels(&config.notify) {
        push(f, &mut findings, progress);
    }
    Report { findings }
}

/// `store`: whether the journal's hash chain holds and reaches its head outside the database
/// (issue 12); `None` without a state database or a chain key to check with.
fn store_chain(ws: &Workspace) -> Option<Finding> {
    use crate::store::{
        Store,
        chain::{HeadState, Verdict},
    };
    const NAME: &str = "store";
    if !ws.state_db().exists() {
        return None;
    }
    let store = Store::open_read_only(&ws.state_db()).ok()?;
    Some(match store.verify_chain().ok()? {
        Verdict::NoKey => return None,
        Verdict::Intact {
            rows,
            head: HeadState::Holds { .. },
        } => Finding::ok(
            NAME,
            GateClass::Safety,
            format!(
                "the journal's hash chain holds ({rows} entries) and reaches its head outside the database"
            ),
        ),
        Verdict::Intact {
            rows,
            head: HeadState::Missing,
        } => Finding::warn(
            NAME,
            GateClass::Safety,
            format!(
                "the journal's hash chain holds ({rows} entries), but its head outside the database is missing (a journal from before heads were kept, a wiped data directory or a moved repository): entries cut from its end would go unseen"
            ),
            "the next `nightshift run` writes the head from the journal as it stands",
        ),
        Verdict::Intact {
            rows,
            head: HeadState::Nowhere,
        } => Finding::warn(
            NAME,
            GateClass::Safety,
            format!(
                "the journal's hash chain holds ({rows} entries), but there is no data directory to keep its head in: entries cut from its end would go unseen"
            ),
            "set NIGHTSHIFT_DATA_DIR, XDG_DATA_HOME or HOME to an absolute path",
        ),
        Verdict::Broken(tamper) => Finding::fail(
            NAME,
            GateClass::Safety,
            HaltReason::StoreTampered,
            format!("store_tampered: {tamper}"),
            "keep it as evidence and start afresh: `mv .nightshift/state.db .nightshift/state.db.tampered`, then `nightshift run` (what shipped is rebuilt from the target's Nightshift-Item trailers)",
        ),
    })
}

/// `confinement`: the level agents and checks get here (a failure only under `[sandbox]
/// require = true`); `agent_env`: the environment names the agent will get.
fn confinement(ws: &Workspace, config: &Config) -> Vec<Finding> {
    use crate::sandbox::{self, Network};
    const NAME: &str = "confinement";
    let s = sandbox::survey(ws.root(), config);
    let net = match s.check_network {
        Network::None => "network = none",
        Network::Host => "network = host",
    };
    let mut check = s.check.clone();
    if s.check_network == Network::Host {
        check.netns = false;
        check.reasons.clear();
    }
    let detail = format!("agents: {}; checks: {check} ({net})", s.agent);
    let full = s.agent.landlock
        && s.agent.session
        && check.landlock
        && (s.check_network == Network::Host || check.netns);
    let first =
        match sandbox::policy::refusal(config.sandbox.require, &s.agent, &s.check, s.check_network)
        {
            Some(why) => Finding::fail(
                NAME,
                GateClass::Safety,
                HaltReason::IsolationUnsatisfiable,
                format!("{detail}: {why}"),
                "see docs/threat-model.md for what each level leaves open",
            ),
            None if full => Finding::ok(NAME, GateClass::Safety, detail),
            None => Finding::warn(
                NAME,
                GateClass::Safety,
                detail,
                "agents and checks run less confined here; see docs/threat-model.md \
             (`[sandbox] require = true` refuses such a run)",
            ),
        };
    let env = Finding::ok(
        "agent_env",
        GateClass::Safety,
        format!("the agent gets: {}", s.agent_env.join(", ")),
    );
    vec![first, env]
}

/// A failing finding whose gate is in `log` mode (`[gates] determinism = "log"`, `adequacy =
/// "log"`) is reported as a warning: logged, not refusing a run.
fn gated(config: &Config, mut f: Finding) -> Finding {
    let logged = crate::gate::spec(&f.name).is_some()
        && config.gates.mode(&f.name) == crate::gate::GateMode::Log;
    if f.status == Status::Fail && logged {
        f.status = Status::Warn;
        f.detail = format!("{} (logged: [gates] {} = \"log\")", f.detail, f.name);
        f.halt = None;
    }
    f
}

/// The check doctor examines: `[check] command`, else the first item's own check.
pub fn primary_check(config: &Config) -> Option<String> {
    config
        .check
        .command
        .clone()
        .or_else(|| config.items.iter().find_map(|i| i.check.clone()))
}

// ---------------------------------------------------------------------------------------------
// agent

fn agent(ws: &Workspace, config: &Config, quick: bool) -> Finding {
    const NAME: &str = "agent";
    let Some(program) = crate::engine::agent_program(&config.agent).filter(|p| !p.is_empty())
    else {
        return Finding::fail(
            NAME,
            GateClass::Safety,
            HaltReason::ExecutionFailure,
            "[agent] names no program to run",
            "set [agent] command (or kind) in nightshift.toml",
        );
    };
    let found = if program.contains('/') {
        let path = Path::new(&program);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            ws.root().join(path)
        };
        path.is_file().then_some(path)
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(&program))
                .find(|p| is_executable(p))
        })
    };
    let Some(path) = found else {
        return Finding::fail(
            NAME,
            GateClass::Safety,
            HaltReason::ExecutionFailure,
            format!("the agent program `{program}` is not on PATH"),
            "install it, or set [agent] binary (or command) in nightshift.toml",
        );
    };
    if !is_executable(&path) {
        return Finding::fail(
            NAME,
            GateClass::Safety,
            HaltReason::ExecutionFailure,
            format!("{} is not executable", path.display()),
            format!("chmod +x {}", path.display()),
        );
    }
    // `--version` of a `command` agent may be anything: asked only in a full doctor.
    let ask = !quick || config.agent.kind != AgentKind::Command;
    let version = if ask { version_of(&path) } else { None };
    let detail = match &version {
        Some(v) => format!("{} ({v})", path.display()),
        None if ask => format!("{} (it did not report a version)", path.display()),
        None => path.display().to_string(),
    };
    if config.agent.kind == AgentKind::Command {
        return Finding::ok(NAME, GateClass::Safety, detail);
    }
    let (notes, untested) = agent_notes(&config.agent, version.as_deref(), |name| {
        std::env::var_os(name).is_some_and(|v| !v.is_empty())
    });
    let detail = format!("{detail}; {notes}");
    match untested {
        Some(why) => Finding::warn(
            NAME,
            GateClass::Safety,
            format!("{detail}; {why}"),
            "run the conformance suite against this version, or install a tested one",
        ),
        None => Finding::ok(NAME, GateClass::Safety, detail),
    }
}

/// What doctor says about a CLI agent beyond its program: the version against the tested
/// range, which credential variables are set (names only, never values), and the posture.
/// The second value says why the version is outside what was tested, if it is.
pub(crate) fn agent_notes(
    agent: &crate::config::AgentConfig,
    version: Option<&str>,
    is_set: impl Fn(&str) -> bool,
) -> (String, Option<String>) {
    let adapter = crate::agent::adapter_for(agent.kind);
    let mut notes = Vec::new();
    let mut untested = None;
    if let Some(range) = adapter.tested() {
        match version.and_then(crate::agent::adapter::parse_version) {
            Some(v) if range.contains(v) => notes.push(format!("tested {range}")),
            Some((a, b, c)) => {
                notes.push(format!("tested {range}"));
                untested = Some(format!("version {a}.{b}.{c} is outside the tested {range}"));
            }
            None => notes.push(format!("tested {range}; its version is unknown")),
        }
    }
    let names = adapter.credentials();
    if !names.is_empty() {
        let set: Vec<&str> = names.iter().copied().filter(|n| is_set(n)).collect();
        notes.push(if set.is_empty() {
            format!(
                "credentials: none of {} is set (the CLI's own login may still work)",
                names.join(", ")
            )
        } else {
            format!("credentials: {} set", set.join(", "))
        });
    }
    notes.push(format!("posture: {}", adapter.posture(agent)));
    (notes.join("; "), untested)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first line `program --version` prints within 5 seconds, if it exits 0. It runs in the
/// temp directory, so a program that ignores the flag cannot write into the repository.
fn version_of(program: &Path) -> Option<String> {
    let mut command = Command::new(program);
    command.arg("--version").current_dir(std::env::temp_dir());
    let done = Bounded::new(Duration::from_secs(5))
        .stdout(4096)
        .run(command)
        .ok()?;
    let out = String::from_utf8_lossy(&done.stdout);
    let line = out.lines().map(str::trim).find(|l| !l.is_empty())?;
    done.status
        .success()
        .then(|| line.chars().take(120).collect())
}

// ---------------------------------------------------------------------------------------------
// git

fn git_state(ws: &Workspace, config: &Config) -> Vec<Finding> {
    let git = Git::new(ws.root());
    let mut out = Vec::new();
    let common = match git.common_dir() {
        Ok(c) => c,
        Err(e) => {
            out.push(Finding::fail(
                "git_repository",
                GateClass::Safety,
                HaltReason::WorkspaceInvalid,
                format!(
                    "{} is not a usable git repository: {e}",
                    ws.root().display()
                ),
                "run nightshift inside a git work tree, or `git init` one",
            ));
            return out;
        }
    };
    out.push(Finding::ok(
        "git_repository",
        GateClass::Safety,
        format!("{} is a git work tree", ws.root().display()),
    ));
    let git_dir = git
        .run(&["rev-parse", "--absolute-git-dir"])
        .map(|s| PathBuf::from(s.trim()))
        .unwrap_or_else(|_| common.clone());

    // The target branch.
    let target = match &config.integrate.target {
        Some(t) => Some(t.clone()),
        None => git.current_branch().ok().flatten(),
    };
    out.push(match &target {
        None => Finding::fail(
            "git_target",
            GateClass::Safety,
            HaltReason::WorkspaceInvalid,
            "HEAD is detached and [integrate] target is not set: there is no branch to ship onto",
            "check out the branch to ship onto, or set [integrate] target = \"main\"",
        ),
        Some(t) => match git.resolve(&format!("refs/heads/{t}")) {
            Ok(Some(commit)) => Finding::ok(
                "git_target",
                GateClass::Safety,
                format!("target `{t}` at {}", &commit[..commit.len().min(12)]),
            ),
            _ => Finding::fail(
                "git_target",
                GateClass::Safety,
                HaltReason::WorkspaceInvalid,
                format!("the target branch `{t}` does not exist or has no commits"),
                "create it with a first commit, or set [integrate] target to an existing branch",
            ),
        },
    });

    // User branches where nightshift's attempt branches go (`nightshift`, `nightshift/<item>`).
    let ids: Vec<&str> = config.items.iter().map(|i| i.id.as_str()).collect();
    match git.attempt_branch_blockers(&ids) {
        Ok(blockers) if !blockers.is_empty() => out.push(Finding::fail(
            "git_branches",
            GateClass::Safety,
            HaltReason::WorkspaceInvalid,
            format!(
                "branch(es) {} block nightshift's attempt branches (refs/heads/nightshift/<item>/<n>)",
                blockers.join(", ")
            ),
            format!("rename it, e.g. `git branch -m {0} {0}-mine`", blockers[0]),
        )),
        _ => out.push(Finding::ok(
            "git_branches",
            GateClass::Safety,
            "no branch blocks refs/heads/nightshift/<item>/<n>",
        )),
    }

    // Uncommitted edits where the target is checked out: an item that changes one of those
    // files waits at integration until they are committed or stashed.
    if let Some(t) = &target {
        out.push(checkout_state(&git, t));
    }

    // Locks a git that died left behind.
    let mut locks = Vec::new();
    find_locks(&common.join("refs"), &mut locks, 0);
    for name in ["packed-refs.lock", "HEAD.lock"] {
        let p = common.join(name);
        if p.exists() {
            locks.push(p);
        }
    }
    out.push(if locks.is_empty() {
        Finding::ok("git_locks", GateClass::Safety, "no ref is locked")
    } else {
        let list: Vec<String> = locks.iter().map(|p| p.display().to_string()).collect();
        Finding::fail(
            "git_locks",
            GateClass::Safety,
            HaltReason::WorkspaceInvalid,
            format!(
                "ref lock file(s) present: {} — updates of those refs would fail",
                list.join(", ")
            ),
            "if no git command is running, a crashed git left them: delete them",
        )
    });

    // An operation in progress in the user's checkout.
    let ops = [
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or `git am`"),
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ];
    let busy: Vec<&str> = ops
        .iter()
        .filter(|(f, _)| git_dir.join(f).exists())
        .map(|(_, what)| *what)
        .collect();
    out.push(if busy.is_empty() {
        Finding::ok(
            "git_operation",
            GateClass::Safety,
            "no rebase, merge, cherry-pick or revert in progress",
        )
    } else {
        Finding::fail(
            "git_operation",
            GateClass::Safety,
            HaltReason::WorkspaceInvalid,
            format!(
                "{} is in progress in {}",
                busy.join(" and "),
                ws.root().display()
            ),
            "finish it or abort it (`git rebase --abort`, `git merge --abort`, …) first",
        )
    });
    out
}

/// `git_checkout`: a warning when the checkout of the target has uncommitted tracked changes.
fn checkout_state(git: &Git, target: &str) -> Finding {
    const NAME: &str = "git_checkout";
    let checkout = git.worktree_list().ok().and_then(|list| {
        list.into_iter()
            .find(|w| w.branch.as_deref() == Some(target) && !w.prunable)
    });
    let Some(checkout) = checkout else {
        return Finding::ok(
            NAME,
            GateClass::Safety,
            format!("`{target}` is not checked out: integration moves the branch alone"),
        );
    };
    match git.at(&checkout.path).dirty_tracked_paths() {
        Ok(dirty) if dirty.is_empty() => Finding::ok(
            NAME,
            GateClass::Safety,
            format!(
                "the checkout of `{target}` at {} has no uncommitted changes",
                checkout.path.display()
            ),
        ),
        Ok(dirty) => {
            let mut named: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
            if dirty.len() > 5 {
                named.push("…");
            }
            Finding::warn(
                NAME,
                GateClass::Safety,
                format!(
                    "the checkout of `{target}` at {} has uncommitted changes to {} file{}: {}; \
                     an item that changes one of them waits at integration (they are never \
                     overwritten)",
                    checkout.path.display(),
                    dirty.len(),
                    if dirty.len() == 1 { "" } else { "s" },
                    named.join(", ")
                ),
                "commit or stash them before the run",
            )
        }
        Err(e) => Finding::warn(
            NAME,
            GateClass::Safety,
            format!(
                "could not read the status of {}: {e}",
                checkout.path.display()
            ),
            "run `git status` there",
        ),
    }
}

/// `config_template`: a warning when nightshift.toml still has what `nightshift init` wrote
/// as placeholders (the agent and check commands that only fail, the example item).
fn unedited_template(config: &Config) -> Option<Finding> {
    let template =
        crate::config::parse(crate::config::template(), crate::config::FILE_NAME).ok()?;
    let mut left = Vec::new();
    if config.agent.kind == AgentKind::Command && config.agent.command == template.agent.command {
        left.push("the placeholder [agent] command");
    }
    if config.check.command.is_some() && config.check.command == template.check.command {
        left.push("the placeholder [check] command");
    }
    if config
        .items
        .iter()
        .any(|item| template.items.iter().any(|t| t.prompt == item.prompt))
    {
        left.push("the example [[item]]");
    }
    if left.is_empty() {
        return None;
    }
    Some(Finding::warn(
        "config_template",
        GateClass::Product,
        format!(
            "nightshift.toml is still the `nightshift init` template: it has {}",
            left.join(", ")
        ),
        "edit nightshift.toml: set [agent] command, [check] command and your [[item]]s",
    ))
}

fn find_locks(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    if depth > 12 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => find_locks(&path, out, depth + 1),
            Ok(_) if path.extension().is_some_and(|e| e == "lock") => out.push(path),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the check

/// The most mutants adequacy plants.
const MUTANTS: usize = 3;

fn check_findings(
    ws: &Workspace,
    config: &Config,
    command: &str,
    runs: u32,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Vec<Finding> {
    let scratch = match Scratch::create(ws, "doctor", &config.seed) {
        Ok(s) => s,
        Err(e) => {
            return vec![Finding::fail(
                "check_runs",
                GateClass::Product,
                HaltReason::WorkspaceInvalid,
                format!(
                    "could not make a scratch worktree at HEAD to run the check in: {}",
                    crate::check::probe::chain(&e)
                ),
                "fix the repository (a commit at HEAD, [worktree] seed files present), then run doctor again",
            )];
        }
    };
    let timeout = config.check.timeout;
    let mut rng = Rng::new(probe::fresh_seed());
    let mut out = Vec::new();

    // 1. It starts, and what it says at HEAD.
    let runs = runs.max(1);
    let mut total = runs + MUTANTS as u32;
    progress(Progress::CheckRun {
        index: 1,
        total,
        what: "the check at HEAD",
    });
    // The attempts' environment (`[worktree] env`, e.g. a shared build cache) for every run.
    let extra = config.worktree_env(ws.root());
    let mut base = probe::perturbation(Dimension::Baseline, 0, &mut rng, None);
    base.env.splice(0..0, extra.iter().cloned());
    let first = match probe::run_once(
        command,
        scratch.tree(),
        timeout,
        &base,
        scratch.logs().join("run-1.log"),
    ) {
        Ok(r) => r,
        Err(e) => {
            out.push(Finding::fail(
                "check_runs",
                GateClass::Product,
                HaltReason::ExecutionFailure,
                format!(
                    "the check could not be run: {}",
                    crate::check::probe::chain(&e)
                ),
                "fix [check] command in nightshift.toml",
            ));
            return out;
        }
    };
    let (verdict, end) = &first;
    if let Some(f) = interrupted() {
        out.push(f);
        return out;
    }
    if probe::cannot_start(end.outcome, end.exit_code) {
        out.push(Finding::fail(
            "check_runs",
            GateClass::Product,
            HaltReason::ExecutionFailure,
            format!(
                "`{command}` cannot be started (exit {}): {}",
                end.exit_code.map_or("none".into(), |c| c.to_string()),
                last_line(&end.tail)
            ),
            "fix [check] command in nightshift.toml (a missing program or script?)",
        ));
        return out;
    }
    let green_at_head = verdict.green;
    if !green_at_head {
        total = runs; // no mutant is planted in a red check
    }
    out.push(if green_at_head {
        Finding::ok(
            "check_runs",
            GateClass::Product,
            format!(
                "`{command}` is green at HEAD ({} ms)",
                end.duration.as_millis()
            ),
        )
    } else if end.outcome == Outcome::Timeout {
        Finding::warn(
            "check_runs",
            GateClass::Product,
            format!("`{command}` ran past [check] timeout at HEAD"),
            "raise [check] timeout, or make the check faster",
        )
    } else {
        Finding::warn(
            "check_runs",
            GateClass::Product,
            format!(
                "`{command}` is red at HEAD (exit {}): {}",
                end.exit_code.map_or("none".into(), |c| c.to_string()),
                last_line(&end.tail)
            ),
            "fine if the plan's items are there to make it green; otherwise fix the check first",
        )
    });

    // 2. Determinism: more runs, perturbed in rotation, must agree with the first.
    let rotation = [Dimension::Seed, Dimension::Timezone, Dimension::Baseline];
    let mut disagreeing: Vec<String> = Vec::new();
    for i in 1..runs {
        let dim = rotation[((i - 1) as usize) % rotation.len()];
        let what = format!("determinism run {} of {runs}", i + 1);
        progress(Progress::CheckRun {
            index: i + 1,
            total,
            what: &what,
        });
        let mut p = probe::perturbation(dim, u64::from(i), &mut rng, None);
        p.env.splice(0..0, extra.iter().cloned());
        match probe::run_once(
            command,
            scratch.tree(),
            timeout,
            &p,
            scratch.logs().join(format!("run-{}.log", i + 1)),
        ) {
            Ok((v, _)) if v != *verdict => disagreeing.push(format!(
                "run {} ({}) was {} where run 1 was {}",
                i + 1,
                p.setting,
                colour(v.green),
                colour(verdict.green)
            )),
            Ok(_) => {}
            Err(e) => disagreeing.push(format!(
                "run {} could not run: {}",
                i + 1,
                crate::check::probe::chain(&e)
            )),
        }
    }
    if let Some(f) = interrupted() {
        out.push(f);
        return out;
    }
    out.push(if disagreeing.is_empty() {
        Finding::ok(
            "determinism",
            GateClass::Product,
            format!(
                "{runs} runs at HEAD agreed (for a bound on the flake rate, run `nightshift probe`)"
            ),
        )
    } else {
        Finding::fail(
            "determinism",
            GateClass::Product,
            HaltReason::CheckFlaky,
            format!("the check disagreed with itself on one commit: {}", disagreeing.join("; ")),
            "run `nightshift probe` to find which dimension breaks it, and make the check deterministic",
        )
    });

    // 3. Adequacy: a planted mutation must turn a green check red — by a test failing, not by
    // a check that runs no test at all.
    let tests_at_head = crate::engine::verdict::read_results(
        config,
        scratch.tree(),
        &scratch.logs().join("run-1.log"),
    )
    .map(|results| (results.test_count(), results.format));
    let head = HeadRun {
        green: green_at_head,
        duration: end.duration,
        tests: tests_at_head,
    };
    let mut run_progress = |index: u32, total: u32, what: &str| {
        progress(Progress::CheckRun { index, total, what });
    };
    out.push(adequacy(
        &scratch,
        command,
        timeout,
        &head,
        runs,
        &extra,
        &mut run_progress,
    ));

    // 4. Hermeticity: green with the host network must stay green without it.
    if green_at_head && let Some(f) = hermetic(ws, config, &scratch, command, timeout, &base) {
        out.push(f);
    }
    out
}

/// `hermetic`: where checks get no network (`[check] network`, default `none` where the kernel
/// allows), a check green with the host's network is run once without it; red there refuses
/// the run as `check_not_hermetic`.
fn hermetic(
    ws: &Workspace,
    config: &Config,
    scratch: &Scratch,
    command: &str,
    timeout: Duration,
    base: &probe::Perturbation,
) -> Option<Finding> {
    use crate::sandbox::{self, Network, policy};
    const NAME: &str = "hermetic";
    // Only where a namespace can be had: elsewhere the `confinement` finding says so.
    if config.check.network == Some(Network::Host)
        || !sandbox::survey(ws.root(), config).check.netns
    {
        return None;
    }
    let offline = sandbox::with_check_network(Network::None, || {
        probe::run_once(
            command,
            scratch.tree(),
            timeout,
            base,
            scratch.logs().join("run-offline.log"),
        )
    });
    let green = offline.as_ref().is_ok_and(|(v, _)| v.green);
    Some(match policy::hermetic(Network::None, green, || true) {
        policy::Hermetic::NotHermetic => Finding::fail(
            NAME,
            GateClass::Product,
            HaltReason::CheckNotHermetic,
            policy::NOT_HERMETIC,
            policy::NOT_HERMETIC_HELP,
        ),
        _ => Finding::ok(
            NAME,
            GateClass::Product,
            "the check is green without a network too ([check] network = \"none\")",
        ),
    })
}

/// What the first check run at HEAD showed, for adequacy.
struct HeadRun {
    green: bool,
    duration: Duration,
    /// How many tests its output (or results file) listed, and in what format; `None` when it
    /// did not parse.
    tests: Option<(usize, crate::check::results::Format)>,
}

fn adequacy(
    scratch: &Scratch,
    command: &str,
    timeout: Duration,
    head: &HeadRun,
    runs_before: u32,
    extra_env: &[(String, String)],
    progress: &mut dyn FnMut(u32, u32, &str),
) -> Finding {
    const NAME: &str = "adequacy";
    if !head.green {
        return Finding::warn(
            NAME,
            GateClass::Product,
            "not judged: the check is red at HEAD, so a planted mutation cannot be told apart",
            "run `nightshift doctor` again once the check is green",
        );
    }
    if let Some((0, format)) = head.tests {
        return Finding::fail(
            NAME,
            GateClass::Product,
            HaltReason::CheckInadequate,
            format!(
                "the check ran 0 tests at HEAD (its output read as {}): a planted bug could only turn it red by breaking the build",
                format.as_str()
            ),
            "make the check run the tests (is the test directory or filter right?), then run `nightshift doctor` again",
        );
    }
    let git = Git::new(scratch.tree());
    let tracked: Vec<String> = match git.run(&["ls-files", "-z"]) {
        Ok(s) => s
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
        Err(_) => Vec::new(),
    };
    let files = mutate::candidates(scratch.tree(), &tracked, command, MUTANTS);
    if files.is_empty() {
        return Finding::warn(
            NAME,
            GateClass::Product,
            "not judged: no tracked source file to plant a mutation in (tests, docs and config are not mutated)",
            "nothing to do if the repository has no product code",
        );
    }
    let mut tried = Vec::new();
    let mut base = probe::perturbation(Dimension::Baseline, 0, &mut Rng::new(0), None);
    base.env.splice(0..0, extra_env.iter().cloned());
    let total = runs_before + files.len() as u32;
    for (i, file) in files.iter().enumerate() {
        progress(
            runs_before + i as u32 + 1,
            total,
            &format!("mutant {} of {} ({file})", i + 1, files.len()),
        );
        let path = scratch.tree().join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mutant = mutate::mutate(&text);
        if std::fs::write(&path, &mutant.text).is_err() {
            continue;
        }
        let result = probe::run_once(
            command,
            scratch.tree(),
            timeout,
            &base,
            scratch.logs().join(format!("mutant-{}.log", i + 1)),
        );
        let _ = scratch.restore();
        let _ = std::fs::write(&path, &text);
        if crate::stop::requested().is_some() {
            return Finding::warn(
                NAME,
                GateClass::Product,
                "interrupted by an operator stop: adequacy was not judged",
                "run `nightshift doctor` again",
            );
        }
        match result {
            Ok((_, end)) if end.outcome == Outcome::Timeout => {
                // Caught, but only by the timeout: the check hung on the bug instead of failing.
                return Finding::warn(
                    NAME,
                    GateClass::Product,
                    format!(
                        "a planted mutation was caught only by [check] timeout ({}): the check ran until it was ended instead of failing ({file}: {}); an agent's bug like it costs a whole timeout per iteration",
                        crate::config::format_duration(timeout),
                        mutant.description
                    ),
                    &format!(
                        "lower [check] timeout to a few times the check's time at HEAD ({}), or give the tests a timeout of their own",
                        crate::config::format_duration(head.duration)
                    ),
                );
            }
            Ok((v, _)) if !v.green => {
                return Finding::ok(
                    NAME,
                    GateClass::Product,
                    format!(
                        "a planted mutation turned the check red ({file}: {})",
                        mutant.description
                    ),
                );
            }
            Ok(_) => tried.push(format!("{file}: {}", mutant.description)),
            Err(_) => {}
        }
    }
    if tried.is_empty() {
        return Finding::warn(
            NAME,
            GateClass::Product,
            "not judged: no mutant could be planted or checked",
            "run `nightshift doctor` again",
        );
    }
    Finding::fail(
        NAME,
        GateClass::Product,
        HaltReason::CheckInadequate,
        format!(
            "the check stayed green on every planted mutation ({})",
            tried.join("; ")
        ),
        "make the check exercise the code the items change (run the tests, not only a build or a lint)",
    )
}

/// A warning in place of the check findings when an operator stopped doctor mid-way: runs
/// ended by a stop are not verdicts.
fn interrupted() -> Option<Finding> {
    crate::stop::requested().map(|_| {
        Finding::warn(
            "check_runs",
            GateClass::Product,
            "interrupted by an operator stop: the check was not judged",
            "run `nightshift doctor` again",
        )
    })
}

fn colour(green: bool) -> &'static str {
    if green { "green" } else { "red" }
}

fn last_line(tail: &[u8]) -> String {
    let text = String::from_utf8_lossy(tail);
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("no output")
        .chars()
        .take(200)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// notification

/// One finding per configured notification channel (`notify:desktop`, `notify:webhook …`,
/// `notify:command …`): live, or inert here and why — a channel that cannot deliver is said,
/// never silently dropped (a process gate: it warns, it does not refuse a run).
pub fn notify_channels(notify: &crate::config::NotifyConfig) -> Vec<Finding> {
    use crate::notify::ChannelState;
    crate::notify::inspect(notify)
        .into_iter()
        .map(|report| {
            let name = format!("notify:{}", report.name);
            let reason = report.reason.unwrap_or_default();
            match report.state {
                ChannelState::Live => Finding::ok(
                    &name,
                    GateClass::Process,
                    if reason.is_empty() {
                        "can deliver here".to_owned()
                    } else {
                        reason
                    },
                ),
                ChannelState::Unchecked => Finding::ok(
                    &name,
                    GateClass::Process,
                    format!("not checked: {reason}"),
                ),
                ChannelState::Inert => Finding::warn(
                    &name,
                    GateClass::Process,
                    format!("inert: {reason}"),
                    "fix the channel, or turn it off in [notify]; `nightshift notify test` tries every channel",
                ),
            }
        })
        .collect()
}

/// The ATTENTION file: the channel that always works, if `.nightshift/` is writable.
pub fn attention_file(ws: &Workspace) -> Finding {
    const NAME: &str = "notify";
    let dir = ws.dir();
    let writable = if dir.exists() {
        std::fs::metadata(&dir).is_ok_and(|m| m.is_dir() && !m.permissions().readonly())
    } else {
        std::fs::metadata(ws.root()).is_ok_and(|m| !m.permissions().readonly())
    };
    if writable {
        Finding::ok(
            NAME,
            GateClass::Process,
            format!("alerts always go to {}", dir.join("ATTENTION").display()),
        )
    } else {
        Finding::warn(
            NAME,
            GateClass::Process,
            format!("{} is not writable: alerts would be lost", dir.display()),
            "make .nightshift/ writable",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_notes_give_version_range_credential_names_and_posture() {
        let agent = crate::config::AgentConfig {
            kind: AgentKind::Claude,
            command: vec![],
            binary: None,
            model: None,
            args: vec![],
            format: crate::config::OutputFormat::Text,
            policy: Default::default(),
        };
        let (notes, untested) = agent_notes(&agent, Some("2.1.332 (Claude Code)"), |n| {
            n == "ANTHROPIC_API_KEY"
        });
        assert_eq!(
            notes,
            "tested 2.1.197–2.1.332; credentials: ANTHROPIC_API_KEY set; posture: \
             --permission-mode acceptEdits, --allowedTools \
             Bash,Read,Edit,MultiEdit,Write,NotebookEdit,Glob,Grep,TodoWrite"
        );
        assert_eq!(untested, None);
        let (notes, untested) = agent_notes(&agent, Some("3.0.1"), |_| false);
        assert!(
            notes.contains("credentials: none of ANTHROPIC_API_KEY"),
            "{notes}"
        );
        assert_eq!(
            untested.as_deref(),
            Some("version 3.0.1 is outside the tested 2.1.197–2.1.332")
        );
    }

    fn failing(name: &str, class: GateClass, halt: HaltReason) -> Finding {
        Finding::fail(name, class, halt, "x", "y")
    }

    #[test]
    fn the_highest_failing_safety_or_product_gate_decides_and_process_only_warns() {
        let report = Report {
            findings: vec![
                Finding::ok("agent", GateClass::Safety, "fine"),
                failing("determinism", GateClass::Product, HaltReason::CheckFlaky),
                failing("git_locks", GateClass::Safety, HaltReason::WorkspaceInvalid),
                failing("notify", GateClass::Process, HaltReason::ExecutionFailure),
            ],
        };
        assert_eq!(report.refusal().map(|f| f.name.as_str()), Some("git_locks"));
        assert_eq!(report.exit_code(), 30);
        let report = Report {
            findings: vec![
                Finding::warn("check_runs", GateClass::Product, "red", "fix"),
                failing("notify", GateClass::Process, HaltReason::ExecutionFailure),
            ],
        };
        assert!(report.refusal().is_none());
        assert_eq!(report.exit_code(), 0);
    }
}
