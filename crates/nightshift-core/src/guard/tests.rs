use super::*;
use crate::check::results::{Format, TestResult, TestState};
use std::collections::BTreeSet;

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
        counted: None,
    }
}

/// A failures-only pytest listing (plain `pytest`): the failing ids and the runner's counts.
fn listing(failing: &[&str], passed: usize, skipped: usize) -> Results {
    Results {
        tests: failing
            .iter()
            .map(|id| TestResult {
                id: (*id).to_owned(),
                state: TestState::Failed,
            })
            .collect(),
        format: Format::Pytest,
        counted: Some(crate::check::results::Counted {
            passed,
            failed: failing.len(),
            errors: 0,
            skipped,
        }),
    }
}

use TestState::{Failed, Passed, Skipped};

#[test]
fn a_failures_only_listing_is_compared_by_count_never_read_as_removed_tests() {
    // Red at the base (one failing of five), green now (five passed): nothing is gone,
    // although the candidate names no test at all.
    let base = listing(&["test.py::T::test_a"], 4, 0);
    let now = listing(&[], 5, 0);
    let verdict = test_set(Some(&base), Some(&now), Expect::Detected);
    assert_eq!(verdict.state, GuardState::Pass, "{}", verdict.detail);
    assert!(verdict.detail.contains("by count"), "{}", verdict.detail);
    // A test deleted: four ran where five did.
    let fewer = listing(&[], 4, 0);
    let verdict = test_set(Some(&base), Some(&fewer), Expect::Detected);
    assert_eq!(verdict.state, GuardState::Fail, "{}", verdict.detail);
    assert!(
        verdict.detail.contains("5 tests ran at the base, 4 now"),
        "{}",
        verdict.detail
    );
    // A complete listing now (`-v` added to the check): the base's failing test must be in it.
    let complete = Results {
        format: Format::Pytest,
        ..results(&[
            ("test.py::T::test_b", Passed),
            ("test.py::T::test_c", Passed),
            ("test.py::T::test_d", Passed),
            ("test.py::T::test_e", Passed),
            ("test.py::T::test_f", Passed),
        ])
    };
    let verdict = test_set(Some(&base), Some(&complete), Expect::Detected);
    assert_eq!(verdict.state, GuardState::Fail, "{}", verdict.detail);
    assert!(
        verdict.detail.contains("test.py::T::test_a"),
        "{}",
        verdict.detail
    );
    // Skips are counted from the runner's totals.
    let skipping = listing(&[], 4, 1);
    let verdict = skipped(Some(&base), Some(&skipping), Expect::Detected);
    assert_eq!(verdict.state, GuardState::Fail, "{}", verdict.detail);
    assert!(
        verdict.detail.contains("1 tests skipped, 0 at the base"),
        "{}",
        verdict.detail
    );
    let verdict = skipped(Some(&base), Some(&now), Expect::Detected);
    assert_eq!(verdict.state, GuardState::Pass, "{}", verdict.detail);
}

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
        &BTreeSet::new(),
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
        &BTreeSet::new(),
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
        &BTreeSet::new(),
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
        &BTreeSet::new(),
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
        &BTreeSet::new(),
    );
    assert_eq!(shell.state, GuardState::Pass);
    assert!(
        shell
            .detail
            .contains("no changed test file in a covered language")
    );
    Ok(())
}

#[test]
fn helper_assertions_and_test_files_named_by_the_results_are_counted() -> Result<(), String> {
    let tests = PathSet::new(crate::config::DEFAULT_TEST_PATHS.iter().copied())?;
    // A Rust helper call, not a macro: its deletion is a deleted assertion.
    let rust_before = "#[test]\nfn parses() {\n    assert_to_string(\"1.2.3\", \"1.2.3\");\n    assert_to_string(\"1.2.3+4ÿ\", \"1.2.3+4ÿ\");\n}\nfn assert_to_string(a: &str, b: &str) { assert_eq!(v(a).to_string(), b); }\n";
    let rust_after = "#[test]\nfn parses() {\n    assert_to_string(\"1.2.3\", \"1.2.3\");\n}\nfn assert_to_string(a: &str, b: &str) { assert_eq!(v(a).to_string(), b); }\n";
    let v = assertions(
        &[FileTexts {
            path: "tests/version.rs".into(),
            before: Some(rust_before.into()),
            after: Some(rust_after.into()),
        }],
        &tests,
        &BTreeSet::new(),
    );
    assert_eq!(v.state, GuardState::Fail, "{}", v.detail);
    assert!(v.detail.contains("3 → 2 assertions"), "{}", v.detail);

    // `test.py` matches no default pattern; the results name it, and its content says so.
    let py_before = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(), '你好')\n        self.assertEqual(g(), 2)\n        with self.assertRaises(ValueError): h()\n";
    let py_after = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        with self.assertRaises(ValueError): h()\n";
    let file = || FileTexts {
        path: "test.py".into(),
        before: Some(py_before.into()),
        after: Some(py_after.into()),
    };
    assert!(!tests.is_match("test.py"));
    let named = BTreeSet::from(["test.py".to_owned()]);
    let v = assertions(&[file()], &PathSet::empty(), &named);
    assert_eq!(v.state, GuardState::Fail, "{}", v.detail);
    assert!(v.detail.contains("3 → 1 assertions"), "{}", v.detail);
    let v = assertions(&[file()], &PathSet::empty(), &BTreeSet::new());
    assert_eq!(v.state, GuardState::Fail, "by content: {}", v.detail);
    // A results file name matches as a path suffix (a crate's root inside a workspace).
    let v = assertions(
        &[FileTexts {
            path: "crates/semver/tests/cli.rs".into(),
            before: Some("fn t() { check(1); assert_ok(2); }\n".into()),
            after: Some("fn t() { check(1); }\n".into()),
        }],
        &PathSet::empty(),
        &BTreeSet::from(["tests/cli.rs".to_owned()]),
    );
    assert_eq!(v.state, GuardState::Fail, "{}", v.detail);
    Ok(())
}

