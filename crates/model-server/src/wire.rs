//! The four APIs: routing, turn detection, replies and error bodies.

use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::http::{self, Request};
use crate::{Decision, Shared, Step, Usage, Wire, decide, hold, record_other};

/// What auxiliary requests (titles, routing, next-speaker checks) get: valid JSON for the
/// callers that want JSON, harmless text for the others.
pub(crate) const AUX_TEXT: &str =
    r#"{"title":"scripted","reasoning":"scripted","model_choice":"flash","next_speaker":"user"}"#;

pub(crate) enum After {
    KeepAlive,
    Close,
}

static IDS: AtomicU64 = AtomicU64::new(1);

fn id(prefix: &str) -> String {
    let n = IDS.fetch_add(1, Ordering::SeqCst);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{prefix}_mock_{t:x}{n:04x}")
}

fn epoch_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn json_reply(
    w: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &Value,
) -> io::Result<After> {
    http::respond(
        w,
        status,
        headers,
        "application/json",
        body.to_string().as_bytes(),
    )?;
    Ok(After::KeepAlive)
}

fn h(k: &str, v: impl ToString) -> (String, String) {
    (k.to_owned(), v.to_string())
}

/// Answers one request.
pub(crate) fn handle(shared: &Shared, req: &Request, w: &mut TcpStream) -> io::Result<After> {
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let path = req.path.as_str();
    let post = req.method.eq_ignore_ascii_case("POST");
    let wire = if post && path.ends_with("/messages") {
        Wire::Anthropic
    } else if post && path.ends_with("/responses") {
        Wire::Responses
    } else if post && path.ends_with("/chat/completions") {
        Wire::ChatCompletions
    } else if post && (path.contains(":streamGenerateContent") || path.contains(":generateContent"))
    {
        Wire::Gemini
    } else {
        Wire::Other
    };
    if wire == Wire::Other {
        record_other(shared, req);
        return other(req, w);
    }
    let tools = tool_names(&body);
    let has_tools = !tools.is_empty();
    let turn = match wire {
        Wire::ChatCompletions => true,
        _ => has_tools,
    };
    let Some(d) = decide(shared, req, wire, turn, tools, conversation(&body)) else {
        return json_reply(w, 500, &[], &json!({"error": "no scenario"}));
    };
    if d.step == Step::Stall {
        hold(shared, d.generation);
        return Ok(After::Close);
    }
    match wire {
        Wire::Anthropic => anthropic(req, &body, &d, w),
        Wire::Responses => responses(&body, &d, w),
        Wire::ChatCompletions => chat(&body, &d, w),
        Wire::Gemini => gemini(req, &body, &d, w),
        Wire::Other => Ok(After::Close),
    }
}

/// Every string of a request's conversation, one per line (every wire's shape).
fn conversation(body: &Value) -> String {
    let mut all = Vec::new();
    for key in ["messages", "input", "contents"] {
        strings(&body[key], &mut all);
    }
    all.join("\n")
}

/// The names of the tools a request offers (every wire's shape).
fn tool_names(body: &Value) -> Vec<String> {
    let Some(tools) = body["tools"].as_array() else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for t in tools {
        if let Some(decls) = t["functionDeclarations"].as_array() {
            names.extend(
                decls
                    .iter()
                    .filter_map(|d| d["name"].as_str())
                    .map(str::to_owned),
            );
        } else if let Some(n) = t["name"].as_str().or(t["function"]["name"].as_str()) {
            names.push(n.to_owned());
        } else if let Some(ty) = t["type"].as_str() {
            names.push(ty.to_owned());
        }
    }
    names
}

fn other(req: &Request, w: &mut TcpStream) -> io::Result<After> {
    let path = req.path.as_str();
    if path.ends_with("/count_tokens") {
        return json_reply(w, 200, &[], &json!({"input_tokens": 100}));
    }
    if path.contains(":countTokens") {
        return json_reply(w, 200, &[], &json!({"totalTokens": 100}));
    }
    if path.ends_with("/models") {
        let m = json!({"id": "mock-model", "object": "model", "type": "model",
            "display_name": "mock", "created_at": "2026-01-01T00:00:00Z", "owned_by": "mock"});
        return json_reply(
            w,
            200,
            &[],
            &json!({"object": "list", "data": [m], "has_more": false,
            "first_id": "mock-model", "last_id": "mock-model", "models": []}),
        );
    }
    json_reply(
        w,
        404,
        &[],
        &json!({"error": {"type": "not_found_error", "message": format!("no such endpoint: {path}")}}),
    )
}

