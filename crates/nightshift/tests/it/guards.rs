//! Guards dominate success: a green check reached by weakening the oracle, or by touching a
//! blocked path, never reaches the target; progress detection ends hopeless attempts early.

use crate::harness::*;

/// A test runner in Python that prints TAP (no pytest needed): every `test_*` function of
/// `tests/test_*.py`, in order.
pub const RUNNER: &str = r##"import glob, importlib.util, sys
tests = []
for path in sorted(glob.glob("tests/test_*.py")):
    spec = importlib.util.spec_from_file_location(path[:-3].replace("/", "."), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in sorted(n for n in dir(module) if n.startswith("test_")):
        tests.append((path + "::" + name, getattr(module, name)))
print("1.." + str(len(tests)))
failed = 0
for number, (test_id, test) in enumerate(tests, 1):
    try:
        test()
        print("ok %d - %s" % (number, test_id))
    except Exception as error:
        failed += 1
        print("not ok %d - %s" % (number, test_id))
        print("# %s: %s" % (type(error).__name__, error))
sys.exit(1 if failed else 0)
"##;

/// `calc.add` is wrong, two tests say so, one test passes.
pub fn python_project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("run_tests.py", RUNNER),
        (
            "calc.py",
            "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        ),
        (
            "tests/test_calc.py",
            "import os, sys\nsys.path.insert(0, os.getcwd())\nfrom calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n    assert add(0, 0) == 0\n\n\ndef test_add_negative():\n    assert add(-1, -1) == -2\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
        ),
    ]
}

/// nightshift.toml: the scripted agent, the TAP-printing runner as the check, and `extra`.
fn python_config(repo: &Repo, items: &[&str], max_iterations: u32, extra: &str) -> String {
    let mut text = repo.agent_table();
    text.push_str(&format!(
        "\n[check]\ncommand = \"python3 run_tests.py\"\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = {max_iterations}\nmax_attempts = 1\n{extra}"
    ));
    for id in items {
        text.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make the tests pass.\"\n"
        ));
    }
    text
}

/// The honest fix.
pub const FIXES_ADD: &str = "replace calc.py \"return a - b\" \"return a + b\"\n";

/// Seed 002's 2:40 a.m.: the agent cannot fix `add`, so it deletes the test that catches it
/// and the assertion that fails; the runner goes green.
pub const WEAKENS_TESTS: &str = "write tests/test_calc.py <<END
import os, sys
sys.path.insert(0, os.getcwd())
from calc import add, mul


def test_add():
    assert add(0, 0) == 0


def test_mul():
    assert mul(2, 3) == 6
END
";

/// The journal events of `kind` about `item`.
pub fn events(repo: &Repo, kind: &str, item: &str) -> Vec<serde_json::Value> {
    let out = repo.run(&["log", "--json"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == kind && e["item"] == item)
        .collect()
}

#[test]
fn deleting_a_test_and_an_assertion_to_go_green_halts_the_item_and_nothing_lands() {
    let repo = Repo::new(&python_project());
    repo.agent("cheat", WEAKENS_TESTS);
    repo.agent("fix", FIXES_ADD);
    repo.configure(&python_config(&repo, &["cheat", "fix"], 3, ""));
    let before = repo.git(&["rev-parse", "main"]);

    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));

    // The check really went green on the weakened suite: the guards, not the oracle, stopped it.
    let checks = events(&repo, "check_ended", "cheat");
    assert_eq!(
        checks.len(),
        1,
        "parked at once: no second iteration, no parked pass"
    );
    assert_eq!(checks[0]["green"], true);
    let guards = checks[0]["guards"].as_array().unwrap();
    let failed: Vec<&str> = guards
        .iter()
        .filter(|g| g["state"] == "fail")
        .map(|g| g["guard"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["test_set", "assertions"], "{guards:?}");
    let test_set = guards.iter().find(|g| g["guard"] == "test_set").unwrap();
    assert!(
        test_set["detail"]
            .as_str()
            .unwrap()
            .contains("tests/test_calc.py::test_add_negative"),
        "{test_set}"
    );
    let assertions = guards.iter().find(|g| g["guard"] == "assertions").unwrap();
    assert!(
        assertions["detail"]
            .as_str()
            .unwrap()
            .contains("4 → 2 assertions"),
        "{assertions}"
    );

    let failed = events(&repo, "attempt_failed", "cheat");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["halt"], "metric_integrity_violation");
    assert_eq!(failed[0]["park"], true);
    let status = repo.status_json();
    let cheat = status["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "cheat")
        .unwrap()
        .clone();
    assert_eq!(cheat["state"], "parked");
    assert!(
        cheat["reason"]
            .as_str()
            .unwrap()
            .starts_with("metric_integrity_violation: test_set:"),
        "{cheat}"
    );
    // Nothing of the cheat reached main; the honest item after it did.
    assert_eq!(repo.shipped_items(), ["fix"]);
    assert_eq!(
        repo.git(&["show", "main:tests/test_calc.py"]),
        repo.git(&["show", &format!("{}:tests/test_calc.py", before.trim())]),
        "the tests on main are the original ones"
    );
    // The attempt is preserved: the weakened suite is there for a person to look at.
    let kept = repo.git(&[
        "show",
        "refs/nightshift/preserve/cheat/1:tests/test_calc.py",
    ]);
    assert!(!kept.contains("test_add_negative"), "{kept}");
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("cheat: metric_integrity_violation"),
        "{attention}"
    );
    repo.assert_clean_end();
}

