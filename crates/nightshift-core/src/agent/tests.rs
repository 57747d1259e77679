//! Tests of the agent parsers: the recorded fixtures (figures from the fixtures' EXPECTED.md) and
//! synthetic streams for what the recordings do not show.

use std::collections::BTreeSet;
use std::path::PathBuf;

use jiff::tz::TimeZone;

use super::claude::{ClaudeParser, parse_json_output};
use super::codex::CodexParser;
use super::gemini::GeminiParser;
use super::reset::reset_from_text;
use super::*;

/// Recorded real agent streams (copied from the project's shared fixtures, with their
/// provenance in SOURCES.md and the expected figures in EXPECTED.md).
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agent-streams");

/// 2026-09-01T14:00:00Z.
const NOW: i64 = 1_788_271_200;

fn fixture(rel: &str) -> Vec<u8> {
    let path = PathBuf::from(FIXTURES).join(rel);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "fixture {} is missing ({e}); the recorded streams live in \
             crates/nightshift-core/tests/fixtures/agent-streams",
            path.display()
        )
    })
}

/// Feeds `bytes` line by line, then finishes.
fn run(p: &mut dyn StreamParser, bytes: &[u8]) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        out.extend(p.feed_line(line));
    }
    out.extend(p.finish());
    out
}

fn run_str(p: &mut dyn StreamParser, text: &str) -> Vec<AgentEvent> {
    run(p, text.as_bytes())
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: 0,
    }
}

fn finishes(events: &[AgentEvent]) -> Vec<&Finished> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Finished(f) => Some(f),
            _ => None,
        })
        .collect()
}

fn the_finish(events: &[AgentEvent]) -> &Finished {
    let f = finishes(events);
    assert_eq!(f.len(), 1, "expected exactly one Finished in {events:#?}");
    f[0]
}

fn malformed(events: &[AgentEvent]) -> Vec<(usize, &str)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Malformed { line, error } => Some((*line, error.as_str())),
            _ => None,
        })
        .collect()
}

fn usage_sum(events: &[AgentEvent]) -> Usage {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .fold(Usage::default(), |a, b| a + b)
}

fn texts(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn session_ids(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SessionStarted { session_id, .. } => Some(session_id.as_str()),
            _ => None,
        })
        .collect()
}

/// One Claude process of a stream file, as EXPECTED.md tabulates it.
struct ClaudeSession {
    /// How many lines of the file belong to it (the result line is its last).
    lines: usize,
    session_prefix: &'static str,
    turns: u32,
    msg_sum: Usage,
    result: Usage,
    model_usage_sum: Option<Usage>,
    num_turns: u32,
    cost: f64,
    rate_limit_events: usize,
}

