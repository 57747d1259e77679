//! The layer above the run: `wait` (exit-to-wake), `stop --graceful`, `pause`/`resume`,
//! `run --until` under a faked clock, and gate modes. Every ordering is proved by a handshake
//! (FIFOs, the `wait` readiness line, the journal's order), never by a sleep.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};

use nightshift_core::store::{Event, EventKind};

use crate::harness::*;

/// An agent that, where `hold` (a shell condition) is true, says "started" on one FIFO and waits
/// for a line on another before doing `then`; elsewhere it does `then` at once. Double quotes
/// are not allowed in `hold` or `then` (they go into a TOML string).
struct Held {
    ready: PathBuf,
    release: PathBuf,
}

const SOLVE: &str = "mkdir -p done; echo ok > done/$NIGHTSHIFT_ITEM";
const FAIL: &str = "echo tried >> notes.txt";

impl Held {
    fn configure(
        repo: &Repo,
        items: &[&str],
        hold: &str,
        then: &str,
        iterations: u32,
        attempts: u32,
        extra: &str,
    ) -> Held {
        let ready = repo.agent_dir.join("ready");
        let release = repo.agent_dir.join("release");
        for fifo in [&ready, &release] {
            nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        }
        let agent = format!(
            "if {hold}; then echo started > {}; read line < {}; fi; {then}",
            ready.display(),
            release.display()
        );
        let config = plan(repo, items, iterations, attempts).replacen(
            &repo.agent_table(),
            &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
            1,
        );
        repo.configure(&format!("{config}{extra}"));
        Held { ready, release }
    }

    fn wait_started(&self) {
        let mut line = String::new();
        std::fs::File::open(&self.ready)
            .and_then(|mut f| f.read_to_string(&mut line))
            .unwrap();
        assert_eq!(line, "started\n");
    }

    fn release(&self) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.release)
            .and_then(|mut f| f.write_all(b"go\n"))
            .unwrap();
    }
}

fn events(repo: &Repo) -> Vec<Event> {
    repo.store().events_after(0, 100_000).unwrap()
}

fn kinds(repo: &Repo) -> Vec<String> {
    events(repo)
        .iter()
        .map(|e| e.kind.name().to_owned())
        .collect()
}

/// Polls the journal (a generous bound, no fixed sleep as synchronization) until `pred` holds.
fn until_journal(repo: &Repo, what: &str, pred: impl Fn(&[Event]) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        // The database may be mid-creation: an unreadable journal is "not yet".
        let seen =
            nightshift_core::store::Store::open_read_only(&repo.root.join(".nightshift/state.db"))
                .and_then(|s| s.events_after(0, 100_000));
        if seen.is_ok_and(|all| pred(&all)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}: {:?}", kinds(repo));
}

/// Starts `nightshift wait ARGS` and returns once it is watching (its readiness line).
fn start_wait(repo: &Repo, args: &[&str]) -> Child {
    let mut all = vec!["wait"];
    all.extend_from_slice(args);
    let mut child = repo
        .cmd(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("watching for"), "readiness line: {line:?}");
    child
}

/// The exit code and the one JSON line of a finished `wait`.
fn finish_wait(child: Child) -> (Option<i32>, serde_json::Value) {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line: {stdout:?}");
    (out.status.code(), serde_json::from_str(lines[0]).unwrap())
}

fn spawn_run(repo: &Repo, args: &[&str]) -> Child {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    repo.cmd(&all).stdout(Stdio::null()).spawn().unwrap()
}

#[test]
fn wait_wakes_on_an_item_parking_with_exit_11_and_prints_the_event() {
    let repo = Repo::new(&project());
    let agent = Held::configure(&repo, &["stuck"], "true", FAIL, 1, 1, "");
    let mut run = spawn_run(&repo, &[]);
    agent.wait_started();
    // The session is held: whatever `wait` reports happens after it is watching.
    let wait = start_wait(&repo, &[]);
    agent.release();
    let (code, line) = finish_wait(wait);
    assert_eq!(code, Some(11), "{line}");
    assert_eq!(line["version"], 1);
    assert_eq!(line["wake"], "parked");
    assert_eq!(line["exit_code"], 11);
    assert_eq!(line["event"]["kind"], "item_parked");
    assert_eq!(line["event"]["item"], "stuck");
    // A parked item gets one more pass; let it fail again, and the run drains with it parked.
    agent.wait_started();
    agent.release();
    assert_eq!(run.wait().unwrap().code(), Some(11));
}

