use super::*;
use std::path::{Path, PathBuf};

fn repo() -> (tempfile::TempDir, Git) {
    let dir = tempfile::tempdir().unwrap();
    let git = Git::new(dir.path());
    let run = |args: &[&str]| {
        plain_git(dir.path(), args);
    };
    std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    run(&["init", "-q", "-b", "main"]);
    run(&["add", "-A"]);
    run(&["commit", "-qm", "init"]);
    (dir, git)
}

/// The attempt clone `x-1` of [`repo`]'s HEAD: the user's git dir, the base, the clone's path.
fn attempt_clone(git: &Git, root: &Path) -> (PathBuf, String, PathBuf) {
    let common = git.common_dir().unwrap();
    let base = git.resolve("HEAD").unwrap().unwrap();
    let path = root.join(".nightshift/worktrees/x-1");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    git.clone_add(&common, &path, "nightshift/x/1", &base)
        .unwrap();
    (common, base, path)
}

/// Plain git in `dir` (no hardening: what an agent or the user runs); its trimmed stdout.
fn plain_git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn snapshot_keeps_untracked_and_modified_not_ignored_and_touches_nothing() {
    let (dir, git) = repo();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "changed\n").unwrap();
    std::fs::write(root.join("new.txt"), "untracked\n").unwrap();
    std::fs::create_dir(root.join("build")).unwrap();
    std::fs::write(root.join("build/big.bin"), "ignored\n").unwrap();
    let status_before = git.run(&["status", "--porcelain"]).unwrap();
    let head = git.resolve("HEAD").unwrap().unwrap();

    let scratch = root.join("scratch.index");
    let snap = git.snapshot("snap", None, &scratch).unwrap();

    assert_eq!(
        git.run(&["show", &format!("{snap}:a.txt")]).unwrap(),
        "changed\n"
    );
    assert_eq!(
        git.run(&["show", &format!("{snap}:new.txt")]).unwrap(),
        "untracked\n"
    );
    assert!(
        git.run(&["show", &format!("{snap}:build/big.bin")])
            .is_err(),
        "ignored files are not preserved"
    );
    assert_eq!(
        git.run(&["rev-parse", &format!("{snap}^")]).unwrap().trim(),
        head
    );
    assert_eq!(
        git.run(&["status", "--porcelain"]).unwrap(),
        status_before,
        "worktree and index untouched"
    );
    assert_eq!(git.resolve("HEAD").unwrap().unwrap(), head);
    assert!(!scratch.exists());
}

#[test]
fn commit_all_is_idempotent() {
    let (dir, git) = repo();
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    let first = git.commit_all("work").unwrap();
    assert_ne!(first, git.resolve("HEAD~1").unwrap().unwrap());
    assert_eq!(
        git.commit_all("work").unwrap(),
        first,
        "nothing left to commit is not an error"
    );
    assert_eq!(
        git.run(&["log", "-1", "--format=%an"]).unwrap().trim(),
        "nightshift"
    );
}

