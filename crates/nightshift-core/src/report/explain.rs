//! `nightshift explain`: why an item's attempts ended, and whether trying again is rational
//! (DESIGN.md §7; issue 5).
//!
//! For each attempt the journal gives a trajectory: per work check, the failing-set size (or
//! that the output did not parse, with the exit code), the guards that failed, and how the
//! attempt ended. [`judge`] turns one trajectory into a [`Verdict`]; the rules, first match
//! wins:
//!
//! 1. **shipped** — the attempt's work is on the target.
//! 2. **integrity** — a guard failed on some check (or the attempt halted on a guard's reason):
//!    the oracle was weakened or a blocked path edited. Retrying does not help.
//! 3. **in_progress** — the attempt has not ended yet.
//! 4. **stalled_or_infeasible** — the attempt halted on `no_progress_detected`,
//!    `oscillation_detected` or `same_test_regressed`.
//! 5. **insufficient_data** — no check output parsed as test results (exit codes only), or the
//!    last one did not (the trend at the cutoff is unknown), or one parsed iteration that the
//!    base's failing set does not show as an improvement.
//! 6. **other_cause** — the last check was green, or red with no failing test: the loop was
//!    not what stopped the attempt (integration, a merge, a build step); its reason is shown.
//! 7. **stalled_or_infeasible** — the parsed failing sets oscillate, a fixed test fails again,
//!    or the latest set is not strictly smaller than every earlier one (a plateau at the cutoff).
//! 8. **still_improving** — the latest failing set is strictly smaller than every earlier one
//!    (with a single parsed iteration: smaller than the base's). When the iteration cap is what
//!    stopped the attempt, raising `[limits] max_iterations` (for a `nightshift loop` run:
//!    `--max-iterations`) is rational, and a value is suggested from the rate the set was
//!    shrinking at.
//!
//! The base's failing set (from `baseline_checked`) is shown but only judges a single-point
//! trajectory: an agent that writes the item's tests first makes later sets larger than the
//! base's without stalling.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Serialize;

use crate::check::results::{FailingSet, Progress, assess};
use crate::guard::GuardState;
use crate::halt::HaltReason;
use crate::store::{
    AttemptRow, CheckStage, EventKind, ItemRow, ItemState, RunRow, Store, StoreError,
};

/// How many test ids a sentence names before it summarizes the rest.
const NAMED_TESTS: usize = 5;
const REGRESSED: &str = "the test that was fixed and broke again";
const TOGGLED: &str = "the tests that went back and forth";

/// What explaining can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("explain `{item}`: the latest run has no such item")]
    UnknownItem { item: String, known: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an attempt's trajectory says about trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The failing set was strictly shrinking at the cutoff: raising the limit is rational.
    StillImproving,
    /// Plateau, oscillation or regression: do not retry as is.
    StalledOrInfeasible,
    /// The work is on the target.
    Shipped,
    /// A guard failed: retrying will not help; fix or restore what it names.
    Integrity,
    /// No parsed results to judge a trend by (the exit code alone decided).
    InsufficientData,
    /// The loop did not stop the attempt (the check went green, or nothing listed fails).
    OtherCause,
    /// The attempt is still running.
    InProgress,
    /// No attempt has started.
    NotAttempted,
}

impl VerdictKind {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::StillImproving => "still_improving",
            VerdictKind::StalledOrInfeasible => "stalled_or_infeasible",
            VerdictKind::Shipped => "shipped",
            VerdictKind::Integrity => "integrity",
            VerdictKind::InsufficientData => "insufficient_data",
            VerdictKind::OtherCause => "other_cause",
            VerdictKind::InProgress => "in_progress",
            VerdictKind::NotAttempted => "not_attempted",
        }
    }

    /// The one-line headline a person reads.
    pub fn headline(self) -> &'static str {
        match self {
            VerdictKind::StillImproving => "still improving — raising the limit is rational",
            VerdictKind::StalledOrInfeasible => {
                "stalled or infeasible — do not retry as is (it would spend tokens for the same result)"
            }
            VerdictKind::Shipped => "shipped",
            VerdictKind::Integrity => "integrity — a guard failed; retrying will not help",
            VerdictKind::InsufficientData => {
                "insufficient data — no failing set to judge a trend by"
            }
            VerdictKind::OtherCause => "stopped by something other than the loop",
            VerdictKind::InProgress => "in progress",
            VerdictKind::NotAttempted => "not attempted",
        }
    }
}

