//! The engine: the run loop (queue, attempts, parking, passes, halts) and the item pipeline.
//!
//! Every step reads the attempt's recorded phase and does the next thing, journaling intent
//! before and confirmation after each side effect. Resume after a crash is therefore not a
//! special path: the loop continues from what the journal says, after reconciling the world.

mod alerts;
mod attempt;
mod budget;
mod closeout;
mod debt;
mod dispatch;
mod launch;
mod prompt;
mod receipt;
mod review;
mod safe_point;
mod space;
mod tamper;
mod teardown;
mod triage;
pub(crate) mod verdict;

pub(crate) use attempt::check_env;
/// The program a session of this agent config starts (what the preflight and `doctor` look for).
pub(crate) use launch::program as agent_program;

use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::git::{Git, GitError};
use crate::halt::HaltReason;
use crate::plan::Plan;
use crate::session::SessionError;
use crate::store::{
    Event, EventKind, ItemRow, ItemState, LockError, PlannedItem, RunLock, RunRow, Store,
    StoreError,
};
use crate::workspace::Workspace;

/// What `run` needs.
pub struct RunOptions {
    pub workspace: Workspace,
    pub config: Config,
    pub plan: Plan,
    /// Start a new run even if one is unfinished (its open attempts are preserved and closed).
    pub fresh: bool,
    pub clock: Arc<dyn Clock>,
    /// The one-item fixpoint (`nightshift loop`): no parked pass, and the halt says why the
    /// item ended (`success_condition_met`, `max_iterations_reached`, a guard, no progress…).
    pub loop_mode: bool,
    /// `run --until`: no new session or attempt after this time; the run then stops
    /// `deadline_reached`, resumable. `None` keeps the deadline the run journaled, if any.
    pub until: Option<Until>,
    /// A supervisor's restart: the journal position when the supervisor started its first
    /// engine. The run opened since is resumed; if it has halted, the engine exits with that
    /// halt and starts nothing (a supervisor never starts a new run). `None`: the user's start.
    pub restart_after: Option<i64>,
    /// The exact text `config` was parsed from: a new run pins it into its journal (issue 12).
    /// `None` (`loop`, whose flags replace parts of the file): nothing is pinned; the run
    /// judges by `config`, and each item's check is still the journaled plan's.
    pub config_source: Option<String>,
    /// `run --reload-config`: a resumed run pins the live `nightshift.toml` instead of going
    /// on with the copy it pinned (journaled).
    pub reload_config: bool,
    /// How the previous engine of this supervisor died, for a restart (journaled and alerted).
    pub previous_exit: Option<String>,
    /// Give checks the network `[check] network` asks for (the pinned copy's), probing the
    /// machine (`nightshift run`'s engine; `loop` and `demo` leave the host's).
    pub confine_checks: bool,
}

/// A `--until` deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Until {
    pub at: jiff::Timestamp,
    /// As the operator wrote it (`07:00`).
    pub given: String,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run_id: String,
    pub halt: HaltReason,
    pub resumed: bool,
    pub items: Vec<ItemRow>,
    /// A restarted engine found its run already halted and did nothing.
    pub already_halted: bool,
}

