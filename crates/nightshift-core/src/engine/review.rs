//! The review phase: between the work check turning green and `prepare_merge`, a fresh
//! session (its own agent, `[agent.review]`) sees the item, the diff against the base and the
//! check results — never the dev session's context — and returns a structured verdict.
//!
//! Phases: `green` → `reviewing` → `reviewed` → (`reviewed_ok` → prepare_merge | `review_repair`
//! → a repair session | `green` again | `second_opinion` → `second_reviewing` → `reviewed` |
//! the attempt ends `parked`/`escalated`). What a verdict leads to is decided from the journal
//! (the `reviewed` phase re-decides after a crash), by the rules of [`super::triage`].

use std::path::{Path, PathBuf};

use super::teardown::Ending;
use super::triage::{self, Facts};
use super::{Engine, EngineError, io_err, launch};
use crate::config::{AgentConfig, OnTimeout, ReviewWhen, TriageAction};
use crate::halt::HaltReason;
use crate::notify::{self, Alert, AlertKind};
use crate::session::{self, Budget, Outcome, ProcessEnd};
use crate::store::{AttemptRow, EventKind, ItemRow, ItemState, Phase, Spend};
use crate::verdict::{self, Decision, Verdict};

/// Bytes of the diff put into the review prompt (the whole diff is in a file beside it).
const DIFF_IN_PROMPT: usize = 60_000;
/// Bytes of the check's output put into the review prompt.
const CHECK_IN_PROMPT: usize = 8_000;
/// Bytes of a reviewer's output searched for a fenced verdict.
const OUTPUT_SEARCHED: usize = 1 << 20;

/// Which reviewer a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reviewer {
    Primary,
    SecondOpinion,
}

impl Reviewer {
    fn name(self) -> &'static str {
        match self {
            Reviewer::Primary => "review",
            Reviewer::SecondOpinion => "second_opinion",
        }
    }
}

/// What a review session needs, for an attempt or for a debt.
pub(super) struct ReviewRun<'a> {
    pub agent: &'a AgentConfig,
    pub item: &'a str,
    pub attempt: u32,
    pub cwd: PathBuf,
    pub stem: String,
    pub prompt: String,
    pub env: Vec<(String, String)>,
    pub budget: Budget,
}

/// A review session's ending, with the verdict read from it.
pub(super) struct ReviewEnd {
    pub end: ProcessEnd,
    pub verdict: Result<Verdict, verdict::VerdictError>,
    pub spend: Option<Spend>,
}

