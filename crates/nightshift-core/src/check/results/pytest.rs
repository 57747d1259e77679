//! pytest's terminal output: `-v` lines (`tests/x.py::t PASSED   [ 50%]`), pytest-xdist's
//! (`[gw0] [ 50%] PASSED tests/x.py::t`), and the short summary (`-rA`: `PASSED tests/x.py::t`,
//! `FAILED tests/x.py::t - msg`, `ERROR tests/x.py - ImportError`).
//!
//! The closing line (`== 3 failed, 4 passed, 1 skipped in 0.11s ==`, or the same without the
//! bars under `-q`) is required when detecting, and checked whenever present. When it counts
//! more passed tests than the output names but every failed and erroring test is named (in
//! the short summary, as pytest's default output does), the output is a failures-only
//! listing: the named tests and the closing line's counts ([`Counted`]). When it counts more
//! failures than are named (`-rN`, or a summary cut short), the failing set is unknown and the
//! output is not parsed.

use std::collections::HashSet;

use super::text::{count, lines};
use super::{Counted, Mode, TestResult, TestState};

/// What one pytest output says: the tests it names, and the closing line's counts when the
/// names are a failures-only listing.
pub(super) type Parsed = (Vec<TestResult>, Option<Counted>);

pub(super) fn parse(text: &str, mode: Mode) -> Option<Parsed> {
    let mut out = Vec::new();
    let mut totals: Option<Totals> = None;
    let mut session_started = false;
    // Ids reported `PASSED`/`XPASS` and `FAILED`, checked against the closing line's counts
    // (`ERROR`, `SKIPPED` and `XFAIL` are counted apart by pytest).
    let mut passed: HashSet<&str> = HashSet::new();
    let mut failed: HashSet<&str> = HashSet::new();
    let mut errors: HashSet<&str> = HashSet::new();
    // `-q`'s progress lines (`..F.s   [100%]`): pytest's framing where no header is printed.
    let mut progress = false;
    for line in lines(text) {
        if line.starts_with('=') && line.contains(" test session starts ") {
            session_started = true;
            continue;
        }
        if progress_line(line) {
            progress = true;
            continue;
        }
        if let Some(found) = summary_line(line) {
            totals.get_or_insert_with(Totals::default).add(found);
            continue;
        }
        let Some((id, word)) = verbose_parts(line).or_else(|| short_parts(line, false)) else {
            continue;
        };
        let Some(state) = state_of(word, true) else {
            continue;
        };
        match word {
            "PASSED" | "XPASS" => {
                passed.insert(id);
            }
            "FAILED" => {
                failed.insert(id);
            }
            "ERROR" => {
                errors.insert(id);
            }
            _ => {}
        }
        out.push(TestResult {
            id: id.to_owned(),
            state,
        });
    }
    let Some(totals) = totals else {
        return (mode == Mode::Forced && !out.is_empty()).then_some((out, None));
    };
    if mode == Mode::Detect && out.is_empty() && !session_started && !progress {
        return None;
    }
    // One test can error twice (in setup and in teardown), so errors need only be named.
    if failed.len() < totals.failed || (totals.errors > 0 && errors.is_empty()) {
        // Some failure is counted but not named: the failing set is unknown.
        return None;
    }
    if passed.len() >= totals.passed {
        return Some((out, None));
    }
    let counted = Counted {
        passed: totals.passed,
        failed: totals.failed,
        errors: totals.errors,
        skipped: totals.skipped,
    };
    Some((out, Some(counted)))
}

#[derive(Default)]
struct Totals {
    passed: usize,
    failed: usize,
    errors: usize,
    skipped: usize,
}

impl Totals {
    fn add(&mut self, other: Totals) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.errors += other.errors;
        self.skipped += other.skipped;
    }
}

/// A `-q` (or default, per file) progress line: status characters, then `[ NN%]`.
fn progress_line(line: &str) -> bool {
    let Some(head) = line.trim_end().strip_suffix("%]") else {
        return false;
    };
    let Some((marks, percent)) = head.rsplit_once('[') else {
        return false;
    };
    let percent = percent.trim_start();
    let marks = marks.trim_end();
    !marks.is_empty()
        && !percent.is_empty()
        && percent.bytes().all(|b| b.is_ascii_digit())
        && marks.bytes().all(|b| b".FsxXEpR".contains(&b))
}

