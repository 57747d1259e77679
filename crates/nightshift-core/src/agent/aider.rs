//! aider prints no structured stream: one human line per LLM reply,
//! `Tokens: 12k sent, 9.1k cache hit, 640 received. Cost: $0.02 message, $0.11 session.`
//! (the cost part is missing when the model has no price data). Its exit code is worthless (0
//! even when the request failed), so the oracle and the diff decide whether the work is done;
//! this parser feeds the budget guard and reads how an API call failed.
//!
//! An API error comes out as litellm's text, wrapped at 80 columns by aider's console, then
//! aider's own description of the class, then, when aider retries, its back-off:
//!
//! ```text
//! litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for
//! requests
//! The API provider has rate limited you. Try again later or check your quotas.
//! Retrying in 0.2 seconds...
//! ```
//!
//! aider backs off for about 64 s on every retryable error (it has no knob for it), and the
//! engine has its own back-off: the first such error ends the session at once (a
//! [`Finished`] mid-stream, with [`StreamParser::ends_on_finish`]), classified from the error
//! paragraph: `AuthenticationError` is [`FinishKind::Auth`]; a `RateLimitError` whose text
//! names a reset (OpenAI's "Please try again in 1h0m0s.") is [`FinishKind::QuotaExhausted`]
//! with that reset, a quota with none is `QuotaExhausted` without one, any other rate limit is
//! [`FinishKind::Transient`]; server errors, overload, timeouts, lost connections and any
//! other error aider retries are `Transient`.

use super::classify::{Signal, signal_from_text};
use super::reset::ResetClock;
use super::{AgentEvent, FinishKind, Finished, SessionTotals, StreamParser, Usage};

/// Lines of one error paragraph kept (litellm's text wrapped at 80 columns, aider's
/// description); a longer paragraph keeps its first lines.
const MAX_PARAGRAPH_LINES: usize = 12;
/// Bytes of one paragraph line kept.
const MAX_LINE_CHARS: usize = 2048;

/// aider's descriptions of the error classes it knows (`aider/exceptions.py`, 0.86.2), lowercased:
/// each ends an error paragraph.
const DESCRIPTIONS: &[&str] = &[
    "the api provider is not able to authenticate you",
    "the api provider has rate limited you",
    "the api provider's servers are down or overloaded",
    "the api provider timed out without returning a response",
    "the api provider has refused the request",
    "the api provider was unable to fetch",
    "insufficient credits with the api provider",
];

/// Reads aider's text output.
#[derive(Debug, Default)]
pub struct AiderParser {
    usage: Usage,
    turns: u32,
    session_cost: Option<f64>,
    clock: ResetClock,
    /// The error paragraph being read (from a `litellm.…Error:` line on).
    paragraph: Vec<String>,
    /// How the session ended, once an error said so (reported once).
    ended: Option<FinishKind>,
}

impl AiderParser {
    pub fn new() -> AiderParser {
        AiderParser::default()
    }

    /// Resolves clock times without a zone in this zone (tests; the system zone otherwise).
    pub fn with_time_zone(mut self, tz: jiff::tz::TimeZone) -> Self {
        self.clock.tz = Some(tz);
        self
    }

    fn finished(&self, kind: FinishKind) -> Finished {
        Finished {
            kind,
            cost_usd: self.session_cost,
            turns: Some(self.turns),
            result_usage: None,
        }
    }

    /// The class of the error paragraph read so far.
    fn classify(&self) -> FinishKind {
        let text = self.paragraph.join(" ");
        let lower = text.to_ascii_lowercase();
        if lower.contains("authenticationerror") || lower.contains("not able to authenticate") {
            return FinishKind::Auth;
        }
        if lower.contains("contextwindowexceedederror") {
            return FinishKind::ContextOverflow;
        }
        if lower.contains("ratelimiterror") || lower.contains("rate limited you") {
            // The provider's words, without aider's ("… check your quotas" is said of any 429).
            let provider: Vec<&str> = self
                .paragraph
                .iter()
                .map(String::as_str)
                .filter(|l| !is_description(l))
                .collect();
            let provider = provider.join(" ");
            return match self.clock.resolve([provider.as_str()]) {
                Some(at) => FinishKind::QuotaExhausted {
                    resets_at: Some(at),
                },
                None if signal_from_text([provider.as_str()]) == Some(Signal::Quota) => {
                    FinishKind::QuotaExhausted { resets_at: None }
                }
                None => FinishKind::Transient,
            };
        }
        match signal_from_text([text.as_str()]) {
            Some(Signal::Auth) => FinishKind::Auth,
            Some(Signal::Quota) => FinishKind::QuotaExhausted {
                resets_at: self.clock.resolve([text.as_str()]),
            },
            Some(Signal::ContextOverflow) => FinishKind::ContextOverflow,
            // Whatever aider retries is the API's trouble, not the item's.
            _ => FinishKind::Transient,
        }
    }

    /// Ends the session as the paragraph says (once), then forgets the paragraph.
    fn end(&mut self, out: &mut Vec<AgentEvent>) {
        if self.ended.is_none() {
            let kind = self.classify();
            self.ended = Some(kind.clone());
            out.push(AgentEvent::Finished(self.finished(kind)));
        }
        self.paragraph.clear();
    }
}

