//! Counting the assertion forms (and skip markers) of test code, so that a change that
//! deletes assertions or skips tests can be seen without running anything.
//!
//! Covered languages, by file extension: Rust (`.rs`), Python (`.py`), JavaScript/TypeScript
//! (`.js .jsx .ts .tsx .mjs .cjs`), Go (`.go`). Other files count nothing (and say so).
//!
//! Counted: each language's named forms (Rust `assert*!` macros and `#[should_panic]`; Python
//! `assert` statements, `self.assert…(`, `pytest.raises(`/`pytest.fail(`; JS `expect(`,
//! `assert(`, `assert.…`, `.should.`; Go `t.Error…(`/`t.Fatal…(`/`t.Fail…(`, `assert.`,
//! `require.`), and in every language any call of a name that starts with `assert`
//! (`assert_to_string(…)`, `assertEqual(…)`, `assert_frame_equal(…)`,
//! `mock.assert_called_once_with(…)`), a definition (`fn`/`def`/`function`/`func`) excepted.
//! Lines whose first non-blank characters start a comment (`//`, `#`, `/*`, `*`) are skipped;
//! a form inside a string literal still counts (a documented, conservative imprecision: it can
//! only make a weakened suite look stronger when the agent writes assertion text into strings,
//! which the test-set guard still sees).

/// A language whose assertion forms are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    Go,
}

impl Language {
    /// The language of `path`, by extension; `None` for uncovered files.
    pub fn of(path: &str) -> Option<Language> {
        let ext = path.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "rs" => Some(Language::Rust),
            "py" => Some(Language::Python),
            "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" => Some(Language::JavaScript),
            "go" => Some(Language::Go),
            _ => None,
        }
    }

    /// The names used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::Python => "Python",
            Language::JavaScript => "JavaScript/TypeScript",
            Language::Go => "Go",
        }
    }
}

/// Whether `text` holds tests by its content alone, wherever it lives: a Rust file with
/// `#[test]` (inline unit tests), a Python file defining a `test_` function or a
/// `unittest.TestCase` (a `test.py` outside any test directory).
pub fn holds_tests(language: Language, text: &str) -> bool {
    match language {
        Language::Rust => text.contains("#[test]"),
        Language::Python => {
            text.contains("unittest.TestCase")
                || text.lines().any(|l| {
                    let l = l.trim_start();
                    l.starts_with("def test_") || l.starts_with("async def test_")
                })
        }
        Language::JavaScript | Language::Go => false,
    }
}

/// Assertions and skip markers in one text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub assertions: usize,
    pub skips: usize,
}

