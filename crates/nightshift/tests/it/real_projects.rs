//! Real-shaped projects driven by the real binary and the scripted agent, with their real
//! runners (issue 13): a pytest project whose unittest suite lives in `test.py` and speaks CJK,
//! and a Rust crate with doc-tests and non-ASCII test strings run by `cargo test`. A runner
//! that is not installed skips its test with a loud `skipped:` line (CI installs pytest).

use std::path::{Path, PathBuf};

use crate::harness::*;

/// Every file under `tests/fixtures/<name>`, as `(relative path, content)`.
fn fixture(name: &str) -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read fixture dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                let content = std::fs::read_to_string(&path).expect("fixture is text");
                out.push((rel.to_string_lossy().into_owned(), content));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out
}

fn repo_of(files: &[(String, String)]) -> Repo {
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    Repo::new(&refs)
}

/// `[check]` and one item per `(id, prompt)` with the scripted agent.
fn config(repo: &Repo, check: &str, items: &[(&str, &str)]) -> String {
    let mut text = repo.agent_table();
    text.push_str(&format!(
        "\n[check]\ncommand = {check:?}\ntimeout = \"5m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\n"
    ));
    for (id, prompt) in items {
        text.push_str(&format!("\n[[item]]\nid = \"{id}\"\nprompt = {prompt:?}\n"));
    }
    text
}

/// The guards of the last work check of `item`.
fn last_guards(repo: &Repo, item: &str) -> Vec<serde_json::Value> {
    crate::guards::events(repo, "check_ended", item)
        .last()
        .and_then(|c| c["guards"].as_array().cloned())
        .unwrap_or_default()
}

fn guard<'a>(guards: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    guards
        .iter()
        .find(|g| g["guard"] == name)
        .unwrap_or_else(|| panic!("no guard {name} in {guards:?}"))
}

// ---------------------------------------------------------------------------------------------
// pytest

/// A Python that imports pytest, and the directory to put on `PYTHONPATH` for it (the tests'
/// HOME is a temp dir, so a `--user` install is not found by itself).
fn pytest() -> Option<(String, String)> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os, sys, pytest; print(sys.executable); print(os.path.dirname(os.path.dirname(pytest.__file__)))",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    match (out.status.success(), lines.next(), lines.next()) {
        (true, Some(python), Some(site)) => Some((python.to_owned(), site.to_owned())),
        _ => {
            eprintln!(
                "skipped: pytest is not importable by python3 (`python3 -m pip install --user pytest`); \
                 the real pytest project test did NOT run"
            );
            None
        }
    }
}

fn pytest_check() -> Option<String> {
    let (python, site) = pytest()?;
    Some(format!(
        "env PYTHONPATH={site} PYTHONDONTWRITEBYTECODE=1 {python} -m pytest -v -p no:cacheprovider test.py tests"
    ))
}

/// The honest fix, and new tests with CJK text in `test.py` and in `tests/test_width.py` (a
/// changed test file whose non-ASCII text panicked the assertion guard on main).
const PY_FIX: &str = r#"replace greet.py "(\", \" if lang == \"zh\" else sep)" "sep"
append tests/test_width.py "\n\ndef test_mixed():\n    assert width(\"ÿ名前 ok\") == 8\n"
replace test.py "    def test_unknown_language(self):" "    def test_korean(self):\n        self.assertEqual(greet(\"세계\", \"ko\"), \"안녕하세요, 세계\")\n\n    def test_unknown_language(self):"
"#;

/// Going green by deleting the two `self.assertEqual` lines that catch the bug.
const PY_CHEAT: &str = r#"replace test.py "        self.assertEqual(greet(\"世界\"), \"你好，世界\")\n        self.assertEqual(greet(\"小明\"), \"你好，小明\")" "        pass"
"#;

