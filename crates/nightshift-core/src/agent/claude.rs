//! Claude Code: `claude -p --output-format stream-json --verbose`, and the single object of
//! `--output-format json` ([`parse_json_output`]).
//!
//! Accounting (see the fixtures' EXPECTED.md):
//!
//! * Claude prints one `assistant` line per content block, each repeating the message's `usage`:
//!   usage counts once per `message.id`, and a turn is one distinct id (synthetic messages,
//!   model `<synthetic>`, are not API calls and count for neither).
//! * The per-line `output_tokens` is a placeholder from `message_start`. With
//!   `--include-partial-messages`, `message_delta` carries the real count and the difference is
//!   reported as it arrives; otherwise the `result` line corrects it.
//! * A `result` line ends one CLI process (a stream may hold several). Its `usage` (main model
//!   only) replaces the running sum for that process; `modelUsage` (side models included) gives
//!   the per-model figures; `total_cost_usd` (or the legacy `cost_usd`/`total_cost`) the cost.
//!
//! The ending is classified from `terminal_reason` (`blocking_limit` is a context overflow, not a
//! quota), `subtype` (which beats `is_error`), a `rejected` `rate_limit_event`,
//! `api_error_status`, the assistant's `error` code, and only then text patterns.

use std::collections::{BTreeMap, HashMap};

use jiff::tz::TimeZone;
use serde::Deserialize;

use super::classify::{Signal, finish_kind, signal_from_status, signal_from_text};
use super::line::{Dialect, LineReader};
use super::reset::ResetClock;
use super::wire::{AnthropicUsage, ErrorField, Flag, Float, Int, List, Num, Obj, Str};
use super::{AgentEvent, FinishKind, Finished, RateLimitState, SessionTotals, StreamParser, Usage};

/// Top-level `type`s of Claude's stream: a recovered fragment must carry one of these.
const EVENT_TYPES: &[&str] = &[
    "system",
    "assistant",
    "user",
    "result",
    "rate_limit_event",
    "stream_event",
    "control_request",
    "control_response",
    "control_cancel_request",
    "keep_alive",
];

/// Tools whose successful result means their `file_path` (or `notebook_path`) changed.
const FILE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

const SYNTHETIC_MODEL: &str = "<synthetic>";

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    subtype: Str<'a>,
    #[serde(borrow)]
    session_id: Str<'a>,
    #[serde(borrow)]
    model: Str<'a>,
    #[serde(borrow)]
    message: Obj<Message<'a>>,
    /// `assistant`: an error code such as `rate_limit`; `system/api_retry`: the retry reason.
    #[serde(borrow)]
    error: ErrorField<'a>,
    error_status: Int,
    retry_delay_ms: Num,
    #[serde(borrow)]
    rate_limit_info: Obj<RateLimitInfo<'a>>,
    is_error: Flag,
    num_turns: Num,
    total_cost_usd: Float,
    cost_usd: Float,
    total_cost: Float,
    usage: Obj<AnthropicUsage>,
    #[serde(rename = "modelUsage")]
    model_usage: Obj<BTreeMap<String, Obj<AnthropicUsage>>>,
    api_error_status: Int,
    #[serde(borrow)]
    terminal_reason: Str<'a>,
    #[serde(borrow)]
    result: Str<'a>,
    #[serde(borrow)]
    errors: List<Str<'a>>,
    #[serde(borrow)]
    event: Obj<StreamEvent<'a>>,
    #[serde(borrow)]
    permission_denials: List<Obj<Denial<'a>>>,
    /// `user`: a message from stdin echoed back (`--replay-user-messages`).
    #[serde(rename = "isReplay")]
    is_replay: Flag,
}

