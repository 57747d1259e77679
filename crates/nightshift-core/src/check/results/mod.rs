//! Parsing a check's output into test ids and their states, and judging progress across
//! iterations from the failing sets (DESIGN.md §2 "failing set", §7; issue 5).
//!
//! This room is pure: bytes in, [`Results`] out; failing sets in, a [`Progress`] verdict out.
//!
//! # What a parse promises
//!
//! [`parse`] returns `Some` only when the output is recognisably one runner's report; `None`
//! means "judge by the exit code alone". Detection (`format = None`, i.e. `auto`) is
//! conservative: every format needs its runner's own framing (a summary line, a plan, an XML
//! root, a JSON event shape), never just a word like `ok` or `FAILED`, and formats are tried in
//! a fixed order, the first that recognises the output wins: JUnit XML, `go test -json`,
//! nextest, libtest, pytest, TAP. JUnit comes first because a report can embed another
//! runner's output (nextest's JUnit carries each failed test's libtest output). One output is
//! one format: a check that runs two runners should name one with `[check] format` or emit
//! JUnit.
//!
//! Parse the **whole** output (the log file), not a tail: a truncated report loses tests.
//!
//! A red exit code with an empty failing set is possible (a compile error, a runner killed
//! before it named anything); callers must not read that as converged. Where the runner itself
//! blames a unit larger than one test and no test inside it failed, that unit's id is the
//! failing id ("container ids"): a Go package that failed to build or failed outside its
//! tests (`example.com/pkg`), a pytest module that failed to collect (`tests/test_x.py`), a
//! cargo test binary that crashed before its `test result:` line (its binary key, see below),
//! and TAP tests that a plan announced but never reported (`3`).
//!
//! # Test ids (stable across runs of the same command, unique within one output)
//!
//! | format | id |
//! |---|---|
//! | JUnit XML | `classname::name`, or `name` when the classname is empty or absent |
//! | TAP | `N description`: the test number (explicit, else its position), a space, and the description with a leading `-` removed, cut at the first unescaped `#` (the directive), `\#` and `\\` unescaped, runs of whitespace collapsed to one space and trimmed; just `N` when empty. Subtests (indented by four spaces) are `parent id > child id`; a stream announced by `prove -v` (`t/a.t ..`) prefixes `t/a.t::` |
//! | libtest (`cargo test`) | `binary test::path`, where the binary key comes from cargo's `Running` line: `crate@src/lib.rs`, `cli@tests/cli.rs`, `crate@doc` for doc-tests (the artifact name without its hash, `@`, the source path); the bare test path when the output has no `Running` lines (a test binary run directly, or stderr not captured). A `- should panic` suffix is dropped |
//! | nextest | `binary-id test::path` as nextest prints it (`alpha tests::it_adds`, `alpha::cli it_adds`, `beta::bin/beta tests::it_adds`); with `--message-format libtest-json` and stdout alone, `crate::binary test::path` from its `crate::binary$test::path` names (with stderr captured too, the status lines' ids) |
//! | pytest | the node id: `tests/test_x.py::TestClass::test_name[param]` |
//! | `go test -json` | `package/Test`, subtests included: `example.com/pkg/TestTable/case_one` |
//!
//! When one id is reported more than once, the worst state wins (failed, then skipped, then
//! passed), except nextest, where the last line for a test wins (retries: `TRY 2 PASS`).
//!
//! # Format notes
//!
//! - pytest: per-test lines come from `-v` (`tests/x.py::t PASSED  [ 50%]`, also `pytest-xdist`'s
//!   `[gw0] [ 50%] PASSED tests/x.py::t`) or from the `-rA` summary (`PASSED tests/x.py::t`,
//!   `FAILED tests/x.py::t - msg`). The closing line (`3 failed, 4 passed in 0.11s`) is required
//!   and checked: when it counts more passed tests than the output names but every failure is
//!   named (pytest's default output, whose short summary names the failed and erroring tests),
//!   the results are a failures-only listing ([`Results::counted`]): the failing set is whole,
//!   the collected set is known by count only. When it counts more failures than are named,
//!   the output is treated as unparsed. `XFAIL` is skipped, `XPASS` passed, `ERROR`
//!   failed. The `-rA` lines `SKIPPED [2] tests/x.py:9: reason` carry no test id and are not
//!   counted; run with `-v` (or use `--junitxml`) to see skipped tests by id.
//! - libtest: `cargo test -q` (libtest's terse format: dots, and only the failures named) is
//!   partial and not parsed; a block must name as many passed, failed and ignored tests as its
//!   `test result:` line counts.
//! - nextest: skipped tests are listed only with `--status-level skip` (or `all`); with
//!   `--status-level fail` (or `none`) the passed tests are not named, and when the `Summary`
//!   line counts more passed or failed tests than are named, the output is not parsed. With
//!   `--message-format libtest-json` and both streams captured (as a check captures them),
//!   the status lines win and the ids are the binary-id ones.
//! - TAP: `# SKIP` is skipped on either `ok` or `not ok`; `not ok … # TODO` is skipped (an
//!   expected failure), `ok … # TODO` passed. `Bail out!` ends the stream; planned tests never
//!   reported are failed under their number.