/// A limit worth raising, with a suggested value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Raise {
    /// The configuration key, e.g. `[limits] max_iterations`.
    pub key: String,
    pub current: u32,
    pub suggested: u32,
}

/// The verdict on one attempt (or an item: its latest attempt's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// Why, in one sentence.
    pub why: String,
    /// What to do next, most useful first.
    pub next: Vec<String>,
    /// The limit to raise, for `still_improving` stopped by a limit.
    pub raise: Option<Raise>,
}

impl Verdict {
    fn new(kind: VerdictKind, why: impl Into<String>, next: Vec<String>) -> Verdict {
        Verdict {
            kind,
            why: why.into(),
            next,
            raise: None,
        }
    }
}

/// A guard that failed on one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct GuardFailure {
    pub guard: String,
    pub detail: String,
}

/// One work check of an attempt: a point of its trajectory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Point {
    pub iteration: u32,
    pub green: bool,
    pub exit_code: Option<i32>,
    /// How many tests the output listed; null when it did not parse.
    pub tests: Option<usize>,
    /// The failing set by id; null when the output did not parse (the exit code decided).
    pub failing: Option<Vec<String>>,
    pub guard_failures: Vec<GuardFailure>,
    /// The check was ended at `[check] timeout`: red, and its output (results) cut short.
    #[serde(default)]
    pub timed_out: bool,
}

impl Point {
    /// The failing-set size, when the output parsed.
    pub fn failing_count(&self) -> Option<usize> {
        self.failing.as_ref().map(Vec::len)
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum End {
    /// Still running.
    Open,
    Shipped {
        commit: String,
    },
    Failed {
        reason: String,
        /// The loop-contract reason it ended on, if any (`no_progress_detected`, a guard's).
        halt: Option<String>,
        /// Where the attempt's work is kept.
        preserve_ref: Option<String>,
    },
}

/// One attempt: its trajectory, its end, and the verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AttemptReport {
    pub attempt: u32,
    /// The run's iteration cap (`[limits] max_iterations`).
    pub cap: u32,
    /// The base's failing-set size, when its check ran and parsed.
    pub baseline_failing: Option<usize>,
    pub points: Vec<Point>,
    pub end: End,
    /// The iteration cap is what ended the attempt.
    pub cap_reached: bool,
    pub verdict: Verdict,
}

/// One item: its attempts in this run and the verdict on the latest.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ItemReport {
    pub id: String,
    /// The item's state (`queued`, `running`, `shipped`, `parked`, …).
    pub state: String,
    pub attempts: Vec<AttemptReport>,
    pub verdict: Verdict,
}

/// What `explain` says about a run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Explanation {
    pub run_id: String,
    /// The items explained, in plan order.
    pub items: Vec<ItemReport>,
    /// Items of the run left out because they shipped (only when no item was named).
    pub shipped_omitted: Vec<String>,
}

/// Explains `item` of `run`, or (`None`) every item of it that is not on the target.
pub fn explain(
    store: &Store,
    run: &RunRow,
    item: Option<&str>,
) -> Result<Explanation, ExplainError> {
    let items = store.items(&run.id)?;
    let attempts = store.attempts(&run.id)?;
    let (chosen, shipped_omitted): (Vec<&ItemRow>, Vec<String>) = match item {
        Some(id) => match items.iter().find(|i| i.id == id) {
            Some(found) => (vec![found], Vec::new()),
            None => {
                return Err(ExplainError::UnknownItem {
                    item: id.to_owned(),
                    known: items.iter().map(|i| i.id.clone()).collect(),
                });
            }
        },
        None => {
            let (done, open): (Vec<&ItemRow>, Vec<&ItemRow>) =
                items.iter().partition(|i| i.state.is_integrated());
            (open, done.into_iter().map(|i| i.id.clone()).collect())
        }
    };
    let mut reports = Vec::new();
    for row in chosen {
        let mut reported = Vec::new();
        for att in attempts.iter().filter(|a| a.item == row.id) {
            reported.push(attempt_report(store, run, &items, &attempts, row, att)?);
        }
        let verdict = match reported.last() {
            Some(latest) => latest.verdict.clone(),
            None if row.state == ItemState::Shipped => Verdict::new(
                VerdictKind::Shipped,
                "shipped by an earlier run; this run did not attempt it",
                Vec::new(),
            ),
            None => Verdict::new(
                VerdictKind::NotAttempted,
                "no attempt at it has started in this run",
                vec!["`nightshift run` works on it (or resumes the run that will)".into()],
            ),
        };
        reports.push(ItemReport {
            id: row.id.clone(),
            state: row.state.to_string(),
            attempts: reported,
            verdict,
        });
    }
    Ok(Explanation {
        run_id: run.id.clone(),
        items: reports,
        shipped_omitted,
    })
}