/// One entry of `result.permission_denials`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Denial<'a> {
    #[serde(borrow)]
    tool_name: Str<'a>,
    #[serde(borrow)]
    tool_input: Obj<DeniedInput<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DeniedInput<'a> {
    #[serde(borrow)]
    file_path: Str<'a>,
    #[serde(borrow)]
    notebook_path: Str<'a>,
    #[serde(borrow)]
    path: Str<'a>,
    #[serde(borrow)]
    command: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    model: Str<'a>,
    #[serde(borrow)]
    content: List<Obj<Block<'a>>>,
    usage: Obj<AnthropicUsage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    tool_use_id: Str<'a>,
    is_error: Flag,
    #[serde(borrow)]
    input: Obj<ToolInput<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolInput<'a> {
    #[serde(borrow)]
    file_path: Str<'a>,
    #[serde(borrow)]
    notebook_path: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RateLimitInfo<'a> {
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(rename = "resetsAt")]
    resets_at: Int,
    #[serde(rename = "rateLimitType", borrow)]
    kind: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    message: Obj<Message<'a>>,
    usage: Obj<AnthropicUsage>,
}

/// One CLI process: from its first line to its `result`.
#[derive(Debug, Default)]
struct Segment {
    /// Message id → output tokens counted for it so far.
    seen: HashMap<Box<str>, u64>,
    turns: u32,
    usage: Usage,
    by_model: BTreeMap<String, Usage>,
    /// tool_use id → the file a pending Write/Edit names.
    pending_files: HashMap<Box<str>, String>,
    /// `Some(resets_at)` after a `rejected` rate_limit_event.
    rejected: Option<Option<i64>>,
    /// The assistant's `error` code (`rate_limit`, `authentication_failed`, …).
    assistant_error: Option<String>,
    /// Text of a synthetic or erroring assistant message (limit messages live there).
    error_text: Option<String>,
    /// The message `stream_event`s are currently about: (id, model).
    streaming: Option<(Box<str>, String)>,
}

#[derive(Debug, Default)]
struct State {
    clock: ResetClock,
    seg: Segment,
    /// After `--resume`, `total_cost_usd` is the conversation's: what it was before this
    /// process (then the last total seen), so only the difference is counted.
    prior_cost: Option<f64>,
    /// The last `result` seen: its session id, `total_cost_usd` and `modelUsage`. A later
    /// result of the same session (another turn of one process fed on stdin, or a resumed
    /// process) reports both cumulative, so only the difference is counted.
    last_result: Option<(String, Option<f64>, BTreeMap<String, Usage>)>,
    /// Finished processes.
    usage: Usage,
    turns: u32,
    cost_usd: Option<f64>,
    by_model: BTreeMap<String, Usage>,
}

/// Streaming parser for Claude Code's `stream-json`.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    reader: LineReader,
    state: State,
}

impl ClaudeParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The zone of clock times printed without one (default: the system zone).
    pub fn with_time_zone(mut self, tz: TimeZone) -> Self {
        self.state.clock.tz = Some(tz);
        self
    }
}

impl StreamParser for ClaudeParser {
    fn feed_line(&mut self, line: &[u8]) -> Vec<AgentEvent> {
        self.reader.feed(&mut self.state, line)
    }

    fn finish(&mut self) -> Vec<AgentEvent> {
        self.reader.finish()
    }

    fn totals(&self) -> SessionTotals {
        let s = &self.state;
        let mut by_model = s.by_model.clone();
        add_models(&mut by_model, &s.seg.by_model);
        SessionTotals {
            usage: s.usage + s.seg.usage,
            turns: s.turns + s.seg.turns,
            cost_usd: s.cost_usd,
            by_model,
        }
    }

    fn set_now(&mut self, now: i64) {
        self.state.clock.now = Some(now);
    }

    fn ends_on_finish(&self) -> bool {
        true
    }

    fn set_resumed_from(&mut self, _prior: Usage, prior_cost_usd: Option<f64>) {
        self.state.prior_cost = Some(prior_cost_usd.unwrap_or(0.0));
    }
}