/// All string values in a JSON document.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The working directory a CLI announced in its system prompt, if any.
fn announced_cwd(body: &Value) -> Option<String> {
    let mut all = Vec::new();
    strings(body, &mut all);
    for s in all {
        for marker in [
            "Primary working directory: ",
            "Working directory: ",
            "working directory: ",
        ] {
            if let Some(i) = s.find(marker) {
                let rest = &s[i + marker.len()..];
                let end = rest.find(['\n', '\r', '<', '"']).unwrap_or(rest.len());
                let dir = rest[..end].trim().trim_end_matches('.');
                if dir.starts_with('/') {
                    return Some(dir.to_owned());
                }
            }
        }
    }
    None
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A shell command that writes `content` to `path`.
fn write_command(path: &str, content: &str) -> String {
    let dir = std::path::Path::new(path)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.is_empty());
    let mkdir = dir
        .map(|d| format!("mkdir -p {} && ", sh_quote(&d)))
        .unwrap_or_default();
    format!(
        "{mkdir}printf %s {} > {}",
        sh_quote(content),
        sh_quote(path)
    )
}

// ----- Anthropic Messages ---------------------------------------------------------------

fn anthropic_error(step: &Step) -> (u16, Vec<(String, String)>, Value) {
    let err = |t: &str, m: &str| json!({"type": "error", "error": {"type": t, "message": m}});
    // Retry at once, and not at all where the CLI honours `x-should-retry` (Claude's 5xx
    // back-off otherwise takes ~3 minutes whatever `retry-after` says).
    let fast = [h("retry-after", 0), h("x-should-retry", "false")];
    match step {
        Step::RateLimit { resets_in: Some(s) } => {
            let reset = epoch_now() + s;
            (
                429,
                vec![
                    h("anthropic-ratelimit-unified-status", "rejected"),
                    h("anthropic-ratelimit-unified-reset", reset),
                    h(
                        "anthropic-ratelimit-unified-representative-claim",
                        "five_hour",
                    ),
                    h("anthropic-ratelimit-unified-5h-status", "rejected"),
                    h("anthropic-ratelimit-unified-5h-reset", reset),
                    h("anthropic-ratelimit-unified-5h-utilization", "1.0"),
                    h("anthropic-ratelimit-unified-overage-status", "rejected"),
                    h(
                        "anthropic-ratelimit-unified-overage-disabled-reason",
                        "org_level_disabled",
                    ),
                    h("retry-after", s),
                ],
                err(
                    "rate_limit_error",
                    "This request would exceed your account's rate limit. Please try again later.",
                ),
            )
        }
        Step::RateLimit { resets_in: None } => (
            429,
            [&fast[..], &[h("anthropic-ratelimit-requests-remaining", 0)]].concat(),
            err(
                "rate_limit_error",
                "Number of requests has exceeded your per-minute rate limit.",
            ),
        ),
        Step::ServerError => (
            500,
            fast.to_vec(),
            err("api_error", "Internal server error"),
        ),
        Step::Overloaded => (529, fast.to_vec(), err("overloaded_error", "Overloaded")),
        _ => (
            401,
            vec![],
            err("authentication_error", "invalid x-api-key"),
        ),
    }
}

fn sse(w: &mut TcpStream, event: Option<&str>, data: &Value) -> io::Result<()> {
    let mut s = String::new();
    if let Some(e) = event {
        s.push_str(&format!("event: {e}\n"));
    }
    s.push_str(&format!("data: {data}\n\n"));
    w.write_all(s.as_bytes())?;
    w.flush()
}