/// Parses a Claude stream file session by session and checks every figure.
fn check_claude_file(rel: &str, sessions: &[ClaudeSession]) {
    let bytes = fixture(rel);
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    assert_eq!(
        lines.len(),
        sessions.iter().map(|s| s.lines).sum::<usize>(),
        "{rel}: line count"
    );
    let mut p = ClaudeParser::new();
    let mut all = Vec::new();
    let mut at = 0;
    let mut before = SessionTotals::default();
    let mut expected_usage = Usage::default();
    let mut expected_cost = 0.0;
    for (i, s) in sessions.iter().enumerate() {
        let mut events = Vec::new();
        for line in &lines[at..at + s.lines - 1] {
            events.extend(p.feed_line(line));
        }
        // Before the result: the running, deduplicated per-message sum.
        let running = p.totals();
        assert_eq!(
            running.usage.saturating_sub(before.usage),
            s.msg_sum,
            "{rel} session {i}: Σ per-message usage"
        );
        assert_eq!(
            running.turns - before.turns,
            s.turns,
            "{rel} session {i}: turns"
        );
        assert_eq!(
            usage_sum(&events),
            s.msg_sum,
            "{rel} session {i}: usage deltas"
        );
        events.extend(p.feed_line(lines[at + s.lines - 1]));
        at += s.lines;

        let ids = session_ids(&events);
        assert_eq!(ids.len(), 1, "{rel} session {i}: one init");
        assert!(ids[0].starts_with(s.session_prefix), "{rel}: {}", ids[0]);
        let f = the_finish(&events);
        assert_eq!(f.kind, FinishKind::Ok, "{rel} session {i}");
        assert_eq!(
            f.result_usage,
            Some(s.result),
            "{rel} session {i}: result.usage"
        );
        assert_eq!(f.turns, Some(s.num_turns), "{rel} session {i}: num_turns");
        assert_eq!(f.cost_usd, Some(s.cost), "{rel} session {i}: cost");
        // The deltas add up to the result's figures (the result corrects the output tokens).
        assert_eq!(usage_sum(&events), s.result, "{rel} session {i}: Σ deltas");
        let after = p.totals();
        assert_eq!(after.usage.saturating_sub(before.usage), s.result);
        assert_eq!(after.turns - before.turns, s.turns);
        if let Some(m) = s.model_usage_sum {
            let added = after
                .by_model
                .iter()
                .map(|(model, u)| {
                    u.saturating_sub(before.by_model.get(model).copied().unwrap_or_default())
                })
                .fold(Usage::default(), |a, b| a + b);
            assert_eq!(added, m, "{rel} session {i}: Σ modelUsage");
        }
        let rl = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    AgentEvent::RateLimit {
                        state: RateLimitState::Allowed,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(
            rl, s.rate_limit_events,
            "{rel} session {i}: rate_limit_event"
        );
        expected_usage += s.result;
        expected_cost += s.cost;
        before = after;
        all.extend(events);
    }
    all.extend(p.finish());
    assert_eq!(malformed(&all), vec![], "{rel}: no malformed lines");
    assert!(
        !all.iter().any(|e| matches!(e, AgentEvent::Unknown { .. })),
        "{rel}: no unknown events"
    );
    let t = p.totals();
    assert_eq!(t.usage, expected_usage, "{rel}: totals");
    assert_eq!(t.cost_usd, Some(expected_cost), "{rel}: total cost");
}

#[test]
fn claude_automagik_read_summarize() {
    check_claude_file(
        "claude/automagik-read-summarize-opus4-2025-06.jsonl",
        &[ClaudeSession {
            lines: 6,
            session_prefix: "aab34d6d",
            turns: 2,
            msg_sum: usage(11, 8, 24744, 71777),
            result: usage(11, 180, 24744, 71777),
            model_usage_sum: None,
            num_turns: 4,
            cost: 1.4090853499999998,
            rate_limit_events: 0,
        }],
    );
}

#[test]
fn claude_gleam_basic_query() {
    check_claude_file(
        "claude/gleam-basic-query-2.1.7.jsonl",
        &[ClaudeSession {
            lines: 3,
            session_prefix: "1d1e46f9",
            turns: 1,
            msg_sum: usage(10, 5, 0, 21570),
            result: usage(10, 25, 0, 21570),
            model_usage_sum: None,
            num_turns: 1,
            cost: 0.1354875,
            rate_limit_events: 0,
        }],
    );
}

#[test]
fn claude_kern_orch_two_processes() {
    check_claude_file(
        "claude/kern-orch-pong-and-bash-2.1.237.jsonl",
        &[
            ClaudeSession {
                lines: 4,
                session_prefix: "ce7af633",
                turns: 1,
                msg_sum: usage(2, 1, 0, 36248),
                result: usage(2, 5, 0, 36248),
                model_usage_sum: Some(usage(904, 16, 0, 36248)),
                num_turns: 1,
                cost: 0.21852600000000003,
                rate_limit_events: 1,
            },
            ClaudeSession {
                lines: 6,
                session_prefix: "7ef0d022",
                turns: 2,
                msg_sum: usage(4, 19, 56257, 14522),
                result: usage(4, 111, 56257, 14522),
                model_usage_sum: Some(usage(909, 127, 56257, 14522)),
                num_turns: 2,
                cost: 0.10667109999999999,
                rate_limit_events: 1,
            },
        ],
    );
    // Per model, side model included: result.usage is the main model only.
    let mut p = ClaudeParser::new();
    let events = run(
        &mut p,
        &fixture("claude/kern-orch-pong-and-bash-2.1.237.jsonl"),
    );
    let t = p.totals();
    assert_eq!(t.by_model.len(), 2);
    assert_eq!(
        t.by_model["claude-haiku-4-5-20251001"],
        usage(902 + 905, 11 + 16, 0, 0)
    );
    assert_eq!(t.by_model["claude-sonnet-5"], usage(6, 116, 56257, 50770));
    assert_eq!(t.turns, 3);
    // One tool round trip in the second process.
    assert!(events.contains(&AgentEvent::ToolCall {
        name: "Bash".into()
    }));
    assert!(events.contains(&AgentEvent::ToolResult { ok: true }));
    assert!(events.contains(&AgentEvent::RateLimit {
        state: RateLimitState::Allowed,
        resets_at: Some(1787254200),
        kind: Some("five_hour".into()),
    }));
}

#[test]
fn claude_vincent_permission_allow() {
    check_claude_file(
        "claude/vincent-permission-allow-2.1.226.jsonl",
        &[ClaudeSession {
            lines: 8,
            session_prefix: "25f505f3",
            turns: 2,
            msg_sum: usage(18, 9, 66670, 548),
            result: usage(18, 491, 66670, 548),
            model_usage_sum: Some(usage(18, 491, 66670, 548)),
            num_turns: 2,
            cost: 0.009825,
            rate_limit_events: 0,
        }],
    );
    let mut p = ClaudeParser::new();
    let events = run(
        &mut p,
        &fixture("claude/vincent-permission-allow-2.1.226.jsonl"),
    );
    assert!(events.contains(&AgentEvent::FileChanged {
        path: r"C:\work\repo\hello.txt".into()
    }));
    assert!(events.contains(&AgentEvent::ToolResult { ok: true }));
    // Thinking blocks are not text.
    assert_eq!(
        texts(&events),
        vec!["Done. Created `hello.txt` with content `hi`."]
    );
}

#[test]
fn claude_vincent_permission_deny() {
    check_claude_file(
        "claude/vincent-permission-deny-2.1.226.jsonl",
        &[ClaudeSession {
            lines: 8,
            session_prefix: "73094031",
            turns: 2,
            msg_sum: usage(18, 12, 60280, 6835),
            result: usage(18, 536, 60280, 6835),
            model_usage_sum: Some(usage(18, 536, 60280, 6835)),
            num_turns: 2,
            cost: 0.02206225,
            rate_limit_events: 0,
        }],
    );
    let mut p = ClaudeParser::new();
    let events = run(
        &mut p,
        &fixture("claude/vincent-permission-deny-2.1.226.jsonl"),
    );
    // The write was denied: a failed tool result and no file change, yet the result is success.
    assert!(events.contains(&AgentEvent::ToolResult { ok: false }));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::FileChanged { .. }))
    );
    assert_eq!(the_finish(&events).kind, FinishKind::Ok);
}