/// Errors that stop the engine (the run stays resumable; no item verdict is written for them).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Locked(#[from] LockError),
    #[error("use the workspace: {what}")]
    Workspace { what: String, help: Option<String> },
    #[error("start {what}")]
    Execution { what: String, help: Option<String> },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("write {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> EngineError + '_ {
    move |source| EngineError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Runs (or resumes) the plan to a halt. `observe` sees every journal event as it is recorded.
pub fn run(opts: RunOptions, observe: &mut dyn FnMut(&Event)) -> Result<RunSummary, EngineError> {
    let ws = opts.workspace;
    let opts_started_boot = opts.clock.boot();
    let git = Git::new(ws.root());
    ws.create_dirs().map_err(io_err(&ws.dir()))?;
    let common_dir = git.common_dir()?;
    // Orphans that escape a session's process group are re-parented here, where sweeps find them.
    crate::session::become_subreaper();
    // `nightshift stop` (SIGTERM/SIGINT, SIGUSR1 for graceful) is handled at a safe point.
    crate::stop::install();
    ensure_excluded(&common_dir)?;
    let holder = format!(
        "pid {} since {}",
        std::process::id(),
        opts.clock.wall().strftime("%Y-%m-%d %H:%M:%S UTC")
    );
    let mut lock = RunLock::acquire(&ws.lock(), &holder)?;
    // While this engine holds the lock it beats; readers tell a frozen or dead engine from a
    // live one by the beat's age (`heartbeat_stale`).
    let _beat = crate::supervise::live::Beat::start(&ws, opts.clock.clone());
    preflight(&opts.config)?;
    let missing = crate::git::missing_seeds(ws.root(), &opts.config.seed);
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        return Err(EngineError::Workspace {
            what: format!(
                "seed the worktrees: {} missing in {}",
                list.join(", "),
                ws.root().display()
            ),
            help: Some("create them, or remove them from [worktree] seed".into()),
        });
    }
    let store = match Store::open(&ws.state_db()) {
        Ok(store) => store,
        Err(StoreError::Tampered(tamper)) => {
            let alert = crate::notify::Alert::new(
                crate::notify::AlertKind::Integrity,
                format!(
                    "store_tampered: {tamper}; the run does not go on (`nightshift doctor` says more)"
                ),
            );
            crate::notify::raise(&ws, opts.clock.as_ref(), &opts.config.notify, &alert);
            return Err(StoreError::Tampered(tamper).into());
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(after) = opts.restart_after
        && let crate::store::Since::Halted { run_id, halt } = store.since(after)?
    {
        let items = store.items(&run_id)?;
        drop(lock);
        return Ok(RunSummary {
            run_id,
            halt,
            resumed: false,
            items,
            already_halted: true,
        });
    }
    let dispatch = dispatch::Dispatch::new(&opts.config);
    let mut engine = Engine {
        dispatch,
        ws,
        git,
        store,
        config: opts.config,
        clock: opts.clock,
        run: None,
        observe,
        halt_requested: None,
        started_boot: opts_started_boot,
        common_dir,
        last_alert: None,
        loop_mode: opts.loop_mode,
        deadline: safe_point::Deadline::default(),
        alerts: alerts::AlertState::default(),
        determinism: std::cell::RefCell::new(verdict::Determinism::new()),
        trees: std::cell::RefCell::new(std::collections::HashMap::new()),
        item_checks: std::collections::HashMap::new(),
        config_watch: safe_point::ConfigWatch::default(),
        verify_store: true,
        probe_hermetic: false,
    };
    // Before anything looks at a worktree: nothing a killed engine left running may still be
    // writing in one, and no lock a killed git left may block it.
    engine.housekeeping().sweep_strays();
    engine.housekeeping().clear_stale_git_locks();
    engine.verify_store_if_asked()?;
    let resumed = engine.open_run(&opts.plan, opts.fresh)?;
    let run_id = engine.run()?.id.clone();
    engine.pin_control_plane(opts.config_source.as_deref(), resumed && opts.reload_config)?;
    if opts.confine_checks {
        let checks = crate::sandbox::configure_checks(engine.ws.root(), &engine.config);
        engine.probe_hermetic =
            crate::sandbox::policy::probes_hermeticity(checks.network, checks.netns);
    }
    if let Some(exit) = opts.previous_exit.filter(|_| resumed) {
        engine.engine_restarted(exit)?;
    }
    let _ = lock.describe(&format!("{holder}, run {run_id}"));
    engine.reconcile_teardowns()?;
    engine.open_deadline(opts.until)?;
    let halt = match engine.drive() {
        Ok(halt) => halt,
        Err(e) => {
            engine.alerts().stopped(&e);
            return Err(e);
        }
    };
    let items = engine.store.items(&run_id)?;
    engine.alerts().run_finished(&run_id, halt, &items);
    drop(lock);
    Ok(RunSummary {
        run_id,
        halt,
        resumed,
        items,
        already_halted: false,
    })
}

struct Engine<'o> {
    ws: Workspace,
    git: Git,
    store: Store,
    config: Config,
    clock: Arc<dyn Clock>,
    run: Option<RunRow>,
    observe: &'o mut dyn FnMut(&Event),
    /// A halt decided inside a step (e.g. the run budget is spent), taken at the next turn.
    halt_requested: Option<HaltReason>,
    /// When this engine started, on the boot clock: sweeps after a step only look at
    /// processes started since (the stray sweep at start looks at all).
    started_boot: std::time::Duration,
    /// The repository's shared git directory (`.git` of the main checkout).
    common_dir: std::path::PathBuf,
    /// The last repeating alert written, so a wait that retries does not repeat it.
    last_alert: Option<String>,
    /// `nightshift loop`: see [`RunOptions::loop_mode`].
    loop_mode: bool,
    /// `--until`: no new session or attempt after it.
    deadline: safe_point::Deadline,
    /// What has been alerted already (issue 6), so a retrying condition alerts once.
    alerts: alerts::AlertState,
    /// The oracle's stability over this engine's repeated checks (issue 5; verdict.rs).
    determinism: std::cell::RefCell<verdict::Determinism>,
    /// Commit → tree ids already looked up (commits are immutable): each costs a git call.
    trees: std::cell::RefCell<std::collections::HashMap<String, String>>,
    /// Each item's own check as `run_started` journaled it (issue 12: never the store's
    /// mutable `items.check_command`).
    item_checks: std::collections::HashMap<String, Option<String>>,
    /// The pinned `nightshift.toml` (`config` is its parse), watched for a live file that differs.
    config_watch: safe_point::ConfigWatch,
    /// A session ended since the store was last verified (issue 12): its agent may have
    /// edited the state database.
    verify_store: bool,
    /// Checks run in a network namespace with no route out: a red base check is run once more
    /// with the host network, and green there refuses the run (`check_not_hermetic`).
    probe_hermetic: bool,
    /// The live sessions and their channel (engine/dispatch.rs).
    dispatch: dispatch::Dispatch,
}

/// Journaling from inside a running session (borrows the engine's parts, not the engine).
pub(crate) struct Journal<'a, 'o> {
    pub store: &'a mut Store,
    pub observe: &'a mut (dyn FnMut(&Event) + 'o),
    pub clock: &'a dyn Clock,
    pub ws: &'a Workspace,
    pub run_id: &'a str,
    /// The budget gate's mode: in `log`, a trip is also a `gate_warned`.
    pub budget_gate: crate::gate::GateMode,
    /// The stall gate's mode: in `log`, silence past the grace is a `gate_warned`.
    pub stall_gate: crate::gate::GateMode,
    pub notify: &'a crate::config::NotifyConfig,
    /// `Some(known)`: journal the CLI's session id when it differs from `known` (a CLI that
    /// resumes by id); `None`: not tracked (reviews, CLIs without resume).
    pub agent_session: Option<Option<String>>,
    /// The CLI session last named (a live delivery is journaled with it).
    pub live_session: Option<String>,
}

