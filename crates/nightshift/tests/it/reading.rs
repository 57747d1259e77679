//! The reading commands: `status --json` (a versioned, pinned shape) and `log --json`.

use crate::harness::*;

/// `status --json` with the values that differ between runs replaced by placeholders.
fn normalized_status(repo: &Repo) -> serde_json::Value {
    let mut v = repo.status_json();
    let run = &mut v["run"];
    for key in ["id", "base", "started_at", "finished_at"] {
        run[key] = serde_json::Value::String(format!("<{key}>"));
    }
    if let Some(items) = v["items"].as_array_mut() {
        for item in items {
            if item["commit"].is_string() {
                item["commit"] = "<commit>".into();
            }
        }
    }
    v
}

#[test]
fn status_json_shape_is_pinned() {
    let repo = Repo::new(&project());
    repo.agent("ok-item", &solves("ok-item"));
    repo.agent("bad-item", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["ok-item", "bad-item"], 1, 1));
    assert_eq!(repo.run(&["run"]).status.code(), Some(11));
    insta::assert_json_snapshot!(normalized_status(&repo));
}

#[test]
fn status_before_any_run_says_so() {
    let repo = Repo::new(&project());
    let v = repo.status_json();
    assert_eq!(v["version"], 1);
    assert!(v["run"].is_null());
    assert_eq!(v["items"], serde_json::json!([]));
}

#[test]
fn log_json_is_one_versioned_event_per_line_in_journal_order() {
    let repo = Repo::new(&project());
    repo.agent("one", &solves("one"));
    repo.configure(&plan(&repo, &["one"], 1, 1));
    assert_eq!(repo.run(&["run"]).status.code(), Some(10));
    let out = repo.run(&["log", "--json"]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "control_plane_pinned",
            "attempt_started",
            "worktree_ready",
            "baseline_checked",
            "session_started",
            "session_ended",
            "committed",
            "check_started",
            "check_ended",
            "merge_prepared",
            "integrate_intended",
            "integrated",
            "preserved",
            "worktree_removed",
            "run_finished"
        ]
    );
    assert!(lines.iter().all(|l| l["version"] == 1));
    let seqs: Vec<i64> = lines.iter().map(|l| l["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    // `log -f` on a finished run prints it and returns.
    let follow = repo.run(&["log", "-f", "--json"]);
    assert_eq!(follow.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&follow.stdout).lines().count(),
        lines.len()
    );
}

#[test]
fn init_writes_a_config_that_parses_and_ignores_the_state_dir() {
    let repo = Repo::new(&project());
    let out = repo.run(&["init"]);
    assert!(out.status.success(), "{}", text(&out));
    let text_ = std::fs::read_to_string(repo.root.join("nightshift.toml")).unwrap();
    assert!(nightshift_core::config::parse(&text_, "nightshift.toml").is_ok());
    // `.nightshift/` is ignored through .git/info/exclude: no tracked file is touched, so the
    // checkout stays clean and integration is never held up by init's own edit.
    assert!(!repo.root.join(".gitignore").exists());
    assert!(
        std::fs::read_to_string(repo.root.join(".git/info/exclude"))
            .unwrap()
            .contains("/.nightshift/")
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "?? nightshift.toml\n");
    let again = repo.run(&["init"]);
    assert_eq!(
        again.status.code(),
        Some(20),
        "init does not overwrite without --force"
    );
}

#[test]
fn log_follow_streams_a_live_run_and_returns_when_it_finishes() {
    use std::io::BufRead;
    let repo = Repo::new(&project());
    let agent = HeldAgent::configure(&repo, "live");
    let mut run = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    agent.wait_started();

    // The run is mid-session: follow it.
    let mut follow = repo
        .cmd(&["log", "-f", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap();
        seen.push(v["kind"].as_str().unwrap().to_owned());
        if seen.last().map(String::as_str) == Some("session_started") {
            break;
        }
    }
    // Only now let the session end: everything after this point is followed live.
    agent.release();
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(&l.unwrap()).unwrap();
        seen.push(v["kind"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        follow.wait().unwrap().code(),
        Some(0),
        "log -f returns when the run finishes"
    );
    assert_eq!(run.wait().unwrap().code(), Some(10));
    assert_eq!(seen.first().map(String::as_str), Some("run_started"));
    assert_eq!(
        seen.last().map(String::as_str),
        Some("run_finished"),
        "{seen:?}"
    );
    assert!(seen.contains(&"integrated".to_owned()), "{seen:?}");
}

#[test]
fn the_readme_config_example_is_valid() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let block = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README has a toml example");
    let config = nightshift_core::config::parse(block, "README.md");
    assert!(config.is_ok(), "{:?}", config.err());
}
