//! Progress detection on the failing set across iterations (issue 5).
//!
//! [`assess`] judges the *latest* iteration of a history of failing sets, oldest first, one per
//! iteration whose check output parsed. The first rule that holds decides:
//!
//! 1. **converged** — the latest failing set is empty.
//! 2. **oscillation** — the latest set equals an earlier set and some set in between differs
//!    from it (A → B → A, also A → B → C → A and A → B → A → A): the trajectory returned to a
//!    state it had left.
//! 3. **same_test_regressed** — a test in the latest set was failing in some earlier
//!    iteration and absent from the failing set in a later (still earlier than latest) one:
//!    fixed, then failing again. Reported with the smallest such id.
//! 4. **no_progress** — no new best for `k` iterations: the latest iteration is at least `k`
//!    iterations after the last one whose failing set was strictly smaller than every set
//!    before it (the first iteration is a best). Repeating the same set counts as an iteration
//!    without a new best; so does an equal-sized set with different members.
//! 5. **improving** — none of the above: the latest new best is fewer than `k` iterations old.
//!    An empty history is judged improving (nothing argues for stopping).
//!
//! Oscillation outranks regression because A → B → A with tests in A that B had fixed is both;
//! the pattern is the more telling name, and regression still catches a fixed test failing in
//! a new set ({a} → {b} → {a, b}). `k = 0` is treated as 1.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// The default `k`: iterations without a new best before `no_progress`.
pub const DEFAULT_K: usize = 3;

/// The sorted set of failing test ids of one check run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FailingSet(BTreeSet<String>);

impl FailingSet {
    /// The empty set.
    pub fn new() -> FailingSet {
        FailingSet::default()
    }

    /// How many tests fail.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing fails.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `id` fails.
    pub fn contains(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    /// The ids in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// The underlying set.
    pub fn as_set(&self) -> &BTreeSet<String> {
        &self.0
    }

    /// Consumes the set.
    pub fn into_set(self) -> BTreeSet<String> {
        self.0
    }
}

impl From<BTreeSet<String>> for FailingSet {
    fn from(set: BTreeSet<String>) -> FailingSet {
        FailingSet(set)
    }
}

impl FromIterator<String> for FailingSet {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> FailingSet {
        FailingSet(iter.into_iter().collect())
    }
}

impl<'a> FromIterator<&'a str> for FailingSet {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> FailingSet {
        FailingSet(iter.into_iter().map(str::to_owned).collect())
    }
}

/// The verdict on the latest iteration of a trajectory; see the module docs for the rules
/// and their precedence.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Progress {
    /// Still finding new bests: continuing (or raising a limit) is rational.
    Improving,
    /// No new best for `k` iterations.
    NoProgress,
    /// Returned to an earlier, different failing set.
    Oscillation,
    /// A test that had been fixed fails again.
    SameTestRegressed { test: String },
    /// Nothing fails.
    Converged,
}

impl Progress {
    /// The halt reason this verdict stops a loop with (DESIGN.md §7, exit 17), if any.
    pub fn halt_reason(&self) -> Option<&'static str> {
        match self {
            Progress::Improving | Progress::Converged => None,
            Progress::NoProgress => Some("no_progress_detected"),
            Progress::Oscillation => Some("oscillation_detected"),
            Progress::SameTestRegressed { .. } => Some("same_test_regressed"),
        }
    }
}

/// Judges the latest of `history` (oldest first) with window `k`; see the module docs.
pub fn assess(history: &[FailingSet], k: usize) -> Progress {
    let Some((latest, earlier)) = history.split_last() else {
        return Progress::Improving;
    };
    if latest.is_empty() {
        return Progress::Converged;
    }
    if oscillates(latest, earlier) {
        return Progress::Oscillation;
    }
    if let Some(test) = regressed(latest, earlier) {
        return Progress::SameTestRegressed { test };
    }
    if iterations_since_best(history) >= k.max(1) {
        return Progress::NoProgress;
    }
    Progress::Improving
}

