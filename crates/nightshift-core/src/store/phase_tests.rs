//! Model-based tests of the typed phase: random sequences of journal events for two attempts
//! are applied to the real fold (an in-memory database, one transaction per event, rolled
//! back when the fold refuses it, as `Store::record` does) and to a reference model written
//! apart from `phase.rs` — the phase rules as the fold spelled them in strings before they
//! were typed, plus the one rule typing added (an attempt with its verdict never moves).
//! After every event the stored text, the pure `transition` and the model must agree.
//! Bounded for `cargo test` (`PROPTEST_CASES` raises it).

use proptest::prelude::*;
use rusqlite::{Connection, params};

use super::event::{CheckStage, EventKind, Outcome, PlannedItem};
use super::phase::{Phase, Refused, transition};
use super::{fold, schema};
use crate::guard::{GuardState, Verdict};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const RUN: &str = "r1";

/// The reference model: the phase an event of the attempt moves it to, as names.
/// `Ok(None)`: the phase stays. `Err(())`: the fold must refuse the event.
fn model(from: &str, kind: &EventKind) -> Result<Option<&'static str>, ()> {
    let to = match kind {
        EventKind::AttemptStarted { .. } => return Err(()),
        EventKind::WorktreeReady { .. } => Some("ready"),
        EventKind::SessionStarted { .. } => Some("session"),
        EventKind::SessionEnded { outcome, .. } => Some(match outcome {
            Outcome::RateLimited | Outcome::EnvFault | Outcome::Stopped => "session_retry",
            _ => "session_ended",
        }),
        EventKind::SessionNudged { .. } => Some("session_retry"),
        EventKind::CheckStarted { stage, .. } => Some(match stage {
            CheckStage::Work => "checking",
            CheckStage::Merged => "merge_checking",
        }),
        EventKind::CheckEnded {
            stage,
            green,
            guards,
            untrusted,
            ..
        } => {
            let fail = |name: Option<&str>| {
                guards.iter().any(|g| {
                    g.state == GuardState::Fail && name.is_none_or(|n| g.guard.as_str() == n)
                })
            };
            Some(match (stage, green) {
                (CheckStage::Work, _) if fail(Some("blocked_paths")) => "violated",
                _ if untrusted.is_some() => "untrusted",
                (CheckStage::Work, _) if fail(None) => "violated",
                (CheckStage::Work, true) => "green",
                (CheckStage::Work, false) => "red",
                (CheckStage::Merged, true) => "merge_green",
                (CheckStage::Merged, false) => "merge_red",
            })
        }
        EventKind::Committed { .. } => Some("committed"),
        EventKind::MergePrepared { .. } => Some("merge_prepared"),
        EventKind::ConflictFound { .. } => Some("conflict"),
        EventKind::IntegrateIntended { .. } => Some("integrating"),
        EventKind::Integrated { .. } => Some("integrated"),
        EventKind::ControlPlaneTampered { .. } => Some("tampered"),
        EventKind::AttemptFailed { .. } => Some("failed"),
        EventKind::ReviewStarted { reviewer, .. } => Some(if reviewer == "second_opinion" {
            "second_reviewing"
        } else {
            "reviewing"
        }),
        EventKind::ReviewEnded { .. } => Some("reviewed"),
        EventKind::ReviewDecided { action, .. } => match action.as_str() {
            "approve" | "ship_with_debt" => Some("reviewed_ok"),
            "repair" => Some("review_repair"),
            "fix" | "retry" => Some("green"),
            "second_opinion" => Some("second_opinion"),
            _ => None,
        },
        _ => None,
    };
    match to {
        Some(to) if to != from && matches!(from, "integrated" | "failed") => Err(()),
        other => Ok(other),
    }
}