#[test]
fn wait_wakes_on_an_escalation_with_exit_16_and_prints_the_event() {
    let repo = Repo::new(&project());
    // The review escalates with real doubt and there is no second opinion: a person decides.
    let review = repo.agent_dir.join("review.sh");
    std::fs::write(
        &review,
        "printf '%s\\n' '{\"verdict\": \"escalate\", \"reason\": \"unsure\", \"findings\": [{\"severity\": \"medium\", \"file\": \"done/e\", \"text\": \"is this intended?\"}]}' > \"$NIGHTSHIFT_VERDICT_FILE\"\n",
    )
    .unwrap();
    let extra = format!(
        "\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\n",
        review.display()
    );
    let agent = Held::configure(&repo, &["e"], "true", SOLVE, 1, 1, &extra);
    let mut run = spawn_run(&repo, &[]);
    agent.wait_started();
    let wait = start_wait(&repo, &[]);
    agent.release();
    let (code, line) = finish_wait(wait);
    assert_eq!(code, Some(16), "{line}");
    assert_eq!(line["wake"], "human_required");
    assert_eq!(line["event"]["kind"], "item_escalated");
    assert_eq!(line["event"]["item"], "e");
    assert_eq!(run.wait().unwrap().code(), Some(16), "escalation_pending");
}

#[test]
fn wait_wakes_on_the_run_halting_with_the_halt_class_and_at_once_when_already_halted() {
    let repo = Repo::new(&project());
    let agent = Held::configure(&repo, &["live"], "true", SOLVE, 1, 1, "");
    let mut run = spawn_run(&repo, &[]);
    agent.wait_started();
    let finished = start_wait(&repo, &["--for", "finished"]);
    let actionable = start_wait(&repo, &[]);
    agent.release();
    for wait in [finished, actionable] {
        let (code, line) = finish_wait(wait);
        assert_eq!(code, Some(10), "{line}");
        assert_eq!(line["wake"], "finished");
        assert_eq!(line["halt_reason"], "queue_drained_all_shipped");
        assert_eq!(line["event"]["kind"], "run_finished");
    }
    assert_eq!(run.wait().unwrap().code(), Some(10));
    // The run is over: a new `wait` does not hang, it reports the halt at once.
    let out = repo.run(&["wait", "--for", "finished"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["event"]["kind"], "run_finished");
}

#[test]
fn wait_times_out_with_exit_19_and_a_timeout_line() {
    let repo = Repo::new(&project());
    let out = repo.run(&["wait", "--timeout", "300ms"]);
    assert_eq!(out.status.code(), Some(19), "{}", text(&out));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["wake"], "timeout");
    assert!(line["event"].is_null());
    let bad = repo.run(&["wait", "--timeout", "soon"]);
    assert_eq!(bad.status.code(), Some(20), "{}", text(&bad));
}

#[test]
fn stop_graceful_lets_the_session_finish_and_run_ships_it_on_resume() {
    let repo = Repo::new(&project());
    let agent = Held::configure(&repo, &["a"], "true", SOLVE, 1, 1, "");
    let mut run = spawn_run(&repo, &[]);
    agent.wait_started();
    let wait = start_wait(&repo, &["--for", "finished"]);
    let mut stop = repo
        .cmd(&["stop", "--graceful"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(stop.stdout.take().unwrap());
    let mut asked = String::new();
    stdout.read_line(&mut asked).unwrap();
    assert!(asked.contains("asked the run"), "{asked}");
    // The engine has the request; only now may the session finish.
    agent.release();
    assert_eq!(stop.wait().unwrap().code(), Some(0));
    assert_eq!(
        run.wait().unwrap().code(),
        Some(0),
        "an operator stop exits 0"
    );
    let (code, line) = finish_wait(wait);
    assert_eq!(code, Some(0), "{line}");
    assert_eq!(line["event"]["kind"], "run_stopped");
    assert_eq!(line["halt_reason"], "operator_stop");
    let all = events(&repo);
    let ended = all.iter().any(|e| {
        matches!(&e.kind, EventKind::SessionEnded { outcome, .. }
            if *outcome == nightshift_core::store::Outcome::Completed)
    });
    assert!(ended, "the session in flight finished: {:?}", kinds(&repo));
    assert!(
        all.iter()
            .any(|e| matches!(e.kind, EventKind::Preserved { .. })),
        "its work is preserved: {:?}",
        kinds(&repo)
    );
    assert_eq!(repo.item_state("a"), "running", "resumable, not failed");

    // `run` resumes from the finished session: no second session, the work ships.
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), vec!["a".to_owned()]);
    let sessions = kinds(&repo)
        .iter()
        .filter(|k| *k == "session_started")
        .count();
    assert_eq!(sessions, 1, "the finished session is not run again");
    repo.assert_clean_end();
}