/// Counts the forms of `language` in `text`.
pub fn count(language: Language, text: &str) -> Counts {
    let (asserts, skips): (&[&str], &[&str]) = match language {
        Language::Rust => (
            &[
                "assert!(",
                "assert_eq!(",
                "assert_ne!(",
                "assert_matches!(",
                "debug_assert!(",
                "debug_assert_eq!(",
                "debug_assert_ne!(",
                "prop_assert!(",
                "prop_assert_eq!(",
                "prop_assert_ne!(",
                "#[should_panic",
            ],
            &["#[ignore"],
        ),
        Language::Python => (
            &[
                "assert ",
                "assert(",
                "self.assert",
                "pytest.raises(",
                "pytest.fail(",
            ],
            &[
                "pytest.mark.skip",
                "pytest.mark.xfail",
                "pytest.skip(",
                "unittest.skip",
                "self.skipTest(",
            ],
        ),
        Language::JavaScript => (
            &[
                "expect(",
                "assert(",
                "assert.",
                "expect.assertions(",
                ".should.",
            ],
            &[
                "it.skip(",
                "test.skip(",
                "describe.skip(",
                "xit(",
                "xtest(",
                "xdescribe(",
                "it.todo(",
                "test.todo(",
            ],
        ),
        Language::Go => (
            &[
                "t.Error(",
                "t.Errorf(",
                "t.Fatal(",
                "t.Fatalf(",
                "t.Fail(",
                "t.FailNow(",
                "assert.",
                "require.",
                "b.Error(",
                "b.Fatal(",
            ],
            &["t.Skip(", "t.Skipf(", "t.SkipNow("],
        ),
    };
    let mut counts = Counts::default();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") || code.starts_with("/*") || code.starts_with('*') {
            continue;
        }
        if language == Language::Python && code.starts_with('#') {
            continue;
        }
        counts.assertions += occurrences(code, asserts, language, true);
        counts.skips += occurrences(code, skips, language, false);
    }
    counts
}

/// Non-overlapping occurrences of any form, each at a word boundary on its left (so that
/// `debug_assert!(` is not also an `assert!(`, nor `my_expect(` an `expect(`).
///
/// The scan is over bytes and compares bytes, never slicing the `str`: a byte offset inside
/// a multi-byte character (`"1.2.3+4ÿ"`, CJK text) is not a char boundary, and slicing a
/// `str` there panics. Every form is ASCII, so a byte match is a character match.
fn occurrences(line: &str, forms: &[&str], language: Language, calls: bool) -> usize {
    let bytes = line.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while let Some(rest) = bytes.get(i..) {
        if rest.is_empty() {
            break;
        }
        let at_boundary = match i.checked_sub(1).and_then(|p| bytes.get(p)) {
            None => true,
            Some(&prev) => {
                !(prev.is_ascii_alphanumeric() || prev == b'_')
                    || (language == Language::JavaScript
                        && prev == b'.'
                        && rest.starts_with(b"should."))
            }
        };
        let found = if at_boundary {
            forms
                .iter()
                .find(|f| rest.starts_with(f.as_bytes()))
                .map(|f| f.len())
                .or_else(|| {
                    (calls && !defines(bytes, i))
                        .then(|| assert_call(rest, language))
                        .flatten()
                })
        } else {
            None
        };
        match found {
            Some(len) => {
                n += 1;
                i += len.max(1);
            }
            None => i += 1,
        }
    }
    n
}

/// The length of an assertion-like call at the start of `rest`: an identifier that starts
/// with `assert` (`assert_to_string(`, `assertEqual(`, `assertThat(`, `assert_frame_equal(`),
/// then `!` in Rust (a macro), then `(`. Helper calls count, not only the language's named
/// forms: a deleted `assert_to_string(…)` is a deleted assertion.
fn assert_call(rest: &[u8], language: Language) -> Option<usize> {
    let tail = rest.strip_prefix(b"assert")?;
    let name = tail
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let mut at = b"assert".len() + name;
    if language == Language::Rust && rest.get(at) == Some(&b'!') {
        at += 1;
    }
    (rest.get(at) == Some(&b'(')).then_some(at + 1)
}

/// Whether the identifier at `at` is being defined (`fn assert_x(`, `def assert_x(`,
/// `function assertX(`, `func assertX(`), not called.
fn defines(line: &[u8], at: usize) -> bool {
    let before = line.get(..at).unwrap_or_default();
    let before = before.strip_suffix(b" ").unwrap_or(before);
    [&b"fn"[..], b"def", b"function", b"func"].iter().any(|kw| {
        before.ends_with(kw)
            && before
                .len()
                .checked_sub(kw.len() + 1)
                .and_then(|p| before.get(p))
                .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_forms_are_counted_once_each_and_comments_skipped() {
        let text = r#"
            #[test]
            fn adds() {
                assert_eq!(add(1, 2), 3);
                assert!(add(0, 0) == 0);
                debug_assert_ne!(1, 2);
                // assert_eq!(commented, out);
            }
            #[test]
            #[ignore]
            fn later() { assert!(true) }
        "#;
        assert_eq!(
            count(Language::Rust, text),
            Counts {
                assertions: 4,
                skips: 1
            }
        );
    }

    #[test]
    fn python_js_and_go_forms() {
        let py = "def test_a():\n    assert f() == 1\n    self.assertEqual(a, b)\n    # assert gone\n@pytest.mark.skip\ndef test_b(): pass\n";
        assert_eq!(
            count(Language::Python, py),
            Counts {
                assertions: 2,
                skips: 1
            }
        );
        let js = "test('a', () => { expect(f()).toBe(1); assert.equal(a, b); });\nit.skip('b', () => {});\nmy_expect(1);\n";
        assert_eq!(
            count(Language::JavaScript, js),
            Counts {
                assertions: 2,
                skips: 1
            }
        );
        let go = "func TestA(t *testing.T) {\n\tif got != 1 { t.Errorf(\"got %d\", got) }\n\trequire.NoError(t, err)\n\tt.Skip(\"later\")\n}\n";
        assert_eq!(
            count(Language::Go, go),
            Counts {
                assertions: 2,
                skips: 1
            }
        );
    }

    #[test]
    fn non_ascii_text_counts_without_panicking() {
        // The two field reports: a byte offset inside `ÿ` and inside CJK characters.
        let rust = "#[test]\nfn parses() {\n    let v = \"1.2.3+4ÿ\"; assert_eq!(parse(v), None);\n    assert!(v.ends_with('ÿ'));\n}\n";
        assert_eq!(
            count(Language::Rust, rust),
            Counts {
                assertions: 2,
                skips: 0
            }
        );
        let py = "def test_cjk():\n    self.assertEqual(greet('世界'), '你好，世界')\n    assert 名前 == '名前'\n";
        assert_eq!(
            count(Language::Python, py),
            Counts {
                assertions: 2,
                skips: 0
            }
        );
        for language in [
            Language::Rust,
            Language::Python,
            Language::JavaScript,
            Language::Go,
        ] {
            count(language, "é.should.ß expect(ü t.Error(日本 require.");
        }
    }

    #[test]
    fn assertion_like_calls_count_per_language_and_definitions_do_not() {
        let rust = "assert_to_string(a, b);\nfn assert_to_string(a: &str, b: &str) {}\nassert_matches!(x, Some(_));\nmy_assert_x(1);\n";
        assert_eq!(count(Language::Rust, rust).assertions, 2);
        let py = "self.assertEqual(a, b)\nassert_frame_equal(x, y)\nm.assert_called_once_with(1)\nwith pytest.raises(E): f()\ndef assert_same(a, b):\n";
        assert_eq!(count(Language::Python, py).assertions, 4);
        let js = "expect(a).toBe(b);\nassertDeepEqual(a, b);\nfunction assertDeepEqual(a, b) {}\n";
        assert_eq!(count(Language::JavaScript, js).assertions, 2);
        let go = "t.Fatal(err)\nassertEqual(t, a, b)\nrequire.NoError(t, err)\nfunc assertEqual(t *testing.T, a, b int) {}\n";
        assert_eq!(count(Language::Go, go).assertions, 3);
    }

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::of("src/lib.rs"), Some(Language::Rust));
        assert_eq!(Language::of("t/test_x.py"), Some(Language::Python));
        assert_eq!(Language::of("a.test.tsx"), Some(Language::JavaScript));
        assert_eq!(Language::of("x_test.go"), Some(Language::Go));
        assert_eq!(Language::of("check.sh"), None);
        assert_eq!(Language::of("Makefile"), None);
    }
}
