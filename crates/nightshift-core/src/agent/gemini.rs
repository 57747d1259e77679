//! Gemini CLI: `gemini --output-format stream-json`.
//!
//! * Non-JSON lines (the CLI's banners, "YOLO mode is enabled.", "Loaded cached credentials.",
//!   which reach stdout interleaved with the stream) come out as [`AgentEvent::Malformed`] like
//!   any unreadable line: harmless, logged and skipped. They are not hidden, so that a stream
//!   that is *only* banners is visible as such.
//! * Assistant text arrives as `delta` fragments, one [`AgentEvent::Text`] each.
//! * Usage arrives only with `result.stats`: `input_tokens` = `cached` + `input`, so
//!   [`Usage::input`] is `input` (or `input_tokens - cached`) and `cached` is a cache read.
//!   `total_tokens` exceeds input + output (presumably thinking tokens, not reported separately
//!   and not counted here).
//! * A turn is a run of assistant output (text or tool calls) between tool results or user
//!   messages: the stream has no per-call marker, so this approximates API calls.
//! * Warnings that announce a retry (429, "retrying") become [`AgentEvent::Retrying`]; an error
//!   event is remembered to classify the ending.

use std::collections::{BTreeMap, HashMap};

use jiff::tz::TimeZone;
use serde::Deserialize;

use super::classify::{finish_kind, signal_from_status, signal_from_text};
use super::line::{Dialect, LineReader};
use super::reset::{ResetClock, duration_after};
use super::wire::{ErrorField, Num, Obj, Str};
use super::{AgentEvent, FinishKind, Finished, SessionTotals, StreamParser, Usage};

const EVENT_TYPES: &[&str] = &[
    "init",
    "message",
    "tool_use",
    "tool_result",
    "error",
    "result",
];

/// Tools whose successful result means a file changed.
const FILE_TOOLS: &[&str] = &["write_file", "replace", "edit"];

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    session_id: Str<'a>,
    #[serde(borrow)]
    model: Str<'a>,
    #[serde(borrow)]
    role: Str<'a>,
    #[serde(borrow)]
    content: Str<'a>,
    #[serde(borrow)]
    tool_name: Str<'a>,
    #[serde(borrow)]
    tool_id: Str<'a>,
    #[serde(borrow)]
    parameters: Obj<Params<'a>>,
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(borrow)]
    error: ErrorField<'a>,
    #[serde(borrow)]
    severity: Str<'a>,
    #[serde(borrow)]
    message: Str<'a>,
    stats: Obj<Stats>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Params<'a> {
    #[serde(borrow)]
    file_path: Str<'a>,
    #[serde(borrow)]
    absolute_path: Str<'a>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct Stats {
    input_tokens: Num,
    output_tokens: Num,
    cached: Num,
    input: Num,
}

impl Stats {
    fn to_usage(self) -> Usage {
        let cached = self.cached.or_zero();
        Usage {
            input: self
                .input
                .0
                .unwrap_or_else(|| self.input_tokens.or_zero().saturating_sub(cached)),
            output: self.output_tokens.or_zero(),
            cache_read: cached,
            cache_write: 0,
            reasoning: 0,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    clock: ResetClock,
    model: Option<String>,
    usage: Usage,
    by_model: BTreeMap<String, Usage>,
    turns: u32,
    in_run: bool,
    pending_files: HashMap<Box<str>, String>,
    last_error: Option<String>,
    finished: bool,
}

/// Streaming parser for Gemini CLI's `stream-json`.
#[derive(Debug, Default)]
pub struct GeminiParser {
    reader: LineReader,
    state: State,
}

impl GeminiParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The zone of clock times printed without one (default: the system zone).
    pub fn with_time_zone(mut self, tz: TimeZone) -> Self {
        self.state.clock.tz = Some(tz);
        self
    }
}

impl StreamParser for GeminiParser {
    fn feed_line(&mut self, line: &[u8]) -> Vec<AgentEvent> {
        self.reader.feed(&mut self.state, line)
    }

    fn finish(&mut self) -> Vec<AgentEvent> {
        let mut out = self.reader.finish();
        let s = &mut self.state;
        if !s.finished
            && let Some(message) = s.last_error.take()
        {
            s.finished = true;
            out.push(AgentEvent::Finished(Finished {
                kind: classify(&[message.as_str()], None, &s.clock),
                cost_usd: None,
                turns: None,
                result_usage: None,
            }));
        }
        out
    }

