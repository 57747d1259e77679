//! `go test -json` (test2json events, one JSON object a line; other lines are ignored).
//!
//! A test's `pass`/`fail`/`skip` action is its state. A test that started (`run`) but never
//! finished, in a package that failed or never finished, is failed: it was running when the
//! test binary died (a panic, a timeout). A package that failed with no failed test inside it
//! (a build failure, `TestMain`, a panic outside any test) is failed under its own path, as is
//! a package named by go's non-JSON `FAIL\tpkg [build failed]` / `[setup failed]` line.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::text::lines;
use super::{TestResult, TestState};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package")]
    package: Option<String>,
    #[serde(rename = "Test")]
    test: Option<String>,
}

#[derive(Default)]
struct Package {
    /// Per test: its final state, or `None` while it has only started.
    tests: BTreeMap<String, Option<TestState>>,
    outcome: Option<TestState>,
    build_failed: bool,
}

pub(super) fn parse(text: &str) -> Option<Vec<TestResult>> {
    let mut packages: BTreeMap<String, Package> = BTreeMap::new();
    let mut events = 0usize;
    for line in lines(text) {
        if line.starts_with('{') {
            let Ok(event) = serde_json::from_str::<Event>(line) else {
                continue;
            };
            let Some(package) = event.package.filter(|p| !p.is_empty()) else {
                continue;
            };
            let state = match event.action.as_str() {
                "pass" => Some(TestState::Passed),
                "fail" => Some(TestState::Failed),
                "skip" => Some(TestState::Skipped),
                "run" | "start" | "output" | "pause" | "cont" | "bench" => None,
                _ => continue,
            };
            events += 1;
            let entry = packages.entry(package).or_default();
            match (event.test.filter(|t| !t.is_empty()), state) {
                (Some(test), Some(state)) => {
                    entry.tests.insert(test, Some(state));
                }
                (Some(test), None) if event.action == "run" => {
                    entry.tests.entry(test).or_insert(None);
                }
                (None, Some(state)) => entry.outcome = Some(state),
                _ => {}
            }
        } else if let Some(package) = build_failure(line) {
            packages.entry(package.to_owned()).or_default().build_failed = true;
        }
    }
    if events == 0 {
        return None;
    }
    let mut out = Vec::new();
    for (path, package) in packages {
        let died = package.build_failed || package.outcome != Some(TestState::Passed);
        let mut any_failed = false;
        for (test, state) in package.tests {
            let state = match state {
                Some(state) => state,
                None if died => TestState::Failed,
                None => continue,
            };
            any_failed |= state == TestState::Failed;
            out.push(TestResult {
                id: format!("{path}/{test}"),
                state,
            });
        }
        let package_failed = package.build_failed || package.outcome == Some(TestState::Failed);
        if package_failed && !any_failed {
            out.push(TestResult {
                id: path,
                state: TestState::Failed,
            });
        }
    }
    Some(out)
}

/// `FAIL\texample.com/pkg [build failed]` (go prints it outside the JSON stream).
fn build_failure(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("FAIL\t")?;
    let (package, why) = rest.split_once(' ')?;
    matches!(why.trim_end(), "[build failed]" | "[setup failed]").then_some(package)
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::super::{Format, TestState, parse};

    fn states(text: &str, format: Option<Format>) -> Vec<(String, TestState)> {
        let results = parse(text.as_bytes(), format).unwrap();
        assert_eq!(results.format, Format::GoTestJson);
        results.tests.into_iter().map(|t| (t.id, t.state)).collect()
    }

    fn owned(want: &[(&str, TestState)]) -> Vec<(String, TestState)> {
        want.iter().map(|(id, s)| ((*id).to_owned(), *s)).collect()
    }

    #[test]
    fn subtests_skips_and_failures() {
        let want = owned(&[
            ("example.com/goproj/calc/TestAdd", TestState::Passed),
            ("example.com/goproj/calc/TestSkip", TestState::Skipped),
            ("example.com/goproj/calc/TestSub", TestState::Failed),
            ("example.com/goproj/calc/TestTable", TestState::Failed),
            ("example.com/goproj/calc/TestTable/bad", TestState::Failed),
            (
                "example.com/goproj/calc/TestTable/one_two",
                TestState::Passed,
            ),
            ("example.com/goproj/calc/TestTable/zero", TestState::Passed),
        ]);
        assert_eq!(states(samples::GO_TEST_JSON, None), want);
        assert_eq!(
            states(samples::GO_TEST_JSON, Some(Format::GoTestJson)),
            want
        );
    }

    #[test]
    fn panics_build_failures_and_packages_without_tests() {
        assert_eq!(
            states(samples::GO_TEST_JSON_BROKEN, None),
            owned(&[
                ("example.com/goproj/boom/TestFine", TestState::Passed),
                ("example.com/goproj/boom/TestPanics", TestState::Failed),
                ("example.com/goproj/broken", TestState::Failed),
            ])
        );
    }

    #[test]
    fn a_test_running_when_the_binary_died_failed() {
        let text = r#"{"Action":"run","Package":"x/y","Test":"TestDone"}
{"Action":"pass","Package":"x/y","Test":"TestDone","Elapsed":0}
{"Action":"run","Package":"x/y","Test":"TestHangs"}
{"Action":"output","Package":"x/y","Test":"TestHangs","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"x/y","Output":"FAIL\tx/y\t1.005s\n"}
{"Action":"fail","Package":"x/y","Elapsed":1.005}
{"Action":"run","Package":"x/z","Test":"TestCutOff"}
"#;
        assert_eq!(
            states(text, None),
            owned(&[
                ("x/y/TestDone", TestState::Passed),
                ("x/y/TestHangs", TestState::Failed),
                ("x/z/TestCutOff", TestState::Failed),
            ])
        );
    }

    #[test]
    fn a_package_failing_outside_its_tests_fails_by_path() {
        // Newer go reports build failures inside the stream.
        let text = r#"{"ImportPath":"x/b [x/b.test]","Action":"build-output","Output":"b_test.go:5:28: undefined: thing\n"}
{"ImportPath":"x/b [x/b.test]","Action":"build-fail"}
{"Action":"start","Package":"x/b"}
{"Action":"output","Package":"x/b","Output":"FAIL\tx/b [build failed]\n"}
{"Action":"fail","Package":"x/b","Elapsed":0,"FailedBuild":"x/b [x/b.test]"}
"#;
        assert_eq!(states(text, None), owned(&[("x/b", TestState::Failed)]));
    }
}
