//! OpenAI Codex: `codex exec --json`.
//!
//! * `thread.started` gives the id `codex exec resume` takes.
//! * Usage arrives only on `turn.completed` and is summed over turns. `cached_input_tokens`
//!   (and, in 0.147+, `cache_write_input_tokens`, assumed to be counted the same way) is part of
//!   `input_tokens`, so [`Usage::input`] is `input_tokens` minus both; `reasoning_output_tokens`
//!   is part of `output_tokens`. No cost is reported.
//! * `turn.completed` ends a turn as [`FinishKind::Ok`]; `turn.failed` is classified from its
//!   message, which may itself be a JSON-encoded API error (`{"status":400,"error":{…}}`, or a
//!   `usage_limit_reached` error with `resets_at`), then from text ("try again at 3:28 PM",
//!   "try again in 3 days 6 hours 57 minutes").
//! * A top-level `error` is remembered for [`StreamParser::finish`] (a fatal error with no
//!   `turn.failed` after it still ends the session); `Reconnecting… n/5` errors are the CLI's own
//!   retries and become [`AgentEvent::Retrying`].
//! * An `item.completed` of type `error` is a warning (it can come before `turn.started`) and is
//!   not reported. `request_user_input` comes out as [`AgentEvent::Unknown`]: nobody will answer.

use std::collections::HashSet;

use jiff::tz::TimeZone;
use serde::Deserialize;

use super::classify::{Signal, finish_kind, signal_from_status, signal_from_text};
use super::line::{Dialect, LineReader};
use super::reset::ResetClock;
use super::wire::{ErrorField, Int, List, Num, Obj, Str};
use super::{AgentEvent, FinishKind, Finished, SessionTotals, StreamParser, Usage};

const EVENT_TYPES: &[&str] = &[
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
    "item.plan.delta",
    "request_user_input",
    "error",
];

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    thread_id: Str<'a>,
    #[serde(borrow)]
    item: Obj<Item<'a>>,
    usage: Obj<CodexUsage>,
    #[serde(borrow)]
    error: ErrorField<'a>,
    #[serde(borrow)]
    message: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Item<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    exit_code: Int,
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(borrow)]
    changes: List<Obj<Change<'a>>>,
    #[serde(borrow)]
    server: Str<'a>,
    #[serde(borrow)]
    tool: Str<'a>,
    #[serde(borrow)]
    error: ErrorField<'a>,
    #[serde(borrow)]
    command: Str<'a>,
    #[serde(borrow)]
    aggregated_output: Str<'a>,
}

/// What the sandbox prints when it refuses a write (the default read-only sandbox, or a path
/// outside `workspace-write`).
const SANDBOX_REFUSALS: &[&str] = &["Read-only file system"];

#[derive(Deserialize, Default)]
#[serde(default)]
struct Change<'a> {
    #[serde(borrow)]
    path: Str<'a>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct CodexUsage {
    input_tokens: Num,
    cached_input_tokens: Num,
    cache_write_input_tokens: Num,
    output_tokens: Num,
    reasoning_output_tokens: Num,
}

impl CodexUsage {
    fn to_usage(self) -> Usage {
        let cached = self.cached_input_tokens.or_zero();
        let written = self.cache_write_input_tokens.or_zero();
        Usage {
            input: self
                .input_tokens
                .or_zero()
                .saturating_sub(cached)
                .saturating_sub(written),
            output: self.output_tokens.or_zero(),
            cache_read: cached,
            cache_write: written,
            reasoning: self.reasoning_output_tokens.or_zero(),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    clock: ResetClock,
    turns: u32,
    /// Usage from `turn.completed` (this process's share).
    usage: Usage,
    /// For a resumed thread: its running total before this process (what `turn.completed`
    /// counts on from), and the last running total seen.
    resumed_from: Option<Usage>,
    last_total: Option<Usage>,
    /// This process's usage as the rollout file's `token_count` events tell it (mid-turn).
    live: Usage,
    /// What `Usage` events have reported so far (the max of `usage` and `live`).
    reported: Usage,
    /// Tool items seen starting, so that their completion does not report the call twice.
    started: HashSet<Box<str>>,
    last_error: Option<String>,
    finished: bool,
}

/// Streaming parser for `codex exec --json`.
#[derive(Debug, Default)]
pub struct CodexParser {
    reader: LineReader,
    state: State,
}

impl CodexParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The zone of clock times printed without one ("try again at 3:28 PM" is the local time of
    /// the machine Codex runs on; default: the system zone).
    pub fn with_time_zone(mut self, tz: TimeZone) -> Self {
        self.state.clock.tz = Some(tz);
        self
    }
}

impl StreamParser for CodexParser {
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
                kind: classify(&message, &s.clock),
                cost_usd: None,
                turns: Some(s.turns),
                result_usage: None,
            }));
        }
        out
    }

    fn totals(&self) -> SessionTotals {
        SessionTotals {
            usage: self.state.process_usage(),
            turns: self.state.turns,
            cost_usd: None,
            by_model: Default::default(),
        }
    }

    fn set_now(&mut self, now: i64) {
        self.state.clock.now = Some(now);
    }

    fn set_resumed_from(&mut self, prior: Usage, _prior_cost_usd: Option<f64>) {
        self.state.resumed_from = Some(prior);
    }

    fn live_usage(&mut self, line: &[u8]) -> Vec<AgentEvent> {
        let Some(total) = rollout_total(line) else {
            return Vec::new();
        };
        let s = &mut self.state;
        let process = total.saturating_sub(s.resumed_from.unwrap_or_default());
        s.live = max_usage(s.live, process);
        let mut out = Vec::new();
        s.report(&mut out);
        out
    }
}