impl Journal<'_, '_> {
    fn record(&mut self, kind: EventKind) -> Result<Event, EngineError> {
        let event = space::record(
            self.store,
            self.ws,
            self.clock,
            self.notify,
            self.run_id,
            kind,
        )?;
        (self.observe)(&event);
        Ok(event)
    }

    /// Journals what a session reports as it happens, and tells a person what they must know.
    pub(crate) fn session_event(
        &mut self,
        item: &str,
        attempt: u32,
        enforced: bool,
        event: crate::session::SessionEvent,
    ) -> Result<(), EngineError> {
        use crate::session::SessionEvent;
        match event {
            SessionEvent::BudgetWarned(c) => {
                // Every session of a run past 80% crosses the share again: alert once per run
                // and metric (the journal still records each crossing).
                let first = c.scope == crate::session::Scope::Run
                    && !self
                        .store
                        .run_events(self.run_id, &["budget_warned"])?
                        .iter()
                        .any(|e| {
                            matches!(&e.kind, EventKind::BudgetWarned { scope, metric, .. }
                                if *scope == c.scope && *metric == c.metric)
                        });
                if first {
                    let mut alert = crate::notify::Alert::new(
                        crate::notify::AlertKind::Budget,
                        format!(
                            "run budget {:.0}% spent: {:?} {:.2} of {:.2}",
                            100.0 * c.used / c.limit.max(f64::MIN_POSITIVE),
                            c.metric,
                            c.used,
                            c.limit
                        ),
                    );
                    alert.run_id = Some(self.run_id.to_owned());
                    alert.item = Some(item.to_owned());
                    crate::notify::raise(self.ws, self.clock, self.notify, &alert);
                }
                self.record(EventKind::BudgetWarned {
                    item: item.into(),
                    attempt,
                    scope: c.scope,
                    metric: c.metric,
                    used: c.used,
                    limit: c.limit,
                })?;
            }
            SessionEvent::BudgetTripped(c) => {
                let line = format!(
                    "{item}: budget tripped: {:?} {:?} {:.2} of {:.2}{}",
                    c.scope,
                    c.metric,
                    c.used,
                    c.limit,
                    if enforced {
                        "; ending the session"
                    } else {
                        " (budget_mode = warn)"
                    }
                );
                if c.scope == crate::session::Scope::Run {
                    let mut alert =
                        crate::notify::Alert::new(crate::notify::AlertKind::Budget, line);
                    alert.run_id = Some(self.run_id.to_owned());
                    alert.item = Some(item.to_owned());
                    crate::notify::raise(self.ws, self.clock, self.notify, &alert);
                } else {
                    crate::notify::attention(self.ws, self.clock, &line);
                }
                self.record(EventKind::BudgetTripped {
                    item: item.into(),
                    attempt,
                    scope: c.scope,
                    metric: c.metric,
                    used: c.used,
                    limit: c.limit,
                    enforced,
                })?;
                if !enforced && self.budget_gate == crate::gate::GateMode::Log {
                    self.record(EventKind::GateWarned {
                        gate: "budget".into(),
                        class: crate::gate::Gates::class("budget").as_str().into(),
                        detail: format!(
                            "{item}: {:?} {:?} {:.2} of {:.2}; the session goes on",
                            c.scope, c.metric, c.used, c.limit
                        ),
                    })?;
                }
            }
            SessionEvent::Stalled { silence } if self.stall_gate == crate::gate::GateMode::Log => {
                self.record(EventKind::GateWarned {
                    gate: "stall".into(),
                    class: crate::gate::Gates::class("stall").as_str().into(),
                    detail: format!(
                        "{item}: silent for {}; the session goes on",
                        crate::config::format_duration(silence)
                    ),
                })?;
            }
            SessionEvent::InputWritten { id } => {
                self.record(EventKind::OperatorMessageWritten {
                    item: item.into(),
                    attempt,
                    message_seq: id,
                })?;
            }
            SessionEvent::InputDelivered { id } => {
                let who = self
                    .store
                    .item_events_after(self.run_id, item, "operator_message", id - 1)?
                    .into_iter()
                    .find(|e| e.seq == id)
                    .and_then(|e| match e.kind {
                        EventKind::OperatorMessage { who, .. } => Some(who),
                        _ => None,
                    })
                    .unwrap_or_else(|| "operator".to_owned());
                self.record(EventKind::OperatorMessageDelivered {
                    item: item.into(),
                    attempt,
                    message_seq: id,
                    who,
                    agent_session: self.live_session.clone(),
                })?;
            }
            SessionEvent::AgentSession { id } => {
                self.live_session = Some(id.clone());
                if let Some(known) = &mut self.agent_session
                    && known.as_deref() != Some(id.as_str())
                {
                    *known = Some(id.clone());
                    self.record(EventKind::AgentSessionOpened {
                        item: item.into(),
                        attempt,
                        agent_session: id,
                    })?;
                }
            }
            SessionEvent::Stalled { .. } | SessionEvent::RateLimited { .. } => {}
        }
        Ok(())
    }
}

