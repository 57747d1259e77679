//! Gemini CLI `--output-format stream-json` transcripts.
//!
//! Every line carries `type` and `timestamp`. The final `result` has `stats` with
//! `input_tokens = cached + input` and `total_tokens = input_tokens + output_tokens`. Pure: the
//! interpreter prints what [`GeminiEmit::stream`] returns.

use serde_json::{Value, json};

use crate::claude::fake_uuid;
use crate::clock::rfc3339_ms;

/// What an `emit gemini` step prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiEmit {
    /// The assistant's answer, streamed as `deltas` message lines.
    pub text: String,
    /// `stats.input_tokens` (includes the cached ones).
    pub input: u64,
    /// `stats.cached` (at most `input`).
    pub cached: u64,
    /// `stats.output_tokens`.
    pub output: u64,
    /// The model named on the init line.
    pub model: String,
    /// How many `message` delta lines carry the text, at least 1 (fewer if the text is shorter).
    pub deltas: u64,
}

impl Default for GeminiEmit {
    fn default() -> Self {
        Self {
            text: "done".to_owned(),
            input: 0,
            cached: 0,
            output: 0,
            model: "gemini-2.5-pro".to_owned(),
            deltas: 2,
        }
    }
}

/// Where a stream comes from: what only the run knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiSession {
    /// `session_id` on the init line.
    pub session_id: String,
    /// Epoch milliseconds for every `timestamp`.
    pub now_ms: u64,
    /// `stats.duration_ms`.
    pub duration_ms: u64,
}

impl GeminiEmit {
    /// Sets one `key=value` of an `emit gemini` line; the error names the key and the problem.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let count = |value: &str| {
            value.parse::<u64>().map_err(|_| {
                format!("`emit gemini`: `{key}` must be a non-negative integer, got `{value}`")
            })
        };
        match key {
            "text" => self.text = value.to_owned(),
            "input" => self.input = count(value)?,
            "cached" => self.cached = count(value)?,
            "output" => self.output = count(value)?,
            "model" => {
                if value.is_empty() {
                    return Err("`emit gemini`: `model` must not be empty".to_owned());
                }
                self.model = value.to_owned();
            }
            "deltas" => {
                let deltas = count(value)?;
                if deltas == 0 {
                    return Err("`emit gemini`: `deltas` must be at least 1".to_owned());
                }
                self.deltas = deltas;
            }
            other => {
                return Err(format!(
                    "`emit gemini`: unknown key `{other}` (expected text, input, cached, output, \
                     model, deltas)"
                ));
            }
        }
        Ok(())
    }

    /// Checks the keys together, once all are set.
    pub fn validate(&self) -> Result<(), String> {
        if self.cached > self.input {
            return Err(format!(
                "`emit gemini`: `cached` ({}) must not exceed `input` ({}): Gemini counts cached \
                 tokens as part of input_tokens",
                self.cached, self.input
            ));
        }
        Ok(())
    }

    /// `init`, the assistant `message` deltas (concatenated they give `text`), `result`.
    pub fn stream(&self, session: &GeminiSession) -> Vec<Value> {
        let timestamp = rfc3339_ms(session.now_ms);
        let mut lines = vec![json!({
            "type": "init",
            "timestamp": timestamp,
            "session_id": session.session_id,
            "model": self.model,
        })];
        for chunk in split_text(&self.text, self.deltas) {
            lines.push(json!({
                "type": "message",
                "timestamp": timestamp,
                "role": "assistant",
                "content": chunk,
                "delta": true,
            }));
        }
        lines.push(json!({
            "type": "result",
            "timestamp": timestamp,
            "status": "success",
            "stats": {
                "total_tokens": self.input.saturating_add(self.output),
                "input_tokens": self.input,
                "output_tokens": self.output,
                "cached": self.cached,
                "input": self.input.saturating_sub(self.cached),
                "duration_ms": session.duration_ms,
                "tool_calls": 0,
            },
        }));
        lines
    }
}

/// A session id, deterministic from the item, attempt and iteration (uuid-shaped).
pub fn session_id(item: Option<&str>, attempt: u64, iteration: u64) -> String {
    let attempt = attempt.to_string();
    let iteration = iteration.to_string();
    fake_uuid(&["gemini-session", item.unwrap_or(""), &attempt, &iteration])
}

/// Splits `text` into at most `parts` pieces of about equal length (in characters), never
/// empty unless `text` is; the last piece takes the remainder.
fn split_text(text: &str, parts: u64) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let parts = usize::try_from(parts)
        .unwrap_or(usize::MAX)
        .clamp(1, chars.len().max(1));
    let size = chars.len() / parts;
    let mut pieces: Vec<String> = (0..parts)
        .map(|i| chars[i * size..(i + 1) * size].iter().collect())
        .collect();
    if let Some(last) = pieces.last_mut() {
        last.extend(&chars[parts * size..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> GeminiSession {
        GeminiSession {
            session_id: "g-41".into(),
            now_ms: 1_768_858_004_030,
            duration_ms: 98,
        }
    }

    #[test]
    fn stream_shape_and_stats() {
        let emit = GeminiEmit {
            text: "Patched the date parser.".into(),
            input: 49_000,
            cached: 30_000,
            output: 2200,
            deltas: 3,
            ..GeminiEmit::default()
        };
        let lines = emit.stream(&session());
        let types: Vec<_> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(types, ["init", "message", "message", "message", "result"]);
        assert!(
            lines
                .iter()
                .all(|l| l["timestamp"] == "2026-01-19T21:26:44.030Z")
        );
        assert_eq!(lines[0]["session_id"], "g-41");
        assert_eq!(lines[0]["model"], "gemini-2.5-pro");
        let text: String = lines[1..4]
            .iter()
            .map(|l| {
                assert_eq!(
                    (l["role"].as_str(), l["delta"].as_bool()),
                    (Some("assistant"), Some(true))
                );
                l["content"].as_str().unwrap_or_default().to_owned()
            })
            .collect();
        assert_eq!(text, "Patched the date parser.");
        let stats = &lines[4]["stats"];
        assert_eq!(lines[4]["status"], "success");
        assert_eq!(stats["input_tokens"], 49_000);
        assert_eq!(stats["cached"], 30_000);
        assert_eq!(stats["input"], 19_000);
        assert_eq!(stats["output_tokens"], 2200);
        assert_eq!(stats["total_tokens"], 51_200);
        assert_eq!(stats["duration_ms"], 98);
    }

    #[test]
    fn split_text_keeps_every_character() {
        assert_eq!(split_text("abcdefg", 3), ["ab", "cd", "efg"]);
        assert_eq!(split_text("ab", 5), ["a", "b"]);
        assert_eq!(split_text("", 2), [""]);
        assert_eq!(split_text("héllo", 1), ["héllo"]);
        assert_eq!(split_text("héllo", 2).concat(), "héllo");
    }

    #[test]
    fn keys_and_validation() {
        let mut emit = GeminiEmit::default();
        assert!(emit.set("deltas", "0").is_err_and(|e| e.contains("deltas")));
        assert!(emit.set("model", "").is_err_and(|e| e.contains("model")));
        assert!(emit.set("cached", "5").is_ok());
        assert!(
            emit.validate()
                .is_err_and(|e| e.contains("must not exceed"))
        );
        assert!(emit.set("input", "5").is_ok());
        assert_eq!(emit.validate(), Ok(()));
        assert!(
            emit.set("cost", "1")
                .is_err_and(|e| e.contains("unknown key `cost`"))
        );
    }
}