    fn totals(&self) -> SessionTotals {
        SessionTotals {
            usage: self.state.usage,
            turns: self.state.turns,
            cost_usd: None,
            by_model: self.state.by_model.clone(),
        }
    }

    fn set_now(&mut self, now: i64) {
        self.state.clock.now = Some(now);
    }

    fn exit_kind(&self, code: i32) -> Option<FinishKind> {
        exit_kind(code)
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
            "init" => {
                self.model = l.model.to_owned_string();
                self.finished = false;
                out.push(AgentEvent::SessionStarted {
                    session_id: l.session_id.or_empty().to_owned(),
                    model: self.model.clone(),
                });
            }
            "message" => match l.role.or_empty() {
                "assistant" => {
                    self.start_run();
                    if let Some(text) = l.content.get() {
                        out.push(AgentEvent::Text {
                            text: text.to_owned(),
                        });
                    }
                }
                _ => self.in_run = false,
            },
            "tool_use" => {
                self.start_run();
                let name = l.tool_name.or_empty();
                out.push(AgentEvent::ToolCall {
                    name: name.to_owned(),
                });
                if FILE_TOOLS.contains(&name) {
                    let path = l
                        .parameters
                        .as_ref()
                        .and_then(|p| p.file_path.get().or(p.absolute_path.get()));
                    if let (Some(id), Some(path)) = (l.tool_id.get(), path) {
                        self.pending_files.insert(id.into(), path.to_owned());
                    }
                }
            }
            "tool_result" => {
                self.in_run = false;
                let ok = l.status.get() == Some("success");
                out.push(AgentEvent::ToolResult { ok });
                let path = l.tool_id.get().and_then(|id| self.pending_files.remove(id));
                if let (true, Some(path)) = (ok, path) {
                    out.push(AgentEvent::FileChanged { path });
                }
            }
            "error" => {
                let message = l
                    .message
                    .to_owned_string()
                    .or_else(|| l.error.message.as_deref().map(str::to_owned))
                    .unwrap_or_default();
                let lower = message.to_ascii_lowercase();
                if lower.contains("retry") || lower.contains("retrying") || lower.contains("429") {
                    out.push(AgentEvent::Retrying {
                        status: http_status_in(&lower),
                        delay_ms: None,
                        reason: message,
                    });
                } else if l.severity.get() != Some("warning") {
                    self.last_error = Some(message);
                }
            }
            "result" => self.result(&l, out),
            other => out.push(AgentEvent::Unknown {
                raw_type: other.to_owned(),
            }),
        }
        Ok(true)
    }
}

impl State {
    fn start_run(&mut self) {
        if !self.in_run {
            self.in_run = true;
            self.turns += 1;
        }
    }

    fn result(&mut self, l: &Line, out: &mut Vec<AgentEvent>) {
        self.in_run = false;
        let usage = l.stats.0.map(Stats::to_usage);
        if let Some(u) = usage {
            self.usage += u;
            if let Some(model) = &self.model {
                *self.by_model.entry(model.clone()).or_default() += u;
            }
            if !u.is_zero() {
                out.push(AgentEvent::Usage(u));
            }
        }
        let kind = if l.status.get() == Some("success") {
            FinishKind::Ok
        } else {
            let described = l.error.describe();
            let mut texts: Vec<&str> = vec![described.as_str()];
            if let Some(e) = &self.last_error {
                texts.push(e);
            }
            classify(&texts, l.error.code, &self.clock)
        };
        self.finished = true;
        self.last_error = None;
        out.push(AgentEvent::Finished(Finished {
            kind,
            cost_usd: None,
            turns: None,
            result_usage: usage,
        }));
    }
}

/// A three-digit HTTP error status written in a message ("status 429", "[429 Too Many…]").
fn http_status_in(text: &str) -> Option<u16> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(2)).find_map(|i| {
        let w = &b[i..i + 3];
        let boundary_before = i == 0 || !b[i - 1].is_ascii_digit();
        let boundary_after = b.get(i + 3).is_none_or(|c| !c.is_ascii_digit());
        (w.iter().all(u8::is_ascii_digit) && boundary_before && boundary_after)
            .then(|| std::str::from_utf8(w).ok()?.parse::<u16>().ok())
            .flatten()
            .filter(|s| (400..600).contains(s))
    })
}

