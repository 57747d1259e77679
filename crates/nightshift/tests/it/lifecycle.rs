//! Faults after the halt and around the run's lifecycle (issue 13): output that cannot be
//! written, a finished run that a restart must not start again, the real halt in messages and
//! health.

use std::process::Stdio;

use nightshift_core::failpoint;
use nightshift_core::store::{Event, EventKind};

use crate::harness::*;

fn events(repo: &Repo) -> Vec<Event> {
    repo.store().events_after(0, 100_000).unwrap()
}

fn count(events: &[Event], kind: &str) -> usize {
    events.iter().filter(|e| e.kind.name() == kind).count()
}

fn health(repo: &Repo) -> serde_json::Value {
    let text = std::fs::read_to_string(repo.root.join(".nightshift/health.json"))
        .expect("health.json is written");
    serde_json::from_str(&text).expect("health.json is JSON")
}

fn dev_full() -> Stdio {
    Stdio::from(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full"),
    )
}

/// The write end of a pipe whose read end is already closed: every write is EPIPE.
fn closed_pipe() -> Stdio {
    let (read, write) = nix::unistd::pipe().expect("pipe");
    drop(read);
    Stdio::from(write)
}

fn one_item_repo() -> Repo {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("c", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["a", "c"], 1, 1));
    repo
}

/// `run > /dev/full`: the engine used to panic printing the summary after the halt, the
/// supervisor restarted it, and the restarted engine started a new run (5 runs, then a storm).
#[test]
fn run_into_a_full_disk_or_a_closed_pipe_finishes_once_and_is_never_restarted() {
    for (what, stdout) in [("/dev/full", dev_full()), ("a closed pipe", closed_pipe())] {
        let repo = one_item_repo();
        let out = repo
            .cmd(&["run"])
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(11), "{what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(!stderr.contains("restarting"), "{what}: {stderr}");
        let all = events(&repo);
        assert_eq!(count(&all, "run_started"), 1, "{what}: one run");
        assert_eq!(count(&all, "run_finished"), 1, "{what}");
        assert_eq!(
            count(&all, "session_started"),
            3,
            "{what}: a once, c once per pass"
        );
        assert_eq!(health(&repo)["engine_starts"], 1, "{what}");
    }
}

/// `status` and `log` into a closed pipe exit quietly; into a full disk they say so and fail.
#[test]
fn reading_commands_never_panic_on_output_a_closed_pipe_is_quiet_a_full_disk_an_error() {
    let repo = one_item_repo();
    assert_eq!(repo.run(&["run"]).status.code(), Some(11));
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["log"],
        &["log", "--json"],
        &["log", "-f"],
        &["explain"],
    ] {
        let out = repo
            .cmd(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} into a closed pipe: {stderr}"
        );
        assert_eq!(stderr, "", "{args:?}: quiet");
        let out = repo
            .cmd(args)
            .stdout(dev_full())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(30),
            "{args:?} into /dev/full: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("failed to write the output: No space left on device"),
            "{args:?}: {stderr}"
        );
    }
}

/// SIGKILL right after `run_finished` is journaled: the supervisor restarts the engine, which
/// finds its run finished and exits with that halt. No second run, no parked item tried again.
#[test]
fn a_restart_after_run_finished_exits_with_the_halt_and_starts_no_new_run() {
    let repo = one_item_repo();
    let out = repo
        .cmd(&["run"])
        .env(failpoint::ENV, "run_finished")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert!(stderr.contains("killed by SIGKILL"), "{stderr}");
    assert!(
        stderr.contains("already halted (queue_drained_with_parked)"),
        "{stderr}"
    );
    let all = events(&repo);
    assert_eq!(count(&all, "run_started"), 1, "no new run");
    assert_eq!(count(&all, "run_resumed"), 0);
    assert_eq!(
        count(&all, "session_started"),
        3,
        "a once, c once per pass, not again"
    );
    let h = health(&repo);
    assert_eq!(h["engine_starts"], 2);
    assert_eq!(h["halt_reason"], "queue_drained_with_parked");
    assert_eq!(h["exit_code"], 11);
    repo.assert_clean_end();

    // The user's next `run` is a new run.
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert_eq!(count(&events(&repo), "run_started"), 2);
}

