//! cargo-nextest: its human status lines (`        PASS [   0.004s] (1/5) alpha tests::x`), and
//! `--message-format libtest-json` (test names `crate::binary$test::path`).
//!
//! A status line has its status right-aligned in twelve columns, then ` [`: that anchor keeps
//! the libtest output nextest echoes (indented) and arbitrary test output from matching.
//! Detection needs nextest's `Starting … across … binaries` or `Summary [` line. A test's last
//! line wins: `TRY 1 FAIL` then `TRY 2 PASS` is passed (nextest calls it flaky).
//!
//! When both streams are captured with `--message-format libtest-json`, the status lines win
//! over the JSON (which names a crate's lib and its bin of the same name alike). When the
//! `Summary` line counts more passed or failed tests than the status lines name
//! (`--status-level fail`), the output is partial and not parsed.

use std::collections::HashMap;

use serde::Deserialize;

use super::text::{count, lines};
use super::{Mode, TestResult, TestState};

pub(super) fn parse(text: &str, mode: Mode) -> Option<Vec<TestResult>> {
    let mut human = Vec::new();
    let mut json = Vec::new();
    let mut framed = false;
    let mut summary: Option<Totals> = None;
    for line in lines(text) {
        if is_frame(line) {
            framed = true;
            if let Some(totals) = summary_totals(line) {
                summary = Some(totals);
            }
        } else if line.starts_with('{') {
            json.extend(json_result(line));
        } else if let Some(result) = status_line(line) {
            human.push(result);
        }
    }
    let recognised = match mode {
        Mode::Detect => framed || !json.is_empty(),
        Mode::Forced => framed || !human.is_empty() || !json.is_empty(),
    };
    if !recognised {
        return None;
    }
    // With `--message-format libtest-json` and both streams captured, every test is reported
    // twice: on stderr by its binary id, in the JSON on stdout by a name that does not tell a
    // crate's lib from its bin of the same name. The status lines win.
    let out = if human.is_empty() { json } else { human };
    if let Some(totals) = summary
        && totals.exceeds(&out)
    {
        return None;
    }
    Some(out)
}

/// The `passed` and `failed` counts of the `Summary` line.
struct Totals {
    passed: usize,
    failed: usize,
}

impl Totals {
    /// Whether the summary counts more passed or failed tests than the status lines name
    /// (`--status-level fail` lists only failures): a partial list would shrink the collected
    /// set, so such output is not parsed. A test's last line decides its state.
    fn exceeds(&self, reports: &[TestResult]) -> bool {
        let mut last: HashMap<&str, TestState> = HashMap::new();
        for report in reports {
            last.insert(&report.id, report.state);
        }
        let named = |state| last.values().filter(|s| **s == state).count();
        named(TestState::Passed) < self.passed || named(TestState::Failed) < self.failed
    }
}

/// `     Summary [   0.298s] 7 tests run: 5 passed (1 flaky), 2 failed, 1 skipped`.
fn summary_totals(line: &str) -> Option<Totals> {
    let (_, counts) = line.strip_prefix("     Summary [")?.split_once(" run: ")?;
    let mut totals = Totals {
        passed: 0,
        failed: 0,
    };
    for part in counts.split(", ") {
        let mut words = part.split_whitespace();
        let (Some(n), Some(word)) = (words.next(), words.next()) else {
            continue;
        };
        let Some(n) = count(n) else {
            continue;
        };
        match word {
            "passed" => totals.passed += n,
            "failed" => totals.failed += n,
            _ => {}
        }
    }
    Some(totals)
}

/// nextest's run framing: the `Starting` and `Summary` lines.
fn is_frame(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix("    Starting ") {
        return rest.contains(" across ")
            && (rest.contains(" binary") || rest.contains(" binaries"));
    }
    if let Some(rest) = line.strip_prefix("     Summary [") {
        return rest.contains(" run: ") || rest.contains(" run:");
    }
    false
}

/// `{status:>12} [duration] (counter) binary-id test-name`.
fn status_line(line: &str) -> Option<TestResult> {
    let field = line.get(..12)?;
    let rest = line.get(12..)?.strip_prefix(" [")?;
    let status = field.trim_start();
    let status_chars = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b" +-/".contains(&b);
    if status.is_empty() || !status.bytes().all(status_chars) {
        return None;
    }
    let (bracket, rest) = rest.split_once("] ")?;
    let state = status_state(status, bracket)?;
    let mut rest = rest.trim_start();
    // The counter `(1/5)` or `(───)`, and a stress index, if shown.
    while rest.starts_with('(') {
        rest = rest.split_once(") ")?.1.trim_start();
    }
    let (binary, test) = rest.split_once(' ')?;
    let test = test.trim();
    if binary.is_empty() || test.is_empty() {
        return None;
    }
    Some(TestResult {
        id: format!("{binary} {test}"),
        state,
    })
}

fn status_state(status: &str, bracket: &str) -> Option<TestState> {
    match status {
        "PASS" | "LEAK" | "SLOW + LEAK" => return Some(TestState::Passed),
        // `SLOW [> 60.000s]` is a warning while the test runs; a final `SLOW` passed.
        "SLOW" => return (!bracket.trim_start().starts_with('>')).then_some(TestState::Passed),
        "SKIP" => return Some(TestState::Skipped),
        "FAIL" | "FAIL + LEAK" | "LEAK-FAIL" | "TIMEOUT" | "XFAIL" | "ABORT" => {
            return Some(TestState::Failed);
        }
        _ => {}
    }
    if status.starts_with("FLAKY ") {
        return Some(TestState::Passed);
    }
    if let Some(rest) = status.strip_prefix("TRY ") {
        let (attempt, outcome) = rest.split_once(' ')?;
        if !attempt.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return Some(match outcome {
            "PASS" | "LEAK" => TestState::Passed,
            _ => TestState::Failed,
        });
    }
    if status.starts_with("SIG") || status.starts_with("ABORT ") {
        return Some(TestState::Failed);
    }
    None
}

