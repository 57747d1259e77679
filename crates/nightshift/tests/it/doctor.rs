//! `nightshift doctor`: every precondition a gate; failing safety and product findings give
//! their halt reason's exit code, and `run` refuses to start on them.

use crate::harness::*;

/// A small shell project whose check really tests its code.
fn good_project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "a calculator\n"),
        (
            "calc.sh",
            "add() { echo $(( $1 + $2 )); }\nis_big() { [ \"$1\" -gt 100 ]; }\n",
        ),
        (
            "check.sh",
            "#!/bin/sh\n. ./calc.sh\n[ \"$(add 2 3)\" = 5 ] || { echo 'FAIL add'; exit 1; }\nis_big 1000 || { echo 'FAIL is_big'; exit 1; }\necho ok\n",
        ),
    ]
}

fn config(repo: &Repo, check: &str) -> String {
    format!(
        "{}\n[check]\ncommand = \"{check}\"\ntimeout = \"1m\"\n\n[[item]]\nid = \"a\"\nprompt = \"Do a.\"\n",
        repo.agent_table()
    )
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

fn finding<'a>(json: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    json["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == name))
        .unwrap_or_else(|| panic!("no finding {name} in {json}"))
}

#[test]
fn a_good_repository_is_ready_and_its_checkout_untouched() {
    let repo = Repo::new(&good_project());
    repo.configure(&config(&repo, "sh check.sh"));
    let out = repo.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["version"], 1);
    assert!(j["halt_reason"].is_null());
    for name in [
        "agent",
        "git_repository",
        "git_target",
        "git_locks",
        "git_operation",
        "check_runs",
        "determinism",
        "adequacy",
        "notify",
    ] {
        assert_eq!(finding(&j, name)["status"], "ok", "{name}: {j}");
    }
    // The fake agent inside the nightshift binary is a found agent, with its version.
    assert!(
        finding(&j, "agent")["detail"]
            .as_str()
            .unwrap()
            .contains("nightshift"),
        "{j}"
    );
    assert!(
        finding(&j, "adequacy")["detail"]
            .as_str()
            .unwrap()
            .contains("calc.sh"),
        "{j}"
    );
    assert_eq!(finding(&j, "notify")["class"], "process");
    assert!(repo.extra_worktrees().is_empty());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // Human output: one line per finding and the verdict.
    let out = repo.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ready for an unattended run"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_check_that_is_always_green_is_inadequate_15() {
    let repo = Repo::new(&good_project());
    repo.configure(&config(&repo, "true"));
    let out = repo.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(15), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["halt_reason"], "check_inadequate");
    let f = finding(&j, "adequacy");
    assert_eq!(f["status"], "fail");
    assert_eq!(f["class"], "product");
    assert_eq!(f["halt"], "check_inadequate");
    assert!(f["detail"].as_str().unwrap().contains("calc.sh"), "{j}");
    // The mutant never reached the user's files.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert!(repo.extra_worktrees().is_empty());
}

#[test]
fn the_adequacy_gate_in_log_mode_warns_instead_of_refusing() {
    let repo = Repo::new(&good_project());
    repo.configure(&format!(
        "{}\n[gates]\nadequacy = \"log\"\n",
        config(&repo, "true")
    ));
    let out = repo.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    let f = finding(&j, "adequacy");
    assert_eq!(f["status"], "warn", "{f}");
    assert!(f["halt"].is_null(), "{f}");
    assert!(
        f["detail"].as_str().unwrap().contains("[gates] adequacy"),
        "{f}"
    );
}

#[test]
fn a_missing_agent_binary_is_an_execution_failure_40_and_run_refuses_to_start() {
    let repo = Repo::new(&good_project());
    repo.configure(&config(&repo, "sh check.sh").replace(
        &repo.agent_table(),
        "[agent]\nkind = \"command\"\ncommand = [\"no-such-agent-xyz\", \"-p\"]\n",
    ));
    let out = repo.run(&["doctor", "--quick", "--json"]);
    assert_eq!(out.status.code(), Some(40), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["halt_reason"], "execution_failure");
    assert_eq!(finding(&j, "agent")["class"], "safety");
    // --quick runs no check.
    assert!(
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["name"] != "adequacy")
    );

    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(40), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("execution_failure") && err.contains("(doctor: agent)"),
        "{}",
        text(&out)
    );
    assert!(!repo.root.join(".nightshift/state.db").exists());
}

