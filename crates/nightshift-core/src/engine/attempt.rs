//! The item pipeline, one step at a time: worktree → (session → check)* → commit → merge onto
//! the current target → check on the merged result → advance the target → tear down.

use std::path::{Path, PathBuf};

// The merge stage (prepare, integrate, conflict repair): a child of this module, so that it
// shares the pipeline's private steps (`run_session`, `commit_message`, `target_tip`).
#[path = "merge.rs"]
mod merge;

use super::review::Reviewer;
use super::{Engine, EngineError, Journal, io_err, launch, prompt};
use crate::check;
use crate::halt::HaltReason;
use crate::notify;
use crate::session::{self, Budget, Outcome, ProcessEnd, ProcessSpec, SessionPacket};
use crate::store::{AttemptRow, CheckStage, EventKind, ItemRow, Phase, Spend};

/// Seconds added to a reported reset time before retrying (reset times are whole seconds, and
/// clocks differ).
const RESET_MARGIN_SECS: i64 = 2;

/// What a session of a CLI that resumes is tracked by: the session id already journaled, and
/// what earlier processes of a resumed session spent.
pub(super) struct CliTrack {
    pub known: Option<String>,
    pub resumed_from: Option<(crate::agent::Usage, Option<f64>)>,
}

/// The shortest wait after a usage limit, doubling with each environmental rerun of the
/// attempt (5 s, 10 s, … capped at 10 min): a reset in the past never relaunches at once.
pub(super) fn rate_limit_floor(env_retries: u32) -> i64 {
    (5i64 << env_retries.min(7)).min(600)
}
/// Repair iterations an attempt gets for a conflict with the target's tip.
const MAX_CONFLICT_REPAIRS: u32 = 1;
/// Why an attempt whose check is green on the unchanged base ends.
pub(super) const NO_CHANGES: &str = "the agent made no changes";
/// Bytes of agent output kept in memory (the whole output is in the log).
const AGENT_TAIL: usize = 4096;

