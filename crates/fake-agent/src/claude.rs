//! Claude Code `--output-format stream-json --verbose` transcripts.
//!
//! [`ClaudeEmit::stream`] is pure: it returns the JSON objects, one per output line, and the
//! interpreter prints them. Usage totals are split evenly across the turns (the remainder goes
//! to the last turn), each turn is one `assistant` line with its own `message.id`, so counting
//! usage once per `message.id` gives back exactly the totals in the final `result` line.

use serde_json::{Value, json};

use crate::clock::Civil;

/// What an `emit claude` step prints. Token counts and cost are session totals.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeEmit {
    /// The final answer text (`result.result`, and the last turn's text).
    pub text: String,
    /// Number of turns, at least 1.
    pub turns: u64,
    /// Total `input_tokens`.
    pub input: u64,
    /// Total `output_tokens`.
    pub output: u64,
    /// Total `cache_read_input_tokens`.
    pub cache_read: u64,
    /// Total `cache_creation_input_tokens`.
    pub cache_write: u64,
    /// `total_cost_usd`.
    pub cost: f64,
    /// The model name.
    pub model: String,
}

impl Default for ClaudeEmit {
    fn default() -> Self {
        Self {
            text: "done".to_owned(),
            turns: 1,
            input: 0,
            output: 0,
            cache_read: 0,
            cache_write: 0,
            cost: 0.0,
            model: "claude-sonnet-4-5".to_owned(),
        }
    }
}

/// Where a stream comes from: the session it reports and the numbers only the run knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// `session_id` on every line.
    pub session_id: String,
    /// `cwd` on the init line.
    pub cwd: String,
    /// `duration_ms` (and `duration_api_ms`) on the result line.
    pub duration_ms: u64,
}

/// The tools the init line claims.
const TOOLS: [&str; 7] = ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write"];

impl ClaudeEmit {
    /// Sets one `key=value` of an `emit claude` line; the error names the key and the problem.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let count = |value: &str| {
            value.parse::<u64>().map_err(|_| {
                format!("`emit claude`: `{key}` must be a non-negative integer, got `{value}`")
            })
        };
        match key {
            "text" => self.text = value.to_owned(),
            "model" => {
                if value.is_empty() {
                    return Err("`emit claude`: `model` must not be empty".to_owned());
                }
                self.model = value.to_owned();
            }
            "turns" => {
                let turns = count(value)?;
                if turns == 0 {
                    return Err("`emit claude`: `turns` must be at least 1".to_owned());
                }
                self.turns = turns;
            }
            "input" => self.input = count(value)?,
            "output" => self.output = count(value)?,
            "cache_read" => self.cache_read = count(value)?,
            "cache_write" => self.cache_write = count(value)?,
            "cost" => match value.parse::<f64>() {
                Ok(cost) if cost.is_finite() && cost >= 0.0 => self.cost = cost,
                _ => {
                    return Err(format!(
                        "`emit claude`: `cost` must be a non-negative number of dollars, got `{value}`"
                    ));
                }
            },
            other => {
                return Err(format!(
                    "`emit claude`: unknown key `{other}` (expected text, turns, input, output, \
                     cache_read, cache_write, cost, model)"
                ));
            }
        }
        Ok(())
    }

    /// The stream, one JSON object per line: `system/init`, one `assistant` per turn, `result`.
    pub fn stream(&self, session: &SessionInfo) -> Vec<Value> {
        let turns = self.turns.max(1);
        let sid = session.session_id.as_str();
        let mut lines = Vec::new();
        lines.push(init_line(session, &self.model));
        for turn in 1..=turns {
            let last = turn == turns;
            let share = |total: u64| {
                let base = total / turns;
                if last { base + total % turns } else { base }
            };
            let text = if last {
                self.text.clone()
            } else {
                format!("(fake-agent) working, turn {turn} of {turns}")
            };
            let turn_label = turn.to_string();
            lines.push(json!({
                "type": "assistant",
                "message": {
                    "id": format!("msg_fake_{turn}"),
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": if last { Value::from("end_turn") } else { Value::Null },
                    "stop_sequence": null,
                    "usage": usage(
                        share(self.input),
                        share(self.output),
                        share(self.cache_read),
                        share(self.cache_write),
                    ),
                },
                "parent_tool_use_id": null,
                "session_id": sid,
                "uuid": fake_uuid(&[sid, "assistant", &turn_label]),
            }));
        }
        lines.push(json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "duration_ms": session.duration_ms,
            "duration_api_ms": session.duration_ms,
            "num_turns": turns,
            "result": self.text,
            "stop_reason": "end_turn",
            "session_id": sid,
            "total_cost_usd": self.cost,
            "usage": usage(self.input, self.output, self.cache_read, self.cache_write),
            "modelUsage": {
                self.model.as_str(): {
                    "inputTokens": self.input,
                    "outputTokens": self.output,
                    "cacheReadInputTokens": self.cache_read,
                    "cacheCreationInputTokens": self.cache_write,
                    "costUSD": self.cost,
                },
            },
            "permission_denials": [],
            "terminal_reason": "completed",
            "uuid": fake_uuid(&[sid, "result"]),
        }));
        lines
    }
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Value {
    json!({
        "input_tokens": input,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output,
        "service_tier": "standard",
    })
}

