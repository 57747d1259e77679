//! The conformance suite: every scenario of issue 11 against the REAL agent CLIs (Claude Code,
//! Codex, Gemini CLI, aider), each driven by `nightshift run` with the default `[agent]` table
//! against the scripted model server (crates/model-server).
//!
//! CLIs come from `NIGHTSHIFT_AGENTS_DIR` (what `.ci/install-agents` prints), else from PATH. A
//! missing CLI is skipped loudly; with `CI=true` or `NIGHTSHIFT_CONFORMANCE_REQUIRE=1` it fails.
//! Cases run in parallel (`NIGHTSHIFT_CONFORMANCE_JOBS`, default 6); arguments filter them by
//! substring of `<cli>/<scenario>`. The table printed at the end is docs/conformance.md's.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on purpose"
)]

#[path = "../it/harness.rs"]
#[expect(
    dead_code,
    reason = "shared with the it suite; not every helper is used here"
)]
mod harness;

mod agents;
mod case;
mod scenarios;

use std::process::ExitCode;
use std::sync::Mutex;

use case::Row;

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("NIGHTSHIFT_CONFORMANCE_REQUIRE").is_ok_and(|v| v == "1")
}

fn cell<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or("–".to_owned(), ToString::to_string)
}

fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| CLI | scenario | result | outcome | attempts (failed) | requests after trip | stall → stalled (s) | usage recorded vs server (prompt/output) | time (s) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let result = if r.failures.is_empty() {
            "pass"
        } else {
            "FAIL"
        };
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} ({}) | {} | {} | {} | {:.0} |\n",
            r.cli,
            r.scenario,
            result,
            r.outcome,
            cell(&r.attempts),
            cell(&r.attempts_failed),
            cell(&r.after_trip),
            r.stall_secs.map_or("–".to_owned(), |s| format!("{s:.1}")),
            cell(&r.usage),
            r.secs
        ));
    }
    t
}

/// Cases known to fail on today's adapters, each with what is missing (docs/conformance.md,
/// "Known gaps"). They run and are reported like any other, but do not fail the suite; a gap that
/// passes is said so (remove it from this list). Any other case that fails is run once more
/// (the CLIs are real processes on a shared machine) and fails the suite if it fails again.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn known_gap(id: &str) -> Option<&'static str> {
    KNOWN_GAPS
        .iter()
        .find(|(g, _)| *g == id)
        .map(|(_, why)| *why)
}

use scenarios::Body;

/// Runs one case; a panic is a failure of the case, not of the suite.
fn run_case(id: &str, agent: &agents::Agent, body: Body) -> Row {
    match std::panic::catch_unwind(|| body(agent)) {
        Ok(row) => row,
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            let (cli, scenario) = id.split_once('/').unwrap_or((id, ""));
            Row {
                cli: cli.to_owned(),
                scenario: scenario.to_owned(),
                failures: vec![format!("panicked: {why}")],
                ..Row::default()
            }
        }
    }
}