#[test]
fn merge_tree_reports_conflicting_paths_without_touching_a_checkout() {
    let (dir, git) = repo();
    let base = git.resolve("HEAD").unwrap().unwrap();
    std::fs::write(dir.path().join("a.txt"), "ours\n").unwrap();
    let ours = git.commit_all("ours").unwrap();
    git.run(&["checkout", "-q", "--detach", &base]).unwrap();
    std::fs::write(dir.path().join("a.txt"), "theirs\n").unwrap();
    let theirs = git.commit_all("theirs").unwrap();
    let status = git.run(&["status", "--porcelain"]).unwrap();
    match git.merge_tree(&ours, &theirs).unwrap() {
        MergeOutcome::Conflict { paths } => assert_eq!(paths, ["a.txt"]),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(git.run(&["status", "--porcelain"]).unwrap(), status);
}

#[test]
fn cas_ref_moves_only_from_the_expected_value() {
    let (dir, git) = repo();
    let old = git.resolve("HEAD").unwrap().unwrap();
    std::fs::write(dir.path().join("c.txt"), "c\n").unwrap();
    let new = git.commit_all("c").unwrap();
    assert!(
        git.cas_ref("refs/heads/other", &new, &new)
            .unwrap()
            .is_err(),
        "a missing ref is not at `new`"
    );
    git.set_ref("refs/heads/other", &old).unwrap();
    assert!(
        git.cas_ref("refs/heads/other", &new, &new)
            .unwrap()
            .is_err()
    );
    assert!(git.cas_ref("refs/heads/other", &new, &old).unwrap().is_ok());
    assert_eq!(git.resolve("refs/heads/other").unwrap().unwrap(), new);
}

#[test]
fn resolve_ref_reads_loose_and_packed_refs_like_git_does() {
    let (dir, git) = repo();
    let common = git.common_dir().unwrap();
    let first = git.resolve("HEAD").unwrap().unwrap();
    assert_eq!(
        git.resolve_ref(&common, "refs/heads/main").unwrap(),
        Some(first.clone())
    );
    git.run(&["pack-refs", "--all"]).unwrap();
    assert!(!common.join("refs/heads/main").exists());
    assert_eq!(
        git.resolve_ref(&common, "refs/heads/main").unwrap(),
        Some(first.clone()),
        "packed"
    );
    // A newer loose ref shadows the packed one.
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    let second = git.commit_all("b").unwrap();
    assert_eq!(
        git.resolve_ref(&common, "refs/heads/main").unwrap(),
        Some(second)
    );
    assert_eq!(git.resolve_ref(&common, "refs/heads/nope").unwrap(), None);
}

#[test]
fn head_descending_from_tells_built_on_from_rewritten() {
    let (dir, git) = repo();
    let base = git.resolve("HEAD").unwrap().unwrap();
    assert_eq!(
        git.head_descending_from(&base).unwrap(),
        (base.clone(), true),
        "no change"
    );
    std::fs::write(dir.path().join("c.txt"), "c\n").unwrap();
    let on_top = git.commit_all("c").unwrap();
    assert_eq!(
        git.head_descending_from(&base).unwrap(),
        (on_top.clone(), true)
    );
    // From on_top's point of view, a HEAD reset below it does not descend.
    git.run(&["reset", "-q", "--hard", &base]).unwrap();
    assert_eq!(
        git.head_descending_from(&on_top).unwrap(),
        (base.clone(), false)
    );
    std::fs::write(dir.path().join("d.txt"), "d\n").unwrap();
    let sideways = git.commit_all("d").unwrap();
    assert_eq!(
        git.head_descending_from(&on_top).unwrap(),
        (sideways, false)
    );
}

#[test]
fn a_prompt_sized_message_past_the_argument_limit_or_with_a_nul_commits_everywhere() {
    let (dir, git) = repo();
    let root = dir.path();
    // 200 KiB in one argument is past the kernel's 128 KiB per-argument limit (E2BIG).
    let huge = format!(
        "item: big\n\n{}\n\nNightshift-Item: big\n",
        "x".repeat(200 * 1024)
    );
    let nul = "item: nul\n\nbefore\0after\n";
    for message in [huge.as_str(), nul] {
        std::fs::write(root.join("a.txt"), message.len().to_string()).unwrap();
        let head = git.commit_all(message).unwrap();
        let body = git.run(&["log", "-1", "--format=%B", &head]).unwrap();
        assert!(
            body.len() <= message::MAX_MESSAGE_BYTES + 1,
            "{}",
            body.len()
        );
        assert!(!body.contains('\0'));
        let tree = git.tree_of(&head).unwrap();
        let made = git.commit_tree(&tree, &[&head], message).unwrap();
        let snap = git
            .snapshot(message, None, &root.join("scratch.index"))
            .unwrap();
        let replayed = git.replay_commit(&tree, &head, &made).unwrap();
        for commit in [&made, &snap, &replayed] {
            let text = git.run(&["log", "-1", "--format=%B", commit]).unwrap();
            assert_eq!(text.trim_end(), body.trim_end(), "{commit}");
        }
    }
    let huge_body = git.run(&["log", "-1", "--format=%B", "HEAD"]).unwrap();
    assert!(huge_body.contains("beforeafter"), "{huge_body}");
    let first = git.run(&["log", "--format=%B", "-1", "HEAD~1"]).unwrap();
    assert!(
        first.trim_end().ends_with("Nightshift-Item: big"),
        "{first}"
    );
}

/// `git init` (and optionally a commit) in `root/dir`, with `file` in it.
fn nested_repo(root: &std::path::Path, dir: &str, file: &str, commit: bool) {
    let at = root.join(dir);
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(at.join(file), format!("{file} in {dir}\n")).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .current_dir(&at)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{args:?}");
    };
    git(&["init", "-q"]);
    if commit {
        git(&["add", "-A"]);
        git(&["commit", "-qm", "inner"]);
    }
}

