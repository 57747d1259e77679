//! Throughput and memory of the Claude stream parser (`cargo bench -p nightshift-core --bench
//! parse`). Prints figures; asserts nothing about time. Targets: ≥ 200 MB/s in release, peak RSS
//! < 50 MB.
//!
//! 1. A ~100 MB stream, generated line by line into one reused buffer (so the stream itself never
//!    sits in memory): init, then cycles of assistant text / thinking / tool_use lines sharing a
//!    message id and repeating its usage, tool results of varying size, now and then an API retry
//!    or a rate-limit event, and a result line every few hundred messages. Only `feed_line` is
//!    timed.
//! 2. A stream holding one 10 MB tool-result line, then a 10 MB line with a `rate_limit_event`
//!    injected near its end (the recovery path), with peak RSS measured afresh.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use nightshift_core::agent::claude::ClaudeParser;
use nightshift_core::agent::{AgentEvent, StreamParser};

const TARGET_BYTES: usize = 100 << 20;
const MESSAGES_PER_PROCESS: usize = 400;

/// A small deterministic generator (xorshift), so every run parses the same stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the",
    "parser",
    "reads",
    "one",
    "line",
    "at",
    "a",
    "time",
    "and",
    "never",
    "fails",
    "tests",
    "pass",
    "\\\"quoted\\\"",
    "fn",
    "main()",
    "{",
    "}",
    "let",
    "mut",
    "x",
    "=",
    "42;",
    "\\n",
    "\\t",
    "// comment",
    "café",
    "→",
    "cargo",
    "build",
    "--release",
];

fn words(rng: &mut Rng, out: &mut String, bytes: usize) {
    let start = out.len();
    while out.len() - start < bytes {
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        out.push(' ');
    }
}

fn usage_json(rng: &mut Rng) -> String {
    format!(
        r#"{{"input_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{},"cache_creation":{{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":{}}},"output_tokens":{},"service_tier":"standard"}}"#,
        rng.below(20),
        rng.below(5000),
        rng.below(90000),
        rng.below(5000),
        rng.below(30) + 1
    )
}

fn init_line(out: &mut String, process: usize) {
    let tools: Vec<String> = (0..120)
        .map(|i| format!("\"mcp__server__tool_{i}\""))
        .collect();
    let _ = write!(
        out,
        r#"{{"type":"system","subtype":"init","cwd":"/srv/run/wt/item-17","session_id":"session-{process:08}","tools":[{}],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits","claude_code_version":"2.1.237","uuid":"00000000-0000-0000-0000-000000000000"}}"#,
        tools.join(",")
    );
}

/// Appends one line (without its newline) of the stream's `n`th step.
fn step(rng: &mut Rng, out: &mut String, n: usize) {
    let msg = n / 4;
    let id = format!("msg_{msg:016x}");
    match n % 4 {
        0 => {
            let mut text = String::new();
            let len = 200 + rng.below(600) as usize;
            words(rng, &mut text, len);
            let _ = write!(
                out,
                r#"{{"type":"assistant","message":{{"model":"claude-sonnet-4-5","id":"{id}","type":"message","role":"assistant","content":[{{"type":"thinking","thinking":"{text}","signature":"{sig}"}}],"stop_reason":null,"usage":{u}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u-{n}"}}"#,
                sig = "EucCCpMBCBAYAipA".repeat(24),
                u = usage_json(rng)
            );
        }
        1 => {
            let mut text = String::new();
            let len = 100 + rng.below(400) as usize;
            words(rng, &mut text, len);
            let _ = write!(
                out,
                r#"{{"type":"assistant","message":{{"model":"claude-sonnet-4-5","id":"{id}","type":"message","role":"assistant","content":[{{"type":"text","text":"{text}"}}],"stop_reason":null,"usage":{u}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u-{n}"}}"#,
                u = usage_json(rng)
            );
        }
        2 => {
            let _ = write!(
                out,
                r#"{{"type":"assistant","message":{{"model":"claude-sonnet-4-5","id":"{id}","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"toolu_{n:x}","name":"Edit","input":{{"file_path":"/srv/run/wt/item-17/src/lib_{m}.rs","old_string":"fn a() {{}}","new_string":"fn a() {{ b() }}"}}}}],"stop_reason":"tool_use","usage":{u}}},"parent_tool_use_id":null,"session_id":"s","uuid":"u-{n}"}}"#,
                m = msg % 50,
                u = usage_json(rng)
            );
        }
        _ => {
            // Tool output: mostly small, sometimes a whole file.
            let size = match rng.below(10) {
                0 => 40_000 + rng.below(60_000) as usize,
                1..=3 => 4_000 + rng.below(8_000) as usize,
                _ => 200 + rng.below(1_500) as usize,
            };
            let mut content = String::new();
            words(rng, &mut content, size);
            let _ = write!(
                out,
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{prev:x}","type":"tool_result","content":"{content}","is_error":{err}}}]}},"parent_tool_use_id":null,"session_id":"s","uuid":"u-{n}","timestamp":"2026-09-01T02:10:00.000Z","tool_use_result":{{"stdout":"ok","stderr":"","interrupted":false,"isImage":false}}}}"#,
                prev = n - 1,
                err = rng.below(8) == 0
            );
        }
    }
}

