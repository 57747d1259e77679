//! The dispatcher (issue 14): one loop that alone owns the store and the journal, and the
//! sessions and checks it started, each on a task (a thread of its own) that reports upward on
//! one channel. A check's start (`check_started`) is journaled before its task starts and its
//! verdict (`check_ended`) when the task reports its end (decision 110).
//!
//! The loop's turn: journal what the live sessions reported (in the order it came), then do
//! the next thing: a step of an admitted item whose session is not running, a new item when a
//! slot is free and its declared paths cannot overlap an admitted item's, or else wait for the
//! next report. A session's intent (`session_started`) is journaled by the loop before its task
//! starts, and its end (`session_ended`) by the loop when the task reports it: an attempt never
//! acts on the journal by itself.
//!
//! The merge queue: an attempt that reached the merge (`reviewed_ok` onward) holds the one merge
//! slot until it integrated or was sent back (a conflict, a red merged check): each is brought
//! onto the target as it is when its turn comes, and checked there, one at a time.
//!
//! With `max_parallel = 1` the loop admits one item and waits for its session as the
//! sequential engine did, so the journal of a run is the same.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use super::{
    Engine, EngineError, debt, halted_by_integrity, loop_halt, review, safe_point, starts_session,
};
use crate::halt::HaltReason;
use crate::session::{ProcessEnd, SessionError, SessionEvent, SessionPacket};
use crate::store::{EventKind, ItemRow, ItemState, Phase};

/// How long the loop waits for a report before it looks at stops, pauses and deadlines again.
const TICK: Duration = Duration::from_millis(200);

/// What the loop knows of one live session, to finish it when it ends.
pub(crate) struct SessionJob {
    pub item: String,
    pub attempt: u32,
    pub iteration: u32,
    pub worktree: PathBuf,
    /// What lay outside the checkout when the session started (engine/tamper.rs), moved on by
    /// what nightshift itself changed since.
    pub watched: crate::git::ControlPlane,
    /// The CLI session id journaled at launch.
    pub passed_session: Option<String>,
    /// Whether a crossed budget ends the session.
    pub enforced: bool,
    /// Its seat in the run's ledger.
    pub seat: Option<crate::session::SessionKey>,
}

/// What a session's events are journaled with (the CLI session it last named), and where its
/// operator messages go down (a CLI that reads them on stdin).
#[derive(Default)]
pub(crate) struct SessionSink {
    pub agent_session: Option<Option<String>>,
    pub live_session: Option<String>,
    pub tell: Option<TellFeed>,
}

/// The way down to a live session's stdin: the sender its input reads, and the journal
/// position up to which the item's operator messages were sent.
pub(crate) struct TellFeed {
    pub tx: mpsc::Sender<super::prompt::LiveTold>,
    pub after: i64,
}

/// What the loop asks of a task (issue 14's downward channel); the task hears it on its
/// session's next tick.
pub(crate) enum SessionRequest {
    /// End now, as `stopped` (a halt decided while it runs): its step runs again on resume.
    Stop,
    /// An operator message journaled for the item, for a CLI that reads them while it works.
    Tell(super::prompt::LiveTold),
}

/// What the loop knows of one running check (an attempt's, or the merged result's), to
/// journal its verdict when it ends.
pub(crate) struct CheckJob {
    pub item: String,
    pub attempt: u32,
    pub stage: crate::store::CheckStage,
    pub worktree: PathBuf,
    pub log: PathBuf,
    /// The test files `protect_tests` swapped for the base's: put back when it ends.
    pub protected: Vec<String>,
}

/// What runs on an item's task: its agent's session, or its check.
enum Task {
    Session { job: SessionJob, sink: SessionSink },
    Check(CheckJob),
}

