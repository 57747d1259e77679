//! The terminal form of the morning report: plain text, no colour, at most ~100 columns.

use std::fmt::Write as _;

use nightshift_core::report::morning::{
    AttemptSection, HeadlineKind, ItemSection, Morning, OutcomeKind, SpendLabelled, Work, short,
};

/// Columns of the text timeline.
const WIDTH: usize = 48;

/// The whole report as text.
pub fn render(r: &Morning) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nmorning report — run {} onto {} ({})",
        r.run_id,
        r.target,
        match (&r.halt_reason, r.exit_code) {
            (Some(h), Some(c)) => format!("finished: {h}, exit {c}"),
            (Some(h), None) => format!("finished: {h}"),
            _ => r.state.clone(),
        }
    );
    let _ = writeln!(out, "\n{}", r.headline.kind.title());
    for f in &r.headline.failures {
        let _ = writeln!(out, "  ✗ {f}");
    }
    for g in &r.headline.gaps {
        let _ = writeln!(
            out,
            "  gap {}{}: {}",
            g.kind,
            g.item
                .as_deref()
                .map(|i| format!(" ({i})"))
                .unwrap_or_default(),
            g.detail
        );
    }
    if r.headline.kind == HeadlineKind::Verified {
        let _ = writeln!(
            out,
            "  every shipped item's receipt verifies and its check was green on the merged result"
        );
    }

    let shipped = r.items.iter().filter(|i| i.outcome.is_shipped()).count();
    let _ = writeln!(
        out,
        "\n{shipped} of {} attempted item{} shipped; {} never attempted",
        r.items.len(),
        plural(r.items.len()),
        r.never_attempted.len()
    );
    let _ = writeln!(out, "spend: {}", spend(&r.spend));

    if !r.needs_human.is_empty() {
        let _ = writeln!(out, "\nneeds you, most urgent first:");
        for (n, a) in r.needs_human.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {}. {:<19} {}: {}\n     → {}",
                n + 1,
                a.kind,
                a.item,
                a.why,
                a.command
            );
        }
    }

    if !r.items.is_empty() {
        let _ = writeln!(out, "\nitems:");
        for item in &r.items {
            item_block(&mut out, item);
        }
    }
    if !r.never_attempted.is_empty() {
        let _ = writeln!(out, "\nnever attempted:");
        for item in &r.never_attempted {
            let _ = writeln!(
                out,
                "  {}  {}",
                item.id,
                item.reason.as_deref().unwrap_or("")
            );
        }
    }
    if !r.decisions.is_empty() {
        let _ = writeln!(out, "\ndecisions the run took by itself:");
        for d in &r.decisions {
            let _ = writeln!(
                out,
                "  {}{}: {}\n     to reverse: {}",
                d.kind,
                d.item
                    .as_deref()
                    .map(|i| format!(" ({i})"))
                    .unwrap_or_default(),
                d.what,
                d.reverse
            );
        }
    }
    timeline(&mut out, r);
    out
}

fn mark(o: OutcomeKind) -> &'static str {
    match o {
        OutcomeKind::Shipped
        | OutcomeKind::Accepted
        | OutcomeKind::Confirmed
        | OutcomeKind::ShippedEarlier => "ok",
        OutcomeKind::Running | OutcomeKind::Retrying => "..",
        OutcomeKind::AwaitingOperator | OutcomeKind::Escalated => "??",
        _ => "XX",
    }
}

fn item_block(out: &mut String, item: &ItemSection) {
    let label = item.outcome.as_str().replace('_', " ");
    let said = match item.reason.as_deref() {
        // A reason that already names the outcome is not prefixed with it twice.
        Some(r) if r.starts_with(&label) => r.to_owned(),
        Some(r) => format!("{label}: {r}"),
        None => label,
    };
    let _ = writeln!(out, "  {} {}  {said}", mark(item.outcome), item.id);
    match &item.work {
        Work::Commit { commit } => {
            let _ = writeln!(out, "       work: on the target as {}", short(commit));
        }
        Work::Preserved { ref_name, restore } => {
            let _ = writeln!(out, "       work: kept at {ref_name}  → {restore}");
        }
        Work::Branch { branch } => {
            let _ = writeln!(out, "       work: branch {branch} kept");
        }
        Work::None => {}
    }
    for action in &item.operator_actions {
        let _ = writeln!(out, "       asks of you: {action}");
    }
    let _ = writeln!(out, "       spend: {}", spend(&item.spend));
    for att in &item.attempts {
        attempt_line(out, att);
    }
    for m in &item.messages {
        let _ = writeln!(
            out,
            "       told by {} at {}: {} ({})",
            m.who,
            m.at,
            m.text,
            super::delivery(m)
        );
    }
}