/// Reads the single object printed by `claude -p --output-format json` (a `result` object,
/// legacy or current). `now` resolves relative reset times.
pub fn parse_json_output(bytes: &[u8], now: Option<i64>) -> (Vec<AgentEvent>, SessionTotals) {
    let mut p = ClaudeParser::new();
    if let Some(now) = now {
        p.set_now(now);
    }
    let mut events = p.feed_line(bytes);
    events.extend(p.finish());
    (events, p.totals())
}

fn add_models(into: &mut BTreeMap<String, Usage>, from: &BTreeMap<String, Usage>) {
    for (model, u) in from {
        *into.entry(model.clone()).or_default() += *u;
    }
}

fn add_model(into: &mut BTreeMap<String, Usage>, model: &str, u: Usage) {
    match into.get_mut(model) {
        Some(have) => *have += u,
        None => {
            into.insert(model.to_owned(), u);
        }
    }
}

impl Dialect for State {
    fn handle(
        &mut self,
        json: &[u8],
        _line: usize,
        strict: bool,
        out: &mut Vec<AgentEvent>,
    ) -> Result<bool, serde_json::Error> {
        let l: Line = serde_json::from_slice(json)?;
        let kind = l.kind.or_empty();
        if strict && !EVENT_TYPES.contains(&kind) {
            return Ok(false);
        }
        match kind {
            "assistant" => self.assistant(&l, out),
            "user" if l.is_replay.0 == Some(true) => replayed(json, out),
            "user" => self.user(&l, out),
            "system" => self.system(&l, out),
            "rate_limit_event" => self.rate_limit(&l, out),
            "stream_event" => self.stream_event(&l, out),
            "result" => self.result(&l, json, out),
            "control_request" | "control_response" | "control_cancel_request" | "keep_alive" => {}
            other => out.push(AgentEvent::Unknown {
                raw_type: other.to_owned(),
            }),
        }
        Ok(true)
    }
}

/// A user message from stdin, echoed back when the CLI took it (`isReplay`): its text (a string
/// `content`, or its text blocks joined). Rare (once per message written), so read untyped.
fn replayed(json: &[u8], out: &mut Vec<AgentEvent>) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    let content = &v["message"]["content"];
    let text = match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return,
    };
    out.push(AgentEvent::InputAccepted { text });
}

/// One user message as `--input-format stream-json` reads it, newline-terminated.
pub fn user_message_line(text: &str) -> Vec<u8> {
    let line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": text},
    });
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

impl State {
    fn assistant(&mut self, l: &Line, out: &mut Vec<AgentEvent>) {
        let Some(msg) = &l.message.0 else { return };
        let model = msg.model.or_empty();
        let synthetic = model == SYNTHETIC_MODEL;
        let error = l.error.message.as_deref().or(l.error.kind.as_deref());
        if let Some(e) = error {
            self.seg.assistant_error = Some(e.to_owned());
        }
        for block in msg.content.0.iter().filter_map(Obj::as_ref) {
            match block.kind.or_empty() {
                "text" => {
                    if let Some(text) = block.text.get() {
                        if synthetic || error.is_some() {
                            self.seg.error_text = Some(text.to_owned());
                        }
                        out.push(AgentEvent::Text {
                            text: text.to_owned(),
                        });
                    }
                }
                "tool_use" => {
                    let name = block.name.or_empty();
                    out.push(AgentEvent::ToolCall {
                        name: name.to_owned(),
                    });
                    if FILE_TOOLS.contains(&name) {
                        let path = block
                            .input
                            .as_ref()
                            .and_then(|i| i.file_path.get().or(i.notebook_path.get()));
                        if let (Some(id), Some(path)) = (block.id.get(), path) {
                            self.seg.pending_files.insert(id.into(), path.to_owned());
                        }
                    }
                }
                _ => {}
            }
        }
        if !synthetic && let Some(id) = msg.id.get() {
            let u = msg
                .usage
                .0
                .map(AnthropicUsage::to_usage)
                .unwrap_or_default();
            self.count_message(id, model, u, out);
        }
    }

