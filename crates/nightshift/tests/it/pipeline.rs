//! The pipeline end to end: items ship one commit each, a hopeless item parks, the run goes on.

use crate::harness::*;

#[test]
fn five_items_four_ship_one_parks_and_the_run_goes_on() {
    let repo = Repo::new(&project());
    for id in ["alpha", "bravo", "charlie", "delta"] {
        repo.agent(id, &solves(id));
    }
    repo.agent("echo", NEVER_SOLVES);
    // The hopeless item sits in the middle: the queue must move past it.
    repo.configure(&plan(
        &repo,
        &["alpha", "bravo", "echo", "charlie", "delta"],
        2,
        2,
    ));
    let before = repo.git(&["rev-parse", "main"]);

    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));

    assert_eq!(
        repo.shipped_items(),
        ["alpha", "bravo", "charlie", "delta"],
        "one commit per shipped item, in order"
    );
    let new_commits = repo.git(&["rev-list", "--count", &format!("{}..main", before.trim())]);
    assert_eq!(new_commits.trim(), "4");
    for id in ["alpha", "bravo", "charlie", "delta"] {
        assert_eq!(repo.git(&["show", &format!("main:done/{id}")]), "ok\n");
        assert_eq!(repo.item_state(id), "shipped");
    }
    let status = repo.status_json();
    let echo = status["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "echo")
        .unwrap()
        .clone();
    assert_eq!(echo["state"], "parked");
    assert_eq!(echo["reason"], "check still red after 2 iterations");
    // Two attempts, then one more in the parked pass.
    assert_eq!(echo["attempts"], 3);
    assert_eq!(status["run"]["halt_reason"], "queue_drained_with_parked");
    assert_eq!(status["run"]["exit_code"], 11);
    // The parked item's work is kept, untracked files included.
    for attempt in 1..=3 {
        let r = format!("refs/nightshift/preserve/echo/{attempt}");
        // Two iterations, each appending once: the last iteration's dirty tree is what is kept.
        assert_eq!(
            repo.git(&["show", &format!("{r}:notes.txt")]),
            "tried\ntried\n",
            "{r}"
        );
        assert_eq!(
            repo.git(&["show", &format!("{r}:done/wrong")]),
            "nope\n",
            "{r}"
        );
    }
    assert!(
        !repo
            .git(&["log", "--format=%B", "main"])
            .contains("Nightshift-Item: echo")
    );
    repo.assert_clean_end();
}

