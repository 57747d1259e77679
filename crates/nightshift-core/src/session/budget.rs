//! The mid-session budget guard: after every parsed event, the session's totals plus what the
//! item and the run had already spent are held against each limit. Crossing the soft share asks
//! for a wrap-up once; crossing a hard limit trips the guard.
//!
//! Sessions running side by side share a [`RunLedger`]: their run-scope limits are held against
//! what the run has committed plus what every live session has spent so far, and an enforced
//! run-scope trip in one ends them all.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

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
    /// `Some`: the run's spend is shared with sessions running beside this one. Its run-scope
    /// limits are then held against the ledger's live total (their `baseline` is not used),
    /// every parsed usage is reported to it, and an enforced run-scope trip anywhere ends it.
    pub ledger: Option<LedgerSeat>,
}

/// What a run has spent, per metric (`tokens` weighted as the budget weighs them).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RunSpend {
    pub tokens: f64,
    pub turns: f64,
    pub usd: f64,
}

impl RunSpend {
    pub fn get(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Tokens => self.tokens,
            Metric::Turns => self.turns,
            Metric::Usd => self.usd,
        }
    }

    fn add(&mut self, other: RunSpend) {
        self.tokens += other.tokens;
        self.turns += other.turns;
        self.usd += other.usd;
    }
}

/// One live session's place in a [`RunLedger`], handed out by [`RunLedger::seat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey(u64);

/// The run's spend shared by the sessions running in it: what ended sessions committed (the
/// journal's figure, set by the engine) and each live session's running spend. One lock; every
/// change is whole (a session's end moves its spend from live to committed in one step).
#[derive(Debug)]
pub struct RunLedger {
    state: Mutex<LedgerState>,
    /// Woken on every change (tests wait on it).
    changed: Condvar,
    /// The first enforced run-scope trip, for the live sessions' loops to wait on.
    trip: watch::Sender<Option<Crossing>>,
}

#[derive(Debug, Default)]
struct LedgerState {
    committed: RunSpend,
    live: BTreeMap<SessionKey, RunSpend>,
    next_key: u64,
    tripped: Option<Crossing>,
}

impl LedgerState {
    fn total(&self) -> RunSpend {
        let mut total = self.committed;
        for spend in self.live.values() {
            total.add(*spend);
        }
        total
    }
}

