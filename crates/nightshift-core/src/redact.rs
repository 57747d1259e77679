//! Secrets out of logs, prompts and receipts: the values of known secret variables present in
//! the environment, and common token shapes, replaced by `[REDACTED:<NAME>]`.
//!
//! Line-based, so it can sit in a stream ([`LineWriter`]): a token is only ever judged whole.
//! What it cannot catch: a secret shorter than [`MIN_VALUE`], one split across lines, one that
//! is encoded (base64 of a key, a URL-escaped password), or a shape not listed here.

use std::borrow::Cow;
use std::io::Write;

/// Values shorter than this are not redacted (too many false hits: `1`, `true`, `dev`).
pub const MIN_VALUE: usize = 8;

/// The longest partial line a [`LineWriter`] holds before it redacts and writes it anyway.
const MAX_PENDING: usize = 256 * 1024;

/// Whether a variable of this name holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const SUFFIXES: [&str; 9] = [
        "_API_KEY",
        "_APIKEY",
        "_TOKEN",
        "_SECRET",
        "_ACCESS_KEY",
        "_PRIVATE_KEY",
        "_PAT",
        "_CREDENTIALS",
        "_DSN",
    ];
    const CONTAINS: [&str; 5] = ["PASSWORD", "PASSWD", "SECRET", "_TOKEN_", "DATABASE_URL"];
    const EXACT: [&str; 5] = [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "NPM_TOKEN",
        "HF_TOKEN",
        "ANTHROPIC_API_KEY",
    ];
    EXACT.contains(&n.as_str())
        || SUFFIXES.iter().any(|s| n.ends_with(s))
        || CONTAINS.iter().any(|s| n.contains(s))
        || (n.starts_with("AWS_")
            && !matches!(
                n.as_str(),
                "AWS_REGION" | "AWS_DEFAULT_REGION" | "AWS_PROFILE"
            ))
}

/// Replaces secrets in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// `(name, value)`, longest value first, so a value containing another is replaced whole.
    values: Vec<(String, String)>,
}

impl Redactor {
    /// The values of secret variables in this process's environment.
    pub fn from_env() -> Redactor {
        Redactor::new(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// The values of the secret-named variables among `vars`.
    pub fn new(vars: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let mut values: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(k, v)| is_secret_name(k) && v.len() >= MIN_VALUE)
            .collect();
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        values.dedup_by(|a, b| a.1 == b.1);
        Redactor { values }
    }

    /// One line (or any text) with every secret replaced.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (name, value) in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[REDACTED:{name}]")));
            }
        }
        match shapes(&out) {
            Some(replaced) => Cow::Owned(replaced),
            None => out,
        }
    }

    /// Bytes (lossy where they are not UTF-8) with every secret replaced.
    pub fn bytes(&self, bytes: &[u8]) -> Vec<u8> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.text(text).into_owned().into_bytes(),
            Err(_) => self
                .text(&String::from_utf8_lossy(bytes))
                .into_owned()
                .into_bytes(),
        }
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=' | '.')
}

/// Words after which the next token is a secret (`password: …`, `Authorization: Bearer …`).
fn is_secret_word(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    w == "bearer"
        || [
            "password",
            "passwd",
            "secret",
            "token",
            "api_key",
            "apikey",
            "api-key",
            "private_key",
            "access_key",
            "credential",
        ]
        .iter()
        .any(|s| w.ends_with(s))
}

/// The token shapes in `text` replaced, or `None` when there is none.
fn shapes(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    let mut prev_word: Option<&str> = None;
    let mut gap_colon = false;
    while !rest.is_empty() {
        let start = rest.find(is_token_char).unwrap_or(rest.len());
        let gap = &rest[..start];
        out.push_str(gap);
        if !gap.is_empty() {
            gap_colon = gap.contains(':') || gap.chars().all(char::is_whitespace);
        }
        rest = &rest[start..];
        if rest.is_empty() {
            break;
        }
        let end = rest.find(|c| !is_token_char(c)).unwrap_or(rest.len());
        let raw = &rest[..end];
        // A sentence's full stop is not part of the token.
        let token = raw.trim_end_matches('.');
        let after_secret_word = prev_word.is_some_and(is_secret_word) && gap_colon;
        match judge(token, after_secret_word) {
            Some(Judged::Whole(name)) => {
                out.push_str(&format!("[REDACTED:{name}]"));
                out.push_str(&raw[token.len()..]);
                changed = true;
            }
            Some(Judged::Value(at)) => {
                out.push_str(&token[..at]);
                out.push_str("[REDACTED:key_value]");
                out.push_str(&raw[token.len()..]);
                changed = true;
            }
            None => out.push_str(raw),
        }
        prev_word = Some(token);
        rest = &rest[end..];
    }
    changed.then_some(out)
}