struct Job {
    task: Task,
    stop: crate::stop::SessionStop,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Job {
    /// Sends `request` down to the task. A message for a task that takes none (a check, a
    /// CLI without live input) stays in the journal for the item's next prompt.
    fn request(&mut self, request: SessionRequest) {
        match request {
            SessionRequest::Stop => self.stop.request(),
            SessionRequest::Tell(told) => {
                if let Task::Session {
                    sink:
                        SessionSink {
                            tell: Some(feed), ..
                        },
                    ..
                } = &mut self.task
                {
                    feed.after = feed.after.max(told.seq);
                    let _ = feed.tx.send(told);
                }
            }
        }
    }

    fn worktree(&self) -> &std::path::Path {
        match &self.task {
            Task::Session { job, .. } => &job.worktree,
            Task::Check(check) => &check.worktree,
        }
    }
}

/// A session's report to the loop.
enum Upward {
    Event {
        item: String,
        event: SessionEvent,
    },
    Done {
        item: String,
        end: Box<Result<ProcessEnd, SessionError>>,
    },
    Checked {
        item: String,
        result: Box<Result<crate::check::CheckRun, SessionError>>,
    },
}

/// The dispatcher's state: the live sessions and their channel.
pub(crate) struct Dispatch {
    max_parallel: usize,
    jobs: HashMap<String, Job>,
    tx: mpsc::Sender<Upward>,
    rx: mpsc::Receiver<Upward>,
    /// Each item's declared paths (`[[item]] paths`); an item not here runs alone.
    paths: HashMap<String, Vec<String>>,
    /// The run's spend, shared live by every session (issue 14): each session's run-scope
    /// limits are held against the journaled spend plus every live session's running spend.
    /// Made when the run is open.
    pub(super) ledger: Option<std::sync::Arc<crate::session::RunLedger>>,
    /// The ledger seat of a session whose end is being journaled: the event that adds its
    /// spend to the run settles it (one lock: never counted twice or not at all).
    pub(super) settle: Option<crate::session::SessionKey>,
}

impl Dispatch {
    pub(super) fn new(config: &crate::config::Config) -> Dispatch {
        let (tx, rx) = mpsc::channel();
        Dispatch {
            max_parallel: usize::try_from(config.run.max_parallel.max(1)).unwrap_or(1),
            jobs: HashMap::new(),
            tx,
            rx,
            paths: config
                .items
                .iter()
                .filter(|i| !i.paths.is_empty())
                .map(|i| (i.id.clone(), i.paths.clone()))
                .collect(),
            ledger: None,
            settle: None,
        }
    }

    fn busy(&self) -> bool {
        !self.jobs.is_empty()
    }

    fn paths_of(&self, item: &str) -> &[String] {
        self.paths.get(item).map_or(&[], Vec::as_slice)
    }

    /// Starts a session's task; the loop hears from it on its channel.
    pub(super) fn spawn_session(
        &mut self,
        job: SessionJob,
        packet: SessionPacket,
        sink: SessionSink,
    ) -> Result<(), EngineError> {
        let item = job.item.clone();
        let failed = |item, why| Upward::Done {
            item,
            end: Box::new(Err(SessionError::Panicked(why))),
        };
        self.spawn(
            item,
            Task::Session { job, sink },
            failed,
            move |name, tx| {
                let events = tx.clone();
                let end = crate::session::run_session(packet, &mut |event| {
                    let _ = events.send(Upward::Event {
                        item: name.clone(),
                        event,
                    });
                });
                let _ = tx.send(Upward::Done {
                    item: name,
                    end: Box::new(end),
                });
            },
        )
    }

    /// Starts a check's task (`run` runs the check); the loop hears its end on its channel.
    /// The check of one item no longer holds the loop: other items' sessions are heard, and
    /// their steps taken, while it runs.
    pub(super) fn spawn_check(
        &mut self,
        job: CheckJob,
        run: impl FnOnce() -> Result<crate::check::CheckRun, SessionError> + Send + 'static,
    ) -> Result<(), EngineError> {
        let item = job.item.clone();
        let failed = |item, why| Upward::Checked {
            item,
            result: Box::new(Err(SessionError::Panicked(why))),
        };
        self.spawn(item, Task::Check(job), failed, move |name, tx| {
            let result = run();
            let _ = tx.send(Upward::Checked {
                item: name,
                result: Box::new(result),
            });
        })
    }

