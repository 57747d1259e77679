//! Integration edge cases: stuck refs, history rewritten by an agent, interrupted effects,
//! leftovers of lost state. Each is a way a naive runner ships twice, reverts work, or spins.

use std::os::unix::process::ExitStatusExt;

use nightshift_core::failpoint;
use nightshift_core::store::EventKind;

use crate::harness::*;

#[test]
fn a_stuck_target_ref_halts_resumable_with_gits_reason_instead_of_spinning() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&format!(
        "{}\n[integrate]\ntarget = \"main\"\n",
        plan(&repo, &["a"], 1, 1)
    ));
    // The user works on another branch, so main moves by compare-and-swap; a stale lock blocks it.
    repo.git(&["checkout", "-q", "-b", "elsewhere"]);
    let lock = repo.root.join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lock"),
        "{}",
        text(&out)
    );

    std::fs::remove_file(&lock).unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
}

#[test]
fn fresh_after_a_kill_between_moving_the_target_and_confirming_ships_once() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo
        .cmd(&["engine"])
        .env(failpoint::ENV, "integrate_effect_done")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    assert_eq!(
        repo.shipped_items(),
        ["a"],
        "the effect happened before the kill"
    );

    let out = repo.run(&["run", "--fresh"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"], "shipped exactly once");
    assert_eq!(repo.item_state("a"), "shipped");
    repo.assert_clean_end();
}

#[test]
fn an_agent_that_rewrites_history_below_its_base_cannot_revert_the_target() {
    let repo = Repo::new(&project());
    let agent = "git reset -q --hard HEAD~1 && mkdir -p done && echo ok > done/rw";
    let config = plan(&repo, &["rw"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        before,
        "main did not move"
    );
    let status = repo.status_json();
    let reason = status["items"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("history was rewritten"), "{reason}");
    repo.assert_clean_end();
}

#[test]
fn a_locked_admin_entry_without_a_directory_does_not_block_the_attempt() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    // What a kill inside `git worktree add --lock` can leave: git's locked admin entry, no dir.
    let path = repo.root.join(".nightshift/worktrees/a-1");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--lock",
        "-b",
        "scratch",
        path.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&path).unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
    repo.git(&["branch", "-D", "scratch"]);
    repo.assert_clean_end();
}

#[test]
fn attempt_numbers_never_reuse_a_ref_left_by_a_lost_database() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let kept = repo.git(&["rev-parse", "HEAD~1"]);
    repo.git(&["update-ref", "refs/nightshift/preserve/a/1", kept.trim()]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "refs/nightshift/preserve/a/1"]),
        kept,
        "earlier kept work untouched"
    );
    repo.git(&["rev-parse", "--verify", "refs/nightshift/preserve/a/2"]);
}

#[test]
fn an_interrupted_fast_forward_of_the_users_checkout_is_finished_not_blamed_on_the_user() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo
        .cmd(&["engine"])
        .env(failpoint::ENV, "integrate_intended")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let merged = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::IntegrateIntended { commit, .. } => Some(commit),
            _ => None,
        })
        .unwrap();
    // The files of the user's checkout moved, but the branch did not: a fast-forward cut short.
    repo.git(&["checkout", &merged, "--", "."]);
    assert_ne!(repo.git(&["status", "--porcelain"]), "");

    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.git(&["rev-parse", "main"]).trim(), merged);
    repo.assert_clean_end();
}

/// An agent for item `b` that edits a line in its first iteration while "someone else" commits
/// a conflicting edit of it to main (during the check of that iteration); `repair` is what it
/// does in the repair iteration.
fn conflict_repo(repair: &str) -> Repo {
    let repo = Repo::new(&project());
    repo.write("shared.txt", "original\n");
    repo.agent("c", &solves("c"));
    let agent = format!(
        "if [ $NIGHTSHIFT_ITERATION = 1 ]; then echo mine > shared.txt; mkdir -p done; echo ok > done/b; else {repair}; fi"
    );
    let check = repo.check_after_person(
        "b",
        "echo theirs$NIGHTSHIFT_ATTEMPT > shared.txt && git commit -q -am theirs$NIGHTSHIFT_ATTEMPT",
        "sh check.sh b",
    );
    let config = plan(&repo, &["b", "c"], 1, 1)
        .replacen(
            &repo.agent_table(),
            &format!(
                "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"if [ $NIGHTSHIFT_ITEM = b ]; then {agent}; else exec {BIN} __fake-agent --script-dir {dir}; fi\"]\n",
                agent = agent.replace('"', "\\\""),
                dir = repo.agent_dir.display()
            ),
            1,
        )
        .replacen("check = \"sh check.sh b\"", &format!("check = \"{check}\""), 1);
    repo.configure(&config);
    repo
}