    /// Counts a message's usage the first time its id is seen.
    fn count_message(&mut self, id: &str, model: &str, u: Usage, out: &mut Vec<AgentEvent>) {
        if self.seg.seen.contains_key(id) {
            return;
        }
        self.seg.seen.insert(id.into(), u.output);
        self.seg.turns += 1;
        self.seg.usage += u;
        add_model(&mut self.seg.by_model, model, u);
        if !u.is_zero() {
            out.push(AgentEvent::Usage(u));
        }
    }

    fn user(&mut self, l: &Line, out: &mut Vec<AgentEvent>) {
        let Some(msg) = &l.message.0 else { return };
        for block in msg.content.0.iter().filter_map(Obj::as_ref) {
            if block.kind.get() != Some("tool_result") {
                continue;
            }
            let ok = !block.is_error.0.unwrap_or(false);
            out.push(AgentEvent::ToolResult { ok });
            if let Some(path) = block
                .tool_use_id
                .get()
                .and_then(|id| self.seg.pending_files.remove(id))
                && ok
            {
                out.push(AgentEvent::FileChanged { path });
            }
        }
    }

    fn system(&mut self, l: &Line, out: &mut Vec<AgentEvent>) {
        match l.subtype.or_empty() {
            "init" => out.push(AgentEvent::SessionStarted {
                session_id: l.session_id.or_empty().to_owned(),
                model: l.model.to_owned_string(),
            }),
            "api_retry" => {
                let reason = l.error.describe();
                out.push(AgentEvent::Retrying {
                    status: l.error_status.0.and_then(|s| u16::try_from(s).ok()),
                    delay_ms: l.retry_delay_ms.0,
                    reason: if reason.is_empty() {
                        "api retry".to_owned()
                    } else {
                        reason
                    },
                });
            }
            _ => {}
        }
    }

    fn rate_limit(&mut self, l: &Line, out: &mut Vec<AgentEvent>) {
        let Some(info) = &l.rate_limit_info.0 else {
            return;
        };
        let state = match info.status.or_empty() {
            "allowed" => RateLimitState::Allowed,
            "allowed_warning" => RateLimitState::Warning,
            "rejected" => RateLimitState::Rejected,
            other => {
                out.push(AgentEvent::Unknown {
                    raw_type: format!("rate_limit_event/{other}"),
                });
                return;
            }
        };
        self.seg.rejected = match state {
            RateLimitState::Rejected => Some(info.resets_at.0),
            RateLimitState::Allowed => None,
            RateLimitState::Warning => self.seg.rejected,
        };
        out.push(AgentEvent::RateLimit {
            state,
            resets_at: info.resets_at.0,
            kind: info.kind.to_owned_string(),
        });
    }

    /// `--include-partial-messages`: count a message at `message_start`, and correct its output
    /// tokens from `message_delta`.
    fn stream_event(&mut self, l: &Line, out: &mut Vec<AgentEvent>) {
        let Some(ev) = &l.event.0 else { return };
        match ev.kind.or_empty() {
            "message_start" => {
                let Some(msg) = &ev.message.0 else { return };
                let (Some(id), model) = (msg.id.get(), msg.model.or_empty()) else {
                    return;
                };
                if model == SYNTHETIC_MODEL {
                    return;
                }
                if let Some(u) = msg.usage.0 {
                    self.count_message(id, model, u.to_usage(), out);
                }
                self.seg.streaming = Some((id.into(), model.to_owned()));
            }
            "message_delta" => {
                let (Some((id, model)), Some(u)) = (&self.seg.streaming, ev.usage.0) else {
                    return;
                };
                let Some(total) = u.output_tokens.0 else {
                    return;
                };
                let Some(counted) = self.seg.seen.get_mut(id) else {
                    return;
                };
                if total > *counted {
                    let delta = Usage {
                        output: total - *counted,
                        ..Usage::default()
                    };
                    *counted = total;
                    self.seg.usage += delta;
                    add_model(&mut self.seg.by_model, model, delta);
                    out.push(AgentEvent::Usage(delta));
                }
            }
            _ => {}
        }
    }

