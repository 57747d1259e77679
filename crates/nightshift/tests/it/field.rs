//! Inputs met in the field that used to wedge a run (issue 13): a prompt past the argument
//! limit, nested repositories, a user branch named like nightshift's namespace.

use crate::harness::*;

#[test]
fn a_prompt_past_the_argument_limit_ships_and_its_trailers_survive() {
    let repo = Repo::new(&project());
    repo.agent("big", &solves("big"));
    // 200 KiB of prompt: as `git commit -m <prompt>` it failed with E2BIG on every try.
    let filler = "Make done/big say ok. ".repeat(10_000);
    let mut config = repo.agent_table();
    config.push_str(&format!(
        "\n[check]\ntimeout = \"1m\"\n\n[[item]]\nid = \"big\"\nprompt = \"{filler}\"\ncheck = \"sh check.sh big\"\n"
    ));
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["big"]);
    let message = repo.git(&["log", "-1", "--format=%B", "main"]);
    assert!(message.len() < 70 * 1024, "bounded: {}", message.len());
    assert!(message.contains("bytes cut"), "the cut is noted");
    repo.assert_clean_end();
}

/// A shell agent: item `fresh` runs `git init` in `sub/` (no commit), `committed` commits
/// inside `sub/`, `linked` also adds `sub` to the outer repository and commits the gitlink;
/// every item then writes `done/<item>` so its check goes green.
const NESTING_AGENT: &str = r#"#!/bin/sh
set -e
item="$NIGHTSHIFT_ITEM"
mkdir -p sub done
echo "code of $item" > sub/lib.txt
git -C sub init -q
case "$item" in
  committed|linked)
    git -C sub add -A
    git -C sub -c user.name=a -c user.email=a@a commit -qm inner ;;
esac
echo ok > "done/$item"
if [ "$item" = linked ]; then
  git add -A
  git -c user.name=a -c user.email=a@a commit -qm "with a gitlink"
fi
if [ "$item" = plain ]; then rm -rf sub; fi
"#;

#[test]
fn an_agent_that_nests_a_repository_parks_its_item_keeps_the_files_and_the_run_goes_on() {
    let mut files = project();
    files.push(("agent.sh", NESTING_AGENT));
    let repo = Repo::new(&files);
    let mut config = String::from(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"agent.sh\"]\n\n[check]\ntimeout = \"1m\"\n",
    );
    for id in ["fresh", "committed", "linked", "plain"] {
        config.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"sh check.sh {id}\"\n"
        ));
    }
    repo.configure(&config);
    let out = repo.run(&["run"]);
    // One honest item shipped, three parked: the run went on past each.
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["plain"]);
    let tree = repo.git(&["ls-tree", "-r", "--format=%(objectmode) %(path)", "main"]);
    assert!(!tree.contains("160000"), "no gitlink on main: {tree}");
    for id in ["fresh", "committed", "linked"] {
        assert_eq!(repo.item_state(id), "parked", "{id}");
        let status = repo.status_json();
        let item = status["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .unwrap()
            .clone();
        let reason = item["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("nested git repository (sub/)") || reason.contains("gitlink (sub)"),
            "{id}: {reason}"
        );
        // The work is kept, as plain files.
        let kept = repo.git(&[
            "show",
            &format!("refs/nightshift/preserve/{id}/1:sub/lib.txt"),
        ]);
        assert_eq!(kept, format!("code of {id}\n"));
    }
    repo.assert_clean_end();
}

#[test]
fn a_user_branch_where_attempt_branches_go_is_refused_up_front_and_doctor_says_so() {
    for blocker in ["nightshift", "nightshift/a"] {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.configure(&plan(&repo, &["a"], 1, 1));
        repo.git(&["branch", blocker]);

        let out = repo.run(&["doctor", "--quick", "--json"]);
        assert_eq!(out.status.code(), Some(30), "{blocker}: {}", text(&out));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let finding = j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "git_branches")
            .unwrap()
            .clone();
        assert_eq!(finding["status"], "fail", "{finding}");
        assert!(
            finding["detail"].as_str().unwrap().contains(blocker),
            "{finding}"
        );

        // On main: "cannot lock ref refs/heads/nightshift/a/1" on every engine start.
        let out = repo.run(&["run"]);
        assert_eq!(out.status.code(), Some(30), "{blocker}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(blocker) && err.contains("git branch -m"),
            "{err}"
        );
        assert!(!err.contains("restart_storm"), "{err}");
        assert_eq!(repo.shipped_items(), Vec::<String>::new());
    }
}