#[test]
fn a_conflict_with_the_target_gets_a_repair_iteration_that_lands_on_top() {
    let repo = conflict_repo("printf 'theirs1\\nmine\\n' > shared.txt");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        repo.git(&["show", "main:shared.txt"]),
        "theirs1\nmine\n",
        "both intents kept"
    );
    let log = repo.git(&["log", "--format=%s", "main"]);
    assert!(
        log.lines().any(|l| l == "theirs1"),
        "the other commit survives: {log}"
    );
    assert_eq!(repo.shipped_items(), ["b", "c"]);
    let events = repo.store().events_after(0, 1000).unwrap();
    let conflict = events.iter().find_map(|e| match &e.kind {
        EventKind::ConflictFound { paths, .. } => Some(paths.clone()),
        _ => None,
    });
    assert_eq!(conflict, Some(vec!["shared.txt".to_owned()]));
    // The repair session was told about the conflict.
    let prompt = std::fs::read_dir(repo.root.join(".nightshift/logs"))
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("b-a1-i2.prompt.md"))
        .expect("a repair iteration ran");
    let prompt = std::fs::read_to_string(prompt).unwrap();
    assert!(
        prompt.contains("Resolve a merge conflict")
            && prompt.contains("- shared.txt")
            && prompt.contains("theirs"),
        "{prompt}"
    );
    repo.assert_clean_end();
}

#[test]
fn a_conflict_left_unresolved_parks_the_item_with_its_branch_and_the_run_goes_on() {
    let repo = conflict_repo("true");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["c"], "the run went on");
    let status = repo.status_json();
    let b = status["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "b")
        .unwrap()
        .clone();
    assert_eq!(b["state"], "parked");
    let reason = b["reason"].as_str().unwrap();
    assert!(
        reason.contains("conflict") && reason.contains("branch nightshift/b/"),
        "{reason}"
    );
    // Both the first attempt's and the parked pass's branches are kept for a person.
    let branches = repo.git(&["branch", "--list", "nightshift/b/*"]);
    assert!(
        branches.contains("nightshift/b/1") && branches.contains("nightshift/b/2"),
        "{branches}"
    );
    assert_eq!(
        repo.git(&["show", "nightshift/b/1:shared.txt"]),
        "mine\n",
        "the kept branch holds the work"
    );
    assert_eq!(
        repo.git(&["show", "main:shared.txt"]),
        "theirs2\n",
        "main has the other side only"
    );
}

/// A bare remote whose pre-receive hook refuses every push while `closed` exists (the caller
/// creates it once the setup is pushed).
fn with_remote(repo: &Repo) -> (std::path::PathBuf, std::path::PathBuf) {
    let remote = repo.agent_dir.parent().unwrap().join("remote.git");
    let closed = repo.agent_dir.join("closed");
    repo.git(&["init", "--quiet", "--bare", remote.to_str().unwrap()]);
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    repo.git(&["push", "--quiet", "origin", "main"]);
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif [ -e {} ]; then echo 'remote closed for the night' >&2; exit 1; fi\n",
            closed.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (remote, closed)
}