#[test]
fn a_check_that_disagrees_with_itself_is_flaky_14() {
    let repo = Repo::new(&good_project());
    let counter = repo.agent_dir.join("count");
    let check = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $((n % 2)) -eq 0 ]",
        c = counter.display()
    );
    repo.configure(&config(&repo, &check));
    let out = repo.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(14), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["halt_reason"], "check_flaky");
    let f = finding(&j, "determinism");
    assert_eq!(f["status"], "fail");
    assert_eq!(f["class"], "product");
}

#[test]
fn a_check_that_cannot_start_is_40_and_red_at_head_only_warns() {
    let repo = Repo::new(&good_project());
    repo.configure(&config(&repo, "sh check.sh"));
    let out = repo.run(&["doctor", "--json", "--check", "no-such-test-runner-xyz"]);
    assert_eq!(out.status.code(), Some(40), "{}", text(&out));
    assert_eq!(
        finding(&json(&out), "check_runs")["halt"],
        "execution_failure"
    );

    // Red at HEAD: the plan's items are there to make it green.
    let out = repo.run(&["doctor", "--json", "--check", "sh check.sh && false"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    assert_eq!(finding(&j, "check_runs")["status"], "warn");
    assert_eq!(finding(&j, "adequacy")["status"], "warn");
}

#[test]
fn git_states_that_block_a_run_are_workspace_invalid_30() {
    let repo = Repo::new(&good_project());
    repo.configure(&config(&repo, "sh check.sh"));

    // A stale ref lock.
    let lock = repo.root.join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    let out = repo.run(&["doctor", "--quick", "--json"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["halt_reason"], "workspace_invalid");
    assert_eq!(finding(&j, "git_locks")["status"], "fail");
    std::fs::remove_file(&lock).unwrap();

    // Detached HEAD and no [integrate] target.
    let head = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "-q", "--detach", head.trim()]);
    let out = repo.run(&["doctor", "--quick", "--json"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    assert_eq!(finding(&json(&out), "git_target")["status"], "fail");
    repo.git(&["checkout", "-q", "main"]);

    // A merge stopped on a conflict in the user's checkout: run refuses before anything.
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write("README.md", "theirs\n");
    repo.git(&["commit", "-qam", "theirs"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.write("README.md", "ours\n");
    repo.git(&["commit", "-qam", "ours"]);
    let mut git = std::process::Command::new("git");
    git.current_dir(&repo.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .args(["merge", "-q", "other"]);
    let merged = git.output().unwrap();
    assert!(!merged.status.success(), "the merge was meant to conflict");
    let out = repo.run(&["doctor", "--quick", "--json"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    let f = finding(&json(&out), "git_operation").clone();
    assert_eq!(f["status"], "fail");
    assert!(f["detail"].as_str().unwrap().contains("a merge"), "{f}");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("workspace_invalid"),
        "{}",
        text(&out)
    );
}

#[test]
fn doctor_json_shape_is_pinned() {
    let repo = Repo::new(&good_project());
    let out = repo.run(&["doctor", "--json-schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema");
    insta::assert_json_snapshot!(schema);
}

#[test]
fn doctor_names_an_inert_desktop_channel_on_a_machine_without_a_dbus_session() {
    let repo = Repo::new(&good_project());
    // The harness clears the environment: no DBUS_SESSION_BUS_ADDRESS, no XDG_RUNTIME_DIR.
    repo.configure(&format!(
        "{}\n[notify]\ndesktop = true\n",
        config(&repo, "sh check.sh")
    ));
    let out = repo.run(&["doctor", "--quick", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "an inert channel warns, it does not refuse: {}",
        text(&out)
    );
    let j = json(&out);
    let desktop = finding(&j, "notify:desktop");
    assert_eq!(desktop["status"], "warn", "{desktop}");
    assert_eq!(desktop["class"], "process", "{desktop}");
    let detail = desktop["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("inert: ") && detail.contains("D-Bus"),
        "{detail}"
    );
    assert_eq!(
        finding(&j, "notify")["status"],
        "ok",
        "ATTENTION always works"
    );
    // The human form says it too.
    let human = repo.run(&["doctor", "--quick"]);
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("notify:desktop"),
        "{}",
        text(&human)
    );
}

#[test]
fn doctor_warns_on_a_dirty_checkout_and_an_unedited_init_template() {
    let repo = Repo::new(&good_project());
    repo.configure(&config(&repo, "sh check.sh"));
    repo.write("README.md", "an edit in progress\n");
    let out = repo.run(&["doctor", "--quick", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    let dirty = finding(&j, "git_checkout");
    assert_eq!(dirty["status"], "warn", "{j}");
    assert!(
        dirty["detail"].as_str().unwrap().contains("README.md"),
        "{j}"
    );
    assert!(
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["name"] != "config_template")
    );
    // `nightshift init`'s file, unedited: said, even by the quick doctor `run` does.
    repo.git(&["checkout", "--", "README.md"]);
    let out = repo.run(&["init", "--force"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = repo.run(&["doctor", "--quick", "--json"]);
    let j = json(&out);
    assert_eq!(
        finding(&j, "git_checkout")["status"],
        "warn",
        "nightshift.toml is edited: {j}"
    );
    let template = finding(&j, "config_template");
    assert_eq!(template["status"], "warn", "{j}");
    let detail = template["detail"].as_str().unwrap();
    for part in ["[agent] command", "[check] command", "example [[item]]"] {
        assert!(detail.contains(part), "{detail}");
    }
}

#[test]
fn a_check_that_runs_zero_tests_is_inadequate_15_even_when_a_mutant_breaks_its_build() {
    // The "build" (sourcing calc.sh, using it) breaks on a mutant, so the check goes red; but
    // the runner it reports from ran no test at all, which the canary used to call adequate.
    let mut files = good_project();
    files.retain(|(path, _)| *path != "check.sh");
    files.push((
        "check.sh",
        "#!/bin/sh\n. ./calc.sh\n[ \"$(add 2 3)\" = 5 ] || exit 1\nprintf 'running 0 tests\\n\\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\\n\\n'\n",
    ));
    let repo = Repo::new(&files);
    repo.configure(&config(&repo, "sh check.sh"));
    let out = repo.run(&["doctor", "--json", "--runs", "1"]);
    assert_eq!(out.status.code(), Some(15), "{}", text(&out));
    let j = json(&out);
    let adequacy = finding(&j, "adequacy");
    assert_eq!(adequacy["status"], "fail", "{j}");
    assert!(
        adequacy["detail"].as_str().unwrap().contains("ran 0 tests"),
        "{j}"
    );
}

#[test]
fn a_mutant_caught_only_by_the_check_timeout_is_reported_and_progress_is_shown() {
    // The check waits for the right answer: a mutant of add() makes it spin until the timeout.
    let files = vec![
        ("README.md", "a calculator\n"),
        ("calc.sh", "add() { echo $(( $1 + $2 )); }\n"),
        (
            "check.sh",
            "#!/bin/sh\n. ./calc.sh\nwhile [ \"$(add 2 3)\" != 5 ]; do sleep 0.1; done\necho ok\n",
        ),
    ];
    let repo = Repo::new(&files);
    let config = config(&repo, "sh check.sh").replace("timeout = \"1m\"", "timeout = \"2s\"");
    repo.configure(&config);
    let out = repo.run(&["doctor", "--runs", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("caught only by [check] timeout (2s)")
            && stdout.contains("lower [check] timeout"),
        "{}",
        text(&out)
    );
    // Not a terminal: plain progress lines on stderr, counting the check runs.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("doctor: 0/4 check runs done · the check at HEAD"),
        "{}",
        text(&out)
    );
}