#[test]
fn all_shipped_exits_10_and_red_output_feeds_the_next_iteration() {
    let repo = Repo::new(&project());
    // Solves the item only on iteration 2, and only if it was handed the check's complaint.
    repo.agent(
        "only",
        &format!(
            "record {log}\nwhen iteration >= 2\nwrite done/only <<EOF\nok\nEOF\n",
            log = repo.agent_dir.join("calls.jsonl").display()
        ),
    );
    repo.configure(&plan(&repo, &["only"], 3, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["only"]);
    let calls: Vec<serde_json::Value> = std::fs::read_to_string(repo.agent_dir.join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(calls.len(), 2, "two sessions: red, then green");
    assert!(
        calls[0]["feedback_file"].is_null(),
        "no feedback on the first iteration"
    );
    let feedback = std::fs::read_to_string(calls[1]["feedback_file"].as_str().unwrap()).unwrap();
    assert!(
        feedback.contains("FAIL: done/only is not ok"),
        "feedback: {feedback}"
    );
    let prompt = std::fs::read_to_string(calls[1]["prompt_file"].as_str().unwrap()).unwrap();
    assert!(
        prompt.contains("Make done/only say ok.") && prompt.contains("FAIL: done/only"),
        "prompt: {prompt}"
    );
    assert_eq!(calls[1]["iteration"], 2);
    repo.assert_clean_end();
}

#[test]
fn a_target_moved_by_someone_else_is_merged_onto_and_checked_again() {
    let repo = Repo::new(&project());
    // While the agent's work is checked, a person commits to main in the user's checkout.
    let check = repo.check_after_person(
        "late",
        "echo 'from a human' > human.txt && git add human.txt && git commit -q -m 'human work'",
        "sh check.sh late",
    );
    repo.agent("late", "write done/late <<EOF\nok\nEOF\n");
    let config = plan(&repo, &["late"], 1, 1).replacen(
        "check = \"sh check.sh late\"",
        &format!("check = \"{check}\""),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let log = repo.git(&["log", "--format=%s", "main"]);
    let subjects: Vec<&str> = log.lines().collect();
    assert_eq!(subjects[0].split(':').next(), Some("late"), "{subjects:?}");
    assert_eq!(
        subjects[1], "human work",
        "the human's commit is kept under ours: {subjects:?}"
    );
    assert_eq!(repo.git(&["show", "main:human.txt"]), "from a human\n");
    let events: Vec<String> = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name().to_owned())
        .collect();
    let merged_check = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .into_iter()
        .any(|e| {
            matches!(
                e.kind,
                nightshift_core::store::EventKind::CheckEnded {
                    stage: nightshift_core::store::CheckStage::Merged,
                    green: true,
                    ..
                }
            )
        });
    assert!(merged_check, "the merged result was checked: {events:?}");
    repo.assert_clean_end();
}

#[test]
fn a_markdown_checklist_is_a_plan() {
    let repo = Repo::new(&project());
    repo.write(
        "TODO.md",
        "# Tonight\n\n- [x] Already done\n- [ ] Make the first thing\n- [ ] Make the second thing\n",
    );
    repo.agent(
        "default",
        "write done/x <<EOF\nok\nEOF\nappend changes.txt <<EOF\none more\nEOF\n",
    );
    // `plan` is a top-level key: it comes before the first table.
    let config = format!(
        "plan = \"TODO.md\"\n{}\n[check]\ncommand = \"sh check.sh x\"\n",
        repo.agent_table()
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let status = repo.status_json();
    let ids: Vec<&str> = status["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["make-the-first-thing", "make-the-second-thing"],
        "the checked line is skipped"
    );
    assert_eq!(repo.shipped_items(), ids);
    assert_eq!(
        repo.git(&["show", "main:changes.txt"]),
        "one more\none more\n"
    );
    repo.assert_clean_end();
}

#[test]
fn an_agent_that_changes_nothing_does_not_ship() {
    let repo = Repo::new(&project());
    repo.write("done/idle", "ok\n"); // the check is already green
    repo.agent("idle", "emit claude text=\"All done!\"\n");
    repo.configure(&plan(&repo, &["idle"], 1, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let status = repo.status_json();
    assert_eq!(status["items"][0]["state"], "parked");
    assert_eq!(status["items"][0]["reason"], "the agent made no changes");
    assert_eq!(repo.shipped_items(), Vec::<String>::new());
    repo.assert_clean_end();
}

#[test]
fn what_lands_is_exactly_what_the_check_judged() {
    let repo = Repo::new(&project());
    repo.agent("art", &solves("art"));
    // A check that leaves an artifact behind (not ignored): it was never judged, so it must
    // never reach the target.
    let config = plan(&repo, &["art"], 1, 1).replace(
        "check = \"sh check.sh art\"",
        "check = \"echo generated > check-artifact.txt; sh check.sh art\"",
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let files = repo.git(&["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.contains("done/art"), "{files}");
    assert!(
        !files.contains("check-artifact.txt"),
        "an unchecked artifact shipped: {files}"
    );
    repo.assert_clean_end();
}

#[test]
fn a_worktree_removed_by_hand_fails_its_attempt_and_the_run_goes_on() {
    let repo = Repo::new(&project());
    let wt = repo.root.join(".nightshift/worktrees");
    // The agent deletes its own worktree (as a disk cleaner or a person might), the first time.
    let marker = repo.agent_dir.join("once");
    let agent = format!(
        "if [ ! -e {m} ]; then touch {m}; rm -rf {wt}/gone-1; exit 0; fi; mkdir -p done; echo ok > done/gone",
        m = marker.display(),
        wt = wt.display()
    );
    let config = plan(&repo, &["gone"], 1, 2).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["gone"]);
    let reasons: Vec<String> = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            nightshift_core::store::EventKind::AttemptFailed { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("disappeared"), "{reasons:?}");
    repo.assert_clean_end();
}
