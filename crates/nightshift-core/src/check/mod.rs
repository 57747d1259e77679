//! The oracle: run the check command (through `sh -c`) under supervision and say green or red.
//! Exit 0 within the timeout is green; everything else is red. Parsing test results into
//! failing sets comes later (issue 5); the raw output is always kept.

use std::path::PathBuf;
use std::time::Duration;

use crate::session::{self, Outcome, ProcessEnd, ProcessSpec, SessionError};

/// How much check output is kept in memory for feedback to the next iteration.
pub const FEEDBACK_BYTES: usize = 16 * 1024;

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