    /// Runs `body` on a thread of its own for `item`, with a stop flag of its own. Should it
    /// panic before its last report, `failed` is reported instead: the loop never waits for a
    /// task that is gone.
    fn spawn(
        &mut self,
        item: String,
        task: Task,
        failed: fn(String, String) -> Upward,
        body: impl FnOnce(String, mpsc::Sender<Upward>) + Send + 'static,
    ) -> Result<(), EngineError> {
        let tx = self.tx.clone();
        let stop = crate::stop::SessionStop::default();
        let flag = stop.clone();
        let name = item.clone();
        let thread = std::thread::Builder::new()
            .name(format!("task {item}"))
            .spawn(move || {
                flag.enter();
                let last = tx.clone();
                let who = name.clone();
                if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    body(name, tx);
                })) {
                    let why = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic without a message".to_owned());
                    let _ = last.send(failed(who, why));
                }
            })
            .map_err(|e| EngineError::Execution {
                what: format!("a thread for `{item}`: {e}"),
                help: None,
            })?;
        let job = Job {
            task,
            stop,
            thread: Some(thread),
        };
        // While it runs, what holds its checkout is its own: no other step's sweep takes it
        // (sweeps run on this thread only, so none ran since the spawn).
        crate::session::spare_worktree(job.worktree());
        self.jobs.insert(item, job);
        Ok(())
    }

    /// Moves every live session's view of the control plane on by what nightshift itself
    /// changed in `before` → now (read with `git` in `common_dir`) (its own step for another item: a target it advanced, refs it
    /// preserved), so that is not taken for the session's tampering.
    fn absorb_own_changes(
        &mut self,
        git: &crate::git::Git,
        common_dir: &std::path::Path,
        before: Option<crate::git::ControlPlane>,
    ) {
        let Some(before) = before else { return };
        let Ok(after) = git.control_plane(common_dir, &[]) else {
            return;
        };
        for live in self.jobs.values_mut() {
            if let Task::Session { job, .. } = &mut live.task {
                job.watched.absorb(&before, &after);
            }
        }
    }
}

/// Whether two items' declared paths may name a common file. An item that declared none may
/// touch anything. Conservative: two globs overlap unless their literal directory prefixes
/// (up to the first wildcard) part ways, so `src/api/**` and `src/db/**` run together while
/// `src/**` and `src/api/x.rs`, or `*.md` and anything, do not.
pub(crate) fn paths_overlap(a: &[String], b: &[String]) -> bool {
    if a.is_empty() || b.is_empty() {
        return true;
    }
    a.iter().any(|p| b.iter().any(|q| globs_overlap(p, q)))
}

fn globs_overlap(a: &str, b: &str) -> bool {
    // A path a glob can match starts with its literal components; two literal prefixes of which
    // neither holds the other part ways, and so do the globs. Otherwise assume they meet (a
    // directory holds the file, or a wildcard may match the other's next component).
    let (pa, pb) = (literal_prefix(a), literal_prefix(b));
    let n = pa.len().min(pb.len());
    pa[..n] == pb[..n]
}

/// The whole path components before the first wildcard.
fn literal_prefix(glob: &str) -> Vec<&str> {
    glob.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
        .collect()
}