fn classify(texts: &[&str], code: Option<i64>, clock: &ResetClock) -> FinishKind {
    let rate_limit = || rate_limit(texts, clock);
    let status = code.or_else(|| api_status(texts));
    if status == Some(429) {
        return rate_limit();
    }
    if let Some(s) = status.and_then(signal_from_status) {
        return finish_kind(s, rate_limit);
    }
    match signal_from_text(texts.iter().copied()) {
        Some(s) => finish_kind(s, rate_limit),
        None => FinishKind::AgentError {
            message: texts
                .iter()
                .find(|t| !t.is_empty())
                .map(|t| (*t).to_owned())
                .unwrap_or_else(|| "agent reported an error".to_owned()),
        },
    }
}

/// The longest retry delay Gemini CLI still treats as a rate limit it retries itself
/// (`MAX_RETRYABLE_DELAY_SECONDS`); a longer one is a quota it gives up on.
const MAX_RETRYABLE_DELAY_S: i64 = 300;

/// Where a daily quota of the Gemini API resets: midnight Pacific time (Google's rate-limit
/// documentation: "Requests per day (RPD) quotas reset at midnight Pacific time").
const DAILY_RESET_ZONE: &str = "America/Los_Angeles";

/// A 429, told apart the way Gemini CLI tells it apart (`classifyGoogleError`): the CLI prints
/// a quota it will not retry as "You have exhausted your daily quota on this model." (a
/// `QuotaFailure` with a per-day quota id), "You have exhausted your capacity on this model.
/// Your quota will reset after 1h0m0s." (Code Assist's subscription limit), or with a
/// `RetryInfo` delay over 300 s ("Suggested retry after 3600s."): a quota, paused to its reset.
/// Anything else it retried itself before giving up (a per-minute quota, "Suggested retry after
/// 26s."; a bare `RESOURCE_EXHAUSTED`): an API-key rate limit, a transient fault.
fn rate_limit(texts: &[&str], clock: &ResetClock) -> FinishKind {
    let hay = texts
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("\n");
    let suggested = duration_after(&hay, "suggested retry after ");
    let daily = hay.contains("daily quota");
    let terminal = daily
        || hay.contains("exhausted your capacity")
        || hay.contains("quota will reset")
        || suggested.is_some_and(|s| s > MAX_RETRYABLE_DELAY_S);
    if !terminal {
        return FinishKind::Transient;
    }
    let resets_at = match (suggested, clock.now) {
        (Some(s), Some(now)) if s > MAX_RETRYABLE_DELAY_S => Some(now.saturating_add(s)),
        _ => clock.resolve(texts.iter().copied()),
    }
    .or_else(|| {
        daily
            .then(|| next_midnight(clock.now?, DAILY_RESET_ZONE))
            .flatten()
    });
    FinishKind::QuotaExhausted { resets_at }
}

/// The first midnight after `now` in the zone `zone`.
fn next_midnight(now: i64, zone: &str) -> Option<i64> {
    let tz = TimeZone::get(zone).ok()?;
    let today = jiff::Timestamp::from_second(now)
        .ok()?
        .to_zoned_datetime(tz.clone())
        .date();
    let midnight = today.tomorrow().ok()?.to_zoned_datetime(tz).ok()?;
    Some(midnight.timestamp().as_second())
}

