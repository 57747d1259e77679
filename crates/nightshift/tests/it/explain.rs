//! `nightshift explain`: the trajectory of the failing set per attempt and the verdict on
//! retrying — still improving (raise the limit) versus stalled or infeasible (do not retry).

use crate::harness::*;

/// A shell project whose check prints TAP for five tests `1`…`5` (bare numbers: the ids do not
/// depend on how descriptions are read); test `i` passes once the file `fixed` has at least `i`
/// lines.
fn tap_project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "a project\n"),
        (
            "check.sh",
            "#!/bin/sh\nn=$(cat fixed 2>/dev/null | wc -l)\necho 1..5\nrc=0\nfor i in 1 2 3 4 5; do\n  if [ \"$i\" -le \"$n\" ]; then echo \"ok $i\"; else echo \"not ok $i\"; rc=1; fi\ndone\nexit $rc\n",
        ),
    ]
}

/// Fixes one more test per session.
const FIXES_ONE: &str = "append fixed <<EOF\nx\nEOF\n";
/// Busy, but fixes nothing.
const FIXES_NOTHING: &str = "append notes.txt <<EOF\ntried\nEOF\n";

/// A repository with one item `id` driven by `script`, `max_iterations`, one attempt per pass,
/// and `extra` lines in `[check]`.
fn setup(id: &str, script: &str, max_iterations: u32, extra: &str) -> Repo {
    let repo = Repo::new(&tap_project());
    repo.agent(id, script);
    let config = plan(&repo, &[id], max_iterations, 1).replacen(
        "[check]\n",
        &format!("[check]\n{extra}"),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    repo
}

fn explain_json(repo: &Repo, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["explain", "--json"];
    all.extend_from_slice(args);
    let out = repo.run(&all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("explain --json is JSON")
}

fn failing_sizes(attempt: &serde_json::Value) -> Vec<u64> {
    attempt["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["failing"].as_array().expect("parsed").len() as u64)
        .collect()
}

#[test]
fn a_shrinking_trajectory_cut_by_the_cap_is_still_improving() {
    let repo = setup("shrink", FIXES_ONE, 3, "");
    let v = explain_json(&repo, &["shrink"]);
    let item = &v["items"][0];
    assert_eq!(item["id"], "shrink");
    assert_eq!(item["state"], "parked");
    // One attempt, and one more in the parked pass; each starts from the base.
    let attempts = item["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    for attempt in attempts {
        assert_eq!(failing_sizes(attempt), [4, 3, 2], "{attempt}");
        assert_eq!(attempt["cap_reached"], true);
        assert_eq!(attempt["baseline_failing"], 5);
        assert_eq!(attempt["verdict"]["kind"], "still_improving");
    }
    assert_eq!(item["verdict"]["kind"], "still_improving");
    assert_eq!(
        item["verdict"]["raise"],
        serde_json::json!({"key": "[limits] max_iterations", "current": 3, "suggested": 5})
    );

    let out = repo.run(&["explain", "shrink"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains("failing 4 → 3 → 2 (cap 3 reached); 5 failing at the base"),
        "{human}"
    );
    assert!(
        human.contains("still improving — raising the limit is rational"),
        "{human}"
    );
    assert!(
        human.contains("raise `[limits] max_iterations` from 3 to 5"),
        "{human}"
    );
    // Without ITEM: every item that did not ship, here the same one.
    let all = explain_json(&repo, &[]);
    assert_eq!(all["items"][0]["verdict"], item["verdict"]);
}

#[test]
fn the_same_failing_set_every_iteration_is_stalled_and_halts_no_progress() {
    let repo = setup("stuck", FIXES_NOTHING, 5, "no_progress_after = 2\n");
    let v = explain_json(&repo, &["stuck"]);
    let item = &v["items"][0];
    for attempt in item["attempts"].as_array().unwrap() {
        // Halted by progress detection well before the cap of 5.
        // Three checks here; one fewer where the engine counts the base's set as the
        // trajectory's start (it halts as soon as k checks make no new best).
        let sizes = failing_sizes(attempt);
        assert!(
            (2..=3).contains(&sizes.len()) && sizes.iter().all(|&n| n == 5),
            "{attempt}"
        );
        assert_eq!(attempt["end"]["halt"], "no_progress_detected");
        assert_eq!(attempt["cap_reached"], false);
    }
    let verdict = &item["verdict"];
    assert_eq!(verdict["kind"], "stalled_or_infeasible");
    assert!(verdict["raise"].is_null());
    let next: Vec<&str> = verdict["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        next[0],
        "look at the tests failing throughout: `1`, `2`, `3`, `4`, `5`"
    );
    assert!(next[1].starts_with("then split the item"), "{next:?}");

    let out = repo.run(&["explain", "stuck"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains("failing 5 → 5") && human.contains("(halted: no_progress_detected)"),
        "{human}"
    );
    assert!(
        human.contains("stalled or infeasible — do not retry"),
        "{human}"
    );
    assert!(!human.contains("max_iterations"), "{human}");
}

#[test]
fn a_plateau_at_the_cap_is_stalled_not_improving() {
    // A window wider than the cap: progress detection never halts it, the cap does; explain
    // tells a plateau from progress.
    let repo = setup("flat", FIXES_NOTHING, 3, "no_progress_after = 5\n");
    let v = explain_json(&repo, &[]);
    let item = &v["items"][0];
    let attempt = &item["attempts"][0];
    assert_eq!(failing_sizes(attempt), [5, 5, 5]);
    assert_eq!(attempt["cap_reached"], true);
    assert_eq!(item["verdict"]["kind"], "stalled_or_infeasible");
    assert!(item["verdict"]["raise"].is_null());
}

#[test]
fn an_unknown_item_is_exit_20_naming_the_known_ones() {
    let repo = setup("shrink", FIXES_ONE, 1, "");
    let out = repo.run(&["explain", "nope"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("explain `nope`"), "{err}");
    assert!(err.contains("its items: shrink"), "{err}");
}

#[test]
fn before_any_run_it_says_so() {
    let repo = Repo::new(&tap_project());
    let out = repo.run(&["explain"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no run has started"));
    let v = explain_json(&repo, &[]);
    assert_eq!(v["version"], 1);
    assert!(v["run_id"].is_null());
    assert_eq!(v["items"], serde_json::json!([]));
}

/// The human form of a run with both verdicts, the run id replaced.
#[test]
fn explain_human_output_is_pinned() {
    let repo = Repo::new(&tap_project());
    repo.agent("shrink", FIXES_ONE);
    repo.agent("stuck", FIXES_NOTHING);
    let config = plan(&repo, &["shrink", "stuck"], 3, 1).replacen(
        "[check]\n",
        "[check]\nno_progress_after = 5\n",
        1,
    );
    repo.configure(&config);
    assert_eq!(repo.run(&["run"]).status.code(), Some(11));
    let out = repo.run(&["explain"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let run_id = repo.status_json()["run"]["id"].as_str().unwrap().to_owned();
    let human = String::from_utf8_lossy(&out.stdout).replace(&run_id, "<run_id>");
    insta::assert_snapshot!(human);
}

#[test]
fn explain_json_shape_is_pinned() {
    let repo = setup("shrink", FIXES_ONE, 2, "");
    let mut v = explain_json(&repo, &[]);
    v["run_id"] = "<run_id>".into();
    insta::assert_json_snapshot!(v);
}

#[test]
fn a_running_attempt_is_in_progress_and_a_shipped_item_is_omitted_unless_named() {
    let repo = Repo::new(&project());
    let agent = HeldAgent::configure(&repo, "live");
    let mut run = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    agent.wait_started();
    // The engine is mid-session: explain reads the store beside it.
    let v = explain_json(&repo, &[]);
    assert_eq!(v["items"][0]["id"], "live");
    assert_eq!(v["items"][0]["verdict"]["kind"], "in_progress");
    assert_eq!(v["items"][0]["attempts"][0]["end"]["kind"], "open");
    agent.release();
    assert_eq!(run.wait().unwrap().code(), Some(10));

    let v = explain_json(&repo, &[]);
    assert_eq!(v["items"], serde_json::json!([]));
    assert_eq!(v["shipped_omitted"], serde_json::json!(["live"]));
    let out = repo.run(&["explain"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("every item shipped (live)"),
        "{}",
        text(&out)
    );
    let v = explain_json(&repo, &["live"]);
    assert_eq!(v["items"][0]["verdict"]["kind"], "shipped");
    assert_eq!(v["items"][0]["attempts"][0]["end"]["kind"], "shipped");
}

#[test]
fn a_failed_guard_is_integrity_and_retrying_will_not_help() {
    let repo = Repo::new(&tap_project());
    // Fixes a test, and edits nightshift.toml (always a blocked path).
    repo.agent(
        "sneaky",
        "append fixed <<EOF\nx\nEOF\nappend nightshift.toml <<EOF\n# loosened\nEOF\n",
    );
    repo.configure(&plan(&repo, &["sneaky"], 3, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let v = explain_json(&repo, &["sneaky"]);
    let item = &v["items"][0];
    let attempt = &item["attempts"][0];
    assert_eq!(attempt["end"]["halt"], "blocked_path_modified");
    assert_eq!(
        attempt["points"][0]["guard_failures"][0]["guard"],
        "blocked_paths"
    );
    assert_eq!(item["verdict"]["kind"], "integrity");
    let human = String::from_utf8_lossy(&repo.run(&["explain", "sneaky"]).stdout).into_owned();
    assert!(human.contains("4 [guard blocked_paths failed]"), "{human}");
    assert!(human.contains("retrying will not help"), "{human}");
}
