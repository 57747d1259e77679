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