impl Engine<'_> {
    /// The work check is green: operator actions park the item; otherwise review or merge.
    pub(super) fn after_green(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let actions = operator_actions(&operator_file(&self.ws, &self.run_id(), att));
        if !actions.is_empty() {
            let reason = format!(
                "awaiting operator: {}; branch {} kept, `nightshift confirm {}` ships it",
                actions.join("; "),
                att.branch,
                att.item
            );
            notify::raise(
                &self.ws,
                self.clock.as_ref(),
                &self.config.notify,
                &Alert {
                    kind: AlertKind::HumanRequired,
                    summary: format!("{}: {reason}", att.item),
                    detail: Some(actions.join("\n")),
                    run_id: Some(self.run_id()),
                    item: Some(att.item.clone()),
                },
            );
            let ending = Ending::verdict(ItemState::AwaitingOperator, actions);
            return self.end_attempt(att, reason, ending);
        }
        if review_wanted(&self.config.review.review, &self.git, att)? {
            self.run_review(item, att, Reviewer::Primary)
        } else {
            self.prepare_merge(item, att)
        }
    }

    /// Where the dev agent lists the actions only a person can take
    /// (`$NIGHTSHIFT_OPERATOR_FILE`).
    /// Runs one review session over the attempt and decides what its verdict leads to.
    pub(super) fn run_review(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
        reviewer: Reviewer,
    ) -> Result<(), EngineError> {
        // A review is a session too: with the run's budget spent none starts; the run halts
        // `budget_exceeded` and the attempt waits in its phase for the next run.
        if super::budget::run_budget_spent(&self.config, self.run()?, &self.dispatch) {
            self.halt_requested = Some(HaltReason::BudgetExceeded);
            return Ok(());
        }
        let setup = &self.config.review;
        let agent = match reviewer {
            Reviewer::Primary => setup
                .agent
                .clone()
                .unwrap_or_else(|| self.config.agent.clone()),
            Reviewer::SecondOpinion => match setup.second_opinion.clone() {
                Some(agent) => agent,
                None => {
                    return self.escalate(
                        att,
                        Some("real_doubt"),
                        "the review leaves real doubt and there is no [agent.second_opinion]"
                            .into(),
                    );
                }
            },
        };
        let cycle = match reviewer {
            Reviewer::Primary => att.review_cycles + 1,
            Reviewer::SecondOpinion => att.review_cycles.max(1),
        };
        let logs = self.ws.logs(&self.run_id());
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        let stem = match reviewer {
            Reviewer::Primary => format!("{}-a{}-r{cycle}", att.item, att.attempt),
            Reviewer::SecondOpinion => format!("{}-a{}-r{cycle}-second", att.item, att.attempt),
        };
        let candidate = att.candidate.clone().unwrap_or_default();
        let diff = self
            .git
            .run(&["diff", att.base.as_str(), candidate.as_str()])?;
        let check_log = att.last_check_log.clone().unwrap_or_default();
        let check_tail = tail_of(Path::new(&check_log), CHECK_IN_PROMPT);
        let prompt = review_prompt(&PromptParts {
            item: &item.id,
            task: &item.prompt,
            diff: &diff,
            check: &format!(
                "`{}` passed (exit 0) on this commit",
                self.judge().check_command(item)
            ),
            check_output: &check_tail,
            debt: false,
        });
        let mut env =
            super::attempt::item_env(&self.config, &self.ws, &self.run_id(), att, att.iteration);
        env.push(("NIGHTSHIFT_REVIEW".into(), reviewer.name().into()));
        env.push(("NIGHTSHIFT_REVIEW_CYCLE".into(), cycle.to_string()));
        env.push(("NIGHTSHIFT_CHECK_LOG".into(), check_log));
        let budget = super::budget::session_budget(&self.config, self.run()?, item, &self.dispatch);
        self.record(EventKind::ReviewStarted {
            item: att.item.clone(),
            attempt: att.attempt,
            cycle,
            reviewer: reviewer.name().into(),
            log: logs
                .join(format!("{stem}.review.log"))
                .display()
                .to_string(),
        })?;
        // A reviewer is an agent too: what it changes outside the checkout is tampering.
        let watched = super::tamper::watch_control_plane(&self.git, &self.common_dir, att)?;
        let ended = self.review_session(ReviewRun {
            agent: &agent,
            item: &att.item,
            attempt: att.attempt,
            cwd: PathBuf::from(&att.worktree),
            stem,
            prompt,
            env,
            budget,
        })?;
        let tampered = super::tamper::tampering(&self.git, &self.ws, att, &watched)?;
        if let Some(found) = tampered {
            return self.record_tampering(att, att.iteration, found);
        }
        if ended.end.outcome == Outcome::Stopped {
            return Ok(()); // an operator stop: the review runs again when the run resumes
        }
        let (verdict, error) = match ended.verdict {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e.to_string())),
        };
        self.record(EventKind::ReviewEnded {
            item: att.item.clone(),
            attempt: att.attempt,
            cycle,
            reviewer: reviewer.name().into(),
            outcome: ended.end.outcome,
            verdict,
            error,
            spend: ended.spend,
        })?;
        match self.store.attempt(&self.run_id(), &att.item, att.attempt)? {
            Some(att) => self.decide_review(item, &att),
            None => Ok(()),
        }
    }

    /// Spawns one reviewer in `cwd` and reads its verdict. Shared by attempt and debt reviews.
    pub(super) fn review_session(&mut self, r: ReviewRun<'_>) -> Result<ReviewEnd, EngineError> {
        let logs = self.ws.logs(&self.run_id());
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        let prompt_file = logs.join(format!("{}.review-prompt.md", r.stem));
        std::fs::write(&prompt_file, &r.prompt).map_err(io_err(&prompt_file))?;
        let verdict_file = logs.join(format!("{}.verdict.json", r.stem));
        let _ = std::fs::remove_file(&verdict_file);
        let log = logs.join(format!("{}.review.log", r.stem));
        let mut env = r.env;
        env.push((
            "NIGHTSHIFT_PROMPT_FILE".into(),
            prompt_file.display().to_string(),
        ));
        env.push((
            "NIGHTSHIFT_VERDICT_FILE".into(),
            verdict_file.display().to_string(),
        ));
        let run_id = self.run_id();
        // A UUID of its own per review session (Claude takes it as `--session-id`).
        let session_id =
            launch::session_uuid(&run_id, &r.stem, r.attempt, 0, 0, self.clock.as_ref());
        let timeout = self
            .config
            .review
            .review
            .timeout
            .unwrap_or(self.config.session.timeout);
        let spec = launch::spec(launch::SessionSetup {
            agent: r.agent,
            prompt_file: &prompt_file,
            session_id: &session_id,
            resume: None,
            cwd: r.cwd.clone(),
            env,
            timeout,
            kill_grace: self.config.session.kill_grace,
            log: log.clone(),
            tail_bytes: 4096,
            sandbox_require: self.config.sandbox.require,
        });
        let end = self.supervise_session(spec, r.agent, r.budget, r.item, r.attempt, None)?;
        if end.outcome == Outcome::SpawnFailed {
            return Err(EngineError::Execution {
                what: format!(
                    "the review agent: {}",
                    end.spawn_error.clone().unwrap_or_else(|| "unknown error".into())
                ),
                help: Some(
                    "fix [agent.review] (or [agent]) in nightshift.toml, then `nightshift run` resumes"
                        .into(),
                ),
            });
        }
        session::sweep(
            &r.cwd,
            self.config.session.kill_grace,
            session::Reach::Session,
            Some(self.started_boot),
        );
        let file_text =
            crate::bounded::read_to_string(&verdict_file, crate::bounded::CONFIG_BYTES).ok();
        let output = tail_of(&log, OUTPUT_SEARCHED);
        let verdict = verdict::read(file_text.as_deref(), &output);
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
        Ok(ReviewEnd {
            end,
            verdict,
            spend,
        })
    }

    /// What the last review's ending leads to (re-entrant: the `reviewed` phase calls it again
    /// after a crash, and the same journal gives the same decision).
    pub(super) fn decide_review(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<(), EngineError> {
        let record: serde_json::Value = att
            .review_verdict
            .as_deref()
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default();
        let second = record["reviewer"] == "second_opinion";
        let outcome: Option<Outcome> = serde_json::from_value(record["outcome"].clone()).ok();
        let verdict: Option<Verdict> = serde_json::from_value(record["verdict"].clone()).ok();
        let error = record["error"].as_str().unwrap_or("no verdict").to_owned();
        let review = self.config.review.review.clone();
        let cycles_left = att.review_cycles < review.max_review_cycles;
        if let Some(outcome) = outcome.filter(|o| o.is_environmental()) {
            // Not the work's fault and not a verdict: wait, then the same review again.
            let now = self.clock.wall().as_second();
            let wait = self.config.session.fault_backoff.as_secs().max(1) as i64;
            self.pause(
                // The prefixes `wait` and alerts classify pauses by (wake.rs).
                format!(
                    "{}: the review of {} waits",
                    if outcome == Outcome::RateLimited {
                        "rate_limited"
                    } else {
                        "env_fault: transient"
                    },
                    att.item
                ),
                now + wait,
                &att.item,
            )?;
            return self.decided(
                att,
                "retry",
                None,
                "the review ended on the environment".into(),
                None,
            );
        }
        let Some(v) = verdict else {
            if !second && outcome == Some(Outcome::Timeout) {
                return match review.on_timeout {
                    OnTimeout::Retry if cycles_left => self.decided(
                        att,
                        "retry",
                        None,
                        format!("the review timed out (cycle {} of {})", att.review_cycles, review.max_review_cycles),
                        None,
                    ),
                    OnTimeout::Retry => self.escalate(
                        att,
                        None,
                        format!("the review timed out {} times", att.review_cycles),
                    ),
                    OnTimeout::SalvageIfDone => self.decided(
                        att,
                        "ship_with_debt",
                        None,
                        "the review timed out; salvaged: the check is green on the commit that ships".into(),
                        None,
                    ),
                    OnTimeout::Defer => {
                        let why = format!(
                            "the review timed out; deferred: branch {} kept, `nightshift accept {}` ships it",
                            att.branch, att.item
                        );
                        self.decided(att, "defer", None, why.clone(), None)?;
                        self.park_keeping_branch(att, why)
                    }
                };
            }
            // A malformed or missing verdict is not an approval.
            return if !second && cycles_left {
                self.decided(
                    att,
                    "retry",
                    None,
                    format!("no usable verdict: {error}"),
                    None,
                )
            } else {
                self.escalate(
                    att,
                    None,
                    format!(
                        "no usable verdict from the {}: {error}",
                        if second { "second opinion" } else { "review" }
                    ),
                )
            };
        };
        match v.verdict {
            Decision::Approve => self.decided(
                att,
                "approve",
                None,
                format!(
                    "{} approved: {}",
                    if second {
                        "the second opinion"
                    } else {
                        "the review"
                    },
                    v.reason
                ),
                None,
            ),
            Decision::RequestChanges if second || !triage::all_procedural(&v) => {
                if cycles_left {
                    let file = self.ws.logs(&self.run_id()).join(format!(
                        "{}-a{}-r{}.findings.txt",
                        att.item, att.attempt, att.review_cycles
                    ));
                    std::fs::write(&file, v.feedback()).map_err(io_err(&file))?;
                    self.decided(
                        att,
                        "repair",
                        None,
                        format!("changes requested: {}", v.reason),
                        Some(file.display().to_string()),
                    )
                } else {
                    let why = format!(
                        "review cycles exhausted ({}): changes still requested: {}; branch {} kept",
                        att.review_cycles, v.reason, att.branch
                    );
                    self.decided(att, "park", None, why.clone(), None)?;
                    self.park_keeping_branch(att, why)
                }
            }
            Decision::Escalate if second => self.escalate(
                att,
                None,
                format!("the second opinion escalated: {}", v.reason),
            ),
            Decision::RequestChanges | Decision::Escalate => {
                self.triage(item, att, &v, cycles_left)
            }
        }
    }

    /// An objection that is not a plain request for changes: classed by rule, acted on by
    /// `[triage]`.
    fn triage(
        &mut self,
        _item: &ItemRow,
        att: &AttemptRow,
        v: &Verdict,
        cycles_left: bool,
    ) -> Result<(), EngineError> {
        let wt = self.checkout(&att.worktree);
        let dirty = !wt.run(&["status", "--porcelain"])?.trim().is_empty();
        // The phase only reaches a review after the check was green on the candidate, and the
        // candidate is what ships (it is committed before the check).
        let facts = Facts {
            check_green: true,
            tree_dirty: dirty,
        };
        let (class, rule) = triage::classify(v, facts);
        let why = format!("{}: {rule} (review: {})", class.as_str(), v.reason);
        match class.action(&self.config.review.triage) {
            TriageAction::Fix if cycles_left => {
                // What is beyond the checked commit was never going to ship: put the tree back.
                // Preserved first (promise: never reset away work that was not kept).
                let run_id = self.run_id();
                let kept = format!(
                    "refs/nightshift/preserve/{}/{}-before-fix-{}",
                    att.item, att.attempt, att.review_cycles
                );
                self.preserve_to(&run_id, att, kept)?;
                let candidate = att.candidate.clone().unwrap_or_default();
                wt.run(&["reset", "--hard", "--quiet", candidate.as_str()])?;
                wt.run(&["clean", "-fd", "--quiet"])?;
                self.decided(att, "fix", Some(class.as_str()), why, None)
            }
            TriageAction::Fix => self.escalate(
                att,
                Some(class.as_str()),
                format!("{why}; no review cycle left"),
            ),
            TriageAction::ShipWithDebt => {
                self.decided(att, "ship_with_debt", Some(class.as_str()), why, None)
            }
            TriageAction::SecondOpinion if self.config.review.second_opinion.is_some() => {
                self.decided(att, "second_opinion", Some(class.as_str()), why, None)
            }
            TriageAction::SecondOpinion => self.escalate(
                att,
                Some(class.as_str()),
                format!("{why}; there is no [agent.second_opinion]"),
            ),
            TriageAction::Escalate => self.escalate(att, Some(class.as_str()), why),
        }
    }

    fn decided(
        &mut self,
        att: &AttemptRow,
        action: &str,
        class: Option<&str>,
        why: String,
        feedback: Option<String>,
    ) -> Result<(), EngineError> {
        self.record(EventKind::ReviewDecided {
            item: att.item.clone(),
            attempt: att.attempt,
            action: action.into(),
            class: class.map(str::to_owned),
            why,
            feedback,
        })?;
        Ok(())
    }

    /// No safe path: park the item as `escalated` (branch kept for `nightshift accept`) and
    /// wake a person. The run goes on.
    fn escalate(
        &mut self,
        att: &AttemptRow,
        class: Option<&str>,
        why: String,
    ) -> Result<(), EngineError> {
        self.decided(att, "escalate", class, why.clone(), None)?;
        let reason = format!(
            "escalated: {why}; branch {} kept, `nightshift accept {}` ships it",
            att.branch, att.item
        );
        notify::raise(
            &self.ws,
            self.clock.as_ref(),
            &self.config.notify,
            &Alert {
                kind: AlertKind::HumanRequired,
                summary: format!("{}: {reason}", att.item),
                detail: None,
                run_id: Some(self.run_id()),
                item: Some(att.item.clone()),
            },
        );
        self.end_attempt(
            att,
            reason,
            Ending::verdict(ItemState::Escalated, Vec::new()),
        )
    }
}