/// One line of Codex's rollout file (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<thread>.jsonl`):
/// the thread's running total from a `token_count` event
/// (`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{…}}}}`),
/// written after every model response, so a long turn shows its spend as it goes.
pub fn rollout_total(line: &[u8]) -> Option<Usage> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct RolloutLine<'a> {
        #[serde(rename = "type", borrow)]
        kind: Str<'a>,
        #[serde(borrow)]
        payload: Obj<Payload<'a>>,
    }
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Payload<'a> {
        #[serde(rename = "type", borrow)]
        kind: Str<'a>,
        info: Obj<Info>,
    }
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Info {
        total_token_usage: Obj<CodexUsage>,
    }
    let l: RolloutLine = serde_json::from_slice(line).ok()?;
    let p = l.payload.0.as_ref()?;
    if l.kind.get() != Some("event_msg") || p.kind.get() != Some("token_count") {
        return None;
    }
    Some(p.info.0.as_ref()?.total_token_usage.0?.to_usage())
}

/// A tool-like item's name for [`AgentEvent::ToolCall`], or `None` for items that are not calls.
fn tool_name(item: &Item) -> Option<String> {
    match item.kind.or_empty() {
        "mcp_tool_call" => Some(format!(
            "mcp__{}__{}",
            item.server.or_empty(),
            item.tool.or_empty()
        )),
        k @ ("command_execution" | "file_change" | "web_search" | "collab_tool_call") => {
            Some(k.to_owned())
        }
        _ => None,
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
            "thread.started" => out.push(AgentEvent::SessionStarted {
                session_id: l.thread_id.or_empty().to_owned(),
                model: None,
            }),
            "turn.started" => {
                self.turns += 1;
                self.finished = false;
            }
            "item.started" => {
                if let Some(item) = &l.item.0
                    && let Some(name) = tool_name(item)
                {
                    self.started.insert(item.id.or_empty().into());
                    out.push(AgentEvent::ToolCall { name });
                }
            }
            "item.completed" => {
                if let Some(item) = &l.item.0 {
                    self.item_completed(item, out);
                }
            }
            "turn.completed" => {
                let u = l.usage.0.map(CodexUsage::to_usage).unwrap_or_default();
                // After `exec resume`, `turn.completed` is the thread's running total.
                let delta = match self.resumed_from {
                    Some(base) => {
                        let prev = self.last_total.unwrap_or(base);
                        self.last_total = Some(u);
                        u.saturating_sub(prev)
                    }
                    None => u,
                };
                self.usage += delta;
                self.report(out);
                self.finished = true;
                out.push(AgentEvent::Finished(Finished {
                    kind: FinishKind::Ok,
                    cost_usd: None,
                    turns: Some(self.turns),
                    result_usage: Some(self.usage),
                }));
            }
            "turn.failed" => {
                let message = l
                    .error
                    .message
                    .as_deref()
                    .map(str::to_owned)
                    .or_else(|| self.last_error.clone())
                    .unwrap_or_else(|| l.error.describe());
                self.finished = true;
                out.push(AgentEvent::Finished(Finished {
                    kind: classify(&message, &self.clock),
                    cost_usd: None,
                    turns: Some(self.turns),
                    result_usage: None,
                }));
            }
            "error" => {
                let message = l
                    .message
                    .to_owned_string()
                    .or_else(|| l.error.message.as_deref().map(str::to_owned))
                    .unwrap_or_default();
                if message.to_ascii_lowercase().starts_with("reconnecting") {
                    out.push(AgentEvent::Retrying {
                        status: None,
                        delay_ms: None,
                        reason: message,
                    });
                } else {
                    self.last_error = Some(message);
                }
            }
            "item.updated" | "item.plan.delta" => {}
            other => out.push(AgentEvent::Unknown {
                raw_type: other.to_owned(),
            }),
        }
        Ok(true)
    }
}

