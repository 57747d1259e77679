//! TAP (versions 12–14): plans, test points with `# SKIP`/`# TODO` directives, YAML diagnostic
//! blocks, four-space-indented subtests (node's test runner, TAP 14), `Bail out!`, and several
//! streams in one output (`prove -v` announces each file as `t/a.t .. `; a new `TAP version`
//! line or a second plan also starts a stream).
//!
//! Detection needs a top-level plan and either a `TAP version` line or at least one test
//! point; without a version line every top-level point must be numbered within the plan.

use std::collections::HashSet;

use super::text::{count, lines};
use super::{Mode, TestResult, TestState};

/// Missing planned tests are listed one by one up to this many, then summarized in one id.
const MISSING_LISTED: usize = 1000;

pub(super) fn parse(text: &str, mode: Mode) -> Option<Vec<TestResult>> {
    let mut streams: Vec<Stream> = Vec::new();
    let mut current = Stream::default();
    // Indentation of the last test point, while a YAML block may still follow it.
    let mut yaml_may_follow: Option<usize> = None;
    let mut in_yaml: Option<usize> = None;

    for line in lines(text) {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = line[indent..].trim_end();
        if let Some(yaml_indent) = in_yaml {
            if indent == yaml_indent && body == "..." {
                in_yaml = None;
            }
            continue;
        }
        if body == "---" && yaml_may_follow.is_some_and(|point| indent > point) {
            in_yaml = Some(indent);
            yaml_may_follow = None;
            continue;
        }
        yaml_may_follow = None;

        if indent == 0
            && let Some(name) = prove_header(body)
        {
            streams.push(std::mem::take(&mut current));
            current.name = Some(name.to_owned());
            continue;
        }
        if indent % 4 != 0 {
            continue;
        }
        let depth = indent / 4;
        if depth == 0 && body.starts_with("TAP version ") {
            if current.has_content() {
                let name = current.name.clone();
                streams.push(std::mem::take(&mut current));
                current.name = name;
            }
            current.version = true;
        } else if let Some(planned) = plan(body) {
            if depth == 0 {
                if current.plan.is_some() {
                    let name = current.name.clone();
                    streams.push(std::mem::take(&mut current));
                    current.name = name;
                }
                current.plan = Some(planned);
            }
        } else if body.starts_with("Bail out!") {
            current.bailed = true;
        } else if let Some(point) = test_point(body)
            && !current.bailed
            && !current.is_prove_verdict(depth, &point)
        {
            current.add(depth, point);
            yaml_may_follow = Some(indent);
        }
    }
    streams.push(current);

    let recognised = streams.iter().any(|s| s.recognised(mode));
    if !recognised {
        return None;
    }
    let mut out = Vec::new();
    for stream in streams {
        stream.finish(&mut out);
    }
    Some(out)
}

/// `t/basic.t .. ` (prove's file announcement, possibly with its verdict after the dots).
fn prove_header(body: &str) -> Option<&str> {
    let (name, after) = body.split_once(" ..")?;
    if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with('#') {
        return None;
    }
    let after = after.trim_start_matches('.');
    (after.is_empty() || after.starts_with(' ')).then_some(name)
}

/// `1..N`, optionally followed by a `# reason`.
fn plan(body: &str) -> Option<usize> {
    let rest = body.strip_prefix("1..")?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let tail = rest[digits..].trim_start();
    if !(tail.is_empty() || tail.starts_with('#')) {
        return None;
    }
    count(&rest[..digits])
}

struct Point {
    ok: bool,
    number: Option<usize>,
    description: String,
    directive: Directive,
}

#[derive(Clone, Copy, PartialEq)]
enum Directive {
    None,
    Skip,
    Todo,
}