/// Whether this attempt's work is reviewed before it integrates (`review`'s `when`; its diff
/// read with `git`).
fn review_wanted(
    review: &crate::config::ReviewConfig,
    git: &crate::git::Git,
    att: &AttemptRow,
) -> Result<bool, EngineError> {
    match review.when {
        ReviewWhen::Always => Ok(true),
        ReviewWhen::Never => Ok(false),
        ReviewWhen::Risky => {
            let candidate = att.candidate.clone().unwrap_or_default();
            let numstat = git.run(&["diff", "--numstat", att.base.as_str(), candidate.as_str()])?;
            let mut lines = 0u64;
            for line in numstat.lines() {
                let mut parts = line.splitn(3, '\t');
                let added = parts.next().and_then(|a| a.parse::<u64>().ok());
                let deleted = parts.next().and_then(|d| d.parse::<u64>().ok());
                let path = parts.next().unwrap_or_default();
                lines += added.unwrap_or(0) + deleted.unwrap_or(0);
                if review.risky_paths.iter().any(|p| glob_match(p, path)) {
                    return Ok(true);
                }
            }
            Ok(lines > u64::from(review.risky_lines))
        }
    }
}

/// The prompt section for a session that follows review findings: a repair asked by the
/// attempt's review, or the first session of an item a debt review reopened.
pub(super) fn findings_note(item: &ItemRow, att: &AttemptRow, iteration: u32) -> Option<String> {
    let (file, heading) = if att.phase == Phase::ReviewRepair {
        (
            att.last_check_log.as_deref()?,
            "A review of your work asked for changes",
        )
    } else if iteration == 1 {
        (
            item.feedback.as_deref()?,
            "This item shipped before, and a later review of it found a serious problem",
        )
    } else {
        return None;
    };
    let findings = tail_of(Path::new(file), 16 * 1024);
    Some(format!(
        "\n## {heading}\n\nThe check is green; address these findings (your earlier work is in the working tree) and keep the check green:\n\n```\n{}\n```\n",
        findings.trim_end()
    ))
}