impl Engine<'_> {
    fn run(&self) -> Result<&RunRow, EngineError> {
        self.run.as_ref().ok_or_else(|| EngineError::Workspace {
            what: "no run is open".into(),
            help: None,
        })
    }

    fn run_id(&self) -> String {
        self.run.as_ref().map(|r| r.id.clone()).unwrap_or_default()
    }

    /// Journals one transition (event + state, one transaction; the store passes the failpoint of
    /// its name once it is durable), then shows it.
    fn record(&mut self, kind: EventKind) -> Result<Event, EngineError> {
        let run_id = self.run_id();
        let event = space::record(
            &mut self.store,
            &self.ws,
            self.clock.as_ref(),
            &self.config.notify,
            &run_id,
            kind,
        )?;
        (self.observe)(&event);
        // The cached run row (pass, spend, pause) always reflects the journal.
        self.run = self.store.run(&run_id)?;
        if let Some(run) = &self.run {
            self.dispatch.ledger_follows(event.kind.name(), run);
        }
        if matches!(event.kind.name(), "session_ended" | "review_ended") {
            self.verify_store = true;
        }
        Ok(event)
    }

    /// Resumes the unfinished run, or starts a new one. Returns whether it resumed.
    fn open_run(&mut self, plan: &Plan, fresh: bool) -> Result<bool, EngineError> {
        if let Some(run) = self.store.unfinished_run()? {
            self.run = Some(run);
            if !fresh {
                self.record(EventKind::RunResumed {
                    pid: std::process::id(),
                })?;
                return Ok(true);
            }
            self.abandon_open_attempts("abandoned: a fresh run was started")?;
            self.record(EventKind::RunFinished {
                halt_reason: HaltReason::OperatorStop,
                exit_code: HaltReason::OperatorStop.class().code(),
            })?;
        }
        let target = match &self.config.integrate.target {
            Some(t) => t.clone(),
            None => self
                .git
                .current_branch()?
                .ok_or_else(|| EngineError::Workspace {
                    what: "HEAD is detached, so there is no target branch to integrate into".into(),
                    help: Some(
                        "check out the branch to ship onto, or set [integrate] target = \"main\""
                            .into(),
                    ),
                })?,
        };
        let base = self.git.resolve(&format!("refs/heads/{target}"))?.ok_or_else(|| EngineError::Workspace {
            what: format!("the target branch `{target}` does not exist or has no commits"),
            help: Some("create it with a first commit, or set [integrate] target to an existing branch".into()),
        })?;
        let ids: Vec<&str> = plan.items.iter().map(|i| i.id.as_str()).collect();
        let blockers = self.git.attempt_branch_blockers(&ids)?;
        if !blockers.is_empty() {
            return Err(EngineError::Workspace {
                what: format!(
                    "your branch(es) {} block nightshift's attempt branches \
                     (refs/heads/nightshift/<item>/<n>): git cannot create them beside a branch \
                     of that name",
                    blockers
                        .iter()
                        .map(|b| format!("`{b}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                help: Some(format!(
                    "rename it, e.g. `git branch -m {} {}-mine`",
                    blockers[0], blockers[0]
                )),
            });
        }
        let mut items = Vec::with_capacity(plan.items.len());
        // The target's `Nightshift-Item` trailers are the ground truth a lost state database is
        // rebuilt against: an item the store has no record of, but whose commit is on the
        // target, shipped already and is not worked again (issue 13).
        let mut trailers = None;
        let mut recovered = Vec::new();
        for item in &plan.items {
            let mut shipped_by = self.store.shipped_by(&item.id)?;
            if shipped_by.is_none() && !self.store.knows_item(&item.id)? {
                let shipped = match &trailers {
                    Some(t) => t,
                    None => trailers.insert(shipped_on_target(&self.git, &target)?),
                };
                if let Some((run, commit)) = shipped.get(&item.id) {
                    recovered.push(format!("{} ({})", item.id, &commit[..commit.len().min(12)]));
                    shipped_by = Some(run.clone());
                }
            }
            items.push(PlannedItem {
                id: item.id.clone(),
                prompt: item.prompt.clone(),
                check: item.check.clone(),
                shipped_by,
            });
        }
        if !recovered.is_empty() {
            crate::notify::attention(
                &self.ws,
                self.clock.as_ref(),
                &format!(
                    "the state database has no record of {}, but their Nightshift-Item commits are on {target}: counted as shipped, not worked again",
                    recovered.join(", ")
                ),
            );
        }
        self.run = Some(RunRow {
            id: new_run_id(self.clock.as_ref()),
            started_at: String::new(),
            finished_at: None,
            target: target.clone(),
            base: base.clone(),
            max_iterations: self.config.limits.max_iterations,
            max_attempts: self.config.limits.max_attempts,
            state: crate::store::RunState::Running,
            halt_reason: None,
            exit_code: None,
            pass: 1,
            spent_tokens: 0.0,
            spent_turns: 0,
            spent_usd: 0.0,
            paused_until: None,
            pause_reason: None,
        });
        self.record(EventKind::RunStarted {
            target,
            base,
            max_iterations: self.config.limits.max_iterations,
            max_attempts: self.config.limits.max_attempts,
            items,
        })?;
        Ok(false)
    }
}

