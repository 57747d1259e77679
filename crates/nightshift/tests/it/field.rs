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