#[test]
fn a_blocked_path_change_parks_the_item_even_with_a_green_check() {
    let repo = Repo::new(&python_project());
    repo.agent(
        "ci",
        &format!("{FIXES_ADD}write .github/workflows/ci.yml \"on: push\"\n"),
    );
    repo.configure(&python_config(
        &repo,
        &["ci"],
        3,
        "\n[guards]\nblocked_paths = [\".github/**\"]\n",
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let failed = events(&repo, "attempt_failed", "ci");
    assert_eq!(failed[0]["halt"], "blocked_path_modified");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains(".github/workflows/ci.yml (matches `.github/**`)"),
        "{}",
        failed[0]
    );
    assert_eq!(repo.shipped_items(), Vec::<String>::new());
    repo.assert_clean_end();
}

#[test]
fn protect_tests_judges_the_work_with_the_base_tests_so_an_edited_assertion_cannot_pass() {
    let repo = Repo::new(&python_project());
    // As many assertions as before, each bent to agree with the bug: only running the base's
    // tests can see through it.
    repo.agent(
        "bend",
        "replace tests/test_calc.py \"add(2, 3) == 5\" \"add(2, 3) == -1\"\nreplace tests/test_calc.py \"add(-1, -1) == -2\" \"add(-1, -1) == 0\"\n",
    );
    repo.configure(&python_config(
        &repo,
        &["bend"],
        1,
        "\n[guards]\nprotect_tests = true\n",
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let checks = events(&repo, "check_ended", "bend");
    assert!(!checks.is_empty());
    assert!(
        checks.iter().all(|c| c["green"] == false),
        "the base's tests stay red: {checks:?}"
    );
    assert_eq!(repo.shipped_items(), Vec::<String>::new());
    // The agent's version of the tests is what the attempt kept (put back after the check).
    let kept = repo.git(&["show", "refs/nightshift/preserve/bend/1:tests/test_calc.py"]);
    assert!(kept.contains("add(2, 3) == -1"), "{kept}");
    repo.assert_clean_end();
}

#[test]
fn without_protect_tests_the_bent_assertions_would_have_passed() {
    // The control for the test above: the same agent, no protection, goes green and ships.
    let repo = Repo::new(&python_project());
    repo.agent(
        "bend",
        "replace tests/test_calc.py \"add(2, 3) == 5\" \"add(2, 3) == -1\"\nreplace tests/test_calc.py \"add(-1, -1) == -2\" \"add(-1, -1) == 0\"\n",
    );
    repo.configure(&python_config(&repo, &["bend"], 1, ""));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
}

#[test]
fn a_fixed_test_failing_again_ends_the_attempt_early_as_same_test_regressed() {
    // Two tests, each green once its file says ok.
    let repo = Repo::new(&[
        ("run_tests.py", RUNNER),
        (
            "tests/test_files.py",
            "def read(name):\n    try:\n        return open(name).read().strip()\n    except OSError:\n        return ''\n\n\ndef test_a():\n    assert read('a.txt') == 'ok'\n\n\ndef test_b():\n    assert read('b.txt') == 'ok'\n",
        ),
    ]);
    // Iteration 1 fixes a; iteration 2 fixes b and breaks a again; iteration 3 would fix
    // both, but must never run.
    repo.agent(
        "seesaw",
        "when iteration == 1\nwrite a.txt \"ok\"\nwhen iteration == 2\nwrite a.txt \"broken\"\nwrite b.txt \"ok\"\nwhen iteration >= 3\nwrite a.txt \"ok\"\nwrite b.txt \"ok\"\n",
    );
    repo.configure(&python_config(&repo, &["seesaw"], 5, ""));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    // Attempt 1 (attempt 2, in the parked pass, goes the same way).
    let failing: Vec<Vec<String>> = events(&repo, "check_ended", "seesaw")
        .iter()
        .filter(|c| c["attempt"] == 1)
        .map(|c| {
            c["results"]["failing"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        })
        .collect();
    assert_eq!(
        failing,
        [
            vec!["tests/test_files.py::test_b".to_owned()],
            vec!["tests/test_files.py::test_a".to_owned()],
        ],
        "two iterations, then the attempt ended"
    );
    let failed = events(&repo, "attempt_failed", "seesaw");
    assert_eq!(failed.len(), 2, "the attempt and the parked pass's");
    assert_eq!(failed[0]["halt"], "same_test_regressed");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("`tests/test_files.py::test_a` was fixed and fails again"),
        "{}",
        failed[0]
    );
    repo.assert_clean_end();
}

#[test]
fn a_check_that_contradicts_itself_on_one_tree_halts_the_run_14() {
    let repo = Repo::new(&python_project());
    // Red on odd calls, green on even ones: the baseline (call 1) is red, the check of the
    // same tree after an agent that changed nothing (call 2) is green.
    let counter = repo.agent_dir.join("calls");
    let check = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; [ $((n % 2)) -eq 0 ]",
        c = counter.display()
    );
    repo.agent("idle", "print \"looked, changed nothing\"\n");
    repo.agent("next", FIXES_ADD);
    let config = python_config(&repo, &["idle", "next"], 3, "")
        .replace("python3 run_tests.py", &check.replace('"', "\\\""));
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(14), "{}", text(&out));
    let status = repo.status_json();
    assert_eq!(status["run"]["halt_reason"], "check_not_deterministic");
    let failed = events(&repo, "attempt_failed", "idle");
    assert_eq!(failed[0]["halt"], "check_not_deterministic");
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("said red and then green on the same tree"),
        "{}",
        failed[0]
    );
    assert_eq!(
        repo.shipped_items(),
        Vec::<String>::new(),
        "nothing judged by it ships"
    );
    repo.assert_clean_end();
}

