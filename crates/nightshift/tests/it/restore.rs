//! `nightshift restore`: an attempt's kept work — its commits, modified and untracked files —
//! comes back as a branch.

use crate::harness::*;

#[test]
fn restore_brings_back_commits_modified_and_untracked_files_of_a_parked_attempt() {
    let repo = Repo::new(&project());
    // The agent commits something itself, then leaves a modification and an untracked file.
    let agent = "echo committed > own.txt && git add own.txt && git commit -q -m 'agent commit' && echo modified >> README.md && echo untracked > loose.txt";
    let config = plan(&repo, &["lost"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nightshift restore lost"),
        "{}",
        text(&out)
    );

    // Two attempts (one, then the parked pass): the latest is restored by default.
    let out = repo.run(&["restore", "lost"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("restored/lost/2"),
        "{}",
        text(&out)
    );
    let branch = "restored/lost/2";
    assert_eq!(
        repo.git(&["show", &format!("{branch}:own.txt")]),
        "committed\n"
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:README.md")]),
        "a project\nmodified\n"
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:loose.txt")]),
        "untracked\n"
    );
    assert!(
        repo.git(&["log", "--format=%s", branch])
            .contains("agent commit")
    );

    let out = repo.run(&["restore", "lost", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    repo.git(&["rev-parse", "--verify", "restored/lost/1"]);
    // Idempotent: the same restore again is fine.
    assert!(repo.run(&["restore", "lost", "1"]).status.success());
}

#[test]
fn restore_of_unknown_work_says_what_is_kept() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    assert_eq!(repo.run(&["run"]).status.code(), Some(10));
    let out = repo.run(&["restore", "nope"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("items with kept work: a"),
        "{}",
        text(&out)
    );
    let out = repo.run(&["restore", "a", "7"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("kept attempts: 1"),
        "{}",
        text(&out)
    );
}

#[test]
fn clean_removes_only_what_holds_no_unique_work() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["a", "b"], 1, 1));
    assert_eq!(repo.run(&["run"]).status.code(), Some(11));
    let refs = || repo.git(&["for-each-ref", "--format=%(refname)", "refs/nightshift/"]);
    let before = refs();
    assert!(
        before.contains("preserve/a/1")
            && before.contains("preserve/b/1")
            && before.contains("preserve/b/2")
    );

    let dry = repo.run(&["clean", "--dry-run", "--older-than", "1ms"]);
    let out = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        out.contains("would remove ref    refs/nightshift/preserve/a/1"),
        "{out}"
    );
    assert!(
        out.contains("keep          refs/nightshift/preserve/b/1"),
        "{out}"
    );
    assert!(
        out.contains("would remove dir"),
        "old logs are listed: {out}"
    );
    assert_eq!(refs(), before, "a dry run changes nothing");

    let real = repo.run(&["clean", "--older-than", "1ms"]);
    assert!(real.status.success(), "{}", text(&real));
    let after = refs();
    assert!(!after.contains("preserve/a/1"), "{after}");
    assert!(
        after.contains("preserve/b/1") && after.contains("preserve/b/2"),
        "{after}"
    );
    assert!(
        !repo
            .root
            .join(".nightshift/logs")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "old logs removed"
    );
    assert!(
        repo.run(&["restore", "b", "1"]).status.success(),
        "unshipped work is still restorable"
    );
    assert_eq!(repo.shipped_items(), ["a"]);
}

#[test]
fn stop_preserves_the_work_in_flight_and_run_resumes_it() {
    use std::io::{Read, Write};
    let repo = Repo::new(&project());
    let ready = repo.agent_dir.join("ready");
    let release = repo.agent_dir.join("release");
    for fifo in [&ready, &release] {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    // The agent leaves work in the tree, says it is running, and waits to be let go.
    let agent = format!(
        "echo partial >> work.txt; echo started > {}; read line < {}; mkdir -p done; echo ok > done/s",
        ready.display(),
        release.display()
    );
    let config = plan(&repo, &["s"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    let wait_started = || {
        let mut line = String::new();
        std::fs::File::open(&ready)
            .unwrap()
            .read_to_string(&mut line)
            .unwrap();
        assert_eq!(line, "started\n");
    };

    let mut run = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_started();
    let stop = repo.run(&["stop"]);
    assert!(stop.status.success(), "{}", text(&stop));
    assert_eq!(run.wait().unwrap().code(), Some(0), "a stop is exit 0");

    // The work in flight is kept and restorable; the run is still open.
    assert_eq!(
        repo.git(&["show", "refs/nightshift/preserve/s/1:work.txt"]),
        "partial\n"
    );
    assert!(repo.run(&["restore", "s"]).status.success());
    assert_eq!(repo.status_json()["run"]["state"], "running");
    let kinds: Vec<String> = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name().to_owned())
        .collect();
    assert!(kinds.contains(&"run_stopped".to_owned()), "{kinds:?}");

    // `run` resumes: the same iteration again, in the same worktree, no attempt spent.
    let mut resumed = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_started();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&release)
        .unwrap()
        .write_all(b"go\n")
        .unwrap();
    assert_eq!(resumed.wait().unwrap().code(), Some(10));
    assert_eq!(repo.shipped_items(), ["s"]);
    assert_eq!(
        repo.git(&["show", "main:work.txt"]),
        "partial\npartial\n",
        "the session went on in the same tree"
    );
    assert_eq!(repo.status_json()["items"][0]["attempts"], 1);
    repo.git(&["branch", "-D", "restored/s/1"]);
    repo.assert_clean_end();
}

/// Each way a session is ended by nightshift keeps its work: commits, modified and untracked
/// files reach the preserve ref, and restore gets them back.
fn assert_kill_path_keeps_work(misbehaviour: &str, limits: &str) {
    let repo = Repo::new(&project());
    let work = "echo committed > own.txt && git add own.txt && git commit -q -m own && echo changed >> README.md && echo loose > loose.txt";
    let config = plan(&repo, &["k"], 1, 1)
        .replacen(
            &repo.agent_table(),
            &format!(
                "[agent]\nkind = \"command\"\nformat = \"claude-stream\"\ncommand = [\"sh\", \"-c\", \"{work} && exec {BIN} __fake-agent --script-dir {dir}\"]\n",
                dir = repo.agent_dir.display()
            ),
            1,
        )
        .replace("[limits]\n", &format!("[limits]\nkill_grace = \"200ms\"\n{limits}"));
    repo.agent("k", misbehaviour);
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(11),
        "{misbehaviour}: {}",
        text(&out)
    );
    let r = "refs/nightshift/preserve/k/1";
    assert_eq!(
        repo.git(&["show", &format!("{r}:own.txt")]),
        "committed\n",
        "{misbehaviour}"
    );
    assert_eq!(
        repo.git(&["show", &format!("{r}:README.md")]),
        "a project\nchanged\n"
    );
    assert_eq!(repo.git(&["show", &format!("{r}:loose.txt")]), "loose\n");
    assert!(repo.run(&["restore", "k", "1"]).status.success());
    assert_eq!(repo.git(&["show", "restored/k/1:loose.txt"]), "loose\n");
}

#[test]
fn a_timeout_kill_keeps_the_work() {
    assert_kill_path_keeps_work("go-silent forever\n", "session_timeout = \"300ms\"\n");
}

#[test]
fn a_stall_kill_keeps_the_work() {
    assert_kill_path_keeps_work(
        "go-silent forever\n",
        "stall_grace = \"200ms\"\nstall_nudges = 0\n",
    );
}

#[test]
fn a_budget_kill_keeps_the_work() {
    assert_kill_path_keeps_work(
        "busy forever usage-per-turn=500 interval=10ms\n",
        "session_tokens = 1000\n",
    );
}

#[test]
fn fresh_after_a_crash_preserves_the_abandoned_attempt_and_restore_recovers_it() {
    use std::os::unix::process::ExitStatusExt;
    let repo = Repo::new(&project());
    // The agent leaves a commit, a modification and an untracked file, then the engine dies.
    let agent = "echo committed > own.txt && git add own.txt && git commit -q -m own && echo changed >> README.md && echo loose > loose.txt && kill -9 $PPID; sleep 600";
    let config = plan(&repo, &["f"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    // The engine alone: `run` would restart it, and this agent would kill it again.
    let out = repo.run(&["engine"]);
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));

    // A fresh run abandons the open attempt: its worktree goes, its work must not.
    let fresh = config.replace(
        "kill -9 $PPID; sleep 600",
        "mkdir -p done && echo ok > done/f",
    );
    repo.write("nightshift.toml", &fresh);
    repo.git(&["commit", "-q", "-am", "agent fixed"]);
    let out = repo.run(&["run", "--fresh"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let r = "refs/nightshift/preserve/f/1";
    assert_eq!(repo.git(&["show", &format!("{r}:own.txt")]), "committed\n");
    assert_eq!(
        repo.git(&["show", &format!("{r}:README.md")]),
        "a project\nchanged\n"
    );
    assert_eq!(repo.git(&["show", &format!("{r}:loose.txt")]), "loose\n");
    assert!(repo.run(&["restore", "f", "1"]).status.success());
    assert_eq!(repo.git(&["show", "restored/f/1:loose.txt"]), "loose\n");
    assert_eq!(repo.shipped_items(), ["f"]);
    repo.git(&["branch", "-D", "restored/f/1"]);
    repo.assert_clean_end();
}
