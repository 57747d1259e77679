//! `probe`: how often does the oracle lie? The check runs again and again on one commit, in a
//! scratch worktree, while the things a check should not depend on are perturbed in rotation
//! (seeds and test order, time zone, clock, CPU load), with unperturbed baseline runs between.
//! Every run's verdict is its colour plus the fingerprint of its parsed results; a run that
//! disagrees with the majority is a flake, and the dimensions of the disagreeing runs are named.
//! With no disagreement, the achieved bound on the flake rate is reported (exact
//! Clopper–Pearson, see [`super::stats`]).
//!
//! The user's checkout is never touched: the check runs in a detached worktree at `HEAD` under
//! `.nightshift/scratch/`, removed when the probe ends (also when it fails).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::results;
use super::stats;
use crate::git::{Git, GitError, ScratchError, scratch};
use crate::halt::HaltReason;
use crate::session::{self, Outcome, SessionError};
use crate::workspace::Workspace;

/// Default target flake rate.
pub const DEFAULT_MAX_FLAKE_RATE: f64 = 0.01;
/// Default confidence.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Something a check should not depend on, perturbed in some probe runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// No perturbation: the check as a run would start it.
    Baseline,
    /// Random seeds and test order: `NIGHTSHIFT_SEED`, `PYTHONHASHSEED`, minitest's `SEED`,
    /// RSpec's `SPEC_OPTS=--order rand:N`, libtest's `RUST_TEST_SHUFFLE(_SEED)`.
    Seed,
    /// `TZ` rotated among far-apart zones (+14:00, −11:00, +05:45, −03:30 with DST).
    Timezone,
    /// The wall clock shifted by libfaketime (`LD_PRELOAD`), when it is installed.
    Clock,
    /// Busy threads on every core during the run.
    CpuLoad,
}

impl Dimension {
    /// Every dimension, in rotation order.
    pub const ALL: [Dimension; 5] = [
        Dimension::Baseline,
        Dimension::Seed,
        Dimension::Timezone,
        Dimension::Clock,
        Dimension::CpuLoad,
    ];

    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Baseline => "baseline",
            Dimension::Seed => "seed",
            Dimension::Timezone => "timezone",
            Dimension::Clock => "clock",
            Dimension::CpuLoad => "cpu_load",
        }
    }
}

impl std::fmt::Display for Dimension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Far-apart time zones for the `timezone` dimension.
pub const TIME_ZONES: [&str; 4] = [
    "Pacific/Kiritimati",
    "Pacific/Pago_Pago",
    "Asia/Kathmandu",
    "America/St_Johns",
];

/// Clock shifts for the `clock` dimension (libfaketime's relative `FAKETIME` syntax).
pub const CLOCK_SHIFTS: [&str; 3] = ["+400d", "-400d", "+3650d"];

/// Where libfaketime is usually installed.
const FAKETIME_PATHS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
    "/usr/lib64/faketime/libfaketime.so.1",
];

/// libfaketime's preload library, if installed (`NIGHTSHIFT_FAKETIME_LIB` overrides the search;
/// set it to an empty string to disable the clock dimension).
pub fn faketime_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NIGHTSHIFT_FAKETIME_LIB") {
        let path = PathBuf::from(path);
        return (!path.as_os_str().is_empty() && path.is_file()).then_some(path);
    }
    FAKETIME_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// What one check run said: green or red, and which tests it reported in which state.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, JsonSchema)]
pub struct Verdict {
    pub green: bool,
    /// SHA-256 (first 16 hex digits) of the sorted `(id, state)` pairs of the parsed results,
    /// or `unparsed` when the output is no runner's report (the exit code alone decides).
    pub fingerprint: String,
}

