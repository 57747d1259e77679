//! Commit messages as git is given them: on stdin (`-F -`), never as an argument, bounded and
//! sanitized. A message is built from a prompt or an agent's commit, which may be of any size
//! and hold any character: as `-m <message>`, one past the kernel's per-argument limit
//! (128 KiB) fails with `E2BIG` and one holding a NUL cannot be passed at all, both on every
//! retry.

/// The most bytes of a message nightshift writes; longer ones keep their head and their tail
/// (where the trailers are) around a note of the cut.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// `message` with NULs and other control characters (but newlines and tabs) removed, and at
/// most [`MAX_MESSAGE_BYTES`] long.
pub fn sanitize(message: &str) -> String {
    let clean: String = message
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    bound(&clean, MAX_MESSAGE_BYTES)
}

/// `text` when at most `max` bytes; else its head (three quarters of the room) and its tail
/// (a quarter), cut at char boundaries, around `[… N bytes cut …]`.
pub fn bound(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let note_room = 64;
    let room = max.saturating_sub(note_room);
    let tail_len = room / 4;
    let head_len = room - tail_len;
    let head_end = floor_boundary(text, head_len);
    let tail_start = ceil_boundary(text, text.len() - tail_len);
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// A commit's subject from an item's prompt: its first non-blank line, trimmed, cut at `max`
/// characters; and whether it was cut.
pub fn prompt_subject(prompt: &str, max: usize) -> (String, bool) {
    let first = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    (
        first.chars().take(max).collect(),
        first.chars().count() > max,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_and_control_characters_are_removed_newlines_and_tabs_kept() {
        assert_eq!(sanitize("a\0b\u{1b}[31m\tc\nd\r"), "ab[31m\tc\nd");
    }

    #[test]
    fn a_long_message_keeps_its_head_and_its_trailers() {
        let body = "ü".repeat(100_000);
        let message = format!("item: title\n\n{body}\n\nNightshift-Item: item\n");
        let bounded = sanitize(&message);
        assert!(bounded.len() <= MAX_MESSAGE_BYTES, "{}", bounded.len());
        assert!(bounded.starts_with("item: title\n"));
        assert!(bounded.ends_with("Nightshift-Item: item\n"));
        assert!(bounded.contains("bytes cut"));
        assert_eq!(sanitize("short"), "short");
    }
}
