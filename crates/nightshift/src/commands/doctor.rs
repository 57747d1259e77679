//! `nightshift doctor`: the preconditions of an unattended run, each a gate; and the quick
//! doctor `run` passes before it starts.

use std::io::Write;

use nightshift_core::config::{self, Config};
use nightshift_core::doctor::{self, DoctorOptions, Finding, Report, Status};
use nightshift_core::halt::{ExitClass, HaltReason};
use nightshift_core::workspace::Workspace;

use crate::CommandResult;
use crate::cli::DoctorArgs;
use crate::error::CommandError;
use crate::json::{DOCTOR_VERSION, DoctorOutput};

pub fn run(args: &DoctorArgs) -> CommandResult {
    if args.json_schema {
        outln!(
            "{}",
            serde_json::to_string_pretty(&crate::json::doctor_schema()).unwrap_or_default()
        );
        return Ok(0);
    }
    if args.runs == 0 {
        return Err(CommandError::new(
            ExitClass::Invariant,
            "read --runs: 0 check runs cannot show determinism",
        )
        .hint("give at least 1 (default 3)"));
    }
    let ws = super::workspace(&args.repo)?;
    // Ctrl-C ends the check in flight and removes the scratch worktree before exiting.
    nightshift_core::stop::install();
    let config = config::load(&ws.root().join(config::FILE_NAME))?;
    let opts = DoctorOptions {
        quick: args.quick,
        determinism_runs: args.runs,
        check: args.check.clone(),
    };
    let json = args.json;
    let mut progress = |f: &Finding| {
        if !json {
            let mut out = std::io::stdout().lock();
            crate::out::note_stdout(write!(out, "{}", finding_lines(f)));
            crate::out::note_stdout(out.flush());
        }
    };
    let report = doctor::doctor(&ws, &config, &opts, &mut progress);
    let code = report.exit_code();
    let halt = report.refusal().and_then(|f| f.halt);
    if json {
        let out = DoctorOutput {
            version: DOCTOR_VERSION,
            findings: &report.findings,
            halt_reason: halt.map(HaltReason::as_str),
            exit_code: code,
        };
        outln!("{}", serde_json::to_string(&out).unwrap_or_default());
    } else {
        outln!("{}", verdict_line(&report));
    }
    Ok(code)
}

/// One finding for people: status, name, detail; the action indented below.
fn finding_lines(f: &Finding) -> String {
    let status = match f.status {
        Status::Ok => "ok  ",
        Status::Warn => "warn",
        Status::Fail => "FAIL",
    };
    let mut text = format!("{status}  {:<14} {}\n", f.name, f.detail);
    if f.status != Status::Ok {
        if let Some(halt) = f.halt {
            text.push_str(&format!(
                "      {:<14} {} (exit {})\n",
                "",
                halt,
                halt.class().code()
            ));
        }
        if let Some(action) = &f.action {
            text.push_str(&format!("      {:<14} → {action}\n", ""));
        }
    }
    text
}

fn verdict_line(report: &Report) -> String {
    let warns = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Warn || (f.status == Status::Fail && !f.refuses()))
        .count();
    match report.refusal() {
        Some(f) => format!(
            "doctor: a run would be refused: {} (exit {}); {} warning(s)",
            f.halt.map_or("internal_error", HaltReason::as_str),
            report.exit_code(),
            warns
        ),
        None => format!("doctor: ready for an unattended run; {warns} warning(s)"),
    }
}

/// The quick doctor at `nightshift run` start: warnings go to stderr; a failing safety or product
/// finding refuses the run with its halt reason's exit code.
pub fn gate_run(ws: &Workspace, config: &Config) -> Result<(), CommandError> {
    let opts = DoctorOptions {
        quick: true,
        ..DoctorOptions::default()
    };
    let report = doctor::doctor(ws, config, &opts, &mut |_| {});
    for f in &report.findings {
        // Notification channels are said by `notify::run_starting` (once, with ATTENTION).
        if f.name.starts_with("notify") {
            continue;
        }
        if f.status == Status::Warn || (f.status == Status::Fail && !f.refuses()) {
            eoutln!("warning: doctor: {}: {}", f.name, f.detail);
        }
    }
    match report.refusal() {
        Some(f) => {
            let halt = f.halt.unwrap_or(HaltReason::InternalError);
            let mut err = CommandError::new(
                halt.class(),
                format!("start: {halt}: {} (doctor: {})", f.detail, f.name),
            );
            err.hint = f.action.clone();
            Err(err)
        }
        None => Ok(()),
    }
}