    fn result(&mut self, l: &Line, json: &[u8], out: &mut Vec<AgentEvent>) {
        let seg = std::mem::take(&mut self.seg);
        let result_usage = l.usage.0.map(AnthropicUsage::to_usage);
        let delta = result_usage.unwrap_or(seg.usage).saturating_sub(seg.usage);
        if !delta.is_zero() {
            out.push(AgentEvent::Usage(delta));
        }
        let reported = precise_number(json, "total_cost_usd", l.total_cost_usd.0)
            .or_else(|| precise_number(json, "cost_usd", l.cost_usd.0))
            .or_else(|| precise_number(json, "total_cost", l.total_cost.0));
        let session = l.session_id.get().filter(|id| !id.is_empty());
        let earlier = self
            .last_result
            .take()
            .filter(|(id, ..)| Some(id.as_str()) == session);
        let prior = match &earlier {
            Some((_, Some(total), _)) => Some(total.max(self.prior_cost.unwrap_or(0.0))),
            _ => self.prior_cost,
        };
        let cost = match (reported, prior) {
            (Some(total), Some(prior)) => {
                self.prior_cost = Some(total.max(prior));
                Some((total - prior).max(0.0))
            }
            (c, _) => c,
        };
        let num_turns = l.num_turns.0.and_then(|n| u32::try_from(n).ok());

        self.usage += result_usage.unwrap_or(seg.usage);
        self.turns += if seg.turns > 0 {
            seg.turns
        } else {
            num_turns.unwrap_or(0)
        };
        if let Some(c) = cost {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
        let mut models_now = BTreeMap::new();
        match &l.model_usage.0 {
            Some(models) if !models.is_empty() => {
                for (model, u) in models {
                    if let Some(u) = u.0 {
                        let u = u.to_usage();
                        models_now.insert(model.clone(), u);
                        let before = earlier
                            .as_ref()
                            .and_then(|(_, _, m)| m.get(model))
                            .copied()
                            .unwrap_or_default();
                        add_model(&mut self.by_model, model, u.saturating_sub(before));
                    }
                }
            }
            _ => {
                let mut by_model = seg.by_model.clone();
                // The result corrects the main model's placeholder output: credit the
                // correction to the model when the stream named exactly one.
                if by_model.len() == 1
                    && let Some(u) = by_model.values_mut().next()
                {
                    *u += delta;
                }
                add_models(&mut self.by_model, &by_model);
            }
        }
        if let Some(id) = session {
            let total = reported.or(earlier.as_ref().and_then(|(_, t, _)| *t));
            self.last_result = Some((id.to_owned(), total, models_now));
        }

        for d in l.permission_denials.0.iter().filter_map(Obj::as_ref) {
            let target = d.tool_input.as_ref().and_then(|i| {
                [&i.file_path, &i.notebook_path, &i.path, &i.command]
                    .into_iter()
                    .find_map(Str::get)
                    .map(str::to_owned)
            });
            out.push(AgentEvent::PermissionDenied {
                tool: d.tool_name.or_empty().to_owned(),
                target,
            });
        }
        let kind = self.classify(l, &seg);
        out.push(AgentEvent::Finished(Finished {
            kind,
            cost_usd: cost,
            turns: num_turns,
            result_usage,
        }));
    }

    fn classify(&self, l: &Line, seg: &Segment) -> FinishKind {
        let subtype = l.subtype.or_empty();
        let is_error = l.is_error.0.unwrap_or(false);
        if l.terminal_reason.get() == Some("blocking_limit") {
            return FinishKind::ContextOverflow;
        }
        match subtype {
            "error_max_turns" => return FinishKind::MaxTurns,
            "error_max_budget_usd" => return FinishKind::MaxBudget,
            _ => {}
        }
        if !is_error && !subtype.starts_with("error") {
            return FinishKind::Ok;
        }

        let texts: Vec<&str> = [
            l.result.get(),
            seg.error_text.as_deref(),
            seg.assistant_error.as_deref(),
        ]
        .into_iter()
        .flatten()
        .chain(l.errors.0.iter().filter_map(Str::get))
        .filter(|t| !t.is_empty())
        .collect();
        if texts
            .iter()
            .any(|t| t.contains("No conversation found with session ID"))
        {
            return FinishKind::ResumeUnavailable;
        }
        let quota = |from_event: Option<i64>| FinishKind::QuotaExhausted {
            resets_at: from_event.or_else(|| self.clock.resolve(texts.iter().copied())),
        };

        // Structured evidence first.
        if let Some(resets_at) = seg.rejected {
            return quota(resets_at);
        }
        let status = l.api_error_status.0;
        if status == Some(429) || seg.assistant_error.as_deref() == Some("rate_limit") {
            // A subscription limit comes with a `rejected` rate_limit_event (above) or says so
            // in words; an API key's 429 ("would exceed the rate limit for your organization"),
            // after the CLI's own ~10 retries, is a rate limit to back off from.
            return match signal_from_text(texts.iter().copied()) {
                Some(Signal::Quota) => quota(None),
                Some(Signal::Auth) => FinishKind::Auth,
                _ => FinishKind::Transient,
            };
        }
        if let Some(signal) = status.and_then(signal_from_status) {
            return finish_kind(signal, || quota(None));
        }
        match seg.assistant_error.as_deref() {
            Some("authentication_failed" | "billing_error" | "oauth_org_not_allowed") => {
                return FinishKind::Auth;
            }
            Some("overloaded" | "server_error" | "api_error") => return FinishKind::Transient,
            _ => {}
        }
        // Text patterns last.
        match signal_from_text(texts.iter().copied()) {
            Some(signal) => finish_kind(signal, || quota(None)),
            None => FinishKind::AgentError {
                message: texts.first().map(|t| (*t).to_owned()).unwrap_or_else(|| {
                    if subtype.is_empty() {
                        "agent reported an error".to_owned()
                    } else {
                        subtype.to_owned()
                    }
                }),
            },
        }
    }
}

/// serde_json (built without `float_roundtrip`) may be off by one unit in the last place on a
/// 17-digit decimal such as `0.21852600000000003`. Re-reads the number after `"key":` in the raw
/// line with std's correctly rounded parser, and keeps it when it agrees with serde's value (so a
/// nested key of the same name cannot be mistaken for it). Only used on `result` lines.
fn precise_number(json: &[u8], key: &str, approx: Option<f64>) -> Option<f64> {
    let approx = approx?;
    let pat = format!("\"{key}\"");
    let pat = pat.as_bytes();
    let mut from = 0;
    while let Some(i) = json
        .get(from..)
        .and_then(|rest| rest.windows(pat.len()).position(|w| w == pat))
    {
        let mut at = from + i + pat.len();
        from = at;
        while json.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if json.get(at) != Some(&b':') {
            continue;
        }
        at += 1;
        while json.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        let len = json[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        let exact = std::str::from_utf8(&json[at..at + len])
            .ok()
            .and_then(|t| t.parse::<f64>().ok());
        if let Some(v) = exact
            && (v - approx).abs() <= approx.abs() * 1e-12
        {
            return Some(v);
        }
    }
    Some(approx)
}

/// The tools a Claude session may use without asking (`--allowedTools`) unless
/// `[agent] allowed_tools` says otherwise: reading, editing and running the item's commands.
pub const DEFAULT_ALLOWED_TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "Glob",
    "Grep",
    "TodoWrite",
];

/// The permission mode when `[agent] permission_mode` is not set: edits in the worktree are
/// accepted, other tools need the allowlist. Works as root (`bypassPermissions` does not,
/// unless `IS_SANDBOX=1`).
pub const DEFAULT_PERMISSION_MODE: &str = "acceptEdits";

/// Claude Code: `claude -p --input-format stream-json` with the prompt as the first user
/// message on stdin, which stays open while the session is live (an operator's `tell` is
/// written to it; `--replay-user-messages` echoes each message the CLI takes) and is closed after
/// the `result` line, so the CLI exits; `--session-id` for a fresh session and `--resume` to
/// continue one (a `--session-id` can be used by one process only: a rerun resumes).
pub struct ClaudeAdapter;

impl super::adapter::Adapter for ClaudeAdapter {
    fn kind(&self) -> crate::config::AgentKind {
        crate::config::AgentKind::Claude
    }