impl Verdict {
    /// The verdict of a run that ended `green` having printed `output` (the whole log).
    pub fn of(green: bool, output: &[u8]) -> Verdict {
        let fingerprint = match results::parse(output, None) {
            Some(parsed) => {
                let mut hash = Sha256::new();
                for t in &parsed.tests {
                    hash.update(t.id.as_bytes());
                    hash.update([0]);
                    hash.update(match t.state {
                        results::TestState::Passed => b"p",
                        results::TestState::Failed => b"f",
                        results::TestState::Skipped => b"s",
                    });
                    hash.update([0]);
                }
                session::hex(&hash.finalize()[..8])
            }
            None => "unparsed".into(),
        };
        Verdict { green, fingerprint }
    }

    /// One string per distinct verdict: `green:<fingerprint>` or `red:<fingerprint>`. This is
    /// what [`stats::SequentialWilson::observe`] takes.
    pub fn key(&self) -> String {
        format!(
            "{}:{}",
            if self.green { "green" } else { "red" },
            self.fingerprint
        )
    }
}

/// Errors that stop a probe (not the check's own failures, which are its data).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("resolve HEAD: the repository has no commit to probe")]
    NoHead,
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("prepare {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("seed the scratch worktree: {0}")]
    Seed(String),
    #[error("run the check")]
    Session(#[from] SessionError),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ProbeError + '_ {
    move |source| ProbeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An error and its sources, joined with ": ".
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A detached worktree at `HEAD` under `.nightshift/scratch/` (the one scratch checkout,
/// [`crate::git::Scratch`]), removed on drop after whatever the runs left running in it.
pub struct Scratch {
    inner: crate::git::Scratch,
}

impl Scratch {
    /// Creates a scratch worktree named after `label`, seeded with `seeds` (paths relative to
    /// the repository root, as `[worktree] seed`).
    pub fn create(ws: &Workspace, label: &str, seeds: &[PathBuf]) -> Result<Scratch, ProbeError> {
        let git = Git::new(ws.root());
        let commit = git.resolve("HEAD")?.ok_or(ProbeError::NoHead)?;
        if let Ok(common) = git.common_dir() {
            let _ = crate::engine::ensure_excluded(&common);
        }
        let owner = ws.dir().join("scratch");
        scratch::remove_stale(&git, &owner);
        let inner =
            crate::git::Scratch::add_with_room(&git, &owner, &scratch::unique_name(label), &commit)
                .map_err(|e| match e {
                    ScratchError::Git(e) => ProbeError::Git(e),
                    ScratchError::Io { path, source } => ProbeError::Io { path, source },
                })?;
        let logs = inner.dir().join("logs");
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        inner.seed(ws.root(), seeds).map_err(ProbeError::Seed)?;
        Ok(Scratch { inner })
    }

    /// The worktree.
    pub fn tree(&self) -> &Path {
        self.inner.tree()
    }

    /// A directory for logs, removed with the worktree.
    pub fn logs(&self) -> PathBuf {
        self.inner.dir().join("logs")
    }

    /// The commit checked out.
    pub fn commit(&self) -> &str {
        self.inner.commit()
    }

    /// Restores the tracked files to the commit (after a planted mutation).
    pub fn restore(&self) -> Result<(), GitError> {
        self.inner.restore()
    }
}

impl Drop for Scratch {
    /// The processes a run left in the tree first; the tree goes after (`inner`'s drop).
    fn drop(&mut self) {
        session::sweep(
            self.inner.tree(),
            Duration::from_secs(5),
            session::Reach::Holders,
            None,
        );
    }
}

/// A small deterministic generator (SplitMix64): the probe's `--seed` reproduces its choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A seed from the time and the process id, for when none is given.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    Rng::new(nanos ^ (u64::from(std::process::id()) << 32)).next_u64()
}

/// The perturbation of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Perturbation {
    pub dimension: Dimension,
    /// Extra environment for the check.
    pub env: Vec<(String, String)>,
    /// What was set, for people (`TZ=Asia/Kathmandu`, `NIGHTSHIFT_SEED=1234`).
    pub setting: String,
    /// Busy threads to run beside the check.
    pub load_threads: usize,
}

/// Builds the perturbation of the `nth` run of `dimension` (counting from 0 per dimension).
pub fn perturbation(
    dimension: Dimension,
    nth: u64,
    rng: &mut Rng,
    faketime: Option<&Path>,
) -> Perturbation {
    let mut env = vec![(
        "NIGHTSHIFT_PROBE_DIMENSION".to_owned(),
        dimension.as_str().to_owned(),
    )];
    let mut load_threads = 0;
    let setting = match dimension {
        Dimension::Baseline => "none".to_owned(),
        Dimension::Seed => {
            let seed = rng.next_u64() % 1_000_000_007;
            let s = seed.to_string();
            env.push(("NIGHTSHIFT_SEED".into(), s.clone()));
            env.push(("PYTHONHASHSEED".into(), (seed % 4_294_967_295).to_string()));
            env.push(("SEED".into(), (seed % 65_535).to_string()));
            env.push(("RUST_TEST_SHUFFLE".into(), "1".into()));
            env.push(("RUST_TEST_SHUFFLE_SEED".into(), s.clone()));
            if std::env::var_os("SPEC_OPTS").is_none() {
                env.push((
                    "SPEC_OPTS".into(),
                    format!("--order rand:{}", seed % 65_535),
                ));
            }
            format!("NIGHTSHIFT_SEED={s}")
        }
        Dimension::Timezone => {
            let zone = TIME_ZONES[(nth % TIME_ZONES.len() as u64) as usize];
            env.push(("TZ".into(), zone.into()));
            format!("TZ={zone}")
        }
        Dimension::Clock => {
            let shift = CLOCK_SHIFTS[(nth % CLOCK_SHIFTS.len() as u64) as usize];
            if let Some(lib) = faketime {
                let preload = match std::env::var("LD_PRELOAD") {
                    Ok(existing) if !existing.is_empty() => {
                        format!("{}:{existing}", lib.display())
                    }
                    _ => lib.display().to_string(),
                };
                env.push(("LD_PRELOAD".into(), preload));
                env.push(("FAKETIME".into(), shift.into()));
                env.push(("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()));
            }
            format!("FAKETIME={shift}")
        }
        Dimension::CpuLoad => {
            load_threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2);
            format!("{load_threads} busy threads")
        }
    };
    Perturbation {
        dimension,
        env,
        setting,
        load_threads,
    }
}

/// Busy threads that spin until dropped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(n: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0_u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005));
                        }
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One check run of a probe.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProbeRun {
    /// 1-based.
    pub index: u64,
    pub dimension: Dimension,
    pub setting: String,
    pub verdict: Verdict,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// Whether a run shows the check could not be started at all (no verdict, an execution
/// failure): not spawned, or the shell's 126/127 ("cannot execute", "not found").
pub fn cannot_start(outcome: Outcome, exit_code: Option<i32>) -> bool {
    outcome == Outcome::SpawnFailed || matches!(exit_code, Some(126 | 127))
}

/// Runs `command` once in `cwd` under `perturbation`, logging to `log`.
pub fn run_once(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    perturbation: &Perturbation,
    log: PathBuf,
) -> Result<(Verdict, session::ProcessEnd), ProbeError> {
    let load = (perturbation.load_threads > 0).then(|| Load::start(perturbation.load_threads));
    let run = super::run(
        command,
        cwd.to_path_buf(),
        perturbation.env.clone(),
        timeout,
        log.clone(),
    );
    drop(load);
    let run = run?;
    session::sweep(cwd, Duration::from_secs(5), session::Reach::Holders, None);
    let output = std::fs::read(&log).unwrap_or_else(|_| run.end.tail.clone());
    Ok((Verdict::of(run.green, &output), run.end))
}

/// What `probe` needs.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The check command line (`sh -c`).
    pub command: String,
    pub timeout: Duration,
    /// How many runs at most.
    pub runs: u64,
    pub confidence: f64,
    /// The target rate the run count was derived from, if it was.
    pub max_flake_rate: Option<f64>,
    /// Seeds the perturbations; the same seed repeats the same settings.
    pub seed: u64,
    /// `[worktree] seed`: files copied into the scratch worktree.
    pub worktree_seed: Vec<PathBuf>,
    /// `[worktree] env` (a shared build cache): set for every run, under the perturbation.
    pub env: Vec<(String, String)>,
}

/// Per-dimension tallies.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DimensionReport {
    pub dimension: Dimension,
    /// Whether this dimension could be perturbed here.
    pub available: bool,
    /// Why not, when it could not.
    pub note: Option<String>,
    pub runs: u64,
    /// Runs of this dimension whose verdict differs from the majority.
    pub disagreements: u64,
}

