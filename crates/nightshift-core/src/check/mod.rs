//! The oracle: run the check command (through `sh -c`) under supervision and say green or red.
//! Exit 0 within the timeout is green; everything else is red. Parsing test results into
//! failing sets comes later (issue 5); the raw output is always kept.

use std::path::PathBuf;
use std::time::Duration;

use crate::session::{self, Outcome, ProcessEnd, ProcessSpec, SessionError};

/// How much check output is kept in memory for feedback to the next iteration.
pub const FEEDBACK_BYTES: usize = 16 * 1024;

/// What a check's log keeps of a larger output: its first 8 MiB and its last 8 MiB, with a line
/// saying how much was cut between them (as an agent's log cuts its lines). Results are parsed
/// from what the log keeps (a runner's summary is at the end); a results file (`[check]
/// results`) is read whole and is not affected.
pub const LOG_LIMIT: session::LogLimit = session::LogLimit {
    head: 8 << 20,
    tail: 8 << 20,
};

/// One check run.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub green: bool,
    pub end: ProcessEnd,
}

/// Runs `command` in `cwd` with `timeout`, teeing output to `log`.
pub fn run(
    command: &str,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    timeout: Duration,
    log: PathBuf,
) -> Result<CheckRun, SessionError> {
    let spec = ProcessSpec {
        // One pipe for both streams: read from two pipes, a runner's stderr (cargo's
        // `Running …` lines) and its test binaries' stdout interleave in whatever order the
        // reader happens to see them, and results are read by that order. `exec 2>&1` keeps
        // the order the processes wrote in.
        argv: crate::sandbox::for_check(&cwd, &log).wrap(vec![
            "sh".into(),
            "-c".into(),
            format!("exec 2>&1\n{command}"),
        ]),
        cwd,
        env,
        timeout,
        kill_grace: Duration::from_secs(5),
        log,
        tail_bytes: FEEDBACK_BYTES,
        env_allow: None,
        stdin: None,
        log_limit: Some(LOG_LIMIT),
    };
    let end = session::run(&spec)?;
    Ok(CheckRun {
        green: end.outcome == Outcome::Completed,
        end,
    })
}

pub mod fingerprint;
pub mod probe;
pub mod results;
pub mod stats;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_output_is_logged_head_and_tail_and_its_results_still_parse() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("check.log");
        // 20 MB of noise between the runner's start and its results.
        let command = "printf 'running 3 tests\\n'; yes 'noise noise noise' | head -c 20000000; \
                       printf '\\ntest a::one ... ok\\ntest a::two ... FAILED\\ntest a::three ... ok\\n\\n\
                       failures:\\n    a::two\\n\\ntest result: FAILED. 2 passed; 1 failed; 0 ignored; \
                       0 measured; 0 filtered out; finished in 0.01s\\n\\n'; exit 101";
        let run = run(
            command,
            dir.path().to_path_buf(),
            Vec::new(),
            Duration::from_secs(120),
            log.clone(),
        )
        .unwrap();
        assert!(!run.green);
        let size = std::fs::metadata(&log).unwrap().len();
        let cap = LOG_LIMIT.head + LOG_LIMIT.tail as u64;
        assert!(size <= cap + 64 * 1024, "the log is {size} bytes");
        let bytes = std::fs::read(&log).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("bytes of output cut here"));
        let results = results::FormatChoice::Auto
            .parse(&bytes)
            .expect("results parse");
        let failing: Vec<String> = results.failing_set().into_set().into_iter().collect();
        assert_eq!(failing, ["a::two"], "{:?}", results.tests);
    }
}