#[derive(Deserialize)]
struct JsonEvent {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    name: Option<String>,
}

/// A libtest-json test event whose name is nextest's `binary$test`.
fn json_result(line: &str) -> Option<TestResult> {
    let event: JsonEvent = serde_json::from_str(line).ok()?;
    if event.kind != "test" {
        return None;
    }
    let name = event.name?;
    let (binary, test) = name.split_once('$')?;
    let state = match event.event.as_str() {
        "ok" => TestState::Passed,
        "failed" => TestState::Failed,
        "ignored" => TestState::Skipped,
        _ => return None,
    };
    Some(TestResult {
        id: format!("{binary} {test}"),
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::super::{Format, TestState, parse};

    fn states(text: &str, format: Option<Format>) -> Vec<(String, TestState)> {
        let results = parse(text.as_bytes(), format).unwrap();
        assert_eq!(results.format, Format::Nextest);
        results.tests.into_iter().map(|t| (t.id, t.state)).collect()
    }

    fn owned(want: &[(&str, TestState)]) -> Vec<(String, TestState)> {
        want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect()
    }

    #[test]
    fn default_run() {
        let want = owned(&[
            ("alpha tests::it_adds", TestState::Passed),
            ("alpha tests::it_fails", TestState::Failed),
            ("alpha tests::it_panics", TestState::Passed),
            ("alpha::cli it_adds", TestState::Passed),
            ("beta::bin/beta tests::it_adds", TestState::Passed),
        ]);
        assert_eq!(states(samples::NEXTEST, None), want);
        assert_eq!(states(samples::NEXTEST, Some(Format::Nextest)), want);
    }

    #[test]
    fn retries_signals_and_skips() {
        assert_eq!(
            states(samples::NEXTEST_RETRIES, None),
            owned(&[
                ("alpha flaky::segv", TestState::Failed),
                ("alpha flaky::sometimes", TestState::Passed),
                ("alpha tests::it_adds", TestState::Passed),
                ("alpha tests::it_fails", TestState::Failed),
                ("alpha tests::it_is_slow", TestState::Skipped),
                ("alpha tests::it_panics", TestState::Passed),
                ("alpha::cli it_adds", TestState::Passed),
                ("beta::bin/beta tests::it_adds", TestState::Passed),
            ])
        );
    }

    #[test]
    fn older_lines_without_counter_and_other_statuses() {
        let text = "    Starting 6 tests across 2 binaries\n\
                    \x20       PASS [   0.004s] core parse::ok\n\
                    \x20       SLOW [>  60.000s] core slow::one\n\
                    \x20       SLOW [  61.002s] core slow::one\n\
                    \x20    TIMEOUT [ 120.001s] core slow::two\n\
                    ABORT SIG 99 [   0.010s] core weird\n\
                    \x20  LEAK-FAIL [   0.100s] core leaky\n\
                    \x20       LEAK [   0.100s] core leaky_ok\n\
                    \x20 SETUP PASS [   0.100s] db-setup: ./setup.sh\n\
                    \x20           PASS [   0.1s] indented echo\n\
                    \x20    Summary [ 181.000s] 6 tests run: 3 passed, 3 failed\n";
        assert_eq!(
            states(text, None),
            owned(&[
                ("core leaky", TestState::Failed),
                ("core leaky_ok", TestState::Passed),
                ("core parse::ok", TestState::Passed),
                ("core slow::one", TestState::Passed),
                ("core slow::two", TestState::Failed),
                ("core weird", TestState::Failed),
            ])
        );
    }

    #[test]
    fn status_level_fail_is_partial_and_not_parsed() {
        // The summary counts 4 passed tests that no line names (found by running nextest).
        assert_eq!(parse(samples::NEXTEST_STATUS_FAIL.as_bytes(), None), None);
        assert_eq!(
            parse(
                samples::NEXTEST_STATUS_FAIL.as_bytes(),
                Some(Format::Nextest)
            ),
            None
        );
    }

    #[test]
    fn merged_libtest_json_reports_each_test_once_by_binary_id() {
        // Both streams captured: the status lines win over the JSON, whose `calc::calc` names
        // both the lib and the bin (found by running nextest with stderr merged).
        let want = owned(&[
            ("calc tests::adds", TestState::Passed),
            ("calc tests::panics", TestState::Passed),
            ("calc tests::subtracts", TestState::Failed),
            ("calc::bin/calc tests::runs", TestState::Passed),
            ("calc::cli it_adds", TestState::Passed),
            ("calc::cli it_subtracts", TestState::Failed),
        ]);
        assert_eq!(states(samples::NEXTEST_LIBTEST_JSON_MERGED, None), want);
        assert_eq!(
            states(samples::NEXTEST_LIBTEST_JSON_MERGED, Some(Format::Nextest)),
            want
        );
    }

    #[test]
    fn libtest_json_message_format() {
        assert_eq!(
            states(samples::NEXTEST_LIBTEST_JSON, None),
            owned(&[
                ("alpha::alpha tests::it_adds", TestState::Passed),
                ("alpha::alpha tests::it_fails", TestState::Failed),
                ("alpha::alpha tests::it_is_slow", TestState::Skipped),
                ("alpha::alpha tests::it_panics", TestState::Passed),
                ("alpha::cli it_adds", TestState::Passed),
                ("beta::beta tests::it_adds", TestState::Passed),
            ])
        );
    }
}
