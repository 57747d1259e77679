//! The check-result parsers against what real runners print (issue 5): tiny projects are
//! written to temporary directories, the real runner runs on each through `check::run` (so
//! the output is captured exactly as a check's is: `sh -c`, stdout and stderr into one log),
//! and the parse of that log must name every test with its state.
//!
//! A runner that is not installed is skipped with a `skipped: …` line on stderr (cargo is
//! always there). `.ci/run` installs pytest from the package registry so CI runs them all.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nightshift_core::check;
use nightshift_core::check::results::{Format, FormatChoice, Results, TestState, parse};

use TestState::{Failed, Passed, Skipped};

/// Bound on one runner invocation; compiling on a loaded machine is slow, never this slow.
const RUNNER_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs `command` as a check in `dir` and returns whether it was green and the whole log.
fn run_check(dir: &Path, command: &str, env: &[(&str, String)]) -> (bool, Vec<u8>) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let log = dir.join(format!("check-{n}.log"));
    let env = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let run = check::run(command, dir.to_path_buf(), env, RUNNER_TIMEOUT, log.clone())
        .expect("supervise the check");
    let output = std::fs::read(&log).expect("read the check log");
    (run.green, output)
}

/// Parses `output` (auto-detected, and as the format named) and checks every id and state.
fn assert_parsed(
    label: &str,
    output: &[u8],
    format: Format,
    want: &[(&str, TestState)],
) -> Results {
    let shown = String::from_utf8_lossy(output);
    let Some(results) = parse(output, None) else {
        panic!("{label}: nothing parsed from\n{shown}");
    };
    assert_eq!(results.format, format, "{label}: format of\n{shown}");
    let got: Vec<(&str, TestState)> = results
        .tests
        .iter()
        .map(|t| (t.id.as_str(), t.state))
        .collect();
    let mut want = want.to_vec();
    want.sort_by(|a, b| a.0.cmp(b.0));
    assert_eq!(got, want, "{label}: tests parsed from\n{shown}");
    assert_eq!(
        FormatChoice::Fixed(format).parse(output).as_ref(),
        Some(&results),
        "{label}: configured as {format}"
    );
    results
}

/// The failing set as sorted strings.
fn failing(results: &Results) -> Vec<String> {
    results.failing_set().iter().map(str::to_owned).collect()
}

/// The first line `program args` prints, or `None` (with a `skipped:` note) when it fails.
fn version_of(what: &str, program: &str, args: &[&str]) -> Option<String> {
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            let version = text.lines().next().unwrap_or_default().trim().to_owned();
            eprintln!("{what}: {version}");
            Some(version)
        }
        _ => {
            eprintln!(
                "skipped: {what} not installed (`{program} {}` failed)",
                args.join(" ")
            );
            None
        }
    }
}

fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

// --- cargo test and cargo nextest -----------------------------------------------------------

const CALC_FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n",
    ),
    (
        "src/lib.rs",
        r#"/// Adds two numbers.
///
/// ```
/// assert_eq!(calc::add(2, 2), 4);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// Subtracts, wrongly.
///
/// ```
/// assert_eq!(calc::sub(3, 1), 2);
/// ```
pub fn sub(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    #[test]
    fn adds() {
        assert_eq!(super::add(1, 2), 3);
    }

    #[test]
    fn subtracts() {
        assert_eq!(super::sub(3, 1), 2);
    }

    #[test]
    #[ignore = "slow"]
    fn slow() {}

    #[test]
    #[should_panic(expected = "boom")]
    fn panics() {
        panic!("boom");
    }
}
"#,
    ),
    (
        "src/main.rs",
        "fn main() {\n    println!(\"{}\", calc::add(1, 1));\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn runs() {}\n}\n",
    ),
    (
        "tests/cli.rs",
        "#[test]\nfn it_adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n\n\
         #[test]\nfn it_subtracts() {\n    assert_eq!(calc::sub(5, 3), 2);\n}\n",
    ),
    (
        ".config/nextest.toml",
        "[profile.ci]\nfail-fast = false\n\n[profile.ci.junit]\npath = \"junit.xml\"\n",
    ),
];