/// Solves item `$NIGHTSHIFT_ITEM` of [`project`]; the user commits to `main` while the work is
/// checked (`check_after_person`), so that the work is merged onto a moved target: a commit
/// only nightshift's journal names.
const SOLVES_WHILE_THE_USER_COMMITS: &str = r#"#!/bin/sh
set -e
mkdir -p done
echo ok > "done/$NIGHTSHIFT_ITEM"
"#;

#[test]
fn git_gc_prune_now_between_merge_prepared_and_integration_does_not_wedge_the_run() {
    // As it happens now (the keep-alive ref holds the commit), and as on a repository whose
    // ref is gone too (the commit is pruned and made again).
    for drop_the_ref in [false, true] {
        gc_after_merge_prepared(drop_the_ref);
    }
}

fn gc_after_merge_prepared(drop_the_ref: bool) {
    let mut files = project();
    files.push(("agent.sh", SOLVES_WHILE_THE_USER_COMMITS));
    let repo = Repo::new(&files);
    let mut config = String::from(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"agent.sh\"]\n\n[check]\ntimeout = \"1m\"\n",
    );
    for id in ["a", "b"] {
        let check = repo.check_after_person(
            id,
            "git -c user.name=u -c user.email=u@u commit -q --allow-empty -m \"the user's own work\"",
            &format!("sh check.sh {id}"),
        );
        config.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"{check}\"\n"
        ));
    }
    repo.configure(&config);
    // The engine dies right after journaling the merge of `a` onto the moved target: a commit
    // no ref holds.
    let out = repo
        .cmd(&["engine"])
        .env(nightshift_core::failpoint::ENV, "merge_prepared")
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "{}",
        text(&out)
    );
    // A user's (or a cron's) aggressive gc meanwhile. `--prune=now` spares objects written in
    // this very second (hence "sometimes"): age them first, as a later gc would find them.
    let aged = std::process::Command::new("sh")
        .current_dir(&repo.root)
        .args([
            "-c",
            "find .git/objects -type f -path '*/objects/??/*' -exec touch -d 2020-01-01 {} +",
        ])
        .status()
        .unwrap();
    assert!(aged.success());
    if drop_the_ref {
        repo.git(&["update-ref", "-d", "refs/nightshift/merge/a/1"]);
    }
    repo.git(&["gc", "--quiet", "--prune=now"]);
    let out = repo.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(10),
        "{drop_the_ref}: {}",
        text(&out)
    );
    assert_eq!(repo.shipped_items(), ["a", "b"]);
    let prepared = repo
        .run(&["log", "--json"])
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| String::from_utf8_lossy(l).contains("\"merge_prepared\""))
        .count();
    // `a` once, or twice when its commit had to be made again; `b` once.
    assert_eq!(prepared, if drop_the_ref { 3 } else { 2 }, "{drop_the_ref}");
    assert_eq!(
        repo.git(&["for-each-ref", "refs/nightshift/merge/"]),
        "",
        "the keep-alive refs go with their attempts"
    );
    repo.assert_clean_end();
}

/// `nightshift wait --timeout 60s` in `repo`: its exit code and its one JSON line.
fn wait_line(repo: &Repo) -> (Option<i32>, serde_json::Value) {
    let out = repo.run(&["wait", "--timeout", "60s"]);
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("one JSON line ({e}): {}", text(&out)));
    (out.status.code(), value)
}