impl Engine<'_> {
    pub(super) fn start_attempt(&mut self, item: &ItemRow) -> Result<(), EngineError> {
        // Attempt numbers name refs and directories: never reuse one, even if the database was
        // lost while the refs of earlier attempts remain.
        let number = self
            .store
            .max_attempt_number(&item.id)?
            .max(highest_attempt_in_git(
                &self.git,
                &self.common_dir,
                &item.id,
            )?)
            + 1;
        let run = self.run()?;
        let target_ref = format!("refs/heads/{}", run.target);
        let base = self
            .git
            .resolve_ref(&self.common_dir, &target_ref)?
            .ok_or_else(|| EngineError::Workspace {
                what: format!("the target branch `{}` no longer exists", run.target),
                help: Some("restore the branch; `nightshift run` then resumes".into()),
            })?;
        let worktree = self.ws.worktree(&item.id, number);
        self.record(EventKind::AttemptStarted {
            item: item.id.clone(),
            attempt: number,
            base,
            branch: format!("nightshift/{}/{number}", item.id),
            worktree: worktree.display().to_string(),
        })?;
        Ok(())
    }

    /// Does the next thing for an open attempt, as its phase says.
    pub(super) fn step(&mut self, item: &ItemRow, att: &AttemptRow) -> Result<(), EngineError> {
        let max_iterations = self.run()?.max_iterations;
        if att.phase.needs_worktree() && !Path::new(&att.worktree).join(".git").exists() {
            // Removed from under us (by hand, or a disk cleaner): the work that reached git is
            // preserved from the branch; the item goes round again.
            return self.fail(
                att,
                format!("the attempt's worktree {} disappeared", att.worktree),
            );
        }
        match att.phase {
            Phase::Preparing => self.prepare_worktree(att),
            // The base's check (when no earlier check judged its tree) is a step of its own.
            Phase::Ready if self.ensure_baseline(item, att)? => Ok(()),
            Phase::Ready => self.run_session(item, att, 1),
            // Interrupted by a crash: the session did not finish, so it runs again (the agent
            // continues on top of whatever it left in the worktree).
            Phase::Session => self.run_session(item, att, att.iteration.max(1)),
            // A nudge after silence, or a retry after a rate limit or an environment fault:
            // the same iteration again, no attempt spent.
            Phase::SessionRetry => self.run_session(item, att, att.iteration.max(1)),
            // nightshift commits the session's work first, so the check judges exactly the
            // tree that would land (nothing the check itself writes is ever shipped unchecked).
            Phase::SessionEnded => self.commit(item, att),
            Phase::Committed | Phase::Checking => self.run_check(item, att, CheckStage::Work),
            // A guard failed: the oracle was weakened or a blocked path changed. The item
            // ends here, its attempt preserved; nothing of it reaches the target.
            // The session changed what lies outside its checkout (engine/tamper.rs).
            Phase::Tampered => self.end_tampered(att),
            Phase::Violated => {
                let guards = self.judge().last_guards(att)?;
                let (halt, reason) = super::verdict::violation(&guards).unwrap_or((
                    HaltReason::MetricIntegrityViolation,
                    "metric_integrity_violation: a guard failed".into(),
                ));
                self.alerts().alert(
                    notify::AlertKind::Integrity,
                    format!("{}: {reason}", att.item),
                    Some(&att.item),
                );
                self.park_halting(att, reason, halt)
            }
            // The oracle contradicted itself: no verdict of it can be trusted, so the run halts
            // (the item is not to blame and goes round again in the next run).
            Phase::Untrusted => {
                let why = self
                    .judge()
                    .last_untrusted(att)?
                    .unwrap_or_else(|| "the check contradicted itself".into());
                self.alerts().alert(
                    notify::AlertKind::Integrity,
                    format!("check_not_deterministic: {why}"),
                    Some(&att.item),
                );
                self.halt_requested = Some(HaltReason::CheckNotDeterministic);
                self.fail_halting(
                    att,
                    format!("check_not_deterministic: {why}"),
                    HaltReason::CheckNotDeterministic,
                )
            }
            Phase::Red if att.conflict_repairs == 0
                && let Some((halt, why)) = self.judge().no_convergence(item, att)? =>
            {
                self.fail_halting(att, format!("{halt}: {why}"), halt)
            }
            Phase::Red if att.iteration < max_iterations => {
                self.run_session(item, att, att.iteration + 1)
            }
            Phase::Red if att.conflict_repairs > 0 => self.park_keeping_branch(
                att,
                format!(
                    "merge conflict with the target: check still red after the repair; branch {} kept",
                    att.branch
                ),
            ),
            Phase::Red => self.fail(
                att,
                format!(
                    "check still red after {} iteration{}",
                    att.iteration,
                    if att.iteration == 1 { "" } else { "s" }
                ),
            ),
            Phase::Green if att.candidate.as_deref() == Some(att.base.as_str()) => {
                self.fail(att, NO_CHANGES.into())
            }
            Phase::Green => self.after_green(item, att),
            // The review phase (engine/review.rs), between the green check and the merge.
            Phase::Reviewing => self.run_review(item, att, Reviewer::Primary),
            Phase::SecondOpinion | Phase::SecondReviewing => {
                self.run_review(item, att, Reviewer::SecondOpinion)
            }
            Phase::Reviewed => self.decide_review(item, att),
            Phase::ReviewRepair => self.run_session(item, att, att.iteration + 1),
            Phase::ReviewedOk => self.prepare_merge(item, att),
            Phase::Conflict => self.start_conflict_repair(item, att),
            Phase::MergePrepared | Phase::MergeChecking | Phase::MergeGreen | Phase::Integrating
                if merge::merged_is_missing(&self.git, &self.common_dir, att)? =>
            {
                self.remake_merge(item, att)
            }
            Phase::MergePrepared if att.onto.as_deref() == Some(att.base.as_str()) => {
                self.integrate(att)
            }
            Phase::MergePrepared | Phase::MergeChecking => self.run_check(item, att, CheckStage::Merged),
            Phase::MergeGreen | Phase::Integrating => self.integrate(att),
            Phase::MergeRed => self.fail(
                att,
                format!(
                    "check red on the work merged onto the current target ({})",
                    short(att.onto.as_deref().unwrap_or("?"))
                ),
            ),
            // Only open attempts are stepped; one with its verdict has nothing left to do.
            Phase::Integrated | Phase::Failed => Err(EngineError::Workspace {
                what: format!(
                    "attempt {} of `{}` already ended `{}`; it has no next step",
                    att.attempt, att.item, att.phase
                ),
                help: None,
            }),
        }
    }

    fn prepare_worktree(&mut self, att: &AttemptRow) -> Result<(), EngineError> {
        let path = PathBuf::from(&att.worktree);
        // Only `preparing` reaches here, so nothing ran in a leftover directory yet: a half-made
        // worktree from a crash is ours and empty of work, and is rebuilt.
        // Leftovers of an interrupted `git worktree add`: the directory, or git's (possibly
        // locked) admin entry without it. `remove -f -f` clears both; only paid when present.
        // The checkout is a detached clone (git/clone.rs): a half-made one is deleted and made
        // again; a worktree's admin entry of the same name (an older nightshift) is cleared.
        let admin = path
            .file_name()
            .map(|name| self.common_dir.join("worktrees").join(name));
        if admin.is_some_and(|a| a.exists()) {
            let _ = self.git.worktree_remove(&path);
            self.git.worktree_prune()?;
        }
        if path.exists() && self.ws.owns_worktree_path(&path) {
            std::fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
        // A pooled clone reset to the base, or a fresh one (launch.rs).
        self.make_checkout(att, &path)?;
        // The gitignored files the agent needs; a seed that does not land fails this attempt
        // (loudly, with the seed named), never a silent session without its config.
        if let Err(why) = crate::git::seed_worktree(self.ws.root(), &path, &self.config.seed) {
            return self.fail(att, why);
        }
        self.record(EventKind::WorktreeReady {
            item: att.item.clone(),
            attempt: att.attempt,
            seeds: super::receipt::seed_manifest(&path, &self.config.seed),
        })?;
        Ok(())
    }

    fn run_session(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
        iteration: u32,
    ) -> Result<(), EngineError> {
        if self.budget_gate(item, att)? {
            return Ok(());
        }
        let logs = self.ws.logs(&self.run_id());
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        let nudge = (att.phase == Phase::SessionRetry
            && att.last_outcome.as_deref() == Some("stalled"))
        .then_some(att.nudges);
        let stem = match nudge {
            Some(n) => format!("{}-a{}-i{}-n{n}", att.item, att.attempt, iteration),
            None => format!("{}-a{}-i{}", att.item, att.attempt, iteration),
        };
        // A review's findings (a repair, or a reopened item) replace the check's output.
        let review_note = super::review::findings_note(item, att, iteration);
        let feedback = if iteration > 1 && review_note.is_none() {
            att.last_check_log
                .as_deref()
                .map(|log| tail_of(Path::new(log), check::FEEDBACK_BYTES))
        } else {
            None
        };
        let max_iterations = self.run()?.max_iterations;
        let check_command = self.judge().check_command(item);
        let conflict =
            if att.conflict_repairs > 0 && self.checkout(&att.worktree).merge_in_progress()? {
                let onto = att.onto.clone().unwrap_or_default();
                Some(prompt::ConflictNote {
                    paths: att.conflict_paths.clone().unwrap_or_default(),
                    target_log: self
                        .git
                        .log_oneline(&format!("{}..{onto}", att.base), 20)
                        .unwrap_or_default(),
                })
            } else {
                None
            };
        let mut text = prompt::compose(&prompt::PromptInput {
            item: &item.id,
            prompt: &item.prompt,
            check: &check_command,
            iteration,
            max_iterations,
            feedback: feedback.as_deref(),
            nudge,
            conflict: conflict.as_ref(),
        });
        text.push_str(review_note.as_deref().unwrap_or_default());
        // What operators told the item since its last session (`nightshift tell`).
        let told_run = self.run_id();
        let (told, told_through) = prompt::told(&self.store, &told_run, &att.item)?;
        text.push_str(&prompt::operator_note(&told));
        let prompt_file = logs.join(format!("{stem}.prompt.md"));
        std::fs::write(&prompt_file, &text).map_err(io_err(&prompt_file))?;
        let mut env =
            super::attempt::item_env(&self.config, &self.ws, &self.run_id(), att, iteration);
        env.push((
            "NIGHTSHIFT_PROMPT_FILE".into(),
            prompt_file.display().to_string(),
        ));
        if let Some(feedback) = &feedback {
            let file = logs.join(format!("{stem}.feedback.txt"));
            std::fs::write(&file, feedback).map_err(io_err(&file))?;
            env.push((
                "NIGHTSHIFT_FEEDBACK_FILE".into(),
                file.display().to_string(),
            ));
        }
        if let Some(n) = nudge {
            env.push(("NIGHTSHIFT_NUDGE".into(), n.to_string()));
        }
        let log = logs.join(format!("{stem}.agent.log"));
        let run_id = self.run_id();
        // A fresh id for every CLI process: Claude refuses a `--session-id` a process already
        // used ("Session ID … is already in use"), so a rerun must never pass it again.
        let session_id = launch::session_uuid(
            &run_id,
            &att.item,
            att.attempt,
            iteration,
            att.nudges,
            self.clock.as_ref(),
        );
        // The same iteration again (a nudge, a rerun after a usage limit, an API fault, an
        // operator stop or an engine crash) continues the CLI's own session where it can.
        let rerun = att.phase.reruns_session();
        let adapter = crate::agent::adapter_for(self.config.agent.kind);
        let resume = match adapter.resume() {
            crate::agent::ResumeRule::Never => None,
            _ if !rerun => None,
            _ => match att.agent_session.clone() {
                // The CLI said it cannot resume this one: the iteration starts afresh.
                Some(id)
                    if resume_refused(
                        &self.store,
                        &self.run_id(),
                        &att.item,
                        att.attempt,
                        &id,
                    )? =>
                {
                    None
                }
                other => other,
            },
        };
        // Journaled before launch. A fresh id is resumable once the CLI reports it.
        let passed_session = match (&resume, adapter.kind()) {
            (Some(id), _) => Some(id.clone()),
            (None, crate::config::AgentKind::Claude) => Some(session_id.clone()),
            (None, _) => None,
        };
        self.record(EventKind::SessionStarted {
            item: att.item.clone(),
            attempt: att.attempt,
            iteration,
            log: log.display().to_string(),
            agent_session: passed_session.clone(),
            resumed: resume.is_some(),
            agent: Some(super::receipt::agent_tuple(
                &self.config.agent,
                self.ws.root(),
            )),
            told_through: Some(told_through),
        })?;
        let known_session = resume.clone();
        let worktree = PathBuf::from(&att.worktree);
        let spec = launch::spec(launch::SessionSetup {
            agent: &self.config.agent,
            prompt_file: &prompt_file,
            session_id: &session_id,
            resume: resume.as_deref(),
            cwd: worktree.clone(),
            env,
            timeout: self.config.session.timeout,
            kill_grace: self.config.session.kill_grace,
            log,
            tail_bytes: AGENT_TAIL,
            sandbox_require: self.config.sandbox.require,
        });
        let budget = super::budget::session_budget(&self.config, self.run()?, item, &self.dispatch);
        let agent = self.config.agent.clone();
        let resumed_from = match &resume {
            Some(id) => Some(spent_in_session(
                &self.store,
                &self.run_id(),
                &att.item,
                att.attempt,
                id,
            )?),
            None => None,
        };
        let track = (adapter.resume() != crate::agent::ResumeRule::Never).then(|| CliTrack {
            known: known_session.clone(),
            resumed_from,
        });
        let watched = super::tamper::watch_control_plane(&self.git, &self.common_dir, att)?;
        // What is told after the prompt's read goes down to it live.
        let (packet, sink) =
            self.session_packet(spec, &agent, budget, track, Some(told_through))?;
        let enforced = packet.enforce_budget;
        let seat = packet.budget.ledger.as_ref().map(|s| s.key);
        self.dispatch.spawn_session(
            super::dispatch::SessionJob {
                item: att.item.clone(),
                attempt: att.attempt,
                iteration,
                worktree,
                watched,
                passed_session,
                enforced,
                seat,
            },
            packet,
            sink,
        )
    }

    /// A session of an attempt ended (the dispatcher heard it from the session's task): leave
    /// nothing of it running, journal its end, and decide what it means.
    pub(super) fn finish_session(
        &mut self,
        job: super::dispatch::SessionJob,
        end: session::ProcessEnd,
    ) -> Result<(), EngineError> {
        let super::dispatch::SessionJob {
            item,
            attempt,
            iteration,
            worktree,
            watched,
            passed_session,
            enforced: _,
            seat,
        } = job;
        let run_id = self.run_id();
        // The attempt as it is now (the session's events may have changed it).
        let att = self
            .store
            .attempt(&run_id, &item, attempt)?
            .ok_or_else(|| EngineError::Workspace {
                what: format!("attempt {attempt} of `{item}` is not in the journal"),
                help: None,
            })?;
        let att = &att;
        // Its spend leaves the ledger when its end is journaled (or at once if it never is).
        let run = self.run()?.clone();
        self.dispatch.settle_with_next_end(seat, &run);
        if end.outcome == Outcome::SpawnFailed {
            // Every item would fail the same way: halt resumable instead of draining the queue.
            return Err(EngineError::Execution {
                what: format!(
                    "the agent: {}",
                    end.spawn_error.unwrap_or_else(|| "unknown error".into())
                ),
                help: Some("fix [agent] in nightshift.toml, then `nightshift run` resumes".into()),
            });
        }
        // Nothing the session started may outlive it (seed 003: a test runner still writing).
        let swept = session::sweep(
            &worktree,
            self.config.session.kill_grace,
            session::Reach::Session,
            Some(self.started_boot),
        );
        if !swept.survivors.is_empty() {
            self.alerts().alert(
                notify::AlertKind::Integrity,
                format!(
                    "{}: processes {:?} survived SIGKILL in {}",
                    att.item,
                    swept.survivors,
                    worktree.display()
                ),
                Some(&att.item),
            );
        }
        let spend = end.totals.as_ref().map(|t| Spend {
            input: t.usage.input,
            output: t.usage.output,
            cache_read: t.usage.cache_read,
            cache_write: t.usage.cache_write,
            weighted: t.usage.weighted(self.config.budget.cache_read_weight),
            turns: t.turns,
            cost_usd: t.cost_usd,
            reasoning: t.usage.reasoning,
        });
        let agent_session = end.agent_session.clone().or(passed_session);
        // Compared (and put back) before anything else runs git, nightshift's commit included.
        let tampered = super::tamper::tampering(&self.git, &self.ws, att, &watched)?;
        self.record(EventKind::SessionEnded {
            item: att.item.clone(),
            attempt: att.attempt,
            iteration,
            outcome: end.outcome,
            exit_code: end.exit_code,
            duration_ms: end.duration.as_millis() as u64,
            spend,
            resets_at: end.resets_at,
            fault: end.fault.clone(),
            agent_session,
        })?;
        if let Some(found) = tampered {
            return self.record_tampering(att, iteration, found);
        }
        self.after_session(att, iteration, &end)
    }

    /// Runs one agent session under the run's gates (stall, budget), journaling its budget
    /// crossings and stalls the moment they happen (and writing ATTENTION for them).
    pub(super) fn supervise_session(
        &mut self,
        spec: ProcessSpec,
        agent: &crate::config::AgentConfig,
        budget: Budget,
        item: &str,
        attempt: u32,
        track: Option<CliTrack>,
    ) -> Result<ProcessEnd, EngineError> {
        // Run on the loop's own thread: nothing forwards messages to it while it runs.
        let (packet, mut sink) = self.session_packet(spec, agent, budget, track, None)?;
        let enforced = packet.enforce_budget;
        let seat = packet.budget.ledger.as_ref().map(|s| s.key);
        let mut failure = None;
        let end = session::run_session(packet, &mut |event| {
            if let Err(e) = self.session_event(&mut sink, item, attempt, enforced, event) {
                failure.get_or_insert(e);
            }
        });
        // Its spend leaves the ledger with the event journaling its end (`review_ended`).
        let run = self.run()?.clone();
        self.dispatch.settle_with_next_end(seat, &run);
        let end = end?;
        match failure {
            Some(e) => Err(e),
            None => Ok(end),
        }
    }

    /// Journals one thing a session reported, with what the session's sink remembers.
    pub(super) fn session_event(
        &mut self,
        sink: &mut super::dispatch::SessionSink,
        item: &str,
        attempt: u32,
        enforced: bool,
        event: session::SessionEvent,
    ) -> Result<(), EngineError> {
        let run_id = self.run_id();
        let mut journal = Journal {
            store: &mut self.store,
            observe: &mut *self.observe,
            clock: self.clock.as_ref(),
            ws: &self.ws,
            run_id: &run_id,
            budget_gate: self.config.gates.mode("budget"),
            stall_gate: self.config.gates.mode("stall"),
            notify: &self.config.notify,
            agent_session: sink.agent_session.take(),
            live_session: sink.live_session.take(),
        };
        let result = journal.session_event(item, attempt, enforced, event);
        sink.agent_session = journal.agent_session.take();
        sink.live_session = journal.live_session.take();
        result
    }

    /// Everything a session needs to run on its own (the process, its parser and
    /// bounds), and what its sink starts from. `told_through`: the journal position its prompt
    /// read the item's operator messages up to, from which the loop sends it later ones (a CLI
    /// that reads stdin while it works); `None`: it is sent none.
    pub(super) fn session_packet(
        &mut self,
        spec: ProcessSpec,
        agent: &crate::config::AgentConfig,
        budget: Budget,
        track: Option<CliTrack>,
        told_through: Option<i64>,
    ) -> Result<(SessionPacket, super::dispatch::SessionSink), EngineError> {
        let stall = self.config.gates.mode("stall");
        let budget_gate = self.config.gates.mode("budget");
        let mut parser = launch::parser(agent);
        if let (Some(p), Some((usage, cost))) =
            (parser.as_mut(), track.as_ref().and_then(|t| t.resumed_from))
        {
            p.set_resumed_from(usage, cost);
        }
        let (track_session, usage_log_dir) = match track {
            Some(t) => (
                Some(t.known),
                crate::agent::adapter_for(agent.kind).usage_log_dir(),
            ),
            None => (None, None),
        };
        // A CLI that reads messages on stdin gets the prompt as its first message, then what
        // operators tell the item while the session runs (`nightshift tell`).
        let adapter = crate::agent::adapter_for(agent.kind);
        let mut tell = None;
        let live_input: Option<Box<dyn session::LiveInput>> = match &spec.stdin {
            Some(prompt) if adapter.encode_input("").is_some() => {
                let text = std::fs::read_to_string(prompt).map_err(io_err(prompt))?;
                let (input, tx) = prompt::LiveTell::new(adapter, &text);
                tell = told_through.map(|after| super::dispatch::TellFeed { tx, after });
                Some(Box::new(input))
            }
            _ => None,
        };
        let live_session = track_session.clone().flatten();
        let packet = SessionPacket {
            live_input,
            spec,
            parser,
            stall_grace: (stall != crate::gate::GateMode::Off)
                .then_some(self.config.session.stall_grace),
            budget,
            enforce_budget: budget_gate == crate::gate::GateMode::Enforce,
            log_stall: stall == crate::gate::GateMode::Log,
            clock: self.clock.clone(),
            usage_log_dir,
        };
        Ok((
            packet,
            super::dispatch::SessionSink {
                agent_session: track_session,
                live_session,
                tell,
            },
        ))
    }

    /// What an ending means for the run: a nudge, a pause, or on to the check.
    fn after_session(
        &mut self,
        att: &AttemptRow,
        iteration: u32,
        end: &ProcessEnd,
    ) -> Result<(), EngineError> {
        let now = self.clock.wall().as_second();
        match end.outcome {
            Outcome::Stalled if att.nudges < self.config.session.stall_nudges => {
                self.record(EventKind::SessionNudged {
                    item: att.item.clone(),
                    attempt: att.attempt,
                    iteration,
                    nudge: att.nudges + 1,
                })?;
            }
            Outcome::RateLimited => {
                let max = now + self.config.budget.rate_limit_max_wait.as_secs() as i64;
                // The reported reset plus a margin; without one, a bounded back-off. Never
                // sooner than the floor: a reset already past (or a limit that holds past its
                // reset) must not relaunch in a tight loop.
                let until = end
                    .resets_at
                    .map_or(now + 300, |r| r + RESET_MARGIN_SECS)
                    .min(max)
                    .max(now + rate_limit_floor(att.env_retries));
                self.pause(
                    format!("rate_limited: {} hit its usage limit", att.item),
                    until,
                    &att.item,
                )?;
            }
            // Nothing to wait for: the iteration runs again at once, in a fresh CLI session.
            Outcome::EnvFault if end.fault.as_deref() == Some(crate::agent::RESUME_UNAVAILABLE) => {
                self.alerts().pause_cleared();
            }
            Outcome::EnvFault => {
                let fault = end.fault.clone().unwrap_or_else(|| "transient".into());
                let base = self.config.session.fault_backoff.as_secs_f64();
                let backoff = (base * 2f64.powi(att.env_retries.min(10) as i32)).min(600.0);
                let why = if fault == "auth" {
                    format!(
                        "env_fault: auth: {} — a person must log the agent CLI in; retrying every {backoff:.0}s",
                        att.item
                    )
                } else {
                    format!("env_fault: {fault}: {}", att.item)
                };
                self.pause(why, now + backoff.ceil() as i64, &att.item)?;
            }
            _ => self.alerts().pause_cleared(),
        }
        Ok(())
    }

    /// Pauses dispatch for the whole run (a quota is shared) until `until` (epoch seconds).
    pub(super) fn pause(
        &mut self,
        reason: String,
        until: i64,
        item: &str,
    ) -> Result<(), EngineError> {
        let until_text = jiff::Timestamp::from_second(until)
            .map(|t| t.to_string())
            .unwrap_or_default();
        // The cause without the changing back-off: one alert per cause while it lasts.
        let key = if crate::store::PauseCause::of(&reason) == crate::store::PauseCause::RateLimited
        {
            "rate_limited".to_owned()
        } else {
            reason.split(" — ").next().unwrap_or(&reason).to_owned()
        };
        // One pause for all sessions (issue 14): a sibling that hits the same usage limit while
        // the run already waits past its reset adds nothing to wait for.
        let cause = crate::store::PauseCause::of(&reason);
        let run = self.run()?;
        if cause == crate::store::PauseCause::RateLimited
            && run.pause_cause() == Some(cause)
            && run.paused_until.is_some_and(|u| u >= until)
        {
            return Ok(());
        }
        self.alerts().pause(&key, &reason, &until_text, item);
        self.record(EventKind::RunPaused { reason, until })?;
        Ok(())
    }

    /// Before a session: a spent item budget parks the item, a spent run budget halts the run.
    /// Returns whether the session must not start.
    fn budget_gate(&mut self, item: &ItemRow, att: &AttemptRow) -> Result<bool, EngineError> {
        if self.config.gates.mode("budget") != crate::gate::GateMode::Enforce {
            return Ok(false);
        }
        let b = self.config.budget;
        if super::budget::run_budget_spent(&self.config, self.run()?, &self.dispatch) {
            self.halt_requested = Some(HaltReason::BudgetExceeded);
            self.fail(att, "the run's budget is spent".into())?;
            return Ok(true);
        }
        if let Some(limit) = b.item_tokens.filter(|l| item.spent_tokens >= *l as f64) {
            let reason = format!(
                "the item's budget is spent: {:.0} of {limit} weighted tokens",
                item.spent_tokens
            );
            self.park(att, reason)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Starts a check of an attempt on a task of its own (the dispatcher hears its end and
    /// calls [`Engine::finish_check`]): its start is journaled here, before it runs.
    fn run_check(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
        stage: CheckStage,
    ) -> Result<(), EngineError> {
        let worktree = PathBuf::from(&att.worktree);
        if stage == CheckStage::Merged {
            // The oracle judges exactly the tree that would land on the target.
            let merged = att.merged.as_deref().unwrap_or_default();
            self.checkout(&worktree).checkout_detached(merged)?;
        }
        let logs = self.ws.logs(&self.run_id());
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        let suffix = match stage {
            CheckStage::Work => "check",
            CheckStage::Merged => "merged-check",
        };
        let log = unused_log(&logs.join(format!(
            "{}-a{}-i{}.{suffix}.log",
            att.item, att.attempt, att.iteration
        )));
        let command = self.judge().check_command(item);
        let env =
            super::attempt::item_env(&self.config, &self.ws, &self.run_id(), att, att.iteration);
        self.record(EventKind::CheckStarted {
            item: att.item.clone(),
            attempt: att.attempt,
            iteration: att.iteration,
            stage,
            command: Some(command.clone()),
            timeout_ms: Some(self.config.check.timeout.as_millis() as u64),
            env: env.iter().map(|(name, _)| name.clone()).collect(),
        })?;
        // `protect_tests`: the oracle runs with the test files as the base has them, so an
        // agent's edits to tests cannot make it green; the agent's versions come back after.
        let protected = match stage {
            CheckStage::Work => self.judge().protected_paths(att)?,
            CheckStage::Merged => Vec::new(),
        };
        self.checkout(&worktree)
            .restore_paths(&super::verdict::guard_base(att), &protected)?;
        self.judge().clear_results_file(&worktree);
        let timeout = self.config.check.timeout;
        let (cwd, to_log) = (worktree.clone(), log.clone());
        self.dispatch.spawn_check(
            super::dispatch::CheckJob {
                item: att.item.clone(),
                attempt: att.attempt,
                stage,
                worktree,
                log,
                protected,
            },
            move || check::run(&command, cwd, env, timeout, to_log),
        )
    }

    /// A check of an attempt ended (the dispatcher heard it from the check's task): the test
    /// files come back, and its verdict is journaled.
    pub(super) fn finish_check(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
        job: super::dispatch::CheckJob,
        result: Result<check::CheckRun, session::SessionError>,
    ) -> Result<(), EngineError> {
        let super::dispatch::CheckJob {
            stage,
            worktree,
            log,
            protected,
            ..
        } = job;
        let wt = self.checkout(&worktree);
        wt.restore_paths("HEAD", &protected)?;
        let result = result?;
        if result.end.outcome == Outcome::Stopped {
            // An operator stop is not a verdict: the check runs again when the run resumes.
            return Ok(());
        }
        let results = self.judge().read_results(&worktree, &log);
        let mut guards = match stage {
            CheckStage::Work => {
                self.judge()
                    .evaluate_guards(item, att, results.as_ref(), result.green)?
            }
            CheckStage::Merged => Vec::new(),
        };
        // A gate in `log` mode turns its guards' failures into warnings (never `blocked_paths`,
        // which the config only lets enforce).
        for verdict in &mut guards {
            let gate = crate::guard::gate_of(&verdict.guard);
            if verdict.state == crate::guard::GuardState::Fail
                && self.config.gates.mode(gate) == crate::gate::GateMode::Log
            {
                verdict.state = crate::guard::GuardState::Logged;
                self.gate_warn(
                    gate,
                    format!("{}: {}: {}", att.item, verdict.guard, verdict.detail),
                )?;
            }
        }
        // The tree this verdict is about (not with `protect_tests` swapping files in): a
        // second verdict on a tree must repeat the first, and a merged tree that lands is the
        // next attempt's base, whose results the guards then compare against.
        let tree = match stage {
            CheckStage::Work if protected.is_empty() => Some(match &att.candidate {
                Some(candidate) => self.judge().tree_of_new(candidate)?,
                None => wt.tree_of("HEAD")?,
            }),
            CheckStage::Work => None,
            CheckStage::Merged => Some(
                self.judge()
                    .tree_of(att.merged.as_deref().unwrap_or_default())?,
            ),
        };
        let mut untrusted = match tree.as_deref() {
            Some(t) => self
                .judge()
                .determinism(item, t, result.green, results.as_ref()),
            None => None,
        };
        if let Some(why) = &untrusted
            && self.config.gates.mode("determinism") == crate::gate::GateMode::Log
        {
            self.gate_warn("determinism", format!("{}: {why}", att.item))?;
            untrusted = None;
        }
        if let Some(tree) = &tree {
            self.judge()
                .cache_baseline(item, tree, result.green, results.as_ref());
        }
        self.record(EventKind::CheckEnded {
            item: att.item.clone(),
            attempt: att.attempt,
            iteration: att.iteration,
            stage,
            green: result.green,
            outcome: result.end.outcome,
            exit_code: result.end.exit_code,
            output_sha256: result.end.output_sha256,
            log: log.display().to_string(),
            duration_ms: result.end.duration.as_millis() as u64,
            results: results.as_ref().map(crate::store::CheckSummary::of),
            guards,
            untrusted,
        })?;
        session::sweep(
            &worktree,
            self.config.session.kill_grace,
            session::Reach::Session,
            Some(self.started_boot),
        );
        Ok(())
    }

    fn commit(&mut self, item: &ItemRow, att: &AttemptRow) -> Result<(), EngineError> {
        let wt = self.checkout(&att.worktree);
        if att.conflict_repairs > 0 && wt.merge_in_progress()? {
            // A conflict repair: committing concludes the merge, unless markers remain.
            let paths: Vec<&str> = att
                .conflict_paths
                .as_deref()
                .unwrap_or("")
                .lines()
                .collect();
            let marked: Vec<&str> = paths
                .iter()
                .copied()
                .filter(|p| has_conflict_markers(&Path::new(&att.worktree).join(p)))
                .collect();
            if !marked.is_empty() {
                return self.park_keeping_branch(
                    att,
                    format!(
                        "merge conflict with the target not resolved: markers left in {}; branch {} kept",
                        marked.join(", "),
                        att.branch
                    ),
                );
            }
        }
        // Idempotent: after a crash between `git commit` and the journal, the tree is clean
        // and HEAD already holds the work. HEAD may equal the base (no changes yet); the check
        // still runs, and a green check on no changes fails the attempt.
        // Nested repositories (docs/decisions.md, "nested repositories"): `add --all` fails on
        // one without a commit (on every engine start) and records one with a commit as a
        // gitlink to commits that exist nowhere else. The attempt fails, its item parks; the
        // files are preserved as plain files.
        let nested = wt.nested_repositories()?;
        if !nested.is_empty() {
            return self.park(
                att,
                format!(
                    "the agent created a nested git repository ({}): nightshift ships no \
                     repository inside the repository; its files are kept as plain files in \
                     the preserved attempt",
                    nested.join(", ")
                ),
            );
        }
        let message = commit_message(&self.run_id(), item, att);
        // Where the agent left the clone's history alone, the work is committed straight into
        // the user's object store (no fetch); else in the clone, and fetched below.
        let direct = wt.commit_into_user_store(&self.common_dir, &att.base, &message)?;
        if direct.is_none() {
            wt.stage_and_commit(&message)?;
        }
        // A gitlink the agent committed itself (`git add sub && git commit`).
        let links = match direct.as_deref() {
            Some(head) if head == att.base => Vec::new(),
            Some(head) => wt.new_gitlinks(&att.base, head)?,
            None => wt.new_gitlinks(&att.base, "HEAD")?,
        };
        if !links.is_empty() {
            return self.park(
                att,
                format!(
                    "the agent's commits add or move a gitlink ({}), a commit of another \
                     repository that the base tree does not hold: nightshift never ships one",
                    links.join(", ")
                ),
            );
        }
        let (head, descends) = match direct {
            // Made on the base by nightshift's own commit, already in the user's store.
            Some(head) => {
                self.git
                    .set_ref(&format!("refs/heads/{}", att.branch), &head)?;
                (head, true)
            }
            None => {
                let (head, descends) = wt.head_descending_from(&att.base)?;
                if descends && wt.pristine().is_some() {
                    // The work into the user's repository (nightshift's ref; the agent never
                    // wrote it).
                    self.git.fetch_from_clone(
                        &self.common_dir,
                        Path::new(&att.worktree),
                        "HEAD",
                        &format!("refs/heads/{}", att.branch),
                    )?;
                }
                (head, descends)
            }
        };
        if !descends {
            // Only work built on the base can be squashed onto the target: a candidate that
            // rewrote history below it would silently revert the target.
            return self.fail(
                att,
                format!(
                    "the agent's commits do not build on the attempt's base {} (history was rewritten)",
                    short(&att.base)
                ),
            );
        }
        self.record(EventKind::Committed {
            item: att.item.clone(),
            attempt: att.attempt,
            commit: head,
        })?;
        Ok(())
    }
}

/// Whether a session of attempt `item`/`attempt` of run `run_id` that tried to resume CLI
/// session `id` ended with the CLI saying it cannot (`resume_unavailable`).
fn resume_refused(
    store: &crate::store::Store,
    run_id: &str,
    item: &str,
    attempt: u32,
    id: &str,
) -> Result<bool, EngineError> {
    // The attempt's own session ends (indexed), not every session end of the run.
    Ok(store
        .attempt_events(run_id, item, attempt, Some("session_ended"))?
        .iter()
        .any(|e| {
            matches!(
                &e.kind,
                EventKind::SessionEnded {
                    item: i,
                    attempt: a,
                    agent_session: Some(s),
                    fault: Some(f),
                    ..
                } if i == item && *a == attempt && s == id && f == crate::agent::RESUME_UNAVAILABLE
            )
        }))
}

/// What the earlier processes of CLI session `id` (attempt `item`/`attempt` of run `run_id`)
/// spent, from the journal: the baseline a resumed CLI's running totals are counted from.
fn spent_in_session(
    store: &crate::store::Store,
    run_id: &str,
    item: &str,
    attempt: u32,
    id: &str,
) -> Result<(crate::agent::Usage, Option<f64>), EngineError> {
    let mut usage = crate::agent::Usage::default();
    let mut cost: Option<f64> = None;
    // This attempt's `session_ended` entries only (the item index bounds the read), not every
    // session of the run.
    for e in store.attempt_events(run_id, item, attempt, Some("session_ended"))? {
        if let EventKind::SessionEnded {
            agent_session: Some(s),
            spend: Some(spend),
            ..
        } = &e.kind
            && s == id
        {
            usage += crate::agent::Usage {
                input: spend.input,
                output: spend.output,
                cache_read: spend.cache_read,
                cache_write: spend.cache_write,
                reasoning: 0,
            };
            if let Some(c) = spend.cost_usd {
                *cost.get_or_insert(0.0) += c;
            }
        }
    }
    Ok((usage, cost))
}

/// The target's tip in the shared git directory.
pub(super) fn target_tip(
    git: &crate::git::Git,
    common_dir: &Path,
    target: &str,
) -> Result<String, EngineError> {
    git.resolve_ref(common_dir, &format!("refs/heads/{target}"))?
        .ok_or_else(|| EngineError::Workspace {
            what: format!("the target branch `{target}` no longer exists"),
            help: Some("restore the branch; `nightshift run` then resumes".into()),
        })
}

/// The environment of an attempt's agent session or check: `[worktree] env`, the item's
/// `NIGHTSHIFT_*` variables and where a person's actions are written.
pub(super) fn item_env(
    config: &crate::config::Config,
    ws: &crate::workspace::Workspace,
    run_id: &str,
    att: &AttemptRow,
    iteration: u32,
) -> Vec<(String, String)> {
    let mut env = config.worktree_env(ws.root());
    env.extend(check_env(run_id, &att.item, att.attempt, iteration));
    env.push((
        "NIGHTSHIFT_OPERATOR_FILE".into(),
        super::review::operator_file(ws, run_id, att)
            .display()
            .to_string(),
    ));
    env
}

/// The highest attempt number git still has a ref or branch for. Read from the files
/// (loose refs and `packed-refs`), which costs no process; a reftable repository asks git.
fn highest_attempt_in_git(
    git: &crate::git::Git,
    common_dir: &Path,
    item: &str,
) -> Result<u32, EngineError> {
    let preserve = format!("refs/nightshift/preserve/{item}/");
    let branches = format!("refs/heads/nightshift/{item}/");
    let number = |name: &str| name.rsplit('/').next()?.parse::<u32>().ok();
    if common_dir.join("reftable").exists() {
        return Ok(git
            .refs_under(&[&preserve, &branches])?
            .iter()
            .filter_map(|r| number(r))
            .max()
            .unwrap_or(0));
    }
    let mut highest = 0;
    for prefix in [&preserve, &branches] {
        if let Ok(entries) = std::fs::read_dir(common_dir.join(prefix)) {
            for entry in entries.flatten() {
                if let Some(n) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                {
                    highest = highest.max(n);
                }
            }
        }
    }
    if let Ok(packed) = std::fs::read_to_string(common_dir.join("packed-refs")) {
        for line in packed.lines() {
            let Some((_, name)) = line.split_once(' ') else {
                continue;
            };
            if name.starts_with(&preserve) || name.starts_with(&branches) {
                highest = highest.max(number(name).unwrap_or(0));
            }
        }
    }
    Ok(highest)
}

pub(super) fn commit_message(run_id: &str, item: &ItemRow, att: &AttemptRow) -> String {
    let (summary, cut) = crate::git::message::prompt_subject(&item.prompt, 64);
    let ellipsis = if cut { "…" } else { "" };
    format!(
        "{}: {summary}{ellipsis}\n\n{}\n\nNightshift-Run: {}\nNightshift-Item: {}\nNightshift-Attempt: {}\n",
        item.id,
        item.prompt.trim(),
        run_id,
        item.id,
        att.attempt
    )
}

/// The ref that keeps an attempt's prepared merge commit alive until it lands.
pub(super) fn merge_ref(item: &str, attempt: u32) -> String {
    format!("refs/nightshift/merge/{item}/{attempt}")
}

/// Whether a file still holds a git conflict marker line.
fn has_conflict_markers(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| {
        bytes
            .split(|b| *b == b'\n')
            .any(|line| line.starts_with(b"<<<<<<< ") || line.starts_with(b">>>>>>> "))
    })
}

/// The last `max` bytes of a file, as text (empty if unreadable).
fn tail_of(path: &Path, max: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = bytes.len().saturating_sub(max);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// The first 10 characters of a commit id.
pub(crate) fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// What every check (and agent) of an attempt is told about where it runs: the same for a
/// session, a check, its replay from a receipt, and `accept`'s check of the merged result.
pub(crate) fn check_env(
    run_id: &str,
    item: &str,
    attempt: u32,
    iteration: u32,
) -> Vec<(String, String)> {
    vec![
        ("NIGHTSHIFT_RUN".into(), run_id.to_owned()),
        ("NIGHTSHIFT_ITEM".into(), item.to_owned()),
        ("NIGHTSHIFT_ATTEMPT".into(), attempt.to_string()),
        ("NIGHTSHIFT_ITERATION".into(), iteration.to_string()),
    ]
}

/// A check's log path that no earlier run of it wrote: `path` itself, else `<stem>.2.log`,
/// `<stem>.3.log`… A check re-run after a crash used to append to the interrupted run's log
/// (session logs append), so the log the results are parsed from held two outputs, did not
/// parse, and the guards read `not_run` (issue 13). The interrupted run's output stays beside it.
pub(crate) fn unused_log(path: &std::path::Path) -> PathBuf {
    if !path.exists() {
        return path.to_owned();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".log").unwrap_or(&name).to_owned();
    (2u32..)
        .map(|n| path.with_file_name(format!("{stem}.{n}.log")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_owned())
}
