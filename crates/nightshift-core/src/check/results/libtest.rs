//! Rust's libtest as `cargo test` prints it: blocks of `running N tests` … `test result:`, one
//! per test binary, each announced by cargo's `Running …`/`Doc-tests …` line on stderr.
//! Also libtest's JSON (`--format json`).
//!
//! A block is tied to the cargo line that precedes its `running` line; because cargo writes
//! that line to stderr and the tests to stdout, a line that arrives late (after `running`,
//! before any other cargo line) is tied to the block it belongs to.
//!
//! Failed tests come from `test x ... FAILED` and from the name list that closes a failed
//! block. A block that never reaches `test result:` crashed (a signal, an abort): the tests
//! still running then (known with one test thread, or from JSON `started` events) are failed,
//! and when nothing in it is failed, its binary key is.
//!
//! A block that names fewer passed, failed or ignored tests than its `test result:` line counts
//! (`cargo test -q` prints dots and names only failures) makes the output partial: not parsed.

use std::collections::HashSet;

use serde::Deserialize;

use super::text::{count, lines};
use super::{Mode, TestResult, TestState};

pub(super) fn parse(text: &str, mode: Mode) -> Option<Vec<TestResult>> {
    let mut parser = Parser::default();
    for line in lines(text) {
        parser.line(line, mode);
    }
    parser.finish(mode)
}

#[derive(Default)]
struct Block {
    key: Option<String>,
    tests: Vec<(String, TestState)>,
    /// Whether a `running N tests` (or a JSON suite start) opened the block.
    announced: bool,
    ended: bool,
    /// Inside the failure report: result-shaped lines there are captured output.
    in_failures: bool,
    /// The name list after a `failures:` line, and whether a blank line closed it.
    names: Option<Vec<String>>,
    names_closed: bool,
    /// A `test x ... ` whose verdict comes on a later line (`--nocapture`, one thread).
    waiting: Option<String>,
    /// JSON: tests started and not yet finished.
    running: HashSet<String>,
    /// What the `test result:` line counts: passed (with measured), failed, ignored.
    counts: Option<[usize; 3]>,
}

#[derive(Default)]
struct Parser {
    blocks: Vec<Block>,
    current: Option<Block>,
    next_key: Option<String>,
    /// JSON names of the form `binary$test` are nextest's, not libtest's.
    nextest_json: bool,
}

#[derive(Deserialize)]
struct JsonEvent {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    name: Option<String>,
}

impl Parser {
    fn line(&mut self, line: &str, mode: Mode) {
        if let Some(key) = cargo_binary_key(line) {
            match self.current.as_mut() {
                Some(block) if !block.ended && block.key.is_none() && block.announced => {
                    block.key = Some(key);
                }
                _ => self.next_key = Some(key),
            }
            return;
        }
        if line.starts_with("running ") && running_count(line).is_some() {
            self.open_block();
            return;
        }
        if line.starts_with('{') {
            self.json(line);
            return;
        }
        let Some(block) = self.current.as_mut() else {
            if mode == Mode::Forced && result_line(line).is_some() {
                self.current = Some(Block::default());
                self.line(line, mode);
            }
            return;
        };
        if block.ended {
            if mode == Mode::Forced && result_line(line).is_some() {
                self.blocks.extend(self.current.take());
                self.current = Some(Block::default());
                self.line(line, mode);
            }
            return;
        }
        if line.starts_with("test result: ") {
            block.counts = result_counts(line);
            if block.names_closed
                && let Some(names) = block.names.take()
            {
                block
                    .tests
                    .extend(names.into_iter().map(|n| (n, TestState::Failed)));
            }
            block.ended = true;
            return;
        }
        if line == "failures:" {
            block.in_failures = true;
            block.names = Some(Vec::new());
            block.names_closed = false;
            return;
        }
        if block.in_failures {
            if let Some(names) = block.names.as_mut() {
                if line.trim().is_empty() {
                    block.names_closed = !names.is_empty();
                } else if let Some(name) = line.strip_prefix("    ")
                    && !block.names_closed
                    && !name.starts_with(' ')
                {
                    names.push(strip_should_panic(name.trim_end()).to_owned());
                } else {
                    block.names = None;
                }
            }
            return;
        }
        if let Some(waiting) = block.waiting.take() {
            if let Some(state) = verdict(line.trim()) {
                block.tests.push((waiting, state));
                return;
            }
            block.waiting = Some(waiting);
        }
        match result_line(line) {
            Some((name, Some(state))) => block.tests.push((name.to_owned(), state)),
            Some((name, None)) => block.waiting = Some(name.to_owned()),
            None => {}
        }
    }