/// `run --until T` reaching its deadline: exit 19 `deadline_reached`, said as such (not "the
/// engine kept dying"), and `health.json` names the halt.
#[test]
fn the_deadline_is_reported_as_deadline_reached_not_as_a_restart_storm() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let now = repo.agent_dir.join("now");
    std::fs::write(&now, "2026-01-01T06:59:00Z").unwrap();
    // Paused by the operator, so nothing starts before the clock passes the deadline.
    assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
    let run = repo
        .cmd(&["run", "--until", "07:00"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", now.display().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(&repo, |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunPaused { .. }))
    });
    std::fs::write(&now, "2026-01-01T07:00:01Z").unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(19), "{stderr}");
    assert!(!stderr.contains("restart_storm"), "{stderr}");
    assert!(!stderr.contains("kept dying"), "{stderr}");
    let h = health(&repo);
    assert_eq!(h["halt_reason"], "deadline_reached");
    assert_eq!(h["exit_code"], 19);
}

/// Polls the journal (a file handshake, bounded) until `pred` holds.
pub fn wait_for_journal(repo: &Repo, pred: impl Fn(&[Event]) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        let seen =
            nightshift_core::store::Store::open_read_only(&repo.root.join(".nightshift/state.db"))
                .and_then(|s| s.events_after(0, 100_000));
        if seen.is_ok_and(|all| pred(&all)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("timed out waiting for the journal");
}

/// The engine is killed while the work check runs (after it printed its results); the resumed
/// run checks again. The log the guards read must hold exactly that check's output: it used to
/// be appended to the interrupted run's, no longer parsed, and the guards read `not_run`.
#[test]
fn a_check_rerun_after_a_crash_writes_its_own_log_and_the_guards_read_it() {
    let repo = Repo::new(&project());
    let script = r#"#!/bin/sh
if [ "$(cat done/x 2>/dev/null)" = ok ]; then
  echo '<testsuite name="s" tests="1" failures="0"><testcase classname="s" name="x_works"/></testsuite>'
  if [ ! -e MARK ]; then
    touch MARK
    kill -9 $(sed -n 's/^pid \([0-9]*\).*/\1/p' ROOT/.nightshift/lock)
    sleep 5
  fi
  exit 0
fi
echo '<testsuite name="s" tests="1" failures="1"><testcase classname="s" name="x_works"><failure message="no"/></testcase></testsuite>'
exit 1
"#
    .replace("MARK", &repo.agent_dir.join("killed").display().to_string())
    .replace("ROOT", &repo.root.display().to_string());
    repo.write("junit.sh", &script);
    repo.agent("x", &solves("x"));
    let config = plan(&repo, &["x"], 1, 1)
        .replace("sh check.sh x", "sh junit.sh")
        .replace("[check]\n", "[check]\nformat = \"junit\"\n");
    repo.configure(&config);
    let out = repo.run(&["engine"]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(9),
        "killed mid-check\n{}",
        text(&out)
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let ended: Vec<serde_json::Value> = events(&repo)
        .iter()
        .filter(|e| e.kind.name() == "check_ended")
        .map(|e| serde_json::to_value(&e.kind).unwrap())
        .collect();
    let last = ended.last().expect("a check ended");
    assert_eq!(last["stage"], "work", "{last}");
    assert_eq!(last["results"]["tests"], 1, "the log parsed: {last}");
    let guards = last["guards"].as_array().unwrap();
    assert!(!guards.is_empty(), "{last}");
    assert!(
        guards.iter().all(|g| g["state"] != "not_run"),
        "every guard evaluated: {last}"
    );
    let log = std::fs::read_to_string(last["log"].as_str().unwrap()).unwrap();
    assert_eq!(
        log.matches("<testsuite").count(),
        1,
        "one check's output: {log}"
    );
}

fn status_text(repo: &Repo) -> String {
    let out = repo.run(&["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `status` tells live from dead: "running" only while an engine holds the run lock; after a
/// stop it shows the stop, after a kill with nobody left it says no engine is alive, after a
/// restart storm it shows the storm (all three used to say "running").
#[test]
fn status_tells_a_live_run_from_a_stopped_a_dead_and_a_stormed_one() {
    // Live, then stopped.
    let repo = one_item_repo();
    assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
    let run = repo
        .cmd(&["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_journal(&repo, |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunPaused { .. }))
    });
    let live = repo.status_json();
    assert_eq!(live["run"]["live"], "running", "{live}");
    assert!(live["run"]["engine_pid"].is_u64(), "{live}");
    assert_eq!(repo.run(&["stop"]).status.code(), Some(0));
    assert_eq!(run.wait_with_output().unwrap().status.code(), Some(0));
    let stopped = repo.status_json();
    assert_eq!(stopped["run"]["live"], "stopped", "{stopped}");
    assert_eq!(stopped["run"]["halt_reason"], "operator_stop", "{stopped}");
    let line = status_text(&repo);
    assert!(line.contains("stopped (operator_stop"), "{line}");
    assert!(!line.contains("running"), "{line}");

    // Killed with no supervisor: dead.
    let repo = one_item_repo();
    let out = repo
        .cmd(&["engine"])
        .env(failpoint::ENV, "attempt_started")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9));
    let dead = repo.status_json();
    assert_eq!(dead["run"]["live"], "dead", "{dead}");
    let line = status_text(&repo);
    assert!(line.contains("no engine is alive"), "{line}");

    // Every restarted engine dies: a restart storm.
    let out = repo
        .cmd(&["run"])
        .env(failpoint::ENV, "run_resumed")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(19), "{}", text(&out));
    let storm = repo.status_json();
    assert_eq!(storm["run"]["live"], "restart_storm", "{storm}");
    assert_eq!(storm["run"]["halt_reason"], "restart_storm", "{storm}");
    let line = status_text(&repo);
    assert!(line.contains("the engine kept dying"), "{line}");
}

fn engine_pid(repo: &Repo) -> i32 {
    let holder = std::fs::read_to_string(repo.root.join(".nightshift/lock")).unwrap();
    holder
        .strip_prefix("pid ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in the lock: {holder}"))
}

fn signal(pid: i32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
}

/// The engine is frozen (SIGSTOP) past the session timeout while its agent finishes in a few
/// milliseconds: on waking, the session sees the child's exit before any deadline. It used to
/// journal "timeout" whenever `select!` happened to pick the deadline first.
#[test]
fn a_session_whose_child_exited_during_an_engine_freeze_completed_it_did_not_time_out() {
    let repo = Repo::new(&project());
    let agent = HeldAgent::configure(&repo, "x");
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml"))
        .unwrap()
        .replace("[limits]\n", "[limits]\nsession_timeout = \"2s\"\n");
    repo.configure(&config);
    let engine = repo
        .cmd(&["engine"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    agent.wait_started();
    let pid = engine_pid(&repo);
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    agent.release();
    // Not a synchronization: the session's bound (2 s, on the boot clock, which cannot be
    // faked) must pass while the engine is frozen.
    std::thread::sleep(std::time::Duration::from_secs(3));
    signal(pid, nix::sys::signal::Signal::SIGCONT);
    let out = engine.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let outcomes: Vec<String> = events(&repo)
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SessionEnded { outcome, .. } => Some(format!("{outcome:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, ["Completed"], "the session completed");
}

/// A frozen engine: the supervisor sees its heartbeat go stale (health.json `heartbeat_stale`,
/// an alert, `status` says so), and once it stayed stopped past the bound the supervisor kills
/// it and the restarted engine resumes the run. Time is the faked wall clock.
#[test]
fn a_frozen_engine_is_reported_heartbeat_stale_then_killed_and_restarted() {
    let repo = one_item_repo();
    let now = repo.agent_dir.join("now");
    let t0: jiff::Timestamp = "2026-01-01T02:00:00Z".parse().unwrap();
    std::fs::write(&now, t0.to_string()).unwrap();
    assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
    let run = repo
        .cmd(&["run"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", &now)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(&repo, |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunPaused { .. }))
    });
    let pid = engine_pid(&repo);
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    let later = |s: i64| (t0 + jiff::SignedDuration::from_secs(s)).to_string();
    std::fs::write(&now, later(60)).unwrap();
    wait_for_file(&repo.root.join(".nightshift/health.json"), |h| {
        h.contains("\"heartbeat_stale\"")
    });
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(attention.contains("heartbeat_stale"), "{attention}");
    let status = repo
        .cmd(&["status", "--json"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", &now)
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["run"]["live"], "heartbeat_stale", "{status}");
    // Stopped past the bound: killed, restarted, resumed.
    std::fs::write(&now, later(660)).unwrap();
    wait_for_journal(&repo, |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunResumed { .. }))
    });
    assert_eq!(repo.run(&["resume"]).status.code(), Some(0));
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "{stderr}");
    assert!(stderr.contains("stayed stopped"), "{stderr}");
    let h = health(&repo);
    assert_eq!(h["engine_restarts"], 1, "{h}");
    assert_eq!(count(&events(&repo), "run_started"), 1);
}

/// Polls a file (a handshake, bounded) until `pred` holds for its text.
fn wait_for_file(path: &std::path::Path, pred: impl Fn(&str) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        if std::fs::read_to_string(path).is_ok_and(|t| pred(&t)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("timed out waiting for {}", path.display());
}

fn remove_store(repo: &Repo) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(repo.root.join(format!(".nightshift/state.db{suffix}")));
    }
}

/// `state.db` deleted, or emptied, between runs: the next run used to ship every item a second
/// time. The target's `Nightshift-Item` trailers are the ground truth: nothing is worked again,
/// and ATTENTION says why.
#[test]
fn a_lost_or_emptied_state_database_is_rebuilt_from_the_trailers_nothing_ships_twice() {
    for how in ["deleted", "emptied"] {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.agent("b", &solves("b"));
        repo.configure(&plan(&repo, &["a", "b"], 1, 1));
        assert_eq!(repo.run(&["run"]).status.code(), Some(10));
        assert_eq!(repo.shipped_items(), ["a", "b"]);
        remove_store(&repo);
        if how == "emptied" {
            std::fs::write(repo.root.join(".nightshift/state.db"), "").unwrap();
        }
        let out = repo.run(&["run"]);
        assert_eq!(out.status.code(), Some(10), "{how}: {}", text(&out));
        assert_eq!(
            repo.shipped_items(),
            ["a", "b"],
            "{how}: nothing shipped twice"
        );
        let all = events(&repo);
        assert_eq!(
            count(&all, "attempt_started"),
            0,
            "{how}: nothing worked again"
        );
        assert_eq!(repo.item_state("a"), "shipped", "{how}");
        let attention =
            std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap_or_default();
        assert!(
            attention.contains("no record of a (") && attention.contains("b ("),
            "{how}: {attention}"
        );
    }
}

/// A corrupt `state.db`: one line that says what is wrong and what to do, exit 30, and no
/// restart (it used to be five engine starts, then "resumable: fix the cause").
#[test]
fn a_corrupt_state_database_is_one_line_and_exit_30_without_a_restart() {
    let repo = one_item_repo();
    std::fs::create_dir_all(repo.root.join(".nightshift")).unwrap();
    std::fs::write(
        repo.root.join(".nightshift/state.db"),
        "this is not an SQLite database, it is a text file of some length\n".repeat(64),
    )
    .unwrap();
    let out = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(30), "{stderr}");
    assert!(!stderr.contains("restarting"), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("is corrupt") && errors[0].contains("move it aside"),
        "{stderr}"
    );
    assert!(!stderr.contains("help: the run is resumable"), "{stderr}");
}