/// The halt when the queue is drained: a person's decision first (16), then parked work
/// (11), then unpaid review debt (11), never 10 while any debt is open.
pub(super) fn drain_halt(items: &[ItemRow], debt_open: bool) -> HaltReason {
    if items.iter().any(|i| i.state == ItemState::Escalated) {
        HaltReason::EscalationPending
    } else if items.iter().any(|i| i.state == ItemState::AwaitingOperator) {
        HaltReason::AwaitingOperator
    } else if !items.iter().all(|i| i.state == ItemState::Shipped) {
        HaltReason::QueueDrainedWithParked
    } else if debt_open {
        HaltReason::DebtOutstanding
    } else if items.is_empty() {
        HaltReason::NoActionableItems
    } else {
        HaltReason::QueueDrainedAllShipped
    }
}

/// The actions a dev agent listed in its operator file: a JSON array of strings, an object
/// with `actions`, or one action per line.
pub(crate) fn operator_actions(path: &Path) -> Vec<String> {
    let Ok(text) = crate::bounded::read_to_string(path, crate::bounded::CONFIG_BYTES) else {
        return Vec::new();
    };
    let from_json = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            let list = if v.is_array() {
                v
            } else {
                v.get("actions")?.clone()
            };
            serde_json::from_value::<Vec<String>>(list).ok()
        });
    from_json
        .unwrap_or_else(|| text.lines().map(str::to_owned).collect())
        .into_iter()
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty())
        .collect()
}

