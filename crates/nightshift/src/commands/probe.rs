//! `nightshift probe`: is the oracle trustworthy? Repeated, perturbed check runs on HEAD; the
//! achieved bound on the flake rate, or exit 14 naming the dimension that broke it.

use std::io::{IsTerminal, Write};

use nightshift_core::check::probe::{self, ProbeOptions, ProbeRun};
use nightshift_core::check::stats;
use nightshift_core::config;
use nightshift_core::halt::{ExitClass, HaltReason};

use crate::CommandResult;
use crate::cli::ProbeArgs;
use crate::error::{CommandError, chain};
use crate::json::{PROBE_VERSION, ProbeOutput};

pub fn run(args: &ProbeArgs) -> CommandResult {
    if args.json_schema {
        outln!(
            "{}",
            serde_json::to_string_pretty(&crate::json::probe_schema()).unwrap_or_default()
        );
        return Ok(0);
    }
    // Bad values are refused before anything runs.
    if !stats::valid_probability(args.confidence) {
        return Err(invalid(format!(
            "read --confidence: {} is not between 0 and 1 (exclusive)",
            args.confidence
        ))
        .hint("e.g. --confidence 0.95"));
    }
    if let Some(rate) = args.max_flake_rate
        && !stats::valid_probability(rate)
    {
        return Err(invalid(format!(
            "read --max-flake-rate: {rate} is not between 0 and 1 (exclusive)"
        ))
        .hint("e.g. --max-flake-rate 0.01 for 1%"));
    }
    if args.runs == Some(0) {
        return Err(invalid("read --runs: 0 runs would prove nothing").hint("give at least 1"));
    }
    let ws = super::workspace(&args.repo)?;
    // Ctrl-C ends the check in flight and removes the scratch worktree before exiting.
    nightshift_core::stop::install();
    let path = ws.root().join(config::FILE_NAME);
    let (timeout, seeds, configured) = if path.exists() || args.check.is_none() {
        let cfg = config::load(&path)?;
        let check = nightshift_core::doctor::primary_check(&cfg);
        (cfg.check.timeout, cfg.seed.clone(), check)
    } else {
        (config::DEFAULT_CHECK_TIMEOUT, Vec::new(), None)
    };
    let Some(command) = args.check.clone().or(configured) else {
        return Err(invalid("find a check to probe: none is configured")
            .hint("set [check] command in nightshift.toml, or pass --check \"COMMAND\""));
    };
    let (runs, target) = match args.runs {
        Some(n) => (n, None),
        None => {
            let rate = args.max_flake_rate.unwrap_or(probe::DEFAULT_MAX_FLAKE_RATE);
            let n = stats::runs_needed(rate, args.confidence).ok_or_else(|| {
                invalid(format!(
                    "derive the run count: no count bounds the flake rate below {rate} at {}",
                    args.confidence
                ))
            })?;
            (n, Some(rate))
        }
    };
    let seed = args.seed.unwrap_or_else(probe::fresh_seed);
    let opts = ProbeOptions {
        command: command.clone(),
        timeout,
        runs,
        confidence: args.confidence,
        max_flake_rate: target,
        seed,
        worktree_seed: seeds,
    };
    let json = args.json;
    let tty = std::io::stderr().is_terminal();
    if !json {
        let goal = match target {
            Some(rate) => format!(
                " (to bound the flake rate below {} at {} confidence)",
                stats::percent_up(rate),
                stats::percent_plain(args.confidence)
            ),
            None => String::new(),
        };
        eoutln!("probe: `{command}` at HEAD, {runs} runs{goal}, seed {seed}");
        let dirty = nightshift_core::git::Git::new(ws.root())
            .run(&["status", "--porcelain", "--untracked-files=no"])
            .is_ok_and(|s| !s.trim().is_empty());
        if dirty {
            eoutln!("probe: note: uncommitted changes are not probed (the check runs on HEAD)");
        }
    }
    let mut progress = |run: &ProbeRun, total: u64| {
        if json {
            return;
        }
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(
                err,
                "\r\x1b[2K[{}/{}] {} {} → {}",
                run.index,
                total,
                run.dimension,
                run.setting,
                if run.verdict.green { "green" } else { "red" }
            );
            let _ = err.flush();
        } else if run.index.is_multiple_of(25) || run.index == total {
            let _ = writeln!(err, "[{}/{}] runs done", run.index, total);
        }
    };
    let report = probe::probe(&ws, &opts, &mut progress).map_err(|e| {
        CommandError::new(ExitClass::Workspace, format!("probe: {}", chain(&e)))
            .hint("the probe needs a commit at HEAD and the [worktree] seed files")
    })?;
    if tty && !json {
        eoutln!();
    }
    let code = report.halt.map_or(0, |h| h.class().code());
    if json {
        let out = ProbeOutput {
            version: PROBE_VERSION,
            summary: report.summary(),
            halt_reason: report.halt.map(HaltReason::as_str),
            exit_code: code,
            report: &report,
        };
        outln!("{}", serde_json::to_string(&out).unwrap_or_default());
        return Ok(code);
    }
    outln!("{}", report.summary());
    for d in &report.dimensions {
        let line = if d.available {
            format!(
                "  {:<9} {:>4} runs, {} disagreed",
                d.dimension.as_str(),
                d.runs,
                d.disagreements
            )
        } else {
            format!(
                "  {:<9} not perturbed: {}",
                d.dimension.as_str(),
                d.note.as_deref().unwrap_or("unavailable")
            )
        };
        outln!("{line}");
    }
    for r in report.disagreeing_runs.iter().take(5) {
        outln!(
            "  run {} ({}, {}) was {} (exit {})",
            r.index,
            r.dimension,
            r.setting,
            if r.verdict.green { "green" } else { "red" },
            r.exit_code.map_or("none".into(), |c| c.to_string())
        );
    }
    if report.halt.is_none() && report.majority.as_ref().is_some_and(|v| !v.green) {
        outln!(
            "  note: the check is red at HEAD (every run agreed); the bound is on disagreements"
        );
    }
    if let Some(dir) = &report.kept_logs {
        outln!("  logs: {}", dir.display());
    }
    if report.halt.is_none()
        && let Some(false) = report.meets_target
        && let Some(rate) = report.max_flake_rate
    {
        outln!(
            "  the bound does not reach the target {}",
            stats::percent_up(rate)
        );
    }
    if report.halt == Some(HaltReason::CheckFlaky) {
        outln!(
            "  reproduce the settings with --seed {}; a check the loop cannot trust turns noise into work",
            report.seed
        );
    }
    Ok(code)
}

fn invalid(message: impl Into<String>) -> CommandError {
    CommandError::new(ExitClass::Invariant, message)
}
