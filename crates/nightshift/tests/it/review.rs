//! Review, triage, review debt, `accept` and `confirm`, end to end: the real binary, real git,
//! the scripted dev agent, and review agents that are shell scripts writing their verdict to
//! `$NIGHTSHIFT_VERDICT_FILE` (or printing it as a fenced JSON block).

use nightshift_core::store::EventKind;

use crate::harness::*;

/// Writes the review agent (a shell script) and configures `items` with `[review] when =
/// "always"` plus `extra` TOML under `[review]`.
fn configure(repo: &Repo, items: &[&str], max_attempts: u32, extra: &str, review_sh: &str) {
    let script = repo.agent_dir.join("review.sh");
    let log = repo.agent_dir.join("reviews.log");
    std::fs::write(
        &script,
        format!(
            "echo \"$NIGHTSHIFT_REVIEW $NIGHTSHIFT_ITEM $NIGHTSHIFT_ATTEMPT $NIGHTSHIFT_REVIEW_CYCLE\" >> {}\n\
             verdict() {{ printf '%s\\n' \"$1\" > \"$NIGHTSHIFT_VERDICT_FILE\"; }}\n{review_sh}",
            log.display()
        ),
    )
    .unwrap();
    repo.configure(&format!(
        "{}\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\n{extra}",
        plan(repo, items, 3, max_attempts),
        script.display()
    ));
}

/// One line per review session: `KIND ITEM ATTEMPT CYCLE`.
fn reviews(repo: &Repo) -> Vec<String> {
    std::fs::read_to_string(repo.agent_dir.join("reviews.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn events(repo: &Repo) -> Vec<EventKind> {
    repo.store()
        .events_after(0, 100_000)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

/// `(action, class)` of every review decision, in order.
fn decisions(repo: &Repo) -> Vec<(String, Option<String>)> {
    events(repo)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::ReviewDecided { action, class, .. } => Some((action, class)),
            _ => None,
        })
        .collect()
}

fn debts(repo: &Repo) -> Vec<(String, String)> {
    repo.store()
        .debts()
        .unwrap()
        .into_iter()
        .map(|d| (d.item, d.state))
        .collect()
}

fn attention(repo: &Repo) -> String {
    std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap_or_default()
}

const APPROVE: &str =
    r#"verdict '{"verdict": "approve", "reason": "looks right", "findings": []}'"#;

/// Seed 000's false positive: the review's VC-hygiene gate escalates, CRITICAL, over a dirty
/// tree, while the work is done and the check green.
const DIRTY_TREE_ESCALATION: &str = r#"verdict '{"verdict": "escalate", "reason": "Status: done. VC hygiene gate failed", "findings": [{"severity": "critical", "file": "done", "text": "working tree is dirty: artifacts left uncommitted"}]}'"#;

#[test]
fn an_approving_review_ships_after_seeing_the_diff_and_the_check() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure(&repo, &["a"], 1, "", APPROVE);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(reviews(&repo), ["review a 1 1"]);
    assert_eq!(decisions(&repo), [("approve".into(), None)]);
    // The reviewer saw the item, the diff against the base and the check, in its own prompt.
    let run = repo.status_json()["run"]["id"].as_str().unwrap().to_owned();
    let prompt = std::fs::read_to_string(
        repo.root
            .join(format!(".nightshift/logs/{run}/a-a1-r1.review-prompt.md")),
    )
    .unwrap();
    assert!(prompt.contains("Make done/a say ok."), "{prompt}");
    assert!(prompt.contains("+ok"), "the diff: {prompt}");
    assert!(prompt.contains("sh check.sh a"), "the check: {prompt}");
    assert!(debts(&repo).is_empty());
    repo.assert_clean_end();
}