/// One line per case as it ends, and its failures.
fn report(id: &str, row: &Row, rerun: bool) {
    let gap = known_gap(id);
    let verdict = match (row.failures.is_empty(), gap) {
        (true, None) if rerun => "ok (on its second run, alone)",
        (true, None) => "ok",
        (true, Some(_)) => "ok (a known gap that passed: remove it from KNOWN_GAPS)",
        (false, Some(_)) => "known gap",
        (false, None) => "FAILED",
    };
    if let (false, Some(why)) = (row.failures.is_empty(), gap) {
        eprintln!("    {id}: known gap: {why}");
    }
    eprintln!(
        "conformance: {id} ... {verdict} ({:.0}s) {}",
        row.secs, row.outcome
    );
    for f in &row.failures {
        eprintln!("    {id}: {f}");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        return ExitCode::SUCCESS; // nothing for test listers: this binary is its own harness
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let (found, missing) = agents::discover();
    let mut failed = false;
    for m in &missing {
        if required() {
            eprintln!(
                "conformance: FAILED: agent CLI {m} is missing (install with .ci/install-agents; NIGHTSHIFT_AGENTS_DIR=<its output>)"
            );
            failed = true;
        } else {
            eprintln!(
                "conformance: SKIPPED: agent CLI {m} not found (NIGHTSHIFT_AGENTS_DIR or PATH); its scenarios did not run"
            );
        }
    }
    let mut cases = Vec::new();
    for agent in &found {
        eprintln!(
            "conformance: {} is {} ({})",
            agent.name,
            agent.version,
            agent.bin_dir.display()
        );
        for (name, applies, body) in scenarios::ALL {
            let id = format!("{}/{name}", agent.name);
            if applies(agent)
                && (filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str())))
            {
                cases.push((id, agent.clone(), *body));
            }
        }
    }
    let jobs: usize = std::env::var("NIGHTSHIFT_CONFORMANCE_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
        .max(1);
    let started = std::time::Instant::now();
    eprintln!("conformance: {} cases, {jobs} at a time", cases.len());
    let queue = Mutex::new(cases.into_iter().enumerate().collect::<Vec<_>>());
    let rows = Mutex::new(Vec::new());
    // A case that fails is run once more, alone, after the others: the CLIs are real processes
    // on a shared machine, and a timing that breaks under six at a time says little about the
    // adapter; one that fails alone too fails the suite.
    let retries = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().pop();
                    let Some((n, (id, agent, body))) = next else {
                        break;
                    };
                    let row = run_case(&id, &agent, body);
                    if !row.failures.is_empty() && known_gap(&id).is_none() {
                        eprintln!(
                            "conformance: {id} failed ({}); it runs once more, alone, after the others",
                            row.failures.join("; ")
                        );
                        retries.lock().unwrap().push((n, (id, agent, body), row));
                        continue;
                    }
                    report(&id, &row, false);
                    rows.lock().unwrap().push((n, row));
                }
            });
        }
    });
    let mut retries = retries.into_inner().unwrap();
    retries.sort_by_key(|(n, _, _)| *n);
    for (n, (id, agent, body), first) in retries {
        eprintln!("conformance: {id}: running it once more, alone");
        let mut row = run_case(&id, &agent, body);
        if !row.failures.is_empty() {
            row.failures.extend(
                first
                    .failures
                    .iter()
                    .map(|f| format!("(first run, {} at a time) {f}", jobs)),
            );
        }
        report(&id, &row, true);
        rows.lock().unwrap().push((n, row));
    }
    let mut rows = rows.into_inner().unwrap();
    rows.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    let failures = rows
        .iter()
        .filter(|r| {
            !r.failures.is_empty() && known_gap(&format!("{}/{}", r.cli, r.scenario)).is_none()
        })
        .count();
    let gaps = rows.iter().filter(|r| !r.failures.is_empty()).count() - failures;
    let mut summary = table(&rows);
    for r in &rows {
        let id = format!("{}/{}", r.cli, r.scenario);
        for f in &r.failures {
            let tag = if known_gap(&id).is_some() {
                "known gap"
            } else {
                "FAILED"
            };
            summary.push_str(&format!("{tag}: {id}: {f}\n"));
        }
    }
    for m in &missing {
        summary.push_str(&format!("missing: agent CLI {m}\n"));
    }
    summary.push_str(&format!(
        "conformance: {} cases, {failures} failed, {gaps} known gaps, {} CLIs missing, {:.0}s\n",
        rows.len(),
        missing.len(),
        started.elapsed().as_secs_f64()
    ));
    print!("{summary}");
    // CI shows the end of its log: .ci/run prints this file last.
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-summary.txt");
    if let Err(e) = std::fs::write(&path, &summary) {
        eprintln!("conformance: could not write {}: {e}", path.display());
    }
    if failed || failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