enum Judged {
    /// The whole token is a secret of this shape.
    Whole(&'static str),
    /// `key=value`: the value from this byte on is a secret.
    Value(usize),
}

fn judge(token: &str, after_secret_word: bool) -> Option<Judged> {
    let body = |t: &str, min: usize| {
        t.len() >= min
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if let Some(t) = token.strip_prefix("sk-")
        && body(t, 20)
    {
        return Some(Judged::Whole("sk_key"));
    }
    for prefix in [
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
    ] {
        if let Some(t) = token.strip_prefix(prefix)
            && body(t, 20)
        {
            return Some(Judged::Whole("git_host_token"));
        }
    }
    for prefix in ["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "xoxe-"] {
        if let Some(t) = token.strip_prefix(prefix)
            && body(t, 10)
        {
            return Some(Judged::Whole("slack_token"));
        }
    }
    for prefix in ["AKIA", "ASIA"] {
        if let Some(t) = token.strip_prefix(prefix)
            && t.len() == 16
            && t.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        {
            return Some(Judged::Whole("aws_access_key_id"));
        }
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() == 3 && parts[0].starts_with("eyJ") && parts.iter().all(|p| body(p, 8)) {
        return Some(Judged::Whole("jwt"));
    }
    if let Some(eq) = token.find('=')
        && eq > 0
        && is_secret_word(&token[..eq])
        && token.len() - eq > MIN_VALUE
    {
        return Some(Judged::Value(eq + 1));
    }
    if after_secret_word && token.len() >= MIN_VALUE && !token.contains('=') {
        return Some(Judged::Whole("key_value"));
    }
    None
}

/// A writer that redacts whole lines before they reach `inner`. A partial line waits for its
/// newline (or [`LineWriter::flush_line`], or [`MAX_PENDING`] bytes).
pub struct LineWriter<W: Write> {
    inner: W,
    redactor: Redactor,
    pending: Vec<u8>,
}

impl<W: Write> LineWriter<W> {
    pub fn new(inner: W, redactor: Redactor) -> Self {
        LineWriter {
            inner,
            redactor,
            pending: Vec::new(),
        }
    }

    /// Writes out the partial line held back (at the end of a stream).
    pub fn flush_line(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let line = self.redactor.bytes(&self.pending);
            self.pending.clear();
            self.inner.write_all(&line)?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Write for LineWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(last) = self.pending.iter().rposition(|b| *b == b'\n') {
            let rest = self.pending.split_off(last + 1);
            let lines = std::mem::replace(&mut self.pending, rest);
            self.inner.write_all(&self.redactor.bytes(&lines))?;
        }
        if self.pending.len() > MAX_PENDING {
            self.flush_line()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for LineWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush_line();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Redactor {
        Redactor::new([
            (
                "ANTHROPIC_API_KEY".to_owned(),
                "the-anthropic-value-123".to_owned(),
            ),
            ("DB_PASSWORD".to_owned(), "correct horse".to_owned()),
            ("AWS_REGION".to_owned(), "us-east-1-region".to_owned()),
            ("SHORT_TOKEN".to_owned(), "abc".to_owned()),
            ("EDITOR".to_owned(), "vim-but-long".to_owned()),
        ])
    }

    #[test]
    fn values_of_secret_variables_are_replaced_by_their_name() {
        assert_eq!(
            r().text("key is the-anthropic-value-123, pw correct horse!"),
            "key is [REDACTED:ANTHROPIC_API_KEY], pw [REDACTED:DB_PASSWORD]!"
        );
        // Not secret names, or too short to redact: left alone.
        assert_eq!(
            r().text("us-east-1-region vim-but-long abc"),
            "us-east-1-region vim-but-long abc"
        );
    }

    #[test]
    fn token_shapes_are_replaced_without_the_environment() {
        let r = Redactor::default();
        let cases = [
            (
                "OPENAI sk-proj-abcdefghijklmnopqrstuvwx.",
                "OPENAI [REDACTED:sk_key].",
            ),
            (
                "ghp_0123456789abcdefghijABCDEFGHIJ",
                "[REDACTED:git_host_token]",
            ),
            (
                "slack xoxb-1234567890-abcdef",
                "slack [REDACTED:slack_token]",
            ),
            (
                "id AKIAIOSFODNN7EXAMPLE here",
                "id [REDACTED:aws_access_key_id] here",
            ),
            (
                "auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "auth [REDACTED:jwt]",
            ),
            (
                "curl -d api_key=0123456789abcdef0123",
                "curl -d api_key=[REDACTED:key_value]",
            ),
            (
                "Authorization: Bearer abcdefghijklmnop1234",
                "Authorization: Bearer [REDACTED:key_value]",
            ),
            (
                "{\"password\": \"s3cr3t-passw0rd\"}",
                "{\"password\": \"[REDACTED:key_value]\"}",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(r.text(input), want, "{input}");
        }
    }

    #[test]
    fn ordinary_output_is_untouched() {
        let r = Redactor::default();
        for line in [
            "test tests::api_key_is_parsed ... ok",
            "error[E0425]: cannot find value `token` in this scope",
            "running 12 tests; sk-short; the token is valid.",
            "commit 0123456789abcdef0123456789abcdef01234567",
            "password: short",
        ] {
            assert_eq!(r.text(line), line);
        }
    }

    #[test]
    fn the_line_writer_judges_a_secret_split_across_writes_whole() {
        let mut out = Vec::new();
        {
            let mut w = LineWriter::new(&mut out, r());
            w.write_all(b"first the-anthrop").unwrap();
            w.write_all(b"ic-value-123 end\nsecond correct ").unwrap();
            w.write_all(b"horse").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "first [REDACTED:ANTHROPIC_API_KEY] end\nsecond [REDACTED:DB_PASSWORD]"
        );
    }

    #[test]
    fn secret_names() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "MY_SECRET",
            "PGPASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "DATABASE_URL",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "AWS_REGION",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