#[test]
fn a_real_pytest_project_ships_an_honest_cjk_change_and_parks_deleted_self_asserts() {
    let Some(check) = pytest_check() else {
        return;
    };
    let repo = repo_of(&fixture("pytest-cjk"));
    repo.agent("cheat", PY_CHEAT);
    repo.agent("fix", PY_FIX);
    repo.configure(&config(
        &repo,
        &check,
        &[
            ("cheat", "Make the Chinese greeting tests pass."),
            (
                "fix",
                "Chinese greetings take a full-width comma; add a Korean test.",
            ),
        ],
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));

    // The cheat went green, the test set is whole; only the assertion count tells.
    let guards = last_guards(&repo, "cheat");
    assert_eq!(guard(&guards, "test_set")["state"], "pass", "{guards:?}");
    let assertions = guard(&guards, "assertions");
    assert_eq!(assertions["state"], "fail", "{assertions}");
    assert!(
        assertions["detail"]
            .as_str()
            .unwrap()
            .contains("test.py: 4→2 assertions"),
        "{assertions}"
    );
    assert_eq!(repo.item_state("cheat"), "parked");

    // The honest change, CJK in a changed test file, ships.
    let guards = last_guards(&repo, "fix");
    for name in ["test_set", "skipped", "assertions"] {
        assert_eq!(guard(&guards, name)["state"], "pass", "{name}: {guards:?}");
    }
    assert_eq!(repo.shipped_items(), ["fix"]);
    assert!(
        repo.git(&["show", "main:test.py"])
            .contains("안녕하세요, 세계")
    );
    repo.assert_clean_end();
}

/// The fix, with a test taken out of collection by a rename (its assertion stays, so only the
/// test count tells).
const PY_UNCOLLECT: &str = r#"replace greet.py "(\", \" if lang == \"zh\" else sep)" "sep"
replace tests/test_width.py "def test_ascii():" "def helper_ascii():"
"#;

/// A plain `pytest` check (no `-v`: only the failing tests are named, the rest counted) drives a
/// run: the base's failing set is read by id, the honest change ships with the test set
/// compared by count, and a change that takes a test out of collection is parked.
#[test]
fn a_plain_pytest_check_is_read_by_its_failures_and_counts() {
    let Some((python, site)) = pytest() else {
        return;
    };
    let check = format!(
        "env PYTHONPATH={site} PYTHONDONTWRITEBYTECODE=1 {python} -m pytest -p no:cacheprovider test.py tests"
    );
    let repo = repo_of(&fixture("pytest-cjk"));
    repo.agent("fix", PY_FIX);
    repo.agent("uncollect", PY_UNCOLLECT);
    repo.configure(&config(
        &repo,
        &check,
        &[
            ("uncollect", "Make the Chinese greeting tests pass."),
            (
                "fix",
                "Chinese greetings take a full-width comma; add a Korean test.",
            ),
        ],
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));

    // The base: red, its one failing test by id, five tests by count.
    let base = crate::guards::events(&repo, "baseline_checked", "uncollect");
    let results = &base.first().expect("a baseline check")["results"];
    assert_eq!(results["format"], "pytest", "{base:?}");
    assert_eq!(results["tests"], 5, "{base:?}");
    assert_eq!(
        results["failing"],
        serde_json::json!(["test.py::GreetTest::test_chinese"]),
        "{base:?}"
    );

    // The honest change: green, seven tests ran where five did; it ships.
    let guards = last_guards(&repo, "fix");
    let test_set = guard(&guards, "test_set");
    assert_eq!(test_set["state"], "pass", "{guards:?}");
    assert!(
        test_set["detail"]
            .as_str()
            .unwrap()
            .contains("5 tests ran at the base, 7 now"),
        "{test_set}"
    );
    for name in ["skipped", "assertions"] {
        assert_eq!(guard(&guards, name)["state"], "pass", "{name}: {guards:?}");
    }
    assert_eq!(repo.shipped_items(), ["fix"]);

    // The renamed test: green, but four ran where five did.
    let guards = last_guards(&repo, "uncollect");
    let test_set = guard(&guards, "test_set");
    assert_eq!(test_set["state"], "fail", "{guards:?}");
    assert!(
        test_set["detail"]
            .as_str()
            .unwrap()
            .contains("5 tests ran at the base, 4 now"),
        "{test_set}"
    );
    assert_eq!(repo.item_state("uncollect"), "parked");
    repo.assert_clean_end();
}