impl Engine<'_> {
    /// Journals what the live sessions reported: everything already said, or (with `wait`)
    /// at least one report or a tick's wait. Returns whether a session ended.
    fn service(&mut self, wait: bool) -> Result<bool, EngineError> {
        let mut ended = false;
        let mut first = wait.then_some(TICK);
        loop {
            let message = match first.take() {
                Some(tick) => match self.dispatch.rx.recv_timeout(tick) {
                    Ok(m) => m,
                    Err(_) => return Ok(ended),
                },
                None => match self.dispatch.rx.try_recv() {
                    Ok(m) => m,
                    Err(_) => return Ok(ended),
                },
            };
            match message {
                Upward::Event { item, event } => {
                    let Some(mut live) = self.dispatch.jobs.remove(&item) else {
                        continue;
                    };
                    let result = match &mut live.task {
                        Task::Session { job, sink } => {
                            let (attempt, enforced) = (job.attempt, job.enforced);
                            self.session_event(sink, &item, attempt, enforced, event)
                        }
                        Task::Check(_) => Ok(()),
                    };
                    self.dispatch.jobs.insert(item, live);
                    result?;
                }
                Upward::Done { item, end } => {
                    let Some(live) = self.dispatch.jobs.remove(&item) else {
                        continue;
                    };
                    ended = true;
                    if let Task::Session { job, .. } = Self::joined(live) {
                        self.session_done(job, *end)?;
                    }
                }
                Upward::Checked { item, result } => {
                    let Some(live) = self.dispatch.jobs.remove(&item) else {
                        continue;
                    };
                    ended = true;
                    if let Task::Check(job) = Self::joined(live) {
                        self.check_done(job, *result)?;
                    }
                }
            }
        }
    }

    /// Sends each live session that reads messages on stdin what operators told its item since
    /// it was last sent any (`nightshift tell` journals them from another process).
    fn forward_tells(&mut self) -> Result<(), EngineError> {
        let run_id = self.run_id();
        let mut found = Vec::new();
        for (item, live) in &self.dispatch.jobs {
            if let Task::Session {
                sink: SessionSink {
                    tell: Some(feed), ..
                },
                ..
            } = &live.task
            {
                for e in
                    self.store
                        .item_events_after(&run_id, item, "operator_message", feed.after)?
                {
                    if let EventKind::OperatorMessage { who, text, .. } = e.kind {
                        let told = super::prompt::LiveTold {
                            seq: e.seq,
                            who,
                            at: e.at,
                            text,
                        };
                        found.push((item.clone(), told));
                    }
                }
            }
        }
        for (item, told) in found {
            if let Some(live) = self.dispatch.jobs.get_mut(&item) {
                live.request(SessionRequest::Tell(told));
            }
        }
        Ok(())
    }

    /// A task's thread is done (it sent its last report): joined, and its checkout no longer
    /// spared from other steps' sweeps.
    fn joined(mut live: Job) -> Task {
        if let Some(thread) = live.thread.take() {
            let _ = thread.join();
        }
        crate::session::unspare_worktree(live.worktree());
        live.task
    }

    /// A check's task ended: its verdict is journaled, or an error of the step is answered as
    /// a step's error is.
    fn check_done(
        &mut self,
        job: CheckJob,
        result: Result<crate::check::CheckRun, SessionError>,
    ) -> Result<(), EngineError> {
        let run_id = self.run_id();
        let item = self.store.item(&run_id, &job.item)?;
        let att = self.store.attempt(&run_id, &job.item, job.attempt)?;
        let (Some(item), Some(att)) = (item, att) else {
            return Err(EngineError::Execution {
                what: format!(
                    "finish the check of `{}` attempt {}: the store no longer has it",
                    job.item, job.attempt
                ),
                help: None,
            });
        };
        if let Err(e) = self.finish_check(&item, &att, job, result) {
            self.step_failed(&item, &att, e)?;
        }
        Ok(())
    }

    /// A session's task ended: its end is journaled, or an error of the step is answered as a
    /// step's error is.
    fn session_done(
        &mut self,
        job: SessionJob,
        end: Result<ProcessEnd, SessionError>,
    ) -> Result<(), EngineError> {
        let run_id = self.run_id();
        let (item_id, attempt) = (job.item.clone(), job.attempt);
        let seat = job.seat;
        let result = match end {
            Ok(end) => self.finish_session(job, end),
            Err(e) => Err(e.into()),
        };
        // Its end was journaled (and settled), or never will be.
        if self.dispatch.settle == seat {
            let run = self.run()?.clone();
            self.dispatch.settle_pending(&run);
        }
        if let Err(e) = result {
            let item = self.store.item(&run_id, &item_id)?;
            let att = self.store.attempt(&run_id, &item_id, attempt)?;
            match (item, att) {
                (Some(item), Some(att)) => self.step_failed(&item, &att, e)?,
                _ => return Err(e),
            }
        }
        Ok(())
    }

    /// Ends every live session now (a halt decided while they run): each ends `stopped`, its
    /// iteration to run again, and is journaled as it ends.
    fn end_sessions(&mut self) -> Result<(), EngineError> {
        for live in self.dispatch.jobs.values_mut() {
            live.request(SessionRequest::Stop);
        }
        while self.dispatch.busy() {
            self.service(true)?;
        }
        Ok(())
    }

    /// The scheduler: journal what the live sessions said; step an admitted item; admit the next
    /// queued item while a slot is free; give parked items another pass; else halt.
    pub(super) fn drive(&mut self) -> Result<HaltReason, EngineError> {
        let run = self.run()?.clone();
        self.dispatch.open_ledger(&run);
        loop {
            self.service(false)?;
            self.forward_tells()?;
            let busy = self.dispatch.busy();
            if let Some(request) = crate::stop::requested() {
                if busy {
                    // `now`: the sessions end themselves; graceful: they finish their step.
                    self.service(true)?;
                    continue;
                }
                self.stop(request == crate::stop::StopRequest::Graceful, None)?;
                return Ok(HaltReason::OperatorStop);
            }
            if self.halt_requested.is_some() && busy {
                self.end_sessions()?;
                continue;
            }
            if let Some(halt) = self.halt_requested.take() {
                self.record(EventKind::RunFinished {
                    halt_reason: halt,
                    exit_code: halt.class().code(),
                })?;
                return Ok(halt);
            }
            self.verify_store_if_asked()?;
            if let Some(warning) = safe_point::reload_gates(&mut self.config.gates, self.ws.root())
            {
                self.gate_warn("gates_file", warning)?;
            }
            if let Some(pause) = safe_point::operator_pause(&self.ws, self.run()?) {
                self.record(pause)?;
            }
            if self.run()?.paused_until.is_some() && busy {
                // No new step while paused; the live sessions go on and are heard.
                self.service(true)?;
                continue;
            }
            if safe_point::wait_pause(
                &self.ws,
                self.clock.as_ref(),
                self.run()?,
                Some(self.deadline),
            ) {
                self.record(EventKind::RunUnpaused)?;
            }
            if crate::stop::requested().is_some() {
                continue; // asked while paused: stop at the top of the loop
            }
            if self.deadline.passed(self.clock.as_ref()) && self.run()?.paused_until.is_some() {
                return self.deadline_stop(); // the deadline passed during a pause
            }
            let run_id = self.run_id();
            // Each turn reads the items it acts on, not the whole plan (issue 14: a step that
            // read every item made a night's cost quadratic in its length).
            let (all, shipped) = self.store.count_items(&run_id, ItemState::Shipped)?;
            self.alerts().no_ship(shipped, all - shipped);
            let running =
                self.store
                    .items_in(&run_id, ItemState::Running, self.dispatch.max_parallel + 1)?;
            match self.step_admitted(&running)? {
                Turn::Stepped => continue,
                Turn::Deadline => {
                    if busy {
                        self.service(true)?;
                        continue;
                    }
                    return self.deadline_stop();
                }
                Turn::Waiting => {}
            }
            if !running.is_empty() || busy {
                // Admitted items wait for their sessions, or the merge slot: a new item may
                // start beside them while a slot is free and its paths cannot overlap theirs.
                if self.admit_beside(&running)? {
                    continue;
                }
                if busy {
                    self.service(true)?;
                    continue;
                }
                // Nothing runs and no admitted item could be stepped (one without an open
                // attempt): go on as the queue says rather than wait for nothing.
            }
            // Review debt is a queue that blocks: it is paid before new work starts.
            if let Some(debt) = debt::next_debt(&self.store, &self.config, &run_id)? {
                // A debt review is a session: none starts past the deadline.
                if self.deadline.passed(self.clock.as_ref()) {
                    return self.deadline_stop();
                }
                self.review_debt(&debt)?;
                continue;
            }
            if let Some(item) = self.store.first_item(&run_id, ItemState::Queued)? {
                if self.deadline.passed(self.clock.as_ref()) {
                    return self.deadline_stop();
                }
                if let Some(changed) = self.config_watch.changed(
                    &self.ws,
                    &self.store,
                    self.clock.as_ref(),
                    &self.config.notify,
                    &run_id,
                )? {
                    self.record(changed)?;
                }
                if let Err(e) = self.start_attempt(&item) {
                    self.wait_if_disk_full(e)?;
                }
                continue;
            }
            // Nothing running or queued: the end of a pass (read once per pass).
            let items = self.store.items(&run_id)?;
            // An item halted by a guard is not retried: the agent weakened the oracle or
            // touched what it must not, and another pass would only invite it again.
            let parked: Vec<String> = items
                .iter()
                .filter(|i| i.state == ItemState::Parked && !halted_by_integrity(i))
                .map(|i| i.id.clone())
                .collect();
            let pass = self.run()?.pass;
            let shipped_this_pass = items.iter().any(|i| i.shipped_pass == Some(pass));
            if !self.loop_mode && !parked.is_empty() && (pass == 1 || shipped_this_pass) {
                if self.deadline.passed(self.clock.as_ref()) {
                    return self.deadline_stop();
                }
                self.record(EventKind::PassStarted {
                    pass: pass + 1,
                    requeued: parked,
                })?;
                continue;
            }
            if let Some(halt) = self.drain_pushes()? {
                self.halt_requested = Some(halt);
                continue;
            }
            let items = self.store.items(&run_id)?;
            let halt = if self.loop_mode {
                loop_halt(&self.store, &run_id, &items)?
            } else {
                review::drain_halt(&items, !self.store.open_debts()?.is_empty())
            };
            self.record(EventKind::RunFinished {
                halt_reason: halt,
                exit_code: halt.class().code(),
            })?;
            return Ok(halt);
        }
    }

    /// Steps the first admitted item that can go on: not waiting for its session, and (for an
    /// attempt at the merge) holding the merge slot or taking it while it is free.
    fn step_admitted(&mut self, running: &[ItemRow]) -> Result<Turn, EngineError> {
        let run_id = self.run_id();
        let max_iterations = self.run()?.max_iterations;
        let mut attempts = Vec::with_capacity(running.len());
        for item in running {
            let number = item.current_attempt.unwrap_or(0);
            if let Some(att) = self.store.attempt(&run_id, &item.id, number)? {
                attempts.push((item, att));
            }
        }
        // The merge slot: held by the attempt furthest into the merge (one at most, but a
        // crash may leave several half-way: the first in plan order goes first).
        let holder = attempts
            .iter()
            .find(|(_, att)| holds_merge_slot(att.phase))
            .map(|(item, _)| item.id.clone());
        let mut deadline = false;
        for (item, att) in &attempts {
            if self.dispatch.jobs.contains_key(&item.id) {
                continue;
            }
            let changed = att.candidate.as_deref() != Some(att.base.as_str());
            if wants_merge_slot(att.phase, self.config.review.review.when, changed)
                && holder.as_ref().is_some_and(|h| *h != item.id)
            {
                continue;
            }
            let starts = starts_session(att, max_iterations);
            if starts && self.deadline.passed(self.clock.as_ref()) {
                deadline = true;
                continue;
            }
            if starts && self.dispatch.jobs.len() >= self.dispatch.max_parallel {
                continue;
            }
            let watch = self
                .dispatch
                .busy()
                .then(|| self.git.control_plane(&self.common_dir, &[]).ok())
                .flatten();
            if let Err(e) = self.step(item, att) {
                self.step_failed(item, att, e)?;
            }
            self.dispatch
                .absorb_own_changes(&self.git, &self.common_dir, watch);
            return Ok(Turn::Stepped);
        }
        Ok(if deadline {
            Turn::Deadline
        } else {
            Turn::Waiting
        })
    }

    /// Admits the next queued item beside the admitted ones, when a slot is free, no review
    /// debt waits, and its declared paths cannot overlap any admitted item's. Returns whether
    /// it started one.
    fn admit_beside(&mut self, running: &[ItemRow]) -> Result<bool, EngineError> {
        if running.len() >= self.dispatch.max_parallel
            || self.dispatch.max_parallel == 1
            || self.deadline.passed(self.clock.as_ref())
            || self.run()?.paused_until.is_some()
            || crate::stop::requested().is_some()
            || debt::next_debt(&self.store, &self.config, &self.run_id())?.is_some()
        {
            return Ok(false);
        }
        let run_id = self.run_id();
        let Some(item) = self.store.first_item(&run_id, ItemState::Queued)? else {
            return Ok(false);
        };
        // Plan order is kept: the next item waits until it may start, none overtakes it.
        let mine = self.dispatch.paths_of(&item.id).to_vec();
        if running
            .iter()
            .any(|r| paths_overlap(&mine, self.dispatch.paths_of(&r.id)))
        {
            return Ok(false);
        }
        let watch = self.git.control_plane(&self.common_dir, &[]).ok();
        if let Err(e) = self.start_attempt(&item) {
            self.wait_if_disk_full(e)?;
        }
        self.dispatch
            .absorb_own_changes(&self.git, &self.common_dir, watch);
        Ok(true)
    }
}

