//! Property tests: no bytes a check (or the agent that wrote it) can print make a parser,
//! the stable-id and test-file helpers or the progress judgement panic. Bounded so that the
//! whole module runs in a few seconds under `cargo test`; `PROPTEST_CASES` raises it for a
//! longer local run.
//!
//! Three sources of input: arbitrary bytes; lines built from the formats' own vocabulary
//! (framing words, ids, non-ASCII text, NUL, CR, invalid UTF-8) so the parsers' deep paths
//! are reached; and the recorded real outputs of `samples.rs` with bytes spliced in at any
//! offset, mid-character included.

use proptest::prelude::*;

use super::samples::*;
use super::*;

/// Fragments every parser looks for, and some that break assumptions.
const VOCABULARY: &[&str] = &[
    "test ",
    " ... ",
    "ok",
    "FAILED",
    "ignored",
    "running 3 tests",
    "running 1 test",
    "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
    "test result: FAILED. 1 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out",
    "failures:",
    "---- ",
    " stdout ----",
    "     Running ",
    "unittests src/lib.rs (target/debug/deps/a-1)",
    "   Doc-tests ",
    "src/lib.rs - Version::cmp (line 433)",
    " - should panic",
    " (line ",
    ")",
    "{\"type\":\"test\",\"event\":\"started\",\"name\":\"a\"}",
    "{\"type\":\"suite\",\"event\":\"ok\"}",
    "        PASS [   0.004s] ",
    "        FAIL [",
    "        SKIP [",
    "     Summary [",
    "TRY 2 PASS",
    "        START ",
    "alpha tests::it_adds",
    "tests passed",
    " tests run: ",
    "$",
    "::",
    "tests/test_x.py::test_a",
    "[gw0] [ 50%] ",
    " PASSED",
    " FAILED",
    " SKIPPED",
    " XFAIL",
    " ERROR",
    "[ 50%]",
    "[",
    "]",
    " - ",
    "===",
    "= 3 failed, 4 passed in 0.11s =",
    "1 failed, 4 passed, 2 skipped, 1 error in 0.10s",
    "5 passed in 0.01s",
    "test.py F..                                                              [ 60%]",
    "..Fs.E   [100%]",
    "============================= test session starts ==============================",
    "FAILED test.py::GreetTest::test_chinese - AssertionError: '你好, 世界' != '你...",
    "passed",
    "in 0.1s",
    "collected 3 items",
    "SKIPPED [2] tests/x.py:9: reason",
    "TAP version 13",
    "1..3",
    "1..0 # skip",
    "ok 1 - adds",
    "not ok 2 - subs # TODO later",
    "ok 3 # SKIP",
    "Bail out!",
    "    ok 1 - inner",
    "  ---",
    "  ...",
    "\\#",
    "#",
    "t/a.t .. ",
    "<?xml version=\"1.0\"?>",
    "<testsuites>",
    "<testsuite name=\"s\" tests=\"2\">",
    "<testcase classname=\"c\" name=\"n\">",
    "</testcase>",
    "<failure message=\"&lt;x\"/>",
    "<skipped/>",
    "</testsuite>",
    "</testsuites>",
    "<![CDATA[",
    "]]>",
    "&#x1F600;",
    "&amp;",
    "&",
    "<!--",
    "-->",
    "<!DOCTYPE x [",
    "=\"",
    "'",
    "{\"Time\":\"2026-01-01T00:00:00Z\",\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"TestA\"}",
    "{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestA/sub\"}",
    "{\"Action\":\"output\",\"Output\":\"x\"}",
    "{\"Action\":\"pass\",\"Package\":\"p\"}",
    "{\"Action\":\"skip\"",
    "FAIL\tp [build failed]",
    "ÿ",
    "1.2.3+4ÿ",
    "你好，世界",
    "名前",
    "é",
    "\u{feff}",
    "\u{1b}[31m",
    "\u{1b}]0;t\u{7}",
    "\u{fffd}",
    "\0",
    "\r",
    "\r\n",
    "\n",
    "\n\n",
    "\t",
    " ",
    "    ",
    "0",
    "99999999999999999999",
];

