//! cargo-nextest: its human status lines (`        PASS [   0.004s] (1/5) alpha tests::x`), and
//! `--message-format libtest-json` (test names `crate::binary$test::path`).
//!
//! A status line has its status right-aligned in twelve columns, then ` [`: that anchor keeps
//! the libtest output nextest echoes (indented) and arbitrary test output from matching.
//! Detection needs nextest's `Starting … across … binaries` or `Summary [` line. A test's last
//! line wins: `TRY 1 FAIL` then `TRY 2 PASS` is passed (nextest calls it flaky).

use serde::Deserialize;

use super::text::lines;
use super::{Mode, TestResult, TestState};

pub(super) fn parse(text: &str, mode: Mode) -> Option<Vec<TestResult>> {
    let mut out = Vec::new();
    let mut framed = false;
    let mut json = false;
    for line in lines(text) {
        if is_frame(line) {
            framed = true;
        } else if line.starts_with('{') {
            if let Some(result) = json_result(line) {
                json = true;
                out.push(result);
            }
        } else if let Some(result) = status_line(line) {
            out.push(result);
        }
    }
    let recognised = match mode {
        Mode::Detect => framed || json,
        Mode::Forced => framed || !out.is_empty(),
    };
    recognised.then_some(out)
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
