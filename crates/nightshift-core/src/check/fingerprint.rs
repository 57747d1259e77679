//! A check run's output fingerprint: a SHA-256 over its *verdict*, stable across re-runs of the
//! same tree, so `nightshift replay` can say whether a recorded verdict still holds.
//!
//! What is hashed (as one JSON document, `v` = [`FINGERPRINT_VERSION`]):
//! - the exit status class: `exit:N` when the check exited with code N, else the outcome
//!   (`timeout`, `crashed`, …);
//! - when [`crate::check::results::parse`] recognises the output: its format and every
//!   (test id, state) pair, sorted by id.
//!
//! When nothing parses, the exit status class alone is hashed. That fingerprint is weaker: two
//! runs that fail different tests with the same exit code look alike. Raw output is never
//! hashed for comparison: timings, addresses and ordering make it differ between identical runs.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::results::{self, Results, TestState};
use crate::session::Outcome;

/// The version of the hashed document; bumped if what is hashed ever changes.
pub const FINGERPRINT_VERSION: u32 = 1;

/// The fingerprint of one check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// SHA-256 (hex) of the verdict document.
    pub sha256: String,
    /// `exit:N`, or the outcome when there is no exit code.
    pub status: String,
    /// The recognised report format; `None` when the fingerprint rests on the exit status only.
    pub format: Option<String>,
    /// The failed test ids, sorted; `None` when the output did not parse.
    pub failing: Option<Vec<String>>,
    /// How many tests the report named (0 when unparsed).
    pub tests: usize,
}

#[derive(Serialize)]
struct Document<'a> {
    v: u32,
    status: &'a str,
    format: Option<&'a str>,
    tests: Vec<(&'a str, TestState)>,
    /// A failures-only listing's counts (absent otherwise, so other fingerprints are unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    counted: Option<results::Counted>,
}

/// The exit status class of a check run.
pub fn status_class(outcome: Outcome, exit_code: Option<i32>) -> String {
    match exit_code {
        Some(code) => format!("exit:{code}"),
        None => serde_json::to_value(outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "unknown".into()),
    }
}

/// Fingerprints one check run from its exit and its whole output (the log file).
pub fn of_run(outcome: Outcome, exit_code: Option<i32>, output: &[u8]) -> Fingerprint {
    let status = status_class(outcome, exit_code);
    of_parsed(&status, results::parse(output, None).as_ref())
}

/// Fingerprints an already-parsed run (`None`: judged by the exit status only).
pub fn of_parsed(status: &str, parsed: Option<&Results>) -> Fingerprint {
    let mut tests: Vec<(&str, TestState)> = parsed
        .map(|r| r.tests.iter().map(|t| (t.id.as_str(), t.state)).collect())
        .unwrap_or_default();
    tests.sort_by(|a, b| a.0.cmp(b.0));
    let format = parsed.and_then(|r| {
        serde_json::to_value(r.format)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
    });
    let doc = Document {
        v: FINGERPRINT_VERSION,
        status,
        format: format.as_deref(),
        tests: tests.clone(),
        counted: parsed.and_then(|r| r.counted),
    };
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    let failing = parsed.map(|_| {
        tests
            .iter()
            .filter(|(_, s)| *s == TestState::Failed)
            .map(|(id, _)| (*id).to_owned())
            .collect()
    });
    Fingerprint {
        sha256: crate::session::hex(&Sha256::digest(&bytes)),
        status: status.to_owned(),
        format,
        failing,
        tests: parsed.map(Results::test_count).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn libtest(timing: &str, order_flip: bool) -> String {
        let (a, b) = if order_flip {
            ("test b::two ... ok", "test a::one ... FAILED")
        } else {
            ("test a::one ... FAILED", "test b::two ... ok")
        };
        format!(
            "\nrunning 2 tests\n{a}\n{b}\n\nfailures:\n\nfailures:\n    a::one\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in {timing}s\n\n"
        )
    }

    #[test]
    fn timings_and_order_change_the_output_but_not_the_fingerprint() {
        let one = libtest("0.01", false);
        let two = libtest("3.57", true);
        assert_ne!(one, two);
        let f1 = of_run(Outcome::Failed, Some(101), one.as_bytes());
        let f2 = of_run(Outcome::Failed, Some(101), two.as_bytes());
        assert_eq!(f1, f2);
        assert_eq!(f1.format.as_deref(), Some("libtest"));
        assert_eq!(f1.failing, Some(vec!["a::one".to_owned()]));
        assert_eq!(f1.tests, 2);
    }

    #[test]
    fn a_different_test_state_changes_the_fingerprint() {
        let red = of_run(
            Outcome::Failed,
            Some(101),
            libtest("0.01", false).as_bytes(),
        );
        let other = libtest("0.01", false)
            .replace("a::one ... FAILED", "a::one ... ok")
            .replace("1 passed; 1 failed", "2 passed; 0 failed")
            .replace("test result: FAILED", "test result: ok")
            .replace("failures:\n\nfailures:\n    a::one\n\n", "");
        let green = of_run(Outcome::Failed, Some(101), other.as_bytes());
        assert_eq!(green.failing, Some(vec![]));
        assert_ne!(red.sha256, green.sha256);
    }

    #[test]
    fn unparsed_output_is_judged_by_the_exit_status_alone() {
        let a = of_run(Outcome::Failed, Some(1), b"FAIL at 12:00:01\n");
        let b = of_run(Outcome::Failed, Some(1), b"FAIL at 12:00:02, other words\n");
        assert_eq!(a, b);
        assert_eq!(a.failing, None);
        assert_eq!(a.format, None);
        let green = of_run(Outcome::Completed, Some(0), b"FAIL at 12:00:01\n");
        assert_ne!(a.sha256, green.sha256);
        let timeout = of_run(Outcome::Timeout, None, b"");
        assert_eq!(timeout.status, "timeout");
        assert_ne!(timeout.sha256, a.sha256);
    }
}