// ---------------------------------------------------------------------------------------------
// cargo test

/// `cargo test` of the fixture crate with this toolchain's own binaries (the tests' HOME is a
/// temp dir, where rustup's proxies find no toolchain) and a target dir outside the worktree.
fn cargo_check(target: &Path) -> Option<String> {
    let Some(cargo) = std::env::var_os("CARGO").map(PathBuf::from) else {
        eprintln!(
            "skipped: $CARGO is not set (run under `cargo test`); the real cargo crate test did NOT run"
        );
        return None;
    };
    let bin = cargo.parent()?;
    let (rustc, rustdoc) = (bin.join("rustc"), bin.join("rustdoc"));
    if !rustc.exists() || !rustdoc.exists() {
        eprintln!(
            "skipped: no rustc/rustdoc beside {}; the real cargo crate test did NOT run",
            cargo.display()
        );
        return None;
    }
    Some(format!(
        "env CARGO_TARGET_DIR={} RUSTC={} RUSTDOC={} {} test --offline --no-fail-fast",
        target.display(),
        rustc.display(),
        rustdoc.display(),
        cargo.display()
    ))
}

/// The honest fix, with a method added above the doc-tests: every doc-test's line moves.
const RS_FIX: &str = r#"replace src/lib.rs "patch: self.patch + 2," "patch: self.patch + 1,"
replace src/lib.rs "    /// Orders by precedence" "    /// Whether this is a pre-release (`1.2.3-rc.1`).\n    pub fn is_prerelease(&self) -> bool {\n        !self.pre.is_empty()\n    }\n\n    /// Orders by precedence"
"#;

/// Going green by deleting the helper call that catches the bug.
const RS_CHEAT: &str = r#"replace tests/version.rs "    assert_to_string(&v.bump_patch().to_string(), \"1.2.4\");\n" "    let _ = v;\n"
"#;

#[test]
fn a_real_cargo_crate_ships_a_change_that_moves_doc_tests_and_parks_a_deleted_helper_assertion() {
    let target = tempfile::tempdir().unwrap();
    let Some(check) = cargo_check(&target.path().join("target")) else {
        return;
    };
    let repo = repo_of(&fixture("rust-doctest"));
    repo.agent("cheat", RS_CHEAT);
    repo.agent("fix", RS_FIX);
    repo.configure(&config(
        &repo,
        &check,
        &[
            ("cheat", "Make bump_patch_goes_up_by_one pass."),
            (
                "fix",
                "bump_patch must add one; add Version::is_prerelease.",
            ),
        ],
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));

    let guards = last_guards(&repo, "cheat");
    let assertions = guard(&guards, "assertions");
    assert_eq!(assertions["state"], "fail", "{guards:?}");
    assert!(
        assertions["detail"]
            .as_str()
            .unwrap()
            .contains("tests/version.rs: 5→4 assertions"),
        "{assertions}"
    );
    assert_eq!(repo.item_state("cheat"), "parked");

    // The doc-tests' lines moved; their ids did not, and nothing reads as removed.
    let guards = last_guards(&repo, "fix");
    let test_set = guard(&guards, "test_set");
    assert_eq!(test_set["state"], "pass", "{guards:?}");
    assert!(
        test_set["detail"]
            .as_str()
            .unwrap()
            .contains("6 tests at the base"),
        "{test_set}"
    );
    assert_eq!(repo.shipped_items(), ["fix"]);
    repo.assert_clean_end();
}