    fn json(&mut self, line: &str) {
        let Ok(event) = serde_json::from_str::<JsonEvent>(line) else {
            return;
        };
        match (event.kind.as_str(), event.event.as_str()) {
            ("suite", "started") => self.open_block(),
            ("suite", "ok" | "failed") => {
                if let Some(block) = self.current.as_mut() {
                    block.ended = true;
                }
            }
            ("test", verdict) => {
                let (Some(name), Some(block)) = (event.name, self.current.as_mut()) else {
                    return;
                };
                if name.contains('$') {
                    self.nextest_json = true;
                    return;
                }
                let state = match verdict {
                    "started" => {
                        block.running.insert(name);
                        return;
                    }
                    "ok" => TestState::Passed,
                    "failed" => TestState::Failed,
                    "ignored" => TestState::Skipped,
                    _ => return,
                };
                block.running.remove(&name);
                block.tests.push((name, state));
            }
            _ => {}
        }
    }

    fn open_block(&mut self) {
        self.blocks.extend(self.current.take());
        self.current = Some(Block {
            key: self.next_key.take(),
            announced: true,
            ..Block::default()
        });
    }

    fn finish(mut self, mode: Mode) -> Option<Vec<TestResult>> {
        if self.nextest_json {
            return None;
        }
        self.blocks.extend(self.current.take());
        let recognised = match mode {
            Mode::Detect => self.blocks.iter().any(|b| b.announced && b.ended),
            Mode::Forced => self.blocks.iter().any(|b| b.ended || !b.tests.is_empty()),
        };
        if !recognised || self.blocks.iter().any(Block::is_partial) {
            return None;
        }
        let mut out = Vec::new();
        for mut block in self.blocks {
            let crashed = block.announced && !block.ended;
            if crashed {
                // Whatever was running when the binary died is what killed it.
                let running = block
                    .waiting
                    .take()
                    .into_iter()
                    .chain(std::mem::take(&mut block.running));
                let running: Vec<_> = running.map(|name| (name, TestState::Failed)).collect();
                block.tests.extend(running);
            }
            let blamed = block.tests.iter().any(|(_, s)| *s == TestState::Failed);
            if crashed
                && !blamed
                && let Some(key) = &block.key
            {
                out.push(TestResult {
                    id: key.clone(),
                    state: TestState::Failed,
                });
            }
            for (name, state) in block.tests {
                let id = match &block.key {
                    Some(key) => format!("{key} {name}"),
                    None => name,
                };
                out.push(TestResult { id, state });
            }
        }
        Some(out)
    }
}

impl Block {
    /// Whether the block names fewer tests than its `test result:` line counts: `cargo test
    /// -q` (libtest's terse format) names only the failures, and a partial list would shrink
    /// the collected set, so such output is not parsed.
    fn is_partial(&self) -> bool {
        let Some(counts) = self.counts else {
            return false;
        };
        let mut named: [HashSet<&str>; 3] = Default::default();
        for (name, state) in &self.tests {
            let slot = match state {
                TestState::Passed => 0,
                TestState::Failed => 1,
                TestState::Skipped => 2,
            };
            named[slot].insert(name);
        }
        named
            .iter()
            .zip(counts)
            .any(|(names, count)| names.len() < count)
    }
}

/// The counts of `test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered
/// out; finished in 0.12s`: passed (measured benchmarks included), failed, ignored.
fn result_counts(line: &str) -> Option<[usize; 3]> {
    let (_, rest) = line.split_once(". ")?;
    let mut counts = [0; 3];
    for part in rest.split("; ") {
        let Some((n, word)) = part.split_once(' ') else {
            continue;
        };
        let Some(n) = count(n) else {
            continue;
        };
        match word {
            "passed" | "measured" => counts[0] += n,
            "failed" => counts[1] += n,
            "ignored" => counts[2] += n,
            _ => {}
        }
    }
    Some(counts)
}

/// `running 3 tests` / `running 1 test`.
fn running_count(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("running ")?;
    let (n, word) = rest.split_once(' ')?;
    matches!(word, "test" | "tests").then_some(())?;
    count(n)
}

/// `test NAME ... VERDICT`: the name, and the verdict unless it is still to come (the line
/// ends after `...`, or the test's own output follows it, as with `--nocapture`).
fn result_line(line: &str) -> Option<(&str, Option<TestState>)> {
    let rest = line.strip_prefix("test ")?;
    let at = rest.find(" ...")?;
    let name = strip_should_panic(&rest[..at]);
    if name.is_empty() {
        return None;
    }
    let after = &rest[at + 4..];
    if after.is_empty() {
        return Some((name, None));
    }
    let after = after.strip_prefix(' ')?;
    Some((name, verdict(after)))
}