/// An attempt an event is for: mostly `a`/1, sometimes the other open one (`b`/1), sometimes
/// one that does not exist (`a`/2), which the fold must leave alone.
fn target() -> impl Strategy<Value = (String, u32)> {
    prop_oneof![
        8 => Just(("a".to_owned(), 1)),
        1 => Just(("b".to_owned(), 1)),
        1 => Just(("a".to_owned(), 2)),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop::sample::select(vec![
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Timeout,
        Outcome::SpawnFailed,
        Outcome::Stalled,
        Outcome::OverBudget,
        Outcome::Crashed,
        Outcome::RateLimited,
        Outcome::EnvFault,
        Outcome::Stopped,
        Outcome::PermissionDenied,
    ])
}

fn stage() -> impl Strategy<Value = CheckStage> {
    prop_oneof![Just(CheckStage::Work), Just(CheckStage::Merged)]
}

fn guards() -> impl Strategy<Value = Vec<Verdict>> {
    let one = (
        prop::sample::select(vec!["blocked_paths", "test_integrity"]),
        prop::sample::select(vec![
            GuardState::Pass,
            GuardState::Fail,
            GuardState::Logged,
            GuardState::NotRun,
        ]),
    )
        .prop_map(|(guard, state)| Verdict {
            guard: guard.to_owned(),
            state,
            detail: String::new(),
        });
    prop::collection::vec(one, 0..3)
}

/// One journal event of an attempt: every kind that moves a phase, with the fields that
/// decide where to, and kinds that must leave it alone.
fn event() -> impl Strategy<Value = EventKind> {
    let moving = prop_oneof![
        target().prop_map(|(item, attempt)| EventKind::WorktreeReady {
            item,
            attempt,
            seeds: Vec::new()
        }),
        (target(), 1..4u32, any::<bool>()).prop_map(|((item, attempt), iteration, resumed)| {
            EventKind::SessionStarted {
                item,
                attempt,
                iteration,
                log: "l".into(),
                agent_session: resumed.then(|| "s".into()),
                resumed,
                agent: None,
                told_through: None,
            }
        }),
        (target(), outcome()).prop_map(|((item, attempt), outcome)| EventKind::SessionEnded {
            item,
            attempt,
            iteration: 1,
            outcome,
            exit_code: None,
            duration_ms: 1,
            spend: None,
            resets_at: None,
            fault: None,
            agent_session: None,
        }),
        target().prop_map(|(item, attempt)| EventKind::SessionNudged {
            item,
            attempt,
            iteration: 1,
            nudge: 1,
        }),
        (target(), stage()).prop_map(|((item, attempt), stage)| EventKind::CheckStarted {
            item,
            attempt,
            iteration: 1,
            stage,
            command: None,
            timeout_ms: None,
            env: Vec::new(),
        }),
        (target(), stage(), any::<bool>(), guards(), any::<bool>()).prop_map(
            |((item, attempt), stage, green, guards, untrusted)| EventKind::CheckEnded {
                item,
                attempt,
                iteration: 1,
                stage,
                green,
                outcome: Outcome::Completed,
                exit_code: Some(i32::from(!green)),
                output_sha256: String::new(),
                log: "check.log".into(),
                duration_ms: 1,
                results: None,
                guards,
                untrusted: untrusted.then(|| "contradicts".into()),
            }
        ),
        target().prop_map(|(item, attempt)| EventKind::Committed {
            item,
            attempt,
            commit: "c1".into(),
        }),
        target().prop_map(|(item, attempt)| EventKind::MergePrepared {
            item,
            attempt,
            commit: "m1".into(),
            onto: "t1".into(),
        }),
        target().prop_map(|(item, attempt)| EventKind::ConflictFound {
            item,
            attempt,
            onto: "t1".into(),
            paths: vec!["f".into()],
        }),
        target().prop_map(|(item, attempt)| EventKind::IntegrateIntended {
            item,
            attempt,
            target: "main".into(),
            commit: "m1".into(),
            expected_old: "t1".into(),
        }),
        (target(), any::<bool>()).prop_map(|((item, attempt), awaiting_push)| {
            EventKind::Integrated {
                item,
                attempt,
                commit: "m1".into(),
                push: awaiting_push,
                awaiting_push,
            }
        }),
        target().prop_map(|(item, attempt)| EventKind::ControlPlaneTampered {
            item,
            attempt,
            iteration: 1,
            changes: vec!["HEAD moved".into()],
            restored: Vec::new(),
            paths: Vec::new(),
        }),
        (target(), any::<bool>()).prop_map(|((item, attempt), park)| EventKind::AttemptFailed {
            item,
            attempt,
            reason: "red".into(),
            preserve_ref: None,
            park,
            keep_branch: false,
            halt: None,
            verdict: None,
            actions: Vec::new(),
        }),
        (
            target(),
            prop::sample::select(vec!["review", "second_opinion", "other"])
        )
            .prop_map(|((item, attempt), reviewer)| EventKind::ReviewStarted {
                item,
                attempt,
                cycle: 1,
                reviewer: reviewer.into(),
                log: "r.log".into(),
            }),
        (target(), outcome()).prop_map(|((item, attempt), outcome)| EventKind::ReviewEnded {
            item,
            attempt,
            cycle: 1,
            reviewer: "review".into(),
            outcome,
            verdict: None,
            error: None,
            spend: None,
        }),
        (
            target(),
            prop::sample::select(vec![
                "approve",
                "ship_with_debt",
                "repair",
                "fix",
                "second_opinion",
                "retry",
                "escalate",
                "park",
                "defer",
                "a_later_action",
            ])
        )
            .prop_map(|((item, attempt), action)| EventKind::ReviewDecided {
                item,
                attempt,
                action: action.into(),
                class: None,
                why: "because".into(),
                feedback: None,
            }),
    ];
    let still = prop_oneof![
        target().prop_map(|(item, attempt)| EventKind::AttemptStarted {
            branch: format!("nightshift/{item}/{attempt}"),
            worktree: format!("/w/{item}-{attempt}"),
            item,
            attempt,
            base: "b0".into(),
        }),
        target().prop_map(|(item, attempt)| EventKind::AgentSessionOpened {
            item,
            attempt,
            agent_session: "s2".into(),
        }),
        target().prop_map(|(item, attempt)| EventKind::Preserved {
            item,
            attempt,
            ref_name: "refs/nightshift/preserve/x".into(),
            commit: "c1".into(),
        }),
        target().prop_map(|(item, attempt)| EventKind::WorktreeRemoved { item, attempt }),
        target().prop_map(|(item, attempt)| EventKind::TeardownFailed {
            item,
            attempt,
            error: "busy".into(),
        }),
        target().prop_map(|(item, attempt)| EventKind::BaselineChecked {
            item,
            attempt,
            tree: "t".into(),
            results: None,
            log: "b.log".into(),
        }),
        Just(EventKind::RunPaused {
            reason: "rate_limited".into(),
            until: 1,
        }),
        Just(EventKind::RunUnpaused),
    ];
    prop_oneof![6 => moving, 1 => still]
}

/// A run with items `a` and `b`, each with its first attempt started.
fn fresh() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    schema::migrate(&mut conn).unwrap();
    let planned = |id: &str| PlannedItem {
        id: id.into(),
        prompt: id.into(),
        check: None,
        shipped_by: None,
    };
    let mut opening = vec![EventKind::RunStarted {
        target: "main".into(),
        base: "b0".into(),
        max_iterations: 3,
        max_attempts: 3,
        items: vec![planned("a"), planned("b")],
    }];
    for item in ["a", "b"] {
        opening.push(EventKind::AttemptStarted {
            item: item.into(),
            attempt: 1,
            base: "b0".into(),
            branch: format!("nightshift/{item}/1"),
            worktree: format!("/w/{item}-1"),
        });
    }
    for kind in &opening {
        let tx = conn.transaction().unwrap();
        fold::apply(&tx, RUN, "t0", kind).unwrap();
        tx.commit().unwrap();
    }
    conn
}

