//! Line handling shared by the parsers: trimming, invalid UTF-8, and recovering JSON objects from
//! damaged lines.
//!
//! A line is first read whole (the fast path, no copy). Only when that fails:
//!
//! * invalid UTF-8 is replaced (U+FFFD) and the line is read again;
//! * otherwise objects are searched for: the line start, then each `{"` after it (a bounded number
//!   of attempts reading a bounded multiple of the line's length in all, so a 10 MB line stays
//!   linear). An object found *inside* the line
//!   is only trusted when its `type` is a top-level event of the CLI (a nested content block that
//!   happens to be complete is not an event).
//! * When one object was injected in the middle of another (claude-code#49640: a
//!   `rate_limit_event` written into an `assistant` line), the outer object is rebuilt by cutting
//!   the injected one out. If the injected object ended the line (its own `\n` split the outer
//!   line in two), the outer prefix is kept and glued to the next line.
//!
//! What cannot be recovered becomes [`AgentEvent::Malformed`].

use std::borrow::Cow;
use std::ops::Range;

use serde::de::IgnoredAny;

use super::AgentEvent;

/// Attempts at reading an object from inside a damaged line.
const MAX_RECOVERY_ATTEMPTS: usize = 32;

/// Bytes the attempts may read in all, as a multiple of the line's length (plus a minimum): a
/// line broken everywhere costs a few passes, never one pass per candidate.
const RECOVERY_SCAN_FACTOR: usize = 6;
const RECOVERY_SCAN_MIN: usize = 1 << 16;

/// One CLI's event handling, as the line reader drives it.
pub(crate) trait Dialect {
    /// Reads one complete JSON object and appends its events. With `strict`, an object whose
    /// `type` is not a top-level event of this CLI is left alone (`Ok(false)`). Deserialization
    /// happens before any event is appended, so an `Err` appends nothing.
    fn handle(
        &mut self,
        json: &[u8],
        line: usize,
        strict: bool,
        out: &mut Vec<AgentEvent>,
    ) -> Result<bool, serde_json::Error>;
}

/// Line numbering and the fragment carried over from a split line.
#[derive(Debug, Default)]
pub(crate) struct LineReader {
    line_no: usize,
    /// (line number, bytes) of an outer object cut short by an injected object.
    pending: Option<(usize, Vec<u8>)>,
}

impl LineReader {
    pub fn feed<D: Dialect>(&mut self, d: &mut D, raw: &[u8]) -> Vec<AgentEvent> {
        self.line_no += 1;
        let line_no = self.line_no;
        let line = raw.trim_ascii();
        let mut out = Vec::new();
        if let Some((pline, mut frag)) = self.pending.take() {
            if !line.is_empty() {
                // The continuation keeps its leading bytes: they may be inside a string.
                let rest = raw.strip_suffix(b"\n").unwrap_or(raw);
                let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
                frag.extend_from_slice(rest.trim_ascii_end());
                if matches!(read_whole(d, &frag, pline, &mut out), Ok(true)) {
                    return out;
                }
            }
            out.push(AgentEvent::Malformed {
                line: pline,
                error: "incomplete json object cut by another event".to_owned(),
            });
        }
        if line.is_empty() {
            return out;
        }
        if let Err(e) = read_whole(d, line, line_no, &mut out) {
            let error = if line[0] == b'{' {
                format!("invalid json: {e}")
            } else {
                "not a json object".to_owned()
            };
            self.recover(d, line, line_no, error, &mut out);
        }
        out
    }

    pub fn finish(&mut self) -> Vec<AgentEvent> {
        match self.pending.take() {
            Some((line, _)) => vec![AgentEvent::Malformed {
                line,
                error: "incomplete json object at end of stream".to_owned(),
            }],
            None => Vec::new(),
        }
    }