mod gotest;
mod junit;
mod libtest;
mod nextest;
mod progress;
mod pytest;
mod tap;
mod text;
mod xml;

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod samples;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use progress::{DEFAULT_K, FailingSet, Progress, assess};

/// The state of one test in one check run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestState {
    Passed,
    Failed,
    Skipped,
}

impl TestState {
    /// Rank for "worst wins" merging: failed over skipped over passed.
    fn severity(self) -> u8 {
        match self {
            TestState::Passed => 0,
            TestState::Skipped => 1,
            TestState::Failed => 2,
        }
    }
}

/// One test's id and state.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TestResult {
    pub id: String,
    pub state: TestState,
}

/// The parsed report of one check run: every test once, sorted by id.
///
/// A **failures-only listing** (`counted` is `Some`: plain `pytest`, which names only the
/// tests that failed or errored and counts the rest) holds the failing tests in `tests` and
/// the runner's own counts in `counted`. Its failing set is whole; its collected set is not,
/// so the test-set guard compares it by count ([`Results::test_count`]), never by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Results {
    pub tests: Vec<TestResult>,
    pub format: Format,
    /// The runner's counts, when `tests` names only the failing tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<Counted>,
}

/// A runner's own counts for a failures-only listing (see [`Results`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Counted {
    /// Passed, `xpassed` included.
    pub passed: usize,
    pub failed: usize,
    /// Tests that errored (in setup or teardown) and modules that did not collect: counted
    /// apart, as the runner counts them (a test that passed and errored in teardown is in
    /// `passed` too).
    pub errors: usize,
    /// Skipped, `xfailed` included.
    pub skipped: usize,
}

impl Counted {
    /// The tests that ran to a verdict: passed, failed and skipped (errors are not counted, a
    /// teardown error would count its test twice).
    pub fn ran(&self) -> usize {
        self.passed + self.failed + self.skipped
    }
}

impl Results {
    /// Whether this is a failures-only listing: `tests` are the failing tests, not all.
    pub fn is_partial(&self) -> bool {
        self.counted.is_some()
    }

    /// How many tests the run reported: every id, or for a failures-only listing the tests
    /// its counts say ran ([`Counted::ran`]).
    pub fn test_count(&self) -> usize {
        match &self.counted {
            Some(counted) => counted.ran(),
            None => self.tests.len(),
        }
    }

    /// The ids of the failed tests.
    pub fn failing_set(&self) -> FailingSet {
        self.tests
            .iter()
            .filter(|t| t.state == TestState::Failed)
            .map(|t| t.id.clone())
            .collect()
    }

    /// How many tests were skipped (by the runner's count for a failures-only listing).
    pub fn skipped_count(&self) -> usize {
        if let Some(counted) = &self.counted {
            return counted.skipped;
        }
        self.tests
            .iter()
            .filter(|t| t.state == TestState::Skipped)
            .count()
    }

    /// Every id the run reported, whatever its state (for a failures-only listing, the failing
    /// ones: not the collected set).
    pub fn collected(&self) -> BTreeSet<String> {
        self.tests.iter().map(|t| t.id.clone()).collect()
    }