/// `state.db` deleted while the engine works: it used to write on into the unlinked file. The
/// next transaction sees the path no longer names its file and the engine stops, exit 30, with
/// a clear line; the supervisor does not restart it.
#[test]
fn a_state_database_deleted_mid_run_stops_the_engine_with_a_clear_error() {
    let repo = Repo::new(&project());
    let agent = HeldAgent::configure(&repo, "x");
    let run = repo
        .cmd(&["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    agent.wait_started();
    remove_store(&repo);
    agent.release();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(30), "{stderr}");
    assert!(stderr.contains("deleted or replaced"), "{stderr}");
    assert!(!stderr.contains("restarting"), "{stderr}");
}

/// One plan item per `(id, sh -c script)`, each with its own agent, checked by `check.sh <id>`.
fn shell_items(repo: &Repo, items: &[(&str, &str)], attempts: u32) {
    for (id, script) in items {
        std::fs::write(repo.agent_dir.join(format!("{id}.sh")), script).unwrap();
    }
    let dispatch = format!("sh {}/$NIGHTSHIFT_ITEM.sh", repo.agent_dir.display());
    let ids: Vec<&str> = items.iter().map(|(id, _)| *id).collect();
    let config = plan(repo, &ids, 1, attempts).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{dispatch}\"]\n"),
        1,
    );
    repo.configure(&config);
}