/// How a probe ended.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ProbeReport {
    pub command: String,
    pub commit: String,
    pub seed: u64,
    /// Runs planned (`--runs`, or derived from the target rate and confidence).
    pub planned_runs: u64,
    /// Runs made (fewer than planned when a flake ended the probe early).
    pub runs: u64,
    pub confidence: f64,
    pub max_flake_rate: Option<f64>,
    /// The verdict most runs gave.
    pub majority: Option<Verdict>,
    /// Runs that disagreed with the majority.
    pub disagreements: u64,
    /// Exact one-sided Clopper–Pearson upper bound on the flake rate at `confidence`.
    pub flake_rate_upper: f64,
    /// Whether the bound meets `max_flake_rate` (when a target was given).
    pub meets_target: Option<bool>,
    /// The dimensions whose runs disagreed, in rotation order.
    pub broken: Vec<Dimension>,
    /// Unperturbed runs disagreed too: the flake does not need a perturbation.
    pub intrinsic: bool,
    pub dimensions: Vec<DimensionReport>,
    /// The disagreeing runs (at most 20).
    pub disagreeing_runs: Vec<ProbeRun>,
    /// `check_flaky` when runs disagreed, `execution_failure` when the check cannot start.
    /// (In `--json` this is `halt_reason`.)
    #[serde(skip)]
    pub halt: Option<HaltReason>,
    /// Where the logs of the disagreeing runs (and one majority run) were kept.
    pub kept_logs: Option<PathBuf>,
    /// An operator stopped the probe (Ctrl-C, SIGTERM) before its planned runs.
    pub interrupted: bool,
}

