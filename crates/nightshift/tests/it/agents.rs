//! The CLI adapters driven end to end, with fake-agent keeping the real CLIs' session rules
//! (`--as claude|codex`: a reused `--session-id` is refused, a resume needs a known session).

use nightshift_core::session::Outcome;
use nightshift_core::store::EventKind;

use crate::harness::*;

/// `[agent]` for `kind` with a wrapper binary that runs fake-agent as that CLI.
fn cli_agent(repo: &Repo, kind: &str) -> String {
    let wrapper = repo.agent_dir.join(format!("{kind}-cli"));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {BIN} __fake-agent --script-dir {} --as {kind} -- \"$@\"\n",
            repo.agent_dir.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "[agent]\nkind = \"{kind}\"\nbinary = \"{}\"\n",
        wrapper.display()
    )
}

fn configure_cli(repo: &Repo, kind: &str, items: &[&str], extra: &str) {
    let config = plan(repo, items, 2, 1).replace(&repo.agent_table(), &cli_agent(repo, kind));
    repo.configure(&format!("{config}{extra}"));
}

fn launches(repo: &Repo, cli: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(repo.home.join(".fake-agent").join(cli).join("launches"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect()
}

fn outcomes(repo: &Repo, item: &str) -> Vec<Outcome> {
    repo.store()
        .events_after(0, 100_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::SessionEnded {
                item: i, outcome, ..
            } if i == item => Some(outcome),
            _ => None,
        })
        .collect()
}

#[test]
fn a_claude_rerun_after_a_usage_limit_resumes_its_session_and_spends_no_attempt() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("limited-once");
    repo.agent(
        "a",
        &format!(
            "when file-missing {m}\ntouch {m}\nusage-limit in=1s\nalways\n{}",
            solves("a"),
            m = marker.display()
        ),
    );
    configure_cli(&repo, "claude", &["a"], "");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(
        outcomes(&repo, "a"),
        [Outcome::RateLimited, Outcome::Completed]
    );
    assert_eq!(repo.item_state("a"), "shipped");
    // One attempt: the rerun was the same iteration.
    assert_eq!(
        repo.status_json()["items"][0]["attempts"],
        1,
        "{}",
        text(&out)
    );
    // The rerun resumed the first process's session instead of passing its id again (which
    // the real CLI refuses: "Session ID … is already in use").
    let l = launches(&repo, "claude");
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!((l[0].0.as_str(), l[1].0.as_str()), ("new", "resume"));
    assert_eq!(l[0].1, l[1].1);
}

#[test]
fn a_new_iteration_starts_a_fresh_claude_session_with_a_fresh_id() {
    let repo = Repo::new(&project());
    repo.agent(
        "a",
        "when iteration == 1\nemit claude text=\"not yet\" turns=1 input=10 output=1\nalways\nwhen iteration >= 2\nemit claude text=\"done\" turns=1 input=10 output=1\nwrite done/a <<EOF\nok\nEOF\n",
    );
    configure_cli(&repo, "claude", &["a"], "");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let l = launches(&repo, "claude");
    assert_eq!(l.len(), 2, "{l:?}");
    assert!(l.iter().all(|(how, _)| how == "new"), "{l:?}");
    assert_ne!(l[0].1, l[1].1);
}

#[test]
fn a_stalled_codex_session_is_nudged_by_resuming_the_thread_it_reported() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("stalled-once");
    // First process: `thread.started` and one turn, then silence. The nudge resumes it.
    repo.agent(
        "a",
        &format!(
            "when file-missing {m}\ntouch {m}\nbusy 1ms usage-per-turn=1 interval=1s format=codex\ngo-silent forever\nalways\nemit codex text=\"done\" input=10 output=1\nwrite done/a <<EOF\nok\nEOF\n",
            m = marker.display()
        ),
    );
    let repo_config = plan(&repo, &["a"], 2, 1)
        .replace(&repo.agent_table(), &cli_agent(&repo, "codex"))
        .replace(
            "[limits]\n",
            "[limits]\nstall_grace = \"300ms\"\nstall_nudges = 1\nkill_grace = \"200ms\"\n",
        );
    repo.configure(&repo_config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(outcomes(&repo, "a"), [Outcome::Stalled, Outcome::Completed]);
    let l = launches(&repo, "codex");
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!((l[0].0.as_str(), l[1].0.as_str()), ("new", "resume"));
    assert_eq!(
        l[0].1, l[1].1,
        "exec resume took the thread id from thread.started"
    );
    let opened = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.name() == "agent_session_opened")
        .count();
    assert_eq!(
        opened, 1,
        "the thread id is journaled the moment Codex reports it"
    );
}

