//! Every real capture of 2026-12 (tests/fixtures/agent-streams/real-2026-12, vendored from
//! the project's shared fixtures), parsed: the ending, the denials, the session id and the
//! usage each one must give.

use std::path::PathBuf;

use jiff::tz::TimeZone;

use super::*;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/agent-streams/real-2026-12"
);

/// 2026-12-01T19:00:00Z, the evening the captures were made.
const NOW: i64 = 1_796_151_600;

fn parser(name: &str) -> Box<dyn StreamParser> {
    let mut p: Box<dyn StreamParser> = if name.starts_with("claude") {
        Box::new(claude::ClaudeParser::new().with_time_zone(TimeZone::UTC))
    } else if name.starts_with("codex") {
        Box::new(codex::CodexParser::new().with_time_zone(TimeZone::UTC))
    } else if name.starts_with("gemini") {
        Box::new(gemini::GeminiParser::new().with_time_zone(TimeZone::UTC))
    } else {
        Box::new(aider::AiderParser::new().with_time_zone(TimeZone::UTC))
    };
    p.set_now(NOW);
    p
}

/// What one capture parses to, in short.
#[derive(Debug, PartialEq)]
pub(super) struct Summary {
    pub finishes: Vec<FinishKind>,
    pub denials: Vec<String>,
    pub session: Option<String>,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub retries: usize,
    pub malformed: usize,
}

pub(super) fn summarize(name: &str) -> Summary {
    let bytes = std::fs::read(PathBuf::from(DIR).join(name))
        .unwrap_or_else(|e| panic!("capture {name} is missing: {e}"));
    let mut p = parser(name);
    let mut events = Vec::new();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        events.extend(p.feed_line(line));
    }
    events.extend(p.finish());
    let totals = p.totals();
    Summary {
        finishes: events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Finished(f) => Some(f.kind.clone()),
                _ => None,
            })
            .collect(),
        denials: events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::PermissionDenied { tool, target } => {
                    Some(format!("{tool} {}", target.clone().unwrap_or_default()))
                }
                _ => None,
            })
            .collect(),
        session: events.iter().find_map(|e| match e {
            AgentEvent::SessionStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        }),
        usage: totals.usage,
        cost_usd: totals.cost_usd,
        retries: events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Retrying { .. }))
            .count(),
        malformed: events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Malformed { .. }))
            .count(),
    }
}

/// Per capture: the endings, how many denials, the usage `[input, output, cache_read,
/// cache_write, reasoning]`, the cost and the CLI's own API retries. The figures are the ones
/// each capture's CLI reported (result.usage, turn.completed, result.stats, the Tokens line).
type Row = (
    &'static str,
    &'static [FinishKind],
    usize,
    [u64; 5],
    Option<f64>,
    usize,
);