#[test]
fn claude_json_legacy_error_max_turns() {
    let (events, totals) = parse_json_output(
        &fixture("claude/automagik-json-error-max-turns-legacy-2025-05.json"),
        None,
    );
    let f = the_finish(&events);
    // subtype beats is_error:false.
    assert_eq!(f.kind, FinishKind::MaxTurns);
    assert_eq!(f.turns, Some(30));
    assert_eq!(f.cost_usd, Some(3.3112476500000003));
    assert_eq!(f.result_usage, None);
    assert_eq!(totals.turns, 30);
    assert_eq!(totals.cost_usd, Some(3.3112476500000003));
    assert_eq!(totals.usage, Usage::default());
    assert_eq!(malformed(&events), vec![]);
}

#[test]
fn claude_json_multimodel_success() {
    let (events, totals) =
        parse_json_output(&fixture("claude/scylla-json-success-multimodel.json"), None);
    let f = the_finish(&events);
    assert_eq!(f.kind, FinishKind::Ok);
    assert_eq!(f.turns, Some(5));
    assert_eq!(f.cost_usd, Some(0.1273926));
    assert_eq!(f.result_usage, Some(usage(25, 558, 91477, 23266)));
    assert_eq!(totals.usage, usage(25, 558, 91477, 23266));
    assert_eq!(totals.turns, 5);
    assert_eq!(
        totals
            .by_model
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        vec!["claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"]
    );
    assert_eq!(
        totals.by_model["claude-haiku-4-5-20251001"],
        usage(3412, 169, 0, 0)
    );
    assert_eq!(
        totals.by_model["claude-sonnet-4-5-20250929"],
        usage(25, 558, 91477, 23266)
    );
}

/// One Codex file, as EXPECTED.md tabulates it.
fn check_codex_file(
    rel: &str,
    thread_prefix: &str,
    raw: (u64, u64, u64, u64),
    cache_write: u64,
    kind: FinishKind,
    agent_messages: usize,
    commands: usize,
) -> Vec<AgentEvent> {
    let mut p = CodexParser::new();
    let events = run(&mut p, &fixture(rel));
    let ids = session_ids(&events);
    assert_eq!(ids.len(), 1, "{rel}");
    assert!(ids[0].starts_with(thread_prefix), "{rel}: {}", ids[0]);
    let (input, cached, output, reasoning) = raw;
    let expected = Usage {
        input: input - cached - cache_write,
        output,
        cache_read: cached,
        cache_write,
        reasoning,
    };
    let t = p.totals();
    assert_eq!(t.usage, expected, "{rel}: Σ turn.completed");
    assert_eq!(
        t.usage.input + t.usage.cache_read + t.usage.cache_write,
        input
    );
    assert_eq!(usage_sum(&events), expected, "{rel}: deltas");
    assert_eq!(t.turns, 1, "{rel}: turn.started");
    assert_eq!(t.cost_usd, None);
    let f = the_finish(&events);
    assert_eq!(f.kind, kind, "{rel}");
    assert_eq!(
        texts(&events).len(),
        agent_messages,
        "{rel}: agent messages"
    );
    let calls = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolCall { name } if name == "command_execution"))
        .count();
    assert_eq!(
        calls, commands,
        "{rel}: one call per command, started or not"
    );
    let results = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolResult { ok: true }))
        .count();
    assert_eq!(results, commands, "{rel}: command results");
    assert_eq!(malformed(&events), vec![], "{rel}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Unknown { .. }))
    );
    events
}

#[test]
fn codex_agentcmd_ls() {
    check_codex_file(
        "codex/agentcmd-ls-0.46.0.jsonl",
        "019a2d7b",
        (6086, 2944, 223, 0),
        0,
        FinishKind::Ok,
        1,
        1,
    );
}

#[test]
fn codex_vincent_reasoning() {
    let events = check_codex_file(
        "codex/vincent-reasoning-0.147.0.jsonl",
        "019ff703",
        (17792, 0, 3333, 1957),
        0,
        FinishKind::Ok,
        1,
        0,
    );
    assert!(texts(&events)[0].starts_with("Let `P[i]` be the sum"));
}

#[test]
fn codex_vincent_tooluse() {
    check_codex_file(
        "codex/vincent-tooluse-pwsh.jsonl",
        "019fe042",
        (28858, 16128, 196, 87),
        0,
        FinishKind::Ok,
        1,
        1,
    );
}

#[test]
fn codex_turn_failed_with_json_message() {
    let events = check_codex_file(
        "codex/vincent-turn-failed-invalid-model.jsonl",
        "019fe040",
        (0, 0, 0, 0),
        0,
        FinishKind::AgentError {
            message: "The 'gpt-5.6-sol' model requires a newer version of Codex. Please upgrade \
                      to the latest app or CLI and try again."
                .into(),
        },
        0,
        0,
    );
    let f = the_finish(&events);
    assert_eq!(f.result_usage, None);
}

#[test]
fn gemini_oneshot_web_search() {
    let mut p = GeminiParser::new();
    let events = run(
        &mut p,
        &fixture("gemini/oneshot-web-search-stream-json.jsonl"),
    );
    // The three banner lines are Malformed (harmless), nothing else is.
    let bad = malformed(&events);
    assert_eq!(
        bad.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
        vec![1, 2, 3],
        "{bad:?}"
    );
    assert_eq!(
        events[3],
        AgentEvent::SessionStarted {
            session_id: "b35ecd66-4ed8-43cd-b73b-9dd2eb9b2f4e".into(),
            model: Some("auto-gemini-2.5".into()),
        }
    );
    assert_eq!(
        texts(&events),
        vec!["Bogotá is the capital and", " largest city of Colombia."]
    );
    assert!(events.contains(&AgentEvent::ToolCall {
        name: "google_web_search".into()
    }));
    assert!(events.contains(&AgentEvent::ToolResult { ok: true }));
    let expected = usage(18609, 76, 13673, 0);
    assert_eq!(
        expected.input + expected.cache_read,
        32282,
        "input_tokens = cached + input"
    );
    let f = the_finish(&events);
    assert_eq!(f.kind, FinishKind::Ok);
    assert_eq!(f.result_usage, Some(expected));
    let t = p.totals();
    assert_eq!(t.usage, expected);
    assert_eq!(usage_sum(&events), expected);
    // A tool call, then the answer after the tool result: two model turns.
    assert_eq!(t.turns, 2);
    assert_eq!(t.by_model["auto-gemini-2.5"], expected);
}