/// Whether a line is one of aider's descriptions of an error class.
fn is_description(line: &str) -> bool {
    let lower = line.trim().to_ascii_lowercase();
    DESCRIPTIONS.iter().any(|d| lower.starts_with(d))
}

/// `Retrying in 0.2 seconds...` → 200.
fn retry_delay_ms(line: &str) -> Option<u64> {
    let secs: f64 = line
        .strip_prefix("Retrying in ")?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64)
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
        let text = text.trim_end_matches(['\n', '\r']);
        let trimmed = text.trim();
        let mut out = Vec::new();
        if let Some((usage, session)) = parse_tokens_line(trimmed) {
            self.paragraph.clear();
            self.usage += usage;
            self.turns += 1;
            if session.is_some() {
                self.session_cost = session;
            }
            out.push(AgentEvent::Usage(usage));
            return out;
        }
        if let Some(delay_ms) = retry_delay_ms(trimmed)
            .map(Some)
            .or_else(|| trimmed.starts_with("Retrying in ").then_some(None))
        {
            let reason = one_line(&self.paragraph.join(" "));
            let status = reason.contains("RateLimitError").then_some(429);
            out.push(AgentEvent::Retrying {
                status,
                delay_ms,
                reason,
            });
            self.end(&mut out);
            return out;
        }
        if trimmed.starts_with("litellm.") && trimmed.contains(':') {
            // A new error paragraph.
            self.paragraph.clear();
            self.paragraph
                .push(trimmed.chars().take(MAX_LINE_CHARS).collect());
            return out;
        }
        if is_description(trimmed) {
            // aider's own word on the class: the paragraph is complete. Retryable or not, the
            // session ends here (the engine backs off itself).
            self.paragraph
                .push(trimmed.chars().take(MAX_LINE_CHARS).collect());
            self.end(&mut out);
            return out;
        }
        if !self.paragraph.is_empty() {
            if trimmed.is_empty() {
                // An error with no description that aider does not retry (a bad request, an
                // unknown model): the item's business, judged by the oracle.
                self.paragraph.clear();
            } else if self.paragraph.len() < MAX_PARAGRAPH_LINES {
                self.paragraph
                    .push(trimmed.chars().take(MAX_LINE_CHARS).collect());
            }
        }
        out
    }

    fn finish(&mut self) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        if self.ended.is_none() {
            self.ended = Some(FinishKind::Ok);
            out.push(AgentEvent::Finished(self.finished(FinishKind::Ok)));
        }
        out
    }

    fn totals(&self) -> SessionTotals {
        SessionTotals {
            usage: self.usage,
            turns: self.turns,
            cost_usd: self.session_cost,
            by_model: Default::default(),
        }
    }

    fn set_now(&mut self, now: i64) {
        self.clock.now = Some(now);
    }

    /// An API error ends the session at once (aider's own back-off would hold it ~64 s).
    fn ends_on_finish(&self) -> bool {
        self.ended.is_some()
    }
}

/// `text` on one line, at most 300 characters.
fn one_line(text: &str) -> String {
    text.chars().take(300).collect()
}

/// What aider's `webbrowser.open` runs instead of a browser: a program that does nothing and
/// succeeds (so Python tries no other browser).
pub const NO_BROWSER: &str = "true";

