//! A review's structured verdict: its shape (a public contract other tools script against) and
//! how it is read — the JSON file at `$NIGHTSHIFT_VERDICT_FILE`, else the last fenced JSON
//! block of the reviewer's output. Anything that does not parse is not an approval (unknown
//! keys are ignored; unknown values are not).
//!
//! ```json
//! {"verdict": "approve" | "request_changes" | "escalate", "reason": "…",
//!  "findings": [{"severity": "low" | "medium" | "high" | "critical", "file": "…", "line": 12, "text": "…"}]}
//! ```

use serde::{Deserialize, Serialize};

/// What the reviewer decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    RequestChanges,
    Escalate,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::RequestChanges => "request_changes",
            Decision::Escalate => "escalate",
        }
    }
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// High or critical: enough to reopen an item shipped without its review.
    pub fn is_high(self) -> bool {
        self >= Severity::High
    }
}

/// One thing the reviewer found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub text: String,
}

/// A review's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub verdict: Decision,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Whether any finding is high or critical.
    pub fn has_high(&self) -> bool {
        self.findings.iter().any(|f| f.severity.is_high())
    }

    /// The findings as text for the next session's prompt (one per line).
    pub fn feedback(&self) -> String {
        let mut text = format!("Review verdict: {}\n", self.verdict.as_str());
        if !self.reason.trim().is_empty() {
            text.push_str(&format!("Reason: {}\n", self.reason.trim()));
        }
        for f in &self.findings {
            let at = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!(" {file}:{line}"),
                (Some(file), None) => format!(" {file}"),
                _ => String::new(),
            };
            text.push_str(&format!(
                "- [{}]{at}: {}\n",
                serde_json::to_value(f.severity)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                f.text.trim()
            ));
        }
        text
    }
}

/// Why no verdict could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    #[error("find a verdict: no verdict file and no fenced JSON block in the output")]
    Missing,
    #[error("read the verdict in {source_name}: {message}")]
    Malformed {
        source_name: String,
        message: String,
    },
}

/// Reads a verdict: the file's text if there is one (it wins, even when malformed), else the
/// last fenced JSON block of `output`.
pub fn read(file_text: Option<&str>, output: &str) -> Result<Verdict, VerdictError> {
    if let Some(text) = file_text.filter(|t| !t.trim().is_empty()) {
        return parse(text, "the verdict file");
    }
    match last_fenced_json(output) {
        Some(block) => parse(&block, "the last fenced JSON block of the output"),
        None => Err(VerdictError::Missing),
    }
}

fn parse(text: &str, source_name: &str) -> Result<Verdict, VerdictError> {
    serde_json::from_str(text.trim()).map_err(|e| VerdictError::Malformed {
        source_name: source_name.to_owned(),
        message: e.to_string(),
    })
}

/// The body of the last fenced block of `output` whose info string is `json` or empty and
/// whose body starts with `{`. A stream-json transcript (newlines escaped inside JSON strings)
/// is read by unescaping it first.
pub fn last_fenced_json(output: &str) -> Option<String> {
    fenced(output).or_else(|| {
        if output.contains("\\n```") {
            fenced(&unescape(output))
        } else {
            None
        }
    })
}

fn fenced(output: &str) -> Option<String> {
    let mut last = None;
    let mut current: Option<(bool, String)> = None;
    for line in output.lines() {
        let trimmed = line.trim();
        match current.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let info = info.trim();
                    current = Some((
                        info.is_empty() || info.eq_ignore_ascii_case("json"),
                        String::new(),
                    ));
                }
            }
            Some((wanted, mut body)) => {
                if trimmed == "```" {
                    if wanted && body.trim_start().starts_with('{') {
                        last = Some(body);
                    }
                } else {
                    body.push_str(line);
                    body.push('\n');
                    current = Some((wanted, body));
                }
            }
        }
    }
    last
}

fn unescape(text: &str) -> String {
    text.replace("\\n", "\n")
        .replace("\\\"", "\"")
        .replace("\\\\", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPROVE: &str = r#"{"verdict": "approve", "reason": "fine", "findings": []}"#;

    #[test]
    fn the_file_wins_over_the_output() {
        let out = format!("```json\n{}\n```\n", APPROVE.replace("approve", "escalate"));
        let v = read(Some(APPROVE), &out).unwrap();
        assert_eq!(v.verdict, Decision::Approve);
    }

    #[test]
    fn the_last_fenced_json_block_of_the_output() {
        let out = "thinking\n```json\n{\"verdict\": \"escalate\", \"reason\": \"a\"}\n```\nmore\n```\n{\"verdict\": \"request_changes\", \"reason\": \"b\", \"findings\": [{\"severity\": \"high\", \"file\": \"src/a.rs\", \"line\": 12, \"text\": \"bug\"}]}\n```\n```sh\n{not json}\n```\n";
        let v = read(None, out).unwrap();
        assert_eq!(v.verdict, Decision::RequestChanges);
        assert_eq!(v.findings[0].line, Some(12));
        assert!(v.has_high());
        assert!(v.feedback().contains("- [high] src/a.rs:12: bug"));
    }

    #[test]
    fn a_stream_json_transcript_is_unescaped() {
        let out = "{\"type\":\"result\",\"result\":\"done\\n```json\\n{\\\"verdict\\\": \\\"approve\\\"}\\n```\\n\"}\n";
        assert_eq!(read(None, out).unwrap().verdict, Decision::Approve);
    }

    #[test]
    fn malformed_or_missing_is_an_error_never_an_approval() {
        assert_eq!(read(None, "looks good to me"), Err(VerdictError::Missing));
        for bad in [
            r#"{"verdict": "lgtm"}"#,
            r#"{"verdict": "approve", "findings": [{"severity": "huge", "text": "x"}]}"#,
            "{",
        ] {
            assert!(
                matches!(read(Some(bad), ""), Err(VerdictError::Malformed { .. })),
                "{bad}"
            );
        }
        // A malformed file is not rescued by an approving block in the output.
        let out = format!("```json\n{APPROVE}\n```\n");
        assert!(read(Some("{"), &out).is_err());
    }
}
