//! Detection, the public helpers, and adversarial inputs across all formats.

use super::*;

const ALL: [Format; 6] = [
    Format::JunitXml,
    Format::Tap,
    Format::Libtest,
    Format::Nextest,
    Format::Pytest,
    Format::GoTestJson,
];

/// Every recorded sample and the format it must be detected as (`None`: not parsed).
fn samples() -> Vec<(&'static str, &'static str, Option<Format>)> {
    use super::samples::*;
    vec![
        ("pytest -v", PYTEST_V, Some(Format::Pytest)),
        ("pytest -rA", PYTEST_RA, Some(Format::Pytest)),
        ("pytest default", PYTEST_DEFAULT, Some(Format::Pytest)),
        (
            "pytest collection error",
            PYTEST_COLLECTION_ERROR,
            Some(Format::Pytest),
        ),
        ("pytest junit", PYTEST_JUNIT, Some(Format::JunitXml)),
        ("surefire", SUREFIRE_JUNIT, Some(Format::JunitXml)),
        ("cargo test", CARGO_TEST, Some(Format::Libtest)),
        (
            "cargo test stdout",
            CARGO_TEST_STDOUT,
            Some(Format::Libtest),
        ),
        (
            "cargo test sigsegv",
            CARGO_TEST_SIGSEGV,
            Some(Format::Libtest),
        ),
        ("libtest json", LIBTEST_JSON, Some(Format::Libtest)),
        ("nextest", NEXTEST, Some(Format::Nextest)),
        ("nextest retries", NEXTEST_RETRIES, Some(Format::Nextest)),
        (
            "nextest libtest-json",
            NEXTEST_LIBTEST_JSON,
            Some(Format::Nextest),
        ),
        ("go test -json", GO_TEST_JSON, Some(Format::GoTestJson)),
        (
            "go test -json broken",
            GO_TEST_JSON_BROKEN,
            Some(Format::GoTestJson),
        ),
        ("tap13", TAP13, Some(Format::Tap)),
        ("node tap", NODE_TAP, Some(Format::Tap)),
        ("prove -v", PROVE_VERBOSE, Some(Format::Tap)),
        ("cargo test -q", CARGO_TEST_QUIET, None),
        ("nextest status-level fail", NEXTEST_STATUS_FAIL, None),
        (
            "nextest libtest-json merged",
            NEXTEST_LIBTEST_JSON_MERGED,
            Some(Format::Nextest),
        ),
        ("nextest junit", NEXTEST_JUNIT, Some(Format::JunitXml)),
    ]
}

#[test]
fn every_sample_is_detected_as_its_format() {
    for (label, text, want) in samples() {
        let got = parse(text.as_bytes(), None).map(|r| r.format);
        assert_eq!(got, want, "{label}");
    }
}

#[test]
fn detection_is_exclusive_so_its_order_does_not_decide() {
    // No detector but the right one claims a sample: the fixed order is a tie-breaker that
    // recorded output needs only where one report embeds another runner's: nextest's JUnit
    // carries each failed test's libtest output, whole, in `<system-out>`, and JUnit is tried
    // first.
    let embedded = [("nextest junit", Format::Libtest)];
    for (label, text, want) in samples() {
        for format in ALL {
            if Some(format) == want || embedded.contains(&(label, format)) {
                continue;
            }
            assert_eq!(
                parse_as(format, text, Mode::Detect),
                None,
                "{label} was claimed by {format}"
            );
        }
    }
}

#[test]
fn results_helpers() {
    let results = parse(samples::PYTEST_V.as_bytes(), None).unwrap();
    let failing_set = results.failing_set();
    let failing: Vec<&str> = failing_set.iter().collect();
    assert_eq!(
        failing,
        [
            "tests/test_math.py::TestThing::test_error",
            "tests/test_math.py::test_fixture_error",
            "tests/test_math.py::test_param[2]",
            "tests/test_math.py::test_sub",
        ]
    );
    assert_eq!(results.skipped_count(), 2);
    let collected = results.collected();
    assert_eq!(collected.len(), 10);
    assert!(collected.contains("tests/test_math.py::test_param[a b]"));
    // Tests are sorted by id and unique.
    let ids: Vec<&String> = results.tests.iter().map(|t| &t.id).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted);
}