/// Every recorded stream is covered by a test above, and parses without a panic.
#[test]
fn every_fixture_is_known_and_parses() {
    let known: BTreeSet<&str> = [
        "claude/automagik-json-error-max-turns-legacy-2025-05.json",
        "claude/automagik-read-summarize-opus4-2025-06.jsonl",
        "claude/gleam-basic-query-2.1.7.jsonl",
        "claude/kern-orch-pong-and-bash-2.1.237.jsonl",
        "claude/scylla-json-success-multimodel.json",
        "claude/vincent-permission-allow-2.1.226.jsonl",
        "claude/vincent-permission-deny-2.1.226.jsonl",
        "codex/agentcmd-ls-0.46.0.jsonl",
        "codex/vincent-reasoning-0.147.0.jsonl",
        "codex/vincent-tooluse-pwsh.jsonl",
        "codex/vincent-turn-failed-invalid-model.jsonl",
        "gemini/oneshot-web-search-stream-json.jsonl",
    ]
    .into_iter()
    .collect();
    let mut found = BTreeSet::new();
    for dir in ["claude", "codex", "gemini"] {
        let path = PathBuf::from(FIXTURES).join(dir);
        let entries = std::fs::read_dir(&path)
            .unwrap_or_else(|e| panic!("fixture directory {} is missing: {e}", path.display()));
        for entry in entries {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let rel = format!("{dir}/{name}");
            let bytes = fixture(&rel);
            let events = if rel.ends_with(".json") {
                parse_json_output(&bytes, Some(NOW)).0
            } else {
                let mut p = parser_for(dir).unwrap();
                p.set_now(NOW);
                run(p.as_mut(), &bytes)
            };
            assert_eq!(
                finishes(&events).len(),
                usize::from(rel.contains("kern-orch")) + 1,
                "{rel}"
            );
            found.insert(rel);
        }
    }
    assert_eq!(
        found.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        known,
        "a fixture was added or removed: give it a test with its EXPECTED.md figures"
    );
}

// ---- Synthetic streams -------------------------------------------------------------------

const INIT: &str =
    r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-5"}"#;

fn claude(now: Option<i64>) -> ClaudeParser {
    let mut p = ClaudeParser::new().with_time_zone(TimeZone::UTC);
    if let Some(now) = now {
        p.set_now(now);
    }
    p
}

fn codex(now: Option<i64>) -> CodexParser {
    let mut p = CodexParser::new().with_time_zone(TimeZone::UTC);
    if let Some(now) = now {
        p.set_now(now);
    }
    p
}

#[test]
fn claude_usage_limit_with_rate_limit_event() {
    // agent-clis.md §1, "Ending at a subscription limit".
    let stream = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1790016000,"rateLimitType":"five_hour"}}
{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets 4pm (UTC)","session_id":"5f0c","total_cost_usd":0.0}
"#;
    let events = run_str(&mut claude(Some(NOW)), stream);
    assert_eq!(
        events[0],
        AgentEvent::RateLimit {
            state: RateLimitState::Rejected,
            resets_at: Some(1790016000),
            kind: Some("five_hour".into()),
        }
    );
    // The structured resetsAt wins over the text.
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted {
            resets_at: Some(1790016000)
        }
    );
}

#[test]
fn claude_usage_limit_from_text_only() {
    let stream = r#"{"type":"assistant","message":{"id":"x1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"You've hit your session limit · resets 4pm (UTC)"}],"usage":{"input_tokens":0,"output_tokens":0}},"error":"rate_limit"}
{"type":"result","subtype":"success","is_error":true,"result":"You've hit your session limit · resets 4pm (UTC)","total_cost_usd":0}
"#;
    let mut p = claude(Some(NOW));
    let events = run_str(&mut p, stream);
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted {
            resets_at: Some(1_788_278_400 + 60) // 2026-09-01T16:00Z, to the minute's end
        }
    );
    // A synthetic message is not an API call.
    assert_eq!(p.totals().turns, 0);
    // Without the time, the text cannot be resolved.
    let events = run_str(&mut claude(None), stream);
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted { resets_at: None }
    );
}

#[test]
fn claude_legacy_usage_limit_text() {
    let stream = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"Claude AI usage limit reached|1790016000"}"#;
    let events = run_str(&mut claude(None), stream);
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted {
            resets_at: Some(1790016000)
        }
    );
}

#[test]
fn claude_blocking_limit_is_context_overflow_not_quota() {
    let stream = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"terminal_reason":"blocking_limit","result":"Prompt is too long"}"#;
    let events = run_str(&mut claude(Some(NOW)), stream);
    assert_eq!(the_finish(&events).kind, FinishKind::ContextOverflow);
}