#[test]
fn a_refused_push_keeps_the_item_integrated_locally_alerts_and_succeeds_once_the_remote_accepts() {
    let repo = Repo::new(&project());
    let (remote, closed) = with_remote(&repo);
    repo.agent("a", &solves("a"));
    let prs = repo.agent_dir.join("prs.txt");
    // Item b's agent reopens the remote (a person fixing it overnight), then does its work.
    let config = plan(&repo, &["a", "b"], 1, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"if [ $NIGHTSHIFT_ITEM = b ]; then rm -f {closed}; mkdir -p done; echo ok > done/b; else exec {BIN} __fake-agent --script-dir {dir}; fi\"]\n",
            closed = closed.display(),
            dir = repo.agent_dir.display()
        ),
        1,
    ) + &format!(
        "\n[integrate]\npush = true\ndone = \"pushed\"\npr_command = [\"sh\", \"-c\", \"echo {{item}} {{commit}} >> {}\"]\n",
        prs.display()
    );
    repo.configure(&config);
    repo.git(&["push", "--quiet", "origin", "main"]);
    std::fs::write(&closed, "").unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let kinds: Vec<String> = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Integrated { .. }
                    | EventKind::Pushed { .. }
                    | EventKind::PushFailed { .. }
            )
        })
        .map(|e| match e.kind {
            EventKind::Integrated {
                item,
                awaiting_push,
                ..
            } => format!("integrated {item} {awaiting_push}"),
            EventKind::Pushed { item, .. } => format!("pushed {item}"),
            EventKind::PushFailed { items, .. } => format!("push_failed {}", items.join(",")),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "integrated a true",
            "push_failed a",
            "integrated b true",
            "pushed a",
            "pushed b"
        ]
    );
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("refused") && attention.contains("remote closed for the night"),
        "{attention}"
    );
    let remote_main = std::process::Command::new("git")
        .args(["--git-dir", remote.to_str().unwrap(), "rev-parse", "main"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&remote_main.stdout),
        repo.git(&["rev-parse", "main"])
    );
    let prs = std::fs::read_to_string(prs).unwrap();
    assert_eq!(
        prs.lines()
            .map(|l| l.split(' ').next().unwrap())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    repo.assert_clean_end();
}

#[test]
fn a_remote_that_never_accepts_halts_push_rejected_with_the_work_on_the_local_target() {
    let repo = Repo::new(&project());
    let (_remote, closed) = with_remote(&repo);
    repo.agent("a", &solves("a"));
    let config = plan(&repo, &["a"], 1, 1)
        .replace("[limits]\n", "[limits]\nfault_backoff = \"50ms\"\n")
        + "\n[integrate]\npush = true\ndone = \"pushed\"\n";
    repo.configure(&config);
    repo.git(&["push", "--quiet", "origin", "main"]);
    std::fs::write(&closed, "").unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "integrated_local");
    assert_eq!(
        repo.shipped_items(),
        ["a"],
        "the work is on the local target"
    );
    let status = repo.status_json();
    assert_eq!(status["run"]["halt_reason"], "push_rejected");
}

#[test]
fn attempt_numbers_also_skip_refs_that_git_has_packed() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let kept = repo.git(&["rev-parse", "HEAD~1"]);
    repo.git(&["update-ref", "refs/nightshift/preserve/a/4", kept.trim()]);
    repo.git(&["pack-refs", "--all"]);
    assert!(
        !repo.root.join(".git/refs/nightshift/preserve/a/4").exists(),
        "the ref is packed"
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "refs/nightshift/preserve/a/4"]),
        kept
    );
    repo.git(&["rev-parse", "--verify", "refs/nightshift/preserve/a/5"]);
}

#[test]
fn a_dirty_target_checkout_makes_the_item_wait_with_an_alert_not_halt_the_run() {
    use std::io::BufRead;
    let repo = Repo::new(&project());
    // While the work is checked, someone starts editing a tracked file in the user's checkout
    // that the item changes too.
    let agent = "mkdir -p done; echo ok > done/w; echo agent >> README.md";
    let check = repo.check_after_person("w", "echo edited >> README.md", "sh check.sh w");
    let config = plan(&repo, &["w"], 1, 1)
        .replacen(
            &repo.agent_table(),
            &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
            1,
        )
        .replacen(
            "check = \"sh check.sh w\"",
            &format!("check = \"{check}\""),
            1,
        )
        .replace("[limits]\n", "[limits]\nfault_backoff = \"100ms\"\n");
    repo.configure(&config);
    let mut run = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(run.stdout.take().unwrap()).lines();
    // Wait (on the progress lines, as they stream) until the run says why it is waiting.
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.starts_with("paused: ") {
            assert!(
                line.contains("uncommitted changes to README.md that `w` also changes"),
                "{line}"
            );
            break;
        }
        assert!(
            !line.contains("halted"),
            "the run must wait, not halt: {seen:?}"
        );
    }
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(attention.contains("uncommitted changes"), "{attention}");
    // `log` says why too, not only run_paused.
    let log = text(&repo.run(&["log"]));
    assert!(
        log.contains("paused: the target `main` is checked out"),
        "{log}"
    );
    // The person's edit is still there; they put it away and the item integrates by itself.
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README.md")).unwrap(),
        "a project\nedited\n"
    );
    repo.git(&["checkout", "--", "README.md"]);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    // The wait was re-armed every 100 ms, but said once.
    assert!(
        !rest.iter().any(|l| l.starts_with("paused: ")),
        "the same pause was said again: {rest:?}"
    );
    assert_eq!(run.wait().unwrap().code(), Some(10));
    assert_eq!(repo.shipped_items(), ["w"]);
    repo.assert_clean_end();
}

