use super::*;
use crate::check::results::{Format, TestResult, TestState};

fn results(tests: &[(&str, TestState)]) -> Results {
    Results {
        tests: tests
            .iter()
            .map(|(id, state)| TestResult {
                id: (*id).to_owned(),
                state: *state,
            })
            .collect(),
        format: Format::Tap,
    }
}

use TestState::{Failed, Passed, Skipped};

#[test]
fn blocked_paths_name_the_path_and_the_pattern() -> Result<(), String> {
    let set = PathSet::new(["tests/**", ".nightshift/**", "nightshift.toml"])?;
    let ok = blocked_paths(
        &[Change {
            path: "src/lib.rs".into(),
            deleted: false,
        }],
        &set,
    );
    assert_eq!(ok.state, GuardState::Pass);
    assert_eq!(ok.halt(), None);
    let bad = blocked_paths(
        &[
            Change {
                path: "src/lib.rs".into(),
                deleted: false,
            },
            Change {
                path: "tests/cli.rs".into(),
                deleted: true,
            },
        ],
        &set,
    );
    assert_eq!(bad.state, GuardState::Fail);
    assert!(
        bad.detail.contains("tests/cli.rs (matches `tests/**`)"),
        "{}",
        bad.detail
    );
    assert_eq!(bad.halt(), Some(HaltReason::BlockedPathModified));
    Ok(())
}

#[test]
fn a_test_that_disappears_fails_the_test_set_even_when_green() {
    let base = results(&[("a", Passed), ("b", Failed), ("c", Passed)]);
    let now = results(&[("a", Passed), ("b", Passed)]);
    let v = test_set(Some(&base), Some(&now), Expect::Detected);
    assert_eq!(v.state, GuardState::Fail);
    assert!(
        v.detail.contains("1 of 3") && v.detail.contains('c'),
        "{}",
        v.detail
    );
    assert_eq!(v.halt(), Some(HaltReason::MetricIntegrityViolation));
    let grown = results(&[("a", Passed), ("b", Passed), ("c", Passed), ("d", Passed)]);
    assert_eq!(
        test_set(Some(&base), Some(&grown), Expect::Detected).state,
        GuardState::Pass
    );
    assert_eq!(
        test_set(None, Some(&grown), Expect::Detected).state,
        GuardState::NotRun
    );
}

#[test]
fn tap_tests_are_known_by_description_so_an_added_test_loses_nothing() {
    let base = results(&[("1 adds", Passed), ("2 subtracts", Failed)]);
    let now = results(&[
        ("1 multiplies", Passed),
        ("2 adds", Passed),
        ("3 subtracts", Passed),
    ]);
    assert_eq!(
        test_set(Some(&base), Some(&now), Expect::Detected).state,
        GuardState::Pass
    );
    let fewer = results(&[("1 adds", Passed)]);
    let v = test_set(Some(&base), Some(&fewer), Expect::Detected);
    assert_eq!(v.state, GuardState::Fail);
    assert!(v.detail.ends_with("subtracts"), "{}", v.detail);
}

#[test]
fn more_skips_than_the_base_fail() {
    let base = results(&[("a", Passed), ("b", Skipped)]);
    let same = results(&[("a", Passed), ("b", Skipped)]);
    assert_eq!(
        skipped(Some(&base), Some(&same), Expect::Detected).state,
        GuardState::Pass
    );
    let more = results(&[("a", Skipped), ("b", Skipped)]);
    let v = skipped(Some(&base), Some(&more), Expect::Detected);
    assert_eq!(v.state, GuardState::Fail);
    assert!(v.detail.contains("newly skipped: a"), "{}", v.detail);
}

#[test]
fn a_guard_that_cannot_evaluate_fails_closed() {
    let base = results(&[("a", Passed), ("b", Skipped)]);
    // The base parsed, the candidate did not (an appended log, a broken report): the guards
    // cannot see lost or skipped tests, so they fail, whatever the expectation.
    for expect in [Expect::Detected, Expect::Required] {
        for v in [
            test_set(Some(&base), None, expect),
            skipped(Some(&base), None, expect),
        ] {
            assert_eq!(v.state, GuardState::Fail, "{v:?}");
            assert!(v.detail.contains("failing closed"), "{}", v.detail);
            assert_eq!(v.halt(), Some(HaltReason::MetricIntegrityViolation));
        }
    }
    // A configured format that parsed on neither side fails too.
    assert_eq!(
        test_set(None, None, Expect::Required).state,
        GuardState::Fail
    );
    // Nothing was ever expected to parse: not run, never passed.
    assert_eq!(
        test_set(None, None, Expect::Detected).state,
        GuardState::NotRun
    );
    assert_eq!(
        skipped(Some(&base), None, Expect::Never).state,
        GuardState::NotRun
    );
}

#[test]
fn deleting_an_assertion_in_a_test_file_fails_and_moving_one_does_not() -> Result<(), String> {
    let tests = PathSet::new(crate::config::DEFAULT_TEST_PATHS.iter().copied())?;
    let before = "def test_a():\n    assert f() == 1\n    assert g() == 2\n";
    let weaker = "def test_a():\n    assert f() == 1\n";
    let v = assertions(
        &[FileTexts {
            path: "tests/test_f.py".into(),
            before: Some(before.into()),
            after: Some(weaker.into()),
        }],
        &tests,
    );
    assert_eq!(v.state, GuardState::Fail, "{}", v.detail);
    assert!(v.detail.contains("2 → 1 assertions"), "{}", v.detail);
    // Moving an assertion to another test file keeps the total.
    let moved = assertions(
        &[
            FileTexts {
                path: "tests/test_f.py".into(),
                before: Some(before.into()),
                after: Some(weaker.into()),
            },
            FileTexts {
                path: "tests/test_g.py".into(),
                before: None,
                after: Some("def test_g():\n    assert g() == 2\n".into()),
            },
        ],
        &tests,
    );
    assert_eq!(moved.state, GuardState::Pass, "{}", moved.detail);
    // Deleting a whole test file loses its assertions.
    let deleted = assertions(
        &[FileTexts {
            path: "pkg/x_test.go".into(),
            before: Some("func TestX(t *testing.T) { t.Fatal(\"x\") }\n".into()),
            after: None,
        }],
        &tests,
    );
    assert_eq!(deleted.state, GuardState::Fail);
    // Inline Rust unit tests count; a source file without tests does not.
    let inline = assertions(
        &[
            FileTexts {
                path: "src/lib.rs".into(),
                before: Some("#[test]\nfn a() { assert_eq!(1, 1); }\n".into()),
                after: Some("#[test]\n#[ignore]\nfn a() { assert_eq!(1, 1); }\n".into()),
            },
            FileTexts {
                path: "src/main.rs".into(),
                before: Some("fn main() { assert!(x); }".into()),
                after: Some("fn main() {}".into()),
            },
        ],
        &tests,
    );
    assert_eq!(inline.state, GuardState::Fail, "{}", inline.detail);
    assert!(
        inline.detail.contains("0 → 1 skip markers"),
        "{}",
        inline.detail
    );
    // Uncovered languages are said, not silently passed as counted.
    let shell = assertions(
        &[FileTexts {
            path: "tests/check.sh".into(),
            before: Some("test 1 = 1".into()),
            after: None,
        }],
        &tests,
    );
    assert_eq!(shell.state, GuardState::Pass);
    assert!(
        shell
            .detail
            .contains("no changed test file in a covered language")
    );
    Ok(())
}
