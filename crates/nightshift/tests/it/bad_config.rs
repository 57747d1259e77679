//! Bad input gets a located diagnostic, exit 20, and nothing is written.

use crate::harness::*;

fn assert_rejected(config: &str, location: &str, words: &str) {
    let repo = Repo::new(&project());
    repo.agent("default", NEVER_SOLVES);
    repo.configure(config);
    let out = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(
        stderr.contains(&format!("nightshift.toml:{location}")),
        "expected {location} in: {stderr}"
    );
    assert!(stderr.contains(words), "expected {words:?} in: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
    assert!(
        !repo.root.join(".nightshift").exists(),
        "nothing may be written to .nightshift/"
    );
}

const AGENT: &str = "[agent]\nkind = \"command\"\ncommand = [\"true\"]\n";

#[test]
fn an_unknown_key_is_located() {
    assert_rejected(
        &format!(
            "{AGENT}[check]\ncommand = \"true\"\ntimout = \"5m\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n"
        ),
        "6:1",
        "timout",
    );
}

#[test]
fn a_bad_duration_is_located() {
    assert_rejected(
        &format!(
            "{AGENT}[check]\ncommand = \"true\"\ntimeout = \"ten minutes\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n"
        ),
        "6:11",
        "duration",
    );
}

#[test]
fn no_check_anywhere_is_located_at_the_item() {
    assert_rejected(
        &format!("{AGENT}\n[[item]]\nid = \"a\"\nprompt = \"p\"\n"),
        "5:1",
        "check",
    );
}

#[test]
fn an_item_without_a_prompt_is_located() {
    assert_rejected(
        &format!("{AGENT}[check]\ncommand = \"true\"\n\n[[item]]\nid = \"a\"\n"),
        "7:1",
        "prompt",
    );
}

#[test]
fn a_bad_flag_exits_20() {
    let repo = Repo::new(&project());
    let out = repo.run(&["run", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
}

#[test]
fn outside_a_repository_is_workspace_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .args(["run"])
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("workspace_invalid"));
}