/// The stored phase text of `item`/`attempt` (raw, as another reader of the table sees it).
fn stored(conn: &Connection, item: &str, attempt: u32) -> Option<String> {
    conn.query_row(
        "SELECT phase FROM attempts WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
        params![RUN, item, attempt],
        |r| r.get(0),
    )
    .ok()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_fold_moves_phases_as_the_model_says(events in prop::collection::vec(event(), 1..40)) {
        let mut conn = fresh();
        let attempts = [("a", 1), ("b", 1), ("a", 2)];
        for (n, kind) in events.iter().enumerate() {
            let before: Vec<Option<String>> =
                attempts.iter().map(|(i, a)| stored(&conn, i, *a)).collect();
            let tx = conn.transaction().unwrap();
            let folded = fold::apply(&tx, RUN, "t1", kind);
            // As `Store::record`: a refused event's transaction applies nothing.
            match &folded {
                Ok(()) => tx.commit().unwrap(),
                Err(_) => tx.rollback().unwrap(),
            }
            let (item, attempt) = kind.item_attempt();
            for ((i, a), was) in attempts.iter().zip(&before) {
                let now = stored(&conn, i, *a);
                let own = item == Some(*i) && attempt == Some(*a);
                let Some(was) = was.as_deref().filter(|_| own) else {
                    // Not this event's attempt, or one that does not exist (which only its
                    // start makes, in the first phase): untouched.
                    let made = own && matches!(kind, EventKind::AttemptStarted { .. });
                    let expected = if made { Some(Phase::START.as_str().to_owned()) } else { was.clone() };
                    prop_assert_eq!(&now, &expected, "event {} ({}) on {}/{}", n, kind.name(), i, a);
                    continue;
                };
                let from = Phase::parse(was).unwrap();
                let expected = model(was, kind);
                let pure = transition(from, kind);
                match (&expected, &pure) {
                    (Err(()), Err(_)) => {}
                    (Ok(to), Ok(p)) => prop_assert_eq!(to.unwrap_or(was), p.as_str()),
                    _ => prop_assert!(false, "event {} ({}) from {}: model {:?}, transition {:?}", n, kind.name(), was, expected, pure),
                }
                match expected {
                    Err(()) => {
                        prop_assert!(folded.is_err(), "event {} ({}) from {} must be refused", n, kind.name(), was);
                        prop_assert_eq!(now.as_deref(), Some(was), "a refused event changes nothing");
                    }
                    Ok(to) => {
                        prop_assert!(folded.is_ok(), "event {} ({}) from {}: {:?}", n, kind.name(), was, folded.as_ref().err().map(ToString::to_string));
                        prop_assert_eq!(now.as_deref(), Some(to.unwrap_or(was)), "event {} ({}) from {}", n, kind.name(), was);
                    }
                }
            }
        }
    }
}

