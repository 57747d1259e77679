//! The layer above the run: `nightshift run` supervises `nightshift engine`, restarts it when it
//! dies, stops restarting on a storm, keeps `health.json`, and can run detached.

use std::time::{Duration, Instant};

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

/// A one-item plan whose agent is `sh -c <script>`.
fn shell_agent(repo: &Repo, id: &str, script: &str) {
    let config = plan(repo, &[id], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{script}\"]\n"),
        1,
    );
    repo.configure(&config);
}

/// Acceptance (1): the engine is SIGKILLed in the middle of a session (by its agent); the
/// supervisor starts it again, the run resumes, and the item ships exactly once.
#[test]
fn an_engine_killed_mid_session_is_restarted_and_the_item_ships_once() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("killed-once");
    shell_agent(
        &repo,
        "x",
        &format!(
            "if [ ! -e {m} ]; then touch {m}; kill -9 $PPID; sleep 600; fi; mkdir -p done; echo ok > done/x",
            m = marker.display()
        ),
    );
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert!(marker.exists(), "the engine was killed once");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("killed by SIGKILL") && stderr.contains("restarting"),
        "{stderr}"
    );
    assert_eq!(repo.shipped_items(), ["x"], "shipped exactly once");
    let all = events(&repo);
    assert_eq!(count(&all, "run_started"), 1);
    assert_eq!(
        count(&all, "run_resumed"),
        1,
        "the restarted engine resumed"
    );
    assert_eq!(
        count(&all, "session_started"),
        2,
        "the interrupted session ran again"
    );
    assert_eq!(count(&all, "integrated"), 1);
    let run_id = &all[0].run_id;
    assert!(all.iter().all(|e| &e.run_id == run_id), "one run, not two");
    let h = health(&repo);
    assert_eq!(h["engine_starts"], 2);
    assert_eq!(h["engine_restarts"], 1);
    assert_eq!(h["last_engine_exit"], "exit 10");
    assert_eq!(h["state"], "finished");
    assert_eq!(h["exit_code"], 10);
    assert_eq!(h["shipped_this_run"], 1);
    repo.assert_clean_end();
}

/// Acceptance (1b): an engine that dies at once, again and again, is a restart storm: back-off,
/// an alert, exit 19, and no sixth start.
#[test]
fn an_engine_dying_at_start_five_times_is_a_restart_storm() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo
        .cmd(&["run"])
        .env(failpoint::ENV, "engine_started")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(19), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("restarting it in").count(),
        4,
        "four restarts after the first start: {stderr}"
    );
    for wait in ["in 1s", "in 2s", "in 4s", "in 8s"] {
        assert!(stderr.contains(wait), "back-off {wait}: {stderr}");
    }
    assert!(stderr.contains("restart_storm"), "{stderr}");
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("restart_storm") && attention.contains("5 times"),
        "{attention}"
    );
    let h = health(&repo);
    assert_eq!(h["state"], "restart_storm");
    assert_eq!(h["halt_reason"], "restart_storm");
    assert_eq!(h["exit_code"], 19);
    assert_eq!(h["engine_starts"], 5);
    assert_eq!(h["engine_restarts"], 4);
    assert_eq!(h["last_engine_exit"], "killed by SIGKILL");

    // The dying engines wrote nothing, and the next `run` (fixed) just works.
    assert!(!repo.root.join(".nightshift/state.db").exists());
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a"]);
}

