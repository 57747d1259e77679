//! `nightshift loop`: the one-item fixpoint, in a repository without a nightshift.toml, under
//! the same contract as a plan item; each way it can end has its halt reason and exit code.

use crate::guards::{FIXES_ADD, RUNNER, WEAKENS_TESTS, python_project};
use crate::harness::*;

/// Runs `nightshift loop` with the scripted agent (its `default` script) and the TAP runner.
fn run_loop(repo: &Repo, script: &str, max_iterations: u32) -> std::process::Output {
    repo.agent("default", script);
    let exec = format!(
        "{BIN} __fake-agent --script-dir {}",
        repo.agent_dir.display()
    );
    repo.run(&[
        "loop",
        "--exec",
        &exec,
        "--check",
        "python3 run_tests.py",
        "--max-iterations",
        &max_iterations.to_string(),
    ])
}

/// The loop's item id (`loop-<time>`) from the journal.
fn loop_item(repo: &Repo) -> String {
    let status = repo.status_json();
    status["items"][0]["id"].as_str().unwrap().to_owned()
}

fn halt(repo: &Repo) -> String {
    repo.status_json()["run"]["halt_reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_loop_that_reaches_the_fixpoint_exits_10_and_lands_on_the_current_branch() {
    let repo = Repo::new(&python_project());
    let out = run_loop(&repo, FIXES_ADD, 3);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(halt(&repo), "success_condition_met");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("loop halted: success_condition_met"),
        "{}",
        text(&out)
    );
    assert!(repo.git(&["show", "main:calc.py"]).contains("return a + b"));
    assert_eq!(repo.shipped_items(), [loop_item(&repo)]);
    assert!(
        !repo.root.join("nightshift.toml").exists(),
        "a loop needs no config and writes none"
    );
    repo.assert_clean_end();
    // A second loop is a new item: the first one's shipped id does not make it a no-op.
    let again = run_loop(&repo, "print \"nothing to do\"\n", 2);
    assert_eq!(again.status.code(), Some(10), "{}", text(&again));
    assert_eq!(
        halt(&repo),
        "success_condition_met",
        "already green: the fixpoint holds"
    );
}

#[test]
fn a_loop_whose_agent_weakens_the_tests_exits_13_and_lands_nothing() {
    let repo = Repo::new(&python_project());
    let before = repo.git(&["rev-parse", "main"]);
    let out = run_loop(&repo, WEAKENS_TESTS, 3);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert_eq!(halt(&repo), "metric_integrity_violation");
    assert_eq!(repo.git(&["rev-parse", "main"]), before, "nothing landed");
    let item = loop_item(&repo);
    let kept = repo.git(&[
        "show",
        &format!("refs/nightshift/preserve/{item}/1:tests/test_calc.py"),
    ]);
    assert!(!kept.contains("test_add_negative"), "the attempt is kept");
    repo.assert_clean_end();
}

#[test]
fn a_loop_out_of_iterations_exits_12() {
    let repo = Repo::new(&python_project());
    // Red every iteration; two iterations end before the no-progress window (k = 3) closes.
    let out = run_loop(&repo, "append notes.txt \"tried\"\n", 2);
    assert_eq!(out.status.code(), Some(12), "{}", text(&out));
    assert_eq!(halt(&repo), "max_iterations_reached");
    repo.assert_clean_end();
}

#[test]
fn a_loop_with_the_same_failing_set_for_k_iterations_exits_17_no_progress() {
    let repo = Repo::new(&python_project());
    let out = run_loop(&repo, "append notes.txt \"tried\"\n", 6);
    assert_eq!(out.status.code(), Some(17), "{}", text(&out));
    assert_eq!(halt(&repo), "no_progress_detected");
    let item = loop_item(&repo);
    let checks = crate::guards::events(&repo, "check_ended", &item);
    assert_eq!(
        checks.len(),
        4,
        "the first iteration's set is the best to beat; three more without a new best"
    );
    repo.assert_clean_end();
}

