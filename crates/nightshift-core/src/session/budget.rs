//! The mid-session budget guard: after every parsed event, the session's totals plus what the
//! item and the run had already spent are held against each limit. Crossing the soft share asks
//! for a wrap-up once; crossing a hard limit trips the guard.

use serde::{Deserialize, Serialize};

use crate::agent::SessionTotals;

/// Who a limit bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Session,
    Item,
    Run,
}

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Weighted tokens: input + output + cache writes + cache reads × weight.
    Tokens,
    /// API calls.
    Turns,
    Usd,
}

/// One hard limit, and what was already spent against it before this session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub scope: Scope,
    pub metric: Metric,
    pub hard: f64,
    pub baseline: f64,
}

/// A limit crossed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Crossing {
    pub scope: Scope,
    pub metric: Metric,
    pub used: f64,
    pub limit: f64,
}

/// The limits of one session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Budget {
    pub limits: Vec<Limit>,
    /// The share of a hard limit that asks for a wrap-up (0 < soft < 1).
    pub soft: f64,
    pub cache_read_weight: f64,
}

/// What the guard concluded after one look.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// Soft shares crossed for the first time.
    pub warned: Vec<Crossing>,
    /// The first hard limit crossed, once.
    pub tripped: Option<Crossing>,
}

/// Watches one session's totals against its budget.
#[derive(Debug, Clone)]
pub struct Guard {
    budget: Budget,
    warned: Vec<bool>,
    tripped: bool,
}

impl Guard {
    pub fn new(budget: Budget) -> Guard {
        let n = budget.limits.len();
        Guard {
            budget,
            warned: vec![false; n],
            tripped: false,
        }
    }

    /// Whether there is anything to watch.
    pub fn is_empty(&self) -> bool {
        self.budget.limits.is_empty()
    }

    /// The amount of `metric` this session has used so far.
    pub fn session_value(&self, totals: &SessionTotals, metric: Metric) -> f64 {
        match metric {
            Metric::Tokens => totals.usage.weighted(self.budget.cache_read_weight),
            Metric::Turns => f64::from(totals.turns),
            Metric::Usd => totals.cost_usd.unwrap_or(0.0),
        }
    }

    /// Holds the totals so far against every limit.
    pub fn look(&mut self, totals: &SessionTotals) -> Verdict {
        let mut verdict = Verdict::default();
        for (i, limit) in self.budget.limits.iter().enumerate() {
            let used = limit.baseline + self.session_value(totals, limit.metric);
            let crossing = Crossing {
                scope: limit.scope,
                metric: limit.metric,
                used,
                limit: limit.hard,
            };
            if used >= limit.hard {
                if !self.tripped && verdict.tripped.is_none() {
                    verdict.tripped = Some(crossing);
                }
            } else if used >= limit.hard * self.budget.soft && !self.warned[i] {
                self.warned[i] = true;
                verdict.warned.push(crossing);
            }
        }
        if verdict.tripped.is_some() {
            self.tripped = true;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Usage;

    fn totals(input: u64, cache_read: u64, turns: u32, usd: f64) -> SessionTotals {
        SessionTotals {
            usage: Usage {
                input,
                cache_read,
                ..Usage::default()
            },
            turns,
            cost_usd: Some(usd),
            ..SessionTotals::default()
        }
    }

    fn guard(limits: Vec<Limit>) -> Guard {
        Guard::new(Budget {
            limits,
            soft: 0.8,
            cache_read_weight: 0.1,
        })
    }

    #[test]
    fn soft_warns_once_then_hard_trips_once() {
        let mut g = guard(vec![Limit {
            scope: Scope::Session,
            metric: Metric::Tokens,
            hard: 1000.0,
            baseline: 0.0,
        }]);
        assert_eq!(g.look(&totals(700, 0, 1, 0.0)), Verdict::default());
        let v = g.look(&totals(700, 1000, 1, 0.0)); // 700 + 100 weighted = 800
        assert_eq!(v.warned.len(), 1);
        assert!(v.tripped.is_none());
        assert_eq!(
            g.look(&totals(750, 1000, 1, 0.0)),
            Verdict::default(),
            "warned once"
        );
        let v = g.look(&totals(900, 1000, 2, 0.0));
        assert_eq!(v.tripped.map(|c| c.used), Some(1000.0));
        assert_eq!(g.look(&totals(2000, 0, 3, 0.0)).tripped, None, "trips once");
    }

    #[test]
    fn item_and_run_limits_count_what_was_spent_before_this_session() {
        let mut g = guard(vec![
            Limit {
                scope: Scope::Item,
                metric: Metric::Turns,
                hard: 10.0,
                baseline: 9.0,
            },
            Limit {
                scope: Scope::Run,
                metric: Metric::Usd,
                hard: 5.0,
                baseline: 1.0,
            },
        ]);
        let v = g.look(&totals(0, 0, 1, 0.5));
        assert_eq!(
            v.tripped.map(|c| (c.scope, c.metric)),
            Some((Scope::Item, Metric::Turns))
        );
        let mut g = guard(vec![Limit {
            scope: Scope::Run,
            metric: Metric::Usd,
            hard: 5.0,
            baseline: 1.0,
        }]);
        assert!(g.look(&totals(0, 0, 1, 3.9)).tripped.is_none());
        assert!(g.look(&totals(0, 0, 1, 4.0)).tripped.is_some());
    }
}