#[test]
fn repeated_ids_merge_worst_first_except_nextest() {
    let reports = vec![
        TestResult {
            id: "a".into(),
            state: TestState::Failed,
        },
        TestResult {
            id: "a".into(),
            state: TestState::Passed,
        },
        TestResult {
            id: "b".into(),
            state: TestState::Passed,
        },
        TestResult {
            id: "b".into(),
            state: TestState::Skipped,
        },
    ];
    let worst = Results::from_reports(Format::Tap, reports.clone(), Merge::WorstWins);
    let states: Vec<TestState> = worst.tests.iter().map(|t| t.state).collect();
    assert_eq!(states, [TestState::Failed, TestState::Skipped]);
    let last = Results::from_reports(Format::Nextest, reports, Merge::LastWins);
    let states: Vec<TestState> = last.tests.iter().map(|t| t.state).collect();
    assert_eq!(states, [TestState::Passed, TestState::Skipped]);
}

#[test]
fn format_from_config() {
    for (name, format) in [
        ("junit", Format::JunitXml),
        ("tap", Format::Tap),
        ("libtest", Format::Libtest),
        ("nextest", Format::Nextest),
        ("pytest", Format::Pytest),
        ("go-test-json", Format::GoTestJson),
    ] {
        assert_eq!(Format::from_config(name), Ok(FormatChoice::Fixed(format)));
        assert_eq!(format.as_str(), name);
        assert_eq!(
            serde_json::to_value(format).unwrap(),
            serde_json::Value::String(name.into())
        );
    }
    assert_eq!(Format::from_config("auto"), Ok(FormatChoice::Auto));
    assert_eq!(Format::from_config("exit-code"), Ok(FormatChoice::ExitCode));
    let error = Format::from_config("JUnit").unwrap_err();
    assert_eq!(
        error.to_string(),
        "unknown check format `JUnit`: expected one of junit, tap, libtest, nextest, pytest, \
         go-test-json, auto, exit-code"
    );
}

#[test]
fn format_choice_parses_as_configured() {
    let tap = samples::TAP13.as_bytes();
    assert_eq!(
        FormatChoice::Auto.parse(tap).map(|r| r.format),
        Some(Format::Tap)
    );
    assert_eq!(FormatChoice::ExitCode.parse(tap), None);
    assert_eq!(
        FormatChoice::Fixed(Format::Tap)
            .parse(tap)
            .map(|r| r.format),
        Some(Format::Tap)
    );
    // A fixed format never falls back to another one.
    assert_eq!(FormatChoice::Fixed(Format::Pytest).parse(tap), None);
}