/// The HTTP status of an API error as Gemini CLI prints it: the `code` in the API's JSON body
/// (`[API Error: {"error":{"code":500,…}}]`), else its status name (`"status":"INTERNAL"`,
/// `(Status: UNAVAILABLE)`), else 429 when the CLI appended the advice it adds to every 429
/// ("Please wait and try again later.").
fn api_status(texts: &[&str]) -> Option<i64> {
    const NAMES: &[(&str, i64)] = &[
        ("resource_exhausted", 429),
        ("unavailable", 503),
        ("internal", 500),
        ("deadline_exceeded", 504),
        ("unauthenticated", 401),
        ("permission_denied", 403),
        ("not_found", 404),
        ("invalid_argument", 400),
    ];
    let hay = texts
        .iter()
        .map(|t| t.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("\n");
    let code = hay.find("\"code\":").and_then(|i| {
        let digits: String = hay[i + "\"code\":".len()..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse::<i64>()
            .ok()
            .filter(|c| (400..600).contains(c))
    });
    code.or_else(|| {
        NAMES.iter().find_map(|(name, status)| {
            [
                format!("\"status\":\"{name}\""),
                format!("(status: {name})"),
            ]
            .iter()
            .any(|p| hay.contains(p.as_str()))
            .then_some(*status)
        })
    })
    .or_else(|| {
        hay.contains("please wait and try again later")
            .then_some(429)
    })
}

/// The approval mode when `[agent] permission_mode` is not set: tools run without asking
/// (`auto_edit` would refuse the item's shell commands headless).
pub const DEFAULT_APPROVAL_MODE: &str = "yolo";

/// What `-p` says; the prompt itself comes on stdin, to which gemini appends `-p`'s text.
pub const PROMPT_POINTER: &str = "Carry out the task described above.";

/// Gemini CLI: headless `gemini -p` with the prompt on stdin, `--skip-trust` (each attempt is a
/// new, untrusted directory: exit 55 without it) and an approval mode. `--resume` takes
/// `latest` or an index, not an id: a rerun resumes the worktree's latest session.
pub struct GeminiAdapter;

impl super::adapter::Adapter for GeminiAdapter {
    fn kind(&self) -> crate::config::AgentKind {
        crate::config::AgentKind::Gemini
    }

    fn default_binary(&self) -> &'static str {
        "gemini"
    }

    fn launch(&self, inv: &super::adapter::Invocation<'_>) -> super::adapter::Launch {
        let a = inv.agent;
        let mode = a
            .policy
            .permission_mode
            .as_deref()
            .unwrap_or(DEFAULT_APPROVAL_MODE);
        let mut argv = vec![
            super::adapter::binary(a, "gemini"),
            "--output-format".to_owned(),
            "stream-json".to_owned(),
            "--skip-trust".to_owned(),
            "--approval-mode".to_owned(),
            mode.to_owned(),
        ];
        if inv.resume.is_some() {
            argv.extend(["--resume".to_owned(), "latest".to_owned()]);
        }
        if let Some(model) = &a.model {
            argv.extend(["-m".to_owned(), model.clone()]);
        }
        argv.extend(a.args.iter().cloned());
        argv.extend(["-p".to_owned(), PROMPT_POINTER.to_owned()]);
        let adapter: &dyn super::adapter::Adapter = self;
        super::adapter::Launch {
            argv,
            stdin: Some(inv.prompt_file.to_path_buf()),
            env: Vec::new(),
            env_allow: super::adapter::allowlist(adapter, a),
        }
    }

    fn cli_env(&self) -> &'static [&'static str] {
        &["GEMINI_*", "GOOGLE_*"]
    }

    fn credentials(&self) -> &'static [&'static str] {
        &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ]
    }

    fn posture(&self, agent: &crate::config::AgentConfig) -> String {
        let mode = agent
            .policy
            .permission_mode
            .as_deref()
            .unwrap_or(DEFAULT_APPROVAL_MODE);
        format!("--skip-trust, --approval-mode {mode}")
    }

    fn parser(&self, _agent: &crate::config::AgentConfig) -> Option<Box<dyn StreamParser>> {
        Some(Box::new(GeminiParser::new()))
    }

    fn resume(&self) -> super::adapter::ResumeRule {
        super::adapter::ResumeRule::Latest
    }

    fn tested(&self) -> Option<super::adapter::TestedRange> {
        Some(super::adapter::TestedRange {
            low: (0, 61, 0),
            high: (0, 61, 0),
        })
    }
}

/// Gemini CLI's exit codes (0.61.0), what each means when the stream said nothing of its own.
///
/// Two sources, read from the CLI's bundle and confirmed against the scripted server: its
/// `FatalError` subclasses (41 auth, 42 input, 44 sandbox, 52 config, 53 turn limit, 54 tool
/// execution, 55 untrusted directory, 130 cancelled), and headless `handleError`, which exits
/// with the API error's HTTP status (`process.exit(error.status)`), so the shell sees the status
/// modulo 256: 500 exits 244, 429 exits 173, 503 exits 247, 401 exits 145.
pub fn exit_kind(code: i32) -> Option<FinishKind> {
    let error = |what: &str| {
        Some(FinishKind::AgentError {
            message: format!("gemini exited {code}: {what}"),
        })
    };
    match code {
        // No auth method configured, or credentials refused.
        41 => Some(FinishKind::Auth),
        42 => error("input error"),
        44 => error("sandbox error"),
        52 => error("configuration error"),
        53 => Some(FinishKind::MaxTurns),
        54 => error("tool execution error"),
        55 => error("the directory is not trusted (pass --skip-trust)"),
        130 => error("cancelled"),
        // HTTP statuses, modulo 256.
        144 => error("the API refused the request (400)"),
        145 | 147 => Some(FinishKind::Auth), // 401, 403
        148 => error("model not found (404)"),
        // 429 after the CLI's own retries: a quota it gave up on says so in the stream.
        173 => Some(FinishKind::Transient),
        // 408, 499, 500, 502, 503, 504.
        152 | 243 | 244 | 246 | 247 | 248 => Some(FinishKind::Transient),
        _ => None,
    }
}