    /// Each test with its id as compared across runs whose test lists differ, in id order.
    ///
    /// - TAP: a test's number is its position, which shifts when a test is added before it,
    ///   so a described TAP test is known by its description alone (`3 adds` → `adds`; a
    ///   bare `3` stays `3`; subtests and `prove` prefixes keep their full id).
    /// - libtest and JUnit: a Rust doc-test's id carries the line of its code block
    ///   (`src/lib.rs - Version::cmp (line 433)`), which moves when anything is added above
    ///   it. It is known by its ordinal among the doc-tests of the same item instead, in line
    ///   order: `src/lib.rs - Version::cmp (#1)`. Moving code keeps every ordinal; deleting
    ///   one of an item's doc-tests loses the last ordinal, so the test-set guard sees it.
    ///
    /// Other ids are already stable (pytest's parametrized ids are built from the parameter
    /// values or their positions, Go's and nextest's from names).
    pub fn stable_tests(&self) -> Vec<(String, &TestResult)> {
        match self.format {
            Format::Tap => self
                .tests
                .iter()
                .map(|t| (tap_stable(&t.id).to_owned(), t))
                .collect(),
            Format::Libtest | Format::JunitXml => {
                // Doc-tests grouped by their id without the line, each group in line order.
                let mut groups: std::collections::BTreeMap<(String, String), Vec<(u64, usize)>> =
                    std::collections::BTreeMap::new();
                for (index, t) in self.tests.iter().enumerate() {
                    if let Some((head, line, tail)) = doc_test_line(&t.id) {
                        groups
                            .entry((head.to_owned(), tail.to_owned()))
                            .or_default()
                            .push((line, index));
                    }
                }
                let mut stable: Vec<Option<String>> = vec![None; self.tests.len()];
                for ((head, tail), mut members) in groups {
                    members.sort_unstable();
                    for (ordinal, (_, index)) in members.into_iter().enumerate() {
                        if let Some(slot) = stable.get_mut(index) {
                            *slot = Some(format!("{head} (#{}){tail}", ordinal + 1));
                        }
                    }
                }
                self.tests
                    .iter()
                    .zip(stable)
                    .map(|(t, s)| (s.unwrap_or_else(|| t.id.clone()), t))
                    .collect()
            }
            _ => self.tests.iter().map(|t| (t.id.clone(), t)).collect(),
        }
    }

    /// [`Results::collected`] by the ids of [`Results::stable_tests`].
    pub fn collected_stable(&self) -> BTreeSet<String> {
        self.stable_tests().into_iter().map(|(id, _)| id).collect()
    }

    /// [`Results::failing_set`] by the ids of [`Results::stable_tests`].
    pub fn failing_stable(&self) -> FailingSet {
        self.stable_tests()
            .into_iter()
            .filter(|(_, t)| t.state == TestState::Failed)
            .map(|(id, _)| id)
            .collect()
    }

    /// The source files the collected tests live in, as the runner names them: pytest's node
    /// ids (`tests/test_x.py::t` → `tests/test_x.py`, also `test.py`), libtest's binary keys
    /// and doc-test paths (`cli@tests/cli.rs it` → `tests/cli.rs`, `c@doc src/lib.rs - f
    /// (line 3)` → `src/lib.rs`), JUnit `file` attributes are not kept, so JUnit gives
    /// nothing. Relative to where the runner ran (a crate's root for libtest's keys in a
    /// workspace): match them as path suffixes.
    pub fn test_files(&self) -> BTreeSet<String> {
        let mut files = BTreeSet::new();
        for t in &self.tests {
            let file = match self.format {
                Format::Pytest => t.id.split("::").next(),
                Format::Libtest => match t.id.split_once(' ') {
                    Some((key, rest)) if key.ends_with("@doc") => {
                        rest.split_once(" - ").map(|(file, _)| file)
                    }
                    Some((key, _)) => key.split_once('@').map(|(_, file)| file),
                    None => None,
                },
                _ => None,
            };
            if let Some(file) = file.filter(|f| !f.is_empty() && f.contains('.')) {
                files.insert(file.to_owned());
            }
        }
        files
    }

    /// The stable ids of the tests in `state`.
    pub fn stable_in(&self, state: TestState) -> BTreeSet<String> {
        self.stable_tests()
            .into_iter()
            .filter(|(_, t)| t.state == state)
            .map(|(id, _)| id)
            .collect()
    }

    /// Builds results from raw reports, merging repeated ids per `merge`.
    fn from_reports(format: Format, mut reports: Vec<TestResult>, merge: Merge) -> Results {
        // A stable sort keeps repeated ids in report order, so "last" means last reported.
        reports.sort_by(|a, b| a.id.cmp(&b.id));
        let mut tests: Vec<TestResult> = Vec::with_capacity(reports.len());
        for report in reports {
            match tests.last_mut() {
                Some(kept) if kept.id == report.id => {
                    let replace = match merge {
                        Merge::WorstWins => report.state.severity() > kept.state.severity(),
                        Merge::LastWins => true,
                    };
                    if replace {
                        kept.state = report.state;
                    }
                }
                _ => tests.push(report),
            }
        }
        Results {
            tests,
            format,
            counted: None,
        }
    }
}

/// A described TAP test's id without its number (see [`Results::stable_tests`]).
fn tap_stable(id: &str) -> &str {
    match id.split_once(' ') {
        Some((number, rest))
            if !rest.is_empty()
                && !rest.contains(" > ")
                && number.bytes().all(|b| b.is_ascii_digit()) =>
        {
            rest
        }
        _ => id,
    }
}

