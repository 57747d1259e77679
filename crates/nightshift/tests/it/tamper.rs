//! Hostile `command` agents that reach outside their checkout (issue 12): whatever they change
//! that nightshift can see — the shared `.git/config`, `.git/info/`, hooks, refs, the user's
//! checkout — is found after the session, put back, journaled and alerted; the attempt ends
//! `control_plane_tampered`, nothing of it ships, and the run goes on with the next item.
//! Confinement is off here (the harness): these are the attacks Landlock does not get to stop.

use crate::harness::{Repo, project, text};
use nightshift_core::store::EventKind;

/// nightshift.toml whose agent is `agent.sh` of the test: item `bad` runs `attack` first, every
/// item then writes what its check wants. The attack finds the user's repository by walking up
/// from its clone (`.nightshift/worktrees/<item>-<n>`): `$root`, its git directory `$common`.
fn hostile(repo: &Repo, attack: &str, items: &[&str]) -> String {
    let script = format!(
        "#!/bin/sh\nset -u\nroot=$(cd ../../.. && pwd)\ncommon=$root/.git\n\
         if [ \"$NIGHTSHIFT_ITEM\" = bad ]; then\n{attack}\nfi\n\
         mkdir -p done && echo ok > done/$NIGHTSHIFT_ITEM\n"
    );
    let path = repo.agent_dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    let mut config = format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n\n[check]\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\n",
        path.display()
    );
    for id in items {
        config.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"sh check.sh {id}\"\n"
        ));
    }
    config
}

/// The `control_plane_tampered` events of the run: (item, changes, restored).
fn tamperings(repo: &Repo) -> Vec<(String, Vec<String>, Vec<String>)> {
    repo.store()
        .events_after(0, 10_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ControlPlaneTampered {
                item,
                changes,
                restored,
                ..
            } => Some((item, changes, restored)),
            _ => None,
        })
        .collect()
}

/// The `halt` of the attempt that ended item `id`.
fn attempt_halt(repo: &Repo, id: &str) -> Option<String> {
    repo.store()
        .events_after(0, 10_000)
        .unwrap()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::AttemptFailed { item, halt, .. } if item == id => {
                halt.map(|h| h.as_str().to_owned())
            }
            _ => None,
        })
}

/// What every attack test asserts: `bad` ended `control_plane_tampered` (parked, not shipped),
/// `good` after it shipped, and the evidence names `expect`.
fn assert_tamper_contained(repo: &Repo, out: &std::process::Output, expect: &[&str]) {
    let said = text(out);
    assert_eq!(repo.shipped_items(), ["good"], "{said}");
    assert_eq!(repo.item_state("bad"), "parked", "{said}");
    assert_eq!(
        attempt_halt(repo, "bad").as_deref(),
        Some("control_plane_tampered"),
        "{said}"
    );
    let found = tamperings(repo);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "bad");
    for e in expect {
        assert!(
            found[0].1.iter().any(|c| c.contains(e)),
            "evidence lacks {e:?}: {found:?}"
        );
    }
    // Alerted for a person.
    let attention =
        std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap_or_default();
    assert!(
        attention.contains("control_plane_tampered"),
        "ATTENTION: {attention}"
    );
}