    fn recover<D: Dialect>(
        &mut self,
        d: &mut D,
        line: &[u8],
        line_no: usize,
        first_error: String,
        out: &mut Vec<AgentEvent>,
    ) {
        let line: Cow<[u8]> = match std::str::from_utf8(line) {
            Ok(_) => Cow::Borrowed(line),
            Err(_) => Cow::Owned(String::from_utf8_lossy(line).into_owned().into_bytes()),
        };
        let line = &line[..];
        let mut accepted: Vec<Range<usize>> = Vec::new();
        let mut pos = 0;
        let mut attempts = 0;
        let mut budget = line.len().saturating_mul(RECOVERY_SCAN_FACTOR) + RECOVERY_SCAN_MIN;
        while let Some(start) = next_candidate(line, pos) {
            if attempts == MAX_RECOVERY_ATTEMPTS || budget == 0 {
                break;
            }
            attempts += 1;
            let (scanned, len) = match object_len(&line[start..]) {
                Ok(len) => (len, Some(len)),
                Err(scanned) => (scanned, None),
            };
            budget = budget.saturating_sub(scanned);
            let Some(len) = len else {
                pos = start + 1;
                continue;
            };
            let range = start..start + len;
            // The object at the very start is the line's own; one found later must look like an
            // event of this CLI.
            let strict = start != 0;
            if let Ok(true) = d.handle(&line[range.clone()], line_no, strict, out) {
                accepted.push(range.clone())
            }
            pos = range.end;
        }

        let Some(first) = accepted.first().cloned() else {
            out.push(AgentEvent::Malformed {
                line: line_no,
                error: first_error,
            });
            return;
        };
        // One object injected into another: cut it out and read the rest, or carry the prefix
        // over to the next line when the injected object ended this one.
        if accepted.len() == 1 && first.start > 0 && line[0] == b'{' {
            if first.end < line.len() {
                let mut spliced = Vec::with_capacity(line.len() - first.len());
                spliced.extend_from_slice(&line[..first.start]);
                spliced.extend_from_slice(&line[first.end..]);
                if matches!(read_whole(d, &spliced, line_no, out), Ok(true)) {
                    return;
                }
            } else {
                self.pending = Some((line_no, line[..first.start].to_vec()));
                return;
            }
        }
        let mut covered = 0;
        let mut junk = 0;
        for r in &accepted {
            junk += line[covered..r.start]
                .iter()
                .filter(|b| !b.is_ascii_whitespace())
                .count();
            covered = r.end;
        }
        junk += line[covered..]
            .iter()
            .filter(|b| !b.is_ascii_whitespace())
            .count();
        if junk > 0 {
            out.push(AgentEvent::Malformed {
                line: line_no,
                error: format!(
                    "recovered {} json object(s); skipped {junk} bytes around them",
                    accepted.len()
                ),
            });
        }
    }
}

/// Reads a whole buffer as one object; on failure retries once with invalid UTF-8 replaced.
fn read_whole<D: Dialect>(
    d: &mut D,
    bytes: &[u8],
    line: usize,
    out: &mut Vec<AgentEvent>,
) -> Result<bool, serde_json::Error> {
    if bytes.first() != Some(&b'{') {
        return Err(serde::de::Error::custom("not a json object"));
    }
    match d.handle(bytes, line, false, out) {
        Ok(accepted) => Ok(accepted),
        Err(e) => match std::str::from_utf8(bytes) {
            Ok(_) => Err(e),
            Err(_) => {
                let fixed = String::from_utf8_lossy(bytes);
                d.handle(fixed.as_bytes(), line, false, out).map_err(|_| e)
            }
        },
    }
}

/// The next place an object may start: the line start if it is `{`, else a `{"` after `pos`.
fn next_candidate(line: &[u8], pos: usize) -> Option<usize> {
    if pos == 0 && line.first() == Some(&b'{') {
        return Some(0);
    }
    let from = pos.max(1);
    let rest = line.get(from..)?;
    rest.windows(2).position(|w| w == b"{\"").map(|i| from + i)
}

/// The length of the JSON object at the start of `bytes`, whatever follows it; or, when there is
/// none, how many bytes were read before that was clear.
fn object_len(bytes: &[u8]) -> Result<usize, usize> {
    let mut it = serde_json::Deserializer::from_slice(bytes).into_iter::<IgnoredAny>();
    match it.next() {
        Some(Ok(_)) => Ok(it.byte_offset()),
        // On a one-line input the error's column is the byte offset where reading stopped.
        Some(Err(e)) if e.line() == 1 => Err(e.column().min(bytes.len())),
        _ => Err(bytes.len()),
    }
}