#[test]
fn nested_repositories_are_named_and_preserved_as_plain_files() {
    let (dir, git) = repo();
    let root = dir.path();
    nested_repo(root, "fresh", "a.txt", false);
    nested_repo(root, "deep/done", "b.txt", true);
    std::fs::write(root.join("plain.txt"), "plain\n").unwrap();
    assert_eq!(git.nested_repositories().unwrap(), ["deep/done/", "fresh/"]);
    let snap = git
        .snapshot("snap", None, &root.join(".git/scratch.index"))
        .unwrap();
    let tree = git
        .run(&["ls-tree", "-r", "--format=%(objectmode) %(path)", &snap])
        .unwrap();
    assert_eq!(
        tree,
        "100644 .gitignore\n100644 a.txt\n100644 deep/done/b.txt\n100644 fresh/a.txt\n100644 plain.txt\n"
    );
    assert_eq!(
        git.run(&["show", &format!("{snap}:deep/done/b.txt")])
            .unwrap(),
        "b.txt in deep/done\n"
    );
}

#[test]
fn a_committed_gitlink_is_seen_and_its_checkout_preserved_as_files() {
    let (dir, git) = repo();
    let root = dir.path();
    let base = git.resolve("HEAD").unwrap().unwrap();
    nested_repo(root, "sub", "s.txt", true);
    // What an agent's own `git add sub && git commit` does.
    git.run(&["add", "sub"]).unwrap();
    let head = git.commit_all("gitlink").unwrap();
    assert_eq!(git.new_gitlinks(&base, &head).unwrap(), ["sub"]);
    assert_eq!(
        git.new_gitlinks(&base, &base).unwrap(),
        Vec::<String>::new()
    );
    let snap = git
        .snapshot("snap", None, &root.join(".git/scratch.index"))
        .unwrap();
    assert_eq!(
        git.run(&["show", &format!("{snap}:sub/s.txt")]).unwrap(),
        "s.txt in sub\n"
    );
    let modes = git
        .run(&["ls-tree", "-r", "--format=%(objectmode)", &snap])
        .unwrap();
    assert!(!modes.contains("160000"), "{modes}");
}