fn attempt_report(
    store: &Store,
    run: &RunRow,
    items: &[ItemRow],
    attempts: &[AttemptRow],
    item: &ItemRow,
    att: &AttemptRow,
) -> Result<AttemptReport, StoreError> {
    let events = store.attempt_events(&run.id, &item.id, att.attempt, None)?;
    let mut points: Vec<Point> = Vec::new();
    let mut end = End::Open;
    let mut baseline = None;
    for event in events {
        match event.kind {
            EventKind::CheckEnded {
                iteration,
                stage: CheckStage::Work,
                green,
                exit_code,
                results,
                guards,
                outcome,
                ..
            } => {
                let point = Point {
                    iteration,
                    green,
                    exit_code,
                    timed_out: outcome == crate::session::Outcome::Timeout,
                    tests: results.as_ref().map(|r| r.tests),
                    failing: results.map(|r| r.failing),
                    guard_failures: guards
                        .into_iter()
                        .filter(|g| g.state == GuardState::Fail)
                        .map(|g| GuardFailure {
                            guard: g.guard,
                            detail: g.detail,
                        })
                        .collect(),
                };
                // A check re-run after a crash replaces the interrupted iteration's.
                match points.last_mut() {
                    Some(prev) if prev.iteration == iteration => *prev = point,
                    _ => points.push(point),
                }
            }
            EventKind::BaselineChecked { results, .. } => {
                baseline = Some(results.map(|r| r.failing.len()));
            }
            EventKind::Integrated { commit, .. } => end = End::Shipped { commit },
            EventKind::AttemptFailed {
                reason,
                halt,
                preserve_ref,
                ..
            } => {
                end = End::Failed {
                    reason,
                    halt: halt.map(|h| h.as_str().to_owned()),
                    preserve_ref,
                }
            }
            _ => {}
        }
    }
    let baseline_failing = match baseline {
        Some(found) => found,
        None => shared_baseline(store, run, items, attempts, item, att)?,
    };
    let cap = run.max_iterations;
    let cap_reached = cap_reached(&points, &end, cap);
    // `nightshift loop` runs halt `max_iterations_reached` at their cap (a plan run drains the
    // queue instead); their cap is a flag, not a config key.
    let loop_run = run.halt_reason.as_deref() == Some(HaltReason::MaxIterationsReached.as_str());
    let verdict = judge(&points, baseline_failing, &end, cap, cap_reached, loop_run);
    Ok(AttemptReport {
        attempt: att.attempt,
        cap,
        baseline_failing,
        points,
        end,
        cap_reached,
        verdict,
    })
}

/// The base's results are cached per tree and check command, so only the first attempt that
/// saw a tree journals `baseline_checked`; another attempt of this run from the same base
/// commit under the same check command saw the same base.
fn shared_baseline(
    store: &Store,
    run: &RunRow,
    items: &[ItemRow],
    attempts: &[AttemptRow],
    item: &ItemRow,
    att: &AttemptRow,
) -> Result<Option<usize>, StoreError> {
    for other in attempts {
        if other.base != att.base || (other.item == att.item && other.attempt == att.attempt) {
            continue;
        }
        let same_check = items
            .iter()
            .find(|i| i.id == other.item)
            .is_some_and(|i| i.check_command == item.check_command);
        if !same_check {
            continue;
        }
        let found = store.attempt_events(
            &run.id,
            &other.item,
            other.attempt,
            Some("baseline_checked"),
        )?;
        if let Some(EventKind::BaselineChecked { results, .. }) =
            found.into_iter().next().map(|e| e.kind)
        {
            return Ok(results.map(|r| r.failing.len()));
        }
    }
    Ok(None)
}

/// Whether the iteration cap is what ended the attempt: it failed on no loop-contract reason
/// (or on `max_iterations_reached`) with its last check red at the cap.
pub fn cap_reached(points: &[Point], end: &End, cap: u32) -> bool {
    let End::Failed { halt, .. } = end else {
        return false;
    };
    let halt_ok = halt
        .as_deref()
        .is_none_or(|h| h == HaltReason::MaxIterationsReached.as_str());
    halt_ok
        && points
            .last()
            .is_some_and(|p| !p.green && p.iteration >= cap)
}