#[test]
fn claude_finish_classification() {
    let cases = [
        (
            r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"errors":["Reached maximum number of turns (1)"]}"#,
            FinishKind::MaxTurns,
        ),
        (
            r#"{"type":"result","subtype":"error_max_budget_usd","is_error":false}"#,
            FinishKind::MaxBudget,
        ),
        (
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded"}"#,
            FinishKind::Transient,
        ),
        (
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"result":"Credit balance is too low"}"#,
            FinishKind::Auth,
        ),
        (
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Please run /login"}"#,
            FinishKind::Auth,
        ),
        (
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["tool crashed"]}"#,
            FinishKind::AgentError {
                message: "tool crashed".into(),
            },
        ),
        (
            r#"{"type":"result","subtype":"success","is_error":false,"result":""}"#,
            FinishKind::Ok,
        ),
    ];
    for (line, kind) in cases {
        let events = run_str(&mut claude(Some(NOW)), line);
        assert_eq!(the_finish(&events).kind, kind, "{line}");
    }
    // The assistant's error code, from a synthetic message before the result.
    let stream = r#"{"type":"assistant","message":{"id":"e","model":"<synthetic>","content":[{"type":"text","text":"Please log in again"}]},"error":"authentication_failed"}
{"type":"result","subtype":"success","is_error":true,"result":""}
"#;
    assert_eq!(
        the_finish(&run_str(&mut claude(None), stream)).kind,
        FinishKind::Auth
    );
}

#[test]
fn claude_api_retry_is_retrying() {
    let line = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":900,"error_status":529,"error":"overloaded"}"#;
    assert_eq!(
        run_str(&mut claude(None), line),
        vec![AgentEvent::Retrying {
            status: Some(529),
            delay_ms: Some(900),
            reason: "overloaded".into(),
        }]
    );
}

#[test]
fn claude_duplicate_message_ids_count_once() {
    let a = r#"{"type":"assistant","message":{"id":"msg_A","model":"m","content":[{"type":"text","text":"one"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":2100,"cache_read_input_tokens":15800,"output_tokens":12}}}"#;
    let a2 = r#"{"type":"assistant","message":{"id":"msg_A","model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":3,"cache_creation_input_tokens":2100,"cache_read_input_tokens":15800,"output_tokens":12}}}"#;
    let b = r#"{"type":"assistant","message":{"id":"msg_B","model":"m","content":[{"type":"text","text":"two"}],"usage":{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":17900,"output_tokens":4}}}"#;
    let stream = [INIT, a, a2, b, a].join("\n");
    let mut p = claude(None);
    let events = run_str(&mut p, &stream);
    let deltas: Vec<Usage> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![usage(3, 12, 15800, 2100), usage(1, 4, 17900, 0)]
    );
    let t = p.totals();
    assert_eq!(t.turns, 2);
    assert_eq!(t.usage, usage(4, 16, 33700, 2100));
    assert_eq!(t.by_model["m"], t.usage);
    assert_eq!(texts(&events), vec!["one", "two", "one"]);
}

#[test]
fn claude_partial_messages_correct_output_as_they_arrive() {
    let stream = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_P","model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}}}}
{"type":"assistant","message":{"id":"msg_P","model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}}}
{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}}
"#;
    let mut p = claude(None);
    let events = run_str(&mut p, stream);
    assert_eq!(usage_sum(&events), usage(5, 42, 100, 0));
    assert_eq!(p.totals().usage, usage(5, 42, 100, 0));
    assert_eq!(p.totals().turns, 1);
}

#[test]
fn unknown_event_types_are_reported_not_fatal() {
    let events = run_str(
        &mut claude(None),
        &[
            INIT,
            r#"{"type":"brand_new_event","x":[1,2,{"y":null}]}"#,
            r#"{"no_type":true}"#,
        ]
        .join("\n"),
    );
    assert_eq!(
        events[1..],
        [
            AgentEvent::Unknown {
                raw_type: "brand_new_event".into()
            },
            AgentEvent::Unknown {
                raw_type: String::new()
            }
        ]
    );
    let events = run_str(&mut codex(None), r#"{"type":"thread.renamed","name":"x"}"#);
    assert_eq!(
        events,
        vec![AgentEvent::Unknown {
            raw_type: "thread.renamed".into()
        }]
    );
    let events = run_str(
        &mut GeminiParser::new(),
        r#"{"type":"thought","content":"hm"}"#,
    );
    assert_eq!(
        events,
        vec![AgentEvent::Unknown {
            raw_type: "thought".into()
        }]
    );
}

#[test]
fn malformed_lines_are_skipped_and_numbered() {
    let stream = b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n\
not json at all\n\
\n\
{\"type\":\"assistant\",\"message\":{\"id\":\n\
[1,2,3]\n\
42\n\
{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}}\r\n\
\xff\xfe\n\
{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"plain prompt\"}}\n";
    let mut p = claude(None);
    let events = run(&mut p, stream);
    let bad: Vec<usize> = malformed(&events).iter().map(|(l, _)| *l).collect();
    assert_eq!(bad, vec![2, 4, 5, 6, 8]);
    assert_eq!(session_ids(&events), vec!["s"]);
    // Invalid UTF-8 inside a string is replaced, not fatal.
    assert_eq!(texts(&events), vec!["caf\u{fffd}"]);
    for (_, error) in malformed(&events) {
        assert!(!error.is_empty());
        assert!(error.chars().next().unwrap().is_lowercase(), "{error}");
    }
}

#[test]
fn schema_drift_costs_the_field_not_the_line() {
    // Fields that change type (a string for an object, an object for a string, a number for a
    // list) are skipped; the rest of the line is still read.
    let stream = r#"{"type":"assistant","message":{"id":"d1","model":{"name":"m"},"content":["plain",{"type":"text","text":"kept"},7],"usage":"n/a"},"error":{"code":1}}
{"type":"user","message":"a string now"}
{"type":"rate_limit_event","rate_limit_info":null}
{"type":"system","subtype":"init","session_id":"s","model":["m"]}
{"type":"result","subtype":"success","is_error":false,"usage":{"input_tokens":"12","output_tokens":3.0},"modelUsage":{"m":5},"num_turns":-1,"total_cost_usd":"free"}
"#;
    let mut p = claude(None);
    let events = run_str(&mut p, stream);
    assert_eq!(malformed(&events), vec![]);
    assert_eq!(texts(&events), vec!["kept"]);
    assert_eq!(
        events[1],
        AgentEvent::SessionStarted {
            session_id: "s".into(),
            model: None
        }
    );
    let f = the_finish(&events);
    assert_eq!(f.kind, FinishKind::Ok);
    assert_eq!(f.result_usage, Some(usage(12, 3, 0, 0)));
    assert_eq!(f.turns, None);
    assert_eq!(f.cost_usd, None);
    // A message whose usage is unreadable is still an API call.
    assert_eq!(p.totals().turns, 1);

    let stream = r#"{"type":"item.completed","item":{"id":"i","type":"file_change","changes":["src/a.rs",{"path":"src/b.rs"}],"status":"completed"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":null,"output_tokens":{"total":3}}}
"#;
    let events = run_str(&mut codex(None), stream);
    assert_eq!(malformed(&events), vec![]);
    assert!(events.contains(&AgentEvent::FileChanged {
        path: "src/b.rs".into()
    }));
    assert_eq!(usage_sum(&events), usage(10, 0, 0, 0));
}

const RATE_EVENT: &str = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1790012400,"rateLimitType":"five_hour"}}"#;