impl ProbeReport {
    /// One line for people: the achieved bound, or the flake and its dimensions.
    pub fn summary(&self) -> String {
        match self.halt {
            Some(HaltReason::CheckFlaky) => {
                let dims: Vec<&str> = self.broken.iter().map(|d| d.as_str()).collect();
                format!(
                    "check_flaky: {} of {} runs disagreed with the majority; broken by: {}{}",
                    self.disagreements,
                    self.runs,
                    dims.join(", "),
                    if self.intrinsic {
                        " (intrinsic: unperturbed runs disagreed too)"
                    } else {
                        ""
                    }
                )
            }
            Some(HaltReason::ExecutionFailure) => {
                "execution_failure: the check cannot be started (exit 126/127 or not spawned)"
                    .into()
            }
            _ => format!(
                "{}0 failures in {} runs: flake rate below {} at {} confidence",
                if self.interrupted {
                    "interrupted: "
                } else {
                    ""
                },
                self.runs,
                stats::percent_up(self.flake_rate_upper),
                stats::percent_plain(self.confidence)
            ),
        }
    }
}

/// Whether a probe that has seen a disagreement (first at run `split`) has seen enough: two
/// more full rotations after it, and five rotations in all, so that every dimension had its
/// chances and the majority is clear.
fn settled(done: u64, split: u64, rotation: usize) -> bool {
    let rotation = rotation as u64;
    done >= split + 2 * rotation && done >= 5 * rotation
}