/// A check output built from the vocabulary, random characters and raw bytes.
fn output() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        6 => proptest::sample::select(VOCABULARY).prop_map(|s| s.as_bytes().to_vec()),
        2 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 1..4),
    ];
    proptest::collection::vec(piece, 0..120).prop_map(|pieces| pieces.concat())
}

const SAMPLES: &[&str] = &[
    PYTEST_V,
    PYTEST_RA,
    PYTEST_DEFAULT,
    PYTEST_COLLECTION_ERROR,
    PYTEST_JUNIT,
    SUREFIRE_JUNIT,
    CARGO_TEST,
    CARGO_TEST_STDOUT,
    CARGO_TEST_SIGSEGV,
    LIBTEST_JSON,
    NEXTEST,
    NEXTEST_RETRIES,
    NEXTEST_LIBTEST_JSON,
    GO_TEST_JSON,
    GO_TEST_JSON_BROKEN,
    TAP13,
    NODE_TAP,
    PROVE_VERBOSE,
    CARGO_TEST_QUIET,
    NEXTEST_STATUS_FAIL,
    NEXTEST_LIBTEST_JSON_MERGED,
    NEXTEST_JUNIT,
];

/// A real sample with up to eight splices: bytes inserted, replaced or cut at any offset.
fn mutated_sample() -> impl Strategy<Value = Vec<u8>> {
    let edit = (
        any::<prop::sample::Index>(),
        0usize..3,
        proptest::collection::vec(any::<u8>(), 0..6),
    );
    (
        proptest::sample::select(SAMPLES),
        proptest::collection::vec(edit, 1..8),
    )
        .prop_map(|(sample, edits)| {
            let mut bytes = sample.as_bytes().to_vec();
            for (at, kind, insert) in edits {
                let at = at.index(bytes.len() + 1);
                match kind {
                    0 => {
                        bytes.splice(at..at, insert);
                    }
                    1 => {
                        let end = (at + insert.len()).min(bytes.len());
                        bytes.splice(at..end, insert);
                    }
                    _ => {
                        let end = (at + 1 + insert.len()).min(bytes.len());
                        bytes.drain(at..end);
                    }
                }
            }
            bytes
        })
}

/// Every parser and the helpers over what they return.
fn exercise(bytes: &[u8]) {
    let formats = [
        None,
        Some(Format::JunitXml),
        Some(Format::Tap),
        Some(Format::Libtest),
        Some(Format::Nextest),
        Some(Format::Pytest),
        Some(Format::GoTestJson),
    ];
    for format in formats {
        if let Some(results) = parse(bytes, format) {
            let _ = results.stable_tests();
            let _ = results.collected_stable();
            let failing = results.failing_stable();
            let _ = results.test_files();
            let _ = results.stable_in(TestState::Skipped);
            let _ = results.skipped_count();
            let _ = assess(&[failing.clone(), results.failing_set(), failing], 2);
            let _ = crate::store::CheckSummary::of(&results);
        }
    }
}

fn config() -> ProptestConfig {
    // `PROPTEST_CASES` (read by the default config) overrides for a longer run.
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic_a_parser(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        exercise(&bytes);
    }

    #[test]
    fn runner_shaped_output_never_panics_a_parser(bytes in output()) {
        exercise(&bytes);
    }

    #[test]
    fn damaged_real_outputs_never_panic_a_parser(bytes in mutated_sample()) {
        exercise(&bytes);
    }

    #[test]
    fn progress_judges_any_history(
        history in proptest::collection::vec(
            proptest::collection::btree_set(proptest::sample::select(&["a", "b", "c", "ÿ", ""][..]), 0..4),
            0..8,
        ),
        k in 0usize..5,
    ) {
        let history: Vec<FailingSet> = history
            .into_iter()
            .map(|set| set.into_iter().map(str::to_owned).collect())
            .collect();
        let _ = assess(&history, k);
    }
}