fn assistant_with_text(text: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"id":"msg_G","model":"m","content":[{{"type":"thinking","thinking":"t"}},{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":3,"output_tokens":1,"cache_read_input_tokens":7,"cache_creation_input_tokens":0}}}},"session_id":"s"}}"#
    )
}

#[test]
fn rate_limit_event_glued_inside_another_object_on_one_line() {
    let outer = assistant_with_text("abcd");
    let cut = outer.find("cd\"").unwrap();
    let line = format!("{}{RATE_EVENT}{}", &outer[..cut], &outer[cut..]);
    let mut p = claude(None);
    let events = run_str(&mut p, &line);
    assert_eq!(
        events,
        vec![
            AgentEvent::RateLimit {
                state: RateLimitState::Warning,
                resets_at: Some(1790012400),
                kind: Some("five_hour".into()),
            },
            AgentEvent::Text {
                text: "abcd".into()
            },
            AgentEvent::Usage(usage(3, 1, 7, 0)),
        ]
    );
    assert_eq!(p.totals().turns, 1);
}

#[test]
fn rate_limit_event_splitting_a_line_in_two() {
    // claude-code#49640: the injected event's own newline splits the outer line.
    let outer = assistant_with_text("partial text and the rest");
    let cut = outer.find(" and the rest").unwrap();
    let stream = format!("{}{RATE_EVENT}\n{}\n{INIT}\n", &outer[..cut], &outer[cut..]);
    let mut p = claude(None);
    let events = run_str(&mut p, &stream);
    assert_eq!(malformed(&events), vec![]);
    assert!(matches!(events[0], AgentEvent::RateLimit { .. }));
    assert_eq!(texts(&events), vec!["partial text and the rest"]);
    assert_eq!(p.totals().usage, usage(3, 1, 7, 0));
    assert_eq!(session_ids(&events), vec!["s-1"]);

    // When the rest never comes, the fragment is reported once.
    let stream = format!("{}{RATE_EVENT}\n{INIT}\n", &outer[..cut]);
    let events = run_str(&mut claude(None), &stream);
    assert_eq!(
        malformed(&events).iter().map(|m| m.0).collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(session_ids(&events), vec!["s-1"]);
    let events = run_str(
        &mut claude(None),
        &format!("{}{RATE_EVENT}\n", &outer[..cut]),
    );
    assert_eq!(malformed(&events).len(), 1);
}

#[test]
fn json_with_junk_glued_on() {
    // Junk after, junk before (a terminal escape), and two objects on one line.
    let line = format!("{INIT}garbage");
    let events = run_str(&mut claude(None), &line);
    assert_eq!(session_ids(&events), vec!["s-1"]);
    assert_eq!(malformed(&events).len(), 1);

    let line = format!("\x1b[2K\rspinner {INIT}");
    let events = run_str(&mut claude(None), &line);
    assert_eq!(session_ids(&events), vec!["s-1"]);
    assert_eq!(malformed(&events).len(), 1);

    let line = format!("{INIT}{RATE_EVENT}");
    let events = run_str(&mut claude(None), &line);
    assert_eq!(events.len(), 2);
    assert_eq!(session_ids(&events), vec!["s-1"]);
    assert!(matches!(events[1], AgentEvent::RateLimit { .. }));

    // A nested object that happens to be complete is not an event of its own.
    let line = r#"{"type":"assistant","message":{"usage":{"input_tokens":1}, BROKEN"#;
    let events = run_str(&mut claude(None), line);
    assert_eq!(malformed(&events).len(), 1);
    assert_eq!(events.len(), 1);
}

#[test]
fn ten_megabyte_lines() {
    let big = "x".repeat(10 << 20);
    let tool_result = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":"{big}","is_error":false}}]}}}}"#
    );
    let mut p = claude(None);
    assert_eq!(
        p.feed_line(tool_result.as_bytes()),
        vec![AgentEvent::ToolResult { ok: true }]
    );
    // A line broken everywhere: every `{"` could start an object and each attempt reads to the
    // end; the work stays a few passes of the line. (2 MB here, to keep debug builds quick; the
    // benchmark runs 10 MB lines.)
    let broken = "{\"a\":".repeat(400 << 10);
    let started = std::time::Instant::now();
    let events = p.feed_line(broken.as_bytes());
    assert_eq!(malformed(&events).len(), 1);
    let one_line = started.elapsed();
    let started = std::time::Instant::now();
    for _ in 0..10 {
        p.feed_line(&broken.as_bytes()[..broken.len() / 10]);
    }
    // One line against ten lines a tenth as long: quadratic work would make it ~10x slower.
    assert!(
        one_line < started.elapsed() * 4,
        "the long line took {one_line:?}, ten short ones {:?}",
        started.elapsed()
    );
    // An event injected at the end of a 10 MB assistant line: recovered, both of them.
    let outer = assistant_with_text(&format!("{big}tail"));
    let cut = outer.find("tail").unwrap();
    let line = format!("{}{RATE_EVENT}{}", &outer[..cut], &outer[cut..]);
    let events = p.feed_line(line.as_bytes());
    assert_eq!(events.len(), 3, "rate limit, text, usage");
    assert_eq!(texts(&events)[0].len(), big.len() + 4);
}

#[test]
fn codex_usage_limit_endings() {
    let limit = "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at 3:28 PM.";
    let stream = format!(
        "{{\"type\":\"thread.started\",\"thread_id\":\"t-1\"}}\n{{\"type\":\"turn.started\"}}\n{}\n{}\n",
        serde_json::json!({"type": "error", "message": limit}),
        serde_json::json!({"type": "turn.failed", "error": {"message": limit}}),
    );
    let events = run_str(&mut codex(Some(NOW)), &stream);
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted {
            resets_at: Some(1_788_276_480 + 60) // 2026-09-01T15:28Z, to the minute's end
        }
    );
    // Without the time, a clock time cannot be placed.
    let events = run_str(&mut codex(None), &stream);
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted { resets_at: None }
    );

    let failed = |message: &str| {
        format!(
            "{{\"type\":\"turn.started\"}}\n{}\n",
            serde_json::json!({"type": "turn.failed", "error": {"message": message}})
        )
    };
    let cases = [
        (
            "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 3 days 6 hours 57 minutes.",
            Some(NOW + 3 * 86_400 + 6 * 3_600 + 57 * 60),
        ),
        (
            "You've hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus), or try again at Jul 5th, 2026 8:19 PM.",
            Some(1_783_282_740 + 60),
        ),
        (
            r#"{"type":"error","error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":1777936568,"resets_in_seconds":13872},"status_code":429}"#,
            Some(1_777_936_568),
        ),
        ("You've hit your usage limit. Try again later.", None),
    ];
    for (message, resets_at) in cases {
        let events = run_str(&mut codex(Some(NOW)), &failed(message));
        assert_eq!(
            the_finish(&events).kind,
            FinishKind::QuotaExhausted { resets_at },
            "{message}"
        );
    }
    let others = [
        (
            r#"{"type":"error","status":401,"error":{"type":"invalid_request_error","message":"Your refresh token has expired"}}"#,
            FinishKind::Auth,
        ),
        (
            r#"{"type":"error","status":429,"error":{"type":"rate_limit_exceeded","message":"Rate limit reached for requests"}}"#,
            FinishKind::Transient,
        ),
        (
            "stream disconnected before completion: error sending request",
            FinishKind::Transient,
        ),
        (
            "Codex ran out of room in the model's context window. Start a new conversation.",
            FinishKind::ContextOverflow,
        ),
    ];
    for (message, kind) in others {
        let events = run_str(&mut codex(Some(NOW)), &failed(message));
        assert_eq!(the_finish(&events).kind, kind, "{message}");
    }
}