impl Engine<'_> {
    /// `error`, unless it is a full disk, which is waited out ([`space::wait_if_disk_full`]).
    fn wait_if_disk_full(&self, error: EngineError) -> Result<(), EngineError> {
        space::wait_if_disk_full(
            &self.ws,
            self.clock.as_ref(),
            &self.config.notify,
            &self.run_id(),
            error,
        )
    }

    /// At a safe point where a check of the store was asked for (at open, after a session):
    /// verified, and a repair journaled ([`safe_point::verify_store`]).
    fn verify_store_if_asked(&mut self) -> Result<(), EngineError> {
        if std::mem::take(&mut self.verify_store)
            && let Some(repaired) = safe_point::verify_store(
                &mut self.store,
                &mut self.run,
                &self.ws,
                self.clock.as_ref(),
                &self.config.notify,
            )?
        {
            self.record(repaired)?;
        }
        Ok(())
    }

    /// A step of an attempt failed with an error, not an outcome. The rule (issue 13): an error
    /// the next engine start would hit again is never answered by a restart.
    ///
    /// - A full disk pauses the run until there is space again; the step then runs again.
    /// - A git, file or session failure before integration fails this attempt with the error as
    ///   its reason (its work preserved; the item goes round again), and parks the item when
    ///   its previous attempt failed the same way: one item's deterministic failure parks that
    ///   item, it never stops the run.
    /// - Anything else (the store, the run lock, a failure while moving the target, where
    ///   failing the attempt could ship the work twice) stops the engine as before.
    fn step_failed(
        &mut self,
        item: &ItemRow,
        att: &crate::store::AttemptRow,
        error: EngineError,
    ) -> Result<(), EngineError> {
        if space::is_disk_full(&error) {
            return self.wait_if_disk_full(error);
        }
        let before_integration = att.phase.before_integration();
        let item_level = matches!(
            error,
            EngineError::Git(_) | EngineError::Io { .. } | EngineError::Session(_)
        );
        if !(before_integration && item_level) {
            return Err(error);
        }
        let reason = format!("internal error: failed to {}", error_chain(&error));
        let again = item.reason.as_deref() == Some(reason.as_str());
        let ended = if again {
            self.park(att, reason)
        } else {
            self.fail(att, reason)
        };
        // Failing the attempt failed too: nothing more can be done here.
        ended.map_err(|_| error)
    }
}