/// Whether `latest` equals some earlier set that the trajectory had left in between.
fn oscillates(latest: &FailingSet, earlier: &[FailingSet]) -> bool {
    let Some(first_equal) = earlier.iter().position(|set| set == latest) else {
        return false;
    };
    earlier[first_equal + 1..].iter().any(|set| set != latest)
}

/// The smallest id in `latest` that failed at some iteration and was absent at a later one.
fn regressed(latest: &FailingSet, earlier: &[FailingSet]) -> Option<String> {
    latest
        .iter()
        .find(|id| {
            earlier
                .iter()
                .position(|set| set.contains(id))
                .is_some_and(|first| earlier[first + 1..].iter().any(|set| !set.contains(id)))
        })
        .map(str::to_owned)
}

/// How many iterations the latest is after the last new best (0 when the latest is one).
fn iterations_since_best(history: &[FailingSet]) -> usize {
    let mut best_size = usize::MAX;
    let mut best_at = 0;
    for (at, set) in history.iter().enumerate() {
        if set.len() < best_size {
            best_size = set.len();
            best_at = at;
        }
    }
    history.len() - 1 - best_at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> FailingSet {
        ids.iter().copied().collect()
    }

    fn h(sets: &[&[&str]]) -> Vec<FailingSet> {
        sets.iter().map(|ids| set(ids)).collect()
    }

    #[test]
    fn empty_history_is_improving() {
        assert_eq!(assess(&[], DEFAULT_K), Progress::Improving);
    }

    #[test]
    fn first_iteration_is_improving_or_converged() {
        assert_eq!(assess(&h(&[&["a", "b"]]), DEFAULT_K), Progress::Improving);
        assert_eq!(assess(&h(&[&["a"]]), 1), Progress::Improving);
        assert_eq!(assess(&h(&[&[]]), DEFAULT_K), Progress::Converged);
    }

    #[test]
    fn strictly_shrinking_is_improving() {
        let history = h(&[&["a", "b", "c"], &["a", "b"], &["b"]]);
        assert_eq!(assess(&history, DEFAULT_K), Progress::Improving);
        assert_eq!(assess(&history, 1), Progress::Improving);
    }

    #[test]
    fn empty_latest_is_converged_even_after_oscillating() {
        let history = h(&[&["a"], &["b"], &["a"], &[]]);
        assert_eq!(assess(&history, 1), Progress::Converged);
    }

    #[test]
    fn a_b_a_is_oscillation() {
        assert_eq!(
            assess(&h(&[&["a"], &["b"], &["a"]]), DEFAULT_K),
            Progress::Oscillation
        );
        // A longer cycle, and staying on the revisited set, are oscillation too.
        assert_eq!(
            assess(&h(&[&["a"], &["b"], &["c"], &["a"]]), DEFAULT_K),
            Progress::Oscillation
        );
        assert_eq!(
            assess(&h(&[&["a"], &["b"], &["a"], &["a"]]), DEFAULT_K),
            Progress::Oscillation
        );
    }

    #[test]
    fn oscillation_outranks_regression() {
        // {x, y} → {y} → {x, y}: x regressed, and the set returned; oscillation names it.
        let history = h(&[&["x", "y"], &["y"], &["x", "y"]]);
        assert_eq!(assess(&history, DEFAULT_K), Progress::Oscillation);
    }

    #[test]
    fn the_same_set_repeated_is_not_oscillation_but_counts_toward_no_progress() {
        let history = h(&[&["a"], &["a"], &["a"]]);
        assert_eq!(assess(&history, DEFAULT_K), Progress::Improving);
        let history = h(&[&["a"], &["a"], &["a"], &["a"]]);
        assert_eq!(assess(&history, DEFAULT_K), Progress::NoProgress);
    }

    #[test]
    fn a_fixed_test_failing_again_in_a_new_set_regressed() {
        let history = h(&[&["a"], &["b"], &["a", "b"]]);
        assert_eq!(
            assess(&history, DEFAULT_K),
            Progress::SameTestRegressed { test: "a".into() }
        );
    }

    #[test]
    fn regression_outranks_a_new_best() {
        // {a, b, c} → {b, c} → {a}: a new best by size, but a was fixed and fails again.
        let history = h(&[&["a", "b", "c"], &["b", "c"], &["a"]]);
        assert_eq!(
            assess(&history, DEFAULT_K),
            Progress::SameTestRegressed { test: "a".into() }
        );
    }

    #[test]
    fn regression_names_the_smallest_id() {
        let history = h(&[&["m", "z", "q"], &["q"], &["z", "m", "n"]]);
        assert_eq!(
            assess(&history, DEFAULT_K),
            Progress::SameTestRegressed { test: "m".into() }
        );
    }

    #[test]
    fn a_test_failing_throughout_is_not_a_regression() {
        let history = h(&[&["a", "b"], &["a"], &["a", "c"]]);
        assert_eq!(assess(&history, DEFAULT_K), Progress::Improving);
    }

    #[test]
    fn no_new_best_for_k_iterations_is_no_progress() {
        // Best (size 1) at iteration 1; iterations 2, 3, 4 are not better.
        let history = h(&[&["a", "b"], &["a"], &["c", "d"], &["c"], &["e"]]);
        assert_eq!(assess(&history[..4], 3), Progress::Improving);
        assert_eq!(assess(&history, 3), Progress::NoProgress);
    }

    #[test]
    fn shrinking_without_beating_the_best_is_not_a_new_best() {
        // Sizes 1, 3, 2: the last step shrinks, but the best is still iteration 0.
        let history = h(&[&["a"], &["b", "c", "d"], &["b", "c"]]);
        assert_eq!(assess(&history, 2), Progress::NoProgress);
        assert_eq!(assess(&history, 3), Progress::Improving);
    }

    #[test]
    fn k_equal_one_stops_on_the_first_iteration_without_a_new_best() {
        let history = h(&[&["a", "b"], &["c", "d"]]);
        assert_eq!(assess(&history, 1), Progress::NoProgress);
        assert_eq!(assess(&history, 2), Progress::Improving);
        // k = 0 behaves as 1 rather than stopping on a new best.
        assert_eq!(assess(&h(&[&["a", "b"], &["a"]]), 0), Progress::Improving);
        assert_eq!(assess(&history, 0), Progress::NoProgress);
    }

    #[test]
    fn equal_sizes_with_different_members_are_no_new_best() {
        let history = h(&[&["a", "b"], &["c", "d"], &["e", "f"], &["g", "h"]]);
        assert_eq!(assess(&history[..3], 3), Progress::Improving);
        assert_eq!(assess(&history, 3), Progress::NoProgress);
    }

    #[test]
    fn halt_reasons_are_the_contract_names() {
        assert_eq!(Progress::Improving.halt_reason(), None);
        assert_eq!(Progress::Converged.halt_reason(), None);
        assert_eq!(
            Progress::NoProgress.halt_reason(),
            Some("no_progress_detected")
        );
        assert_eq!(
            Progress::Oscillation.halt_reason(),
            Some("oscillation_detected")
        );
        assert_eq!(
            Progress::SameTestRegressed { test: "t".into() }.halt_reason(),
            Some("same_test_regressed")
        );
    }

    #[test]
    fn serialized_forms_are_stable() {
        assert_eq!(
            serde_json::to_string(&Progress::SameTestRegressed { test: "t".into() }).unwrap(),
            r#"{"kind":"same_test_regressed","test":"t"}"#
        );
        assert_eq!(
            serde_json::to_string(&Progress::NoProgress).unwrap(),
            r#"{"kind":"no_progress"}"#
        );
        assert_eq!(
            serde_json::to_string(&set(&["b", "a"])).unwrap(),
            r#"["a","b"]"#
        );
    }
}
