//! aider prints no structured stream: one human line per LLM reply,
//! `Tokens: 12k sent, 9.1k cache hit, 640 received. Cost: $0.02 message, $0.11 session.`
//! (the cost part is missing when the model has no price data), and, when the provider rate
//! limits it, `The API provider has rate limited you. Try again later or check your quotas.`
//! Its exit code is worthless (0 even when the request failed), so the oracle and the diff
//! decide; this parser only feeds the budget guard and the usage-limit handling.

use super::{AgentEvent, FinishKind, Finished, SessionTotals, StreamParser, Usage};

/// Reads aider's text output.
#[derive(Debug, Default)]
pub struct AiderParser {
    usage: Usage,
    turns: u32,
    session_cost: Option<f64>,
    rate_limited: bool,
}

impl AiderParser {
    pub fn new() -> AiderParser {
        AiderParser::default()
    }
}

/// `12k` → 12000, `9.1k` → 9100, `1.2M` → 1200000, `640` → 640.
fn amount(text: &str) -> Option<u64> {
    let text = text.trim().to_owned();
    let (number, scale) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 1_000.0),
        'm' | 'M' => (&text[..text.len() - 1], 1_000_000.0),
        _ => (text.as_str(), 1.0),
    };
    let value: f64 = number.parse().ok()?;
    Some((value * scale).round() as u64)
}

/// The usage and session cost of one `Tokens: …` line.
fn parse_tokens_line(line: &str) -> Option<(Usage, Option<f64>)> {
    let rest = line.trim().strip_prefix("Tokens:")?;
    let (tokens, cost) = match rest.split_once(". Cost:") {
        Some((t, c)) => (t, Some(c)),
        None => (rest.trim_end_matches('.'), None),
    };
    let mut usage = Usage::default();
    for part in tokens.split(',') {
        let part = part.trim();
        let (n, what) = part.split_once(' ')?;
        let n = amount(n)?;
        match what.trim() {
            "sent" => usage.input += n,
            "received" => usage.output += n,
            "cache hit" => usage.cache_read += n,
            "cache write" => usage.cache_write += n,
            _ => {}
        }
    }
    // aider's "sent" includes the cache hits; budgets count fresh input separately.
    usage.input = usage
        .input
        .saturating_sub(usage.cache_read + usage.cache_write);
    let session = cost.and_then(|c| {
        let session = c.split(',').find(|p| p.contains("session"))?;
        session
            .trim()
            .trim_start_matches('$')
            .split(' ')
            .next()?
            .parse::<f64>()
            .ok()
    });
    Some((usage, session))
}

impl StreamParser for AiderParser {
    fn feed_line(&mut self, line: &[u8]) -> Vec<AgentEvent> {
        let text = String::from_utf8_lossy(line);
        if let Some((usage, session)) = parse_tokens_line(&text) {
            self.usage += usage;
            self.turns += 1;
            if session.is_some() {
                self.session_cost = session;
            }
            return vec![AgentEvent::Usage(usage)];
        }
        if text.contains("rate limited you") {
            // An API key's rate limit, after aider's own ~90 s of retries: back off and rerun
            // (there is no subscription reset to wait for).
            self.rate_limited = true;
            return vec![AgentEvent::Retrying {
                status: Some(429),
                delay_ms: None,
                reason: "rate limited".to_owned(),
            }];
        }
        Vec::new()
    }

    fn finish(&mut self) -> Vec<AgentEvent> {
        vec![AgentEvent::Finished(Finished {
            kind: if self.rate_limited {
                FinishKind::Transient
            } else {
                FinishKind::Ok
            },
            cost_usd: self.session_cost,
            turns: Some(self.turns),
            result_usage: None,
        })]
    }

    fn totals(&self) -> SessionTotals {
        SessionTotals {
            usage: self.usage,
            turns: self.turns,
            cost_usd: self.session_cost,
            by_model: Default::default(),
        }
    }

    fn set_now(&mut self, _now: i64) {}
}

/// aider: `--message-file` (it reads the prompt from the file), `--yes-always`, no commits of
/// its own, `--no-gitignore` (else its `.aider*` line in `.gitignore` ships with the item) and
/// `--no-stream` (streaming asks the provider for no usage, so the `Tokens:` line would be
/// aider's own estimate). aider has no session to resume.
pub struct AiderAdapter;

