//! Item ids: the rule they follow and the slugs derived from item text.
//!
//! An id names the item's git branch (`nightshift/<id>`), refs under `refs/nightshift/` and its
//! worktree directory, so it is restricted to a form that is safe in all three.

use sha2::{Digest, Sha256};

/// Longest id accepted.
pub const MAX_ID_LEN: usize = 64;
/// Longest slug derived from item text, leaving room for a `-<hash>` suffix.
pub const MAX_SLUG_LEN: usize = 48;

/// The allowed form of an item id, for help texts.
pub const ID_HELP: &str = "an item id is 1-64 characters of `a-z`, `0-9`, `.`, `_` and `-`, \
     starts with a letter or digit, and does not contain `..` or end in `.` or `.lock` \
     (it becomes a git branch and a directory name)";

/// Checks that `id` matches `^[a-z0-9][a-z0-9._-]{0,63}$`, does not contain `..` and does not
/// end in `.` or `.lock`. The error is a short lowercase reason.
pub fn validate_id(id: &str) -> Result<(), &'static str> {
    let Some(first) = id.chars().next() else {
        return Err("it is empty");
    };
    if id.len() > MAX_ID_LEN {
        return Err("it is longer than 64 characters");
    }
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err("it must start with a lowercase letter or a digit");
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
    {
        return Err("it may only contain `a-z`, `0-9`, `.`, `_` and `-`");
    }
    if id.contains("..") {
        return Err("it must not contain `..`");
    }
    if id.ends_with(".lock") {
        return Err("it must not end in `.lock`");
    }
    if id.ends_with('.') {
        return Err("it must not end in `.`");
    }
    Ok(())
}

/// A stable id derived from item text: the lowercase ASCII words of the text joined by `-`
/// (every run of characters other than ASCII letters and digits is one separator), cut at a
/// word boundary to at most 48 characters (a single longer first word is cut at 48). Text with
/// no ASCII letter or digit gets `item-<6 hex of sha256(text)>`. The result always passes
/// [`validate_id`].
pub fn slug_id(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut slug = String::new();
    for word in lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let separator = usize::from(!slug.is_empty());
        if slug.len() + separator + word.len() > MAX_SLUG_LEN {
            if slug.is_empty() {
                // words are ASCII, so any byte index is a char boundary
                slug.push_str(&word[..MAX_SLUG_LEN]);
            }
            break;
        }
        if separator == 1 {
            slug.push('-');
        }
        slug.push_str(word);
    }
    if slug.is_empty() {
        format!("item-{}", short_hash(text))
    } else {
        slug
    }
}

/// The first 6 hex digits of the SHA-256 of `text`.
pub(crate) fn short_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .take(3)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids() {
        for id in ["a", "0", "add-greeting", "v1.2_fix", &"a".repeat(64)] {
            assert_eq!(validate_id(id), Ok(()), "{id:?}");
        }
    }

    #[test]
    fn invalid_ids() {
        let cases = [
            ("", "it is empty"),
            (&*"a".repeat(65), "it is longer than 64 characters"),
            ("-a", "it must start with a lowercase letter or a digit"),
            (".a", "it must start with a lowercase letter or a digit"),
            ("Add", "it must start with a lowercase letter or a digit"),
            (
                "add Greeting",
                "it may only contain `a-z`, `0-9`, `.`, `_` and `-`",
            ),
            ("a/b", "it may only contain `a-z`, `0-9`, `.`, `_` and `-`"),
            ("café", "it may only contain `a-z`, `0-9`, `.`, `_` and `-`"),
            ("a..b", "it must not contain `..`"),
            ("branch.lock", "it must not end in `.lock`"),
            ("a.", "it must not end in `.`"),
        ];
        for (id, reason) in cases {
            assert_eq!(validate_id(id), Err(reason), "{id:?}");
        }
    }

    #[test]
    fn slugs() {
        let cases = [
            ("Add a greet() function", "add-a-greet-function"),
            ("  Fix: the BUG #12!! ", "fix-the-bug-12"),
            ("café au lait", "caf-au-lait"),
            ("snake_case and dots.too", "snake-case-and-dots-too"),
            (
                "one two three four five six seven eight nine ten eleven",
                "one-two-three-four-five-six-seven-eight-nine-ten",
            ),
        ];
        for (text, slug) in cases {
            assert_eq!(slug_id(text), slug, "{text:?}");
        }
        let long_word = "x".repeat(60);
        assert_eq!(slug_id(&long_word), "x".repeat(48));
        assert_eq!(slug_id(&format!("ab {long_word}")), "ab");
    }

    #[test]
    fn slugs_are_at_most_48_and_valid() {
        let text = "aaaaaaaaaa bbbbbbbbbb cccccccccc dddddddddd eeeeeeeeee";
        let slug = slug_id(text);
        assert_eq!(slug, "aaaaaaaaaa-bbbbbbbbbb-cccccccccc-dddddddddd");
        assert!(slug.len() <= MAX_SLUG_LEN);
        for text in [text, "日本語", "!!!", "x", "Ünïcode only"] {
            assert_eq!(validate_id(&slug_id(text)), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn text_without_ascii_words_gets_a_hash_id() {
        let id = slug_id("日本語");
        assert_eq!(id, format!("item-{}", short_hash("日本語")));
        assert_ne!(slug_id("日本語"), slug_id("中文"));
    }

    #[test]
    fn short_hash_is_six_hex_of_sha256() {
        // sha256("abc") = ba7816bf…
        assert_eq!(short_hash("abc"), "ba7816");
    }
}