/// A doc-test id split at its last ` (line N)`: the text before, N, the text after (a
/// ` - compile fail` or similar suffix). `None` for any other id.
fn doc_test_line(id: &str) -> Option<(&str, u64, &str)> {
    const OPEN: &str = " (line ";
    let at = id.rfind(OPEN)?;
    let head = id.get(..at)?;
    let rest = id.get(at + OPEN.len()..)?;
    let close = rest.find(')')?;
    let digits = rest.get(..close)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !head.contains(" - ") {
        return None;
    }
    let line = digits.parse().ok()?;
    Some((head, line, rest.get(close + 1..)?))
}

/// How a repeated id is resolved.
#[derive(Debug, Clone, Copy)]
enum Merge {
    WorstWins,
    LastWins,
}

/// A test-report format the parser understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Format {
    #[serde(rename = "junit")]
    JunitXml,
    #[serde(rename = "tap")]
    Tap,
    #[serde(rename = "libtest")]
    Libtest,
    #[serde(rename = "nextest")]
    Nextest,
    #[serde(rename = "pytest")]
    Pytest,
    #[serde(rename = "go-test-json")]
    GoTestJson,
}

/// What `[check] format` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatChoice {
    /// Detect the format from the output (`auto`, the default).
    Auto,
    /// Never parse: the exit code alone decides (`exit-code`).
    ExitCode,
    /// Parse as this format only.
    Fixed(Format),
}

impl FormatChoice {
    /// Parses `output` as this choice asks; `None` means "judge by the exit code alone".
    pub fn parse(self, output: &[u8]) -> Option<Results> {
        match self {
            FormatChoice::Auto => parse(output, None),
            FormatChoice::ExitCode => None,
            FormatChoice::Fixed(format) => parse(output, Some(format)),
        }
    }
}

/// An unknown `[check] format` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown check format `{0}`: expected one of junit, tap, libtest, nextest, pytest, \
     go-test-json, auto, exit-code"
)]
pub struct UnknownFormat(pub String);

/// Formats in detection order: the most self-describing first.
const DETECTION_ORDER: [Format; 6] = [
    Format::JunitXml,
    Format::GoTestJson,
    Format::Nextest,
    Format::Libtest,
    Format::Pytest,
    Format::Tap,
];

impl Format {
    /// Reads a `[check] format` value: `junit`, `tap`, `libtest`, `nextest`, `pytest`,
    /// `go-test-json`, `auto` or `exit-code`.
    pub fn from_config(value: &str) -> Result<FormatChoice, UnknownFormat> {
        match value {
            "auto" => Ok(FormatChoice::Auto),
            "exit-code" => Ok(FormatChoice::ExitCode),
            other => [
                Format::JunitXml,
                Format::Tap,
                Format::Libtest,
                Format::Nextest,
                Format::Pytest,
                Format::GoTestJson,
            ]
            .into_iter()
            .find(|f| f.as_str() == other)
            .map(FormatChoice::Fixed)
            .ok_or_else(|| UnknownFormat(other.to_owned())),
        }
    }

    /// The name used in `nightshift.toml` and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::JunitXml => "junit",
            Format::Tap => "tap",
            Format::Libtest => "libtest",
            Format::Nextest => "nextest",
            Format::Pytest => "pytest",
            Format::GoTestJson => "go-test-json",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How strictly a parser looks for its format's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Auto-detection: the runner's own framing must be present.
    Detect,
    /// The format was configured: per-test lines suffice.
    Forced,
}

/// Parses a check's output (stdout and stderr as captured, whole) into test results.
///
/// With `format = None` the format is detected; `None` back means nothing parsed and the
/// check is judged by its exit code alone.
pub fn parse(output: &[u8], format: Option<Format>) -> Option<Results> {
    let text = text::normalize(output);
    match format {
        Some(format) => parse_as(format, &text, Mode::Forced),
        None => DETECTION_ORDER
            .into_iter()
            .find_map(|format| parse_as(format, &text, Mode::Detect)),
    }
}

fn parse_as(format: Format, text: &str, mode: Mode) -> Option<Results> {
    let mut counted = None;
    let (reports, merge) = match format {
        Format::JunitXml => (junit::parse(text)?, Merge::WorstWins),
        Format::Tap => (tap::parse(text, mode)?, Merge::WorstWins),
        Format::Libtest => (libtest::parse(text, mode)?, Merge::WorstWins),
        Format::Nextest => (nextest::parse(text, mode)?, Merge::LastWins),
        Format::Pytest => {
            let (reports, totals) = pytest::parse(text, mode)?;
            counted = totals;
            (reports, Merge::WorstWins)
        }
        Format::GoTestJson => (gotest::parse(text)?, Merge::WorstWins),
    };
    let mut results = Results::from_reports(format, reports, merge);
    results.counted = counted;
    Some(results)
}