fn extra_line(rng: &mut Rng, out: &mut String) -> bool {
    match rng.below(200) {
        0 => {
            out.push_str(r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":900,"error_status":529,"error":"overloaded"}"#);
            true
        }
        1 => {
            out.push_str(r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1790012400,"rateLimitType":"five_hour","overageStatus":"allowed","isUsingOverage":false},"uuid":"x","session_id":"s"}"#);
            true
        }
        _ => false,
    }
}

fn result_line(out: &mut String, turns: usize) {
    let _ = write!(
        out,
        r#"{{"type":"result","subtype":"success","is_error":false,"duration_ms":241000,"duration_api_ms":180500,"num_turns":{turns},"result":"Fixed both failures; suite green.","session_id":"s","total_cost_usd":0.21852600000000003,"usage":{{"input_tokens":41,"cache_creation_input_tokens":9800,"cache_read_input_tokens":301000,"output_tokens":5200}},"modelUsage":{{"claude-sonnet-4-5":{{"inputTokens":41,"outputTokens":5200,"cacheReadInputTokens":301000,"cacheCreationInputTokens":9800,"costUSD":0.21852600000000003}}}},"permission_denials":[],"terminal_reason":"completed"}}"#
    );
}

/// A `Vm…:` figure of /proc/self/status in kB (VmHWM: peak RSS, VmRSS: current), when /proc says.
fn status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn peak_rss_kb() -> Option<u64> {
    status_kb("VmHWM:")
}

/// Resets the peak RSS counter (Linux: writing 5 to clear_refs).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn show_rss(label: &str) {
    match peak_rss_kb() {
        Some(kb) => println!("{label}: peak RSS {:.1} MB", kb as f64 / 1024.0),
        None => println!("{label}: peak RSS unavailable (no /proc/self/status)"),
    }
}

fn feed(p: &mut ClaudeParser, line: &[u8], parse_time: &mut Duration, events: &mut usize) {
    let t = Instant::now();
    let out = p.feed_line(line);
    *parse_time += t.elapsed();
    *events += out.len();
}

fn throughput() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut p = ClaudeParser::new();
    let mut line = String::with_capacity(1 << 17);
    let (mut bytes, mut lines, mut events) = (0usize, 0usize, 0usize);
    let mut parse_time = Duration::ZERO;
    let mut n = 0;
    let mut process = 0;
    while bytes < TARGET_BYTES {
        line.clear();
        if n % (MESSAGES_PER_PROCESS * 4) == 0 {
            if n > 0 {
                result_line(&mut line, MESSAGES_PER_PROCESS);
                line.push('\n');
            }
            init_line(&mut line, process);
            process += 1;
        } else if !extra_line(&mut rng, &mut line) {
            step(&mut rng, &mut line, n);
        }
        n += 1;
        line.push('\n');
        // The result + init pair is two lines.
        for l in line.split_inclusive('\n') {
            bytes += l.len();
            lines += 1;
            feed(&mut p, l.as_bytes(), &mut parse_time, &mut events);
        }
    }
    line.clear();
    result_line(&mut line, MESSAGES_PER_PROCESS);
    bytes += line.len();
    lines += 1;
    feed(&mut p, line.as_bytes(), &mut parse_time, &mut events);
    events += p.finish().len();

    let secs = parse_time.as_secs_f64();
    let totals = p.totals();
    println!(
        "stream: {:.1} MB, {lines} lines, {events} events, {} turns, {} processes",
        mb(bytes),
        totals.turns,
        process
    );
    println!(
        "parse: {:.3} s, {:.0} MB/s ({:.0} lines/s)",
        secs,
        mb(bytes) / secs,
        lines as f64 / secs
    );
    show_rss("stream");
}