#[test]
fn tampering_outside_the_checkout_is_found_and_put_back() {
    let (dir, git) = repo();
    let root = dir.path();
    let common = git.common_dir().unwrap();
    let head = git.resolve("HEAD").unwrap().unwrap();
    git.set_ref("refs/nightshift/preserve/x/1", &head).unwrap();
    git.set_ref("refs/heads/nightshift/x/2", &head).unwrap();
    let config = std::fs::read(common.join("config")).unwrap();
    let before = git
        .control_plane(&common, &["refs/heads/nightshift/x/2".to_owned()])
        .unwrap();
    assert_eq!(
        git.tampering_since(
            &before,
            "refs/nightshift/tampered/x/2",
            &root.join("s.index")
        )
        .unwrap(),
        None,
        "nothing changed"
    );
    // What a hostile session does; its own branch moving is not tampering.
    git.run(&["config", "filter.evil.clean", "false"]).unwrap();
    std::fs::write(common.join("hooks/post-commit"), "#!/bin/sh\n").unwrap();
    git.run(&["update-ref", "-d", "refs/nightshift/preserve/x/1"])
        .unwrap();
    let own = git
        .commit_tree(&git.tree_of(&head).unwrap(), &[&head], "own")
        .unwrap();
    git.set_ref("refs/heads/nightshift/x/2", &own).unwrap();
    git.set_ref("refs/heads/main", &own).unwrap();
    std::fs::write(root.join("a.txt"), "agent\n").unwrap();

    let found = git
        .tampering_since(
            &before,
            "refs/nightshift/tampered/x/2",
            &root.join("s.index"),
        )
        .unwrap()
        .expect("tampering found");
    let said = found.changes.join("\n");
    for expect in [
        ".git/config changed",
        ".git/hooks/post-commit added",
        "ref refs/nightshift/preserve/x/1 deleted",
        "ref refs/heads/main moved",
        "checkout: a.txt modified",
    ] {
        assert!(said.contains(expect), "{expect:?} not in {said}");
    }
    assert!(!said.contains("refs/heads/nightshift/x/2"), "{said}");
    assert_eq!(std::fs::read(common.join("config")).unwrap(), config);
    assert!(!common.join("hooks/post-commit").exists());
    assert_eq!(
        git.resolve("refs/nightshift/preserve/x/1").unwrap(),
        Some(head.clone())
    );
    assert_eq!(git.resolve("refs/heads/main").unwrap(), Some(head));
    assert_eq!(git.resolve("refs/heads/nightshift/x/2").unwrap(), Some(own));
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    assert_eq!(
        git.run(&["show", "refs/nightshift/tampered/x/2:a.txt"])
            .unwrap(),
        "agent\n"
    );
}

