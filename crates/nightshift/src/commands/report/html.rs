//! The morning report as one self-contained HTML page: inline CSS and SVG, no script, nothing
//! fetched; readable printed and on a phone.
//!
//! Each chart sits on a frame of its own tint (`SESSIONS_TINT`, `SPEND_TINT`, `FAILING_TINT`),
//! which the screenshot test uses to find the chart's region in the rendered page.

use std::fmt::Write as _;

use nightshift_core::report::morning::{ItemSection, Morning, OutcomeKind, Work, short};

use super::text::{duration, spend, thousands};

/// Chart frame fills (distinct, so a screenshot can locate each chart).
pub const SESSIONS_TINT: &str = "#eef4fb";
pub const SPEND_TINT: &str = "#effaf1";
pub const FAILING_TINT: &str = "#fbf1ee";

const CHART_W: f64 = 640.0;
const LABEL_W: f64 = 120.0;

const CSS: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1a202c;margin:0;padding:1rem;background:#fff}
main{max-width:52rem;margin:0 auto}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.6rem 0 .5rem;border-bottom:1px solid #cbd5e0}
h3{font-size:1rem;margin:0 0 .3rem}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;background:#edf2f7;padding:0 .25rem;border-radius:3px;word-break:break-all}
.headline{padding:.8rem 1rem;border-radius:6px;border:2px solid;margin:1rem 0}
.headline b{font-size:1.3rem;letter-spacing:.03em}
.verified{border-color:#2f855a;background:#f0fff4}.verified_with_gaps{border-color:#b7791f;background:#fffff0}
.not_verified{border-color:#c53030;background:#fff5f5}
.item{border:1px solid #cbd5e0;border-radius:6px;padding:.6rem .8rem;margin:.6rem 0;break-inside:avoid}
.badge{display:inline-block;font-size:12px;font-weight:600;padding:0 .45rem;border-radius:9px;color:#fff;vertical-align:middle}
.ok{background:#2f855a}.bad{background:#c53030}.wait{background:#b7791f}.idle{background:#718096}
ul,ol{padding-left:1.3rem}li{margin:.2rem 0}
figure{margin:.8rem 0}figcaption{font-size:13px;color:#4a5568}
svg{width:100%;height:auto;display:block}
.muted{color:#4a5568;font-size:13px}
@media print{body{padding:0}a{color:inherit;text-decoration:none}.item{border-color:#999}}
";

/// The whole page.
pub fn page(r: &Morning) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>nightshift report {}</title><style>{CSS}</style></head><body><main>\n",
        esc(&r.run_id)
    );
    let _ = writeln!(
        out,
        "<h1>Morning report</h1><p class=\"muted\">run <code>{}</code> onto <code>{}</code> · started {} · {}</p>",
        esc(&r.run_id),
        esc(&r.target),
        esc(&r.started_at),
        esc(&match (&r.halt_reason, r.exit_code) {
            (Some(h), Some(c)) => format!("finished: {h}, exit {c}"),
            (Some(h), None) => format!("finished: {h}"),
            _ => r.state.clone(),
        })
    );

    // Headline.
    let kind = serde_json::to_value(r.headline.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let _ = write!(
        out,
        "<section id=\"headline\" class=\"headline {kind}\"><b>{}</b>",
        r.headline.kind.title()
    );
    if !r.headline.failures.is_empty() || !r.headline.gaps.is_empty() {
        out.push_str("<ul>");
        for f in &r.headline.failures {
            let _ = write!(out, "<li>✗ {}</li>", esc(f));
        }
        for g in &r.headline.gaps {
            let _ = write!(
                out,
                "<li>gap <code>{}</code>{}: {}</li>",
                esc(&g.kind),
                g.item
                    .as_deref()
                    .map(|i| format!(" (<a href=\"#{}\">{}</a>)", anchor(i), esc(i)))
                    .unwrap_or_default(),
                esc(&g.detail)
            );
        }
        out.push_str("</ul>");
    } else {
        out.push_str("<p>Every shipped item's receipt verifies and its check was green on the merged result.</p>");
    }
    out.push_str("</section>\n");

    let shipped = r.items.iter().filter(|i| i.outcome.is_shipped()).count();
    let _ = writeln!(
        out,
        "<p>{shipped} of {} attempted items shipped; {} never attempted.<br>Spend: {}</p>",
        r.items.len(),
        r.never_attempted.len(),
        esc(&spend(&r.spend))
    );

    if !r.needs_human.is_empty() {
        out.push_str("<h2 id=\"needs-you\">Needs you, most urgent first</h2><ol>");
        for a in &r.needs_human {
            let _ = write!(
                out,
                "<li><b>{}</b> <a href=\"#{}\">{}</a>: {}<br><code>{}</code></li>",
                esc(&a.kind.replace('_', " ")),
                anchor(&a.item),
                esc(&a.item),
                esc(&a.why),
                esc(&a.command)
            );
        }
        out.push_str("</ol>\n");
    }

    out.push_str("<h2 id=\"timeline\">The night</h2>\n");
    sessions_chart(&mut out, r);
    spend_chart(&mut out, r);
    failing_chart(&mut out, r);

    out.push_str("<h2 id=\"items\">Items</h2>\n");
    for item in &r.items {
        item_section(&mut out, item);
    }
    if !r.never_attempted.is_empty() {
        out.push_str("<h2 id=\"never-attempted\">Never attempted</h2>\n");
        for item in &r.never_attempted {
            item_section(&mut out, item);
        }
    }
    if !r.decisions.is_empty() {
        out.push_str("<h2 id=\"decisions\">Decisions the run took by itself</h2><ul>");
        for d in &r.decisions {
            let _ = write!(
                out,
                "<li><b>{}</b>{} — {}<br><span class=\"muted\">to reverse: {}</span></li>",
                esc(&d.kind.replace('_', " ")),
                d.item
                    .as_deref()
                    .map(|i| format!(" (<a href=\"#{}\">{}</a>)", anchor(i), esc(i)))
                    .unwrap_or_default(),
                esc(&d.what),
                esc(&d.reverse)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str(
        "<p class=\"muted\">Made by <code>nightshift report</code> from the store and the signed receipts only. Tokens and turns are what the agent reported; USD is the agent CLI's estimate.</p>\n</main></body></html>\n",
    );
    out
}

/// The `id` of an item's section: `item-` and the id, bytes outside `[A-Za-z0-9_-]` as `.XX`.
pub fn anchor(id: &str) -> String {
    let mut out = String::from("item-");
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            let _ = write!(out, ".{b:02x}");
        }
    }
    out
}

fn badge(o: OutcomeKind) -> &'static str {
    match o {
        OutcomeKind::Shipped
        | OutcomeKind::Accepted
        | OutcomeKind::Confirmed
        | OutcomeKind::ShippedEarlier => "ok",
        OutcomeKind::AwaitingOperator | OutcomeKind::Escalated | OutcomeKind::Running => "wait",
        OutcomeKind::NotAttempted | OutcomeKind::Retrying => "idle",
        _ => "bad",
    }
}

fn item_section(out: &mut String, item: &ItemSection) {
    let _ = write!(
        out,
        "<section class=\"item\" id=\"{}\"><h3>{} <span class=\"badge {}\">{}</span></h3>",
        anchor(&item.id),
        esc(&item.id),
        badge(item.outcome),
        esc(&item.outcome.as_str().replace('_', " "))
    );
    if let Some(reason) = &item.reason {
        let _ = write!(out, "<p>{}</p>", esc(reason));
    }
    match &item.work {
        Work::Commit { commit } => {
            let _ = write!(
                out,
                "<p>Work: on the target as <code>{}</code></p>",
                esc(short(commit))
            );
        }
        Work::Preserved { ref_name, restore } => {
            let _ = write!(
                out,
                "<p>Work: kept at <code>{}</code> — <code>{}</code></p>",
                esc(ref_name),
                esc(restore)
            );
        }
        Work::Branch { branch } => {
            let _ = write!(out, "<p>Work: branch <code>{}</code> kept</p>", esc(branch));
        }
        Work::None => {}
    }
    for a in &item.operator_actions {
        let _ = write!(out, "<p>Asks of you: {}</p>", esc(a));
    }
    if !item.attempts.is_empty() {
        let _ = write!(
            out,
            "<p class=\"muted\">Spend: {}</p><ul>",
            esc(&spend(&item.spend))
        );
        for att in &item.attempts {
            let failing = att
                .failing
                .iter()
                .map(|f| f.map_or("?".to_owned(), |n| n.to_string()))
                .collect::<Vec<_>>()
                .join(" → ");
            let _ = write!(
                out,
                "<li>Attempt {}: {} <span class=\"muted\">({} sessions{})</span>",
                att.attempt,
                esc(&att.ended),
                att.sessions,
                if failing.is_empty() {
                    String::new()
                } else {
                    format!(", failing {}", esc(&failing))
                }
            );
            if let Some(rc) = &att.receipt {
                let state = match (rc.signature.as_str(), &rc.verdict) {
                    ("valid", Some(v)) => format!("signature valid, verdict {v}"),
                    ("no_key", _) => "not verifiable: no public key".to_owned(),
                    _ => format!(
                        "DOES NOT VERIFY: {}",
                        rc.problem.as_deref().unwrap_or("bad signature")
                    ),
                };
                let _ = write!(
                    out,
                    "<br>Receipt <code class=\"digest\" data-path=\"{}\">{}</code> ({})<br><code>{}</code>",
                    esc(&rc.path),
                    esc(&rc.digest),
                    esc(&state),
                    esc(&rc.replay)
                );
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    for m in &item.messages {
        let _ = write!(
            out,
            "<p class=\"muted\">Told by {} at {}: {} ({})</p>",
            esc(&m.who),
            esc(&m.at),
            esc(&m.text),
            esc(&super::delivery(m))
        );
    }
    out.push_str("</section>\n");
}

fn frame(out: &mut String, id: &str, tint: &str, height: f64, caption: &str) {
    let _ = write!(
        out,
        "<figure id=\"{id}\"><svg viewBox=\"0 0 {w} {height}\" role=\"img\" aria-label=\"{caption}\" xmlns=\"http://www.w3.org/2000/svg\">\
         <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{height}\" fill=\"{tint}\"/>",
        w = CHART_W + LABEL_W,
        caption = esc(caption)
    );
}

fn end_frame(out: &mut String, caption: &str) {
    let _ = writeln!(
        out,
        "</svg><figcaption>{}</figcaption></figure>",
        esc(caption)
    );
}

fn x_of(ms: i64, span: i64) -> f64 {
    LABEL_W + 8.0 + (ms.max(0) as f64 / span.max(1) as f64) * (CHART_W - 16.0)
}

fn sessions_chart(out: &mut String, r: &Morning) {
    let t = &r.timeline;
    let ids: Vec<&ItemSection> = r
        .items
        .iter()
        .filter(|i| t.sessions.iter().any(|s| s.item == i.id))
        .collect();
    let row = 22.0;
    let height = 28.0 + row * ids.len().max(1) as f64;
    let caption = format!(
        "Agent sessions per item over the night ({}); green: the item shipped, red: it did not",
        duration(t.span_ms)
    );
    frame(out, "chart-sessions", SESSIONS_TINT, height, &caption);
    for (n, item) in ids.iter().enumerate() {
        let y = 14.0 + row * n as f64;
        let _ = write!(
            out,
            "<text x=\"6\" y=\"{:.1}\" font-size=\"12\" fill=\"#1a202c\">{}</text>",
            y + 13.0,
            esc(&clip(&item.id, 16))
        );
        let colour = if item.outcome.is_shipped() {
            "#2f855a"
        } else {
            "#c53030"
        };
        for s in t.sessions.iter().filter(|s| s.item == item.id) {
            let x0 = x_of(s.start_ms, t.span_ms);
            let x1 = x_of(s.end_ms.unwrap_or(t.span_ms), t.span_ms);
            let _ = write!(
                out,
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{colour}\"><title>{} attempt {} iteration {}</title></rect>",
                y + 1.0,
                (x1 - x0).max(6.0),
                esc(&item.id),
                s.attempt,
                s.iteration
            );
        }
    }
    end_frame(out, &caption);
}

fn spend_chart(out: &mut String, r: &Morning) {
    let t = &r.timeline;
    let height = 160.0;
    let last = t.spend.last().map_or(0.0, |p| p.weighted_tokens);
    let cap = t.caps.run_tokens.map(|c| c as f64);
    let top = cap.unwrap_or(0.0).max(last).max(1.0) * 1.05;
    let y_of = |v: f64| height - 16.0 - (v / top) * (height - 32.0);
    let caption = format!(
        "Weighted tokens spent over the night: {}{}",
        thousands(last),
        cap.map(|c| format!(" of the run_tokens cap {} (dashed)", thousands(c)))
            .unwrap_or_else(|| " (no run_tokens cap set)".into())
    );
    frame(out, "chart-spend", SPEND_TINT, height, &caption);
    let _ = write!(
        out,
        "<line x1=\"{LABEL_W}\" y1=\"{b:.1}\" x2=\"{}\" y2=\"{b:.1}\" stroke=\"#4a5568\" stroke-width=\"1\"/>\
         <text x=\"6\" y=\"{:.1}\" font-size=\"12\" fill=\"#1a202c\">tokens</text>",
        CHART_W + LABEL_W - 4.0,
        height / 2.0,
        b = y_of(0.0)
    );
    if let Some(c) = cap {
        let _ = write!(
            out,
            "<line x1=\"{LABEL_W}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#c05621\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>",
            CHART_W + LABEL_W - 4.0,
            y = y_of(c)
        );
    }
    let mut points = vec![format!("{:.1},{:.1}", x_of(0, t.span_ms), y_of(0.0))];
    for p in &t.spend {
        points.push(format!(
            "{:.1},{:.1}",
            x_of(p.at_ms, t.span_ms),
            y_of(p.weighted_tokens)
        ));
    }
    let _ = write!(
        out,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"3\"/>",
        points.join(" ")
    );
    for p in &t.spend {
        let _ = write!(
            out,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#2b6cb0\"/>",
            x_of(p.at_ms, t.span_ms),
            y_of(p.weighted_tokens)
        );
    }
    end_frame(out, &caption);
}

fn failing_chart(out: &mut String, r: &Morning) {
    let t = &r.timeline;
    let row = 34.0;
    let height = 20.0 + row * t.failing.len().max(1) as f64;
    let caption = "Failing tests per work check, per item (each attempt a line; a green dot: the check passed; a hollow one: the output did not parse)";
    frame(out, "chart-failing", FAILING_TINT, height, caption);
    for (n, (id, points)) in t.failing.iter().enumerate() {
        let y0 = 10.0 + row * n as f64;
        let _ = write!(
            out,
            "<text x=\"6\" y=\"{:.1}\" font-size=\"12\" fill=\"#1a202c\">{}</text>",
            y0 + 20.0,
            esc(&clip(id, 16))
        );
        let top = points
            .iter()
            .filter_map(|p| p.failing)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let y_of = |v: usize| y0 + 28.0 - (v as f64 / top) * 24.0;
        // Points spread evenly: a trajectory is read by order, not by clock.
        let step = (CHART_W - 24.0) / points.len().max(1) as f64;
        let mut line: Vec<String> = Vec::new();
        let mut attempt = None;
        for (k, p) in points.iter().enumerate() {
            let x = LABEL_W + 12.0 + step * k as f64;
            if attempt != Some(p.attempt) {
                if line.len() > 1 {
                    let _ = write!(
                        out,
                        "<polyline points=\"{}\" fill=\"none\" stroke=\"#9b2c2c\" stroke-width=\"2\"/>",
                        line.join(" ")
                    );
                }
                line.clear();
                attempt = Some(p.attempt);
            }
            let y = y_of(if p.green { 0 } else { p.failing.unwrap_or(0) });
            line.push(format!("{x:.1},{y:.1}"));
            let (fill, stroke) = match (p.green, p.failing) {
                (true, _) => ("#2f855a", "#2f855a"),
                (false, Some(_)) => ("#9b2c2c", "#9b2c2c"),
                (false, None) => ("none", "#9b2c2c"),
            };
            let _ = write!(
                out,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"2\"><title>{} attempt {} iteration {}: {}</title></circle>",
                esc(id),
                p.attempt,
                p.iteration,
                match (p.green, p.failing) {
                    (true, _) => "green".to_owned(),
                    (false, Some(n)) => format!("{n} failing"),
                    (false, None) => "unparsed".to_owned(),
                }
            );
        }
        if line.len() > 1 {
            let _ = write!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"#9b2c2c\" stroke-width=\"2\"/>",
                line.join(" ")
            );
        }
    }
    end_frame(out, caption);
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// HTML-escapes text for element content and double-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}