/// `3 failed, 4 passed, 1 skipped, 1 xfailed, 1 error in 0.11s`, within `=` bars or not.
fn summary_line(line: &str) -> Option<Totals> {
    let inner = line.trim().trim_matches('=').trim();
    let (counts, time) = inner.rsplit_once(" in ")?;
    let time = match time.split_once(" (") {
        Some((time, clock)) if clock.ends_with(')') => time,
        Some(_) => return None,
        None => time,
    };
    let seconds = time.strip_suffix('s')?;
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, "0"));
    count(whole)?;
    count(fraction)?;
    let mut totals = Totals::default();
    if counts == "no tests ran" {
        return Some(totals);
    }
    for part in counts.split(", ") {
        let (n, word) = part.split_once(' ')?;
        let n = count(n)?;
        match word {
            "passed" | "xpassed" => totals.passed += n,
            "failed" => totals.failed += n,
            "error" | "errors" => totals.errors += n,
            "skipped" | "xfailed" => totals.skipped += n,
            "deselected" | "warning" | "warnings" | "rerun" | "reruns" => {}
            _ => return None,
        }
    }
    Some(totals)
}

fn state_of(word: &str, allow_skipped: bool) -> Option<TestState> {
    match word {
        "PASSED" | "XPASS" => Some(TestState::Passed),
        "FAILED" | "ERROR" => Some(TestState::Failed),
        "XFAIL" => Some(TestState::Skipped),
        "SKIPPED" if allow_skipped => Some(TestState::Skipped),
        _ => None,
    }
}

const VERBOSE_WORDS: [&str; 6] = ["PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"];