pub(super) struct PromptParts<'a> {
    pub item: &'a str,
    pub task: &'a str,
    pub diff: &'a str,
    pub check: &'a str,
    pub check_output: &'a str,
    pub debt: bool,
}

/// The reviewer's prompt: the item, the diff against the base, the check results, and the
/// verdict shape. Nothing of the dev session.
pub(super) fn review_prompt(p: &PromptParts<'_>) -> String {
    let diff = if p.diff.len() > DIFF_IN_PROMPT {
        let mut cut = DIFF_IN_PROMPT;
        while !p.diff.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}\n… (diff truncated)\n", &p.diff[..cut])
    } else {
        p.diff.to_owned()
    };
    let context = if p.debt {
        "This work was already integrated without its review (review debt). Review it now; a \
         high-severity finding reopens the item."
    } else {
        "Review this work before it is integrated."
    };
    format!(
        "You are reviewing item `{item}`. {context}\n\n## The task\n\n{task}\n\n## The check\n\n{check}\n\n```\n{out}\n```\n\n## The diff against the base\n\n```diff\n{diff}```\n\n## Your verdict\n\nWrite it as JSON to the file named by $NIGHTSHIFT_VERDICT_FILE, or end your answer with it in a fenced ```json block:\n\n```json\n{{\"verdict\": \"approve\" | \"request_changes\" | \"escalate\", \"reason\": \"…\", \"findings\": [{{\"severity\": \"low\" | \"medium\" | \"high\" | \"critical\", \"file\": \"…\", \"line\": 12, \"text\": \"…\"}}]}}\n```\n\nDo not change any file.\n",
        item = p.item,
        task = p.task.trim(),
        check = p.check,
        out = p.check_output.trim_end(),
    )
}