mod fuzz {
    //! No file text, path, glob or result set an agent can produce panics a guard. Bounded
    //! (`PROPTEST_CASES` raises it).
    use super::*;
    use proptest::prelude::*;

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

    /// Test-file text: assertion and skip forms, non-ASCII text, comments, any character.
    fn code() -> impl Strategy<Value = String> {
        const WORDS: &[&str] = &[
            "assert",
            "assert!(",
            "assert_eq!(",
            "assert_to_string(",
            "self.assert",
            "assertEqual(",
            "pytest.raises(",
            "expect(",
            ".should.",
            "should.",
            "t.Error(",
            "require.",
            "assert.",
            "#[test]",
            "#[ignore",
            "def test_",
            "fn ",
            "def ",
            "function ",
            "func ",
            "unittest.TestCase",
            "it.skip(",
            "t.Skip(",
            "//",
            "#",
            "/*",
            "*",
            "(",
            "!",
            "_",
            ".",
            " ",
            "\n",
            "\t",
            "ÿ",
            "1.2.3+4ÿ",
            "你好",
            "é",
            "\0",
            "\u{feff}",
            "\r",
        ];
        let piece = prop_oneof![
            4 => proptest::sample::select(WORDS).prop_map(str::to_owned),
            1 => any::<char>().prop_map(|c| c.to_string()),
        ];
        proptest::collection::vec(piece, 0..80).prop_map(|p| p.concat())
    }

    fn path() -> impl Strategy<Value = String> {
        const PARTS: &[&str] = &[
            "tests/",
            "src/",
            "test.py",
            "lib.rs",
            "x_test.go",
            "a.test.ts",
            "ÿ",
            "你好/",
            ".",
            "/",
            "..",
            "test_",
            ".py",
            ".rs",
            "",
            "*",
            "[",
            "{",
            "\\",
        ];
        proptest::collection::vec(proptest::sample::select(PARTS), 0..6).prop_map(|p| p.concat())
    }

    fn results_of() -> impl Strategy<Value = Option<Results>> {
        let id = prop_oneof![
            any::<String>(),
            Just("1 adds".to_owned()),
            Just("c@doc src/lib.rs - f (line 3)".to_owned()),
            Just("test.py::T::test_a[ÿ]".to_owned()),
        ];
        let state = prop_oneof![Just(Passed), Just(Failed), Just(Skipped)];
        let format = proptest::sample::select(
            &[
                Format::Tap,
                Format::Libtest,
                Format::JunitXml,
                Format::Pytest,
                Format::Nextest,
                Format::GoTestJson,
            ][..],
        );
        let counted = proptest::option::of((0..4usize, 0..4usize, 0..3usize, 0..4usize).prop_map(
            |(passed, failed, errors, skipped)| crate::check::results::Counted {
                passed,
                failed,
                errors,
                skipped,
            },
        ));
        proptest::option::of(
            (
                proptest::collection::vec((id, state), 0..6),
                format,
                counted,
            )
                .prop_map(|(tests, format, counted)| Results {
                    tests: tests
                        .into_iter()
                        .map(|(id, state)| TestResult { id, state })
                        .collect(),
                    format,
                    counted,
                }),
        )
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn counting_any_text_never_panics(text in code(), raw in any::<String>()) {
            for language in [Language::Rust, Language::Python, Language::JavaScript, Language::Go] {
                let _ = assertions::count(language, &text);
                let _ = assertions::count(language, &raw);
                let _ = assertions::holds_tests(language, &text);
            }
        }

        #[test]
        fn the_guards_judge_any_change(
            files in proptest::collection::vec(
                (path(), proptest::option::of(code()), proptest::option::of(code())),
                0..5,
            ),
            globs in proptest::collection::vec(path(), 0..4),
            named in proptest::collection::btree_set(path(), 0..3),
            base in results_of(),
            now in results_of(),
        ) {
            let texts: Vec<FileTexts> = files
                .iter()
                .map(|(path, before, after)| FileTexts {
                    path: path.clone(),
                    before: before.clone(),
                    after: after.clone(),
                })
                .collect();
            let set = PathSet::new(globs.iter().map(String::as_str)).unwrap_or_else(|_| PathSet::empty());
            let _ = assertions(&texts, &set, &named);
            let changes: Vec<Change> = files
                .iter()
                .map(|(path, _, after)| Change { path: path.clone(), deleted: after.is_none() })
                .collect();
            let _ = blocked_paths(&changes, &set);
            for expect in [Expect::Detected, Expect::Required, Expect::Never] {
                let _ = test_set(base.as_ref(), now.as_ref(), expect);
                let _ = skipped(base.as_ref(), now.as_ref(), expect);
            }
        }
    }
}