#[test]
fn a_check_whose_report_stops_parsing_fails_closed_and_nothing_ships() {
    // The base's check prints TAP; the agent fixes `add` and also makes the runner print
    // nothing a parser recognises. The guards cannot see lost tests: they fail, the item
    // parks, nothing ships (on main the green check shipped with its guards `not_run`).
    let repo = Repo::new(&python_project());
    repo.agent(
        "mute",
        &format!("{FIXES_ADD}write run_tests.py \"print('all good')\"\n"),
    );
    repo.configure(&python_config(&repo, &["mute"], 1, ""));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let checks = events(&repo, "check_ended", "mute");
    assert_eq!(checks[0]["green"], true, "{checks:?}");
    let guards = checks[0]["guards"].as_array().unwrap();
    let test_set = guards.iter().find(|g| g["guard"] == "test_set").unwrap();
    assert_eq!(test_set["state"], "fail", "{test_set}");
    assert!(
        test_set["detail"]
            .as_str()
            .unwrap()
            .contains("cannot evaluate, failing closed"),
        "{test_set}"
    );
    let failed = events(&repo, "attempt_failed", "mute");
    assert_eq!(failed[0]["halt"], "metric_integrity_violation");
    assert_eq!(repo.shipped_items(), Vec::<String>::new());
    repo.assert_clean_end();
}

#[test]
fn a_guard_that_cannot_evaluate_only_warns_when_its_gate_logs() {
    let repo = Repo::new(&python_project());
    repo.agent(
        "mute",
        &format!("{FIXES_ADD}write run_tests.py \"print('all good')\"\n"),
    );
    repo.configure(&python_config(
        &repo,
        &["mute"],
        1,
        "\n[gates]\ntest_integrity = \"log\"\n",
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let checks = events(&repo, "check_ended", "mute");
    let guards = checks[0]["guards"].as_array().unwrap();
    let test_set = guards.iter().find(|g| g["guard"] == "test_set").unwrap();
    assert_eq!(test_set["state"], "logged", "{test_set}");
    assert_eq!(repo.shipped_items(), ["mute"]);
}