#[test]
fn uncommitted_edits_to_files_the_item_does_not_touch_do_not_block_it_and_are_kept() {
    let repo = Repo::new(&project());
    repo.agent("w", &solves("w"));
    repo.configure(&plan(&repo, &["w"], 1, 1));
    // The user has an unstaged edit and a staged one, in files the item never changes.
    repo.write("README.md", "a project\nmy notes\n");
    repo.write("staged.txt", "staged\n");
    repo.git(&["add", "staged.txt"]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert!(!text(&out).contains("paused"), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["w"]);
    // Shipped into the checkout, and the user's edits are exactly as they were.
    assert_eq!(
        std::fs::read_to_string(repo.root.join("done/w")).unwrap(),
        "ok\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README.md")).unwrap(),
        "a project\nmy notes\n"
    );
    let status = repo.git(&["status", "--porcelain", "--untracked-files=no"]);
    assert_eq!(status, " M README.md\nA  staged.txt\n", "{status}");
}

#[test]
fn gitignored_seeds_reach_every_worktree_and_are_never_committed() {
    let mut files = project();
    files.push((".gitignore", ".env.local\n.claude/settings.local.json\n"));
    files.push((".claude/settings.json", "{\"tracked\": true}\n"));
    let repo = Repo::new(&files);
    std::fs::write(repo.root.join(".env.local"), "TOKEN=local\n").unwrap();
    std::fs::write(
        repo.root.join(".claude/settings.local.json"),
        "{\"local\": true}\n",
    )
    .unwrap();
    repo.agent("s", &solves("s"));
    // The check passes only if both seeds are there (one inside a directory the checkout has).
    let config = plan(&repo, &["s"], 1, 1).replace(
        "check = \"sh check.sh s\"",
        "check = \"test -f .env.local && grep -q local .claude/settings.local.json && sh check.sh s\"",
    ) + "\n[worktree]\nseed = [\".env.local\", \".claude/\"]\n";
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let files = repo.git(&["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        !files.contains(".env.local") && !files.contains("settings.local.json"),
        "{files}"
    );
    repo.assert_clean_end();
}

#[test]
fn a_missing_seed_stops_the_run_at_start_and_names_it() {
    let repo = Repo::new(&project());
    repo.agent("s", &solves("s"));
    repo.configure(&(plan(&repo, &["s"], 1, 1) + "\n[worktree]\nseed = [\".mcp.json\"]\n"));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(".mcp.json missing"),
        "{}",
        text(&out)
    );
}

/// Clears the immutable flag on drop, so a failing test leaves nothing undeletable behind.
struct Mutable(std::path::PathBuf);