fn anthropic(req: &Request, body: &Value, d: &Decision, w: &mut TcpStream) -> io::Result<After> {
    if d.step.is_failure() {
        let (status, headers, err) = anthropic_error(&d.step);
        return json_reply(w, status, &headers, &err);
    }
    let _ = req;
    let model = body["model"].as_str().unwrap_or("mock-model").to_owned();
    let u = d.usage;
    let usage = json!({"input_tokens": u.input.saturating_sub(u.cached), "output_tokens": u.output,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": u.cached});
    // (kind, block, partial json or text)
    let mut blocks: Vec<Value> = Vec::new();
    let mut stop = "end_turn";
    match &d.step {
        Step::Text { text } => blocks.push(json!({"type": "text", "text": text})),
        Step::Write { path, content } => {
            stop = "tool_use";
            blocks.push(json!({"type": "text", "text": format!("Writing {path}.")}));
            match announced_cwd(body) {
                Some(cwd) => blocks.push(json!({"type": "tool_use", "id": id("toolu"), "name": "Write",
                    "input": {"file_path": format!("{cwd}/{path}"), "content": content}})),
                None => blocks.push(json!({"type": "tool_use", "id": id("toolu"), "name": "Bash",
                    "input": {"command": write_command(path, content), "description": "Write the file"}})),
            }
        }
        Step::Shell {
            command,
            background,
        } => {
            stop = "tool_use";
            let mut input = json!({"command": command, "description": "Run a command"});
            if *background {
                input["run_in_background"] = json!(true);
            }
            blocks.push(
                json!({"type": "tool_use", "id": id("toolu"), "name": "Bash", "input": input}),
            );
        }
        _ => {}
    }
    let msg_id = id("msg");
    if !body["stream"].as_bool().unwrap_or(false) {
        return json_reply(
            w,
            200,
            &[],
            &json!({"id": msg_id, "type": "message", "role": "assistant",
            "model": model, "content": blocks, "stop_reason": stop, "stop_sequence": null, "usage": usage}),
        );
    }
    http::start_sse(w)?;
    let mut start_usage = usage.clone();
    start_usage["output_tokens"] = json!(1);
    sse(
        w,
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": msg_id,
        "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": start_usage}}),
    )?;
    for (i, b) in blocks.iter().enumerate() {
        if b["type"] == "text" {
            sse(
                w,
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "text", "text": ""}}),
            )?;
            sse(
                w,
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "text_delta", "text": b["text"]}}),
            )?;
        } else {
            sse(
                w,
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}),
            )?;
            sse(
                w,
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": b["input"].to_string()}}),
            )?;
        }
        sse(
            w,
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": i}),
        )?;
    }
    sse(
        w,
        Some("message_delta"),
        &json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage}),
    )?;
    sse(w, Some("message_stop"), &json!({"type": "message_stop"}))?;
    Ok(After::Close)
}

// ----- OpenAI (Responses and Chat Completions) -------------------------------------------

fn openai_error(step: &Step) -> (u16, Vec<(String, String)>, Value) {
    let fast = vec![h("retry-after", 0), h("retry-after-ms", 1)];
    match step {
        Step::RateLimit { resets_in: Some(s) } => (
            429,
            vec![h("retry-after", s)],
            json!({"error": {"type": "usage_limit_reached", "code": "insufficient_quota",
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "plan_type": "plus", "resets_at": epoch_now() + s, "resets_in_seconds": s}}),
        ),
        Step::RateLimit { resets_in: None } => (
            429,
            fast,
            json!({"error": {"type": "requests", "code": "rate_limit_exceeded",
                "message": "Rate limit reached for requests"}}),
        ),
        Step::ServerError => (
            500,
            fast,
            json!({"error": {"type": "server_error", "code": null, "message": "The server had an error while processing your request."}}),
        ),
        Step::Overloaded => (
            503,
            fast,
            json!({"error": {"type": "server_error", "code": "server_is_overloaded", "message": "The server is overloaded."}}),
        ),
        _ => (
            401,
            vec![],
            json!({"error": {"type": "invalid_request_error", "code": "invalid_api_key",
                "message": "Incorrect API key provided: x. You can find your API key at https://platform.openai.com/account/api-keys."}}),
        ),
    }
}

/// The Responses API function call for a shell command, in the shape of whichever shell tool
/// the CLI offered.
fn responses_shell_call(body: &Value, command: &str) -> Value {
    let names: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let (name, args) = if names.contains(&"shell") {
        ("shell", json!({"command": ["bash", "-lc", command]}))
    } else if names.contains(&"exec_command") {
        ("exec_command", json!({"cmd": command}))
    } else if names.contains(&"shell_command") {
        ("shell_command", json!({"command": command}))
    } else {
        ("shell", json!({"command": ["bash", "-lc", command]}))
    };
    json!({"type": "function_call", "id": id("fc"), "call_id": id("call"), "name": name,
        "arguments": args.to_string(), "status": "completed"})
}