impl RunLedger {
    /// A ledger for a run that has already committed `committed` (the journal's spend).
    pub fn new(committed: RunSpend) -> RunLedger {
        RunLedger {
            state: Mutex::new(LedgerState {
                committed,
                ..LedgerState::default()
            }),
            changed: Condvar::new(),
            trip: watch::Sender::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LedgerState> {
        // A panic elsewhere cannot leave the figures half-written: every change is one store.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more live session, spending nothing yet.
    pub fn seat(self: &Arc<Self>) -> LedgerSeat {
        let mut state = self.lock();
        let key = SessionKey(state.next_key);
        state.next_key += 1;
        state.live.insert(key, RunSpend::default());
        drop(state);
        LedgerSeat {
            ledger: Arc::clone(self),
            key,
        }
    }

    /// Records what live session `key` has spent so far (its running totals, not a delta) and
    /// returns the run's live total. A key already settled changes nothing.
    pub fn report(&self, key: SessionKey, spent: RunSpend) -> RunSpend {
        let mut state = self.lock();
        if let Some(live) = state.live.get_mut(&key) {
            *live = spent;
            self.changed.notify_all();
        }
        state.total()
    }

    /// A session's end, journaled: the run's committed spend becomes `committed` (which now
    /// includes that session's) and `key` leaves the live sessions, in one step, so no moment
    /// counts the session twice or not at all.
    pub fn settle(&self, key: SessionKey, committed: RunSpend) {
        let mut state = self.lock();
        state.live.remove(&key);
        state.committed = committed;
        self.changed.notify_all();
    }

    /// Spend journaled outside any seat (a session run without one): the new committed figure.
    pub fn set_committed(&self, committed: RunSpend) {
        self.lock().committed = committed;
        self.changed.notify_all();
    }

    /// Committed plus every live session's running spend.
    pub fn run_total(&self) -> RunSpend {
        self.lock().total()
    }

    /// How many seats are live (handed out, not settled).
    pub fn live_sessions(&self) -> usize {
        self.lock().live.len()
    }

    /// The first enforced run-scope trip, if one happened.
    pub fn tripped(&self) -> Option<Crossing> {
        self.lock().tripped
    }

    /// A session crossed a run-scope hard limit and ends for it: every other live session on
    /// this ledger ends too. Only the first trip is kept.
    pub fn trip(&self, crossing: Crossing) {
        let mut state = self.lock();
        if state.tripped.is_none() {
            state.tripped = Some(crossing);
            self.trip.send_replace(Some(crossing));
            self.changed.notify_all();
        }
    }

    /// For a session's loop: resolves once the run has tripped.
    pub(super) fn watch_trip(&self) -> watch::Receiver<Option<Crossing>> {
        self.trip.subscribe()
    }

    /// Waits (at most `timeout`) until `done` holds for the live total and the trip.
    #[cfg(test)]
    pub(super) fn wait_until(
        &self,
        timeout: std::time::Duration,
        mut done: impl FnMut(RunSpend, Option<Crossing>) -> bool,
    ) -> bool {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |s| !done(s.total(), s.tripped))
            .unwrap_or_else(PoisonError::into_inner);
        done(state.total(), state.tripped)
    }
}

/// A session's seat in a shared [`RunLedger`].
#[derive(Debug, Clone)]
pub struct LedgerSeat {
    pub ledger: Arc<RunLedger>,
    pub key: SessionKey,
}

impl PartialEq for LedgerSeat {
    fn eq(&self, other: &LedgerSeat) -> bool {
        Arc::ptr_eq(&self.ledger, &other.ledger) && self.key == other.key
    }
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

    /// Whether there is anything to watch or report.
    pub fn is_empty(&self) -> bool {
        self.budget.limits.is_empty() && self.budget.ledger.is_none()
    }

    /// The shared ledger this session reports to, if any.
    pub fn ledger(&self) -> Option<&Arc<RunLedger>> {
        self.budget.ledger.as_ref().map(|seat| &seat.ledger)
    }

    /// The run tripped in another session: this one ends for it and does not trip again.
    pub fn tripped_elsewhere(&mut self) {
        self.tripped = true;
    }

    /// The amount of `metric` this session has used so far.
    pub fn session_value(&self, totals: &SessionTotals, metric: Metric) -> f64 {
        match metric {
            Metric::Tokens => totals.usage.weighted(self.budget.cache_read_weight),
            Metric::Turns => f64::from(totals.turns),
            Metric::Usd => totals.cost_usd.unwrap_or(0.0),
        }
    }

    /// Holds the totals so far against every limit (run-scope ones against the ledger's live
    /// total, after reporting these totals to it, when the session has one).
    pub fn look(&mut self, totals: &SessionTotals) -> Verdict {
        let run = self.budget.ledger.as_ref().map(|seat| {
            let own = RunSpend {
                tokens: self.session_value(totals, Metric::Tokens),
                turns: self.session_value(totals, Metric::Turns),
                usd: self.session_value(totals, Metric::Usd),
            };
            seat.ledger.report(seat.key, own)
        });
        let mut verdict = Verdict::default();
        for (i, limit) in self.budget.limits.iter().enumerate() {
            let used = match (limit.scope, run) {
                (Scope::Run, Some(run)) => run.get(limit.metric),
                _ => limit.baseline + self.session_value(totals, limit.metric),
            };
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
            ledger: None,
        })
    }

    fn usd(usd: f64) -> RunSpend {
        RunSpend {
            usd,
            ..RunSpend::default()
        }
    }

    #[test]
    fn a_ledger_counts_each_session_once_from_its_first_report_past_its_end() {
        let committed = RunSpend {
            tokens: 100.0,
            turns: 1.0,
            usd: 0.5,
        };
        let ledger = Arc::new(RunLedger::new(committed));
        let (a, b) = (ledger.seat(), ledger.seat());
        assert_ne!(a.key, b.key);
        let spent = |tokens, usd| RunSpend {
            tokens,
            turns: 1.0,
            usd,
        };
        assert_eq!(ledger.report(a.key, spent(200.0, 1.0)).tokens, 300.0);
        // Running totals, not deltas: a later report replaces the earlier one.
        assert_eq!(ledger.report(a.key, spent(250.0, 1.0)).tokens, 350.0);
        let both = RunSpend {
            tokens: 400.0,
            turns: 3.0,
            usd: 1.75,
        };
        assert_eq!(ledger.report(b.key, spent(50.0, 0.25)), both);
        // a's end journaled: the committed figure now holds its spend, and it left the live
        // sessions in the same step.
        ledger.settle(
            a.key,
            RunSpend {
                tokens: 350.0,
                turns: 2.0,
                usd: 1.5,
            },
        );
        assert_eq!(
            ledger.run_total(),
            both,
            "counted once, not twice or zero times"
        );
        assert_eq!(ledger.live_sessions(), 1);
        // A late report for a settled seat changes nothing.
        assert_eq!(ledger.report(a.key, spent(900.0, 9.0)), both);
        ledger.settle(b.key, both);
        assert_eq!((ledger.run_total(), ledger.live_sessions()), (both, 0));
    }

    #[test]
    fn run_limits_with_a_ledger_hold_every_live_session_and_only_the_first_trip_is_kept() {
        let ledger = Arc::new(RunLedger::new(usd(1.0)));
        let other = ledger.seat();
        ledger.report(other.key, usd(2.0));
        let mut g = Guard::new(Budget {
            limits: vec![
                Limit {
                    scope: Scope::Run,
                    metric: Metric::Usd,
                    hard: 5.0,
                    // The ledger's total replaces the baseline.
                    baseline: 1000.0,
                },
                Limit {
                    scope: Scope::Session,
                    metric: Metric::Usd,
                    hard: 10.0,
                    baseline: 0.0,
                },
            ],
            soft: 0.8,
            cache_read_weight: 0.1,
            ledger: Some(ledger.seat()),
        });
        // 1 committed + 2 the other session + 0.5 own: under the soft share (4).
        assert_eq!(g.look(&totals(0, 0, 1, 0.5)), Verdict::default());
        let v = g.look(&totals(0, 0, 1, 1.0));
        assert_eq!(
            v.warned
                .iter()
                .map(|c| (c.scope, c.used))
                .collect::<Vec<_>>(),
            [(Scope::Run, 4.0)]
        );
        // The other session spends: this one's next look trips though its own spend is flat.
        ledger.report(other.key, usd(3.0));
        let v = g.look(&totals(0, 0, 1, 1.0));
        assert_eq!(
            v.tripped.map(|c| (c.scope, c.used)),
            Some((Scope::Run, 5.0))
        );
        assert_eq!(ledger.run_total().usd, 5.0);
        let first = v.tripped.unwrap();
        ledger.trip(first);
        ledger.trip(Crossing { used: 9.0, ..first });
        assert_eq!(ledger.tripped(), Some(first));
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