impl Drop for Mutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn seed_003_a_worktree_git_cannot_delete_after_the_merge_is_a_warning_not_a_crash() {
    let mut files = pooled_project();
    files.push((".gitignore", ".pytest_cache/\n"));
    let repo = Repo::new(&files);
    repo.agent("b", &solves("b"));
    // Item a's agent leaves a file nothing can delete (immutable) in an ignored cache dir: the
    // worktree's removal after the merge fails, as it did with a test runner still writing.
    let stuck = repo
        .root
        .join(".nightshift/worktrees/a-1/.pytest_cache/README.md");
    let _guard = Mutable(stuck.clone());
    let agent = "mkdir -p .pytest_cache done && echo cache > .pytest_cache/README.md && chattr +i .pytest_cache/README.md && echo ok > done/a";
    let config = plan(&repo, &["a", "b"], 1, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"if [ $NIGHTSHIFT_ITEM = a ]; then {agent}; else exec {BIN} __fake-agent --script-dir {dir}; fi\"]\n",
            dir = repo.agent_dir.display()
        ),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(10),
        "the run went on: {}",
        text(&out)
    );
    assert_eq!(repo.shipped_items(), ["a", "b"], "a stays shipped");
    let warnings: Vec<String> = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::TeardownFailed { item, error, .. } => Some(format!("{item}: {error}")),
            _ => None,
        })
        .collect();
    // a's clone went to the pool (a rename); b took it, and its reset could not delete the
    // file: b got a fresh clone instead and the leftover was set aside in the pool, warned.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("b: reuse a pooled clone"),
        "{warnings:?}"
    );
    let aside = |repo: &Repo| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(repo.root.join(".nightshift/pool"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("trash-"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let left = aside(&repo);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].join(".pytest_cache/README.md").exists(),
        "the leftover is there until it can be deleted"
    );
    let _guard2 = Mutable(left[0].join(".pytest_cache/README.md"));

    // Once it can be deleted, the next start reconciles: no orphan directory, no stale entry.
    drop(_guard);
    drop(_guard2);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert!(
        !repo.root.join(".nightshift/worktrees/a-1").exists(),
        "orphan directory left"
    );
    assert_eq!(
        aside(&repo),
        Vec::<std::path::PathBuf>::new(),
        "set-aside clone left"
    );
    repo.assert_clean_end();
}

/// An item whose agent makes two commits of its own (as "Ada"), then nightshift commits the rest.
fn strategy_repo(strategy: &str) -> Repo {
    let repo = Repo::new(&project());
    let agent = "echo one > one.txt && git add one.txt && GIT_AUTHOR_NAME=Ada git commit -q -m one && echo two > two.txt && git add two.txt && GIT_AUTHOR_NAME=Ada git commit -q -m two && mkdir -p done && echo ok > done/s";
    let config = plan(&repo, &["s"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    ) + &format!("\n[integrate]\nstrategy = \"{strategy}\"\n");
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{strategy}: {}", text(&out));
    for f in ["one.txt", "two.txt", "done/s"] {
        repo.git(&["show", &format!("main:{f}")]);
    }
    repo.assert_clean_end();
    repo
}

/// The commits an item's journal names: (committed, merge_prepared, preserved).
fn journaled_commits(repo: &Repo, item: &str) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
    let (mut committed, mut merged, mut preserved) = (Vec::new(), Vec::new(), Vec::new());
    for event in repo.store().events_after(0, 100_000).unwrap() {
        match event.kind {
            EventKind::Committed {
                item: i, commit, ..
            } if i == item => committed.push(commit),
            EventKind::MergePrepared {
                item: i, commit, ..
            } if i == item => merged.push(commit),
            EventKind::Preserved {
                item: i,
                ref_name,
                commit,
                ..
            } if i == item => preserved.push((ref_name, commit)),
            _ => {}
        }
    }
    (committed, merged, preserved)
}

#[test]
fn onto_an_unmoved_target_nightshifts_own_commit_lands_as_it_is_and_stays_preserved() {
    // Decision 106: a squash of nightshift's own single commit onto the base it was made on
    // would be that commit again but for its timestamps, so the commit itself lands (no
    // `commit-tree`, no keep-alive ref), and teardown keeps it under the preserve ref in the
    // one transaction that drops the attempt's refs.
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let (committed, merged, preserved) = journaled_commits(&repo, "a");
    let main = repo.git(&["rev-parse", "main"]).trim().to_owned();
    assert_eq!(
        committed,
        std::slice::from_ref(&main),
        "the candidate is what landed"
    );
    assert_eq!(merged, std::slice::from_ref(&main));
    assert_eq!(
        preserved,
        [("refs/nightshift/preserve/a/1".to_owned(), main.clone())]
    );
    assert_eq!(
        repo.git(&["rev-parse", "refs/nightshift/preserve/a/1"])
            .trim(),
        main
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>|%cn|%P", "main"])
            .trim(),
        format!(
            "nightshift <nightshift@localhost>|nightshift|{}",
            repo.git(&["rev-parse", "main~1"]).trim()
        )
    );
    let message = repo.git(&["log", "-1", "--format=%B", "main"]);
    assert!(
        message.starts_with("a: ") && message.contains("Nightshift-Attempt: 1"),
        "{message}"
    );
    assert_eq!(
        repo.git(&[
            "for-each-ref",
            "refs/nightshift/merge",
            "refs/heads/nightshift"
        ])
        .trim(),
        "",
        "no attempt ref is left"
    );
    repo.assert_clean_end();

    // Work the agent committed itself is squashed into a commit of nightshift's, as before.
    let squash = strategy_repo("squash");
    let (committed, merged, _) = journaled_commits(&squash, "s");
    let main = squash.git(&["rev-parse", "main"]).trim().to_owned();
    assert_eq!(merged, std::slice::from_ref(&main));
    assert_ne!(committed, [main], "the agent's history is not what lands");
}