#[test]
fn request_changes_feeds_a_repair_then_an_approval_ships() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    // Cycle 1 asks for changes in a fenced block of its output; cycle 2 approves.
    configure(
        &repo,
        &["a"],
        1,
        "",
        "if [ \"$NIGHTSHIFT_REVIEW_CYCLE\" = 1 ]; then\n\
         printf 'Some thoughts.\\n```json\\n{\"verdict\": \"request_changes\", \"reason\": \"needs a newline\", \"findings\": [{\"severity\": \"medium\", \"file\": \"done/a\", \"line\": 1, \"text\": \"add a trailing comment\"}]}\\n```\\n'\n\
         else\n  verdict '{\"verdict\": \"approve\", \"reason\": \"fixed\"}'\nfi\n",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(reviews(&repo), ["review a 1 1", "review a 1 2"]);
    assert_eq!(
        decisions(&repo),
        [("repair".into(), None), ("approve".into(), None)]
    );
    // The repair iteration (2) ran in the same attempt, told the findings.
    let run = repo.status_json()["run"]["id"].as_str().unwrap().to_owned();
    let prompt = std::fs::read_to_string(
        repo.root
            .join(format!(".nightshift/logs/{run}/a-a1-i2.prompt.md")),
    )
    .unwrap();
    assert!(
        prompt.contains("- [medium] done/a:1: add a trailing comment"),
        "{prompt}"
    );
    repo.assert_clean_end();
}

#[test]
fn review_cycles_exhausted_park_the_item_with_its_branch_kept() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure(
        &repo,
        &["a"],
        1,
        "max_review_cycles = 2\n",
        r#"verdict '{"verdict": "request_changes", "reason": "never happy", "findings": [{"severity": "low", "text": "rename it"}]}'"#,
    );
    let out = repo.run(&["run"]);
    // Parked with one attempt: the next pass gives it one more, which is parked the same way.
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "parked");
    assert!(repo.shipped_items().is_empty());
    let d = decisions(&repo);
    assert_eq!(&d[..2], [("repair".into(), None), ("park".into(), None)]);
    assert!(
        repo.git(&["branch", "--list", "nightshift/a/1"])
            .contains("nightshift/a/1"),
        "the branch is kept"
    );
    repo.assert_clean_end();
}

/// A review that never answers, under a short `[review] timeout`.
const HANGS_ON_REVIEW: &str = "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  verdict '{\"verdict\": \"approve\", \"reason\": \"ok later\"}'\n  exit 0\nfi\nexec sleep 600\n";

#[test]
fn review_timeout_retry_reviews_again_then_escalates() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure(
        &repo,
        &["a"],
        1,
        "max_review_cycles = 2\ntimeout = \"1s\"\non_timeout = \"retry\"\n",
        HANGS_ON_REVIEW,
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("escalation_pending"),
        "{}",
        text(&out)
    );
    assert_eq!(reviews(&repo), ["review a 1 1", "review a 1 2"]);
    assert_eq!(
        decisions(&repo),
        [("retry".into(), None), ("escalate".into(), None)]
    );
    assert_eq!(repo.item_state("a"), "escalated");
    assert!(
        attention(&repo).contains("a: escalated"),
        "{}",
        attention(&repo)
    );
    repo.assert_clean_end();
}

#[test]
fn review_timeout_salvage_ships_the_checked_work_and_the_debt_is_reviewed_later() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure(
        &repo,
        &["a"],
        1,
        "timeout = \"1s\"\non_timeout = \"salvage-if-done\"\n",
        HANGS_ON_REVIEW,
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(decisions(&repo), [("ship_with_debt".into(), None)]);
    assert_eq!(reviews(&repo), ["review a 1 1", "debt a 1 1"]);
    assert_eq!(debts(&repo), [("a".into(), "paid".into())]);
    repo.assert_clean_end();
}

#[test]
fn review_timeout_defer_parks_the_item_with_its_branch_kept() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure(
        &repo,
        &["a"],
        1,
        "timeout = \"1s\"\non_timeout = \"defer\"\n",
        HANGS_ON_REVIEW,
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "parked");
    assert_eq!(decisions(&repo)[0], ("defer".into(), None));
    assert!(repo.shipped_items().is_empty());
    assert!(debts(&repo).is_empty());
    repo.assert_clean_end();
}

