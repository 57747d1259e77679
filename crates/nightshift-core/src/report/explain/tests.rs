use super::*;

/// A red point with these failing ids (named `t<n>` by size when only a size matters).
fn red(iteration: u32, failing: &[&str]) -> Point {
    Point {
        iteration,
        green: false,
        exit_code: Some(1),
        tests: Some(10),
        failing: Some(failing.iter().map(|s| (*s).to_owned()).collect()),
        guard_failures: Vec::new(),
        timed_out: false,
    }
}

fn sized(iteration: u32, n: usize) -> Point {
    let ids: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    red(iteration, &refs)
}

fn unparsed(iteration: u32, exit: i32) -> Point {
    Point {
        iteration,
        green: false,
        exit_code: Some(exit),
        tests: None,
        failing: None,
        guard_failures: Vec::new(),
        timed_out: false,
    }
}

fn failed(halt: Option<HaltReason>) -> End {
    End::Failed {
        reason: match halt {
            Some(h) => format!("{h}: …"),
            None => "check still red after 3 iterations".into(),
        },
        halt: halt.map(|h| h.as_str().to_owned()),
        preserve_ref: Some("refs/nightshift/preserve/x/1".into()),
    }
}

fn verdict(points: &[Point], baseline: Option<usize>, end: &End, cap: u32) -> Verdict {
    judge(
        points,
        baseline,
        end,
        cap,
        cap_reached(points, end, cap),
        false,
    )
}

#[test]
fn shrinking_at_the_cap_is_still_improving_and_names_the_key() {
    let points = [sized(1, 5), sized(2, 3), sized(3, 1)];
    let end = failed(None);
    assert!(cap_reached(&points, &end, 3));
    let v = verdict(&points, None, &end, 3);
    assert_eq!(v.kind, VerdictKind::StillImproving, "{v:?}");
    assert_eq!(
        v.raise,
        Some(Raise {
            key: "[limits] max_iterations".into(),
            current: 3,
            // 5 → 1 over 2 iterations (2 per iteration): one more clears the last one.
            suggested: 4,
        })
    );
    assert!(v.next[0].contains("max_iterations"), "{:?}", v.next);
    assert!(v.why.contains("failing 5 → 3 → 1"), "{}", v.why);
}

#[test]
fn the_suggestion_follows_the_rate() {
    // One test per iteration, 2 left: two more iterations.
    let points = [sized(1, 4), sized(2, 3), sized(3, 2)];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.raise.map(|r| r.suggested), Some(5));
}

#[test]
fn a_plateau_is_stalled() {
    let points = [
        red(1, &["a", "b", "c", "d"]),
        red(2, &["a", "b", "c", "d"]),
        red(3, &["a", "b", "c", "d"]),
    ];
    let v = verdict(&points, Some(4), &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::StalledOrInfeasible, "{v:?}");
    assert_eq!(v.raise, None);
    assert!(
        v.next.iter().any(|n| n.contains("`a`, `b`, `c`, `d`")),
        "the stubborn tests are named: {:?}",
        v.next
    );
}

#[test]
fn an_oscillation_is_stalled() {
    let points = [
        red(1, &["a", "b", "c"]),
        red(2, &["a", "b"]),
        red(3, &["a", "b", "c"]),
    ];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::StalledOrInfeasible, "{v:?}");
    assert!(v.why.contains("returned to an earlier one"), "{}", v.why);
    assert!(v.next.iter().any(|n| n.contains("`c`")), "{:?}", v.next);
}

#[test]
fn a_regression_is_stalled() {
    let points = [
        red(1, &["a", "b", "c"]),
        red(2, &["b", "c"]),
        red(3, &["a"]),
    ];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::StalledOrInfeasible, "{v:?}");
    assert!(v.why.contains("`a` was fixed and fails again"), "{}", v.why);
}

#[test]
fn shrinking_after_a_better_earlier_set_is_not_improving() {
    let points = [sized(1, 2), sized(2, 5), sized(3, 3)];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::StalledOrInfeasible, "{v:?}");
}

#[test]
fn an_engine_halt_on_no_progress_is_stalled_whatever_the_last_step() {
    let points = [sized(1, 3), sized(2, 3), sized(3, 3)];
    let end = failed(Some(HaltReason::NoProgressDetected));
    assert!(!cap_reached(&points, &end, 5));
    let v = verdict(&points, None, &end, 5);
    assert_eq!(v.kind, VerdictKind::StalledOrInfeasible, "{v:?}");
    assert!(v.why.contains("no_progress_detected"), "{}", v.why);
}

#[test]
fn a_failed_guard_is_integrity_even_on_a_shrinking_trajectory() {
    let mut last = sized(2, 0);
    last.green = true;
    last.guard_failures.push(GuardFailure {
        guard: "test_set".into(),
        detail: "1 test collected at the base is gone: t9".into(),
    });
    let points = [sized(1, 3), last];
    let end = failed(Some(HaltReason::MetricIntegrityViolation));
    let v = verdict(&points, None, &end, 3);
    assert_eq!(v.kind, VerdictKind::Integrity, "{v:?}");
    assert!(
        v.why.contains("`test_set` failed at iteration 2"),
        "{}",
        v.why
    );
    assert!(v.next[0].contains("will not help"), "{:?}", v.next);
    assert!(
        v.next
            .iter()
            .any(|n| n.contains("refs/nightshift/preserve"))
    );
}