fn big_lines() {
    let reset = reset_peak_rss();
    if !reset {
        println!("(could not reset the peak RSS counter: the next figure includes the stream)");
    }
    let mut p = ClaudeParser::new();
    let mut events = Vec::new();
    events.extend(
        p.feed_line(br#"{"type":"system","subtype":"init","session_id":"big","model":"m"}"#),
    );
    let mut rng = Rng(7);
    let mut content = String::with_capacity(10 << 20);
    words(&mut rng, &mut content, 10 << 20);
    let line = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t","type":"tool_result","content":"{content}","is_error":false}}]}},"session_id":"big"}}"#
    );
    drop(content);
    let t = Instant::now();
    events.extend(p.feed_line(line.as_bytes()));
    let took = t.elapsed();
    println!(
        "10 MB tool-result line ({:.1} MB): {:.1} ms, {:.0} MB/s, events {:?}",
        mb(line.len()),
        took.as_secs_f64() * 1000.0,
        mb(line.len()) / took.as_secs_f64(),
        events.iter().map(kind).collect::<Vec<_>>()
    );
    show_rss("10 MB line");

    // The recovery path: a rate_limit_event injected near the end of a 10 MB assistant line.
    let cut = line.len() - 40;
    let inject = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1790012400,"rateLimitType":"five_hour"}}"#;
    let mut text = String::with_capacity(10 << 20);
    words(&mut Rng(11), &mut text, 10 << 20);
    drop(line);
    let outer = format!(
        r#"{{"type":"assistant","message":{{"id":"msg_big","model":"m","content":[{{"type":"text","text":"{text}"}}],"usage":{{"input_tokens":1,"output_tokens":1}}}},"session_id":"big"}}"#
    );
    drop(text);
    let cut = cut.min(outer.len() - 60);
    let cut = (0..=cut)
        .rev()
        .find(|i| outer.is_char_boundary(*i))
        .unwrap_or(0);
    let broken = format!("{}{inject}{}", &outer[..cut], &outer[cut..]);
    drop(outer);
    // Measure the parser on this line alone (the line itself, 10 MB, is resident).
    reset_peak_rss();
    if let Some(kb) = status_kb("VmRSS:") {
        println!(
            "before the injected-event line: RSS {:.1} MB (the 10 MB line and freed heap)",
            kb as f64 / 1024.0
        );
    }
    let t = Instant::now();
    let out = p.feed_line(broken.as_bytes());
    let took = t.elapsed();
    println!(
        "10 MB line with an injected event (recovery): {:.1} ms, {:.0} MB/s, events {:?}",
        took.as_secs_f64() * 1000.0,
        mb(broken.len()) / took.as_secs_f64(),
        out.iter().map(kind).collect::<Vec<_>>()
    );
    show_rss("10 MB line with an injected event");
}

fn kind(e: &AgentEvent) -> &'static str {
    match e {
        AgentEvent::SessionStarted { .. } => "session_started",
        AgentEvent::Text { .. } => "text",
        AgentEvent::ToolCall { .. } => "tool_call",
        AgentEvent::ToolResult { .. } => "tool_result",
        AgentEvent::FileChanged { .. } => "file_changed",
        AgentEvent::Usage(_) => "usage",
        AgentEvent::Retrying { .. } => "retrying",
        AgentEvent::RateLimit { .. } => "rate_limit",
        AgentEvent::PermissionDenied { .. } => "permission_denied",
        AgentEvent::InputAccepted { .. } => "input_accepted",
        AgentEvent::Finished(_) => "finished",
        AgentEvent::Unknown { .. } => "unknown",
        AgentEvent::Malformed { .. } => "malformed",
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it too: keep that quick.
    if std::env::args().any(|a| a == "--test") || !std::env::args().any(|a| a == "--bench") {
        println!("parse bench: run with `cargo bench -p nightshift-core --bench parse`");
        return;
    }
    throughput();
    big_lines();
}