/// The crate both cargo tests run on, written once per test process; cargo's own lock on
/// its target directory orders the two tests' builds.
fn calc_crate() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("create a temp dir");
        write_files(dir.path(), CALC_FILES);
        dir
    })
    .path()
}

/// Offline, colourless, no backtraces, a target directory inside the crate.
fn cargo_env(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("CARGO_TARGET_DIR", dir.join("target").display().to_string()),
        ("CARGO_TERM_COLOR", "never".into()),
        ("RUST_BACKTRACE", "0".into()),
        ("CARGO_NET_OFFLINE", "true".into()),
    ]
}

#[test]
fn cargo_test_output_parses_to_every_test_by_binary() {
    version_of("cargo", "cargo", &["--version"]).expect("cargo runs these tests");
    let dir = calc_crate();
    let env = cargo_env(dir);
    let want = [
        ("calc@src/lib.rs tests::adds", Passed),
        ("calc@src/lib.rs tests::subtracts", Failed),
        ("calc@src/lib.rs tests::slow", Skipped),
        // `- should panic` is dropped from the id.
        ("calc@src/lib.rs tests::panics", Passed),
        ("calc@src/main.rs tests::runs", Passed),
        ("cli@tests/cli.rs it_adds", Passed),
        ("cli@tests/cli.rs it_subtracts", Failed),
        ("calc@doc src/lib.rs - add (line 3)", Passed),
        ("calc@doc src/lib.rs - sub (line 12)", Failed),
    ];

    let (green, output) = run_check(dir, "cargo test --offline --no-fail-fast", &env);
    assert!(!green);
    let results = assert_parsed("cargo test", &output, Format::Libtest, &want);
    assert_eq!(
        failing(&results),
        [
            "calc@doc src/lib.rs - sub (line 12)",
            "calc@src/lib.rs tests::subtracts",
            "cli@tests/cli.rs it_subtracts",
        ]
    );
    assert_eq!(results.skipped_count(), 1);
    assert_eq!(results.collected().len(), want.len());

    // One test thread with output shown: the same tests, the same ids.
    let (_, output) = run_check(
        dir,
        "cargo test --offline --no-fail-fast -- --test-threads=1 --nocapture",
        &env,
    );
    assert_parsed("cargo test --nocapture", &output, Format::Libtest, &want);

    // `-q` prints dots and names only the failures: partial, so not parsed (the collected
    // set must never shrink to the failures).
    let (_, output) = run_check(dir, "cargo test --offline --no-fail-fast -q", &env);
    assert_eq!(
        parse(&output, None),
        None,
        "cargo test -q:\n{}",
        String::from_utf8_lossy(&output)
    );
}

#[test]
fn nextest_output_parses_to_every_test_by_binary_id() {
    if version_of("cargo-nextest", "cargo", &["nextest", "--version"]).is_none() {
        return;
    }
    let dir = calc_crate();
    let env = cargo_env(dir);
    let passed_and_failed = [
        ("calc tests::adds", Passed),
        ("calc tests::subtracts", Failed),
        ("calc tests::panics", Passed),
        ("calc::bin/calc tests::runs", Passed),
        ("calc::cli it_adds", Passed),
        ("calc::cli it_subtracts", Failed),
    ];
    let mut all = passed_and_failed.to_vec();
    all.push(("calc tests::slow", Skipped));

    let (green, output) = run_check(
        dir,
        "cargo nextest run --offline --profile default --no-fail-fast --status-level all",
        &env,
    );
    assert!(!green);
    let results = assert_parsed("nextest", &output, Format::Nextest, &all);
    assert_eq!(
        failing(&results),
        ["calc tests::subtracts", "calc::cli it_subtracts"]
    );
    assert_eq!(results.skipped_count(), 1);

    // JSON on stdout, status lines on stderr, both captured: each test once, by binary id.
    let mut json_env = env.clone();
    json_env.push(("NEXTEST_EXPERIMENTAL_LIBTEST_JSON", "1".into()));
    let (_, output) = run_check(
        dir,
        "cargo nextest run --offline --profile default --no-fail-fast \
         --message-format libtest-json",
        &json_env,
    );
    assert_parsed(
        "nextest libtest-json",
        &output,
        Format::Nextest,
        &passed_and_failed,
    );

    // Only failures listed: the summary counts passed tests nobody names, so not parsed.
    let (_, output) = run_check(
        dir,
        "cargo nextest run --offline --profile default --no-fail-fast --status-level fail \
         --final-status-level none",
        &env,
    );
    assert_eq!(
        parse(&output, None),
        None,
        "nextest --status-level fail:\n{}",
        String::from_utf8_lossy(&output)
    );

    // The `ci` profile's JUnit report, read as `[check] results` reads it.
    let (_, _) = run_check(dir, "cargo nextest run --offline --profile ci", &env);
    let report = std::fs::read(dir.join("target/nextest/ci/junit.xml")).expect("junit report");
    let results = assert_parsed(
        "nextest junit",
        &report,
        Format::JunitXml,
        &[
            ("calc::tests::adds", Passed),
            ("calc::tests::subtracts", Failed),
            ("calc::tests::panics", Passed),
            ("calc::bin/calc::tests::runs", Passed),
            ("calc::cli::it_adds", Passed),
            ("calc::cli::it_subtracts", Failed),
        ],
    );
    assert_eq!(results.failing_set().len(), 2);
}