/// Field by field, the larger.
fn max_usage(a: Usage, b: Usage) -> Usage {
    Usage {
        input: a.input.max(b.input),
        output: a.output.max(b.output),
        cache_read: a.cache_read.max(b.cache_read),
        cache_write: a.cache_write.max(b.cache_write),
        reasoning: a.reasoning.max(b.reasoning),
    }
}

impl State {
    /// This process's usage: what `turn.completed` said, or the rollout when it is ahead.
    fn process_usage(&self) -> Usage {
        max_usage(self.usage, self.live)
    }

    /// Reports what the usage grew by since the last report.
    fn report(&mut self, out: &mut Vec<AgentEvent>) {
        let now = self.process_usage();
        let delta = now.saturating_sub(self.reported);
        self.reported = max_usage(self.reported, now);
        if !delta.is_zero() {
            out.push(AgentEvent::Usage(delta));
        }
    }

    fn item_completed(&mut self, item: &Item, out: &mut Vec<AgentEvent>) {
        let status = item.status.get();
        if item.kind.get() == Some("agent_message") {
            if let Some(text) = item.text.get() {
                out.push(AgentEvent::Text {
                    text: text.to_owned(),
                });
            }
            return;
        }
        let Some(name) = tool_name(item) else { return };
        if !self.started.remove(item.id.or_empty()) {
            out.push(AgentEvent::ToolCall { name });
        }
        let completed = matches!(status, None | Some("completed"));
        let ok = match item.kind.or_empty() {
            "command_execution" => completed && item.exit_code.0.is_none_or(|c| c == 0),
            "mcp_tool_call" => completed && item.error.is_empty(),
            _ => completed,
        };
        out.push(AgentEvent::ToolResult { ok });
        if item.kind.get() == Some("command_execution")
            && (status == Some("declined")
                || (!ok
                    && SANDBOX_REFUSALS
                        .iter()
                        .any(|p| item.aggregated_output.or_empty().contains(p))))
        {
            out.push(AgentEvent::PermissionDenied {
                tool: "command_execution".to_owned(),
                target: item.command.to_owned_string(),
            });
        }
        if item.kind.get() == Some("file_change") && ok {
            for change in item.changes.0.iter().filter_map(Obj::as_ref) {
                if let Some(path) = change.path.get() {
                    out.push(AgentEvent::FileChanged {
                        path: path.to_owned(),
                    });
                }
            }
        }
    }
}

/// The fields of an API error that Codex passes on as a JSON string.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ApiError<'a> {
    status: Int,
    status_code: Int,
    #[serde(borrow)]
    error: ApiErrorBody<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ApiErrorBody<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    message: Str<'a>,
    #[serde(borrow)]
    code: Str<'a>,
    resets_at: Int,
    resets_in_seconds: Int,
}

/// How Codex words an overloaded server (`server_is_overloaded`), lowercased.
const OVERLOADED: &str = "model is at capacity";

/// Classifies a failed turn from its message.
fn classify(message: &str, clock: &ResetClock) -> FinishKind {
    let api: Option<ApiError<'_>> = message
        .trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str(message).ok())
        .flatten();
    let api = api.unwrap_or_default();
    let kind = api.error.kind.or_empty().to_ascii_lowercase();
    let code = api.error.code.or_empty().to_ascii_lowercase();
    let inner = api.error.message.get().unwrap_or(message);
    let texts = [inner, message, kind.as_str(), code.as_str()];
    let quota = || FinishKind::QuotaExhausted {
        resets_at: api
            .error
            .resets_at
            .0
            .or_else(|| {
                let now = clock.now?;
                Some(now.saturating_add(api.error.resets_in_seconds.0?))
            })
            .or_else(|| clock.resolve(texts)),
    };

    if kind.contains("usage_limit") || code.contains("usage_limit") {
        return quota();
    }
    // A 503 `server_is_overloaded` reaches the stream only as Codex's own words for it
    // (0.171.0: "Selected model is at capacity. Please try a different model."), no status.
    if inner.to_ascii_lowercase().contains(OVERLOADED) {
        return FinishKind::Transient;
    }
    let signal = signal_from_text(texts);
    match api.status.0.or(api.status_code.0) {
        Some(429) => {
            return if signal == Some(Signal::Quota) {
                quota()
            } else {
                FinishKind::Transient
            };
        }
        Some(status) => {
            if let Some(s) = signal_from_status(status) {
                return finish_kind(s, quota);
            }
        }
        None => {}
    }
    match signal {
        Some(s) => finish_kind(s, quota),
        None => FinishKind::AgentError {
            message: inner.to_owned(),
        },
    }
}