#[test]
fn a_filter_planted_in_the_shared_config_is_undone_and_nothing_of_it_ships() {
    let repo = Repo::new(&project());
    let marker = repo.home.join("filter-ran");
    let attack = format!(
        "git -C \"$root\" config filter.evil.clean \"sh -c 'touch {m}; echo EVIL'\"\n\
         git -C \"$root\" config filter.evil.smudge cat\n\
         echo '* filter=evil' > \"$common/info/attributes\"",
        m = marker.display()
    );
    repo.configure(&hostile(&repo, &attack, &["bad", "good"]));
    let config_before = std::fs::read(repo.root.join(".git/config")).unwrap();
    let out = repo.run(&["run"]);
    assert_tamper_contained(
        &repo,
        &out,
        &[".git/config changed", ".git/info/attributes added"],
    );
    assert_eq!(
        std::fs::read(repo.root.join(".git/config")).unwrap(),
        config_before,
        "the shared config is put back"
    );
    assert!(!repo.root.join(".git/info/attributes").exists());
    assert!(
        !marker.exists(),
        "nightshift's own git ran the agent's filter"
    );
    // What landed is what the check read.
    assert_eq!(repo.git(&["show", "main:done/good"]), "ok\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_hook_and_an_fsmonitor_planted_in_the_shared_git_never_run() {
    let repo = Repo::new(&project());
    let marker = repo.home.join("agent-program-ran");
    let program = repo.agent_dir.join("planted.sh");
    std::fs::write(
        &program,
        format!("#!/bin/sh\necho ran >> {}\n", marker.display()),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&program)
        .status()
        .unwrap();
    let attack = format!(
        "cp {p} \"$common/hooks/post-commit\"\ncp {p} \"$common/hooks/pre-commit\"\n\
         git -C \"$root\" config core.fsmonitor {p}",
        p = program.display()
    );
    repo.configure(&hostile(&repo, &attack, &["bad", "good"]));
    let config_before = std::fs::read(repo.root.join(".git/config")).unwrap();
    let out = repo.run(&["run"]);
    assert_tamper_contained(
        &repo,
        &out,
        &[
            ".git/config changed",
            ".git/hooks/post-commit added",
            ".git/hooks/pre-commit added",
        ],
    );
    assert_eq!(
        std::fs::read(repo.root.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!repo.root.join(".git/hooks/post-commit").exists());
    assert!(
        !marker.exists(),
        "nightshift's git ran the agent's program: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    // The user's next commit runs nothing of the agent's either.
    repo.write("mine.txt", "mine\n");
    repo.git(&["add", "mine.txt"]);
    repo.git(&["commit", "--quiet", "-m", "mine"]);
    assert!(
        !marker.exists(),
        "the planted hook ran on the user's commit"
    );
}

#[test]
fn deleted_preserve_refs_and_a_moved_target_are_put_back() {
    let repo = Repo::new(&project());
    // `kept` never goes green: its work is preserved before `bad` runs.
    let attack = "for r in $(git -C \"$root\" for-each-ref --format='%(refname)' refs/nightshift/); do git -C \"$root\" update-ref -d \"$r\"; done\n\
                  git -C \"$root\" update-ref refs/heads/main \"$(git -C \"$root\" rev-parse refs/heads/main~1)\"";
    let mut config = hostile(&repo, attack, &["kept", "bad", "good"]);
    config = config.replace(
        "check = \"sh check.sh kept\"",
        "check = \"sh check.sh never\"",
    );
    repo.configure(&config);
    let main_before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["run"]);
    let said = text(&out);
    // The kept work is still restorable, at the commit it was kept at.
    let kept = repo
        .store()
        .events_after(0, 10_000)
        .unwrap()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::Preserved {
                item,
                ref_name,
                commit,
                ..
            } if item == "kept" => Some((ref_name, commit)),
            _ => None,
        })
        .expect("kept was preserved");
    assert_eq!(repo.git(&["rev-parse", &kept.0]).trim(), kept.1, "{said}");
    assert_eq!(
        repo.git(&["show", &format!("{}:done/kept", kept.0)]),
        "ok\n"
    );
    assert_tamper_contained(&repo, &out, &["ref refs/heads/main moved", "deleted"]);
    // main holds the user's commits, and `good` on top of them.
    let log = repo.git(&["log", "--format=%H", "main"]);
    assert!(
        log.lines().any(|c| c == main_before.trim()),
        "the user's commit is off main: {log}"
    );
}