/// Acceptance (5, the supervisor's half): health.json after a run says what shipped, when,
/// the restarts and the warnings by class.
#[test]
fn health_json_after_a_plan_run_counts_ships_restarts_and_warnings() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    repo.agent("c", NEVER_SOLVES);
    // `solves` spends 110 tokens: past the 80% soft share of 130 (a warning), under the limit.
    let config = plan(&repo, &["a", "b", "c"], 1, 1)
        .replace("command = [", "format = \"claude-stream\"\ncommand = [")
        .replace(
            "[limits]\n",
            "[limits]\nsession_tokens = 130\nrun_usd = 20.0\n",
        );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let all = events(&repo);
    let ships: Vec<&Event> = all
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Integrated { .. }))
        .collect();
    assert_eq!(ships.len(), 2);
    let warned = count(&all, "budget_warned");
    assert!(warned >= 2, "each solving session warned: {warned}");

    let h = health(&repo);
    assert_eq!(h["version"], 1);
    assert_eq!(h["run_id"], all[0].run_id.as_str());
    assert_eq!(h["state"], "finished");
    assert_eq!(h["halt_reason"], "queue_drained_with_parked");
    assert_eq!(h["exit_code"], 11);
    assert_eq!(h["shipped_this_run"], 2);
    let today = &h["updated_at"].as_str().unwrap()[..10];
    let shipped_today = ships.iter().filter(|e| e.at.starts_with(today)).count();
    assert_eq!(h["shipped_today"], shipped_today);
    assert_eq!(h["last_ship_at"], ships[1].at.as_str());
    let hours = h["hours_since_last_ship"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&hours), "{hours}");
    assert_eq!(h["engine_starts"], 1);
    assert_eq!(h["engine_restarts"], 0);
    // The budget gate is a process gate: its soft-share warnings count there.
    assert_eq!(h["gate_warnings"]["process"], warned);
    assert_eq!(h["debts_outstanding"], 0);
    assert_eq!(h["spend"]["usd_limit"], 20.0);
    assert!(h["spend"]["tokens"].as_f64().unwrap() >= 220.0);
    assert_eq!(h["prevent_sleep"]["requested"], true);
    assert_eq!(h["pauses"], serde_json::json!([]));
    assert!(h["supervisor_pid"].as_u64().unwrap() > 0);
    assert_eq!(h["engine_pid"], serde_json::Value::Null);
}

/// prevent_sleep that cannot be had is reported, never fatal; turned off, nothing is tried.
#[test]
fn prevent_sleep_unavailable_is_reported_and_off_is_silent() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    // Where no inhibitor can be had (no logind, as in most containers and CI VMs), the run
    // goes on and says why; where one can, it is held.
    let out = repo.run(&["run"]);
    let h = health(&repo);
    if h["prevent_sleep"]["active"] == true {
        assert!(h["prevent_sleep"]["how"].is_string());
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("prevent_sleep unavailable: "), "{stderr}");
        assert!(h["prevent_sleep"]["unavailable"].is_string());
    }
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));

    let config = std::fs::read_to_string(repo.root.join("nightshift.toml")).unwrap();
    repo.write(
        "nightshift.toml",
        &format!("{config}\n[run]\nprevent_sleep = false\n"),
    );
    let out = repo.run(&["run", "--fresh"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("prevent_sleep"),
        "{}",
        text(&out)
    );
    let h = health(&repo);
    assert_eq!(h["prevent_sleep"]["requested"], false);
    assert_eq!(h["prevent_sleep"]["active"], false);
}

