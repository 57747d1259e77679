//! OpenAI Codex `codex exec --json` transcripts.
//!
//! Codex reports usage per turn, on `turn.completed`; by OpenAI's convention
//! `cached_input_tokens` is part of `input_tokens`. Everything here is pure: functions return the
//! JSON objects, one per output line, and the interpreter prints them.

use serde_json::{Value, json};

use crate::claude::fake_uuid;
use crate::clock::Civil;

/// What an `emit codex` step prints: one completed turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexEmit {
    /// The final answer (`agent_message` text).
    pub text: String,
    /// `usage.input_tokens` (includes the cached ones).
    pub input: u64,
    /// `usage.cached_input_tokens` (at most `input`).
    pub cached: u64,
    /// `usage.output_tokens`.
    pub output: u64,
}

impl Default for CodexEmit {
    fn default() -> Self {
        Self {
            text: "done".to_owned(),
            input: 0,
            cached: 0,
            output: 0,
        }
    }
}

impl CodexEmit {
    /// Sets one `key=value` of an `emit codex` line; the error names the key and the problem.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let count = |value: &str| {
            value.parse::<u64>().map_err(|_| {
                format!("`emit codex`: `{key}` must be a non-negative integer, got `{value}`")
            })
        };
        match key {
            "text" => self.text = value.to_owned(),
            "input" => self.input = count(value)?,
            "cached" => self.cached = count(value)?,
            "output" => self.output = count(value)?,
            other => {
                return Err(format!(
                    "`emit codex`: unknown key `{other}` (expected text, input, cached, output)"
                ));
            }
        }
        Ok(())
    }

    /// Checks the keys together, once all are set.
    pub fn validate(&self) -> Result<(), String> {
        if self.cached > self.input {
            return Err(format!(
                "`emit codex`: `cached` ({}) must not exceed `input` ({}): Codex counts cached \
                 tokens as part of the input",
                self.cached, self.input
            ));
        }
        Ok(())
    }

    /// `thread.started`, `turn.started`, `item.completed` (agent_message), `turn.completed`.
    pub fn stream(&self, thread_id: &str) -> Vec<Value> {
        vec![
            thread_started(thread_id),
            json!({"type": "turn.started"}),
            agent_message(0, &self.text),
            turn_completed(self.input, self.cached, self.output),
        ]
    }
}

/// A thread id, deterministic from the item, attempt and iteration (uuid-shaped).
pub fn thread_id(item: Option<&str>, attempt: u64, iteration: u64) -> String {
    let attempt = attempt.to_string();
    let iteration = iteration.to_string();
    fake_uuid(&["codex-thread", item.unwrap_or(""), &attempt, &iteration])
}

/// `{"type":"thread.started","thread_id":…}`.
pub fn thread_started(thread_id: &str) -> Value {
    json!({"type": "thread.started", "thread_id": thread_id})
}

fn agent_message(index: u64, text: &str) -> Value {
    json!({
        "type": "item.completed",
        "item": {"id": format!("item_{index}"), "type": "agent_message", "text": text},
    })
}

fn turn_completed(input: u64, cached: u64, output: u64) -> Value {
    json!({
        "type": "turn.completed",
        "usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output},
    })
}

/// Turn `turn` (1-based) of a `busy` session: `turn.started`, an `agent_message`, and
/// `turn.completed` with this turn's usage.
pub fn busy_turn(turn: u64, input: u64, output: u64) -> Vec<Value> {
    vec![
        json!({"type": "turn.started"}),
        agent_message(turn, &format!("(fake-agent) still working, turn {turn}")),
        turn_completed(input, 0, output),
    ]
}

/// A reset further away than this is printed with its date.
const SAME_DAY_S: u64 = 20 * 3600;

/// The text of Codex's usage-limit error. The clock time is UTC, printed without a zone (the
/// real CLI prints the machine's local time the same way).
pub fn usage_limit_message(resets_at: u64, now: u64) -> String {
    let at = Civil::from_epoch(resets_at);
    let when = if resets_at.saturating_sub(now) <= SAME_DAY_S {
        at.codex_clock()
    } else {
        format!(
            "{} {}, {} {}",
            at.month_abbrev(),
            at.ordinal_day(),
            at.year,
            at.codex_clock()
        )
    };
    format!(
        "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase \
         more credits or try again at {when}."
    )
}

/// How `codex exec --json` ends at a usage limit: an `error` line and a `turn.failed` line with
/// the same message (the process then exits 1).
pub fn usage_limit(resets_at: u64, now: u64) -> Vec<Value> {
    let message = usage_limit_message(resets_at, now);
    vec![
        json!({"type": "error", "message": message}),
        json!({"type": "turn.failed", "error": {"message": message}}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_shape() {
        let emit = CodexEmit {
            text: "Both failures fixed.".into(),
            input: 88_000,
            cached: 70_400,
            output: 3100,
        };
        let lines = emit.stream("t-1");
        let types: Vec<_> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "thread.started",
                "turn.started",
                "item.completed",
                "turn.completed"
            ]
        );
        assert_eq!(lines[0]["thread_id"], "t-1");
        assert_eq!(lines[2]["item"]["type"], "agent_message");
        assert_eq!(lines[2]["item"]["text"], "Both failures fixed.");
        assert_eq!(lines[3]["usage"]["input_tokens"], 88_000);
        assert_eq!(lines[3]["usage"]["cached_input_tokens"], 70_400);
        assert_eq!(lines[3]["usage"]["output_tokens"], 3100);
    }

    #[test]
    fn keys_and_validation() {
        let mut emit = CodexEmit::default();
        assert!(emit.set("input", "10").is_ok());
        assert!(emit.set("cached", "11").is_ok());
        assert!(
            emit.validate()
                .is_err_and(|e| e.contains("must not exceed"))
        );
        assert!(emit.set("cached", "10").is_ok());
        assert_eq!(emit.validate(), Ok(()));
        assert!(
            emit.set("input", "-1")
                .is_err_and(|e| e.contains("`input`"))
        );
        assert!(
            emit.set("turns", "2")
                .is_err_and(|e| e.contains("unknown key `turns`"))
        );
    }

    #[test]
    fn busy_turns_carry_usage() {
        let lines = busy_turn(3, 500, 7);
        assert_eq!(lines[0]["type"], "turn.started");
        assert_eq!(lines[1]["item"]["id"], "item_3");
        assert_eq!(lines[2]["usage"]["input_tokens"], 500);
        assert_eq!(lines[2]["usage"]["output_tokens"], 7);
    }

    #[test]
    fn usage_limit_messages() {
        // 2026-01-19T15:28:00Z, asked at 12:00 the same day.
        let resets = 1_768_836_480;
        let lines = usage_limit(resets, resets - 3 * 3600 - 28 * 60);
        assert_eq!(lines[0]["type"], "error");
        assert_eq!(lines[1]["type"], "turn.failed");
        let message = lines[0]["message"].as_str().unwrap_or_default();
        assert_eq!(lines[1]["error"]["message"], message);
        assert!(
            message.starts_with("You've hit your usage limit."),
            "{message}"
        );
        assert!(message.ends_with("try again at 3:28 PM."), "{message}");
        // Three days ahead: with the date.
        let far = usage_limit_message(resets, resets - 3 * 86_400);
        assert!(
            far.ends_with("try again at Jan 19th, 2026 3:28 PM."),
            "{far}"
        );
    }
}
