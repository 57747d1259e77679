//! Integrity rules evaluated before a green check can count (DESIGN.md §3 `guard`, §7).
//!
//! A guard looks at what an attempt changed (base → candidate) and at the check's parsed
//! results against the base's, and says pass, fail or not run (with why). A failing guard ends
//! the item: `blocked_path_modified` or `metric_integrity_violation` (exit class 13); the
//! attempt is preserved and nothing reaches the target. This room is pure: facts in, verdicts
//! out; the engine gathers the facts and acts on the verdicts.
//!
//! | guard | fails when | halt |
//! |---|---|---|
//! | `blocked_paths` | a changed path matches `[guards] blocked_paths`, `.nightshift/**` or `nightshift.toml` | `blocked_path_modified` |
//! | `test_set` | a test collected at the base is not collected at the candidate (ids compared in their stable form: a doc-test by its ordinal, a TAP test by its description; where one side names only its failing tests, plain `pytest`, fewer tests ran than at the base), or the candidate's results cannot be read although the base's could | `metric_integrity_violation` |
//! | `skipped` | more tests are skipped than at the base, or it cannot evaluate (as `test_set`) | `metric_integrity_violation` |
//! | `assertions` | the changed test files (by `test_paths`, by the check's own results, by content) hold fewer assertion forms or assertion-like calls, or more skip markers, than at the base | `metric_integrity_violation` |
//!
//! `test_set` and `skipped` need results parsed from both the base's check and the
//! candidate's. A guard that cannot evaluate never counts as passed: when the candidate's
//! results are missing although they were expected (the base's output parsed, or
//! [`Expect::Required`]: the config names a format or a results file), the guard **fails
//! closed** and says why (a crash that appended two check outputs into one log, a runner
//! that stopped printing its report, an agent that broke the report). Only where nothing was
//! ever expected to parse (auto-detection found no runner at the base either, or `exit-code`)
//! is it `not_run`, and says so.

pub mod assertions;
pub mod paths;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::check::results::Results;
use crate::halt::HaltReason;
use assertions::{Counts, Language};
use paths::PathSet;

/// A guard's name, stable in the journal and in receipts.
pub const BLOCKED_PATHS: &str = "blocked_paths";
pub const TEST_SET: &str = "test_set";
pub const SKIPPED: &str = "skipped";
pub const ASSERTIONS: &str = "assertions";

/// What one guard found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardState {
    Pass,
    Fail,
    /// It failed, and its gate (`test_integrity = "log"` in `[gates]`) only logs: journaled as
    /// `gate_warned`, not acted on.
    Logged,
    /// The guard could not judge (no parsed results); the detail says why.
    NotRun,
}

/// The gate a guard belongs to (`[gates]`): `blocked_paths` or `test_integrity`.
pub fn gate_of(guard: &str) -> &'static str {
    if guard == BLOCKED_PATHS {
        "blocked_paths"
    } else {
        "test_integrity"
    }
}

/// One guard's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub guard: String,
    pub state: GuardState,
    pub detail: String,
}

impl Verdict {
    fn new(guard: &str, state: GuardState, detail: impl Into<String>) -> Verdict {
        Verdict {
            guard: guard.to_owned(),
            state,
            detail: detail.into(),
        }
    }

    /// The halt reason a failure of this guard ends the item with.
    pub fn halt(&self) -> Option<HaltReason> {
        (self.state == GuardState::Fail).then(|| {
            if self.guard == BLOCKED_PATHS {
                HaltReason::BlockedPathModified
            } else {
                HaltReason::MetricIntegrityViolation
            }
        })
    }
}

/// One path the attempt changed (renames are a deletion and an addition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub deleted: bool,
}

/// `blocked_paths`: no changed path matches the blocked set.
pub fn blocked_paths(changed: &[Change], blocked: &PathSet) -> Verdict {
    let hits: Vec<String> = changed
        .iter()
        .filter_map(|c| {
            blocked
                .matching(&c.path)
                .map(|p| format!("{} (matches `{p}`)", c.path))
        })
        .collect();
    if hits.is_empty() {
        Verdict::new(BLOCKED_PATHS, GuardState::Pass, "no blocked path changed")
    } else {
        Verdict::new(
            BLOCKED_PATHS,
            GuardState::Fail,
            format!("changed blocked paths: {}", list(&hits)),
        )
    }
}