#[rustfmt::skip]
const EXPECTED: &[Row] = &[
        ("aider_auth401.stdout.txt", &[FinishKind::Auth], 0, [0, 0, 0, 0, 0], None, 0),
        ("aider_error500.stdout.txt", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 8),
        ("aider_overloaded503.stdout.txt", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 8),
        ("aider_rate429.stdout.txt", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 8),
        ("aider_rate429_reset.stdout.txt", &[FinishKind::QuotaExhausted { resets_at: Some(1796155200) }], 0, [0, 0, 0, 0, 0], None, 8),
        ("aider_ship_nostream.stdout.txt", &[FinishKind::Ok], 0, [1200, 50, 0, 0, 0], None, 0),
        ("aider_ship_stream.stdout.txt", &[FinishKind::Ok], 0, [600, 19, 0, 0, 0], None, 0),
        ("claude-2.1.197_ns_background_task_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.028625), 0),
        ("claude-2.1.197_ns_crash_resume_item-1-a1-i1.agent.jsonl", &[], 0, [0, 0, 0, 0, 0], None, 0),
        ("claude-2.1.197_ns_overloaded_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.197_ns_ratelimit_apikey_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.197_ns_runaway_item-1-a1-i1.agent.jsonl", &[], 0, [400000, 2, 0, 0, 0], None, 0),
        ("claude-2.1.197_ns_server_error_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.197_ns_ship_acceptEdits_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.028625), 0),
        ("claude-2.1.197_ns_ship_default_argv_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 1, [2100, 65, 8000, 2000, 0], Some(0.028625), 0),
        ("claude-2.1.197_ns_stall_item-1-a1-i1.agent.jsonl", &[], 0, [0, 0, 0, 0, 0], None, 0),
        ("claude-2.1.197_ns_usage_limit_oauth_item-1-a1-i1.agent.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796153444) }], 0, [0, 0, 0, 0, 0], Some(0.0), 0),
        ("claude-2.1.197_tell_live_text.jsonl", &[FinishKind::Ok, FinishKind::Ok], 0, [2000, 100, 0, 0, 0], Some(0.0125), 1),
        ("claude-2.1.197_tell_live_write.jsonl", &[FinishKind::Ok], 0, [2000, 100, 0, 0, 0], Some(0.0125), 1),
        ("claude-2.1.332_apikey_error500_retries_exhausted.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 10),
        ("claude-2.1.332_apikey_ratelimit_429_retries_exhausted.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 10),
        ("claude-2.1.332_bash_acceptEdits.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_hello_bash_denied_default.jsonl", &[FinishKind::Ok], 1, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_ns_background_task_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_ns_crash_resume_item-1-a1-i1.agent.jsonl", &[], 0, [0, 0, 0, 0, 0], None, 0),
        ("claude-2.1.332_ns_dedup_budget_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_ns_include_partial_messages.agent.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_ns_overloaded_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.332_ns_ratelimit_apikey_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.332_ns_ratelimit_apikey_rerun_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.332_ns_resume_after_engine_kill_no_conversation.agent.jsonl", &[FinishKind::ResumeUnavailable], 0, [0, 0, 0, 0, 0], Some(0.0), 0),
        ("claude-2.1.332_ns_runaway_item-1-a1-i1.agent.jsonl", &[], 0, [400000, 2, 0, 0, 0], None, 0),
        ("claude-2.1.332_ns_server_error_item-1-a1-i1.agent.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.332_ns_ship_acceptEdits_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_ns_ship_default_argv_item-1-a1-i1.agent.jsonl", &[FinishKind::Ok], 1, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_ns_stall_item-1-a1-i1.agent.jsonl", &[], 0, [0, 0, 0, 0, 0], None, 0),
        ("claude-2.1.332_ns_timeout_item-1-a1-i1.agent.jsonl", &[], 0, [0, 0, 0, 0, 0], None, 0),
        ("claude-2.1.332_ns_usage_limit_oauth_item-1-a1-i1.agent.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796153807) }], 0, [0, 0, 0, 0, 0], Some(0.0), 0),
        ("claude-2.1.332_oauth_usage_limit_429.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796152928) }], 0, [0, 0, 0, 0, 0], Some(0.0), 0),
        ("claude-2.1.332_overloaded_529.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], Some(0.0), 2),
        ("claude-2.1.332_resume_first_process.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_resume_second_process_cumulative_cost.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0426), 0),
        ("claude-2.1.332_tell_live_text.jsonl", &[FinishKind::Ok, FinishKind::Ok], 0, [2000, 100, 0, 0, 0], Some(0.01), 1),
        ("claude-2.1.332_tell_live_write.jsonl", &[FinishKind::Ok], 0, [2000, 100, 0, 0, 0], Some(0.01), 1),
        ("claude-2.1.332_write_acceptEdits.jsonl", &[FinishKind::Ok], 0, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("claude-2.1.332_write_denied_default.jsonl", &[FinishKind::Ok], 1, [2100, 65, 8000, 2000, 0], Some(0.0213), 0),
        ("codex_exec_auth401.jsonl", &[FinishKind::Auth], 0, [0, 0, 0, 0, 0], None, 0),
        ("codex_exec_fail500.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 0),
        ("codex_exec_missing_env_key.jsonl", &[FinishKind::Auth], 0, [0, 0, 0, 0, 0], None, 0),
        ("codex_exec_overloaded503.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 1),
        ("codex_exec_quota429.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796154660) }], 0, [0, 0, 0, 0, 0], None, 0),
        ("codex_exec_rate429.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 0),
        ("codex_exec_resume_cumulative_usage.jsonl", &[FinishKind::Ok], 1, [1000, 140, 4400, 0, 20], None, 0),
        ("codex_exec_runaway_no_midturn_usage.jsonl", &[], 0, [0, 0, 0, 0, 0], None, 0),
        ("codex_exec_ship.jsonl", &[FinishKind::Ok], 0, [500, 70, 2200, 0, 10], None, 0),
        ("codex_exec_ship_readonly_sandbox.jsonl", &[FinishKind::Ok], 1, [500, 70, 2200, 0, 10], None, 0),
        ("gemini_stream_json_auth401.jsonl", &[FinishKind::Auth], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_daily_quota429_exit173.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796198400) }], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_error500_exit244.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_quota429.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796155200) }], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_quota429_retry3600_exit173.jsonl", &[FinishKind::QuotaExhausted { resets_at: Some(1796155200) }], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_rate429_bare_exit173.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_rate429_per_minute_exit173.jsonl", &[FinishKind::Transient], 0, [0, 0, 0, 0, 0], None, 0),
        ("gemini_stream_json_ship.jsonl", &[FinishKind::Ok], 0, [510, 75, 2200, 0, 0], None, 0),
];

#[test]
fn every_real_capture_parses_to_its_ending_denials_and_usage() {
    let mut names: Vec<String> = std::fs::read_dir(DIR)
        .unwrap_or_else(|e| panic!("{DIR}: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl") || n.ends_with(".stdout.txt"))
        .collect();
    names.sort();
    let listed: Vec<&str> = EXPECTED.iter().map(|e| e.0).collect();
    assert_eq!(
        names, listed,
        "every capture has its row, and every row its capture"
    );
    for (name, finishes, denials, usage, cost, retries) in EXPECTED {
        let s = summarize(name);
        assert_eq!(&s.finishes, finishes, "{name}: endings");
        assert_eq!(s.denials.len(), *denials, "{name}: denials {:?}", s.denials);
        let [input, output, cache_read, cache_write, reasoning] = *usage;
        assert_eq!(
            s.usage,
            Usage {
                input,
                output,
                cache_read,
                cache_write,
                reasoning
            },
            "{name}: usage"
        );
        assert_eq!(s.cost_usd, *cost, "{name}: cost");
        assert_eq!(s.retries, *retries, "{name}: retries");
        // Every stream CLI names its session (what a resume takes).
        assert_eq!(
            s.session.is_some(),
            !name.starts_with("aider"),
            "{name}: session"
        );
        // The only unreadable lines are the CLI's stderr, teed into the `_ns_` agent logs.
        assert!(s.malformed <= 1, "{name}: {} malformed lines", s.malformed);
    }
}

#[test]
fn real_usage_limit_resets_are_never_early() {
    // Codex prints its reset to the minute ("try again at 7:50 PM"): the end of that minute.
    let s = summarize("codex_exec_quota429.jsonl");
    assert_eq!(
        s.finishes,
        [FinishKind::QuotaExhausted {
            resets_at: Some(NOW + 50 * 60 + 60)
        }]
    );
    // Claude's subscription limit carries its exact `resetsAt`.
    let s = summarize("claude-2.1.332_oauth_usage_limit_429.jsonl");
    assert_eq!(
        s.finishes,
        [FinishKind::QuotaExhausted {
            resets_at: Some(1_796_152_928)
        }]
    );
    // An API key's 429 after the CLI's own retries is no subscription limit: back off.
    let s = summarize("claude-2.1.332_apikey_ratelimit_429_retries_exhausted.jsonl");
    assert_eq!(s.finishes, [FinishKind::Transient]);
    // Gemini's "API key not valid" (401, no error code in the stream) is credentials.
    assert_eq!(
        summarize("gemini_stream_json_auth401.jsonl").finishes,
        [FinishKind::Auth]
    );
    assert_eq!(
        summarize("codex_exec_missing_env_key.jsonl").finishes,
        [FinishKind::Auth]
    );
}

#[test]
fn gemini_tells_an_api_key_rate_limit_from_a_quota_with_a_reset() {
    // Per-minute (`QuotaFailure` + `RetryInfo` 1s, retried by the CLI) and a bare
    // RESOURCE_EXHAUSTED: the CLI retried them itself; nightshift backs off.
    for name in [
        "gemini_stream_json_rate429_per_minute_exit173.jsonl",
        "gemini_stream_json_rate429_bare_exit173.jsonl",
    ] {
        assert_eq!(summarize(name).finishes, [FinishKind::Transient], "{name}");
    }
    // A `RetryInfo` beyond the CLI's 300 s: "Suggested retry after 3600s." is the reset.
    assert_eq!(
        summarize("gemini_stream_json_quota429_retry3600_exit173.jsonl").finishes,
        [FinishKind::QuotaExhausted {
            resets_at: Some(NOW + 3600)
        }]
    );
    // A per-day quota (the CLI drops the delay): Google resets daily quotas at midnight
    // Pacific; 19:00Z on 2026-12-01 is 11:00 PST, so 08:00Z the next day.
    assert_eq!(
        summarize("gemini_stream_json_daily_quota429_exit173.jsonl").finishes,
        [FinishKind::QuotaExhausted {
            resets_at: Some(NOW + 13 * 3600)
        }]
    );
    // A 500 after the CLI's retries (exit 244) is the server's fault, not the item's.
    assert_eq!(
        summarize("gemini_stream_json_error500_exit244.jsonl").finishes,
        [FinishKind::Transient]
    );
}

#[test]
fn gemini_exit_codes_are_mapped() {
    let p = gemini::GeminiParser::new();
    assert_eq!(p.exit_kind(41), Some(FinishKind::Auth));
    assert_eq!(p.exit_kind(53), Some(FinishKind::MaxTurns));
    // An API error's HTTP status, modulo 256 (`process.exit(status)`): 429, 500, 503, 504
    // back off; 401 and 403 are credentials.
    for code in [173, 244, 246, 247, 248] {
        assert_eq!(p.exit_kind(code), Some(FinishKind::Transient), "{code}");
    }
    assert_eq!(p.exit_kind(145), Some(FinishKind::Auth));
    assert_eq!(p.exit_kind(147), Some(FinishKind::Auth));
    for code in [42, 44, 52, 54, 55, 130, 144, 148] {
        assert!(
            matches!(p.exit_kind(code), Some(FinishKind::AgentError { .. })),
            "{code}"
        );
    }
    assert_eq!(p.exit_kind(1), None);
    // What the real CLI printed for 55 names the fix the adapter applies.
    let stderr =
        std::fs::read_to_string(PathBuf::from(DIR).join("gemini_untrusted_dir_exit55.stderr.txt"))
            .unwrap_or_default();
    assert!(stderr.contains("--skip-trust"));
}

#[test]
fn after_a_resume_only_the_difference_is_counted() {
    // Claude: the second process's `total_cost_usd` (0.0426) is the conversation's.
    let first = summarize("claude-2.1.332_resume_first_process.jsonl");
    let bytes = std::fs::read(
        PathBuf::from(DIR).join("claude-2.1.332_resume_second_process_cumulative_cost.jsonl"),
    )
    .unwrap_or_default();
    let mut p = parser("claude");
    p.set_resumed_from(first.usage, first.cost_usd);
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        p.feed_line(line);
    }
    p.finish();
    let cost = p.totals().cost_usd.unwrap_or_default();
    assert!((cost - 0.0213).abs() < 1e-9, "{cost}");

    // Codex: after `exec resume`, turn.completed (5400 in, 4400 cached, 140 out) is the
    // thread's running total; the first process spent 2700/2200/70.
    let ship = summarize("codex_exec_ship.jsonl");
    let bytes = std::fs::read(PathBuf::from(DIR).join("codex_exec_resume_cumulative_usage.jsonl"))
        .unwrap_or_default();
    let mut p = parser("codex");
    p.set_resumed_from(ship.usage, None);
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        p.feed_line(line);
    }
    p.finish();
    assert_eq!(
        p.totals().usage,
        Usage {
            input: 500,
            output: 70,
            cache_read: 2200,
            cache_write: 0,
            reasoning: 10
        }
    );
}

#[test]
fn codex_rollout_token_counts_are_live_usage() {
    let mut p = parser("codex");
    let line = |input: u64, cached: u64, output: u64| {
        serde_json::json!({
            "timestamp": "2026-12-01T19:00:00.000Z",
            "type": "event_msg",
            "payload": {"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached,
                    "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output},
                "last_token_usage": {"input_tokens": 1}
            }}
        })
        .to_string()
    };
    let e = p.live_usage(line(1000, 800, 10).as_bytes());
    assert_eq!(
        e,
        [AgentEvent::Usage(Usage {
            input: 200,
            output: 10,
            cache_read: 800,
            cache_write: 0,
            reasoning: 0
        })]
    );
    // The next response: only the growth is reported; other lines say nothing.
    let e = p.live_usage(line(2000, 1600, 30).as_bytes());
    assert_eq!(
        e,
        [AgentEvent::Usage(Usage {
            input: 200,
            output: 20,
            cache_read: 800,
            cache_write: 0,
            reasoning: 0
        })]
    );
    assert!(
        p.live_usage(br#"{"type":"response_item","payload":{}}"#)
            .is_empty()
    );
    assert!(p.live_usage(b"\xff garbage").is_empty());
    // turn.completed with the same total adds nothing.
    let done = br#"{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":1600,"output_tokens":30}}"#;
    let e = p.feed_line(done);
    assert!(
        !e.iter().any(|e| matches!(e, AgentEvent::Usage(_))),
        "{e:?}"
    );
    assert_eq!(p.totals().usage.input + p.totals().usage.cache_read, 2000);
}

mod fuzz {
    use proptest::prelude::*;

    use super::super::*;

    /// Lines an adversarial agent could print: arbitrary bytes, arbitrary UTF-8, and JSON-ish
    /// text built from the CLIs' own keys.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        let keys = prop::sample::select(vec![
            "type",
            "subtype",
            "result",
            "usage",
            "message",
            "id",
            "content",
            "text",
            "tool_use",
            "session_id",
            "thread_id",
            "turn.completed",
            "turn.failed",
            "error",
            "input_tokens",
            "output_tokens",
            "rate_limit_event",
            "rate_limit_info",
            "resetsAt",
            "status",
            "rejected",
            "permission_denials",
            "tool_input",
            "stream_event",
            "message_delta",
            "stats",
            "init",
            "event_msg",
            "payload",
            "token_count",
            "info",
            "total_token_usage",
            "item.completed",
            "item",
            "command_execution",
            "Tokens:",
        ]);
        let json_ish = prop::collection::vec(
            (
                keys,
                prop::sample::select(vec![
                    "{", "}", "[", "]", ":", ",", "\"", "0", "-1", "1e999", "null", "true", " ",
                ]),
            ),
            0..40,
        )
        .prop_map(|parts| {
            parts
                .into_iter()
                .map(|(k, p)| format!("\"{k}\"{p}"))
                .collect::<String>()
                .into_bytes()
        });
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..300),
            any::<String>().prop_map(String::into_bytes),
            json_ish.clone(),
            json_ish.prop_map(|mut v| {
                v.insert(0, b'{');
                v.push(b'}');
                v
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn no_parser_panics_on_any_lines(lines in prop::collection::vec(line(), 0..12)) {
            for name in ["claude", "codex", "gemini", "aider"] {
                let Some(mut p) = parser_for(name) else { continue };
                p.set_now(1_796_151_600);
                p.set_resumed_from(Usage { input: 5, ..Usage::default() }, Some(0.5));
                for l in &lines {
                    p.feed_line(l);
                    p.live_usage(l);
                }
                p.finish();
                let t = p.totals();
                prop_assert!(t.cost_usd.is_none_or(|c| !c.is_nan()));
                let _ = p.exit_kind(41);
            }
            for l in &lines {
                let _ = codex::rollout_total(l);
                let _ = reset::reset_from_text(&String::from_utf8_lossy(l), Some(1_796_151_600), &jiff::tz::TimeZone::UTC);
            }
        }
    }
}