    fn default_binary(&self) -> &'static str {
        "claude"
    }

    fn launch(&self, inv: &super::adapter::Invocation<'_>) -> super::adapter::Launch {
        let a = inv.agent;
        let mut argv = vec![super::adapter::binary(a, "claude"), "-p".to_owned()];
        match inv.resume {
            Some(id) => argv.extend(["--resume".to_owned(), id.to_owned()]),
            None => argv.extend(["--session-id".to_owned(), inv.session_id.to_owned()]),
        }
        argv.extend(
            [
                "--input-format",
                "stream-json",
                "--replay-user-messages",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--permission-mode",
            ]
            .map(str::to_owned),
        );
        argv.push(
            a.policy
                .permission_mode
                .clone()
                .unwrap_or_else(|| DEFAULT_PERMISSION_MODE.to_owned()),
        );
        let tools = match &a.policy.allowed_tools {
            Some(tools) => tools.join(","),
            None => DEFAULT_ALLOWED_TOOLS.join(","),
        };
        if !tools.is_empty() {
            argv.extend(["--allowedTools".to_owned(), tools]);
        }
        if let Some(model) = &a.model {
            argv.extend(["--model".to_owned(), model.clone()]);
        }
        argv.extend(a.args.iter().cloned());
        let adapter: &dyn super::adapter::Adapter = self;
        super::adapter::Launch {
            argv,
            stdin: Some(inv.prompt_file.to_path_buf()),
            env: if a.policy.is_sandbox {
                vec![("IS_SANDBOX".to_owned(), "1".to_owned())]
            } else {
                Vec::new()
            },
            env_allow: super::adapter::allowlist(adapter, a),
        }
    }