/// An agent fills the disk (the seam: the state database reads as full while a file exists):
/// the run pauses with an alert instead of crashing ("database or disk is full" five times and
/// a restart storm), and goes on by itself when space returns. One engine, the item ships.
#[test]
fn a_full_disk_pauses_the_run_with_an_alert_and_it_goes_on_when_space_returns() {
    let repo = Repo::new(&project());
    let full = repo.agent_dir.join("disk-is-full");
    shell_items(
        &repo,
        &[(
            "x",
            &format!(
                "touch {}; mkdir -p done; echo ok > done/x\n",
                full.display()
            ),
        )],
        1,
    );
    let run = repo
        .cmd(&["run"])
        .env(failpoint::DISK_FULL_ENV, &full)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let attention = repo.root.join(".nightshift/ATTENTION");
    wait_for_file(&attention, |t| t.contains("disk_full:"));
    assert!(
        !events(&repo)
            .iter()
            .any(|e| e.kind.name() == "session_ended"),
        "the session's end waits to be journaled"
    );
    std::fs::remove_file(&full).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{stderr}");
    assert!(!stderr.contains("restarting"), "{stderr}");
    assert_eq!(repo.shipped_items(), ["x"]);
    assert_eq!(health(&repo)["engine_starts"], 1);
    let attention = std::fs::read_to_string(&attention).unwrap();
    assert!(attention.contains("disk_full cleared"), "{attention}");
    repo.assert_clean_end();
}

/// An item whose step fails the same way on every engine start (here: the agent `git init`s a
/// subdirectory, so committing its work fails) used to fail the engine (exit 50), which was
/// restarted into the same failure until a restart storm wedged the run. It fails that item's
/// attempt, parks the item when it repeats, and the run goes on: the next item ships.
#[test]
fn a_deterministic_failure_of_one_item_parks_it_and_the_run_goes_on() {
    let repo = Repo::new(&project());
    shell_items(
        &repo,
        &[
            ("a", "mkdir -p sub && cd sub && git init -q && echo x > f\n"),
            ("b", "mkdir -p done; echo ok > done/b\n"),
        ],
        2,
    );
    let out = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    assert!(!stderr.contains("restarting"), "{stderr}");
    assert_eq!(repo.shipped_items(), ["b"]);
    assert_eq!(repo.item_state("a"), "parked");
    assert_eq!(health(&repo)["engine_starts"], 1);
    let status = repo.status_json();
    let reason = status["items"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!reason.is_empty(), "parked with its reason");
}