// --- pytest --------------------------------------------------------------------------------

/// A recorded output under `tests/fixtures/`.
fn recorded(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Plain `pytest` on [`PYTEST_FILES`]: the failed and erroring tests by id, the rest counted.
fn assert_plain_calc(label: &str, output: &[u8]) {
    let shown = String::from_utf8_lossy(output);
    let results = parse(output, None).unwrap_or_else(|| panic!("{label}: not parsed\n{shown}"));
    assert_eq!(results.format, Format::Pytest, "{label}");
    assert_eq!(
        failing(&results),
        [
            "tests/test_calc.py::TestClass::test_broken",
            "tests/test_calc.py::test_param[2-2-5]",
            "tests/test_calc.py::test_subtracts",
            "tests/test_calc.py::test_uses_broken_fixture",
        ],
        "{label}\n{shown}"
    );
    let counted = results.counted.expect("a failures-only listing");
    // 4 passed + 1 xpassed; 1 skipped + 1 xfailed; the fixture error counted apart.
    assert_eq!(
        (
            counted.passed,
            counted.failed,
            counted.errors,
            counted.skipped
        ),
        (5, 3, 1, 2),
        "{label}"
    );
    assert_eq!(results.test_count(), 10, "{label}");
    assert_eq!(results.skipped_count(), 2, "{label}");
    assert_eq!(
        FormatChoice::Fixed(Format::Pytest).parse(output).as_ref(),
        Some(&results),
        "{label}: configured as pytest"
    );
}

/// Plain and `-q` pytest, recorded from pytest 9.2.0 on the CJK fixture project of
/// `crates/nightshift/tests/it/real_projects.rs` (red as it is, green after the fix) and on
/// [`PYTEST_FILES`]: read without pytest installed.
#[test]
fn recorded_plain_pytest_output_is_a_failures_only_listing() {
    for name in ["pytest/plain-red.txt", "pytest/quiet-red.txt"] {
        let output = recorded(name);
        let results = parse(&output, None).unwrap_or_else(|| panic!("{name}: not parsed"));
        assert_eq!(results.format, Format::Pytest, "{name}");
        assert_eq!(
            failing(&results),
            ["test.py::GreetTest::test_chinese"],
            "{name}"
        );
        assert!(results.is_partial(), "{name}");
        assert_eq!(results.test_count(), 5, "{name}");
    }
    for name in ["pytest/plain-green.txt", "pytest/quiet-green.txt"] {
        let output = recorded(name);
        let results = parse(&output, None).unwrap_or_else(|| panic!("{name}: not parsed"));
        assert!(results.tests.is_empty(), "{name}");
        assert!(results.is_partial(), "{name}");
        assert_eq!(results.test_count(), 5, "{name}");
        assert_eq!(results.skipped_count(), 0, "{name}");
    }
    assert_plain_calc("pytest/plain-calc.txt", &recorded("pytest/plain-calc.txt"));
}

const PYTEST_FILES: &[(&str, &str)] = &[
    ("pytest.ini", "[pytest]\n"),
    (
        "tests/test_calc.py",
        r#"import pytest


def add(a, b):
    return a + b


def test_adds():
    assert add(1, 2) == 3


def test_subtracts():
    assert add(3, -1) == 4, "subtraction is broken"


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_known_bug():
    assert False


@pytest.mark.xfail(reason="fixed already")
def test_fixed_bug():
    pass


@pytest.mark.parametrize("a,b,want", [(1, 1, 2), (2, 2, 5), ("a b", "c", "a bc")])
def test_param(a, b, want):
    assert add(a, b) == want


class TestClass:
    def test_method(self):
        assert True

    def test_broken(self):
        raise RuntimeError("boom")


@pytest.fixture
def broken_fixture():
    raise ValueError("fixture fails")


def test_uses_broken_fixture(broken_fixture):
    pass
"#,
    ),
    (
        "broken/test_imports.py",
        "import no_such_module_for_nightshift\n\n\ndef test_never_runs():\n    pass\n",
    ),
];

#[test]
fn pytest_output_parses_to_node_ids() {
    if version_of("pytest", "python3", &["-m", "pytest", "--version"]).is_none() {
        eprintln!("skipped: pytest not importable (`python3 -m pip install --user pytest`)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), PYTEST_FILES);
    let env = [
        ("PYTHONDONTWRITEBYTECODE", "1".to_owned()),
        ("NO_COLOR", "1".to_owned()),
    ];
    let pytest = "python3 -m pytest -p no:cacheprovider";
    let t = "tests/test_calc.py";
    let named = [
        ("tests/test_calc.py::test_adds", Passed),
        ("tests/test_calc.py::test_subtracts", Failed),
        ("tests/test_calc.py::test_known_bug", Skipped),
        ("tests/test_calc.py::test_fixed_bug", Passed),
        ("tests/test_calc.py::test_param[1-1-2]", Passed),
        ("tests/test_calc.py::test_param[2-2-5]", Failed),
        ("tests/test_calc.py::test_param[a b-c-a bc]", Passed),
        ("tests/test_calc.py::TestClass::test_method", Passed),
        ("tests/test_calc.py::TestClass::test_broken", Failed),
        ("tests/test_calc.py::test_uses_broken_fixture", Failed),
    ];
    let mut verbose = named.to_vec();
    verbose.push(("tests/test_calc.py::test_skipped", Skipped));

    let (green, output) = run_check(dir.path(), &format!("{pytest} -v {t}"), &env);
    assert!(!green);
    let results = assert_parsed("pytest -v", &output, Format::Pytest, &verbose);
    assert_eq!(
        failing(&results),
        [
            "tests/test_calc.py::TestClass::test_broken",
            "tests/test_calc.py::test_param[2-2-5]",
            "tests/test_calc.py::test_subtracts",
            "tests/test_calc.py::test_uses_broken_fixture",
        ]
    );
    assert_eq!(results.skipped_count(), 2);

    // `-rA` names every test but the plain skipped ones (`SKIPPED [1] file:line: reason`).
    let (_, output) = run_check(dir.path(), &format!("{pytest} -rA {t}"), &env);
    assert_parsed("pytest -rA", &output, Format::Pytest, &named);

    // Plain pytest names only failures: a failures-only listing with pytest's counts.
    let (_, output) = run_check(dir.path(), &format!("{pytest} {t}"), &env);
    assert_plain_calc("pytest", &output);

    // `--junitxml`, read as `[check] results` reads it: `classname::name` ids.
    let (_, _) = run_check(
        dir.path(),
        &format!("{pytest} -q --junitxml=report.xml {t}"),
        &env,
    );
    let report = std::fs::read(dir.path().join("report.xml")).expect("junit report");
    let junit: Vec<(String, TestState)> = verbose
        .iter()
        .map(|(id, state)| {
            let (module, rest) = id.split_once("::").unwrap();
            let class = module.trim_end_matches(".py").replace('/', ".");
            let id = match rest.split_once("::") {
                Some((cls, name)) => format!("{class}.{cls}::{name}"),
                None => format!("{class}::{rest}"),
            };
            (id, *state)
        })
        .collect();
    let junit: Vec<(&str, TestState)> = junit.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    assert!(junit.contains(&("tests.test_calc.TestClass::test_broken", Failed)));
    assert_parsed("pytest --junitxml", &report, Format::JunitXml, &junit);

    // A module that fails to import fails under its path.
    let (green, output) = run_check(dir.path(), &format!("{pytest} -v broken"), &env);
    assert!(!green);
    assert_parsed(
        "pytest collection error",
        &output,
        Format::Pytest,
        &[("broken/test_imports.py", Failed)],
    );
}

// --- go test -json -------------------------------------------------------------------------

const GO_FILES: &[(&str, &str)] = &[
    ("go.mod", "module example.com/gocalc\n\ngo 1.19\n"),
    (
        "calc/calc.go",
        "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
    ),
    (
        "calc/calc_test.go",
        r#"package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("add is broken")
	}
}

func TestSub(t *testing.T) {
	if Add(3, 1) != 2 {
		t.Errorf("Sub(3, 1) = %d", Add(3, 1))
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not today")
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b, want int
	}{{"one plus one", 1, 1, 2}, {"two plus two", 2, 2, 5}, {"skip me", 0, 0, 0}} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			if c.name == "skip me" {
				t.Skip("skipped subtest")
			}
			if got := Add(c.a, c.b); got != c.want {
				t.Errorf("got %d want %d", got, c.want)
			}
		})
	}
}
"#,
    ),
    (
        "crash/crash_test.go",
        "package crash\n\nimport \"testing\"\n\nfunc TestBefore(t *testing.T) {}\n\n\
         func TestPanics(t *testing.T) {\n\tvar m map[string]int\n\tm[\"x\"] = 1\n}\n\n\
         func TestAfter(t *testing.T) {}\n",
    ),
    (
        "broken/broken.go",
        "package broken\n\nfunc Broken() int { return \"no\" }\n",
    ),
    (
        "broken/broken_test.go",
        "package broken\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { Broken() }\n",
    ),
    ("empty/empty.go", "package empty\n\nfunc Nothing() {}\n"),
];