#[test]
fn every_phase_is_stored_under_its_serde_name_and_read_back() {
    for phase in Phase::ALL {
        let json = serde_json::to_value(phase).unwrap();
        assert_eq!(json.as_str(), Some(phase.as_str()));
        assert_eq!(Phase::parse(phase.as_str()), Some(phase));
        assert_eq!(phase.to_string(), phase.as_str());
    }
    let names: std::collections::HashSet<_> = Phase::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(names.len(), Phase::ALL.len(), "no two phases share a name");
    assert_eq!(Phase::parse("a_phase_of_a_newer_nightshift"), None);
    let conn = Connection::open_in_memory().unwrap();
    let read: rusqlite::Result<Phase> =
        conn.query_row("SELECT 'a_phase_of_a_newer_nightshift'", [], |r| r.get(0));
    let err = read.unwrap_err().to_string();
    assert!(err.contains("a_phase_of_a_newer_nightshift"), "{err}");
}

#[test]
fn a_finished_attempt_refuses_to_move_and_keeps_its_housekeeping() {
    let failed = EventKind::AttemptFailed {
        item: "a".into(),
        attempt: 1,
        reason: "red".into(),
        preserve_ref: None,
        park: false,
        keep_branch: false,
        halt: None,
        verdict: None,
        actions: Vec::new(),
    };
    let again = EventKind::WorktreeReady {
        item: "a".into(),
        attempt: 1,
        seeds: Vec::new(),
    };
    assert_eq!(
        transition(Phase::Failed, &again),
        Err(Refused::Finished {
            phase: Phase::Failed,
            event: "worktree_ready"
        })
    );
    assert_eq!(transition(Phase::Failed, &failed), Ok(Phase::Failed));
    let removed = EventKind::WorktreeRemoved {
        item: "a".into(),
        attempt: 1,
    };
    assert_eq!(
        transition(Phase::Integrated, &removed),
        Ok(Phase::Integrated)
    );
}

/// Through `Store::record`: a refused event is not journaled and the state is as before.
#[test]
fn a_refused_event_is_not_journaled() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = super::Store::open(&dir.path().join("state.db")).unwrap();
    let mut recorded = vec![];
    store
        .record(
            RUN,
            "t0",
            EventKind::RunStarted {
                target: "main".into(),
                base: "b0".into(),
                max_iterations: 1,
                max_attempts: 1,
                items: vec![PlannedItem {
                    id: "a".into(),
                    prompt: "a".into(),
                    check: None,
                    shipped_by: None,
                }],
            },
        )
        .unwrap();
    for kind in [
        EventKind::AttemptStarted {
            item: "a".into(),
            attempt: 1,
            base: "b0".into(),
            branch: "nightshift/a/1".into(),
            worktree: "/w/a-1".into(),
        },
        EventKind::IntegrateIntended {
            item: "a".into(),
            attempt: 1,
            target: "main".into(),
            commit: "m1".into(),
            expected_old: "b0".into(),
        },
        EventKind::Integrated {
            item: "a".into(),
            attempt: 1,
            commit: "m1".into(),
            push: false,
            awaiting_push: false,
        },
    ] {
        recorded.push(store.record(RUN, "t1", kind).unwrap().seq);
    }
    let err = store
        .record(
            RUN,
            "t2",
            EventKind::CheckStarted {
                item: "a".into(),
                attempt: 1,
                iteration: 1,
                stage: CheckStage::Work,
                command: None,
                timeout_ms: None,
                env: Vec::new(),
            },
        )
        .unwrap_err();
    assert!(matches!(err, super::StoreError::Refused(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "apply `check_started` to an attempt that already ended `integrated`"
    );
    let att = store.attempt(RUN, "a", 1).unwrap().unwrap();
    assert_eq!(att.phase, Phase::Integrated);
    let journal = store.events_after(0, 100).unwrap();
    assert_eq!(journal.last().map(|e| e.seq), recorded.last().copied());
    assert!(store.refold_matches().unwrap());
}