#[test]
fn codex_fatal_error_without_turn_failed_and_retries() {
    let stream = r#"{"type":"thread.started","thread_id":"t"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}
{"type":"error","message":"unexpected status 401 Unauthorized: token_expired"}
"#;
    let mut p = codex(None);
    let mut events = Vec::new();
    for line in stream.lines() {
        events.extend(p.feed_line(line.as_bytes()));
    }
    assert!(events.contains(&AgentEvent::Retrying {
        status: None,
        delay_ms: None,
        reason: "Reconnecting... 1/5 (stream disconnected before completion)".into(),
    }));
    assert!(finishes(&events).is_empty());
    let end = p.finish();
    assert_eq!(the_finish(&end).kind, FinishKind::Auth);
}

#[test]
fn codex_file_changes_and_mcp_calls() {
    let stream = r#"{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"src/parse.rs","kind":"update"},{"path":"src/new.rs","kind":"add"}],"status":"completed"}}
{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"gh","tool":"search","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_2","type":"mcp_tool_call","server":"gh","tool":"search","status":"failed","error":{"message":"boom"}}}
{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}
"#;
    let events = run_str(&mut codex(None), stream);
    assert_eq!(
        events,
        vec![
            AgentEvent::ToolCall {
                name: "file_change".into()
            },
            AgentEvent::ToolResult { ok: true },
            AgentEvent::FileChanged {
                path: "src/parse.rs".into()
            },
            AgentEvent::FileChanged {
                path: "src/new.rs".into()
            },
            AgentEvent::ToolCall {
                name: "mcp__gh__search".into()
            },
            AgentEvent::ToolResult { ok: false },
            AgentEvent::ToolCall {
                name: "command_execution".into()
            },
            AgentEvent::ToolResult { ok: false },
        ]
    );
}