/// An error and its sources, joined with ": ".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Why a one-item loop ended, from how its item (the first of `items`) ended in run `run_id`.
fn loop_halt(store: &Store, run_id: &str, items: &[ItemRow]) -> Result<HaltReason, EngineError> {
    let Some(item) = items.first() else {
        return Ok(HaltReason::NoActionableItems);
    };
    match item.state {
        ItemState::Shipped => return Ok(HaltReason::SuccessConditionMet),
        ItemState::Escalated => return Ok(HaltReason::EscalationPending),
        ItemState::AwaitingOperator => return Ok(HaltReason::AwaitingOperator),
        _ => {}
    }
    let attempt = item.current_attempt.unwrap_or(0);
    let mut green = false;
    for event in store.attempt_events(run_id, &item.id, attempt, None)? {
        match event.kind {
            EventKind::CheckEnded {
                stage: crate::store::CheckStage::Work,
                green: g,
                ..
            } => green = g,
            EventKind::AttemptFailed {
                halt: Some(halt), ..
            } => return Ok(halt),
            _ => {}
        }
    }
    let reason = item.reason.as_deref().unwrap_or_default();
    Ok(if green && reason == attempt::NO_CHANGES {
        // The check was already green: the fixpoint holds, there was nothing to do.
        HaltReason::SuccessConditionMet
    } else if reason.starts_with("the item's budget is spent") {
        HaltReason::BudgetExceeded
    } else if reason.starts_with("check still red after") {
        HaltReason::MaxIterationsReached
    } else if reason.contains("merge conflict") || reason.contains("review") {
        // A conflict with the target, or review cycles used up: the branch is kept and a
        // person decides.
        HaltReason::EscalationPending
    } else {
        HaltReason::ExecutionFailure
    })
}