/// What the journal says the run spent, as the ledger counts it.
pub(super) fn spend_of(run: &crate::store::RunRow) -> crate::session::RunSpend {
    crate::session::RunSpend {
        tokens: run.spent_tokens,
        turns: f64::from(run.spent_turns),
        usd: run.spent_usd,
    }
}

/// The run ledger's side of the dispatcher: what the journal says the run spent, and which
/// session's end is being journaled.
impl Dispatch {
    /// Makes the run's ledger, from what the journal says it spent.
    pub(super) fn open_ledger(&mut self, run: &crate::store::RunRow) {
        self.ledger = Some(std::sync::Arc::new(crate::session::RunLedger::new(
            spend_of(run),
        )));
    }

    /// After an event is journaled (the run row `run` as it now is): the ledger's committed
    /// spend is the journal's; a session whose end this event journaled leaves the ledger in
    /// the same lock.
    pub(super) fn ledger_follows(&mut self, kind: &str, run: &crate::store::RunRow) {
        let Some(ledger) = &self.ledger else {
            return;
        };
        let committed = spend_of(run);
        let ends = matches!(kind, "session_ended" | "review_ended" | "debt_settled");
        match self.settle.take_if(|_| ends) {
            Some(key) => ledger.settle(key, committed),
            None => ledger.set_committed(committed),
        }
    }