/// aider: `--message-file` (it reads the prompt from the file), `--yes-always`, no commits of
/// its own, `--no-gitignore` (else its `.aider*` line in `.gitignore` ships with the item) and
/// `--no-stream` (streaming asks the provider for no usage, so the `Tokens:` line would be
/// aider's own estimate). Nothing that `--yes-always` would answer for a person on a first
/// run: no release notes (opened in a browser), no analytics opt-in (yes would send them), no
/// Playwright install for a URL in the prompt (yes would `pip install` it and a Chromium), and
/// `BROWSER` a no-op. aider has no session to resume.
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
                "--no-show-release-notes",
                "--no-analytics",
                "--disable-playwright",
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
            // `--yes-always` says yes to "Open URL for more info?" (after an API error whose
            // text has a URL, and on a model warning): Python's `webbrowser` runs `$BROWSER`.
            env: vec![("BROWSER".to_owned(), NO_BROWSER.to_owned())],
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

    const CAPTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent-streams/real-2026-12/"
    );

    /// Feeds a real capture line by line; returns the events of each line and the line index
    /// where the parser said the session should end.
    fn feed_capture(p: &mut AiderParser, name: &str) -> (Vec<AgentEvent>, Option<usize>) {
        let text = std::fs::read_to_string(format!("{CAPTURES}{name}"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut events = Vec::new();
        let mut ended_at = None;
        for (i, line) in text.lines().enumerate() {
            let got = p.feed_line(line.as_bytes());
            if ended_at.is_none() && got.iter().any(|e| matches!(e, AgentEvent::Finished(_))) {
                assert!(
                    p.ends_on_finish(),
                    "{name}: a mid-stream ending ends the session"
                );
                ended_at = Some(i);
            }
            events.extend(got);
        }
        (events, ended_at)
    }

    fn endings(events: &[AgentEvent]) -> Vec<FinishKind> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Finished(f) => Some(f.kind.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_first_retried_api_error_ends_the_session_at_once() {
        // aider 0.86.2 against the model server: 429 (no reset), 500, 503 on every request.
        for (name, first_error_line) in [
            ("aider_rate429.stdout.txt", "litellm.RateLimitError"),
            ("aider_error500.stdout.txt", "litellm.InternalServerError"),
            (
                "aider_overloaded503.stdout.txt",
                "litellm.ServiceUnavailableError",
            ),
        ] {
            let mut p = AiderParser::new();
            p.set_now(1_000);
            let (mut events, ended_at) = feed_capture(&mut p, name);
            events.extend(p.finish());
            assert_eq!(
                endings(&events),
                [FinishKind::Transient],
                "{name}: one ending"
            );
            // The ending comes with the first error paragraph, not after aider's ~64 s of
            // back-off (the text after it is the later retries).
            let text = std::fs::read_to_string(format!("{CAPTURES}{name}")).unwrap_or_default();
            let first = text
                .lines()
                .position(|l| l.starts_with(first_error_line))
                .unwrap_or(usize::MAX);
            let at = ended_at.unwrap_or(usize::MAX);
            assert!(
                at > first && at <= first + 4,
                "{name}: ended at line {at}, error at {first}"
            );
            assert!(
                events.iter().any(|e| matches!(
                    e,
                    AgentEvent::Retrying {
                        delay_ms: Some(200),
                        ..
                    }
                )),
                "{name}: aider's own back-off is reported"
            );
        }
    }

    #[test]
    fn a_bad_key_is_auth() {
        let mut p = AiderParser::new();
        let (mut events, ended_at) = feed_capture(&mut p, "aider_auth401.stdout.txt");
        events.extend(p.finish());
        assert_eq!(endings(&events), [FinishKind::Auth]);
        assert!(ended_at.is_some());
    }

    #[test]
    fn a_rate_limit_that_names_its_reset_waits_for_it() {
        // OpenAI's wording, wrapped at 80 columns by aider's console (the reset may straddle a
        // line break).
        let mut p = AiderParser::new();
        p.set_now(1_000);
        let (events, _) = feed_capture(&mut p, "aider_rate429_reset.stdout.txt");
        assert_eq!(
            endings(&events),
            [FinishKind::QuotaExhausted {
                resets_at: Some(1_000 + 3600)
            }]
        );
        let mut p = AiderParser::new();
        p.set_now(1_000);
        let lines = [
            "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for gpt-4o on tokens per min (TPM): Please try again in",
            "6m0s. Visit https://platform.openai.com/account/rate-limits to learn more.",
            "The API provider has rate limited you. Try again later or check your quotas.",
        ];
        let events: Vec<_> = lines
            .iter()
            .flat_map(|l| p.feed_line(l.as_bytes()))
            .collect();
        assert_eq!(
            endings(&events),
            [FinishKind::QuotaExhausted {
                resets_at: Some(1_000 + 360)
            }]
        );
        // A quota with no reset: rate limited, the engine's own back-off.
        let mut p = AiderParser::new();
        let lines = [
            "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your current",
            "quota, please check your plan and billing details.",
            "The API provider has rate limited you. Try again later or check your quotas.",
        ];
        let events: Vec<_> = lines
            .iter()
            .flat_map(|l| p.feed_line(l.as_bytes()))
            .collect();
        assert_eq!(
            endings(&events),
            [FinishKind::QuotaExhausted { resets_at: None }]
        );
    }

    #[test]
    fn a_timeout_is_transient() {
        let mut p = AiderParser::new();
        let lines = [
            "litellm.Timeout: Connection timed out after 600.0 seconds.",
            "The API provider timed out without returning a response. They may be down or",
            "overloaded.",
            "Retrying in 0.2 seconds...",
        ];
        let events: Vec<_> = lines
            .iter()
            .flat_map(|l| p.feed_line(l.as_bytes()))
            .collect();
        assert_eq!(endings(&events), [FinishKind::Transient]);
    }

    #[test]
    fn an_error_aider_does_not_retry_or_describe_is_left_to_the_oracle() {
        let mut p = AiderParser::new();
        let lines = [
            "litellm.BadRequestError: OpenAIException - Invalid value for 'messages'.",
            "",
            "Tokens: 1.0k sent, 10 received.",
        ];
        let mut events: Vec<_> = lines
            .iter()
            .flat_map(|l| p.feed_line(l.as_bytes()))
            .collect();
        assert!(!p.ends_on_finish());
        events.extend(p.finish());
        assert_eq!(endings(&events), [FinishKind::Ok]);
    }

    #[test]
    fn other_text_is_ignored() {
        let mut p = AiderParser::new();
        assert!(p.feed_line(b"Tokens are great").is_empty());
        assert!(p.feed_line(b"").is_empty());
        assert_eq!(p.totals().turns, 0);
    }
}
