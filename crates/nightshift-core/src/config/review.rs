//! `[review]`, `[triage]` and the review agents (`[agent.review]`, `[agent.second_opinion]`).

use std::time::Duration;

use super::AgentConfig;

/// Default for `[review] max_review_cycles`.
pub const DEFAULT_MAX_REVIEW_CYCLES: u32 = 3;
/// Default for `[review] risky_lines`: a diff with more changed lines than this is risky.
pub const DEFAULT_RISKY_LINES: u32 = 400;

/// When an item's work is reviewed before it integrates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReviewWhen {
    /// Every item.
    Always,
    /// No item (the default).
    #[default]
    Never,
    /// Items whose diff touches a `risky_paths` pattern or changes more than `risky_lines`.
    Risky,
}

/// What a review session that times out leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTimeout {
    /// Review again, while review cycles are left; then the item is escalated.
    #[default]
    Retry,
    /// The verified dev product (check green) integrates; the review becomes debt.
    SalvageIfDone,
    /// The item is parked with its branch kept (`nightshift accept` can ship it later).
    Defer,
}

/// `[review]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewConfig {
    pub when: ReviewWhen,
    /// Glob patterns (`*`, `?`, `**`) over repository paths that make a diff risky.
    pub risky_paths: Vec<String>,
    /// A diff changing more lines than this is risky.
    pub risky_lines: u32,
    /// Review verdicts an attempt may get (each `request_changes` spends one), at least 1.
    pub max_review_cycles: u32,
    pub on_timeout: OnTimeout,
    /// Wall-time bound of one review session (default: `[limits] session_timeout`).
    pub timeout: Option<Duration>,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            when: ReviewWhen::Never,
            risky_paths: Vec::new(),
            risky_lines: DEFAULT_RISKY_LINES,
            max_review_cycles: DEFAULT_MAX_REVIEW_CYCLES,
            on_timeout: OnTimeout::Retry,
            timeout: None,
        }
    }
}

/// What nightshift does with a class of problem (`[triage]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriageAction {
    /// Fix it (commit what was left, check again) and review again.
    Fix,
    /// Integrate the checked work and record review debt.
    ShipWithDebt,
    /// Ask the `[agent.second_opinion]` reviewer (escalates when there is none).
    SecondOpinion,
    /// Park the item with its branch kept and wake a person.
    Escalate,
}

impl TriageAction {
    /// The name used in `nightshift.toml` and the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            TriageAction::Fix => "fix",
            TriageAction::ShipWithDebt => "ship_with_debt",
            TriageAction::SecondOpinion => "second_opinion",
            TriageAction::Escalate => "escalate",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<TriageAction> {
        [
            TriageAction::Fix,
            TriageAction::ShipWithDebt,
            TriageAction::SecondOpinion,
            TriageAction::Escalate,
        ]
        .into_iter()
        .find(|a| a.as_str() == name)
    }
}

/// `[triage]`: a table from class of problem to action. `no_safe_path` is always `escalate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriageConfig {
    pub mechanical: TriageAction,
    pub false_positive: TriageAction,
    pub real_doubt: TriageAction,
}

impl Default for TriageConfig {
    fn default() -> Self {
        TriageConfig {
            mechanical: TriageAction::Fix,
            false_positive: TriageAction::ShipWithDebt,
            real_doubt: TriageAction::SecondOpinion,
        }
    }
}

/// The review side of a configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReviewSetup {
    pub review: ReviewConfig,
    pub triage: TriageConfig,
    /// `[agent.review]`: the reviewer (default: the `[agent]` settings, in a fresh session).
    pub agent: Option<AgentConfig>,
    /// `[agent.second_opinion]`: the reviewer asked when a review leaves real doubt.
    pub second_opinion: Option<AgentConfig>,
}