/// Whether an item was parked on an integrity halt (its reason starts with the halt's name).
fn halted_by_integrity(item: &ItemRow) -> bool {
    item.reason
        .as_deref()
        .and_then(|r| r.split(':').next())
        .and_then(HaltReason::from_name)
        .is_some_and(|h| h.class() == crate::halt::ExitClass::Integrity)
}

impl Engine<'_> {
    /// The `--until` deadline: the one given now (journaled), else the one this run journaled
    /// and no deadline stop has consumed yet.
    fn open_deadline(&mut self, until: Option<Until>) -> Result<(), EngineError> {
        if let Some(until) = until {
            self.record(EventKind::DeadlineSet {
                until: until.at.as_second(),
                given: until.given,
            })?;
            self.deadline = safe_point::Deadline::at(until.at.as_second());
            return Ok(());
        }
        let run_id = self.run_id();
        self.deadline = safe_point::Deadline::journaled(&self.store, &run_id)?;
        Ok(())
    }

    /// The deadline passed at a dispatch point: preserve the work in flight as a graceful stop
    /// does, and stop `deadline_reached`, resumable.
    fn deadline_stop(&mut self) -> Result<HaltReason, EngineError> {
        self.stop(true, Some(HaltReason::DeadlineReached))?;
        Ok(HaltReason::DeadlineReached)
    }

    /// Journals that gate `gate` tripped in `log` mode and did not act (`gate_warned`, counted
    /// per class by health). Guards call it when `self.config.gates.mode(gate)` is `Log`.
    pub(super) fn gate_warn(&mut self, gate: &str, detail: String) -> Result<(), EngineError> {
        self.record(EventKind::GateWarned {
            gate: gate.into(),
            class: crate::gate::Gates::class(gate).as_str().into(),
            detail,
        })?;
        Ok(())
    }
}

impl Engine<'_> {
    /// Pins what judges the run (issue 12). A new run journals `live` (the text its config was
    /// parsed from); a resumed run goes on with the copy it pinned (`reload`: pins `live`
    /// instead, journaled), reporting a live file that differs. A run journaled before pinning
    /// existed pins `live` now.
    fn pin_control_plane(&mut self, live: Option<&str>, reload: bool) -> Result<(), EngineError> {
        let run_id = self.run_id();
        let Some(live) = live else {
            self.item_checks = journaled_item_checks(&self.store, &run_id)?;
            return Ok(());
        };
        let path = self.ws.root().join(crate::config::FILE_NAME);
        let pinned = crate::control_plane::pinned(&self.store, &run_id, &path).map_err(|e| {
            EngineError::Workspace {
                what: format!("resume run {run_id}: {}", error_chain(&e)),
                help: Some(
                    "the journaled nightshift.toml no longer parses with this nightshift; finish the run with the version that started it, or `nightshift run --fresh`".into(),
                ),
            }
        })?;
        match pinned {
            Some(p) if !reload => {
                self.config = p.config;
                self.item_checks = p.item_checks;
                self.config_watch.pinned_sha256 = p.sha256;
                if let Some(changed) = self.config_watch.changed(
                    &self.ws,
                    &self.store,
                    self.clock.as_ref(),
                    &self.config.notify,
                    &run_id,
                )? {
                    self.record(changed)?;
                }
            }
            pinned => {
                if let Some(p) = pinned {
                    self.item_checks = p.item_checks;
                } else {
                    self.item_checks = journaled_item_checks(&self.store, &run_id)?;
                }
                let sha256 = crate::control_plane::sha256_hex(live);
                self.record(EventKind::ControlPlanePinned {
                    sha256: sha256.clone(),
                    source: live.to_owned(),
                    reloaded: reload,
                })?;
                self.config_watch.pinned_sha256 = sha256;
            }
        }
        Ok(())
    }

    /// A supervisor restarted this engine after the previous one died: journaled, and alerted
    /// when something killed it (an agent that `kill -9`s its engine must not go unseen).
    fn engine_restarted(&mut self, exit: String) -> Result<(), EngineError> {
        let line = format!(
            "engine_restarted: the previous engine of run {} ended ({exit}); the supervisor restarted it and the run resumes",
            self.run_id()
        );
        let mut alert = crate::notify::Alert::new(crate::notify::AlertKind::Integrity, line);
        alert.run_id = Some(self.run_id());
        crate::notify::raise(&self.ws, self.clock.as_ref(), &self.config.notify, &alert);
        self.record(EventKind::EngineRestarted { exit })?;
        Ok(())
    }
}