#[test]
fn results_round_trip_through_json() {
    let results = parse(samples::GO_TEST_JSON.as_bytes(), None).unwrap();
    let json = serde_json::to_string(&results).unwrap();
    assert!(json.contains(r#""format":"go-test-json""#), "{json}");
    assert!(json.contains(r#""state":"failed""#), "{json}");
    let back: Results = serde_json::from_str(&json).unwrap();
    assert_eq!(back, results);
}

#[test]
fn colour_codes_do_not_hide_results() {
    let coloured = samples::NEXTEST
        .replace("        PASS", "\u{1b}[32;1m        PASS\u{1b}[0m")
        .replace("        FAIL", "\u{1b}[31;1m        FAIL\u{1b}[0m");
    let plain = parse(samples::NEXTEST.as_bytes(), None).unwrap();
    assert_eq!(parse(coloured.as_bytes(), None), Some(plain));
}

#[test]
fn nothing_parses_from_empty_or_blank_output() {
    for text in ["", "\n", "   \n\n\t\n", "\r\n"] {
        assert_eq!(parse(text.as_bytes(), None), None, "{text:?}");
        for format in ALL {
            assert_eq!(parse(text.as_bytes(), Some(format)), None, "{format}");
        }
    }
}

#[test]
fn binary_garbage_parses_to_nothing() {
    // A deterministic pseudo-random byte stream (xorshift), with NULs and invalid UTF-8.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..1 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    assert_eq!(parse(&bytes, None), None);
    for format in ALL {
        assert_eq!(parse(&bytes, Some(format)), None, "{format}");
    }
}

#[test]
fn ordinary_text_is_not_mistaken_for_a_format() {
    for text in [
        "ok\n",
        "ok\nok\nFAILED\n",
        "Everything is ok.\nBuild FAILED: 3 errors\n",
        "ok 1 - looks like tap but has no plan\nnot ok 2\n",
        "1..3 ranges are ok\nok then\n",
        "The plan:\n1..2\nok, first we fix it\nnot ok, that failed\n",
        "test result: ok\n",
        "FAILED tests/test_x.py::test_y - but no closing line\n",
        "3 passed in 0.50s\n",
        "== 1 failed, 2 passed in 0.50s ==\n",
        "PASS [   0.004s] alpha tests::x\nSummary: ok\n",
        "{\"level\":\"info\",\"msg\":\"ok\",\"Test\":\"TestX\"}\n",
        "We support <testsuite> and <testcase> tags.\n",
        "Writing report to <?xml version=\"1.0\"?> soon\n",
        "running 2 tests\nall ok\nFAILED\n",
    ] {
        assert_eq!(parse(text.as_bytes(), None), None, "{text:?}");
    }
}

#[test]
fn a_check_log_mentioning_runners_is_not_a_report() {
    let text = "$ make check\nrunning lint... ok\nrunning 3 tests? no, running the tests later\n\
                pytest: FAILED to start (exit 4)\nok 1 thing done\nSummary [ok] everything\n\
                make: *** [check] Error 1\n";
    assert_eq!(parse(text.as_bytes(), None), None);
}

/// A mixed output of every format's line shapes plus hostile ones, about `target` bytes.
fn hostile(target: usize) -> String {
    let chunk = concat!(
        "test tests::case_one ... ok\n",
        "test tests::case_two ... FAILED\n",
        "        PASS [   0.004s] (1/5) alpha tests::case\n",
        "tests/test_x.py::test_p[a [b] c PASSED d] PASSED [ 10%]\n",
        "FAILED tests/test_x.py::test_q[ - ] - boom - again\n",
        "ok 1 - tap point # SKIP\n",
        "not ok 2 - \\# escaped \\\\ # TODO\n",
        "{\"Action\":\"pass\",\"Package\":\"x/y\",\"Test\":\"TestZ\"}\n",
        "{\"type\":\"test\",\"event\":\"ok\",\"name\":\"a$b\"}\n",
        "<testcase name=\"n\" classname=\"c\"><failure/></testcase>\n",
        "&&&&&&&&&&;;;;;<<<<<>>>>>\n",
        "[[[[[[[[[[[[[[[[[[[[::::::::::: PASSED FAILED ERROR\n",
    );
    let mut text = String::with_capacity(target + chunk.len());
    while text.len() < target {
        text.push_str(chunk);
    }
    text
}

#[test]
fn fifty_megabytes_of_real_shaped_output_parse_completely() {
    // A cargo test run with a million tests: every one is found, under its binary key.
    let header = "     Running unittests src/lib.rs (target/debug/deps/big-0123456789abcdef)\n";
    let mut text = String::with_capacity(52 << 20);
    text.push_str(header);
    text.push_str("\nrunning 1000000 tests\n");
    let mut n = 0usize;
    while text.len() < 50 << 20 {
        let verdict = if n.is_multiple_of(1000) {
            "FAILED"
        } else {
            "ok"
        };
        text.push_str(&format!("test module::case_{n:07} ... {verdict}\n"));
        n += 1;
    }
    text.push_str("\ntest result: FAILED. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9.00s\n");
    let results = parse(text.as_bytes(), None).unwrap();
    assert_eq!(results.format, Format::Libtest);
    assert_eq!(results.tests.len(), n);
    assert_eq!(results.failing_set().len(), n.div_ceil(1000));
    assert!(
        results
            .failing_set()
            .contains("big@src/lib.rs module::case_0000000")
    );
}

#[test]
fn fifty_megabytes_of_hostile_output_terminate() {
    let text = hostile(50 << 20);
    // It is nobody's report as a whole, but each forced format reads its own lines.
    let tap = parse(text.as_bytes(), Some(Format::Tap)).unwrap();
    assert!(tap.tests.len() >= 2);
    let go = parse(text.as_bytes(), Some(Format::GoTestJson)).unwrap();
    assert_eq!(go.tests.len(), 1);
    // A stray `<testcase>` outside any suite is not a JUnit report.
    assert_eq!(parse(text.as_bytes(), Some(Format::JunitXml)), None);
}

/// A `cargo test` doc-test block whose code blocks sit at `lines` (`(item, line)`).
fn doc_tests(lines: &[(&str, u32)]) -> String {
    let mut out = format!("   Doc-tests semver\n\nrunning {} tests\n", lines.len());
    for (item, line) in lines {
        out.push_str(&format!("test src/lib.rs - {item} (line {line}) ... ok\n"));
    }
    out.push_str(&format!(
        "\ntest result: ok. {} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\n",
        lines.len()
    ));
    out
}

#[test]
fn doc_test_ids_survive_line_moves_and_a_deleted_doc_test_is_still_seen() {
    let parse = |lines: &[(&str, u32)]| -> BTreeSet<String> {
        parse(doc_tests(lines).as_bytes(), None)
            .map(|r| r.collected_stable())
            .unwrap_or_default()
    };
    let base = parse(&[
        ("Version::cmp_precedence", 433),
        ("Version::cmp_precedence", 440),
        ("Version::parse", 12),
    ]);
    assert_eq!(
        base.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "semver@doc src/lib.rs - Version::cmp_precedence (#1)",
            "semver@doc src/lib.rs - Version::cmp_precedence (#2)",
            "semver@doc src/lib.rs - Version::parse (#1)",
        ]
    );
    // An honest method added above: every line moves, no id does.
    let moved = parse(&[
        ("Version::cmp_precedence", 451),
        ("Version::cmp_precedence", 458),
        ("Version::parse", 12),
    ]);
    assert_eq!(moved, base);
    // One of the two doc-tests of an item deleted: an id is gone.
    let fewer = parse(&[("Version::cmp_precedence", 451), ("Version::parse", 12)]);
    assert_eq!(base.difference(&fewer).count(), 1);
    // Other ids are untouched, including one that merely mentions a line.
    let r = Results {
        tests: vec![TestResult {
            id: "tests::parses (line 3)".into(),
            state: TestState::Passed,
        }],
        format: Format::Libtest,
        counted: None,
    };
    assert_eq!(
        r.collected_stable().into_iter().collect::<Vec<_>>(),
        ["tests::parses (line 3)"]
    );
}

#[test]
fn the_files_tests_live_in_come_from_the_ids() {
    let results = |format, ids: &[&str]| Results {
        tests: ids
            .iter()
            .map(|id| TestResult {
                id: (*id).to_owned(),
                state: TestState::Passed,
            })
            .collect(),
        format,
        counted: None,
    };
    let py = results(
        Format::Pytest,
        &[
            "test.py::TestParse::test_cjk",
            "tests/test_a.py::test_b[1-2]",
        ],
    );
    assert_eq!(
        py.test_files().into_iter().collect::<Vec<_>>(),
        ["test.py", "tests/test_a.py"]
    );
    let rs = results(
        Format::Libtest,
        &[
            "semver@src/lib.rs tests::parses",
            "cli@tests/cli.rs it_runs",
            "semver@doc src/lib.rs - Version::cmp (line 433)",
            "bare::path",
        ],
    );
    assert_eq!(
        rs.test_files().into_iter().collect::<Vec<_>>(),
        ["src/lib.rs", "tests/cli.rs"]
    );
}