    fn cli_env(&self) -> &'static [&'static str] {
        &[
            "ANTHROPIC_*",
            "CLAUDE_CODE_*",
            "CLAUDE_CONFIG_DIR",
            "DISABLE_AUTOUPDATER",
        ]
    }

    fn credentials(&self) -> &'static [&'static str] {
        &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ]
    }

    fn posture(&self, agent: &crate::config::AgentConfig) -> String {
        let mode = agent
            .policy
            .permission_mode
            .as_deref()
            .unwrap_or(DEFAULT_PERMISSION_MODE);
        let tools = match &agent.policy.allowed_tools {
            Some(t) if t.is_empty() => "no --allowedTools".to_owned(),
            Some(t) => format!("--allowedTools {}", t.join(",")),
            None => format!("--allowedTools {}", DEFAULT_ALLOWED_TOOLS.join(",")),
        };
        let sandbox = if agent.policy.is_sandbox {
            ", IS_SANDBOX=1"
        } else {
            ""
        };
        format!("--permission-mode {mode}, {tools}{sandbox}")
    }

    fn parser(&self, _agent: &crate::config::AgentConfig) -> Option<Box<dyn StreamParser>> {
        Some(Box::new(ClaudeParser::new()))
    }

    fn resume(&self) -> super::adapter::ResumeRule {
        super::adapter::ResumeRule::ById
    }

    fn encode_input(&self, text: &str) -> Option<Vec<u8>> {
        Some(user_message_line(text))
    }

    fn tested(&self) -> Option<super::adapter::TestedRange> {
        Some(super::adapter::TestedRange {
            low: (2, 1, 197),
            high: (2, 1, 332),
        })
    }
}