#[test]
fn an_edit_of_the_users_checkout_is_undone_and_never_advised_to_be_committed() {
    let repo = Repo::new(&project());
    let attack = "echo 'agent edit' >> \"$root/README.md\"\necho planted > \"$root/planted.txt\"";
    repo.configure(&hostile(&repo, attack, &["bad", "good"]));
    let out = repo.run(&["run"]);
    assert_tamper_contained(
        &repo,
        &out,
        &[
            "checkout: README.md modified",
            "checkout: planted.txt created",
        ],
    );
    let said = text(&out);
    assert!(!said.contains("commit or stash"), "{said}");
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README.md")).unwrap(),
        "a project\n"
    );
    assert!(!repo.root.join("planted.txt").exists());
    // What the session left is kept for a person, not lost.
    assert_eq!(
        repo.git(&["show", "refs/nightshift/tampered/bad/1:README.md"]),
        "a project\nagent edit\n"
    );
    assert!(!repo.git(&["show", "main:README.md"]).contains("agent edit"));
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_push_of_red_work_to_the_remote_is_detected() {
    let repo = Repo::new(&project());
    let remote = repo.home.join("remote.git");
    let made = std::process::Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(made.success());
    repo.git(&["remote", "add", "origin", &remote.display().to_string()]);
    repo.git(&["push", "--quiet", "origin", "main"]);
    // From the user's repository (the clone has no remote): its remote-tracking ref moves.
    let attack = "echo red > red.txt && git add red.txt && git -c user.name=a -c user.email=a@b commit -q -m red && \
                  git fetch -q . HEAD:refs/heads/red-work && git -C \"$root\" fetch -q \"$PWD\" red-work && \
                  git -C \"$root\" push -q -f origin FETCH_HEAD:refs/heads/main";
    repo.configure(&hostile(&repo, attack, &["bad", "good"]));
    let out = repo.run(&["run"]);
    assert_tamper_contained(&repo, &out, &["ref refs/remotes/origin/main moved"]);
    assert!(
        !repo.git(&["ls-tree", "-r", "main"]).contains("red.txt"),
        "red work on the target"
    );
}

#[test]
fn a_filter_and_fsmonitor_planted_in_the_attempts_own_clone_never_reach_what_ships() {
    let repo = Repo::new(&project());
    let marker = repo.home.join("clone-program-ran");
    // The clone's own git directory is the agent's: the filter would make the committed blob
    // differ from what the check read, if nightshift's git ever used it.
    let attack = format!(
        "git config filter.evil.clean \"sh -c 'touch {m}; echo EVIL'\"\n\
         git config core.fsmonitor \"touch {m}\"\n\
         mkdir -p .git/info && echo '* filter=evil' > .git/info/attributes\n\
         mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch {m}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        m = marker.display()
    );
    repo.configure(&hostile(&repo, &attack, &["bad", "good"]));
    let out = repo.run(&["run"]);
    let said = text(&out);
    // Not tampering: nothing outside the clone changed. What shipped is what the check read.
    assert_eq!(repo.shipped_items(), ["bad", "good"], "{said}");
    assert!(tamperings(&repo).is_empty(), "{:?}", tamperings(&repo));
    assert_eq!(repo.git(&["show", "main:done/bad"]), "ok\n");
    assert!(!marker.exists(), "nightshift's git ran the agent's program");
    assert!(!repo.git(&["config", "--list", "--local"]).contains("evil"));
    repo.assert_clean_end();
}