    /// The session of ledger seat `key` ended: the next event that journals a session's end
    /// settles it. One left pending (its end never journaled: an error on the way) is settled
    /// now, at the journal's figure: its spend never reached the journal.
    pub(super) fn settle_with_next_end(
        &mut self,
        key: Option<crate::session::SessionKey>,
        run: &crate::store::RunRow,
    ) {
        self.settle_pending(run);
        self.settle = key;
    }

    /// Settles a seat left pending (see [`Dispatch::settle_with_next_end`]).
    pub(super) fn settle_pending(&mut self, run: &crate::store::RunRow) {
        if let (Some(ledger), Some(key)) = (&self.ledger, self.settle.take()) {
            ledger.settle(key, spend_of(run));
        }
    }

    /// A seat in the run's ledger for a session about to start.
    pub(super) fn ledger_seat(&self) -> Option<crate::session::LedgerSeat> {
        self.ledger.as_ref().map(|l| l.seat())
    }

    /// Whether the live run total (journaled plus running sessions) reached a run fuse, or a
    /// session tripped one.
    pub(super) fn ledger_spent(&self, tokens: Option<u64>, usd: Option<f64>) -> bool {
        let Some(ledger) = &self.ledger else {
            return false;
        };
        let live = ledger.run_total();
        ledger
            .tripped()
            .is_some_and(|c| c.scope == crate::session::Scope::Run)
            || tokens.is_some_and(|l| live.tokens >= l as f64)
            || usd.is_some_and(|l| live.usd >= l)
    }
}

