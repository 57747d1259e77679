//! JUnit XML: one or more `<testsuites>`/`<testsuite>` documents, alone or embedded in other
//! output (`pytest --junitxml=/dev/stdout`, `cat target/surefire-reports/*.xml`).
//!
//! A `<testcase>` is failed when it has a `<failure>`, `<error>`, `<rerunFailure>` or
//! `<rerunError>` child, skipped when it has `<skipped>`, passed otherwise (surefire's
//! `<flakyFailure>`/`<flakyError>` mean it passed on a rerun). Its id is `classname::name`, or
//! `name` without a classname. A report that starts but is not well formed parses to nothing.

use super::xml::{self, Event, Reader, XmlError};
use super::{TestResult, TestState};

pub(super) fn parse(text: &str) -> Option<Vec<TestResult>> {
    let mut out = Vec::new();
    let mut documents = 0usize;
    let mut pos = 0;
    while let Some(offset) = text[pos..].find('<') {
        let at = pos + offset;
        let rest = &text[at..];
        if rest.starts_with("<?xml") {
            let root = xml::skip_prolog(text, at).ok()?;
            if !is_root(&text[root..]) {
                // Some other XML document: not ours, keep looking past its declaration.
                pos = at + 1;
                continue;
            }
            pos = read_document(text, root, &mut out).ok()?;
            documents += 1;
        } else if is_root(rest) {
            pos = read_document(text, at, &mut out).ok()?;
            documents += 1;
        } else {
            pos = at + 1;
        }
    }
    (documents > 0).then_some(out)
}

/// Whether `s` starts with a JUnit root start tag.
fn is_root(s: &str) -> bool {
    ["<testsuites", "<testsuite"].iter().any(|tag| {
        s.strip_prefix(tag).is_some_and(|after| {
            after
                .chars()
                .next()
                .is_some_and(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '>' | '/'))
        })
    })
}

/// Reads the root element at `start`, appending its test cases; returns the end offset.
fn read_document(text: &str, start: usize, out: &mut Vec<TestResult>) -> Result<usize, XmlError> {
    struct Case {
        id: String,
        state: TestState,
        depth: usize,
    }
    let mut reader = Reader::new(text, start);
    let mut depth = 0usize;
    let mut case: Option<Case> = None;
    while let Some(event) = reader.next_event()? {
        match &event {
            Event::Start { name, empty, .. } => {
                if *name == "testcase" && case.is_none() {
                    if let Some(id) = case_id(&event) {
                        if *empty {
                            out.push(TestResult {
                                id,
                                state: TestState::Passed,
                            });
                        } else {
                            case = Some(Case {
                                id,
                                state: TestState::Passed,
                                depth,
                            });
                        }
                    }
                } else if let Some(case) = case.as_mut() {
                    match *name {
                        "failure" | "error" | "rerunFailure" | "rerunError" => {
                            case.state = TestState::Failed;
                        }
                        "skipped" if case.state != TestState::Failed => {
                            case.state = TestState::Skipped;
                        }
                        _ => {}
                    }
                }
                if !*empty {
                    depth += 1;
                }
            }
            Event::End { name } => {
                depth = depth.saturating_sub(1);
                if *name == "testcase"
                    && let Some(done) = case.take_if(|c| c.depth == depth)
                {
                    out.push(TestResult {
                        id: done.id,
                        state: done.state,
                    });
                }
            }
        }
    }
    Ok(reader.position())
}

fn case_id(event: &Event<'_>) -> Option<String> {
    let name = event.attr("name").filter(|n| !n.is_empty())?;
    match event.attr("classname").filter(|c| !c.is_empty()) {
        Some(class) => Some(format!("{class}::{name}")),
        None => Some(name.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::super::{Format, TestState, parse};

    fn states(text: &str) -> Vec<(String, TestState)> {
        let results = parse(text.as_bytes(), Some(Format::JunitXml)).unwrap();
        assert_eq!(results.format, Format::JunitXml);
        results.tests.into_iter().map(|t| (t.id, t.state)).collect()
    }

    #[test]
    fn pytest_junitxml() {
        let got = states(samples::PYTEST_JUNIT);
        let want = [
            ("tests.test_math.TestThing::test_error", TestState::Failed),
            ("tests.test_math.TestThing::test_method", TestState::Passed),
            ("tests.test_math::test_add", TestState::Passed),
            ("tests.test_math::test_fixture_error", TestState::Failed),
            ("tests.test_math::test_param[1]", TestState::Passed),
            ("tests.test_math::test_param[2]", TestState::Failed),
            ("tests.test_math::test_param[a b]", TestState::Passed),
            ("tests.test_math::test_skipped", TestState::Skipped),
            ("tests.test_math::test_sub", TestState::Failed),
            ("tests.test_math::test_xfail", TestState::Skipped),
        ];
        let want: Vec<(String, TestState)> =
            want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn nextest_junit_profile() {
        let want: Vec<(String, TestState)> = [
            ("calc::bin/calc::tests::runs", TestState::Passed),
            ("calc::cli::it_adds", TestState::Passed),
            ("calc::cli::it_subtracts", TestState::Failed),
            ("calc::tests::adds", TestState::Passed),
            ("calc::tests::panics", TestState::Passed),
            ("calc::tests::subtracts", TestState::Failed),
        ]
        .iter()
        .map(|(id, s)| ((*id).to_owned(), *s))
        .collect();
        assert_eq!(states(samples::NEXTEST_JUNIT), want);
    }

    #[test]
    fn surefire_reports_concatenated() {
        let got = states(samples::SUREFIRE_JUNIT);
        let want = [
            ("com.example.CalculatorTest::adds", TestState::Passed),
            ("com.example.CalculatorTest::divides", TestState::Failed),
            ("com.example.CalculatorTest::flaky", TestState::Passed),
            ("com.example.CalculatorTest::multiplies", TestState::Skipped),
            ("com.example.CalculatorTest::overflows", TestState::Failed),
            (
                "com.example.ParserTest::parses <empty> & \"quoted\"",
                TestState::Passed,
            ),
            ("com.example.ParserTest::rejects", TestState::Failed),
        ];
        let want: Vec<(String, TestState)> =
            want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn embedded_after_terminal_output_and_without_classname() {
        let text = "collected 2 items\n<testsuite name=\"x\" tests=\"2\">\
                    <testcase name=\"solo\"/><testcase classname=\"\" name=\"bare\">\
                    <error message=\"boom\"/></testcase></testsuite>\n== 1 failed ==\n";
        assert_eq!(
            states(text),
            [
                ("bare".to_owned(), TestState::Failed),
                ("solo".to_owned(), TestState::Passed)
            ]
        );
    }

    #[test]
    fn malformed_reports_parse_to_nothing() {
        for bad in [
            "<testsuite><testcase name=\"a\"></testsuite>",
            "<testsuite><testcase name=\"a\">&nbsp;</testcase></testsuite>",
            "<?xml version=\"1.0\"?><testsuite><testcase name='a'>",
        ] {
            assert_eq!(parse(bad.as_bytes(), Some(Format::JunitXml)), None, "{bad}");
        }
        // Other XML is not a report.
        assert_eq!(
            parse(b"<?xml version=\"1.0\"?><project/>", Some(Format::JunitXml)),
            None
        );
    }

    #[test]
    fn empty_suite_is_a_report_with_no_tests() {
        let results = parse(
            b"<?xml version=\"1.0\"?><testsuites tests=\"0\"/>",
            Some(Format::JunitXml),
        )
        .unwrap();
        assert!(results.tests.is_empty());
    }
}