#[test]
fn pause_holds_new_work_until_resume_and_then_the_run_finishes() {
    let repo = Repo::new(&project());
    let agent = Held::configure(
        &repo,
        &["a", "b"],
        "[ $NIGHTSHIFT_ITEM = a ]",
        SOLVE,
        1,
        1,
        "",
    );
    let mut run = spawn_run(&repo, &[]);
    agent.wait_started();
    let out = repo.run(&["pause"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    agent.release();
    // The step in flight finishes; then the engine journals the pause.
    until_journal(&repo, "the operator pause", |all| {
        all.iter()
            .any(|e| matches!(&e.kind, EventKind::RunPaused { reason, .. } if reason == "operator"))
    });
    let status = repo.run(&["status"]);
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(shown.contains("paused (operator) until resumed"), "{shown}");
    assert_eq!(repo.item_state("b"), "queued");
    let out = repo.run(&["resume"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(run.wait().unwrap().code(), Some(10));
    // The journal's order is the proof: b started only after the resume.
    let k = kinds(&repo);
    let paused = k.iter().position(|k| k == "run_paused").unwrap();
    let unpaused = k.iter().position(|k| k == "run_unpaused").unwrap();
    let b_started = events(&repo)
        .iter()
        .position(|e| matches!(&e.kind, EventKind::AttemptStarted { item, .. } if item == "b"))
        .unwrap();
    assert!(paused < unpaused && unpaused < b_started, "{k:?}");
    assert_eq!(repo.shipped_items(), vec!["a".to_owned(), "b".to_owned()]);
    repo.assert_clean_end();
}

#[test]
fn a_pause_survives_an_engine_restart() {
    let repo = Repo::new(&project());
    let _agent = Held::configure(&repo, &["a"], "false", SOLVE, 1, 1, "");
    assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
    let mut run = spawn_run(&repo, &[]);
    until_journal(&repo, "the operator pause", |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunPaused { .. }))
    });
    let out = repo.run(&["stop"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(run.wait().unwrap().code(), Some(0));
    // A new engine (as a supervisor would start) picks the run up still paused.
    let mut run = spawn_run(&repo, &[]);
    until_journal(&repo, "the second engine", |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunResumed { .. }))
    });
    assert_eq!(repo.run(&["resume"]).status.code(), Some(0));
    assert_eq!(run.wait().unwrap().code(), Some(10));
    let k = kinds(&repo);
    let resumed = k.iter().position(|k| k == "run_resumed").unwrap();
    let unpaused = k.iter().position(|k| k == "run_unpaused").unwrap();
    let started = k.iter().position(|k| k == "attempt_started").unwrap();
    assert!(
        resumed < unpaused && unpaused < started,
        "no work before the resume: {k:?}"
    );
    repo.assert_clean_end();
}