fn responses(body: &Value, d: &Decision, w: &mut TcpStream) -> io::Result<After> {
    if d.step.is_failure() {
        let (status, headers, err) = openai_error(&d.step);
        return json_reply(w, status, &headers, &err);
    }
    let model = body["model"].as_str().unwrap_or("mock-model").to_owned();
    let message = |text: &str| {
        json!({"type": "message", "id": id("msg"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
    };
    let items = match &d.step {
        Step::Text { text } => vec![message(text)],
        Step::Write { path, content } => {
            vec![responses_shell_call(body, &write_command(path, content))]
        }
        Step::Shell { command, .. } => vec![responses_shell_call(body, command)],
        _ => vec![],
    };
    let u = d.usage;
    let usage = json!({"input_tokens": u.input, "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input + u.output});
    let resp_id = id("resp");
    http::start_sse(w)?;
    sse(
        w,
        Some("response.created"),
        &json!({"type": "response.created",
        "response": {"id": resp_id, "object": "response", "model": model, "status": "in_progress", "output": []}}),
    )?;
    for (i, item) in items.iter().enumerate() {
        sse(
            w,
            Some("response.output_item.added"),
            &json!({"type": "response.output_item.added",
            "output_index": i, "item": item}),
        )?;
        if item["type"] == "message" {
            sse(
                w,
                Some("response.output_text.delta"),
                &json!({"type": "response.output_text.delta",
                "item_id": item["id"], "output_index": i, "content_index": 0,
                "delta": item["content"][0]["text"]}),
            )?;
        }
        sse(
            w,
            Some("response.output_item.done"),
            &json!({"type": "response.output_item.done",
            "output_index": i, "item": item}),
        )?;
    }
    sse(
        w,
        Some("response.completed"),
        &json!({"type": "response.completed",
        "response": {"id": resp_id, "object": "response", "model": model, "status": "completed",
            "output": items, "usage": usage}}),
    )?;
    Ok(After::Close)
}

/// aider's "whole" edit format: the path on its own line, then the whole file fenced.
fn chat_text(step: &Step) -> String {
    match step {
        Step::Text { text } => text.clone(),
        Step::Write { path, content } => {
            let nl = if content.ends_with('\n') { "" } else { "\n" };
            format!("I will write {path}.\n\n{path}\n```\n{content}{nl}```\n")
        }
        Step::Shell { command, .. } => format!("Run this:\n\n```bash\n{command}\n```\n"),
        _ => String::new(),
    }
}

/// A duration the way OpenAI's rate-limit messages and `x-ratelimit-reset-*` headers spell it
/// (Go's `time.Duration`): `1h0m0s`, `6m0s`, `20s`.
fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

/// A Chat Completions rate limit with a reset, as the OpenAI API sends it to an API key (a
/// requests-per-day limit): the reset in the message text ("Please try again in 1h0m0s."), in
/// `retry-after` and in `x-ratelimit-reset-requests`. (The Responses wire keeps the ChatGPT
/// plan's `usage_limit_reached` with `resets_at`, which is what Codex reads.)
fn chat_rate_limit(resets_in: u64) -> (u16, Vec<(String, String)>, Value) {
    let left = go_duration(resets_in);
    (
        429,
        vec![
            h("retry-after", resets_in),
            h("x-ratelimit-limit-requests", 200),
            h("x-ratelimit-remaining-requests", 0),
            h("x-ratelimit-reset-requests", &left),
        ],
        json!({"error": {"type": "requests", "param": null, "code": "rate_limit_exceeded",
            "message": format!("Rate limit reached for mock-model in organization org-conformance on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in {left}. Visit https://platform.openai.com/account/rate-limits to learn more.")}}),
    )
}

fn chat(body: &Value, d: &Decision, w: &mut TcpStream) -> io::Result<After> {
    if d.step.is_failure() {
        let (status, headers, err) = match d.step {
            Step::RateLimit { resets_in: Some(s) } => chat_rate_limit(s),
            _ => openai_error(&d.step),
        };
        return json_reply(w, status, &headers, &err);
    }
    let model = body["model"].as_str().unwrap_or("mock-model").to_owned();
    let text = chat_text(&d.step);
    let u = d.usage;
    let usage = json!({"prompt_tokens": u.input, "completion_tokens": u.output,
        "total_tokens": u.input + u.output, "prompt_tokens_details": {"cached_tokens": u.cached}});
    let cid = id("chatcmpl");
    let created = epoch_now();
    if !body["stream"].as_bool().unwrap_or(false) {
        return json_reply(
            w,
            200,
            &[],
            &json!({"id": cid, "object": "chat.completion", "created": created,
            "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"}], "usage": usage}),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    http::start_sse(w)?;
    sse(
        w,
        None,
        &chunk(json!({"role": "assistant", "content": text}), Value::Null),
    )?;
    sse(w, None, &chunk(json!({}), json!("stop")))?;
    if body["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false)
    {
        sse(
            w,
            None,
            &json!({"id": cid, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [], "usage": usage}),
        )?;
    }
    w.write_all(b"data: [DONE]\n\n")?;
    w.flush()?;
    Ok(After::Close)
}

// ----- Gemini ----------------------------------------------------------------------------

/// Gemini's errors, as Google's APIs send them (what Gemini CLI's `classifyGoogleError` reads).
fn gemini_error(step: &Step, model: &str) -> (u16, Value) {
    let err = |code: u16, status: &str, message: &str, details: Value| {
        (
            code,
            json!({"error": {"code": code, "status": status, "message": message, "details": details}}),
        )
    };
    match step {
        // A usage limit with a reset: `QuotaFailure` and a `RetryInfo` beyond the 300 s the CLI
        // retries by itself, so it gives up at once and prints "Suggested retry after 3600s.".
        // (A per-day quota id would make it print "You have exhausted your daily quota on this
        // model." and drop the delay; Code Assist's "exhausted your capacity … reset after" it
        // sleeps through silently.)
        Step::RateLimit { resets_in: Some(s) } => err(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
            json!([
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_paid_tier_requests",
                     "quotaId": "GenerateRequestsPerProjectPerModel",
                     "quotaDimensions": {"location": "global", "model": model}}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{s}s")}
            ]),
        ),
        // An API key's per-minute rate limit, as the Gemini API sends it: `QuotaFailure` with a
        // per-minute quota id and a short `RetryInfo`. The CLI retries it, then gives up with
        // "Suggested retry after 1s.".
        Step::RateLimit { resets_in: None } => err(
            429,
            "RESOURCE_EXHAUSTED",
            &format!(
                "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: {model}\nPlease retry in 1.5s."
            ),
            json!([
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                     "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                     "quotaDimensions": {"location": "global", "model": model}, "quotaValue": "10"}]},
                {"@type": "type.googleapis.com/google.rpc.Help", "links": [
                    {"description": "Learn more about Gemini API quotas",
                     "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}
            ]),
        ),
        Step::ServerError => err(
            500,
            "INTERNAL",
            "An internal error has occurred.",
            json!([]),
        ),
        Step::Overloaded => err(
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
            json!([]),
        ),
        _ => err(
            401,
            "UNAUTHENTICATED",
            "API key not valid. Please pass a valid API key.",
            json!([]),
        ),
    }
}

fn gemini(req: &Request, body: &Value, d: &Decision, w: &mut TcpStream) -> io::Result<After> {
    let _ = body;
    let model = req
        .path
        .rsplit('/')
        .next()
        .and_then(|m| m.split(':').next())
        .unwrap_or("mock-gemini")
        .to_owned();
    if d.step.is_failure() {
        let (status, err) = gemini_error(&d.step, &model);
        return json_reply(w, status, &[], &err);
    }
    let parts = match &d.step {
        Step::Text { text } => vec![json!({"text": text})],
        Step::Write { path, content } => vec![
            json!({"text": format!("Writing {path}.")}),
            json!({"functionCall": {"name": "write_file", "args": {"file_path": path, "content": content}}}),
        ],
        Step::Shell { command, .. } => vec![json!({"functionCall": {"name": "run_shell_command",
            "args": {"command": command, "description": "Run a command"}}})],
        _ => vec![],
    };
    let u: Usage = d.usage;
    let reply = json!({"candidates": [{"content": {"role": "model", "parts": parts},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": u.input, "candidatesTokenCount": u.output,
            "totalTokenCount": u.input + u.output, "cachedContentTokenCount": u.cached},
        "modelVersion": model, "responseId": id("resp")});
    if !req.path.contains(":streamGenerateContent") {
        return json_reply(w, 200, &[], &reply);
    }
    http::start_sse(w)?;
    sse(w, None, &reply)?;
    Ok(After::Close)
}