#[test]
fn gemini_quota_ending_and_retry_warnings() {
    let stream = r#"{"type":"init","session_id":"g","model":"gemini-2.5-pro"}
{"type":"error","severity":"warning","message":"Attempt 1 failed with status 429. Retrying with backoff..."}
{"type":"result","status":"error","error":{"type":"TerminalQuotaError","message":"You have exhausted your daily quota. Please retry in 32.5s."}}
"#;
    let mut p = GeminiParser::new().with_time_zone(TimeZone::UTC);
    p.set_now(NOW);
    let events = run_str(&mut p, stream);
    assert!(events.contains(&AgentEvent::Retrying {
        status: Some(429),
        delay_ms: None,
        reason: "Attempt 1 failed with status 429. Retrying with backoff...".into(),
    }));
    assert_eq!(
        the_finish(&events).kind,
        FinishKind::QuotaExhausted {
            resets_at: Some(NOW + 33)
        }
    );
}

#[test]
fn reset_texts() {
    let utc = TimeZone::UTC;
    let cases: &[(&str, Option<i64>)] = &[
        // A clock time is printed to the minute: it resolves to the minute's end.
        (
            "You've hit your limit · resets 4pm (UTC)",
            Some(1_788_278_400 + 60),
        ),
        // Up to an hour ago still means today; longer ago means tomorrow.
        ("resets 1:30pm (UTC)", Some(NOW - 1800 + 60)),
        ("resets 12pm (UTC)", Some(NOW - 7200 + 86_400 + 60)),
        ("try again at 3:28 PM.", Some(1_788_276_480 + 60)),
        (
            "try again at 21:55",
            Some(1_788_276_480 + 6 * 3600 + 27 * 60 + 60),
        ),
        (
            "Try again in 5 days 22 hours 11\nminutes.",
            Some(NOW + 5 * 86_400 + 22 * 3_600 + 11 * 60),
        ),
        (
            "Claude AI usage limit reached|1790016000",
            Some(1_790_016_000),
        ),
        (
            "Usage will reset when your monthly cycle ends on Sep 26th, 2026.",
            Some(1_790_380_800),
        ),
        ("resets (Mars/Olympus_Mons) sometime", None),
        ("resets 4pm (Mars/Olympus_Mons)", None),
        ("no time here", None),
    ];
    for (text, want) in cases {
        assert_eq!(reset_from_text(text, Some(NOW), &utc), *want, "{text}");
    }
    // A date without a year is the next such date; the zone comes from the system database.
    let ny = TimeZone::get("America/New_York")
        .expect("the system time zone database (tzdata) is needed for this test");
    assert_eq!(
        reset_from_text("resets Jan 12, 10:59am (America/New_York)", Some(NOW), &utc),
        Some(1_799_769_540 + 60)
    );
    // Local time is the zone given when the text names none.
    assert_eq!(
        reset_from_text("try again at 11:28 AM", Some(NOW), &ny),
        Some(1_788_276_480 + 60)
    );
    // Absolute forms need no clock; relative ones do.
    assert_eq!(
        reset_from_text("try again at Jul 5th, 2026 8:19 PM", None, &utc),
        Some(1_783_282_740 + 60)
    );
    assert_eq!(reset_from_text("try again in 2 hours", None, &utc), None);
}

#[test]
fn usage_arithmetic_and_weighting() {
    let a = Usage {
        input: 10,
        output: 20,
        cache_read: 1000,
        cache_write: 30,
        reasoning: 5,
    };
    let mut b = a;
    b += a;
    assert_eq!(b, a + a);
    assert_eq!(b.cache_read, 2000);
    assert_eq!(a.weighted(Usage::DEFAULT_CACHE_READ_WEIGHT), 160.0);
    assert_eq!(a.weighted(1.0), 1060.0);
    assert_eq!(a.saturating_sub(b), Usage::default());
    assert!(Usage::default().is_zero());
}

#[test]
fn parser_for_knows_the_four_clis() {
    for kind in ["claude", "codex", "gemini"] {
        let mut p = parser_for(kind).unwrap();
        assert_eq!(p.feed_line(b""), vec![]);
        assert_eq!(p.totals(), SessionTotals::default());
    }
    assert!(parser_for("aider").is_some());
}

#[test]
fn events_serialize_with_one_name_per_idea() {
    let e = AgentEvent::Finished(Finished {
        kind: FinishKind::QuotaExhausted { resets_at: Some(1) },
        cost_usd: None,
        turns: Some(2),
        result_usage: None,
    });
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["event"], "finished");
    assert_eq!(json["kind"]["kind"], "quota_exhausted");
    let back: AgentEvent = serde_json::from_value(json).unwrap();
    assert_eq!(back, e);
}

/// `--replay-user-messages`: every message written to stdin comes back as an `isReplay` user
/// line when the CLI takes it, in both versions, mid-turn or as a new turn.
#[test]
fn claude_acknowledges_each_stdin_message_it_takes() {
    for (file, results) in [
        ("claude-2.1.332_tell_live_write.jsonl", 1),
        ("claude-2.1.197_tell_live_write.jsonl", 1),
        ("claude-2.1.332_tell_live_text.jsonl", 2),
        ("claude-2.1.197_tell_live_text.jsonl", 2),
    ] {
        let events = run(
            &mut ClaudeParser::new(),
            &fixture(&format!("real-2026-12/{file}")),
        );
        let accepted: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::InputAccepted { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            accepted,
            [
                "Make the file done/x contain ok.",
                "OPERATOR-SAYS-PINEAPPLE"
            ],
            "{file}"
        );
        assert_eq!(finishes(&events).len(), results, "{file}");
        // A tool result echoed back is not an acknowledgement.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, AgentEvent::ToolResult { .. }))
                || results == 2,
            "{file}"
        );
    }
}