impl super::adapter::Adapter for AiderAdapter {
    fn kind(&self) -> crate::config::AgentKind {
        crate::config::AgentKind::Aider
    }

    fn default_binary(&self) -> &'static str {
        "aider"
    }

    fn launch(&self, inv: &super::adapter::Invocation<'_>) -> super::adapter::Launch {
        let a = inv.agent;
        let mut argv = vec![
            super::adapter::binary(a, "aider"),
            "--message-file".to_owned(),
            inv.prompt_file.display().to_string(),
        ];
        argv.extend(
            [
                "--yes-always",
                "--no-auto-commits",
                "--no-gitignore",
                "--no-stream",
                "--no-check-update",
            ]
            .map(str::to_owned),
        );
        if let Some(model) = &a.model {
            argv.extend(["--model".to_owned(), model.clone()]);
        }
        argv.extend(a.args.iter().cloned());
        let adapter: &dyn super::adapter::Adapter = self;
        super::adapter::Launch {
            argv,
            stdin: None,
            env: Vec::new(),
            env_allow: super::adapter::allowlist(adapter, a),
        }
    }

    fn cli_env(&self) -> &'static [&'static str] {
        &[
            "AIDER_*",
            "OPENAI_*",
            "ANTHROPIC_*",
            "GEMINI_*",
            "OPENROUTER_*",
            "DEEPSEEK_*",
            "GROQ_*",
            "MISTRAL_*",
            "OLLAMA_*",
        ]
    }

    fn credentials(&self) -> &'static [&'static str] {
        &[
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
        ]
    }

    fn posture(&self, _agent: &crate::config::AgentConfig) -> String {
        "--yes-always, --no-auto-commits, --no-gitignore (aider has no sandbox)".to_owned()
    }

    fn parser(&self, _agent: &crate::config::AgentConfig) -> Option<Box<dyn StreamParser>> {
        Some(Box::new(AiderParser::new()))
    }

    fn tested(&self) -> Option<super::adapter::TestedRange> {
        Some(super::adapter::TestedRange {
            low: (0, 86, 2),
            high: (0, 86, 2),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_lines_add_up_and_the_session_cost_is_the_last_one_seen() {
        let mut p = AiderParser::new();
        let lines = [
            "Added src/lib.rs to the chat.",
            "Tokens: 12k sent, 9.1k cache hit, 640 received. Cost: $0.02 message, $0.11 session.",
            "Applied edit to src/lib.rs",
            "Tokens: 2.5k sent, 120 received. Cost: $0.01 message, $0.12 session.",
            "Tokens: 1.0k sent, 10 received.",
        ];
        let events: Vec<_> = lines
            .iter()
            .flat_map(|l| p.feed_line(l.as_bytes()))
            .collect();
        assert_eq!(events.len(), 3);
        let t = p.totals();
        assert_eq!(t.turns, 3);
        assert_eq!(t.usage.cache_read, 9100);
        assert_eq!(t.usage.input, (12_000 - 9100) + 2500 + 1000);
        assert_eq!(t.usage.output, 640 + 120 + 10);
        assert_eq!(t.cost_usd, Some(0.12));
        assert!(
            matches!(p.finish().as_slice(), [AgentEvent::Finished(f)] if f.kind == FinishKind::Ok)
        );
    }

    #[test]
    fn a_rate_limit_is_a_transient_ending_whatever_the_exit_code() {
        let mut p = AiderParser::new();
        let events = p.feed_line(
            b"The API provider has rate limited you. Try again later or check your quotas.",
        );
        assert!(matches!(
            events.as_slice(),
            [AgentEvent::Retrying {
                status: Some(429),
                ..
            }]
        ));
        assert!(matches!(
            p.finish().as_slice(),
            [AgentEvent::Finished(Finished {
                kind: FinishKind::Transient,
                ..
            })]
        ));
    }

    #[test]
    fn other_text_is_ignored() {
        let mut p = AiderParser::new();
        assert!(p.feed_line(b"Tokens are great").is_empty());
        assert!(p.feed_line(b"").is_empty());
        assert_eq!(p.totals().turns, 0);
    }
}