#[test]
fn an_engine_killed_mid_session_resumes_the_claude_session_and_spends_no_attempt() {
    use std::os::unix::process::ExitStatusExt;
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure_cli(&repo, "claude", &["a"], "");
    // SIGKILL the engine the moment Claude has reported its session (its `system/init`).
    let out = repo
        .cmd(&["engine"])
        .env(nightshift_core::failpoint::ENV, "agent_session_opened@1")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "shipped");
    assert_eq!(repo.status_json()["items"][0]["attempts"], 1);
    let l = launches(&repo, "claude");
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!((l[0].0.as_str(), l[1].0.as_str()), ("new", "resume"));
    assert_eq!(l[0].1, l[1].1);
}

#[test]
fn an_engine_killed_before_the_cli_named_its_session_starts_afresh_with_a_new_id() {
    use std::os::unix::process::ExitStatusExt;
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    configure_cli(&repo, "claude", &["a"], "");
    let out = repo
        .cmd(&["engine"])
        .env(nightshift_core::failpoint::ENV, "session_started@1")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "shipped");
    let l = launches(&repo, "claude");
    assert_eq!(l.len(), 1, "the killed launch never ran: {l:?}");
    assert_eq!(l[0].0, "new");
}

#[test]
fn a_usage_limit_whose_reset_is_already_past_waits_the_floor_not_zero() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("limited-once");
    // A reset long past (the minute-precision case: the reset resolves before now).
    repo.agent(
        "a",
        &format!(
            "when file-missing {m}\ntouch {m}\nusage-limit resets=1000\nalways\n{}",
            solves("a"),
            m = marker.display()
        ),
    );
    configure_cli(&repo, "claude", &["a"], "");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let events = repo.store().events_after(0, 100_000).unwrap();
    let (ended_at, until) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunPaused { until, .. } => {
                Some((e.at.parse::<jiff::Timestamp>().unwrap().as_second(), *until))
            }
            _ => None,
        })
        .expect("run_paused");
    assert!(until >= ended_at + 5, "paused only {}s", until - ended_at);
    assert_eq!(
        outcomes(&repo, "a"),
        [Outcome::RateLimited, Outcome::Completed]
    );
}

#[test]
fn a_claude_session_that_lingers_after_its_result_ends_within_the_grace() {
    let repo = Repo::new(&project());
    // Claude 2.1.332 with a background job prints its `result` and keeps running.
    repo.agent(
        "a",
        "write done/a <<EOF\nok\nEOF\nemit claude text=\"done\" turns=1 input=10 output=1\ngo-silent forever\n",
    );
    let config = plan(&repo, &["a"], 1, 1)
        .replace(&repo.agent_table(), &cli_agent(&repo, "claude"))
        .replace("[limits]\n", "[limits]\nsession_timeout = \"2m\"\n");
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(outcomes(&repo, "a"), [Outcome::Completed]);
    let ms: Vec<u64> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::SessionEnded { duration_ms, .. } => Some(duration_ms),
            _ => None,
        })
        .collect();
    // The grace (5 s) plus teardown; never the session timeout.
    assert!(ms[0] < 60_000, "the lingering session ran {} ms", ms[0]);
}

#[test]
fn an_idle_real_cli_burning_cpu_ticks_is_stalled_and_nudged_by_resume() {
    let repo = Repo::new(&project());
    // Prints its init, then hangs the way a real CLI does on a hung API call: silent, with a
    // CPU tick every few seconds.
    repo.agent(
        "a",
        "busy 1ms usage-per-turn=1 interval=1s\nidle-ticks forever\n",
    );
    let config = plan(&repo, &["a"], 1, 1)
        .replace(&repo.agent_table(), &cli_agent(&repo, "claude"))
        .replace(
            "[limits]\n",
            "[limits]\nstall_grace = \"5s\"\nstall_nudges = 1\nkill_grace = \"200ms\"\nsession_timeout = \"2m\"\n",
        );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let o = outcomes(&repo, "a");
    assert_eq!(&o[..2], [Outcome::Stalled, Outcome::Stalled], "{o:?}");
    let l = launches(&repo, "claude");
    assert_eq!(
        (l[0].0.as_str(), l[1].0.as_str()),
        ("new", "resume"),
        "{l:?}"
    );
    assert_eq!(l[0].1, l[1].1, "the nudge resumed the stalled session");
}