#[test]
fn seed_000_a_dirty_tree_escalation_on_green_work_ships_with_debt_paid_in_the_same_run() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    configure(
        &repo,
        &["a", "b"],
        1,
        "",
        &format!(
            "if [ \"$NIGHTSHIFT_REVIEW\" = debt ] || [ \"$NIGHTSHIFT_ITEM\" = b ]; then\n  {APPROVE}\nelse\n  {DIRTY_TREE_ESCALATION}\nfi\n"
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a", "b"]);
    assert_eq!(
        decisions(&repo),
        [
            ("ship_with_debt".into(), Some("false_positive".into())),
            ("approve".into(), None)
        ]
    );
    // The debt is paid at the next opportunity: before item b starts.
    assert_eq!(
        reviews(&repo),
        ["review a 1 1", "debt a 1 1", "review b 1 1"]
    );
    assert_eq!(debts(&repo), [("a".into(), "paid".into())]);
    assert!(
        !attention(&repo).contains("escalated"),
        "no person was woken"
    );
    repo.assert_clean_end();
}

#[test]
fn a_really_dirty_tree_is_mechanical_fixed_and_reviewed_again() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    // The first reviewer leaves a file behind and objects to it; the tree is put back to the
    // checked commit and the second review approves.
    configure(
        &repo,
        &["a"],
        1,
        "",
        &format!(
            "if [ \"$NIGHTSHIFT_REVIEW_CYCLE\" = 1 ]; then\n  echo junk > review-notes.txt\n  {DIRTY_TREE_ESCALATION}\nelse\n  test ! -e review-notes.txt && {APPROVE}\nfi\n"
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        decisions(&repo),
        [
            ("fix".into(), Some("mechanical".into())),
            ("approve".into(), None)
        ]
    );
    assert!(debts(&repo).is_empty());
    assert!(
        !repo
            .git(&["show", "--stat", "--format=", "main"])
            .contains("review-notes"),
        "nothing the reviewer wrote ships"
    );
    repo.assert_clean_end();
}

#[test]
fn a_high_severity_debt_review_reopens_the_item_on_top_of_the_shipped_code_and_alerts() {
    let repo = Repo::new(&project());
    // Every session changes something, so the reopened attempt has work of its own.
    repo.agent(
        "a",
        &format!("{}append done/fixes <<EOF\nfixed\nEOF\n", solves("a")),
    );
    configure(
        &repo,
        &["a"],
        1,
        "",
        &format!(
            "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  verdict '{{\"verdict\": \"request_changes\", \"reason\": \"unsafe\", \"findings\": [{{\"severity\": \"high\", \"file\": \"done/a\", \"line\": 1, \"text\": \"the token is compared in variable time\"}}]}}'\nelif [ \"$NIGHTSHIFT_ATTEMPT\" = 1 ]; then\n  {DIRTY_TREE_ESCALATION}\nelse\n  {APPROVE}\nfi\n"
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        reviews(&repo),
        ["review a 1 1", "debt a 1 1", "review a 2 1"]
    );
    assert_eq!(debts(&repo), [("a".into(), "reopened".into())]);
    assert!(
        attention(&repo).contains("a: the review it shipped without found a problem"),
        "{}",
        attention(&repo)
    );
    // Attempt 2 started on top of the shipped code, told the findings.
    let store = repo.store();
    let run = store.latest_run().unwrap().unwrap().id;
    let attempts = store.attempts(&run).unwrap();
    assert_eq!(attempts.len(), 2);
    let shipped_first = events(&repo)
        .into_iter()
        .find_map(|k| match k {
            EventKind::Integrated {
                commit, attempt: 1, ..
            } => Some(commit),
            _ => None,
        })
        .unwrap();
    assert_eq!(attempts[1].base, shipped_first);
    let prompt = std::fs::read_to_string(
        repo.root
            .join(format!(".nightshift/logs/{run}/a-a2-i1.prompt.md")),
    )
    .unwrap();
    assert!(
        prompt.contains("the token is compared in variable time"),
        "{prompt}"
    );
    assert_eq!(repo.item_state("a"), "shipped");
    repo.assert_clean_end();
}

#[test]
fn a_debt_that_cannot_be_paid_keeps_the_run_from_exiting_10() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    // The debt reviewer never gives a readable verdict.
    configure(
        &repo,
        &["a"],
        1,
        "max_review_cycles = 2\n",
        &format!(
            "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  echo 'looks fine to me'\nelse\n  {DIRTY_TREE_ESCALATION}\nfi\n"
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("debt_outstanding"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(reviews(&repo), ["review a 1 1", "debt a 1 1", "debt a 1 2"]);
    assert_eq!(debts(&repo), [("a".into(), "open".into())]);
    // The supervisor's health file shows the debt too.
    let health: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.root.join(".nightshift/health.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(health["debts_outstanding"], 1, "{health}");
    repo.assert_clean_end();
}

/// Real doubt (an objection about the work itself) with no second opinion configured.
const REAL_DOUBT: &str = r#"verdict '{"verdict": "escalate", "reason": "unsure", "findings": [{"severity": "medium", "file": "done/a", "text": "is this the intended value?"}]}'"#;

fn dev_sessions(repo: &Repo) -> usize {
    std::fs::read_to_string(repo.agent_dir.join("dev.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

fn escalated_item(repo: &Repo) {
    repo.agent(
        "a",
        &format!(
            "{}record {}\n",
            solves("a"),
            repo.agent_dir.join("dev.log").display()
        ),
    );
    configure(
        repo,
        &["a"],
        1,
        "",
        &format!(
            "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  {APPROVE}\nelse\n  {REAL_DOUBT}\nfi\n"
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "escalated");
    assert_eq!(
        decisions(repo),
        [("escalate".into(), Some("real_doubt".into()))]
    );
    assert_eq!(dev_sessions(repo), 1);
}

#[test]
fn accept_integrates_the_kept_branch_without_a_new_session_and_the_next_run_pays_the_debt() {
    let repo = Repo::new(&project());
    escalated_item(&repo);
    assert!(repo.shipped_items().is_empty());

    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("review debt recorded"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(repo.item_state("a"), "shipped");
    assert_eq!(dev_sessions(&repo), 1, "no new dev session");
    assert_eq!(debts(&repo), [("a".into(), "open".into())]);
    assert_eq!(repo.status_json()["debts"][0]["item"], "a");
    repo.assert_clean_end();

    // The next run reviews the debt before anything else, and exits 10 once it is paid.
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(debts(&repo), [("a".into(), "paid".into())]);
    assert_eq!(
        reviews(&repo).last().map(String::as_str),
        Some("debt a 1 1")
    );
    assert_eq!(dev_sessions(&repo), 1);
    repo.assert_clean_end();
}

#[test]
fn accept_moves_nothing_when_the_check_is_red_on_the_merged_result() {
    let repo = Repo::new(&project());
    escalated_item(&repo);
    // Meanwhile the target's check changes so that the kept work no longer passes on it.
    repo.write(
        "check.sh",
        "#!/bin/sh\n[ -e extra ] || { echo 'FAIL: extra is missing'; exit 1; }\n[ \"$(cat done/$1 2>/dev/null)\" = ok ] || exit 1\n",
    );
    repo.git(&["commit", "-q", "-am", "stricter check"]);
    let before = repo.git(&["rev-parse", "main"]);

    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("check is red"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), before, "nothing moved");
    assert_eq!(repo.item_state("a"), "escalated");
    assert!(debts(&repo).is_empty());
    assert!(
        repo.git(&["branch", "--list", "nightshift/a/1"])
            .contains("nightshift/a/1"),
        "the kept branch is still there"
    );
    repo.assert_clean_end();
}

#[test]
fn accept_runs_the_guards_on_the_merged_result_and_moves_nothing_when_one_fails() {
    let repo = Repo::new(&project());
    escalated_item(&repo);
    // Before accepting, the operator blocks the path the kept work changes.
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml")).unwrap();
    repo.write(
        "nightshift.toml",
        &format!("{config}\n[guards]\nblocked_paths = [\"done/**\"]\n"),
    );
    repo.git(&["commit", "-q", "-am", "block done/"]);
    let before = repo.git(&["rev-parse", "main"]);

    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("blocked_path_modified") && stderr.contains("done/a"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), before, "nothing moved");
    assert_eq!(repo.item_state("a"), "escalated");
    repo.assert_clean_end();
}

#[test]
fn accept_killed_after_moving_the_target_records_it_once_on_the_next_accept() {
    use std::os::unix::process::ExitStatusExt;
    let repo = Repo::new(&project());
    escalated_item(&repo);
    let killed = repo
        .cmd(&["accept", "a"])
        .env(nightshift_core::failpoint::ENV, "accept_moved")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{}", text(&killed));
    let moved = repo.git(&["rev-parse", "main"]);
    assert_eq!(
        repo.item_state("a"),
        "escalated",
        "the move is not journaled yet"
    );

    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        moved,
        "not merged a second time"
    );
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(repo.item_state("a"), "shipped");
    repo.assert_clean_end();
}

/// The same refusal as the run's (integrate.rs, `a_stuck_target_ref_halts_resumable_…`): one
/// integrator tells a ref stuck at the tip from a lost race, for `accept` as for the engine.
#[test]
fn accept_with_a_stuck_target_ref_names_gits_reason_moves_nothing_and_ships_once_it_is_cleared() {
    let repo = Repo::new(&project());
    escalated_item(&repo);
    // The user works on another branch, so main moves by compare-and-swap; a stale lock blocks it.
    repo.git(&["checkout", "-q", "-b", "elsewhere"]);
    let before = repo.git(&["rev-parse", "main"]);
    let lock = repo.root.join(".git/refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();

    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(30), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("main.lock") && stderr.contains("stale `.lock`"),
        "{}",
        text(&out)
    );
    assert!(!stderr.contains("moved meanwhile"), "{}", text(&out));
    assert_eq!(repo.git(&["rev-parse", "main"]), before, "nothing moved");
    assert_eq!(repo.item_state("a"), "escalated");

    std::fs::remove_file(&lock).unwrap();
    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.assert_clean_end();
}

#[test]
fn accept_refuses_while_a_run_holds_the_lock_and_on_an_item_that_is_not_escalated() {
    let repo = Repo::new(&project());
    escalated_item(&repo);
    {
        let _lock = nightshift_core::store::RunLock::acquire(
            &repo.root.join(".nightshift/lock"),
            "pid 1 test",
        )
        .unwrap();
        let out = repo.run(&["accept", "a"]);
        assert_eq!(out.status.code(), Some(30), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("run_locked"),
            "{}",
            text(&out)
        );
    }
    let out = repo.run(&["confirm", "a"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    let out = repo.run(&["accept", "nope"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "escalated");
}

#[test]
fn awaiting_operator_parks_without_stopping_the_run_and_confirm_ships_it() {
    let repo = Repo::new(&project());
    let dev = repo.agent_dir.join("dev.sh");
    std::fs::write(
        &dev,
        "mkdir -p done\necho ok > done/$NIGHTSHIFT_ITEM\n\
         if [ \"$NIGHTSHIFT_ITEM\" = a ]; then\n  echo '[\"add the DNS record a.example.com\"]' > \"$NIGHTSHIFT_OPERATOR_FILE\"\nfi\n",
    )
    .unwrap();
    let config = plan(&repo, &["a", "b"], 1, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
            dev.display()
        ),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("awaiting_operator"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.item_state("a"), "awaiting_operator");
    assert_eq!(repo.shipped_items(), ["b"], "the run went on");
    assert!(
        attention(&repo).contains("add the DNS record a.example.com"),
        "{}",
        attention(&repo)
    );
    let status = repo.status_json();
    let a = status["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "a")
        .unwrap()
        .clone();
    assert_eq!(a["operator_actions"][0], "add the DNS record a.example.com");

    let out = repo.run(&["confirm", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("confirmed: add the DNS record"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.shipped_items(), ["b", "a"]);
    assert_eq!(repo.item_state("a"), "shipped");
    assert!(debts(&repo).is_empty(), "no review was configured");
    repo.assert_clean_end();
}

#[test]
fn real_doubt_goes_to_a_second_opinion_which_decides() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    let second = repo.agent_dir.join("second.sh");
    // The second opinion approves a, and escalates b.
    std::fs::write(
        &second,
        format!(
            "echo \"second $NIGHTSHIFT_ITEM\" >> {}\nif [ \"$NIGHTSHIFT_ITEM\" = a ]; then v=approve; else v=escalate; fi\n\
             printf '{{\"verdict\": \"%s\", \"reason\": \"second look\"}}\\n' $v > \"$NIGHTSHIFT_VERDICT_FILE\"\n",
            repo.agent_dir.join("reviews.log").display()
        ),
    )
    .unwrap();
    configure(
        &repo,
        &["a", "b"],
        1,
        &format!(
            "\n[agent.second_opinion]\ncommand = [\"sh\", \"{}\"]\n",
            second.display()
        ),
        REAL_DOUBT,
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(repo.item_state("b"), "escalated");
    assert_eq!(
        reviews(&repo),
        ["review a 1 1", "second a", "review b 1 1", "second b"]
    );
    assert_eq!(
        decisions(&repo),
        [
            ("second_opinion".into(), Some("real_doubt".into())),
            ("approve".into(), None),
            ("second_opinion".into(), Some("real_doubt".into())),
            ("escalate".into(), None),
        ]
    );
    assert!(debts(&repo).is_empty(), "reviewed twice is not debt");
    repo.assert_clean_end();
}

#[test]
fn risky_reviews_only_diffs_touching_risky_paths() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent(
        "b",
        &format!(
            "{}write auth/token.rs <<EOF\nfn check() {{}}\nEOF\n",
            solves("b")
        ),
    );
    configure(
        &repo,
        &["a", "b"],
        1,
        "risky_paths = [\"auth/**\"]\n",
        APPROVE,
    );
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml"))
        .unwrap()
        .replace("when = \"always\"", "when = \"risky\"");
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a", "b"]);
    assert_eq!(reviews(&repo), ["review b 1 1"], "only b touched auth/");
    repo.assert_clean_end();
}

#[test]
fn a_malformed_verdict_is_not_an_approval() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure(
        &repo,
        &["a"],
        1,
        "max_review_cycles = 2\n",
        "verdict '{\"verdict\": \"lgtm\"}'\n",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert!(repo.shipped_items().is_empty());
    assert_eq!(
        decisions(&repo),
        [("retry".into(), None), ("escalate".into(), None)]
    );
    repo.assert_clean_end();
}

#[test]
fn a_kill_during_the_review_phase_resumes_to_the_same_verdict() {
    use std::os::unix::process::ExitStatusExt;
    for point in [
        "review_started",
        "review_ended",
        "review_decided",
        "debt_review_started",
        "debt_settled",
    ] {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        configure(
            &repo,
            &["a"],
            1,
            "",
            &format!(
                "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  {APPROVE}\nelse\n  {DIRTY_TREE_ESCALATION}\nfi\n"
            ),
        );
        // The engine itself (`run` would restart it: its supervisor is tested in supervise.rs).
        let out = repo
            .cmd(&["engine"])
            .env(nightshift_core::failpoint::ENV, point)
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(9), "{point}: {}", text(&out));
        let out = repo.run(&["run"]);
        assert_eq!(out.status.code(), Some(10), "{point}: {}", text(&out));
        assert_eq!(repo.shipped_items(), ["a"], "{point}: shipped once");
        assert_eq!(debts(&repo), [("a".into(), "paid".into())], "{point}");
        repo.assert_clean_end();
    }
}

#[test]
fn a_reopened_item_that_does_not_ship_again_is_worked_by_the_next_run() {
    let repo = Repo::new(&project());
    // The agent's work is already on the target after the first ship: later attempts change
    // nothing, so the reopened item cannot ship again in this run.
    repo.agent("a", &solves("a"));
    configure(
        &repo,
        &["a"],
        1,
        "",
        &format!(
            "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  verdict '{{\"verdict\": \"escalate\", \"reason\": \"unsafe\"}}'\nelse\n  {DIRTY_TREE_ESCALATION}\nfi\n"
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(debts(&repo), [("a".into(), "reopened".into())]);
    assert_eq!(repo.item_state("a"), "parked");

    // The next run does not take the reopened shipment for a finished item.
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let status = repo.status_json();
    assert_eq!(status["items"][0]["state"], "parked");
    assert!(status["items"][0]["attempts"].as_u64().unwrap() >= 1);
    repo.assert_clean_end();
}

#[test]
fn no_review_session_starts_once_the_run_budget_is_spent() {
    let repo = Repo::new(&project());
    // The work is written first; then the stream reports 110 weighted tokens, past the run's 50.
    repo.agent(
        "a",
        "write done/a <<END\nok\nEND\nemit claude text=\"done\" turns=1 input=100 output=10\n",
    );
    configure(&repo, &["a"], 1, "", APPROVE);
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml"))
        .unwrap()
        .replacen("command = [", "format = \"claude-stream\"\ncommand = [", 1)
        .replace("[limits]\n", "[limits]\nrun_tokens = 50\n");
    repo.write("nightshift.toml", &config);
    repo.git(&["commit", "-q", "-am", "a run budget"]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(18), "{}", text(&out));
    assert_eq!(
        repo.status_json()["run"]["halt_reason"],
        "budget_exceeded",
        "{}",
        text(&out)
    );
    assert!(reviews(&repo).is_empty(), "no review session spent more");
    assert_eq!(repo.shipped_items(), Vec::<String>::new());
}

#[test]
fn accept_ships_a_parked_items_preserved_work_once_the_merged_result_is_green() {
    // The check also wants a file the target does not have yet: the agent's (right) work is
    // red, and the item parks with its work preserved and no kept branch.
    let mut files = project();
    files.retain(|(path, _)| *path != "check.sh");
    files.push((
        "check.sh",
        "#!/bin/sh\n[ -e extra ] || { echo 'FAIL: extra is missing'; exit 1; }\n[ \"$(cat done/$1 2>/dev/null)\" = ok ] || exit 1\n",
    ));
    let repo = Repo::new(&files);
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo.run(&["run"]);
    assert_eq!(repo.item_state("a"), "parked", "{}", text(&out));
    assert!(repo.git(&["branch", "--list", "nightshift/a/*"]).is_empty());

    // Still red on the merged result: refused, nothing moved.
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("check is red"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.git(&["rev-parse", "main"]), before);
    assert_eq!(repo.item_state("a"), "parked");

    // A later change clears it: accept ships the preserved work, checked on the merged result.
    repo.write("extra", "x\n");
    repo.git(&["add", "extra"]);
    repo.git(&["commit", "-q", "-m", "extra"]);
    let out = repo.run(&["accept", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "shipped");
    assert_eq!(repo.shipped_items(), ["a"]);
    assert_eq!(
        repo.git(&["show", "main:done/a"]),
        "ok\n",
        "the parked attempt's work is on the target"
    );
    repo.assert_clean_end();
}