/// The first line of every session: `system/init`.
pub fn init_line(session: &SessionInfo, model: &str) -> Value {
    let sid = session.session_id.as_str();
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": session.cwd,
        "session_id": sid,
        "tools": TOOLS,
        "mcp_servers": [],
        "model": model,
        "permissionMode": "bypassPermissions",
        "slash_commands": [],
        "apiKeySource": "none",
        "claude_code_version": "2.1.x-fake",
        "output_style": "default",
        "agents": [],
        "skills": [],
        "plugins": [],
        "uuid": fake_uuid(&[sid, "init"]),
    })
}

/// The model a `busy` session claims.
pub const BUSY_MODEL: &str = "claude-sonnet-4-5";

/// Turn `turn` (1-based) of a `busy` session: one `assistant` line with its own `message.id`
/// (`msg_fake_busy_<turn>`, distinct from `emit claude`'s ids) and this turn's usage.
pub fn busy_line(session: &SessionInfo, turn: u64, input: u64, output: u64) -> Value {
    let sid = session.session_id.as_str();
    let turn_label = turn.to_string();
    json!({
        "type": "assistant",
        "message": {
            "id": format!("msg_fake_busy_{turn}"),
            "type": "message",
            "role": "assistant",
            "model": BUSY_MODEL,
            "content": [{
                "type": "text",
                "text": format!("(fake-agent) still working, turn {turn}"),
            }],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(input, output, 0, 0),
        },
        "parent_tool_use_id": null,
        "session_id": sid,
        "uuid": fake_uuid(&[sid, "busy", &turn_label]),
    })
}

/// A reset further away than this is a weekly limit (printed with its date).
const SESSION_WINDOW_S: u64 = 5 * 3600;

/// How Claude Code ends at a subscription limit: a `rate_limit_event` with status `rejected`
/// and `resetsAt`, then a `result` with subtype `success` but `is_error: true`,
/// `api_error_status: 429` and the text `You've hit your session limit · resets 4pm (UTC)`
/// (or `… weekly limit · resets Jan 12, 10:59am (UTC)` when the reset is more than five hours
/// away). `now` is the current epoch, used only to choose between the two.
pub fn usage_limit(session: &SessionInfo, resets_at: u64, now: u64) -> Vec<Value> {
    let sid = session.session_id.as_str();
    let at = Civil::from_epoch(resets_at);
    let (kind, text) = if resets_at.saturating_sub(now) <= SESSION_WINDOW_S {
        (
            "five_hour",
            format!(
                "You've hit your session limit \u{b7} resets {} (UTC)",
                at.claude_clock()
            ),
        )
    } else {
        (
            "seven_day",
            format!(
                "You've hit your weekly limit \u{b7} resets {} {}, {} (UTC)",
                at.month_abbrev(),
                at.day,
                at.claude_clock()
            ),
        )
    };
    vec![
        json!({
            "type": "rate_limit_event",
            "rate_limit_info": {
                "status": "rejected",
                "resetsAt": resets_at,
                "rateLimitType": kind,
                "overageStatus": "rejected",
                "overageDisabledReason": "org_level_disabled",
                "isUsingOverage": false,
            },
            "uuid": fake_uuid(&[sid, "rate_limit_event"]),
            "session_id": sid,
        }),
        json!({
            "type": "result",
            "subtype": "success",
            "is_error": true,
            "api_error_status": 429,
            "duration_ms": session.duration_ms,
            "duration_api_ms": 0,
            "num_turns": 1,
            "result": text,
            "stop_reason": "stop_sequence",
            "session_id": sid,
            "total_cost_usd": 0.0,
            "usage": usage(0, 0, 0, 0),
            "modelUsage": {},
            "permission_denials": [],
            "uuid": fake_uuid(&[sid, "result"]),
        }),
    ]
}