/// Whether the check's results are expected to parse (from `[check] format` and
/// `[check] results`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `format = "auto"` and no results file: a check need not be a test runner; results are
    /// expected of the candidate when the base's parsed.
    Detected,
    /// A format or a results file is configured: the candidate's results must parse.
    Required,
    /// `format = "exit-code"`: nothing is parsed, the result guards cannot judge.
    Never,
}

/// `test_set`: every test collected at the base is still collected.
pub fn test_set(base: Option<&Results>, now: Option<&Results>, expect: Expect) -> Verdict {
    let (Some(base), Some(now)) = (base, now) else {
        return unparsed(TEST_SET, base, now, expect);
    };
    if base.is_partial() || now.is_partial() {
        return test_set_by_count(base, now);
    }
    let before = base.collected_stable();
    let after = now.collected_stable();
    let lost: Vec<String> = before.difference(&after).cloned().collect();
    if lost.is_empty() {
        Verdict::new(
            TEST_SET,
            GuardState::Pass,
            format!(
                "{} tests at the base, {} now, none lost",
                before.len(),
                after.len()
            ),
        )
    } else {
        Verdict::new(
            TEST_SET,
            GuardState::Fail,
            format!(
                "{} of {} tests collected at the base are gone: {}",
                lost.len(),
                before.len(),
                list(&lost)
            ),
        )
    }
}

/// `test_set` where one side is a failures-only listing (plain `pytest`): its collected set is
/// not named, so the tests are compared by count, and by id only where both sides name them
/// (a test failing at the base that a complete listing no longer collects).
fn test_set_by_count(base: &Results, now: &Results) -> Verdict {
    let (before, after) = (base.test_count(), now.test_count());
    let lost: Vec<String> = if now.is_partial() {
        Vec::new()
    } else {
        let after = now.collected_stable();
        base.collected_stable()
            .difference(&after)
            .cloned()
            .collect()
    };
    let how = "by count: the check's output names only the failing tests (plain `pytest`; \
               run it with `-v` or `--junitxml` to compare tests by id)";
    if !lost.is_empty() {
        return Verdict::new(
            TEST_SET,
            GuardState::Fail,
            format!(
                "{} tests failing at the base are no longer collected: {}",
                lost.len(),
                list(&lost)
            ),
        );
    }
    if after < before {
        return Verdict::new(
            TEST_SET,
            GuardState::Fail,
            format!(
                "{before} tests ran at the base, {after} now: {} gone, compared {how}",
                before - after
            ),
        );
    }
    Verdict::new(
        TEST_SET,
        GuardState::Pass,
        format!("{before} tests ran at the base, {after} now, none lost {how}"),
    )
}

/// `skipped`: no more tests skipped than at the base.
pub fn skipped(base: Option<&Results>, now: Option<&Results>, expect: Expect) -> Verdict {
    let (Some(base), Some(now)) = (base, now) else {
        return unparsed(SKIPPED, base, now, expect);
    };
    let (before, after) = (base.skipped_count(), now.skipped_count());
    if after <= before {
        Verdict::new(
            SKIPPED,
            GuardState::Pass,
            format!("{after} skipped (base: {before})"),
        )
    } else {
        let skipped = crate::check::results::TestState::Skipped;
        let (was, is) = (base.stable_in(skipped), now.stable_in(skipped));
        let newly: Vec<String> = is.difference(&was).cloned().collect();
        let which = if base.is_partial() || now.is_partial() {
            "not named by the check's output (plain `pytest`: run it with `-v` to see them)"
                .to_owned()
        } else {
            list(&newly)
        };
        Verdict::new(
            SKIPPED,
            GuardState::Fail,
            format!("{after} tests skipped, {before} at the base; newly skipped: {which}"),
        )
    }
}