/// A `-v` line, or an xdist `[gwN] [ NN%] STATUS nodeid` line: the node id and status.
fn verbose_parts(line: &str) -> Option<(&str, &str)> {
    if let Some(rest) = line.strip_prefix("[gw") {
        let (worker, rest) = rest.split_once("] ")?;
        if !worker.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let rest = match rest.strip_prefix('[') {
            Some(percent) => percent.split_once("] ")?.1,
            None => rest,
        };
        return short_parts(rest, true);
    }
    let separator = line.find("::")?;
    if separator == 0 || line[..separator].contains(char::is_whitespace) {
        return None;
    }
    // The node id ends at the first space outside brackets (parameters may hold spaces)
    // that is followed by a status word.
    let bytes = line.as_bytes();
    let mut depth = 0usize;
    for (at, &b) in bytes.iter().enumerate().skip(separator) {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b' ' if depth == 0 => {
                let after = &line[at + 1..];
                for word in VERBOSE_WORDS {
                    if let Some(tail) = after.strip_prefix(word)
                        && (tail.is_empty() || tail.starts_with(' '))
                    {
                        return Some((&line[..at], word));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// A short-summary line `STATUS nodeid[ - message]`: the node id and status.
fn short_parts(line: &str, allow_skipped: bool) -> Option<(&str, &str)> {
    let (word, rest) = line.split_once(' ')?;
    state_of(word, allow_skipped)?;
    // The node id ends at ` - ` outside brackets, or at the end of the line.
    let bytes = rest.as_bytes();
    let mut depth = 0usize;
    let mut end = rest.len();
    for (at, &b) in bytes.iter().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b' ' if depth == 0 && rest[at..].starts_with(" - ") => {
                end = at;
                break;
            }
            _ => {}
        }
    }
    let id = rest[..end].trim_end();
    let file = id.split("::").next()?;
    let plausible = !file.is_empty()
        && !file.contains(char::is_whitespace)
        && (id.contains("::") || file.ends_with(".py"));
    plausible.then_some((id, word))
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::super::{Format, TestState, parse};

    fn states(text: &str, format: Option<Format>) -> Vec<(String, TestState)> {
        let results = parse(text.as_bytes(), format).unwrap();
        assert_eq!(results.format, Format::Pytest);
        results.tests.into_iter().map(|t| (t.id, t.state)).collect()
    }

    fn owned(want: &[(&str, TestState)]) -> Vec<(String, TestState)> {
        want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect()
    }

    #[test]
    fn verbose() {
        let want = owned(&[
            (
                "tests/test_math.py::TestThing::test_error",
                TestState::Failed,
            ),
            (
                "tests/test_math.py::TestThing::test_method",
                TestState::Passed,
            ),
            ("tests/test_math.py::test_add", TestState::Passed),
            ("tests/test_math.py::test_fixture_error", TestState::Failed),
            ("tests/test_math.py::test_param[1]", TestState::Passed),
            ("tests/test_math.py::test_param[2]", TestState::Failed),
            ("tests/test_math.py::test_param[a b]", TestState::Passed),
            ("tests/test_math.py::test_skipped", TestState::Skipped),
            ("tests/test_math.py::test_sub", TestState::Failed),
            ("tests/test_math.py::test_xfail", TestState::Skipped),
        ]);
        assert_eq!(states(samples::PYTEST_V, None), want);
        assert_eq!(states(samples::PYTEST_V, Some(Format::Pytest)), want);
    }

    #[test]
    fn summary_all() {
        // -rA names every test but the skipped one (its line carries no id).
        assert_eq!(
            states(samples::PYTEST_RA, None),
            owned(&[
                (
                    "tests/test_math.py::TestThing::test_error",
                    TestState::Failed
                ),
                (
                    "tests/test_math.py::TestThing::test_method",
                    TestState::Passed
                ),
                ("tests/test_math.py::test_add", TestState::Passed),
                ("tests/test_math.py::test_fixture_error", TestState::Failed),
                ("tests/test_math.py::test_param[1]", TestState::Passed),
                ("tests/test_math.py::test_param[2]", TestState::Failed),
                ("tests/test_math.py::test_param[a b]", TestState::Passed),
                ("tests/test_math.py::test_sub", TestState::Failed),
                ("tests/test_math.py::test_xfail", TestState::Skipped),
            ])
        );
    }

    #[test]
    fn default_terse_output_is_a_failures_only_listing_with_the_counts() {
        let want = owned(&[
            (
                "tests/test_math.py::TestThing::test_error",
                TestState::Failed,
            ),
            ("tests/test_math.py::test_fixture_error", TestState::Failed),
            ("tests/test_math.py::test_param[2]", TestState::Failed),
            ("tests/test_math.py::test_sub", TestState::Failed),
        ]);
        for format in [None, Some(Format::Pytest)] {
            let results = parse(samples::PYTEST_DEFAULT.as_bytes(), format).unwrap();
            let counted = results.counted.expect("a failures-only listing");
            assert_eq!(
                (
                    counted.passed,
                    counted.failed,
                    counted.errors,
                    counted.skipped
                ),
                (4, 3, 1, 2)
            );
            assert_eq!(results.test_count(), 9);
            assert_eq!(results.skipped_count(), 2);
            assert_eq!(states(samples::PYTEST_DEFAULT, format), want);
        }
    }

    #[test]
    fn a_green_terse_or_quiet_run_is_an_empty_listing_with_its_counts() {
        let plain = "============================= test session starts ==============================\n\
                     collected 3 items\n\n\
                     test.py ..s                                                    [100%]\n\n\
                     ========================= 2 passed, 1 skipped in 0.02s =========================\n";
        let quiet = "..s                                                                      [100%]\n\
                     2 passed, 1 skipped in 0.02s\n";
        for text in [plain, quiet] {
            let results = parse(text.as_bytes(), None).unwrap();
            assert!(results.tests.is_empty(), "{text}");
            assert_eq!(results.test_count(), 3, "{text}");
            assert_eq!(results.skipped_count(), 1, "{text}");
            assert!(results.failing_set().is_empty());
        }
        // A bare count line with no pytest framing around it is not detected.
        assert_eq!(parse(b"2 passed in 0.02s\n", None), None);
    }

    #[test]
    fn failures_counted_but_not_named_are_not_parsed() {
        // `-rN`: no short summary, so the failing set is unknown.
        let text = "============================= test session starts ==============================\n\
                    collected 3 items\n\n\
                    test.py .F.                                                    [100%]\n\n\
                    ========================= 1 failed, 2 passed in 0.02s =========================\n";
        assert_eq!(parse(text.as_bytes(), None), None);
        assert_eq!(parse(text.as_bytes(), Some(Format::Pytest)), None);
    }

    #[test]
    fn collection_error_fails_the_module() {
        assert_eq!(
            states(samples::PYTEST_COLLECTION_ERROR, None),
            owned(&[("tests/test_broken.py", TestState::Failed)])
        );
    }

    #[test]
    fn xdist_and_teardown_errors() {
        let text = "============================= test session starts ==============================\n\
                    created: 2/2 workers\n\
                    [gw1] [ 33%] PASSED tests/test_a.py::test_one \n\
                    [gw0] [ 66%] SKIPPED tests/test_a.py::test_two \n\
                    [gw1] [100%] PASSED tests/test_a.py::test_three \n\
                    [gw1] [100%] ERROR tests/test_a.py::test_three \n\
                    =========================== short test summary info ============================\n\
                    ERROR tests/test_a.py::test_three - RuntimeError: teardown\n\
                    ================ 2 passed, 1 skipped, 1 error in 0.40s ================\n";
        assert_eq!(
            states(text, None),
            owned(&[
                ("tests/test_a.py::test_one", TestState::Passed),
                ("tests/test_a.py::test_three", TestState::Failed),
                ("tests/test_a.py::test_two", TestState::Skipped),
            ])
        );
    }

    #[test]
    fn quiet_summary_with_ra_and_no_tests() {
        let text = "..F\nFAILED t.py::b - assert 0\nPASSED t.py::a\nPASSED t.py::c\n\
                    1 failed, 2 passed in 0.03s\n";
        assert_eq!(
            states(text, None),
            owned(&[
                ("t.py::a", TestState::Passed),
                ("t.py::b", TestState::Failed),
                ("t.py::c", TestState::Passed),
            ])
        );
        let none = "============================= test session starts ==============================\n\
                    collected 0 items\n\n============================ no tests ran in 0.01s =============================\n";
        assert!(states(none, None).is_empty());
    }
}