/// Three lines a lenient reader must survive (`emit-malformed`):
///
/// 1. plain text that is not JSON;
/// 2. valid JSON with an unknown `type` (`fake_unknown_event`);
/// 3. an `assistant` object with a complete `rate_limit_event` object glued into the middle of
///    its text, as Claude Code 2.1.74 wrote it (anthropics/claude-code#49640): the line is not
///    valid JSON. (The CLI's glued line also broke in two at the event's own newline; here the
///    whole thing stays on one line.)
pub fn malformed(session: &SessionInfo) -> [String; 3] {
    let sid = session.session_id.as_str();
    let unknown = json!({
        "type": "fake_unknown_event",
        "subtype": "from_a_newer_cli",
        "session_id": sid,
        "detail": "an event type this reader has never seen",
    });
    // Built by hand so that `type` comes first, as the CLI writes it (and as a reader that
    // sniffs the start of a line would see it).
    let quoted_sid = Value::from(sid).to_string();
    let rate_limit = format!(
        "{{\"type\":\"rate_limit_event\",\"rate_limit_info\":{{\"status\":\"allowed\",\
         \"resetsAt\":1790016000,\"rateLimitType\":\"five_hour\",\"isUsingOverage\":false}},\
         \"session_id\":{quoted_sid}}}"
    );
    let glued = format!(
        "{{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_fake_malformed\",\"type\":\"message\",\
         \"role\":\"assistant\",\"model\":\"{BUSY_MODEL}\",\"content\":[{{\"type\":\"text\",\
         \"text\":\"Running the test suite{rate_limit} once more.\"}}],\"stop_reason\":\"end_turn\",\
         \"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}},\"parent_tool_use_id\":null,\
         \"session_id\":{quoted_sid}}}"
    );
    [
        "fake-agent: this line is not JSON (a stray diagnostic on stdout)".to_owned(),
        unknown.to_string(),
        glued,
    ]
}

/// A session id, deterministic from the item, attempt and iteration (uuid-shaped).
pub fn session_id(item: Option<&str>, attempt: u64, iteration: u64) -> String {
    let attempt = attempt.to_string();
    let iteration = iteration.to_string();
    fake_uuid(&["session", item.unwrap_or(""), &attempt, &iteration])
}

/// A version-4-shaped uuid derived from `parts` (FNV-1a plus a mixer: stable across platforms
/// and Rust releases, unlike `DefaultHasher`).
pub(crate) fn fake_uuid(parts: &[&str]) -> String {
    let high = fnv1a(0xcbf2_9ce4_8422_2325, parts);
    let low = fnv1a(0x6c62_272e_07bb_0142, parts);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0x0fff,
        ((low >> 48) & 0x3fff) | 0x8000,
        low & 0xffff_ffff_ffff,
    )
}

