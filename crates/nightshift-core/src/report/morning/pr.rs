//! An item's section of the morning report as a pull-request body (Markdown): the run's
//! headline, the item's verdict, where its work is, its receipt (digest, signature, verdict)
//! and the `replay` command that re-checks it. `[integrate] pr_command` gets it as a file.

use std::fmt::Write as _;

use super::{ItemSection, Morning, Work, short};

/// The PR body for `item`, or `None` when the report has no such item.
pub fn pr_body(report: &Morning, item: &str) -> Option<String> {
    let it: &ItemSection = report.items.iter().find(|i| i.id == item)?;
    let mut out = String::new();
    let _ = writeln!(out, "## nightshift: `{}`\n", it.id);
    let _ = writeln!(
        out,
        "- **verdict**: {}{}",
        it.outcome.as_str(),
        it.reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    );
    match &it.work {
        Work::Commit { commit } => {
            let _ = writeln!(out, "- **commit**: `{}`", short(commit));
        }
        Work::Preserved { ref_name, restore } => {
            let _ = writeln!(out, "- **work**: kept under `{ref_name}` (`{restore}`)");
        }
        Work::Branch { branch } => {
            let _ = writeln!(out, "- **work**: branch `{branch}` kept");
        }
        Work::None => {}
    }
    let receipt = it.attempts.iter().rev().find_map(|a| a.receipt.as_ref());
    match receipt {
        Some(r) => {
            // The headline's own judgement of this item (a failure names it first).
            let mine = format!("{}: ", it.id);
            let no_green =
                report.headline.failures.iter().any(|f| {
                    f.starts_with(&mine) && f.contains("no green check on the merged result")
                });
            let check = if r.signature != "valid" {
                "unknown: the receipt does not verify"
            } else if no_green || !it.outcome.is_shipped() {
                "not recorded green on the merged result"
            } else {
                "green on the merged result (recorded in its signed receipt)"
            };
            let _ = writeln!(out, "- **check**: {check}");
            let _ = writeln!(
                out,
                "- **receipt**: `{}` sha256 `{}`, signature {}{}",
                r.path,
                r.digest,
                r.signature,
                r.verdict
                    .as_deref()
                    .map(|v| format!(", verdict {v}"))
                    .unwrap_or_default()
            );
            for m in &r.missing {
                let _ = writeln!(out, "  - missing: {m}");
            }
            if let Some(p) = &r.problem {
                let _ = writeln!(out, "  - problem: {p}");
            }
            let _ = writeln!(out, "- **re-check offline**: `{}`", r.replay);
        }
        None => {
            let _ = writeln!(out, "- **receipt**: none was written for this item");
        }
    }
    for g in report
        .headline
        .gaps
        .iter()
        .filter(|g| g.item.as_deref() == Some(it.id.as_str()))
    {
        let _ = writeln!(out, "- **gap** ({}): {}", g.kind, g.detail);
    }
    let s = &it.spend;
    let _ = writeln!(
        out,
        "- **spend**: {} session(s), {} input + {} output tokens, {} turns{}",
        s.sessions,
        s.input_tokens,
        s.output_tokens,
        s.turns,
        s.usd_estimate
            .map(|u| format!(", ~${u:.2} (the CLI's estimate)"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "\nRun `{}` ({}): **{}**.",
        report.run_id,
        report.state,
        report.headline.kind.title()
    );
    Some(out)
}