#[test]
fn integration_strategies_squash_merge_and_rebase() {
    let squash = strategy_repo("squash");
    assert_eq!(
        squash.git(&["rev-list", "--count", "HEAD~1..HEAD"]).trim(),
        "1"
    );
    assert_eq!(
        squash
            .git(&["log", "-1", "--format=%p", "main"])
            .split(' ')
            .count(),
        1
    );

    let merge = strategy_repo("merge");
    let parents = merge.git(&["log", "-1", "--format=%p", "main"]);
    assert_eq!(
        parents.split_whitespace().count(),
        2,
        "a merge commit: {parents}"
    );
    let history = merge.git(&["log", "--format=%an %s", "main"]);
    assert!(
        history.contains("Ada one") && history.contains("Ada two"),
        "{history}"
    );

    let rebase = strategy_repo("rebase");
    let log = rebase.git(&["log", "--format=%an|%s", "main"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[1], "Ada|two", "authors kept, order kept: {log}");
    assert_eq!(lines[2], "Ada|one", "{log}");
    assert!(
        lines[0].starts_with("nightshift|s:"),
        "nightshift's own commit last: {log}"
    );
    assert_eq!(
        rebase
            .git(&["log", "-1", "--format=%p", "main"])
            .split_whitespace()
            .count(),
        1,
        "linear"
    );
}

#[test]
fn worktree_env_reaches_every_session_and_check_of_an_attempt() {
    let repo = Repo::new(&[
        ("README.md", "a project\n"),
        (
            "check.sh",
            "#!/bin/sh\n[ -n \"$SHARED_CACHE\" ] || { echo 'FAIL: no SHARED_CACHE'; exit 1; }\n[ \"$(cat done/$1 2>/dev/null)\" = ok ] || exit 1\n",
        ),
    ]);
    let agent = "mkdir -p done; echo ok > done/w; printf %s \\\"$SHARED_CACHE\\\" > done/env";
    let config = plan(&repo, &["w"], 1, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n\n[worktree]\nenv = {{ SHARED_CACHE = \"{{repo}}/.nightshift/cache\" }}\n"
        ),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["w"]);
    let seen = repo.git(&["show", "main:done/env"]);
    assert!(
        seen.starts_with('/') && seen.ends_with("/.nightshift/cache"),
        "the agent saw {seen:?}"
    );
}

/// `[integrate] pr_command` gets the item's section of the morning report as the PR body:
/// `{body_file}` and NIGHTSHIFT_PR_BODY_FILE name it; it carries the verdict, the check on the
/// merged result, the receipt's digest (the receipt file's SHA-256) and the replay command.
#[test]
fn pr_command_gets_the_items_report_section_as_its_body() {
    let repo = Repo::new(&project());
    let (_remote, _closed) = with_remote(&repo);
    repo.agent("a", &solves("a"));
    let bodies = repo.agent_dir.join("bodies");
    std::fs::create_dir_all(&bodies).unwrap();
    let config = plan(&repo, &["a"], 1, 1)
        + &format!(
            "\n[integrate]\npush = true\npr_command = [\"sh\", \"-c\", \"cp \\\"$NIGHTSHIFT_PR_BODY_FILE\\\" {dir}/{{item}}.env.md && cp {{body_file}} {dir}/{{item}}.arg.md\"]\n",
            dir = bodies.display()
        );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let body = std::fs::read_to_string(bodies.join("a.env.md")).unwrap();
    assert_eq!(
        body,
        std::fs::read_to_string(bodies.join("a.arg.md")).unwrap(),
        "the placeholder and the variable name the same file"
    );
    assert!(body.contains("## nightshift: `a`"), "{body}");
    assert!(body.contains("- **verdict**: shipped"), "{body}");
    assert!(
        body.contains("- **check**: green on the merged result"),
        "{body}"
    );
    // The digest is the receipt file's, and the replay command names it.
    let v: serde_json::Value =
        serde_json::from_slice(&repo.run(&["report", "--json"]).stdout).unwrap();
    let receipt = &v["report"]["items"][0]["attempts"][0]["receipt"];
    let path = repo.root.join(receipt["path"].as_str().unwrap());
    let digest = nightshift_core::report::morning::digest(&std::fs::read(&path).unwrap());
    assert!(
        body.contains(&format!(
            "sha256 `{digest}`, signature valid, verdict {}",
            receipt["verdict"].as_str().unwrap()
        )),
        "{digest}\n{body}"
    );
    assert!(
        body.contains(&format!("`{}`", receipt["replay"].as_str().unwrap())),
        "{body}"
    );
    let headline = match v["report"]["headline"]["kind"].as_str().unwrap() {
        "verified" => "VERIFIED",
        "verified_with_gaps" => "VERIFIED WITH GAPS",
        _ => "NOT VERIFIED",
    };
    assert!(body.contains(&format!("**{headline}**")), "{body}");
}

/// A push the remote never answers and a `pr_command` that never ends are cut at
/// `[integrate] remote_timeout` (decision 108): the push counts as refused (journaled, alerted,
/// retried after the next item), the command as failed (alerted), and the night goes on. Each
/// hang is 30 s and then succeeds, so without the deadline the journal shows a clean push and
/// the late PR line, and this fails.
#[test]
fn a_push_or_pr_command_that_hangs_is_cut_at_remote_timeout_and_the_run_goes_on() {
    let repo = Repo::new(&project());
    let (_remote, closed) = with_remote(&repo);
    let remote = repo.agent_dir.parent().unwrap().join("remote.git");
    let hang = repo.agent_dir.join("hang");
    let late = repo.agent_dir.join("late");
    // The first push after `hang` is made hangs; it removes the mark, so the retry is answered.
    std::fs::write(
        remote.join("hooks/pre-receive"),
        format!(
            "#!/bin/sh\nif [ -e {hang} ]; then rm -f {hang}; sleep 30; echo x > {late}; fi\nif [ -e {closed} ]; then exit 1; fi\n",
            hang = hang.display(),
            late = late.display(),
            closed = closed.display()
        ),
    )
    .unwrap();
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    let prs = repo.agent_dir.join("prs.txt");
    let config = plan(&repo, &["a", "b"], 1, 1)
        + &format!(
            "\n[integrate]\npush = true\ndone = \"pushed\"\nremote_timeout = \"4s\"\npr_command = [\"sh\", \"-c\", \"if [ {{item}} = a ]; then sleep 30; echo late-a >> {prs}; else echo {{item}} >> {prs}; fi\"]\n",
            prs = prs.display()
        );
    repo.configure(&config);
    repo.git(&["push", "--quiet", "origin", "main"]);
    std::fs::write(&hang, "").unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let events = repo.store().events_after(0, 1000).unwrap();
    let pushes: Vec<String> = events
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Pushed { item, .. } => Some(format!("pushed {item}")),
            EventKind::PushFailed { items, error } => {
                Some(format!("push_failed {} {error}", items.join(",")))
            }
            _ => None,
        })
        .collect();
    assert_eq!(pushes.len(), 3, "{pushes:?}");
    assert!(
        pushes[0].starts_with("push_failed a ") && pushes[0].contains("no answer within 4s"),
        "{pushes:?}"
    );
    assert_eq!(pushes[1..], ["pushed a", "pushed b"]);
    assert!(!late.exists(), "the hung hook was killed with the push");
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("a: pr_command failed (did not finish within 4s)"),
        "{attention}"
    );
    assert_eq!(
        std::fs::read_to_string(&prs).unwrap(),
        "b\n",
        "a's hung command was ended, b's ran"
    );
}