/// `ok`/`not ok`, an optional number, an optional description, an optional directive.
fn test_point(body: &str) -> Option<Point> {
    let (ok, rest) = if let Some(rest) = body.strip_prefix("not ok") {
        (false, rest)
    } else if let Some(rest) = body.strip_prefix("ok") {
        (true, rest)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let after_digits = &rest[digits..];
    let (number, rest) =
        if digits > 0 && (after_digits.is_empty() || after_digits.starts_with([' ', '\t', '#'])) {
            (count(&rest[..digits]), after_digits)
        } else {
            (None, rest)
        };
    let (description, directive) = split_directive(rest);
    Some(Point {
        ok,
        number,
        description: normalize_description(description),
        directive,
    })
}

/// Splits at the first unescaped `#`.
fn split_directive(rest: &str) -> (&str, Directive) {
    let mut escaped = false;
    for (at, c) in rest.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '#' if !escaped => {
                let directive = rest[at + 1..].trim_start();
                let head: String = directive.chars().take(4).collect();
                let directive = match head.to_ascii_lowercase().as_str() {
                    "skip" => Directive::Skip,
                    "todo" => Directive::Todo,
                    _ => Directive::None,
                };
                return (&rest[..at], directive);
            }
            _ => escaped = false,
        }
    }
    (rest, Directive::None)
}

/// Drops a leading `-`, unescapes `\#` and `\\`, collapses whitespace.
fn normalize_description(raw: &str) -> String {
    let raw = raw.trim();
    let raw = raw.strip_prefix('-').unwrap_or(raw);
    let mut unescaped = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '#' | '\\')
        {
            unescaped.push(next);
            chars.next();
        } else {
            unescaped.push(c);
        }
    }
    unescaped.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Default)]
struct Stream {
    name: Option<String>,
    version: bool,
    plan: Option<usize>,
    bailed: bool,
    /// Top-level test numbers seen.
    seen: HashSet<usize>,
    top_level: usize,
    all_numbered: bool,
    /// Points counted per depth within the current parent.
    counters: Vec<usize>,
    /// Finished points per depth waiting for their parent (depth 0: done).
    pending: Vec<Vec<(String, TestState)>>,
}

impl Stream {
    fn has_content(&self) -> bool {
        self.plan.is_some() || !self.pending.iter().all(Vec::is_empty)
    }

    /// prove's own `ok` after a file whose plan is complete.
    fn is_prove_verdict(&self, depth: usize, point: &Point) -> bool {
        self.name.is_some()
            && depth == 0
            && point.ok
            && point.number.is_none()
            && point.description.is_empty()
            && self.plan.is_some_and(|n| self.top_level >= n)
    }

    fn add(&mut self, depth: usize, point: Point) {
        if self.counters.len() <= depth {
            self.counters.resize(depth + 1, 0);
        }
        self.counters[depth] += 1;
        self.counters.truncate(depth + 1);
        let number = point.number.unwrap_or(self.counters[depth]);
        if depth == 0 {
            if self.top_level == 0 {
                self.all_numbered = true;
            }
            self.top_level += 1;
            self.all_numbered &= point.number.is_some();
            self.seen.insert(number);
        }
        let id = if point.description.is_empty() {
            number.to_string()
        } else {
            format!("{number} {}", point.description)
        };
        let state = match (point.ok, point.directive) {
            (_, Directive::Skip) | (false, Directive::Todo) => TestState::Skipped,
            (true, _) => TestState::Passed,
            (false, Directive::None) => TestState::Failed,
        };
        if self.pending.len() <= depth {
            self.pending.resize_with(depth + 1, Vec::new);
        }
        let children: Vec<(String, TestState)> =
            self.pending.drain(depth + 1..).flatten().collect();
        let level = &mut self.pending[depth];
        level.extend(
            children
                .into_iter()
                .map(|(child, s)| (format!("{id} > {child}"), s)),
        );
        level.push((id, state));
    }

    fn recognised(&self, mode: Mode) -> bool {
        match mode {
            Mode::Forced => self.top_level > 0 || self.plan.is_some(),
            Mode::Detect => {
                let Some(planned) = self.plan else {
                    return false;
                };
                if self.version {
                    return true;
                }
                self.top_level > 0
                    && self.all_numbered
                    && self.seen.iter().all(|n| (1..=planned).contains(n))
            }
        }
    }