/// Runs the probe. `progress` sees every run as it ends (with the planned total).
pub fn probe(
    ws: &Workspace,
    opts: &ProbeOptions,
    progress: &mut dyn FnMut(&ProbeRun, u64),
) -> Result<ProbeReport, ProbeError> {
    let scratch = Scratch::create(ws, "probe", &opts.worktree_seed)?;
    let faketime = faketime_library();
    let rotation: Vec<Dimension> = Dimension::ALL
        .into_iter()
        .filter(|d| *d != Dimension::Clock || faketime.is_some())
        .collect();
    let mut rng = Rng::new(opts.seed);
    let mut per_dim_count = [0_u64; 5];
    let mut runs: Vec<ProbeRun> = Vec::new();
    let mut logs: Vec<PathBuf> = Vec::new();
    let mut first_split: Option<u64> = None;
    let mut halt = None;
    let mut interrupted = false;
    for i in 0..opts.runs {
        if crate::stop::requested().is_some() {
            interrupted = true;
            break;
        }
        let dimension = rotation[(i % rotation.len() as u64) as usize];
        let slot = Dimension::ALL
            .iter()
            .position(|d| *d == dimension)
            .unwrap_or(0);
        let mut p = perturbation(
            dimension,
            per_dim_count[slot],
            &mut rng,
            faketime.as_deref(),
        );
        // The attempts' environment first, so a perturbed variable always wins.
        let mut env = opts.env.clone();
        env.append(&mut p.env);
        p.env = env;
        per_dim_count[slot] += 1;
        let log = scratch
            .logs()
            .join(format!("run-{:04}-{}.log", i + 1, dimension.as_str()));
        let (verdict, end) =
            run_once(&opts.command, scratch.tree(), opts.timeout, &p, log.clone())?;
        if end.outcome == Outcome::Stopped {
            // Ended by an operator: not a verdict.
            interrupted = true;
            break;
        }
        let run = ProbeRun {
            index: i + 1,
            dimension,
            setting: p.setting,
            verdict,
            outcome: end.outcome,
            exit_code: end.exit_code,
            duration_ms: end.duration.as_millis() as u64,
        };
        progress(&run, opts.runs);
        let unstartable = cannot_start(run.outcome, run.exit_code);
        runs.push(run);
        logs.push(log);
        if unstartable && i == 0 {
            halt = Some(HaltReason::ExecutionFailure);
            break;
        }
        if first_split.is_none() && runs.iter().any(|r| r.verdict != runs[0].verdict) {
            first_split = Some(i + 1);
        }
        if first_split.is_some_and(|split| settled(i + 1, split, rotation.len())) {
            break;
        }
    }
    // The majority verdict, and who disagreed with it.
    let mut counts: Vec<(Verdict, u64)> = Vec::new();
    for r in &runs {
        match counts.iter_mut().find(|(v, _)| *v == r.verdict) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.verdict.clone(), 1)),
        }
    }
    let majority = counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(v, _)| v.clone());
    let disagreeing: Vec<&ProbeRun> = runs
        .iter()
        .filter(|r| Some(&r.verdict) != majority.as_ref())
        .collect();
    let n = runs.len() as u64;
    let k = disagreeing.len() as u64;
    let mut dimensions = Vec::new();
    for d in Dimension::ALL {
        let available = d != Dimension::Clock || faketime.is_some();
        dimensions.push(DimensionReport {
            dimension: d,
            available,
            note: (!available).then(|| {
                "libfaketime is not installed (install `faketime`, or set NIGHTSHIFT_FAKETIME_LIB); the clock was not perturbed".to_owned()
            }),
            runs: runs.iter().filter(|r| r.dimension == d).count() as u64,
            disagreements: disagreeing.iter().filter(|r| r.dimension == d).count() as u64,
        });
    }
    let broken: Vec<Dimension> = dimensions
        .iter()
        .filter(|d| d.disagreements > 0)
        .map(|d| d.dimension)
        .collect();
    let intrinsic = broken.contains(&Dimension::Baseline);
    if halt.is_none() && k > 0 {
        halt = Some(HaltReason::CheckFlaky);
    }
    let kept_logs = if k > 0 {
        keep_logs(ws, &runs, &logs, majority.as_ref())
    } else {
        None
    };
    let flake_rate_upper = stats::clopper_pearson_upper(k, n, opts.confidence);
    Ok(ProbeReport {
        command: opts.command.clone(),
        commit: scratch.commit().to_owned(),
        seed: opts.seed,
        planned_runs: opts.runs,
        runs: n,
        confidence: opts.confidence,
        max_flake_rate: opts.max_flake_rate,
        majority,
        disagreements: k,
        flake_rate_upper,
        meets_target: opts.max_flake_rate.map(|r| k == 0 && flake_rate_upper <= r),
        broken,
        intrinsic,
        dimensions,
        disagreeing_runs: disagreeing.into_iter().take(20).cloned().collect(),
        halt,
        kept_logs,
        interrupted,
    })
}