/// The sandbox when `[agent] permission_mode` is not set (`exec`'s own default, read-only,
/// refuses every write).
pub const DEFAULT_SANDBOX: &str = "workspace-write";

/// The sandbox when `[agent] permission_mode` is not set and nightshift's own confinement holds:
/// Codex's `workspace-write` runs each command in bubblewrap, which must write
/// `/proc/self/uid_map`, and Landlock (which lets the agent write only its clone, its temp dir
/// and `~/.codex`) refuses that: every command failed "bwrap: setting up uid map: Permission
/// denied". Codex's own words for this mode: for environments that are externally sandboxed.
pub const CONFINED_SANDBOX: &str = "danger-full-access";

/// Codex: `codex exec --json` with the prompt on stdin (`-`), the sandbox and approvals set by
/// `-c` (which `exec resume` accepts too; it has no `--sandbox`), and `exec resume <thread_id>`
/// to continue a thread. The user's `args` go right after `exec`, where `exec` parses them
/// itself, so a flag `resume` does not know cannot break a resume.
pub struct CodexAdapter;

impl super::adapter::Adapter for CodexAdapter {
    fn kind(&self) -> crate::config::AgentKind {
        crate::config::AgentKind::Codex
    }

    fn default_binary(&self) -> &'static str {
        "codex"
    }

    fn launch(&self, inv: &super::adapter::Invocation<'_>) -> super::adapter::Launch {
        let a = inv.agent;
        let mut argv = vec![super::adapter::binary(a, "codex"), "exec".to_owned()];
        argv.extend(a.args.iter().cloned());
        if let Some(thread) = inv.resume {
            argv.extend(["resume".to_owned(), thread.to_owned()]);
        }
        let sandbox = a
            .policy
            .permission_mode
            .as_deref()
            .unwrap_or(if inv.confined {
                CONFINED_SANDBOX
            } else {
                DEFAULT_SANDBOX
            });
        argv.extend([
            "--json".to_owned(),
            "--skip-git-repo-check".to_owned(),
            "-c".to_owned(),
            format!("sandbox_mode=\"{sandbox}\""),
            "-c".to_owned(),
            "approval_policy=\"never\"".to_owned(),
        ]);
        if let Some(model) = &a.model {
            argv.extend(["-m".to_owned(), model.clone()]);
        }
        argv.push("-".to_owned()); // the prompt, read from stdin
        let adapter: &dyn super::adapter::Adapter = self;
        super::adapter::Launch {
            argv,
            stdin: Some(inv.prompt_file.to_path_buf()),
            env: Vec::new(),
            env_allow: super::adapter::allowlist(adapter, a),
        }
    }

    fn cli_env(&self) -> &'static [&'static str] {
        &["OPENAI_*", "CODEX_*", "AZURE_OPENAI_*"]
    }

    fn credentials(&self) -> &'static [&'static str] {
        &["OPENAI_API_KEY", "CODEX_API_KEY"]
    }

    fn posture(&self, agent: &crate::config::AgentConfig) -> String {
        let sandbox = agent
            .policy
            .permission_mode
            .as_deref()
            .unwrap_or(DEFAULT_SANDBOX);
        match agent.policy.permission_mode {
            Some(_) => format!("-c sandbox_mode=\"{sandbox}\", -c approval_policy=\"never\""),
            None => format!(
                "-c sandbox_mode=\"{CONFINED_SANDBOX}\" inside nightshift's Landlock confinement (else \"{sandbox}\"), -c approval_policy=\"never\""
            ),
        }
    }

    fn parser(&self, _agent: &crate::config::AgentConfig) -> Option<Box<dyn StreamParser>> {
        Some(Box::new(CodexParser::new()))
    }

    fn resume(&self) -> super::adapter::ResumeRule {
        super::adapter::ResumeRule::ById
    }

    fn usage_log_dir(&self) -> Option<std::path::PathBuf> {
        let home = std::env::var_os("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(|h| std::path::PathBuf::from(h).join(".codex"))
            })?;
        Some(home.join("sessions"))
    }

    fn tested(&self) -> Option<super::adapter::TestedRange> {
        Some(super::adapter::TestedRange {
            low: (0, 171, 0),
            high: (0, 171, 0),
        })
    }
}