/// The text of one changed file before and after (`None`: absent, or not text).
pub struct FileTexts {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// `assertions`: the changed test files, together, hold no fewer assertion forms and no more
/// skip markers than at the base. A test file is one matching `test_paths`; one the check's
/// own results name as holding collected tests (`from_results`, matched as a path suffix, see
/// [`Results::test_files`]); or, by its content at the base, a Rust file holding `#[test]`
/// (inline unit tests) or a Python file defining `def test_…` or a `unittest.TestCase`.
/// Deleting a test file counts its assertions as removed.
pub fn assertions(
    files: &[FileTexts],
    test_paths: &PathSet,
    from_results: &BTreeSet<String>,
) -> Verdict {
    let mut before = Counts::default();
    let mut after = Counts::default();
    let mut counted = Vec::new();
    let mut languages = BTreeSet::new();
    for file in files {
        let Some(language) = Language::of(&file.path) else {
            continue;
        };
        let by_content = file
            .before
            .as_deref()
            .is_some_and(|t| assertions::holds_tests(language, t));
        let by_results = from_results
            .iter()
            .any(|f| file.path == *f || file.path.ends_with(&format!("/{f}")));
        if !test_paths.is_match(&file.path) && !by_content && !by_results {
            continue;
        }
        let b = file
            .before
            .as_deref()
            .map(|t| assertions::count(language, t))
            .unwrap_or_default();
        let a = file
            .after
            .as_deref()
            .map(|t| assertions::count(language, t))
            .unwrap_or_default();
        before.assertions += b.assertions;
        before.skips += b.skips;
        after.assertions += a.assertions;
        after.skips += a.skips;
        languages.insert(language.name());
        if b != a {
            counted.push(format!(
                "{}: {}→{} assertions, {}→{} skips",
                file.path, b.assertions, a.assertions, b.skips, a.skips
            ));
        }
    }
    if languages.is_empty() {
        return Verdict::new(
            ASSERTIONS,
            GuardState::Pass,
            "no changed test file in a covered language (Rust, Python, JavaScript/TypeScript, Go)",
        );
    }
    let detail = format!(
        "changed test files ({}): {} → {} assertions, {} → {} skip markers{}",
        languages.into_iter().collect::<Vec<_>>().join(", "),
        before.assertions,
        after.assertions,
        before.skips,
        after.skips,
        if counted.is_empty() {
            String::new()
        } else {
            format!("; {}", counted.join("; "))
        }
    );
    if after.assertions < before.assertions || after.skips > before.skips {
        Verdict::new(ASSERTIONS, GuardState::Fail, detail)
    } else {
        Verdict::new(ASSERTIONS, GuardState::Pass, detail)
    }
}

/// The verdict of a result guard when one side's results are missing: it fails closed when
/// the candidate's were expected (see the module docs), else it is `not_run`.
fn unparsed(guard: &str, base: Option<&Results>, now: Option<&Results>, expect: Expect) -> Verdict {
    if expect == Expect::Never {
        return Verdict::new(
            guard,
            GuardState::NotRun,
            "`[check] format = \"exit-code\"`: the check's output is not read as test results",
        );
    }
    match (base, now) {
        (Some(base), None) => Verdict::new(
            guard,
            GuardState::Fail,
            format!(
                "cannot evaluate, failing closed: the base's check output parsed as {} ({} tests) \
                 but this check's output did not parse as test results, so lost or skipped \
                 tests cannot be seen",
                base.format,
                base.tests.len()
            ),
        ),
        (None, None) if expect == Expect::Required => Verdict::new(
            guard,
            GuardState::Fail,
            "cannot evaluate, failing closed: this check's output did not parse as the \
             configured `[check] format`/`results`",
        ),
        (None, None) => Verdict::new(
            guard,
            GuardState::NotRun,
            "neither the base's check output nor this one parsed as test results",
        ),
        _ => Verdict::new(
            guard,
            GuardState::NotRun,
            "the base's check output did not parse as test results: no test set to compare",
        ),
    }
}

/// At most ten entries, then a count.
fn list(items: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests;
