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