/// The verdict on one attempt's trajectory; see the module docs for the rules.
pub fn judge(
    points: &[Point],
    baseline_failing: Option<usize>,
    end: &End,
    cap: u32,
    cap_reached: bool,
    loop_run: bool,
) -> Verdict {
    let (reason, halt, preserve_ref) = match end {
        End::Shipped { commit } => {
            return Verdict::new(
                VerdictKind::Shipped,
                format!(
                    "shipped {} after {} iteration{}",
                    commit.get(..10).unwrap_or(commit),
                    points.len(),
                    plural(points.len())
                ),
                Vec::new(),
            );
        }
        End::Open => ("", None, None),
        End::Failed {
            reason,
            halt,
            preserve_ref,
            ..
        } => (
            reason.as_str(),
            halt.as_deref().and_then(HaltReason::from_name),
            preserve_ref.as_deref(),
        ),
    };
    let restore = preserve_ref.map(|r| {
        let command = r
            .strip_prefix("refs/nightshift/preserve/")
            .and_then(|rest| rest.rsplit_once('/'))
            .map(|(item, attempt)| format!("`nightshift restore {item} {attempt}`"))
            .unwrap_or_else(|| "`nightshift restore`".into());
        format!("the attempt's work is kept at {r} ({command} makes it a branch)")
    });

    // 2. integrity
    let failed_guard = points.iter().find_map(|p| {
        p.guard_failures
            .first()
            .map(|g| (p.iteration, g.guard.as_str(), g.detail.as_str()))
    });
    let integrity_halt = matches!(
        halt,
        Some(
            HaltReason::MetricIntegrityViolation
                | HaltReason::BlockedPathModified
                | HaltReason::ControlPlaneTampered
        )
    );
    if failed_guard.is_some() || integrity_halt {
        let why = match failed_guard {
            Some((iteration, guard, detail)) => {
                format!("guard `{guard}` failed at iteration {iteration}: {detail}")
            }
            None => format!("the attempt ended on an integrity guard: {reason}"),
        };
        let mut next = vec![
            "retrying will not help: the agent weakened the oracle or edited a blocked path, and another attempt is judged the same way".into(),
            "read the guard's finding and the kept work; if those tests or paths must stay as they are, say so in the item's prompt".into(),
            "if the change is intended, make it yourself on the target, or adjust `[guards]` in nightshift.toml".into(),
        ];
        next.extend(restore);
        return Verdict::new(VerdictKind::Integrity, why, next);
    }

    // 3. in progress
    if *end == End::Open {
        let why = match points.last() {
            Some(p) => format!(
                "the attempt is running: iteration {} of {cap}, trajectory so far {}",
                p.iteration,
                sizes(points)
            ),
            None => "the attempt is running: no check has finished yet".into(),
        };
        return Verdict::new(
            VerdictKind::InProgress,
            why,
            vec!["wait for it: `nightshift log -f`, then `nightshift explain` again".into()],
        );
    }

    let parsed: Vec<(u32, FailingSet)> = points
        .iter()
        .filter_map(|p| {
            p.failing
                .as_ref()
                .map(|f| (p.iteration, f.iter().map(String::as_str).collect()))
        })
        .collect();
    let history: Vec<FailingSet> = parsed.iter().map(|(_, s)| s.clone()).collect();
    let stalled_next = |history: &[FailingSet], named: Option<(&str, Vec<String>)>| {
        let mut next = Vec::new();
        let (label, tests) = match named {
            Some((label, tests)) if !tests.is_empty() => (label, tests),
            _ => ("the tests failing throughout", stubborn(history)),
        };
        if !tests.is_empty() {
            next.push(format!("look at {label}: {}", list(&tests)));
        }
        next.push(
            "then split the item into smaller ones, clarify its prompt, or fix the check if those tests cannot pass as written"
                .into(),
        );
        next.extend(restore.clone());
        next
    };

    // 4. the engine halted on no convergence
    if let Some(
        h @ (HaltReason::NoProgressDetected
        | HaltReason::OscillationDetected
        | HaltReason::SameTestRegressed),
    ) = halt
    {
        let why = format!("the loop halted `{h}`: {}", plateau_text(h, points));
        let named = match assess(&history, usize::MAX) {
            Progress::SameTestRegressed { test } => Some((REGRESSED, vec![test])),
            Progress::Oscillation => Some((TOGGLED, toggled(&history))),
            _ => None,
        };
        return Verdict::new(
            VerdictKind::StalledOrInfeasible,
            why,
            stalled_next(&history, named),
        );
    }

    // 5. the check itself ran out of time: whatever it printed is cut short, so neither the
    // exit code nor the results say anything about the work.
    if let Some(last) = points.last().filter(|p| p.timed_out) {
        let timeouts = points.iter().filter(|p| p.timed_out).count();
        return Verdict::new(
            VerdictKind::OtherCause,
            format!(
                "the check timed out at iteration {} ({timeouts} of {} checks ended at `[check] timeout`): it was stopped, not red, and its output is cut short",
                last.iteration,
                points.len()
            ),
            vec![
                "raise `[check] timeout` in nightshift.toml if the suite needs longer, or find the test that hangs at the end of the last check log".into(),
                format!("then retry: {reason}"),
            ],
        );
    }

    // 6. insufficient data
    let format_hint = "set `[check] format` (tap, junit, libtest, nextest, pytest, go-test-json) so the check's output is read as test results — with `[check] results` when the runner writes its report to a file — and run again".to_owned();
    let Some(last) = points.last() else {
        return Verdict::new(
            VerdictKind::InsufficientData,
            format!("no work check finished in this attempt (it ended: {reason})"),
            vec![format!("deal with what ended it: {reason}")],
        );
    };
    if parsed.is_empty() {
        return Verdict::new(
            VerdictKind::InsufficientData,
            format!(
                "no check output parsed as test results: judged by exit code only ({})",
                sizes(points)
            ),
            vec![format_hint],
        );
    }
    if last.failing.is_none() {
        return Verdict::new(
            VerdictKind::InsufficientData,
            format!(
                "the last check's output did not parse{}: the trend at the cutoff is unknown ({})",
                last.exit_code
                    .map(|c| format!(" (exit {c})"))
                    .unwrap_or_default(),
                sizes(points)
            ),
            vec![
                "read the last check log: a build or runner failure hides the test results".into(),
                format_hint,
            ],
        );
    }

    // 7. not the loop's doing
    if last.green {
        return Verdict::new(
            VerdictKind::OtherCause,
            format!(
                "the check went green at iteration {}; the attempt ended for another reason: {reason}",
                last.iteration
            ),
            vec![format!("deal with that cause, then retry: {reason}")],
        );
    }
    let Some((_, latest)) = parsed.last() else {
        return Verdict::new(
            VerdictKind::InsufficientData,
            "no parsed check",
            vec![format_hint],
        );
    };
    if latest.is_empty() {
        return Verdict::new(
            VerdictKind::OtherCause,
            format!(
                "no test fails but the check is red{}: something besides the tests fails (a build step, a linter, the runner)",
                last.exit_code
                    .map(|c| format!(" (exit {c})"))
                    .unwrap_or_default()
            ),
            vec!["read the last check log and fix the check or the step that fails".into()],
        );
    }

    // 8. stalled in the trajectory itself
    match assess(&history, usize::MAX) {
        Progress::Oscillation => {
            return Verdict::new(
                VerdictKind::StalledOrInfeasible,
                format!(
                    "the failing set returned to an earlier one ({}): the agent fixes tests by breaking others",
                    sizes(points)
                ),
                stalled_next(&history, Some((TOGGLED, toggled(&history)))),
            );
        }
        Progress::SameTestRegressed { test } => {
            return Verdict::new(
                VerdictKind::StalledOrInfeasible,
                format!("`{test}` was fixed and fails again ({})", sizes(points)),
                stalled_next(&history, Some((REGRESSED, vec![test]))),
            );
        }
        _ => {}
    }
    let earlier_best = history[..history.len() - 1]
        .iter()
        .map(FailingSet::len)
        .min();
    let (improving, from) = match (earlier_best, baseline_failing) {
        (Some(best), _) => (latest.len() < best, None),
        (None, Some(base)) if latest.len() < base => (true, Some(base)),
        (None, _) => {
            return Verdict::new(
                VerdictKind::InsufficientData,
                format!(
                    "one parsed iteration ({} failing{}) is not a trajectory",
                    latest.len(),
                    baseline_failing
                        .map(|b| format!(", {b} at the base"))
                        .unwrap_or_default()
                ),
                vec![format!(
                    "give it more iterations to show a trend: raise `[limits] max_iterations` (now {cap}) to at least 3"
                )],
            );
        }
    };
    if !improving {
        let best = earlier_best.unwrap_or(latest.len());
        return Verdict::new(
            VerdictKind::StalledOrInfeasible,
            format!(
                "the failing set was not shrinking at the cutoff ({}): the last check ({} failing) did no better than the best before it ({best})",
                sizes(points),
                latest.len()
            ),
            stalled_next(&history, None),
        );
    }

    // 9. still improving
    let (first_size, span) = match from {
        Some(base) => (base, parsed.last().map_or(1, |(i, _)| *i).max(1)),
        None => {
            let (first_it, first) = &parsed[0];
            let last_it = parsed.last().map_or(*first_it, |(i, _)| *i);
            (first.len(), last_it.saturating_sub(*first_it).max(1))
        }
    };
    let shrunk = first_size.saturating_sub(latest.len()).max(1);
    let more = (latest.len() * span as usize).div_ceil(shrunk).max(1);
    let more = u32::try_from(more).unwrap_or(u32::MAX);
    let why = format!(
        "the failing set was strictly shrinking at the cutoff ({}{})",
        match from {
            Some(base) => format!("base {base} → "),
            None => String::new(),
        },
        sizes(points)
    );
    if cap_reached {
        let suggested = cap.saturating_add(more);
        let rate = format!(
            "at the rate so far, about {more} more iteration{} would clear the {} failing test{}",
            plural(more as usize),
            latest.len(),
            plural(latest.len())
        );
        let (key, next) = if loop_run {
            (
                "--max-iterations",
                vec![format!(
                    "run `nightshift loop` again with `--max-iterations {suggested}` (it was {cap}): {rate}"
                )],
            )
        } else {
            (
                "[limits] max_iterations",
                vec![
                    format!("raise `[limits] max_iterations` from {cap} to {suggested}: {rate}"),
                    "then `nightshift run` (a new attempt starts from the base; the kept work can be restored with `nightshift restore`)".into(),
                ],
            )
        };
        let mut verdict = Verdict::new(VerdictKind::StillImproving, why, next);
        verdict.next.extend(restore);
        verdict.raise = Some(Raise {
            key: key.into(),
            current: cap,
            suggested,
        });
        verdict
    } else {
        let mut next = vec![format!(
            "the loop was converging, but the attempt ended on something else: {reason}; deal with that cause and retry"
        )];
        next.extend(restore);
        Verdict::new(VerdictKind::StillImproving, why, next)
    }
}