#[test]
fn no_parsed_results_is_insufficient_data_and_says_how_to_get_some() {
    let points = [unparsed(1, 1), unparsed(2, 1), unparsed(3, 1)];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::InsufficientData, "{v:?}");
    assert!(v.why.contains("exit code only"), "{}", v.why);
    assert!(v.next[0].contains("[check] format"), "{:?}", v.next);
}

#[test]
fn an_unparsed_last_check_hides_the_trend() {
    let points = [sized(1, 5), sized(2, 3), unparsed(3, 2)];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::InsufficientData, "{v:?}");
    assert!(v.why.contains("failing 5 → 3 → ? (exit 2)"), "{}", v.why);
}

#[test]
fn one_point_is_judged_against_the_base_only_when_smaller() {
    let points = [sized(1, 2)];
    let end = End::Failed {
        reason: "check still red after 1 iteration".into(),
        halt: None,
        preserve_ref: None,
    };
    let v = verdict(&points, Some(5), &end, 1);
    assert_eq!(v.kind, VerdictKind::StillImproving, "{v:?}");
    assert!(v.why.contains("base 5 → failing 2"), "{}", v.why);
    // 5 → 2 in one iteration: one more clears 2.
    assert_eq!(v.raise.map(|r| r.suggested), Some(2));
    // An agent that wrote the item's tests first: more failing than at the base, no trend.
    let v = verdict(&points, Some(0), &end, 1);
    assert_eq!(v.kind, VerdictKind::InsufficientData, "{v:?}");
    let v = verdict(&points, None, &end, 1);
    assert_eq!(v.kind, VerdictKind::InsufficientData, "{v:?}");
}

#[test]
fn improving_but_stopped_by_something_else_names_that_instead_of_a_key() {
    let points = [sized(1, 5), sized(2, 3)];
    let end = End::Failed {
        reason: "item budget spent".into(),
        halt: None,
        preserve_ref: None,
    };
    assert!(!cap_reached(&points, &end, 3));
    let v = verdict(&points, None, &end, 3);
    assert_eq!(v.kind, VerdictKind::StillImproving, "{v:?}");
    assert_eq!(v.raise, None);
    assert!(v.next[0].contains("item budget spent"), "{:?}", v.next);
}

#[test]
fn shipped_open_and_green_ends() {
    let mut green = sized(2, 0);
    green.green = true;
    let points = [sized(1, 1), green.clone()];
    let v = verdict(
        &points,
        None,
        &End::Shipped {
            commit: "0123456789abcdef".into(),
        },
        3,
    );
    assert_eq!(v.kind, VerdictKind::Shipped);
    assert!(v.why.contains("0123456789 after 2 iterations"), "{}", v.why);

    let v = verdict(&points[..1], None, &End::Open, 3);
    assert_eq!(v.kind, VerdictKind::InProgress);

    let end = End::Failed {
        reason: "check red on the work merged onto the current target".into(),
        halt: None,
        preserve_ref: None,
    };
    let v = verdict(&points, None, &end, 3);
    assert_eq!(v.kind, VerdictKind::OtherCause, "{v:?}");
    assert!(v.why.contains("merged onto"), "{}", v.why);
}

#[test]
fn red_with_nothing_failing_is_another_cause() {
    let points = [sized(1, 2), sized(2, 0)];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::OtherCause, "{v:?}");
}

#[test]
fn verdict_names_are_stable() {
    assert_eq!(
        serde_json::to_string(&VerdictKind::StalledOrInfeasible).unwrap(),
        "\"stalled_or_infeasible\""
    );
    for kind in [
        VerdictKind::StillImproving,
        VerdictKind::StalledOrInfeasible,
        VerdictKind::Shipped,
        VerdictKind::Integrity,
        VerdictKind::InsufficientData,
        VerdictKind::OtherCause,
        VerdictKind::InProgress,
        VerdictKind::NotAttempted,
    ] {
        assert_eq!(
            serde_json::to_string(&kind).unwrap(),
            format!("\"{}\"", kind.as_str())
        );
    }
}

#[test]
fn a_loop_run_is_told_its_flag_not_a_config_key() {
    let points = [sized(1, 4), sized(2, 3), sized(3, 2)];
    let end = failed(Some(HaltReason::MaxIterationsReached));
    assert!(cap_reached(&points, &end, 3));
    let v = judge(&points, None, &end, 3, true, true);
    assert_eq!(v.kind, VerdictKind::StillImproving, "{v:?}");
    assert_eq!(
        v.raise.as_ref().map(|r| r.key.as_str()),
        Some("--max-iterations")
    );
    assert!(
        v.next[0].starts_with("run `nightshift loop` again with `--max-iterations 5`"),
        "{:?}",
        v.next
    );
}

#[test]
fn a_timed_out_check_is_named_and_the_advice_is_the_timeout_not_the_format() {
    // A timed-out check is killed: exit code none, output cut short, so nothing parsed.
    let mut last = unparsed(2, 0);
    last.exit_code = None;
    last.timed_out = true;
    let points = [unparsed(1, 1), last];
    let v = verdict(&points, None, &failed(None), 3);
    assert_eq!(v.kind, VerdictKind::OtherCause, "{v:?}");
    assert!(v.why.contains("timed out"), "{}", v.why);
    assert!(v.next[0].contains("[check] timeout"), "{:?}", v.next);
    assert!(
        v.next.iter().all(|n| !n.contains("[check] format")),
        "{:?}",
        v.next
    );
}