/// A frozen engine (SIGSTOP), a dead one (SIGKILL, no supervisor) and a restart storm journal
/// nothing: `wait` used to wait on until its timeout (forever without one). It reads what is
/// true of the run as `status` does and wakes with it.
#[test]
fn wait_reports_a_frozen_a_dead_and_a_stormed_engine_instead_of_waiting_on() {
    use nightshift_core::failpoint;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;

    // Frozen: the engine holds the lock, paused, and is stopped.
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
    let engine = repo
        .cmd(&["engine"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    crate::lifecycle::wait_for_journal(&repo, |all| {
        all.iter().any(|e| e.kind.name() == "run_paused")
    });
    let pid = nix::unistd::Pid::from_raw(i32::try_from(engine.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let (code, line) = wait_line(&repo);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert_eq!(line["wake"], "heartbeat_stale", "{line}");
    assert_eq!(line["halt_reason"], "heartbeat_stale", "{line}");
    assert_eq!(code, Some(19), "{line}");
    assert!(
        line["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("stopped"),
        "{line}"
    );
    assert_eq!(repo.run(&["stop"]).status.code(), Some(0));
    assert_eq!(engine.wait_with_output().unwrap().status.code(), Some(0));

    // Dead: killed with nobody to restart it.
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo
        .cmd(&["engine"])
        .env(failpoint::ENV, "attempt_started")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let (code, line) = wait_line(&repo);
    assert_eq!(line["wake"], "dead", "{line}");
    assert_eq!(code, Some(19), "{line}");
    assert!(
        line["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("no engine is alive"),
        "{line}"
    );

    // A restart storm: every restarted engine died, the supervisor gave up.
    let out = repo
        .cmd(&["run"])
        .env(failpoint::ENV, "run_resumed")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(19), "{}", text(&out));
    let (code, line) = wait_line(&repo);
    assert_eq!(line["wake"], "restart_storm", "{line}");
    assert_eq!(line["halt_reason"], "restart_storm", "{line}");
    assert_eq!(code, Some(19), "{line}");
}

/// Makes a file read-only even for root (`chattr +i`; `chmod a-w` for anyone else) until
/// dropped. `None`, with a loud `skipped:` line, where the kernel refuses.
struct ReadOnly(std::path::PathBuf, bool);

impl ReadOnly {
    fn make(path: &std::path::Path) -> Option<ReadOnly> {
        if !nix::unistd::geteuid().is_root() {
            let mut perms = std::fs::metadata(path).ok()?.permissions();
            perms.set_readonly(true);
            std::fs::set_permissions(path, perms).ok()?;
            return Some(ReadOnly(path.to_owned(), false));
        }
        let out = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(ReadOnly(path.to_owned(), true)),
            other => {
                eprintln!(
                    "skipped: `chattr +i` is refused here ({other:?}); as root nothing else makes \
                     a file read-only, so the read-only state.db test did NOT run"
                );
                None
            }
        }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.1 {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.0)
                .status();
        } else if let Ok(meta) = std::fs::metadata(&self.0) {
            let mut perms = meta.permissions();
            #[expect(
                clippy::permissions_set_readonly_false,
                reason = "undoing the test's own chmod"
            )]
            perms.set_readonly(false);
            let _ = std::fs::set_permissions(&self.0, perms);
        }
    }
}

/// A read-only `state.db`: one line that says what is wrong and what to do, exit 30, and no
/// restart (it used to be five engine starts, then "resumable: fix the cause").
#[test]
fn a_read_only_state_database_is_one_line_and_exit_30_without_a_restart() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    assert_eq!(repo.run(&["run"]).status.code(), Some(10));
    repo.configure(&plan(&repo, &["a", "b"], 1, 1));
    let db = repo.root.join(".nightshift/state.db");
    let Some(_held) = ReadOnly::make(&db) else {
        return;
    };
    let out = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(30), "{stderr}");
    assert!(!stderr.contains("restarting"), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("is read-only") && errors[0].contains("writable"),
        "{stderr}"
    );
    assert!(!stderr.contains("help: the run is resumable"), "{stderr}");
    assert_eq!(repo.shipped_items(), ["a"], "nothing ran");
    eprintln!("{}", errors[0]);
}
