//! Autonomy by class of problem, not by confidence: rules in code that sort a review's
//! objection into a class, and the `[triage]` table that maps the class to an action. No
//! agent's confidence enters; only the verdict's words and facts nightshift checks itself.
//!
//! | class | decided when | default action |
//! |---|---|---|
//! | `no_safe_path` | the verdict names an irreversible risk (data loss, secrets, production, …) | escalate (fixed) |
//! | `mechanical` | every objection is procedural (dirty tree, uncommitted files, …) and the worktree really is dirty | fix: restore the tree to the checked commit, review again |
//! | `false_positive` | every objection is procedural, the tree is clean and the check is green on the commit that ships | ship with debt |
//! | `real_doubt` | anything else: an objection about the work itself | second opinion (escalate without one) |

use crate::config::{TriageAction, TriageConfig};
use crate::verdict::Verdict;

/// A class of problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Mechanical,
    FalsePositive,
    RealDoubt,
    NoSafePath,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Mechanical => "mechanical",
            Class::FalsePositive => "false_positive",
            Class::RealDoubt => "real_doubt",
            Class::NoSafePath => "no_safe_path",
        }
    }

    /// The action `[triage]` maps this class to.
    pub fn action(self, table: &TriageConfig) -> TriageAction {
        match self {
            Class::Mechanical => table.mechanical,
            Class::FalsePositive => table.false_positive,
            Class::RealDoubt => table.real_doubt,
            Class::NoSafePath => TriageAction::Escalate,
        }
    }
}

/// What nightshift itself verified about the attempt when the review ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The check is green on the committed candidate (the commit that would ship).
    pub check_green: bool,
    /// The worktree has changes or files beyond the candidate (`git status` is not empty).
    pub tree_dirty: bool,
}

/// Words that make an objection procedural: about version-control hygiene, not the work.
const PROCEDURAL: &[&str] = &[
    "dirty",
    "uncommitted",
    "not committed",
    "untracked",
    "unstaged",
    "not staged",
    "working tree",
    "worktree is not clean",
    "git status",
    "vc hygiene",
    "vc-hygiene",
    "artifact",
    "left over",
    "leftover",
];

/// Words that name an irreversible risk: no safe path without a person.
const IRREVERSIBLE: &[&str] = &[
    "irreversible",
    "data loss",
    "destroys data",
    "destructive",
    "drop table",
    "secret",
    "credential",
    "private key",
    "production",
    "force push",
    "force-push",
    "cannot be undone",
];

fn mentions(text: &str, words: &[&str]) -> bool {
    let text = text.to_lowercase();
    words.iter().any(|w| text.contains(w))
}

/// The texts the verdict objects with: each finding, or the reason when there is none.
fn objections(verdict: &Verdict) -> Vec<String> {
    if verdict.findings.is_empty() {
        vec![verdict.reason.clone()]
    } else {
        verdict
            .findings
            .iter()
            .map(|f| format!("{} {}", f.text, f.file.as_deref().unwrap_or("")))
            .collect()
    }
}

/// Whether every objection of the verdict is procedural.
pub fn all_procedural(verdict: &Verdict) -> bool {
    let objections = objections(verdict);
    !objections.is_empty()
        && objections
            .iter()
            .all(|o| !o.trim().is_empty() && mentions(o, PROCEDURAL))
}

/// Sorts an objecting verdict into a class, with the rule that decided it.
pub fn classify(verdict: &Verdict, facts: Facts) -> (Class, String) {
    let all_text = std::iter::once(verdict.reason.as_str())
        .chain(verdict.findings.iter().map(|f| f.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    if mentions(&all_text, IRREVERSIBLE) {
        return (
            Class::NoSafePath,
            "the review names an irreversible risk".into(),
        );
    }
    if all_procedural(verdict) {
        if facts.tree_dirty {
            return (
                Class::Mechanical,
                "every objection is procedural and the worktree is dirty: restore it to the checked commit".into(),
            );
        }
        if facts.check_green {
            return (
                Class::FalsePositive,
                "every objection is procedural, yet the worktree is clean and the check is green on the commit that ships".into(),
            );
        }
    }
    (
        Class::RealDoubt,
        "the review objects to the work itself".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Decision, Finding, Severity};

    fn verdict(reason: &str, findings: &[(Severity, &str)]) -> Verdict {
        Verdict {
            verdict: Decision::Escalate,
            reason: reason.into(),
            findings: findings
                .iter()
                .map(|(severity, text)| Finding {
                    severity: *severity,
                    file: None,
                    line: None,
                    text: (*text).into(),
                })
                .collect(),
        }
    }

    const GREEN_CLEAN: Facts = Facts {
        check_green: true,
        tree_dirty: false,
    };

    #[test]
    fn seed_000_dirty_tree_escalation_with_a_green_check_is_a_false_positive() {
        // The review's VC-hygiene gate: CRITICAL, "working tree is dirty", while the work is done.
        let v = verdict(
            "Status: done. VC hygiene gate failed",
            &[(
                Severity::Critical,
                "working tree is dirty: artifacts left uncommitted",
            )],
        );
        assert_eq!(classify(&v, GREEN_CLEAN).0, Class::FalsePositive);
        assert_eq!(
            Class::FalsePositive.action(&TriageConfig::default()),
            TriageAction::ShipWithDebt
        );
    }

    #[test]
    fn the_same_objection_on_a_really_dirty_tree_is_mechanical() {
        let v = verdict("", &[(Severity::High, "untracked files in the worktree")]);
        let facts = Facts {
            check_green: true,
            tree_dirty: true,
        };
        assert_eq!(classify(&v, facts).0, Class::Mechanical);
        assert_eq!(
            Class::Mechanical.action(&TriageConfig::default()),
            TriageAction::Fix
        );
    }

    #[test]
    fn a_procedural_objection_on_a_red_check_is_real_doubt() {
        let v = verdict("the tree is dirty", &[]);
        let facts = Facts {
            check_green: false,
            tree_dirty: false,
        };
        assert_eq!(classify(&v, facts).0, Class::RealDoubt);
    }

    #[test]
    fn one_objection_about_the_work_makes_it_real_doubt() {
        let v = verdict(
            "",
            &[
                (Severity::Low, "uncommitted artifact"),
                (Severity::High, "the token check is skipped for admins"),
            ],
        );
        assert_eq!(classify(&v, GREEN_CLEAN).0, Class::RealDoubt);
        assert_eq!(classify(&verdict("", &[]), GREEN_CLEAN).0, Class::RealDoubt);
    }

    #[test]
    fn an_irreversible_risk_has_no_safe_path_whatever_the_table_says() {
        let v = verdict(
            "the migration drops a column: data loss",
            &[(Severity::Low, "dirty tree")],
        );
        assert_eq!(classify(&v, GREEN_CLEAN).0, Class::NoSafePath);
        let lenient = TriageConfig {
            mechanical: TriageAction::ShipWithDebt,
            false_positive: TriageAction::ShipWithDebt,
            real_doubt: TriageAction::ShipWithDebt,
        };
        assert_eq!(Class::NoSafePath.action(&lenient), TriageAction::Escalate);
    }
}