/// The trajectory as sizes: `5 → 3 → ? (exit 2) → 1`.
pub fn sizes(points: &[Point]) -> String {
    let parts: Vec<String> = points
        .iter()
        .map(|p| match (p.failing_count(), p.exit_code) {
            (Some(n), _) => n.to_string(),
            (None, _) if p.green => "green".into(),
            (None, Some(c)) => format!("? (exit {c})"),
            (None, None) => "? (killed)".into(),
        })
        .collect();
    format!("failing {}", parts.join(" → "))
}

fn plateau_text(halt: HaltReason, points: &[Point]) -> String {
    let what = match halt {
        HaltReason::NoProgressDetected => "no smaller failing set for several iterations",
        HaltReason::OscillationDetected => "the failing set returned to an earlier one",
        _ => "a test that had been fixed fails again",
    };
    format!("{what} ({})", sizes(points))
}

/// Tests failing in every parsed iteration (or, if none, in the latest).
fn stubborn(history: &[FailingSet]) -> Vec<String> {
    let Some((latest, earlier)) = history.split_last() else {
        return Vec::new();
    };
    let always: Vec<String> = latest
        .iter()
        .filter(|id| earlier.iter().all(|s| s.contains(id)))
        .map(str::to_owned)
        .collect();
    if always.is_empty() {
        latest.iter().map(str::to_owned).collect()
    } else {
        always
    }
}

/// Tests that went in and out of the failing set.
fn toggled(history: &[FailingSet]) -> Vec<String> {
    let all: BTreeSet<&str> = history.iter().flat_map(FailingSet::iter).collect();
    all.into_iter()
        .filter(|id| {
            let states: Vec<bool> = history.iter().map(|s| s.contains(id)).collect();
            states.windows(2).filter(|w| w[0] != w[1]).count() >= 2
        })
        .map(str::to_owned)
        .collect()
}

fn list(ids: &[String]) -> String {
    let shown: Vec<String> = ids
        .iter()
        .take(NAMED_TESTS)
        .map(|id| format!("`{id}`"))
        .collect();
    if ids.len() > NAMED_TESTS {
        format!("{} and {} more", shown.join(", "), ids.len() - NAMED_TESTS)
    } else {
        shown.join(", ")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests;