fn fnv1a(basis: u64, parts: &[&str]) -> u64 {
    let mut hash = basis;
    for part in parts {
        // 0xff never occurs in UTF-8, so it separates parts unambiguously.
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // The splitmix64 finalizer, so that similar inputs give unrelated-looking ids.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn session() -> SessionInfo {
        SessionInfo {
            session_id: session_id(Some("item-1"), 1, 1),
            cwd: "/w".to_owned(),
            duration_ms: 5,
        }
    }

    fn field<'v>(value: &'v Value, pointer: &str) -> &'v Value {
        value
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no {pointer} in {value}"))
    }

    fn u(value: &Value, pointer: &str) -> u64 {
        field(value, pointer)
            .as_u64()
            .unwrap_or_else(|| panic!("{pointer} is not a u64 in {value}"))
    }

    const KEYS: [&str; 4] = [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ];

    /// Sums usage once per `message.id`, as a careful consumer would.
    fn usage_per_distinct_message(lines: &[Value]) -> BTreeMap<&'static str, u64> {
        let mut seen = std::collections::BTreeSet::new();
        let mut sums = BTreeMap::new();
        for line in lines.iter().filter(|l| l["type"] == "assistant") {
            let id = field(line, "/message/id").to_string();
            if !seen.insert(id) {
                continue;
            }
            for key in KEYS {
                *sums.entry(key).or_insert(0) += u(line, &format!("/message/usage/{key}"));
            }
        }
        sums
    }

    #[test]
    fn stream_shape_and_usage_sums() {
        let emit = ClaudeEmit {
            text: "Done.".into(),
            turns: 3,
            input: 1201,
            output: 302,
            cache_read: 15000,
            cache_write: 2,
            cost: 0.05,
            model: "claude-opus-4".into(),
        };
        let lines = emit.stream(&session());
        assert_eq!(lines.len(), 5);
        let types: Vec<_> = lines.iter().map(|l| l["type"].clone()).collect();
        assert_eq!(
            types,
            ["system", "assistant", "assistant", "assistant", "result"].map(Value::from)
        );
        assert_eq!(lines[0]["subtype"], "init");
        assert_eq!(lines[0]["claude_code_version"], "2.1.x-fake");
        assert_eq!(lines[0]["model"], "claude-opus-4");
        assert_eq!(lines[0]["cwd"], "/w");
        assert!(lines[0]["tools"].as_array().is_some_and(|t| !t.is_empty()));
        for (index, line) in lines[1..4].iter().enumerate() {
            assert_eq!(line["message"]["id"], format!("msg_fake_{}", index + 1));
            assert_eq!(line["message"]["role"], "assistant");
            assert_eq!(line["message"]["model"], "claude-opus-4");
            assert_eq!(line["message"]["content"][0]["type"], "text");
            assert!(line["parent_tool_use_id"].is_null());
        }
        assert_eq!(lines[3]["message"]["content"][0]["text"], "Done.");
        // Even split, remainder on the last turn.
        assert_eq!(u(&lines[1], "/message/usage/input_tokens"), 400);
        assert_eq!(u(&lines[3], "/message/usage/input_tokens"), 401);
        assert_eq!(
            u(&lines[1], "/message/usage/cache_creation_input_tokens"),
            0
        );
        assert_eq!(
            u(&lines[3], "/message/usage/cache_creation_input_tokens"),
            2
        );

        let result = &lines[4];
        assert_eq!(result["subtype"], "success");
        assert_eq!(result["is_error"], false);
        assert_eq!(result["num_turns"], 3);
        assert_eq!(result["result"], "Done.");
        assert_eq!(result["total_cost_usd"], 0.05);
        assert_eq!(result["duration_ms"], 5);
        let sums = usage_per_distinct_message(&lines);
        for key in KEYS {
            assert_eq!(sums[key], u(result, &format!("/usage/{key}")), "{key}");
        }
        assert_eq!(u(result, "/usage/input_tokens"), 1201);
        assert_eq!(u(result, "/usage/output_tokens"), 302);
        assert_eq!(u(result, "/usage/cache_read_input_tokens"), 15000);
        assert_eq!(u(result, "/usage/cache_creation_input_tokens"), 2);

        let sid = &session().session_id;
        assert!(lines.iter().all(|l| l["session_id"] == sid.as_str()));
    }

    #[test]
    fn defaults_give_one_turn_and_zero_usage() {
        let lines = ClaudeEmit::default().stream(&session());
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1]["message"]["content"][0]["text"], "done");
        assert_eq!(lines[2]["num_turns"], 1);
        assert_eq!(lines[2]["total_cost_usd"], 0.0);
        assert_eq!(lines[1]["message"]["model"], "claude-sonnet-4-5");
        for key in KEYS {
            assert_eq!(u(&lines[2], &format!("/usage/{key}")), 0);
        }
    }

    #[test]
    fn zero_turns_built_by_hand_does_not_divide_by_zero() {
        let emit = ClaudeEmit {
            turns: 0,
            input: 7,
            ..ClaudeEmit::default()
        };
        let lines = emit.stream(&session());
        assert_eq!(lines.len(), 3);
        assert_eq!(u(&lines[1], "/message/usage/input_tokens"), 7);
    }

    #[test]
    fn session_ids_are_deterministic_and_distinct() {
        let a = session_id(Some("a"), 1, 1);
        assert_eq!(a, session_id(Some("a"), 1, 1));
        let others = [
            session_id(Some("a"), 1, 2),
            session_id(Some("a"), 2, 1),
            session_id(Some("b"), 1, 1),
            session_id(None, 1, 1),
            session_id(Some("a1"), 1, 1),
        ];
        assert!(others.iter().all(|other| *other != a));
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert_eq!(a.chars().nth(14), Some('4'));
        // The item "a" with separator must not collide with a differently split item.
        assert_ne!(session_id(Some("1"), 11, 1), session_id(Some("11"), 1, 1));
    }
}