    fn finish(self, out: &mut Vec<TestResult>) {
        let prefix = self.name.map(|n| format!("{n}::")).unwrap_or_default();
        for (id, state) in self.pending.into_iter().flatten() {
            out.push(TestResult {
                id: format!("{prefix}{id}"),
                state,
            });
        }
        let Some(planned) = self.plan else {
            return;
        };
        let present = self
            .seen
            .iter()
            .filter(|n| (1..=planned).contains(*n))
            .count();
        let missing = planned - present;
        if missing == 0 {
            return;
        }
        if missing <= MISSING_LISTED {
            for n in (1..=planned).filter(|n| !self.seen.contains(n)) {
                out.push(TestResult {
                    id: format!("{prefix}{n}"),
                    state: TestState::Failed,
                });
            }
        } else {
            out.push(TestResult {
                id: format!("{prefix}missing {missing} of {planned} planned tests"),
                state: TestState::Failed,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::super::{Format, TestState, parse};

    fn states(text: &str) -> Vec<(String, TestState)> {
        let results = parse(text.as_bytes(), Some(Format::Tap)).unwrap();
        results.tests.into_iter().map(|t| (t.id, t.state)).collect()
    }

    fn owned(want: &[(&str, TestState)]) -> Vec<(String, TestState)> {
        want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect()
    }

    #[test]
    fn tap13_with_directives_yaml_and_escapes() {
        assert_eq!(
            states(samples::TAP13),
            owned(&[
                ("1 parses an empty file", TestState::Passed),
                ("2 rejects a # in a name", TestState::Failed),
                ("3 handles unicode", TestState::Skipped),
                ("4 streams large input", TestState::Skipped),
                ("5 caches results", TestState::Passed),
                ("6", TestState::Passed),
            ])
        );
    }

    #[test]
    fn node_test_runner_subtests() {
        assert_eq!(
            states(samples::NODE_TAP),
            owned(&[
                ("1 adds", TestState::Passed),
                ("2 group", TestState::Failed),
                ("2 group > 1 inner ok", TestState::Passed),
                ("2 group > 2 inner bad", TestState::Failed),
                ("3 skipped one", TestState::Skipped),
                ("4 todo one", TestState::Skipped),
            ])
        );
    }

    #[test]
    fn prove_verbose_streams_are_named_by_file() {
        assert_eq!(
            states(samples::PROVE_VERBOSE),
            owned(&[
                ("t/a.t::1 first thing", TestState::Passed),
                ("t/a.t::2 second", TestState::Skipped),
                ("t/a.t::3", TestState::Skipped),
                ("t/b.t::1 alpha", TestState::Passed),
                ("t/b.t::2 beta", TestState::Failed),
            ])
        );
    }

    #[test]
    fn bail_out_and_missing_planned_tests_fail_by_number() {
        let text = "TAP version 13\n1..4\nok 1 - setup\nnot ok 2 - connect\nBail out! no database\nok 3 - late\n";
        assert_eq!(
            states(text),
            owned(&[
                ("1 setup", TestState::Passed),
                ("2 connect", TestState::Failed),
                ("3", TestState::Failed),
                ("4", TestState::Failed),
            ])
        );
    }

    #[test]
    fn a_huge_plan_is_summarized_not_enumerated() {
        let text = "TAP version 13\n1..999999999999\nok 1 - only\n";
        assert_eq!(
            states(text),
            owned(&[
                ("1 only", TestState::Passed),
                (
                    "missing 999999999998 of 999999999999 planned tests",
                    TestState::Failed
                ),
            ])
        );
    }

    #[test]
    fn unnumbered_points_take_their_position() {
        let text = "1..3\nok - a\nnot ok - b\nok\n";
        assert_eq!(
            states(text),
            owned(&[
                ("1 a", TestState::Passed),
                ("2 b", TestState::Failed),
                ("3", TestState::Passed)
            ])
        );
        // Detection is stricter: unnumbered points without a version line are not enough.
        assert_eq!(parse(text.as_bytes(), None), None);
    }

    #[test]
    fn skip_all_plan() {
        let results = parse(b"TAP version 13\n1..0 # SKIP no display\n", None).unwrap();
        assert_eq!(results.format, Format::Tap);
        assert!(results.tests.is_empty());
    }
}