#[test]
fn go_test_json_output_parses_to_package_paths() {
    if version_of("go", "go", &["version"]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("module");
    write_files(&module, GO_FILES);
    let inside = |name: &str| -> String { dir.path().join(name).display().to_string() };
    // Offline and self-contained: caches inside the temp dir, this Go only, no proxy.
    let env = [
        ("GOFLAGS", "-mod=mod".to_owned()),
        ("GOCACHE", inside("gocache")),
        ("GOPATH", inside("gopath")),
        ("GOTOOLCHAIN", "local".to_owned()),
        ("GOPROXY", "off".to_owned()),
        ("GOWORK", "off".to_owned()),
        ("GOTELEMETRY", "off".to_owned()),
        ("GO111MODULE", "on".to_owned()),
    ];
    let (green, output) = run_check(&module, "go test -json ./...", &env);
    assert!(!green);
    let results = assert_parsed(
        "go test -json",
        &output,
        Format::GoTestJson,
        &[
            ("example.com/gocalc/calc/TestAdd", Passed),
            ("example.com/gocalc/calc/TestSub", Failed),
            ("example.com/gocalc/calc/TestSkipped", Skipped),
            ("example.com/gocalc/calc/TestTable", Failed),
            ("example.com/gocalc/calc/TestTable/one_plus_one", Passed),
            ("example.com/gocalc/calc/TestTable/two_plus_two", Failed),
            ("example.com/gocalc/calc/TestTable/skip_me", Skipped),
            // The panic ends the binary: the test running then failed, the next never ran.
            ("example.com/gocalc/crash/TestBefore", Passed),
            ("example.com/gocalc/crash/TestPanics", Failed),
            // A package that does not build fails under its path.
            ("example.com/gocalc/broken", Failed),
        ],
    );
    assert_eq!(results.failing_set().len(), 5);
    assert_eq!(results.skipped_count(), 2);
}

// --- TAP: prove and node --test ------------------------------------------------------------

const PERL_FILES: &[(&str, &str)] = &[
    (
        "t/math.t",
        r#"use strict;
use warnings;
use Test::More tests => 6;

ok(1 + 1 == 2, 'adds');
is(3 - 1, 4, 'subtracts');
SKIP: {
    skip 'not today', 1;
    ok(1, 'skipped one');
}
TODO: {
    local $TODO = 'known bug';
    ok(0, 'known bug # with a hash');
}
subtest 'nested' => sub {
    plan tests => 2;
    ok(1, 'inner passes');
    ok(0, 'inner fails');
};
ok(1);
"#,
    ),
    (
        "t/other.t",
        "use strict;\nuse warnings;\nuse Test::More;\n\nok(1, 'first');\nok(1, 'second');\ndone_testing();\n",
    ),
    (
        "t/dies.t",
        "use strict;\nuse warnings;\nuse Test::More tests => 3;\n\nok(1, 'before');\ndie \"oops\\n\";\n",
    ),
];

#[test]
fn prove_and_perl_tap_parse_to_numbered_points() {
    if version_of("prove", "prove", &["--version"]).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), PERL_FILES);
    let math = [
        ("1 adds", Passed),
        ("2 subtracts", Failed),
        ("3", Skipped),
        // An expected failure (`not ok … # TODO`) is skipped; `\#` is unescaped.
        ("4 known bug # with a hash", Skipped),
        ("5 nested", Failed),
        ("5 nested > 1 inner passes", Passed),
        ("5 nested > 2 inner fails", Failed),
        ("6", Passed),
    ];

    // One TAP stream, as the test file prints it.
    let (green, output) = run_check(dir.path(), "perl t/math.t", &[]);
    assert!(!green);
    assert_parsed("perl t/math.t", &output, Format::Tap, &math);

    // `prove -v` over three files: ids prefixed by file; the planned tests a dying script
    // never reported fail by number.
    let (green, output) = run_check(dir.path(), "prove -v t/", &[]);
    assert!(!green);
    let mut want: Vec<(String, TestState)> = math
        .iter()
        .map(|(id, s)| (format!("t/math.t::{id}"), *s))
        .collect();
    for (id, state) in [
        ("t/dies.t::1 before", Passed),
        ("t/dies.t::2", Failed),
        ("t/dies.t::3", Failed),
        ("t/other.t::1 first", Passed),
        ("t/other.t::2 second", Passed),
    ] {
        want.push((id.to_owned(), state));
    }
    let want: Vec<(&str, TestState)> = want.iter().map(|(id, s)| (id.as_str(), *s)).collect();
    let results = assert_parsed("prove -v", &output, Format::Tap, &want);
    assert_eq!(results.failing_set().len(), 5);
}