/// What a turn of the loop did with the admitted items.
enum Turn {
    Stepped,
    /// An admitted item would start a session, and the `--until` deadline has passed.
    Deadline,
    Waiting,
}

/// Phases of an attempt that is being merged: it holds the merge slot.
fn holds_merge_slot(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::MergePrepared | Phase::MergeChecking | Phase::MergeGreen | Phase::Integrating
    )
}

/// Whether an attempt's next step takes the merge slot (or holds it): from `reviewed_ok` on,
/// and a `green` one with changes and no review to run, which goes straight to its merge (else
/// it would be merged onto a target about to move). With `when = "risky"` whether a review runs
/// is known only after a diff, so such a one does not wait (decision 110).
fn wants_merge_slot(phase: Phase, review: crate::config::ReviewWhen, changed: bool) -> bool {
    let straight_to_merge =
        phase == Phase::Green && review == crate::config::ReviewWhen::Never && changed;
    straight_to_merge || phase == Phase::ReviewedOk || holds_merge_slot(phase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    fn dispatch() -> Dispatch {
        let (tx, rx) = mpsc::channel();
        Dispatch {
            max_parallel: 2,
            jobs: HashMap::new(),
            tx,
            rx,
            paths: HashMap::new(),
            ledger: None,
            settle: None,
        }
    }

    fn check_job(item: &str, worktree: &std::path::Path) -> CheckJob {
        CheckJob {
            item: item.into(),
            attempt: 1,
            stage: crate::store::CheckStage::Work,
            worktree: worktree.to_path_buf(),
            log: worktree.join("check.log"),
            protected: Vec::new(),
        }
    }

    /// A task that panics still reports its end (as an error of its step), so the loop never
    /// waits for a task that is gone; one that ends reports its result.
    #[test]
    fn a_task_that_panics_reports_a_failed_end_instead_of_leaving_the_loop_waiting() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut d = dispatch();
        d.spawn_check(check_job("boom", dir.path()), || panic!("a bug of ours"))
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let report =
            d.rx.recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no report from a panicked task: {e}"));
        match report {
            Upward::Checked { item, result } => {
                assert_eq!(item, "boom");
                match *result {
                    Err(SessionError::Panicked(why)) => assert_eq!(why, "a bug of ours"),
                    other => panic!("expected a panic report, got {other:?}"),
                }
            }
            _ => panic!("expected the check's report"),
        }
        let live = d
            .jobs
            .remove("boom")
            .unwrap_or_else(|| panic!("the job is known"));
        assert!(matches!(Engine::joined(live), Task::Check(_)));
    }

    #[test]
    fn undeclared_paths_overlap_everything() {
        assert!(paths_overlap(&[], &v(&["src/api/**"])));
        assert!(paths_overlap(&v(&["src/api/**"]), &[]));
        assert!(paths_overlap(&[], &[]));
    }

    #[test]
    fn disjoint_directories_do_not_overlap() {
        assert!(!paths_overlap(&v(&["src/api/**"]), &v(&["src/db/**"])));
        assert!(!paths_overlap(&v(&["a.txt"]), &v(&["b.txt"])));
        assert!(!paths_overlap(
            &v(&["docs/*.md", "src/api/**"]),
            &v(&["src/db/**", "tests/db/*.rs"])
        ));
    }

    #[test]
    fn nested_or_wild_prefixes_overlap() {
        assert!(paths_overlap(&v(&["src/**"]), &v(&["src/api/x.rs"])));
        assert!(paths_overlap(&v(&["*.md"]), &v(&["docs/a.txt"])));
        assert!(paths_overlap(&v(&["src/api/**"]), &v(&["src/api/**"])));
        assert!(paths_overlap(&v(&["a.txt"]), &v(&["./a.txt"])));
        assert!(paths_overlap(&v(&["src"]), &v(&["src/api/x.rs"])));
        assert!(paths_overlap(&v(&["src/a*/x"]), &v(&["src/api/y"])));
    }

    #[test]
    fn merge_phases_are_serialized() {
        use crate::config::ReviewWhen;
        assert!(wants_merge_slot(
            Phase::ReviewedOk,
            ReviewWhen::Always,
            true
        ));
        assert!(holds_merge_slot(Phase::Integrating));
        assert!(!wants_merge_slot(Phase::Session, ReviewWhen::Never, true));
        assert!(!holds_merge_slot(Phase::ReviewedOk));
        // Green with no review to run merges next; with a review, or nothing to merge, not.
        assert!(wants_merge_slot(Phase::Green, ReviewWhen::Never, true));
        assert!(!wants_merge_slot(Phase::Green, ReviewWhen::Always, true));
        assert!(!wants_merge_slot(Phase::Green, ReviewWhen::Never, false));
    }
}