#[test]
fn an_attempt_clone_borrows_objects_and_its_git_dir_never_reaches_nightshifts_git() {
    let (dir, git) = repo();
    let root = dir.path();
    let (common, base, path) = attempt_clone(&git, root);
    assert!(is_clone(&common, &path));
    assert_eq!(std::fs::read_to_string(path.join("a.txt")).unwrap(), "a\n");
    assert!(!path.join(".git/hooks").exists(), "no hooks");
    // Objects are borrowed: none copied.
    let own_objects = std::fs::read_dir(path.join(".git/objects"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().len() == 2)
        .count();
    assert_eq!(own_objects, 0);
    // The agent plants a clean filter and an fsmonitor in the clone's own git dir.
    let marker = root.join("ran");
    let clone = git.checkout_at(&common, &path);
    let config = std::fs::read_to_string(path.join(".git/config")).unwrap();
    std::fs::write(
        path.join(".git/config"),
        format!(
            "{config}[filter \"evil\"]\n\tclean = sh -c 'touch {m}; echo EVIL'\n[core]\n\tfsmonitor = touch {m}\n",
            m = marker.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(path.join(".git/info")).unwrap();
    std::fs::write(path.join(".git/info/attributes"), "* filter=evil\n").unwrap();
    std::fs::write(path.join("a.txt"), "good\n").unwrap();
    clone.stage_and_commit("work").unwrap();
    assert!(!marker.exists(), "nightshift's git ran the agent's program");
    assert_eq!(
        std::fs::read_to_string(path.join(".git/config")).unwrap(),
        config
    );
    assert_eq!(clone.run(&["show", "HEAD:a.txt"]).unwrap(), "good\n");
    // The user's repository has none of it until nightshift fetches it.
    let head = clone.resolve("HEAD").unwrap().unwrap();
    assert_eq!(git.resolve(&head).unwrap(), None);
    git.fetch_from_clone(&common, &path, "HEAD", "refs/heads/nightshift/x/1")
        .unwrap();
    assert_eq!(
        git.resolve("refs/heads/nightshift/x/1").unwrap(),
        Some(head.clone())
    );
    assert_eq!(
        git.run(&["show", &format!("{head}:a.txt")]).unwrap(),
        "good\n"
    );
    // The user's own refs and config are untouched by all of it.
    assert_eq!(git.resolve("refs/heads/main").unwrap(), Some(base));
    assert!(
        !git.run(&["config", "--list", "--local"])
            .unwrap()
            .contains("evil")
    );
    // A `.git` replaced by a link (or file) is refused, never followed up to the user's repo.
    std::fs::rename(path.join(".git"), root.join("moved.git")).unwrap();
    std::os::unix::fs::symlink(&common, path.join(".git")).unwrap();
    assert!(clone.run(&["status"]).is_err());
}

#[test]
fn nightshifts_git_in_a_clone_reads_objects_as_written_not_as_its_replace_refs_say() {
    let (dir, git) = repo();
    let root = dir.path();
    let (common, base, path) = attempt_clone(&git, root);
    let raw = |args: &[&str]| plain_git(&path, args);
    std::fs::remove_file(path.join("a.txt")).unwrap();
    raw(&["commit", "-qam", "delete a"]);
    let head = raw(&["rev-parse", "HEAD"]);
    // What a hostile agent plants in its clone: the base replaced by the attempt, so the
    // deletion vanishes from every diff.
    raw(&["replace", &base, &head]);
    assert_eq!(
        raw(&["diff", "--name-status", &base, &head]),
        "",
        "git honours it"
    );
    let clone = git.checkout_at(&common, &path);
    assert_eq!(
        clone
            .run(&["diff", "--name-status", &base, &head])
            .unwrap()
            .trim(),
        "D\ta.txt",
        "nightshift's git does not"
    );
}

#[test]
fn loose_refs_and_objects_are_packed_at_the_threshold_and_a_packed_ref_deleted_is_put_back() {
    let (dir, git) = repo();
    let root = dir.path();
    let common = git.common_dir().unwrap();
    let head = git.resolve("HEAD").unwrap().unwrap();
    let preserve = |i: usize| format!("refs/nightshift/preserve/i{i}/1");
    for i in 0..tamper::PACK_LOOSE_AT - 1 {
        git.set_ref(&preserve(i), &head).unwrap();
    }
    assert!(!git.pack_loose(&common), "below the threshold");
    assert!(common.join(preserve(0)).is_file());
    git.set_ref(&preserve(tamper::PACK_LOOSE_AT), &head)
        .unwrap();
    git.set_ref("refs/heads/topic", &head).unwrap();
    let before = git.control_plane(&common, &[]).unwrap();

    assert!(git.pack_loose(&common));
    assert!(!common.join(preserve(0)).exists(), "packed, not loose");
    let packed = std::fs::read_to_string(common.join("packed-refs")).unwrap();
    assert!(packed.contains(&preserve(0)), "{packed}");
    assert!(
        common.join("refs/heads/topic").is_file(),
        "the user's refs are not packed"
    );
    assert_eq!(git.resolve(&preserve(0)).unwrap(), Some(head.clone()));
    let counts = plain_git(root, &["count-objects", "-v"]);
    assert!(
        counts.lines().any(|l| l == "packs: 1"),
        "the loose objects are packed: {counts}"
    );
    let scratch = root.join("s.index");
    assert_eq!(
        git.tampering_since(&before, "refs/nightshift/tampered/x/1", &scratch)
            .unwrap(),
        None,
        "packing moves no ref"
    );

    // A session deleting a packed preserve ref is still found, and the ref put back.
    plain_git(root, &["update-ref", "-d", &preserve(0)]);
    let found = git
        .tampering_since(&before, "refs/nightshift/tampered/x/1", &scratch)
        .unwrap()
        .expect("tampering found");
    let said = found.changes.join("\n");
    assert!(
        said.contains(&format!("ref {} deleted", preserve(0))),
        "{said}"
    );
    assert_eq!(git.resolve(&preserve(0)).unwrap(), Some(head));
}

#[test]
fn the_ref_files_are_read_as_for_each_ref_lists_them_and_a_linked_checkout_asks_git() {
    let (dir, git) = repo();
    let root = dir.path();
    let common = git.common_dir().unwrap();
    let run = |args: &[&str]| plain_git(root, args);
    run(&["branch", "packed-only"]);
    run(&["branch", "shadowed"]);
    run(&["pack-refs", "--all"]);
    run(&["commit", "-q", "--allow-empty", "-m", "second"]);
    // A loose ref newer than its packed value, a symbolic ref and a dangling one, refs under
    // every namespace, per-worktree ones of the main worktree.
    run(&["update-ref", "refs/heads/shadowed", "HEAD"]);
    run(&["update-ref", "refs/remotes/origin/main", "HEAD"]);
    run(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    run(&["symbolic-ref", "refs/heads/dangling", "refs/heads/nowhere"]);
    run(&["update-ref", "refs/bisect/bad", "HEAD"]);
    run(&["tag", "v1"]);
    run(&["update-ref", "refs/nightshift/preserve/x/1", "HEAD~1"]);
    // What git skips: a broken file, a name it refuses, a lock file.
    let heads = common.join("refs/heads");
    let head = run(&["rev-parse", "HEAD"]);
    std::fs::write(heads.join("broken"), "garbage\n").unwrap();
    std::fs::write(heads.join("two..dots"), format!("{head}\n")).unwrap();
    std::fs::write(heads.join("main.lock"), format!("{head}\n")).unwrap();
    // A linked worktree's own per-worktree ref is not the main worktree's.
    let linked = root.join("linked");
    run(&["worktree", "add", "-q", linked.to_str().unwrap()]);
    plain_git(&linked, &["update-ref", "refs/bisect/linked", "HEAD"]);

    let from_files = tamper::refs_from_files(root, &common).expect("read from the files");
    let from_git = git.refs_from_git().unwrap();
    assert_eq!(from_files, from_git);
    assert!(from_files.contains_key("refs/heads/packed-only"));
    assert_eq!(
        from_files["refs/remotes/origin/HEAD"].symref.as_deref(),
        Some("refs/remotes/origin/main")
    );
    assert!(!from_files.contains_key("refs/heads/dangling"));
    assert!(!from_files.contains_key("refs/heads/broken"));
    // The files cannot answer for a linked worktree, nor beside a link among the refs.
    assert!(tamper::refs_from_files(&linked, &common).is_none());
    std::os::unix::fs::symlink("main", heads.join("link")).unwrap();
    assert!(tamper::refs_from_files(root, &common).is_none());
}

#[test]
fn the_work_is_committed_into_the_users_store_and_a_planted_object_never_travels() {
    let (dir, git) = repo();
    let (common, base, path) = attempt_clone(&git, dir.path());
    let clone = git.checkout_at(&common, &path);
    // The agent plants, in the clone's own store, an object under the name of the content it
    // then writes: git would take the planted object as that content, and never hash it again.
    let loose = |oid: &str| path.join(".git/objects").join(&oid[..2]).join(&oid[2..]);
    std::fs::write(path.join("b.txt"), "planted\n").unwrap();
    let planted = plain_git(&path, &["hash-object", "-w", "b.txt"]);
    std::fs::write(path.join("b.txt"), "b\n").unwrap();
    let honest = plain_git(&path, &["hash-object", "b.txt"]);
    std::fs::create_dir_all(loose(&honest).parent().unwrap()).unwrap();
    std::fs::copy(loose(&planted), loose(&honest)).unwrap();
    assert_eq!(plain_git(&path, &["cat-file", "-p", &honest]), "planted");
    let head = clone
        .commit_into_user_store(&common, &base, "x: b")
        .unwrap()
        .expect("committed directly");
    assert_ne!(head, base);
    // The commit, its tree and its blob are the user's store's own (no fetch needed), and the
    // blob holds what the file holds.
    assert_eq!(git.run(&["show", &format!("{head}:b.txt")]).unwrap(), "b\n");
    assert_eq!(
        git.run(&["rev-parse", &format!("{head}^")]).unwrap().trim(),
        base
    );
    let in_user_store = |oid: &str| {
        common
            .join("objects")
            .join(&oid[..2])
            .join(&oid[2..])
            .exists()
    };
    assert!(in_user_store(&head));
    assert!(
        in_user_store(&honest),
        "the blob was written anew, from the file"
    );
    // The clone's branch moved with it, and nothing is left to commit.
    assert_eq!(
        clone.resolve("HEAD").unwrap().as_deref(),
        Some(head.as_str())
    );
    assert_eq!(
        clone
            .commit_into_user_store(&common, &base, "again")
            .unwrap(),
        None,
        "HEAD is no longer the base: the caller's fetch path"
    );
    // An agent's own commit is the fetch path's too.
    let (_d2, git2) = repo();
    let root2 = git2.dir().to_owned();
    let (common2, base2, path2) = attempt_clone(&git2, &root2);
    std::fs::write(path2.join("c.txt"), "c\n").unwrap();
    plain_git(&path2, &["add", "c.txt"]);
    plain_git(&path2, &["commit", "-qm", "agent"]);
    let clone2 = git2.checkout_at(&common2, &path2);
    assert_eq!(
        clone2
            .commit_into_user_store(&common2, &base2, "x")
            .unwrap(),
        None
    );
    // Nothing changed: no commit, the base.
    let (_d3, git3) = repo();
    let root3 = git3.dir().to_owned();
    let (common3, base3, path3) = attempt_clone(&git3, &root3);
    let clone3 = git3.checkout_at(&common3, &path3);
    assert_eq!(
        clone3
            .commit_into_user_store(&common3, &base3, "x")
            .unwrap(),
        Some(base3)
    );
}

#[test]
fn the_pool_pays_from_enough_tracked_files_and_an_unreadable_index_says_it_does() {
    let (dir, git) = repo();
    let common = git.common_dir().unwrap();
    assert!(
        !pool::pool_pays(&common),
        "two files: a fresh clone is cheaper"
    );
    for i in 0..pool::POOL_MIN_FILES {
        std::fs::write(dir.path().join(format!("f{i}.txt")), "f\n").unwrap();
    }
    plain_git(dir.path(), &["add", "-A"]);
    assert!(pool::pool_pays(&common));
    std::fs::write(common.join("index"), "not an index").unwrap();
    assert!(pool::pool_pays(&common), "unknown: the pool, as before");
}

#[test]
fn a_clone_whose_branch_or_head_the_agent_made_a_link_is_never_committed_through_it() {
    let (dir, git) = repo();
    let (common, base, path) = attempt_clone(&git, dir.path());
    let clone = git.checkout_at(&common, &path);
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // The branch's directory replaced by a link to a directory outside the clone, holding a
    // ref file at the base: nightshift would read it, then write the new commit there.
    let heads = path.join(".git/refs/heads/nightshift");
    std::fs::rename(&heads, outside.join("nightshift")).unwrap();
    std::os::unix::fs::symlink(outside.join("nightshift"), &heads).unwrap();
    std::fs::write(path.join("b.txt"), "b\n").unwrap();
    assert_eq!(
        clone.commit_into_user_store(&common, &base, "x").unwrap(),
        None,
        "a link on the way: the fetch path"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("nightshift/x/1"))
            .unwrap()
            .trim(),
        base,
        "nothing written through the link"
    );
    // HEAD itself a link: likewise.
    std::fs::remove_file(&heads).unwrap();
    std::fs::rename(outside.join("nightshift"), &heads).unwrap();
    let head = path.join(".git/HEAD");
    std::fs::rename(&head, outside.join("HEAD")).unwrap();
    std::os::unix::fs::symlink(outside.join("HEAD"), &head).unwrap();
    assert_eq!(
        clone.commit_into_user_store(&common, &base, "x").unwrap(),
        None
    );
    // A merge the agent left under way: the fetch path too.
    std::fs::remove_file(&head).unwrap();
    std::fs::rename(outside.join("HEAD"), &head).unwrap();
    std::fs::write(path.join(".git/MERGE_HEAD"), format!("{base}\n")).unwrap();
    assert_eq!(
        clone.commit_into_user_store(&common, &base, "x").unwrap(),
        None
    );
    std::fs::remove_file(path.join(".git/MERGE_HEAD")).unwrap();
    assert!(
        clone
            .commit_into_user_store(&common, &base, "x")
            .unwrap()
            .is_some()
    );
}
