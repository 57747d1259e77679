//! The item pipeline, one step at a time: worktree → (session → check)* → commit → merge onto
//! the current target → check on the merged result → advance the target → tear down.

use std::path::{Path, PathBuf};

use super::review::Reviewer;
use super::{Engine, EngineError, Journal, io_err, launch, prompt};
use crate::check;
use crate::config::Strategy;
use crate::failpoint;
use crate::git::MergeOutcome;
use crate::halt::HaltReason;
use crate::notify;
use crate::session::{
    self, Budget, Limit, Metric, Outcome, ProcessEnd, ProcessSpec, Scope, SessionPacket,
};
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
            .max(self.highest_attempt_in_git(&item.id)?)
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
                let guards = self.last_guards(att)?;
                let (halt, reason) = super::verdict::violation(&guards).unwrap_or((
                    HaltReason::MetricIntegrityViolation,
                    "metric_integrity_violation: a guard failed".into(),
                ));
                self.alert(
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
                    .last_untrusted(att)?
                    .unwrap_or_else(|| "the check contradicted itself".into());
                self.alert(
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
                && let Some((halt, why)) = self.no_convergence(item, att)? =>
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
                if self.merged_is_missing(att)? =>
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
        let check_command = self.check_command(item);
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
        text.push_str(&prompt::operator_note(&prompt::told(
            &self.store,
            &told_run,
            &att.item,
        )?));
        let prompt_file = logs.join(format!("{stem}.prompt.md"));
        std::fs::write(&prompt_file, &text).map_err(io_err(&prompt_file))?;
        let mut env = self.item_env(att, iteration);
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
                Some(id) if self.resume_refused(&att.item, att.attempt, &id)? => None,
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
        let budget = self.session_budget(item)?;
        let agent = self.config.agent.clone();
        let resumed_from = match &resume {
            Some(id) => Some(self.spent_in_session(&att.item, att.attempt, id)?),
            None => None,
        };
        let track = (adapter.resume() != crate::agent::ResumeRule::Never).then(|| CliTrack {
            known: known_session.clone(),
            resumed_from,
        });
        let watched = self.watch_control_plane(att)?;
        let end = self.supervise_session(spec, &agent, budget, &att.item, att.attempt, track)?;
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
            session::Reach::HoldersAndOrphans,
            Some(self.started_boot),
        );
        if !swept.survivors.is_empty() {
            self.alert(
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
        let tampered = self.tampering(att, &watched)?;
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

    /// Whether a session of this attempt that tried to resume CLI session `id` ended with the
    /// CLI saying it cannot (`resume_unavailable`).
    fn resume_refused(&self, item: &str, attempt: u32, id: &str) -> Result<bool, EngineError> {
        Ok(self
            .store
            .run_events(&self.run_id(), &["session_ended"])?
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

    /// Runs one agent session under the run's gates (stall, budget), journaling its budget
    /// crossings and stalls the moment they happen (and writing ATTENTION for them).
    /// What the earlier processes of CLI session `id` (this attempt) spent, from the journal:
    /// the baseline a resumed CLI's running totals are counted from.
    fn spent_in_session(
        &self,
        item: &str,
        attempt: u32,
        id: &str,
    ) -> Result<(crate::agent::Usage, Option<f64>), EngineError> {
        let mut usage = crate::agent::Usage::default();
        let mut cost: Option<f64> = None;
        // This attempt's `session_ended` entries only (the item index bounds the read), not
        // every session of the run.
        for e in self
            .store
            .attempt_events(&self.run_id(), item, attempt, Some("session_ended"))?
        {
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

    pub(super) fn supervise_session(
        &mut self,
        spec: ProcessSpec,
        agent: &crate::config::AgentConfig,
        budget: Budget,
        item: &str,
        attempt: u32,
        track: Option<CliTrack>,
    ) -> Result<ProcessEnd, EngineError> {
        let run_id = self.run_id();
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
        let live_input: Option<Box<dyn session::LiveInput>> = match &spec.stdin {
            Some(prompt) if adapter.encode_input("").is_some() => {
                let text = std::fs::read_to_string(prompt).map_err(io_err(prompt))?;
                Some(Box::new(prompt::LiveTell::new(
                    adapter,
                    &text,
                    self.ws.state_db(),
                    &run_id,
                    item,
                    self.store.last_seq()?,
                )))
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
        let mut sink = Journal {
            store: &mut self.store,
            observe: &mut *self.observe,
            clock: self.clock.as_ref(),
            ws: &self.ws,
            run_id: &run_id,
            budget_gate,
            stall_gate: stall,
            notify: &self.config.notify,
            agent_session: track_session,
            live_session,
        };
        let enforced = packet.enforce_budget;
        let mut failure = None;
        let end = session::run_session(packet, &mut |event| {
            if let Err(e) = sink.session_event(item, attempt, enforced, event) {
                failure.get_or_insert(e);
            }
        })?;
        match failure {
            Some(e) => Err(e),
            None => Ok(end),
        }
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
                self.pause_cleared();
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
            _ => self.pause_cleared(),
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
        self.alert_pause(&key, &reason, &until_text, item);
        self.record(EventKind::RunPaused { reason, until })?;
        Ok(())
    }

    /// The limits of the next session, with what the item and the run already spent.
    pub(super) fn session_budget(&self, item: &ItemRow) -> Result<Budget, EngineError> {
        let b = &self.config.budget;
        let run = self.run()?;
        let mut limits = Vec::new();
        let mut add = |scope, metric, hard: Option<f64>, baseline: f64| {
            if let Some(hard) = hard {
                limits.push(Limit {
                    scope,
                    metric,
                    hard,
                    baseline,
                });
            }
        };
        add(
            Scope::Session,
            Metric::Tokens,
            b.session_tokens.map(|v| v as f64),
            0.0,
        );
        add(
            Scope::Session,
            Metric::Turns,
            b.session_turns.map(f64::from),
            0.0,
        );
        add(Scope::Session, Metric::Usd, b.session_usd, 0.0);
        add(
            Scope::Item,
            Metric::Tokens,
            b.item_tokens.map(|v| v as f64),
            item.spent_tokens,
        );
        add(
            Scope::Run,
            Metric::Tokens,
            b.run_tokens.map(|v| v as f64),
            run.spent_tokens,
        );
        add(Scope::Run, Metric::Usd, b.run_usd, run.spent_usd);
        Ok(Budget {
            limits,
            soft: b.soft,
            cache_read_weight: b.cache_read_weight,
        })
    }

    /// Whether a run fuse (`run_tokens`, `run_usd`) is spent, when the budget gate enforces.
    pub(super) fn run_budget_spent(&self) -> Result<bool, EngineError> {
        if self.config.gates.mode("budget") != crate::gate::GateMode::Enforce {
            return Ok(false);
        }
        let b = self.config.budget;
        let run = self.run()?;
        Ok(b.run_tokens.is_some_and(|l| run.spent_tokens >= l as f64)
            || b.run_usd.is_some_and(|l| run.spent_usd >= l))
    }

    /// Before a session: a spent item budget parks the item, a spent run budget halts the run.
    /// Returns whether the session must not start.
    fn budget_gate(&mut self, item: &ItemRow, att: &AttemptRow) -> Result<bool, EngineError> {
        if self.config.gates.mode("budget") != crate::gate::GateMode::Enforce {
            return Ok(false);
        }
        let b = self.config.budget;
        if self.run_budget_spent()? {
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
        let command = self.check_command(item);
        let env = self.item_env(att, att.iteration);
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
            CheckStage::Work => self.protected_paths(att)?,
            CheckStage::Merged => Vec::new(),
        };
        let wt = self.checkout(&worktree);
        wt.restore_paths(&super::verdict::guard_base(att), &protected)?;
        self.clear_results_file(&worktree);
        let result = check::run(
            &command,
            worktree.clone(),
            env,
            self.config.check.timeout,
            log.clone(),
        );
        wt.restore_paths("HEAD", &protected)?;
        let result = result?;
        if result.end.outcome == Outcome::Stopped {
            // An operator stop is not a verdict: the check runs again when the run resumes.
            return Ok(());
        }
        let results = self.read_results(&worktree, &log);
        let mut guards = match stage {
            CheckStage::Work => self.evaluate_guards(item, att, results.as_ref(), result.green)?,
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
                Some(candidate) => self.tree_of(candidate)?,
                None => wt.tree_of("HEAD")?,
            }),
            CheckStage::Work => None,
            CheckStage::Merged => Some(self.tree_of(att.merged.as_deref().unwrap_or_default())?),
        };
        let mut untrusted = match tree.as_deref() {
            Some(t) => self.judge_determinism(item, t, result.green, results.as_ref()),
            None => None,
        };
        if let Some(why) = &untrusted
            && self.config.gates.mode("determinism") == crate::gate::GateMode::Log
        {
            self.gate_warn("determinism", format!("{}: {why}", att.item))?;
            untrusted = None;
        }
        if let Some(tree) = &tree {
            self.cache_baseline(item, tree, result.green, results.as_ref());
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
            session::Reach::HoldersAndOrphans,
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
        wt.stage_and_commit(&self.commit_message(item, att))?;
        // A gitlink the agent committed itself (`git add sub && git commit`).
        let links = wt.new_gitlinks(&att.base, "HEAD")?;
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
        let (head, descends) = wt.head_descending_from(&att.base)?;
        if descends && wt.pristine().is_some() {
            // The work into the user's repository (nightshift's ref; the agent never wrote it).
            self.git.fetch_from_clone(
                &self.common_dir,
                Path::new(&att.worktree),
                "HEAD",
                &format!("refs/heads/{}", att.branch),
            )?;
        }
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

    /// A conflict with the target's tip: merge the tip into the worktree (markers and all) and
    /// give the agent one iteration to resolve it.
    fn start_conflict_repair(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let wt = self.checkout(&att.worktree);
        if !wt.merge_in_progress()? {
            let onto = att.onto.clone().unwrap_or_default();
            wt.merge_no_commit(
                &onto,
                &format!("{}: bring in the target ({})", att.item, short(&onto)),
            )?;
        }
        self.run_session(item, att, att.iteration + 1)
    }

    /// Brings the attempt's work onto the target's current tip as one commit, in memory.
    pub(super) fn prepare_merge(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let candidate = att.candidate.clone().unwrap_or_default();
        let tip = self.target_tip()?;
        let tree = if tip == att.base {
            format!("{candidate}^{{tree}}")
        } else {
            match self.git.merge_tree(&tip, &candidate)? {
                MergeOutcome::Clean { tree } => tree,
                MergeOutcome::Conflict { paths } if att.conflict_repairs < MAX_CONFLICT_REPAIRS => {
                    self.record(EventKind::ConflictFound {
                        item: att.item.clone(),
                        attempt: att.attempt,
                        onto: tip,
                        paths,
                    })?;
                    return Ok(());
                }
                MergeOutcome::Conflict { paths } => {
                    return self.park_keeping_branch(
                        att,
                        format!(
                            "merge conflict with the target ({}) in {}, still after a repair iteration; branch {} kept",
                            short(&tip),
                            paths.join(", "),
                            att.branch
                        ),
                    );
                }
            }
        };
        let message = self.commit_message(item, att);
        let commit = match self.config.integrate.strategy {
            Strategy::Squash => self.git.commit_tree(&tree, &[&tip], &message)?,
            Strategy::Merge => self.git.commit_tree(&tree, &[&tip, &candidate], &message)?,
            Strategy::Rebase => match self.replay(&att.base, &candidate, &tip)? {
                Some(last) => last,
                // A history with merges (a conflict repair) or a step that conflicts on its
                // own: land it as one commit, whose merge is already known to be clean.
                None => self.git.commit_tree(&tree, &[&tip], &message)?,
            },
        };
        // Until it lands, nothing but the journal names this commit: a `git gc --prune=now`
        // (a user's, a cron's) would delete it, and every later step of the attempt would
        // fail on the missing object. A ref keeps it alive; teardown deletes it.
        self.git
            .set_ref(&merge_ref(&att.item, att.attempt), &commit)?;
        // The next attempt's base is this commit: its tree is known already.
        if tip == att.base {
            let tree = self.tree_of(&candidate)?;
            self.know_tree(&commit, &tree);
        } else if self.config.integrate.strategy != Strategy::Rebase {
            self.know_tree(&commit, &tree);
        }
        self.record(EventKind::MergePrepared {
            item: att.item.clone(),
            attempt: att.attempt,
            commit,
            onto: tip,
        })?;
        Ok(())
    }

    /// Replays the attempt's commits (`base..candidate`) one by one onto `tip`, authors kept.
    /// `None` when the history has merges or a single step does not apply cleanly.
    fn replay(
        &self,
        base: &str,
        candidate: &str,
        tip: &str,
    ) -> Result<Option<String>, EngineError> {
        let (commits, merges) = self
            .git
            .commits_oldest_first(&format!("{base}..{candidate}"))?;
        if merges || commits.is_empty() {
            return Ok(None);
        }
        let mut current = tip.to_owned();
        for c in &commits {
            match self
                .git
                .merge_tree_from(Some(&format!("{c}^")), &current, c)?
            {
                MergeOutcome::Clean { tree } => {
                    current = self.git.replay_commit(&tree, &current, c)?
                }
                MergeOutcome::Conflict { .. } => return Ok(None),
            }
        }
        Ok(Some(current))
    }

    /// Moves the target to the prepared commit: intent, effect, confirmation. Re-entrant: on
    /// resume it first asks git whether the effect already happened.
    fn integrate(&mut self, att: &AttemptRow) -> Result<(), EngineError> {
        let target = self.run()?.target.clone();
        let merged = att.merged.clone().unwrap_or_default();
        let onto = att.onto.clone().unwrap_or_default();
        if att.phase != Phase::Integrating {
            self.record(EventKind::IntegrateIntended {
                item: att.item.clone(),
                attempt: att.attempt,
                target: target.clone(),
                commit: merged.clone(),
                expected_old: onto.clone(),
            })?;
        }
        let refname = format!("refs/heads/{target}");
        // Where the target is checked out, the user's checkout moves with it (and tells us the
        // tip); elsewhere the ref moves by compare-and-swap.
        let checkout = self
            .git
            .worktree_list()?
            .into_iter()
            .find(|w| w.branch.as_deref() == Some(target.as_str()) && !w.prunable);
        let tip = match checkout.as_ref().and_then(|w| w.head.clone()) {
            Some(head) => head,
            None => self.target_tip()?,
        };
        // merged's parent is onto, so while the tip is still onto the effect has not happened.
        let already = tip == merged || (tip != onto && self.git.is_ancestor(&merged, &tip)?);
        if !already {
            if tip != onto {
                // Someone else moved the target: merge onto the new tip (and check again).
                let item = self
                    .store
                    .items(&self.run_id())?
                    .into_iter()
                    .find(|i| i.id == att.item);
                return match item {
                    Some(item) => self.prepare_merge(&item, att),
                    None => Ok(()),
                };
            }
            match checkout {
                Some(w) => {
                    let user = self.git.at(&w.path);
                    let dirty = user.dirty_tracked_paths()?;
                    // The user's uncommitted edits that the fast-forward would have to move.
                    let blocking: Vec<String> = if dirty.is_empty() {
                        Vec::new()
                    } else {
                        let moved: std::collections::HashSet<String> = self
                            .git
                            .changed_paths(&onto, &merged)?
                            .into_iter()
                            .map(|(path, _)| path)
                            .collect();
                        dirty.into_iter().filter(|p| moved.contains(p)).collect()
                    };
                    if !blocking.is_empty() && user.tracked_tree_equals(&merged)? {
                        // Our own fast-forward, interrupted after the files moved: finish it.
                        self.move_target(&refname, &merged, &onto)?;
                        user.reset_index()?;
                    } else if !blocking.is_empty() {
                        // Never move a file under someone's uncommitted work: the item waits in
                        // `integrating`, a person is told, the wait is retried. Edits to other
                        // files do not block: the fast-forward below leaves them as they are
                        // (git refuses, and the item waits, if it would overwrite one).
                        let mut named: Vec<&str> =
                            blocking.iter().take(5).map(String::as_str).collect();
                        if blocking.len() > 5 {
                            named.push("…");
                        }
                        // An agent's edit there is not the user's work: never advise committing it.
                        let planted = self.tampered_paths(&blocking)?;
                        if !planted.is_empty() {
                            return self.wait_for_checkout(format!(
                                "the target `{target}` is checked out at {} with uncommitted changes to {} that an agent session made (control_plane_tampered): they are unreviewed, never commit them; inspect and discard them (`git restore -- {}`) and the item `{}` integrates",
                                w.path.display(),
                                planted.join(", "),
                                planted.join(" "),
                                att.item
                            ));
                        }
                        return self.wait_for_checkout(format!(
                            "the target `{target}` is checked out at {} with uncommitted changes to {} that `{}` also changes; commit or stash them and the item integrates",
                            w.path.display(),
                            named.join(", "),
                            att.item
                        ));
                    } else if let Err(e) = user.merge_ff_only(&merged) {
                        if self.target_tip()? != onto {
                            return Ok(()); // someone committed meanwhile: merge onto the new tip
                        }
                        return self.wait_for_checkout(format!(
                            "the checkout of `{target}` at {} cannot be fast-forwarded ({e}); clear what blocks it and the item integrates",
                            w.path.display()
                        ));
                    }
                }
                None => {
                    if !self.move_target(&refname, &merged, &onto)? {
                        return Ok(()); // lost a race; the next step merges onto the new tip
                    }
                }
            }
            failpoint::hit("integrate_effect_done");
        }
        let push = self.config.integrate.push;
        self.record(EventKind::Integrated {
            item: att.item.clone(),
            attempt: att.attempt,
            commit: merged,
            push,
            awaiting_push: push && self.config.integrate.done == crate::config::Done::Pushed,
        })?;
        self.teardown_attempt(&self.run_id(), &att.item, att.attempt)?;
        // Closeout is housekeeping too: a refused push is retried, never a failed item.
        self.push_owed()?;
        Ok(())
    }

    /// Whether the attempt's prepared merge commit is gone from the object store (pruned by a
    /// concurrent `git gc --prune=now` before its keep-alive ref existed, or by hand).
    fn merged_is_missing(&self, att: &AttemptRow) -> Result<bool, EngineError> {
        let Some(merged) = att.merged.as_deref() else {
            return Ok(false);
        };
        Ok(self.git.resolve(merged)?.is_none())
    }

    /// The prepared merge is gone: make it again from the attempt's candidate (its branch keeps
    /// that alive), once; when the candidate is gone too, or the new merge vanished as well,
    /// the attempt fails with the reason (never the engine: the next start would meet the same
    /// missing object).
    fn remake_merge(&mut self, item: &ItemRow, att: &AttemptRow) -> Result<(), EngineError> {
        let candidate = att.candidate.clone().unwrap_or_default();
        let merged = att.merged.clone().unwrap_or_default();
        let remade = self
            .store
            .attempt_events(
                &self.run_id(),
                &att.item,
                att.attempt,
                Some("merge_prepared"),
            )?
            .len()
            > 1;
        if remade || self.git.resolve(&candidate)?.is_none() {
            return self.fail(
                att,
                format!(
                    "the attempt's commit {} is missing from the repository (a concurrent `git gc \
                     --prune=now`?); its work is on branch {}",
                    short(&merged),
                    att.branch
                ),
            );
        }
        self.prepare_merge(item, att)
    }

    /// Pauses the run until the user's checkout of the target can take the item: ATTENTION
    /// the first time, then a quiet retry every `fault_backoff` (doubling, at most a minute).
    fn wait_for_checkout(&mut self, why: String) -> Result<(), EngineError> {
        if self.last_alert.as_deref() != Some(why.as_str()) {
            notify::attention(&self.ws, self.clock.as_ref(), &why);
            self.last_alert = Some(why.clone());
        }
        let wait = self
            .config
            .session
            .fault_backoff
            .as_secs_f64()
            .clamp(0.05, 60.0);
        let until = self.clock.wall().as_second() + wait.ceil() as i64;
        self.record(EventKind::RunPaused { reason: why, until })?;
        Ok(())
    }

    /// Compare-and-swap of the target. `false` when someone else moved it (a lost race);
    /// an error when it is stuck at `onto` (a stale lock file, permissions): retrying in a
    /// loop would never end, so the run halts, resumable, with git's reason.
    fn move_target(&self, refname: &str, merged: &str, onto: &str) -> Result<bool, EngineError> {
        match self.git.cas_ref(refname, merged, onto)? {
            Ok(()) => Ok(true),
            Err(_) if self.target_tip()? != onto => Ok(false),
            Err(why) => Err(EngineError::Workspace {
                what: format!("move {refname} to {}: {why}", short(merged)),
                help: Some(
                    "remove a stale `.lock` file if git names one; `nightshift run` then resumes"
                        .into(),
                ),
            }),
        }
    }

    /// The highest attempt number git still has a ref or branch for. Read from the files
    /// (loose refs and `packed-refs`), which costs no process; a reftable repository asks git.
    fn highest_attempt_in_git(&self, item: &str) -> Result<u32, EngineError> {
        let preserve = format!("refs/nightshift/preserve/{item}/");
        let branches = format!("refs/heads/nightshift/{item}/");
        let number = |name: &str| name.rsplit('/').next()?.parse::<u32>().ok();
        if self.common_dir.join("reftable").exists() {
            return Ok(self
                .git
                .refs_under(&[&preserve, &branches])?
                .iter()
                .filter_map(|r| number(r))
                .max()
                .unwrap_or(0));
        }
        let mut highest = 0;
        for prefix in [&preserve, &branches] {
            if let Ok(entries) = std::fs::read_dir(self.common_dir.join(prefix)) {
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
        if let Ok(packed) = std::fs::read_to_string(self.common_dir.join("packed-refs")) {
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

    fn target_tip(&self) -> Result<String, EngineError> {
        let target = &self.run()?.target;
        self.git
            .resolve_ref(&self.common_dir, &format!("refs/heads/{target}"))?
            .ok_or_else(|| EngineError::Workspace {
                what: format!("the target branch `{target}` no longer exists"),
                help: Some("restore the branch; `nightshift run` then resumes".into()),
            })
    }

    /// The item's check as the run journaled it (issue 12): its `run_started` plan entry, else
    /// the pinned `[check] command`; never the store's mutable `items.check_command`.
    pub(super) fn check_command(&self, item: &ItemRow) -> String {
        self.item_checks
            .get(&item.id)
            .cloned()
            .flatten()
            .or_else(|| self.config.check.command.clone())
            .unwrap_or_else(|| "false".into())
    }

    pub(super) fn item_env(&self, att: &AttemptRow, iteration: u32) -> Vec<(String, String)> {
        let mut env = self.config.worktree_env(self.ws.root());
        env.extend(check_env(&self.run_id(), &att.item, att.attempt, iteration));
        env.push((
            "NIGHTSHIFT_OPERATOR_FILE".into(),
            self.operator_file(att).display().to_string(),
        ));
        env
    }

    fn commit_message(&self, item: &ItemRow, att: &AttemptRow) -> String {
        let first = item
            .prompt
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        let summary: String = first.chars().take(64).collect();
        let ellipsis = if first.chars().count() > 64 {
            "…"
        } else {
            ""
        };
        format!(
            "{}: {summary}{ellipsis}\n\n{}\n\nNightshift-Run: {}\nNightshift-Item: {}\nNightshift-Attempt: {}\n",
            item.id,
            item.prompt.trim(),
            self.run_id(),
            item.id,
            att.attempt
        )
    }
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