/// The last `max` bytes of a file, as text (empty if unreadable).
pub(super) fn tail_of(path: &Path, max: usize) -> String {
    // Only the tail is read: a log can be large.
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let length = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(max as u64)));
    let mut bytes = Vec::new();
    let _ = file.take(max as u64).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A glob over a repository path: `**` any number of directories, `*` anything but `/`,
/// `?` one character but `/`.
pub(crate) fn glob_match(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', b'/', rest @ ..] => {
                go(rest, s)
                    || s.iter()
                        .enumerate()
                        .any(|(i, c)| *c == b'/' && go(rest, &s[i + 1..]))
            }
            [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|i| *i == 0 || s[i - 1] != b'/')
                .any(|i| go(rest, &s[i..])),
            [b'?', rest @ ..] => s.first().is_some_and(|c| *c != b'/') && go(rest, &s[1..]),
            [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

/// Where an attempt's agent writes the actions a person must take (`NIGHTSHIFT_OPERATOR_FILE`).
pub(super) fn operator_file(
    ws: &crate::workspace::Workspace,
    run_id: &str,
    att: &AttemptRow,
) -> PathBuf {
    ws.logs(run_id)
        .join(format!("{}-a{}.operator", att.item, att.attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(state: &str) -> ItemRow {
        ItemRow {
            id: state.into(),
            position: 0,
            prompt: String::new(),
            check_command: None,
            state: ItemState::parse(state).unwrap(),
            attempts: 1,
            allowed: 1,
            current_attempt: None,
            reason: None,
            preserve_ref: None,
            shipped_commit: None,
            shipped_pass: None,
            spent_tokens: 0.0,
            spent_turns: 0,
            spent_usd: 0.0,
            push_pending: false,
            feedback: None,
            operator_actions: None,
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("auth/**", "auth/login.rs"));
        assert!(glob_match("auth/**", "auth/a/b/c.rs"));
        assert!(glob_match("**/secrets.*", "config/x/secrets.toml"));
        assert!(glob_match("**/secrets.*", "secrets.toml"));
        assert!(glob_match("src/*.rs", "src/main.rs"));
        assert!(!glob_match("src/*.rs", "src/a/main.rs"));
        assert!(!glob_match("auth/**", "authx/a.rs"));
        assert!(glob_match("a?c", "abc"));
    }

    #[test]
    fn drain_halt_precedence() {
        let shipped = item("shipped");
        assert_eq!(
            drain_halt(std::slice::from_ref(&shipped), false),
            HaltReason::QueueDrainedAllShipped
        );
        assert_eq!(
            drain_halt(std::slice::from_ref(&shipped), true),
            HaltReason::DebtOutstanding
        );
        assert_eq!(
            drain_halt(&[shipped.clone(), item("parked")], true),
            HaltReason::QueueDrainedWithParked
        );
        assert_eq!(
            drain_halt(&[item("parked"), item("awaiting_operator")], true),
            HaltReason::AwaitingOperator
        );
        assert_eq!(
            drain_halt(&[item("awaiting_operator"), item("escalated")], false),
            HaltReason::EscalationPending
        );
        assert_eq!(drain_halt(&[], false), HaltReason::NoActionableItems);
    }

    #[test]
    fn operator_actions_in_three_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ops");
        assert!(operator_actions(&f).is_empty());
        std::fs::write(&f, r#"["add the DNS record", "set SECRET"]"#).unwrap();
        assert_eq!(operator_actions(&f).len(), 2);
        std::fs::write(&f, r#"{"actions": ["rotate the key"]}"#).unwrap();
        assert_eq!(operator_actions(&f), vec!["rotate the key".to_string()]);
        std::fs::write(&f, "one\n\n two \n").unwrap();
        assert_eq!(
            operator_actions(&f),
            vec!["one".to_string(), "two".to_string()]
        );
    }
}