/// `stop --graceful` reaches the engine through the supervisor's child; the supervisor then
/// exits with the engine's 0 and starts nothing again.
#[test]
fn a_graceful_stop_ends_the_supervisor_without_a_restart() {
    let repo = Repo::new(&project());
    let held = HeldAgent::configure(&repo, "x");
    let mut run = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    held.wait_started();
    let stop = repo
        .cmd(&["stop", "--graceful"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The graceful stop waits for the session in flight; let it finish.
    held.release();
    let stop = stop.wait_with_output().unwrap();
    assert!(stop.status.success(), "{}", text(&stop));
    assert_eq!(run.wait().unwrap().code(), Some(0), "a stop is exit 0");
    let all = events(&repo);
    assert_eq!(count(&all, "run_resumed"), 0, "no engine was started again");
    let h = health(&repo);
    assert_eq!(h["engine_starts"], 1);
    assert_eq!(h["state"], "stopped");
    assert_eq!(h["exit_code"], 0);
}

/// `run --detach` returns at once (its agent is still held) with the run id, in its own session;
/// the run completes in the background.
#[test]
fn run_detach_returns_at_once_and_the_run_completes() {
    let repo = Repo::new(&project());
    let held = HeldAgent::configure(&repo, "x");
    let out = repo.run(&["run", "--detach"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let run_id = events(&repo)[0].run_id.clone();
    assert!(
        stdout.contains(&format!("run {run_id} is working in the background")),
        "{stdout}"
    );
    for follow in ["nightshift log -f", "nightshift status", "nightshift wait"] {
        assert!(stdout.contains(follow), "{stdout}");
    }
    // The supervisor is a session leader, not in the caller's session.
    let pid: i32 = health(&repo)["supervisor_pid"].as_i64().unwrap() as i32;
    let sid = nix::unistd::getsid(Some(nix::unistd::Pid::from_raw(pid))).unwrap();
    assert_eq!(sid.as_raw(), pid, "its own session");
    assert_ne!(sid, nix::unistd::getsid(None).unwrap());

    held.wait_started();
    held.release();
    let started = Instant::now();
    loop {
        let run = repo.store().latest_run().unwrap().unwrap();
        if !run.is_running() && health(&repo)["state"] == "finished" {
            assert_eq!(run.exit_code, Some(10));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the detached run never finished"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(repo.shipped_items(), ["x"]);
    let logs: Vec<_> = std::fs::read_dir(repo.root.join(".nightshift/logs"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("supervisor-"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(stdout.contains(&logs[0]), "{stdout}");
}

/// Bad input is refused before anything runs, detached or not.
#[test]
fn run_detach_with_a_bad_config_fails_in_the_foreground() {
    let repo = Repo::new(&project());
    repo.configure("[agent]\nkind = \"nope\"\n");
    let out = repo.run(&["run", "--detach"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(!repo.root.join(".nightshift").exists());
}

/// `--resume-only` (what the service runs at boot) starts nothing new.
#[test]
fn resume_only_starts_no_new_run() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo.run(&["run", "--resume-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to resume"));
    assert!(!repo.root.join(".nightshift/state.db").exists());
}

#[test]
fn service_install_writes_a_user_unit_that_resumes_this_repository() {
    let repo = Repo::new(&project());
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo.run(&["service", "install", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dry = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(dry.contains("would write"), "{dry}");
    assert!(dry.contains("would run: systemctl --user enable"), "{dry}");
    let units = repo.home.join(".config/systemd/user");
    assert!(!units.exists(), "a dry run writes nothing");

    let out = repo.run(&["service", "install"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let files: Vec<_> = std::fs::read_dir(&units)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("nightshift-") && name.ends_with(".service"),
        "{name}"
    );
    let unit = std::fs::read_to_string(&files[0]).unwrap();
    let root = repo.root.canonicalize().unwrap();
    assert!(
        unit.contains(&format!(
            "ExecStart={BIN} run -C {} --resume-only\n",
            root.display()
        )),
        "{unit}"
    );
    assert!(unit.contains("Restart=on-failure\n"), "{unit}");
    assert!(unit.contains("WantedBy=default.target\n"), "{unit}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("wrote {}", files[0].display())),
        "{stdout}"
    );
    // Without a user bus (this test's environment) enabling is reported, not failed.
    assert!(
        stdout.contains("ran: systemctl --user enable") || stdout.contains("to enable it:"),
        "{stdout}"
    );
}

/// `nightshift stop` while the supervisor waits out a back-off (no engine holds the lock): the
/// supervisor starts no other engine and exits 0.
#[test]
fn stop_between_engines_ends_the_supervisor() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let mut run = repo
        .cmd(&["run"])
        .env(failpoint::ENV, "engine_started")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let health_path = repo.root.join(".nightshift/health.json");
    let started = Instant::now();
    // The third back-off is 4 s long: ample time for `stop` to find it.
    loop {
        let h: Option<serde_json::Value> = std::fs::read_to_string(&health_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if h.is_some_and(|h| h["state"] == "restarting" && h["engine_starts"] == 3) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never restarting"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stop = repo.run(&["stop"]);
    assert!(stop.status.success(), "{}", text(&stop));
    assert!(
        String::from_utf8_lossy(&stop.stdout).contains("between engines"),
        "{}",
        text(&stop)
    );
    assert_eq!(run.wait().unwrap().code(), Some(0));
    let h = health(&repo);
    assert_eq!(h["state"], "stopped");
    assert_eq!(h["engine_starts"], 3, "no engine started after the stop");
}
