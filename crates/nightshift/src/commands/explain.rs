//! `nightshift explain [ITEM]`: per attempt, the failing-set trajectory and how it ended; per
//! item, whether retrying (with a raised limit) is rational and what to do next.
//!
//! Reads the latest run (read-only). Without ITEM: every item of it that did not ship. Exit 0
//! whatever the verdicts (a reading command); an unknown ITEM is exit 20. No run here: a
//! message and exit 0, as `status`.

use std::fmt::Write as _;

use nightshift_core::halt::ExitClass;
use nightshift_core::report::explain::{
    self, AttemptReport, End, ExplainError, Explanation, ItemReport, Point,
};

use crate::CommandResult;
use crate::cli::ExplainArgs;
use crate::error::CommandError;
use crate::json::{Explain, explain_schema};
use crate::render::short;

pub fn run(args: &ExplainArgs) -> CommandResult {
    if args.json_schema {
        outln!(
            "{}",
            serde_json::to_string_pretty(&explain_schema()).unwrap_or_default()
        );
        return Ok(0);
    }
    let ws = super::workspace(&args.repo)?;
    let store = super::read_store(&ws)?;
    let run = match &store {
        Some(store) => store.latest_run()?,
        None => None,
    };
    let explanation = match (&store, &run) {
        (Some(store), Some(run)) => Some(
            explain::explain(store, run, args.item.as_deref()).map_err(|e| match e {
                ExplainError::UnknownItem { item, known } => CommandError::new(
                    ExitClass::Invariant,
                    format!(
                        "explain `{item}`: the latest run ({}) has no such item",
                        run.id
                    ),
                )
                .hint(if known.is_empty() {
                    "the run has no items".to_owned()
                } else {
                    format!("its items: {}", known.join(", "))
                }),
                ExplainError::Store(e) => e.into(),
            })?,
        ),
        _ => None,
    };
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&Explain::new(explanation)).unwrap_or_default()
        );
        return Ok(0);
    }
    match explanation {
        Some(e) => out!("{}", render(&e)),
        None => outln!("no run has started in {}", ws.root().display()),
    }
    Ok(0)
}

/// The human form: one block per item.
pub fn render(e: &Explanation) -> String {
    let mut out = String::new();
    if e.items.is_empty() {
        let _ = writeln!(
            out,
            "run {}: every item shipped ({}); nothing to explain",
            e.run_id,
            if e.shipped_omitted.is_empty() {
                "the plan is empty".to_owned()
            } else {
                e.shipped_omitted.join(", ")
            }
        );
        return out;
    }
    let _ = writeln!(out, "run {}", e.run_id);
    for item in &e.items {
        out.push('\n');
        item_block(&mut out, item);
    }
    if !e.shipped_omitted.is_empty() {
        let _ = writeln!(
            out,
            "\nshipped, not shown: {} (name one to see it)",
            e.shipped_omitted.join(", ")
        );
    }
    out
}

fn item_block(out: &mut String, item: &ItemReport) {
    let n = item.attempts.len();
    let _ = writeln!(
        out,
        "{}  {} after {n} attempt{}",
        item.id,
        item.state,
        if n == 1 { "" } else { "s" }
    );
    // Each attempt's own verdict is named when they differ (the item's is the latest one's).
    let mixed = item
        .attempts
        .iter()
        .any(|a| a.verdict.kind != item.verdict.kind);
    for att in &item.attempts {
        let own = if mixed {
            format!("  [{}]", att.verdict.kind.as_str())
        } else {
            String::new()
        };
        let _ = writeln!(out, "  attempt {}: {}{own}", att.attempt, trajectory(att));
    }
    let v = &item.verdict;
    let _ = writeln!(out, "  verdict: {}", v.kind.headline());
    let _ = writeln!(out, "  why: {}", v.why);
    for (i, step) in v.next.iter().enumerate() {
        let _ = writeln!(out, "  {} {step}", if i == 0 { "next:" } else { "     " });
    }
}

/// `failing 5 → 3 → 1 (cap 3 reached); base 6`.
fn trajectory(att: &AttemptReport) -> String {
    let points: Vec<String> = att.points.iter().map(point).collect();
    let path = if points.is_empty() {
        "no check ran".to_owned()
    } else {
        format!("failing {}", points.join(" → "))
    };
    let end = match &att.end {
        End::Open => "running".to_owned(),
        End::Shipped { commit } => format!("shipped {}", short(commit)),
        End::Failed { .. } if att.cap_reached => format!("cap {} reached", att.cap),
        End::Failed {
            halt: Some(halt), ..
        } => format!("halted: {halt}"),
        End::Failed { reason, .. } => format!("ended: {reason}"),
    };
    let base = att
        .baseline_failing
        .map(|b| format!("; {b} failing at the base"))
        .unwrap_or_default();
    format!("{path} ({end}){base}")
}

fn point(p: &Point) -> String {
    let mut text = match (p.failing_count(), p.exit_code) {
        (Some(n), _) if p.green => format!("{n} (green)"),
        (Some(n), _) => n.to_string(),
        (None, _) if p.green => "green".to_owned(),
        (None, Some(c)) => format!("? (unparsed, exit {c})"),
        (None, None) => "? (unparsed, killed)".to_owned(),
    };
    for g in &p.guard_failures {
        let _ = write!(text, " [guard {} failed]", g.guard);
    }
    text
}
