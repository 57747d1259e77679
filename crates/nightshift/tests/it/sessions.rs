//! Sessions bounded by work, not only by time: every misbehaviour of the scripted agent ends in
//! the right outcome, the item retried or parked as policy says, and the run going on.

use nightshift_core::store::{Event, EventKind, Outcome};

use crate::harness::*;

/// A plan where `bad` misbehaves as `script` says and `good` (after it) just works.
fn repo_with(script: &str, limits: &str) -> Repo {
    let repo = Repo::new(&project());
    repo.agent("bad", script);
    repo.agent("good", &solves("good"));
    let mut config = plan(&repo, &["bad", "good"], 1, 1)
        .replace("command = [", "format = \"claude-stream\"\ncommand = [");
    config = config.replace("[limits]\n", &format!("[limits]\n{limits}"));
    repo.configure(&config);
    repo
}

fn events(repo: &Repo) -> Vec<Event> {
    repo.store().events_after(0, 100_000).unwrap()
}

fn outcomes(repo: &Repo, item: &str) -> Vec<Outcome> {
    events(repo)
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::SessionEnded {
                item: i, outcome, ..
            } if i == item => Some(outcome),
            _ => None,
        })
        .collect()
}

fn assert_run_went_on(repo: &Repo) {
    assert_eq!(
        repo.item_state("good"),
        "shipped",
        "the run went on past the bad item"
    );
    assert!(repo.shipped_items().contains(&"good".to_owned()));
    repo.assert_clean_end();
}

#[test]
fn a_silent_agent_is_nudged_then_ends_as_stalled() {
    let repo = repo_with(
        "go-silent forever\n",
        "stall_grace = \"300ms\"\nstall_nudges = 2\nkill_grace = \"200ms\"\n",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    // Two nudges (the same iteration again each time), then stalled for good; twice, since the
    // parked item gets one more attempt in the next pass.
    assert_eq!(outcomes(&repo, "bad"), [Outcome::Stalled; 6]);
    let nudges = events(&repo)
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::SessionNudged { .. }))
        .count();
    assert_eq!(
        nudges, 4,
        "2 nudges in each of its 2 attempts (1 + the parked pass)"
    );
    let prompt_with_nudge = std::fs::read_dir(repo.root.join(".nightshift/logs"))
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-n1.prompt.md"))
        .expect("a nudge prompt was written");
    assert!(
        std::fs::read_to_string(prompt_with_nudge)
            .unwrap()
            .contains("You went silent")
    );
    assert_eq!(repo.item_state("bad"), "parked");
    assert_run_went_on(&repo);
}

#[test]
fn a_busy_overspending_agent_ends_over_budget_within_one_event_of_the_limit() {
    let repo = repo_with(
        "busy forever usage-per-turn=300 interval=20ms\n",
        "session_tokens = 1000\nkill_grace = \"200ms\"\n",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(outcomes(&repo, "bad")[0], Outcome::OverBudget);
    let all = events(&repo);
    let (used, limit, enforced) = all
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::BudgetTripped {
                used,
                limit,
                enforced,
                ..
            } => Some((*used, *limit, *enforced)),
            _ => None,
        })
        .expect("budget_tripped journaled");
    assert_eq!(limit, 1000.0);
    assert!(enforced);
    assert!(
        (1000.0..1300.0).contains(&used),
        "tripped on the first event past the limit, used {used}"
    );
    let warned = all.iter().any(|e| matches!(e.kind, EventKind::BudgetWarned { used, .. } if (800.0..1000.0).contains(&used)));
    assert!(warned, "the soft limit (80%) warned first");
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(attention.contains("budget tripped"), "{attention}");
    assert_run_went_on(&repo);
}

#[test]
fn an_agent_ignoring_sigterm_is_killed_after_the_grace() {
    let repo = repo_with(
        "ignore-sigterm\ngo-silent forever\n",
        "session_timeout = \"400ms\"\nkill_grace = \"200ms\"\n",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(outcomes(&repo, "bad")[0], Outcome::Timeout);
    assert_run_went_on(&repo);
}

#[test]
fn a_usage_limit_spends_no_attempt_waits_for_the_reset_and_reruns_the_iteration() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("limited-once");
    repo.agent(
        "bad",
        &format!(
            "when file-missing {m}\ntouch {m}\nusage-limit in=1s\nalways\nwrite done/bad <<EOF\nok\nEOF\n",
            m = marker.display()
        ),
    );
    let config = plan(&repo, &["bad"], 1, 1)
        .replace("command = [", "format = \"claude-stream\"\ncommand = [");
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        outcomes(&repo, "bad"),
        [Outcome::RateLimited, Outcome::Completed]
    );
    let all = events(&repo);
    let resets_at = all
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::SessionEnded { resets_at, .. } => *resets_at,
            _ => None,
        })
        .expect("the reset time was read from the stream");
    let paused_until = all
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunPaused { until, .. } => Some(*until),
            _ => None,
        })
        .expect("run_paused");
    assert!(paused_until >= resets_at);
    // The retry started only after the reset, in the same attempt and iteration.
    let starts: Vec<&Event> = all
        .iter()
        .filter(|e| e.kind.name() == "session_started")
        .collect();
    assert_eq!(starts.len(), 2);
    let second: jiff::Timestamp = starts[1].at.parse().unwrap();
    assert!(second.as_second() >= resets_at, "retried before the reset");
    assert!(matches!(
        starts[1].kind,
        EventKind::SessionStarted {
            attempt: 1,
            iteration: 1,
            ..
        }
    ));
    let status = repo.status_json();
    assert_eq!(
        status["items"][0]["attempts"], 1,
        "no attempt spent on the limit"
    );
    repo.assert_clean_end();
}

#[test]
fn seed_003_a_process_left_writing_into_the_worktree_does_not_stop_shipping() {
    let repo = repo_with(
        "spawn-orphan .pytest_cache/README.md interval=10ms\nwrite done/bad <<EOF\nok\nEOF\n",
        "",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["bad", "good"]);
    // The orphan (its own session, cwd in the worktree) is gone, and so is every worktree dir.
    let log = std::fs::read_dir(repo.root.join(".nightshift/logs"))
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .find(|p| p.to_string_lossy().contains("bad-a1-i1.agent.log"))
        .unwrap();
    let text_ = std::fs::read_to_string(log).unwrap();
    let pid: i32 = text_
        .lines()
        .find_map(|l| l.strip_prefix("fake-agent: orphan pid "))
        .and_then(|p| p.trim().parse().ok())
        .expect("the orphan's pid is in the agent log");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z"),
        "the orphan survived: {stat}"
    );
    repo.assert_clean_end();
}

#[test]
fn a_crashing_agent_spends_its_attempt_and_the_run_goes_on() {
    let repo = repo_with("crash\n", "");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(outcomes(&repo, "bad")[0], Outcome::Crashed);
    assert_eq!(repo.item_state("bad"), "parked");
    assert_run_went_on(&repo);
}

#[test]
fn malformed_and_unknown_lines_are_skipped_not_fatal() {
    let repo = repo_with(
        "emit-malformed\nemit claude text=\"done\" turns=2 input=500 output=50\nwrite done/bad <<EOF\nok\nEOF\n",
        "",
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let spend = events(&repo)
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::SessionEnded { item, spend, .. } if item == "bad" => spend,
            _ => None,
        })
        .expect("the session's spend was read from its stream");
    // The two emitted turns, plus the assistant object that had a rate_limit_event glued into
    // it: recovered, not dropped.
    assert_eq!(spend.input, 500);
    assert_eq!(spend.turns, 3);
    assert_run_went_on(&repo);
}