#[test]
fn a_loop_that_returns_to_an_earlier_failing_set_exits_17_oscillation() {
    let repo = Repo::new(&[
        ("run_tests.py", RUNNER),
        (
            "tests/test_files.py",
            "def read(name):\n    try:\n        return open(name).read().strip()\n    except OSError:\n        return ''\n\n\ndef test_a():\n    assert read('a.txt') == 'ok'\n\n\ndef test_b():\n    assert read('b.txt') != 'broken'\n",
        ),
    ]);
    // Base: {a}. Iteration 1 fixes a and breaks b: {b}. Iteration 2 puts both back: {a}.
    let out = run_loop(
        &repo,
        "when iteration == 1\nwrite a.txt \"ok\"\nwrite b.txt \"broken\"\nwhen iteration >= 2\nwrite a.txt \"no\"\nwrite b.txt \"fine\"\n",
        5,
    );
    assert_eq!(out.status.code(), Some(17), "{}", text(&out));
    assert_eq!(halt(&repo), "oscillation_detected");
    repo.assert_clean_end();
}

#[test]
fn loop_flags_are_checked_before_anything_runs() {
    let repo = Repo::new(&python_project());
    for args in [
        vec!["loop", "--check", "true"],
        vec![
            "loop", "--exec", "true", "--agent", "claude", "--check", "true",
        ],
        vec![
            "loop",
            "--exec",
            "true",
            "--check",
            "true",
            "--max-iterations",
            "0",
        ],
        vec!["loop", "--agent", "cursor", "--check", "true"],
    ] {
        let out = repo.run(&args);
        assert_eq!(out.status.code(), Some(20), "{args:?}: {}", text(&out));
    }
    assert!(!repo.root.join(".nightshift").exists());
}

#[test]
fn a_loop_whose_agent_writes_nightshift_config_exits_13_blocked_path_modified() {
    let repo = Repo::new(&python_project());
    // `.nightshift/` and `nightshift.toml` are blocked whatever the config says.
    let out = run_loop(
        &repo,
        &format!("{FIXES_ADD}write nightshift.toml \"[limits]\"\n"),
        3,
    );
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert_eq!(halt(&repo), "blocked_path_modified");
    assert!(!repo.git(&["show", "main:calc.py"]).contains("a + b"));
    repo.assert_clean_end();
}

#[test]
fn a_green_base_does_not_make_a_shrinking_trajectory_look_stuck() {
    // The base is green (one passing test). The agent writes the item's four tests first (all
    // red), then makes one pass per iteration: 4 → 3 → 2 → 1 → 0. Counting the green base as
    // the best to beat would call that "no progress" at the third iteration.
    let repo = Repo::new(&[
        ("run_tests.py", RUNNER),
        ("tests/test_base.py", "def test_ok():\n    assert True\n"),
    ]);
    let tests = "def read(name):\n    try:\n        return open(name).read().strip()\n    except OSError:\n        return ''\n\n\ndef test_a():\n    assert read('a.txt') == 'ok'\n\n\ndef test_b():\n    assert read('b.txt') == 'ok'\n\n\ndef test_c():\n    assert read('c.txt') == 'ok'\n\n\ndef test_d():\n    assert read('d.txt') == 'ok'\n";
    let script = format!(
        "when iteration == 1\nwrite tests/test_x.py <<END\n{tests}END\nwhen iteration == 2\nwrite a.txt \"ok\"\nwhen iteration == 3\nwrite b.txt \"ok\"\nwhen iteration == 4\nwrite c.txt \"ok\"\nwhen iteration == 5\nwrite d.txt \"ok\"\n"
    );
    let out = run_loop(&repo, &script, 6);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(halt(&repo), "success_condition_met");
}

#[test]
fn a_loop_where_a_fixed_test_fails_again_exits_17_same_test_regressed() {
    let repo = Repo::new(&[
        ("run_tests.py", RUNNER),
        (
            "tests/test_files.py",
            "def read(name):\n    try:\n        return open(name).read().strip()\n    except OSError:\n        return ''\n\n\ndef test_a():\n    assert read('a.txt') == 'ok'\n\n\ndef test_b():\n    assert read('b.txt') == 'ok'\n",
        ),
    ]);
    // Base {a, b}; iteration 1 fixes a ({b}); iteration 2 fixes b and breaks a again ({a}).
    let out = run_loop(
        &repo,
        "when iteration == 1\nwrite a.txt \"ok\"\nwhen iteration >= 2\nwrite a.txt \"broken\"\nwrite b.txt \"ok\"\n",
        5,
    );
    assert_eq!(out.status.code(), Some(17), "{}", text(&out));
    assert_eq!(halt(&repo), "same_test_regressed");
    repo.assert_clean_end();
}
