//! Text helpers shared by the parsers: decoding, ANSI stripping, line splitting.

use std::borrow::Cow;

/// Decodes output as UTF-8 (invalid bytes become U+FFFD), drops a leading byte-order mark and
/// strips ANSI escape sequences (colours forced by `CARGO_TERM_COLOR`, `PY_COLORS`, …).
/// Linear in the input.
pub(super) fn normalize(output: &[u8]) -> Cow<'_, str> {
    let decoded = String::from_utf8_lossy(output);
    let decoded = match decoded {
        Cow::Borrowed(s) => Cow::Borrowed(s.strip_prefix('\u{feff}').unwrap_or(s)),
        Cow::Owned(s) => match s.strip_prefix('\u{feff}') {
            Some(rest) => Cow::Owned(rest.to_owned()),
            None => Cow::Owned(s),
        },
    };
    if decoded.contains('\u{1b}') {
        Cow::Owned(strip_ansi(&decoded))
    } else {
        decoded
    }
}

/// Removes CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC \`) and two-byte escapes.
fn strip_ansi(s: &str) -> String {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Text,
        Escape,
        Csi,
        Osc,
        OscEscape,
    }
    let mut out = String::with_capacity(s.len());
    let mut state = State::Text;
    for c in s.chars() {
        state = match state {
            State::Text if c == '\u{1b}' => State::Escape,
            State::Text => {
                out.push(c);
                State::Text
            }
            State::Escape => match c {
                '[' => State::Csi,
                ']' => State::Osc,
                _ => State::Text,
            },
            // Parameter and intermediate bytes continue; a final byte (0x40..=0x7e) ends it.
            State::Csi if ('\u{40}'..='\u{7e}').contains(&c) => State::Text,
            State::Csi if ('\u{20}'..='\u{3f}').contains(&c) => State::Csi,
            // Anything else aborts the sequence; keep the character.
            State::Csi => {
                out.push(c);
                State::Text
            }
            State::Osc if c == '\u{7}' => State::Text,
            State::Osc if c == '\u{1b}' => State::OscEscape,
            State::Osc => State::Osc,
            State::OscEscape if c == '\\' => State::Text,
            State::OscEscape => State::Osc,
        };
    }
    out
}

/// The lines of `text` without their terminators. A line rewritten in place with carriage
/// returns (progress output) yields what was last written on it.
pub(super) fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').map(|line| {
        let line = line.strip_suffix('\r').unwrap_or(line);
        match line.rfind('\r') {
            Some(at) => &line[at + 1..],
            None => line,
        }
    })
}

/// Parses a run of ASCII digits as a count, rejecting empty, signed or absurd values.
pub(super) fn count(digits: &str) -> Option<usize> {
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colour_and_keeps_text() {
        let coloured = "\u{1b}[32m        PASS\u{1b}[0m [   0.004s] \u{1b}[1malpha\u{1b}[0m x";
        assert_eq!(
            normalize(coloured.as_bytes()),
            "        PASS [   0.004s] alpha x"
        );
        assert_eq!(
            normalize("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\ end".as_bytes()),
            "link end"
        );
    }

    #[test]
    fn decodes_lossily_and_drops_bom() {
        assert_eq!(normalize(b"\xef\xbb\xbfok"), "ok");
        assert_eq!(normalize(b"a\xffb"), "a\u{fffd}b");
    }

    #[test]
    fn lines_keep_the_last_carriage_return_segment() {
        let got: Vec<&str> = lines("a\r\nprogress 1\rprogress 2\rdone\nz").collect();
        assert_eq!(got, ["a", "done", "z"]);
    }

    #[test]
    fn counts_reject_junk() {
        assert_eq!(count("42"), Some(42));
        assert_eq!(count(""), None);
        assert_eq!(count("-1"), None);
        assert_eq!(count("99999999999999999999"), None);
    }
}