/// Copies the logs of the disagreeing runs and of one majority run out of the scratch
/// directory into `.nightshift/logs/probe-<time>/`, so the flake can be read afterwards.
fn keep_logs(
    ws: &Workspace,
    runs: &[ProbeRun],
    logs: &[PathBuf],
    majority: Option<&Verdict>,
) -> Option<PathBuf> {
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let dir = ws.dir().join("logs").join(format!("probe-{stamp}"));
    std::fs::create_dir_all(&dir).ok()?;
    let mut kept_majority = false;
    let mut kept = 0;
    for (run, log) in runs.iter().zip(logs) {
        let is_majority = Some(&run.verdict) == majority;
        if (is_majority && kept_majority) || (!is_majority && kept >= 20) {
            continue;
        }
        if let Some(name) = log.file_name()
            && std::fs::copy(log, dir.join(name)).is_ok()
        {
            if is_majority {
                kept_majority = true;
            } else {
                kept += 1;
            }
        }
    }
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_tell_red_apart_by_what_failed() {
        let a = b"TAP version 13\n1..2\nok 1 - a\nnot ok 2 - b\n";
        let b = b"TAP version 13\n1..2\nnot ok 1 - a\nok 2 - b\n";
        let va = Verdict::of(false, a);
        let vb = Verdict::of(false, b);
        assert_ne!(va, vb);
        assert_eq!(va, Verdict::of(false, a));
        assert_eq!(Verdict::of(true, b"whatever").key(), "green:unparsed");
        assert!(va.key().starts_with("red:"));
    }

    #[test]
    fn perturbations_rotate_and_repeat_under_one_seed() {
        let mut r1 = Rng::new(7);
        let mut r2 = Rng::new(7);
        let a = perturbation(Dimension::Seed, 0, &mut r1, None);
        let b = perturbation(Dimension::Seed, 0, &mut r2, None);
        assert_eq!(a, b);
        assert!(a.env.iter().any(|(k, _)| k == "NIGHTSHIFT_SEED"));
        let zones: Vec<String> = (0..4)
            .map(|n| perturbation(Dimension::Timezone, n, &mut r1, None).setting)
            .collect();
        assert_eq!(zones.len(), 4);
        assert!(zones.iter().all(|z| z.starts_with("TZ=")));
        assert_ne!(zones[0], zones[1]);
        let clock = perturbation(Dimension::Clock, 0, &mut r1, None);
        assert!(!clock.env.iter().any(|(k, _)| k == "LD_PRELOAD"));
        let load = perturbation(Dimension::CpuLoad, 0, &mut r1, None);
        assert!(load.load_threads >= 1);
    }
}