/// Whether the next step of this attempt starts an agent session (new work, which a passed
/// `--until` deadline does not allow); checks, commits and integration of finished work do not.
fn starts_session(att: &crate::store::AttemptRow, max_iterations: u32) -> bool {
    use crate::store::Phase;
    match att.phase {
        Phase::Preparing
        | Phase::Ready
        | Phase::Session
        | Phase::SessionRetry
        | Phase::Conflict
        | Phase::ReviewRepair
        | Phase::Reviewing
        | Phase::SecondOpinion
        | Phase::SecondReviewing => true,
        Phase::Red => att.iteration < max_iterations,
        _ => false,
    }
}

/// Items shipped on `target` by nightshift, from the trailers of its commits: item id →
/// (`Nightshift-Run`, commit), the newest commit per item.
fn shipped_on_target(
    git: &Git,
    target: &str,
) -> Result<std::collections::HashMap<String, (String, String)>, EngineError> {
    let out = git.run(&[
        "log",
        "--format=%H%x1f%(trailers:key=Nightshift-Item,valueonly,separator=%x1e)%x1f%(trailers:key=Nightshift-Run,valueonly,separator=%x1e)",
        &format!("refs/heads/{target}"),
        "--",
    ])?;
    let mut shipped = std::collections::HashMap::new();
    for line in out.lines() {
        let mut fields = line.split('\u{1f}');
        let (Some(commit), Some(items), run) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let run = run
            .and_then(|r| r.split('\u{1e}').next())
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or("unknown");
        for item in items
            .split('\u{1e}')
            .map(str::trim)
            .filter(|i| !i.is_empty())
        {
            shipped.entry(item.to_owned()).or_insert_with(|| {
                (
                    format!("{run} (per its commit on {target})"),
                    commit.to_owned(),
                )
            });
        }
    }
    Ok(shipped)
}

/// Keeps `.nightshift/` out of `git status` without touching a tracked file: a line in
/// `.git/info/exclude` (of the common directory, so every worktree sees it). `init` and every run
/// start call it.
pub fn ensure_excluded(common_dir: &std::path::Path) -> Result<(), EngineError> {
    let exclude = common_dir.join("info").join("exclude");
    let text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if text.lines().any(|l| {
        matches!(
            l.trim(),
            "/.nightshift/" | ".nightshift/" | "/.nightshift" | ".nightshift"
        )
    }) {
        return Ok(());
    }
    if let Some(dir) = exclude.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    let mut text = text;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("/.nightshift/\n");
    std::fs::write(&exclude, text).map_err(io_err(&exclude))
}

/// Refuses to start what cannot run: an agent program that is not on PATH.
fn preflight(config: &Config) -> Result<(), EngineError> {
    let Some(program) = launch::program(&config.agent) else {
        return Err(EngineError::Execution {
            what: "the agent: [agent].command is empty".into(),
            help: None,
        });
    };
    if program.contains('/') {
        return Ok(()); // resolved relative to the worktree at spawn time
    }
    let found = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|dir| dir.join(&program).is_file()))
        .unwrap_or(false);
    if found {
        Ok(())
    } else {
        Err(EngineError::Execution {
            what: format!("the agent: `{program}` is not on PATH"),
            help: Some("install it, or set [agent] binary (or command) in nightshift.toml".into()),
        })
    }
}

fn new_run_id(clock: &dyn Clock) -> String {
    let now = clock.wall();
    let salt = (now.subsec_nanosecond() as u32) ^ std::process::id().rotate_left(16);
    format!("{}-{:04x}", now.strftime("%Y%m%dT%H%M%SZ"), salt & 0xffff)
}

fn journaled_item_checks(
    store: &Store,
    run_id: &str,
) -> Result<std::collections::HashMap<String, Option<String>>, EngineError> {
    let mut checks = std::collections::HashMap::new();
    for event in store.run_events(run_id, &["run_started"])? {
        if let EventKind::RunStarted { items, .. } = event.kind {
            checks = items.into_iter().map(|i| (i.id, i.check)).collect();
        }
    }
    Ok(checks)
}