#[test]
fn until_under_a_faked_clock_stops_deadline_reached_with_the_work_preserved_and_resumable() {
    let repo = Repo::new(&project());
    // Item a's first session is held and does not solve it; its second solves it. b is next.
    let agent = Held::configure(
        &repo,
        &["a", "b"],
        "[ $NIGHTSHIFT_ITEM = a ] && [ $NIGHTSHIFT_ITERATION = 1 ]",
        &format!("if [ $NIGHTSHIFT_ITERATION = 1 ]; then {FAIL}; else {SOLVE}; fi"),
        2,
        1,
        "",
    );
    let now = repo.agent_dir.join("now");
    std::fs::write(&now, "2026-01-01T06:59:00Z").unwrap();
    let now_env = now.display().to_string();
    let mut run = repo
        .cmd(&["run", "--until", "07:00"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", &now_env)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    agent.wait_started();
    // Time passes the deadline while the first session is in flight.
    std::fs::write(&now, "2026-01-01T07:00:30Z").unwrap();
    agent.release();
    assert_eq!(run.wait().unwrap().code(), Some(19), "deadline_reached");
    let all = events(&repo);
    let deadline = all.iter().find_map(|e| match &e.kind {
        EventKind::DeadlineSet { until, given } => Some((*until, given.clone())),
        _ => None,
    });
    assert_eq!(
        deadline,
        Some((1_767_250_800, "07:00".to_owned())),
        "07:00 local (TZ=UTC) on the faked day"
    );
    let stopped = all.iter().any(|e| {
        matches!(e.kind, EventKind::RunStopped { halt_reason: Some(h), .. }
            if h == nightshift_core::halt::HaltReason::DeadlineReached)
    });
    assert!(stopped, "{:?}", kinds(&repo));
    let sessions = kinds(&repo)
        .iter()
        .filter(|k| *k == "session_started")
        .count();
    assert_eq!(sessions, 1, "no new session after the deadline");
    assert!(
        !all.iter()
            .any(|e| matches!(&e.kind, EventKind::AttemptStarted { item, .. } if item == "b")),
        "no new attempt after the deadline"
    );
    assert!(
        all.iter()
            .any(|e| matches!(e.kind, EventKind::Preserved { .. })),
        "the work in flight is preserved"
    );
    assert_eq!(repo.item_state("a"), "running");
    assert_eq!(repo.item_state("b"), "queued");

    // The deadline was consumed: `run` resumes the same attempt and finishes the plan.
    let out = repo
        .cmd(&["run"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", &now_env)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), vec!["a".to_owned(), "b".to_owned()]);
    let a_attempts = events(&repo)
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::AttemptStarted { item, .. } if item == "a"))
        .count();
    assert_eq!(a_attempts, 1, "the same attempt went on");
    repo.assert_clean_end();
}

#[test]
fn a_process_gate_in_log_mode_journals_gate_warned_and_does_not_act() {
    let repo = Repo::new(&project());
    repo.agent(
        "spend",
        "busy 400ms usage-per-turn=300 interval=20ms\nwrite done/spend <<EOF\nok\nEOF\n",
    );
    let config = plan(&repo, &["spend"], 1, 1)
        .replace("command = [", "format = \"claude-stream\"\ncommand = [")
        .replace("[limits]\n", "[limits]\nsession_tokens = 1000\n");
    repo.configure(&format!("{config}\n[gates]\nbudget = \"log\"\n"));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let all = events(&repo);
    let warned = all.iter().find_map(|e| match &e.kind {
        EventKind::GateWarned { gate, class, .. } => Some((gate.clone(), class.clone())),
        _ => None,
    });
    assert_eq!(
        warned,
        Some(("budget".to_owned(), "process".to_owned())),
        "{:?}",
        kinds(&repo)
    );
    let ended_over_budget = all.iter().any(|e| {
        matches!(&e.kind, EventKind::SessionEnded { outcome, .. }
            if *outcome == nightshift_core::store::Outcome::OverBudget)
    });
    assert!(!ended_over_budget, "a logged gate does not end the session");
    assert_eq!(repo.shipped_items(), vec!["spend".to_owned()]);
}

fn assert_config_rejected(gates: &str, location: &str, words: &str) {
    let repo = Repo::new(&project());
    repo.agent("default", NEVER_SOLVES);
    let config = plan(&repo, &["a"], 1, 1);
    let line = config.lines().count() + 3;
    repo.configure(&format!("{config}\n[gates]\n{gates}\n"));
    let out = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    let at = format!("nightshift.toml:{line}:{location}");
    assert!(stderr.contains(&at), "expected {at} in: {stderr}");
    assert!(stderr.contains(words), "expected {words:?} in: {stderr}");
    assert!(!repo.root.join(".nightshift").exists());
}

#[test]
fn gate_config_errors_are_located() {
    assert_config_rejected("stal = \"log\"", "1", "unknown gate `stal`");
    assert_config_rejected(
        "determinism = \"off\"",
        "15",
        "product gate and can only be \"enforce\" or \"log\"",
    );
    assert_config_rejected(
        "blocked_paths = \"log\"",
        "17",
        "safety gate and can only be \"enforce\"",
    );
}

#[test]
fn the_deadline_passing_during_a_pause_stops_the_run_deadline_reached() {
    let repo = Repo::new(&project());
    let _agent = Held::configure(&repo, &["a"], "false", SOLVE, 1, 1, "");
    let now = repo.agent_dir.join("now");
    std::fs::write(&now, "2026-01-01T06:59:00Z").unwrap();
    assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
    let mut run = repo
        .cmd(&["run", "--until", "07:00"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", now.display().to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    until_journal(&repo, "the operator pause", |all| {
        all.iter()
            .any(|e| matches!(e.kind, EventKind::RunPaused { .. }))
    });
    std::fs::write(&now, "2026-01-01T07:00:01Z").unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(19));
    assert!(
        !kinds(&repo).contains(&"attempt_started".to_owned()),
        "{:?}",
        kinds(&repo)
    );
    assert_eq!(repo.item_state("a"), "queued");
}

#[test]
fn the_gates_file_sets_process_gates_and_cannot_reach_a_product_gate() {
    let repo = Repo::new(&project());
    repo.agent(
        "spend",
        "busy 400ms usage-per-turn=300 interval=20ms\nwrite done/spend <<EOF\nok\nEOF\n",
    );
    let config = plan(&repo, &["spend"], 1, 1)
        .replace("command = [", "format = \"claude-stream\"\ncommand = [")
        .replace("[limits]\n", "[limits]\nsession_tokens = 1000\n");
    repo.configure(&format!(
        "{config}\n[gates]\nfile = \".nightshift/gates.toml\"\n"
    ));
    std::fs::create_dir_all(repo.root.join(".nightshift")).unwrap();
    std::fs::write(
        repo.root.join(".nightshift/gates.toml"),
        "budget = \"log\"\n",
    )
    .unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let warned: Vec<String> = events(&repo)
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GateWarned { gate, .. } => Some(gate.clone()),
            _ => None,
        })
        .collect();
    assert!(warned.contains(&"budget".to_owned()), "{warned:?}");

    // A file naming a product gate is ignored (the modes stay) and journaled.
    std::fs::write(
        repo.root.join(".nightshift/gates.toml"),
        "adequacy = \"log\"\n",
    )
    .unwrap();
    let out = repo.run(&["run", "--fresh"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let file_warning = events(&repo).iter().find_map(|e| match &e.kind {
        EventKind::GateWarned { gate, detail, .. } if gate == "gates_file" => Some(detail.clone()),
        _ => None,
    });
    assert!(
        file_warning.is_some_and(|d| d.contains("only nightshift.toml can set its mode")),
        "{:?}",
        kinds(&repo)
    );
}

#[test]
fn the_stall_gate_in_log_mode_warns_about_silence_and_lets_the_session_finish() {
    let repo = Repo::new(&project());
    repo.agent("quiet", "go-silent 2s\nwrite done/quiet <<EOF\nok\nEOF\n");
    let config = plan(&repo, &["quiet"], 1, 1).replace(
        "[limits]\n",
        "[limits]\nstall_grace = \"200ms\"\nkill_grace = \"200ms\"\n",
    );
    repo.configure(&format!("{config}\n[gates]\nstall = \"log\"\n"));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let all = events(&repo);
    assert!(
        all.iter().any(
            |e| matches!(&e.kind, EventKind::GateWarned { gate, class, .. } if gate == "stall" && class == "process")
        ),
        "{:?}",
        kinds(&repo)
    );
    assert!(
        !kinds(&repo).contains(&"session_nudged".to_owned()),
        "a logged stall gate neither nudges nor ends the session"
    );
    assert_eq!(repo.shipped_items(), vec!["quiet".to_owned()]);
}

#[test]
fn a_bad_until_is_refused_before_anything_is_written() {
    let repo = Repo::new(&project());
    repo.agent("default", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo.run(&["run", "--until", "seven"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("neither a local time like 07:00"),
        "{stderr}"
    );
    assert!(!repo.root.join(".nightshift").exists());
}