fn attempt_line(out: &mut String, att: &AttemptSection) {
    let failing = if att.failing.is_empty() {
        "no check".to_owned()
    } else {
        format!(
            "failing {}",
            att.failing
                .iter()
                .map(|f| f.map_or("?".to_owned(), |n| n.to_string()))
                .collect::<Vec<_>>()
                .join(" → ")
        )
    };
    let _ = writeln!(
        out,
        "       attempt {}: {} ({} session{}, {failing})",
        att.attempt,
        att.ended,
        att.sessions,
        plural(att.sessions as usize)
    );
    if let Some(r) = &att.receipt {
        let state = match (r.signature.as_str(), &r.verdict) {
            ("valid", Some(v)) => format!("signature valid, verdict {v}"),
            ("no_key", _) => "not verifiable: no public key".to_owned(),
            _ => format!(
                "DOES NOT VERIFY: {}",
                r.problem.as_deref().unwrap_or("bad signature")
            ),
        };
        let _ = writeln!(
            out,
            "         receipt sha256:{} ({state})\n           → {}",
            r.digest.get(..16).unwrap_or(&r.digest),
            r.replay
        );
    }
}

/// `1,234 tokens (weighted) · 5 turns · ~$0.12 (CLI estimate) · 3 sessions`.
pub fn spend(s: &SpendLabelled) -> String {
    let mut parts = vec![
        format!("{} tokens (weighted)", thousands(s.weighted_tokens)),
        format!("{} turn{}", s.turns, plural(s.turns as usize)),
    ];
    match s.usd_estimate {
        Some(usd) => parts.push(format!("~${usd:.2} (CLI estimate)")),
        None => parts.push("USD unknown".into()),
    }
    parts.push(format!(
        "{} session{}",
        s.sessions,
        plural(s.sessions as usize)
    ));
    if s.sessions_without_spend > 0 {
        parts.push(format!(
            "{} reported no spend (totals undercount)",
            s.sessions_without_spend
        ));
    }
    parts.join(" · ")
}

pub fn thousands(v: f64) -> String {
    let n = v.round().max(0.0) as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Sessions per item as rows of time cells, spend as a sparkline against the cap, failing-set
/// trajectories as numbers.
fn timeline(out: &mut String, r: &Morning) {
    let t = &r.timeline;
    if t.sessions.is_empty() && t.failing.is_empty() {
        return;
    }
    let span = t.span_ms.max(1);
    let col = |ms: i64| -> usize {
        let c = (ms.max(0) as u128 * (WIDTH as u128 - 1)) / span as u128;
        (c as usize).min(WIDTH - 1)
    };
    let _ = writeln!(
        out,
        "\ntimeline ({} from start to the last event):",
        duration(t.span_ms)
    );
    let ids: Vec<&str> = r
        .items
        .iter()
        .map(|i| i.id.as_str())
        .filter(|id| t.sessions.iter().any(|s| s.item == *id))
        .collect();
    let name_w = ids.iter().map(|i| i.len()).max().unwrap_or(0).min(24);
    for id in &ids {
        let mut row = ['·'; WIDTH];
        for s in t.sessions.iter().filter(|s| s.item == *id) {
            let (a, b) = (col(s.start_ms), col(s.end_ms.unwrap_or(t.span_ms)));
            for c in row.iter_mut().take(b + 1).skip(a) {
                *c = '█';
            }
        }
        let n = t.sessions.iter().filter(|s| s.item == *id).count();
        let _ = writeln!(
            out,
            "  {:<name_w$}  {}  {n} session{}",
            truncate(id, name_w),
            row.iter().collect::<String>(),
            plural(n)
        );
    }
    if let Some(last) = t.spend.last() {
        const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        let top = t
            .caps
            .run_tokens
            .map(|c| c as f64)
            .unwrap_or(last.weighted_tokens)
            .max(last.weighted_tokens)
            .max(1.0);
        let mut row = [' '; WIDTH];
        for p in &t.spend {
            let level = ((p.weighted_tokens / top) * 7.0).round().clamp(0.0, 7.0) as usize;
            row[col(p.at_ms)] = BARS[level];
        }
        let cap = t
            .caps
            .run_tokens
            .map(|c| format!(" of the {} cap", thousands(c as f64)))
            .unwrap_or_else(|| " (no run_tokens cap)".into());
        let _ = writeln!(
            out,
            "  {:<name_w$}  {}  {} tokens{cap}",
            "spend",
            row.iter().collect::<String>(),
            thousands(last.weighted_tokens)
        );
    }
    for (id, points) in &t.failing {
        let mut text = String::new();
        let mut attempt = 0;
        for p in points {
            if p.attempt != attempt {
                if attempt != 0 {
                    text.push_str(" | ");
                }
                let _ = write!(text, "a{}: ", p.attempt);
                attempt = p.attempt;
            } else {
                text.push_str(" → ");
            }
            text.push_str(&match (p.failing, p.green) {
                (_, true) => "green".to_owned(),
                (Some(n), false) => n.to_string(),
                (None, false) => "?".to_owned(),
            });
        }
        let _ = writeln!(out, "  failing {id}: {text}");
    }
}

fn truncate(s: &str, w: usize) -> String {
    s.chars().take(w).collect()
}

pub fn duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
