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