#[test]
fn with_confinement_the_attacks_outside_the_clone_are_refused_and_nothing_changes() {
    let repo = Repo::new(&project());
    let remote = repo.home.join("remote.git");
    let made = std::process::Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(made.success());
    repo.git(&["remote", "add", "origin", &remote.display().to_string()]);
    repo.git(&["push", "--quiet", "origin", "main"]);
    // Every move is tried and its exit said in the agent's log; then the work is done.
    let attack = format!(
        "echo evil > \"$HOME/.bashrc\"; echo bashrc=$?\n\
         ls \"$NIGHTSHIFT_DATA_DIR\" >/dev/null 2>&1; echo key=$?\n\
         git -C \"$root\" config core.fsmonitor true; echo config=$?\n\
         git -C \"$root\" update-ref refs/heads/main \"$(git rev-parse HEAD)\"; echo ref=$?\n\
         echo edit >> \"$root/README.md\"; echo checkout=$?\n\
         echo red > red.txt && git add red.txt && git -c user.name=a -c user.email=a@b commit -q -m red\n\
         git push -q -f {remote} HEAD:main; echo push=$?\n\
         git rm -q --cached red.txt; rm red.txt",
        remote = remote.display()
    );
    repo.configure(&hostile(&repo, &attack, &["bad", "good"]));
    let config_before = std::fs::read(repo.root.join(".git/config")).unwrap();
    let main_before = repo.git(&["rev-parse", "main"]);
    let remote_before = repo.git(&["ls-remote", "origin", "main"]);
    let out = repo
        .cmd(&["run"])
        .env_remove("NIGHTSHIFT_SANDBOX")
        .output()
        .unwrap();
    let said = text(&out);
    let mut logs = Vec::new();
    let mut stack = vec![repo.root.join(".nightshift/logs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains("bad-a1-i1.agent.log") {
                logs.push(std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let log = logs.concat();
    for refused in ["bashrc=", "key=", "config=", "ref=", "checkout=", "push="] {
        assert!(log.contains(refused), "{refused} missing: {log}");
    }
    for done in [
        "config=0",
        "ref=0",
        "push=0",
        "checkout=0",
        "bashrc=0",
        "key=0",
    ] {
        assert!(
            !log.contains(done),
            "{done}: confinement let it through: {log}"
        );
    }
    // Nothing changed outside the clone: no tampering to detect, both items ship.
    assert!(tamperings(&repo).is_empty(), "{:?}", tamperings(&repo));
    assert!(!repo.home.join(".bashrc").exists());
    assert_eq!(
        std::fs::read(repo.root.join(".git/config")).unwrap(),
        config_before
    );
    assert_eq!(repo.git(&["ls-remote", "origin", "main"]), remote_before);
    assert_eq!(repo.shipped_items(), ["bad", "good"], "{said}");
    assert!(
        repo.git(&["log", "--format=%H", "main"])
            .lines()
            .any(|c| c == main_before.trim())
    );
    assert!(!repo.git(&["ls-tree", "-r", "main"]).contains("red.txt"));
    // Recorded in the receipt's confinement level.
    let mut receipt = String::new();
    let mut stack = vec![repo.root.join(".nightshift/receipts")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                receipt.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
    }
    assert!(receipt.contains("\"landlock"), "{receipt}");
}

#[test]
fn a_long_night_packs_its_preserve_refs_and_a_session_deleting_them_is_still_put_back() {
    let repo = Repo::new(&project());
    // 33 items ship first, each leaving a preserve ref (past the packing threshold, 32), then
    // `bad` deletes every preserve ref, packed or loose.
    let mut ids: Vec<String> = (0..33).map(|i| format!("i{i:02}")).collect();
    ids.extend(["bad".to_owned(), "good".to_owned()]);
    let attack = "for r in $(git -C \"$root\" for-each-ref --format='%(refname)' refs/nightshift/preserve/); do git -C \"$root\" update-ref -d \"$r\"; done";
    let items: Vec<&str> = ids.iter().map(String::as_str).collect();
    repo.configure(&hostile(&repo, attack, &items));
    let out = repo.run(&["run"]);
    let said = text(&out);
    let packed = std::fs::read_to_string(repo.root.join(".git/packed-refs")).unwrap_or_default();
    assert!(
        packed.contains("refs/nightshift/preserve/i00/1"),
        "the preserve refs were packed: {packed}\n{said}"
    );
    let shipped = repo.shipped_items();
    assert_eq!(shipped.len(), 34, "{shipped:?}\n{said}");
    assert!(!shipped.contains(&"bad".to_owned()), "{said}");
    assert_eq!(
        attempt_halt(&repo, "bad").as_deref(),
        Some("control_plane_tampered"),
        "{said}"
    );
    let found = tamperings(&repo);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .1
            .iter()
            .any(|c| c.contains("ref refs/nightshift/preserve/i00/1 deleted")),
        "{found:?}"
    );
    // Every shipped item's preserve ref is back, at the commit it was kept at.
    for e in repo.store().events_after(0, 100_000).unwrap() {
        if let EventKind::Preserved {
            ref_name, commit, ..
        } = e.kind
        {
            assert_eq!(repo.git(&["rev-parse", &ref_name]).trim(), commit, "{said}");
        }
    }
}