#[test]
fn node_test_runner_tap_parses_with_subtests() {
    let Some(version) = version_of("node", "node", &["--version"]) else {
        return;
    };
    // `--test-reporter` and this TAP shape: node 20 and later.
    let major = version.trim_start_matches('v').split('.').next();
    if major
        .and_then(|m| m.parse::<u32>().ok())
        .is_none_or(|m| m < 20)
    {
        eprintln!("skipped: node {version} is older than 20");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[(
            "test/calc.test.js",
            r#"const test = require('node:test');
const assert = require('node:assert');

test('adds', () => {
  assert.strictEqual(1 + 1, 2);
});

test('subtracts', () => {
  assert.strictEqual(3 - 1, 4);
});

test('skipped', { skip: 'not today' }, () => {});

test('todo', { todo: 'later' }, () => {
  assert.fail('not yet');
});

test('group', async (t) => {
  await t.test('inner passes', () => {});
  await t.test('inner fails', () => {
    throw new Error('boom');
  });
});
"#,
        )],
    );
    let (green, output) = run_check(
        dir.path(),
        "node --test --test-reporter=tap",
        &[("NO_COLOR", "1".to_owned())],
    );
    assert!(!green);
    assert_parsed(
        "node --test",
        &output,
        Format::Tap,
        &[
            ("1 adds", Passed),
            ("2 subtracts", Failed),
            ("3 skipped", Skipped),
            ("4 todo", Skipped),
            ("5 group", Failed),
            ("5 group > 1 inner passes", Passed),
            ("5 group > 2 inner fails", Failed),
        ],
    );
}