/// `ok`, `FAILED`, `ignored`, `bench: …`, possibly followed by libtest's own detail
/// (`ignored, reason`, `ok <0.001s>`, `FAILED (time limit exceeded)`).
fn verdict(s: &str) -> Option<TestState> {
    let (state, rest) = if let Some(rest) = s.strip_prefix("ok") {
        (TestState::Passed, rest)
    } else if let Some(rest) = s.strip_prefix("FAILED") {
        (TestState::Failed, rest)
    } else if let Some(rest) = s.strip_prefix("ignored") {
        (TestState::Skipped, rest)
    } else if s.starts_with("bench:") {
        return Some(TestState::Passed);
    } else {
        return None;
    };
    let detail = rest.is_empty() || [", ", " <", " ("].iter().any(|p| rest.starts_with(p));
    detail.then_some(state)
}

fn strip_should_panic(name: &str) -> &str {
    name.strip_suffix(" - should panic").unwrap_or(name)
}

/// The binary key from cargo's `     Running …` / `   Doc-tests …` line.
fn cargo_binary_key(line: &str) -> Option<String> {
    if let Some(krate) = line.strip_prefix("   Doc-tests ") {
        let krate = krate.trim();
        return (!krate.is_empty() && !krate.contains(' ')).then(|| format!("{krate}@doc"));
    }
    let target = line.strip_prefix("     Running ")?.trim();
    let (source, artifact) = match target.strip_suffix(')').and_then(|t| t.rsplit_once(" (")) {
        Some((source, artifact)) => {
            let source = source.strip_prefix("unittests ").unwrap_or(source);
            (Some(source), artifact)
        }
        None => (None, target),
    };
    let file = artifact.rsplit(['/', '\\']).next()?;
    let file = file.strip_suffix(".exe").unwrap_or(file);
    let stem = match file.rsplit_once('-') {
        Some((stem, hash)) if hash.len() >= 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem
        }
        _ => file,
    };
    if stem.is_empty() {
        return None;
    }
    Some(match source {
        Some(source) => format!("{stem}@{source}"),
        None => stem.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::super::{Format, TestState, parse};
    use super::cargo_binary_key;

    fn states(text: &str, format: Option<Format>) -> Vec<(String, TestState)> {
        let results = parse(text.as_bytes(), format).unwrap();
        assert_eq!(results.format, Format::Libtest);
        results.tests.into_iter().map(|t| (t.id, t.state)).collect()
    }

    fn owned(want: &[(&str, TestState)]) -> Vec<(String, TestState)> {
        want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect()
    }

    #[test]
    fn cargo_test_workspace_with_stderr_merged() {
        let want = owned(&[
            (
                "alpha@doc alpha/src/lib.rs - add (line 3)",
                TestState::Passed,
            ),
            ("alpha@src/lib.rs tests::it_adds", TestState::Passed),
            ("alpha@src/lib.rs tests::it_fails", TestState::Failed),
            ("alpha@src/lib.rs tests::it_is_slow", TestState::Skipped),
            ("alpha@src/lib.rs tests::it_panics", TestState::Passed),
            ("beta@src/main.rs tests::it_adds", TestState::Passed),
            ("cli@tests/cli.rs it_adds", TestState::Passed),
        ]);
        assert_eq!(states(samples::CARGO_TEST, None), want);
        assert_eq!(states(samples::CARGO_TEST, Some(Format::Libtest)), want);
    }

    #[test]
    fn stdout_only_gives_bare_names() {
        assert_eq!(
            states(samples::CARGO_TEST_STDOUT, None),
            owned(&[
                ("alpha/src/lib.rs - add (line 3)", TestState::Passed),
                ("it_adds", TestState::Passed),
                ("tests::it_adds", TestState::Passed),
                ("tests::it_fails", TestState::Failed),
                ("tests::it_is_slow", TestState::Skipped),
                ("tests::it_panics", TestState::Passed),
            ])
        );
    }

    #[test]
    fn late_cargo_line_still_names_its_block() {
        let text = "running 1 test\n     Running unittests src/lib.rs (target/debug/deps/a-0123456789abcdef)\n\
                    test t ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        assert_eq!(
            states(text, None),
            owned(&[("a@src/lib.rs t", TestState::Passed)])
        );
    }

    #[test]
    fn a_crashed_binary_fails_under_its_key() {
        let got = states(samples::CARGO_TEST_SIGSEGV, None);
        assert_eq!(
            got,
            owned(&[
                (
                    "alpha@doc alpha/src/lib.rs - add (line 3)",
                    TestState::Passed
                ),
                ("alpha@src/lib.rs", TestState::Failed),
                ("cli@tests/cli.rs it_adds", TestState::Passed),
            ])
        );
    }

    #[test]
    fn a_crash_blames_the_test_that_was_running() {
        // One test thread: the name is printed before the test runs.
        let text = "running 3 tests\ntest a::first ... ok\ntest a::second ... \n\
                    error: test failed, to rerun pass `--lib`\n";
        assert_eq!(
            super::super::parse(text.as_bytes(), None),
            None,
            "a block without `test result:` is not detected on its own"
        );
        let text = format!(
            "{text}\nrunning 1 test\ntest b ... ok\n\ntest result: ok. 1 passed; 0 failed; \
             0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
        );
        assert_eq!(
            states(&text, None),
            owned(&[
                ("a::first", TestState::Passed),
                ("a::second", TestState::Failed),
                ("b", TestState::Passed),
            ])
        );
        // JSON names the tests that started.
        let json = "{ \"type\": \"suite\", \"event\": \"started\", \"test_count\": 2 }\n\
                    { \"type\": \"test\", \"event\": \"started\", \"name\": \"x::ok\" }\n\
                    { \"type\": \"test\", \"event\": \"started\", \"name\": \"x::boom\" }\n\
                    { \"type\": \"test\", \"name\": \"x::ok\", \"event\": \"ok\" }\n";
        assert_eq!(
            states(json, Some(super::super::Format::Libtest)),
            owned(&[("x::boom", TestState::Failed), ("x::ok", TestState::Passed)])
        );
    }

    #[test]
    fn failure_list_and_nocapture_verdicts() {
        // With --nocapture the verdict can land on its own line; a result line garbled by
        // another thread's output is recovered from the closing name list; captured output in
        // the failure report is not read as results.
        let text = "running 3 tests\ntest a::one ... hello from one\nok so far\nFAILED\ntest a::two ... ok\n\
                    progress 50%test a::three ... FAILED\n\nfailures:\n\n\
                    ---- a::three stdout ----\ntest fake ... FAILED\n    not a name list\n\n\
                    failures:\n    a::three\n\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; \
                    0 measured; 0 filtered out; finished in 0.01s\n";
        assert_eq!(
            states(text, None),
            owned(&[
                ("a::one", TestState::Failed),
                ("a::three", TestState::Failed),
                ("a::two", TestState::Passed),
            ])
        );
    }

    #[test]
    fn quiet_terse_output_is_partial_and_not_parsed() {
        // `cargo test -q` prints `.i.` and names only the failures, without `Running` lines:
        // reading it would shrink the collected set to the failures (found by running cargo).
        assert_eq!(parse(samples::CARGO_TEST_QUIET.as_bytes(), None), None);
        assert_eq!(
            parse(samples::CARGO_TEST_QUIET.as_bytes(), Some(Format::Libtest)),
            None
        );
        // The same block with every counted test named parses.
        let named = "running 2 tests\ntest a ... ok\ntest b ... ignored\n\ntest result: ok. 1 passed; \
                     0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        assert_eq!(
            states(named, None),
            owned(&[("a", TestState::Passed), ("b", TestState::Skipped)])
        );
        let short = named.replace("test b ... ignored\n", "");
        assert_eq!(parse(short.as_bytes(), None), None);
    }

    #[test]
    fn libtest_json() {
        assert_eq!(
            states(samples::LIBTEST_JSON, None),
            owned(&[
                ("alpha@src/lib.rs tests::it_adds", TestState::Passed),
                ("alpha@src/lib.rs tests::it_fails", TestState::Failed),
                ("alpha@src/lib.rs tests::it_is_slow", TestState::Skipped),
            ])
        );
    }

    #[test]
    fn binary_keys() {
        for (line, key) in [
            (
                "     Running unittests src/lib.rs (target/debug/deps/nightshift_core-0f3e5a6b7c8d9e0f)",
                "nightshift_core@src/lib.rs",
            ),
            (
                "     Running tests/cli.rs (target\\debug\\deps\\cli-8a6a4a56d14e8148.exe)",
                "cli@tests/cli.rs",
            ),
            (
                "     Running target/debug/deps/alpha-e62994b938fd5803",
                "alpha",
            ),
            ("   Doc-tests nightshift_core", "nightshift_core@doc"),
        ] {
            assert_eq!(cargo_binary_key(line).as_deref(), Some(key), "{line}");
        }
        assert_eq!(cargo_binary_key("Running unittests src/lib.rs (x)"), None);
    }
}
