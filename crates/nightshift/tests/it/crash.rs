//! Crash safety: the engine (`nightshift engine`, unsupervised) is killed with SIGKILL at each
//! journaled transition of an item (failpoints), then `nightshift run` again must finish the
//! work exactly once, with no orphan
//! worktree or process and no attempt whose work is lost.

use std::os::unix::process::ExitStatusExt;

use nightshift_core::failpoint;

use crate::harness::*;

/// Every point the engine passes while shipping, failing and parking items.
const POINTS: &[&str] = &[
    "run_started",
    "control_plane_pinned",
    "attempt_started",
    "worktree_ready",
    "baseline_checked",
    "session_started",
    "session_ended",
    "check_started",
    "check_ended",
    "committed",
    "merge_prepared",
    "integrate_intended",
    "integrate_effect_done",
    "integrated",
    "preserved",
    "worktree_removed",
    "attempt_failed",
    "item_parked",
    "pass_started",
    "run_finished",
];

/// Items: `a` ships at once, `b` ships on its second iteration, `c` never (parked).
fn crash_repo() -> Repo {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent(
        "b",
        "append notes.txt <<EOF\ntry\nEOF\nwhen iteration >= 2\nwrite done/b <<EOF\nok\nEOF\n",
    );
    repo.agent("c", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["a", "b", "c"], 2, 1));
    repo
}

/// [`crash_repo`] with the three items admitted at once (`max_parallel = 4`, disjoint paths).
fn parallel_crash_repo() -> Repo {
    let repo = crash_repo();
    let mut config = std::fs::read_to_string(repo.root.join("nightshift.toml")).unwrap();
    for id in ["a", "b", "c"] {
        config = config.replace(
            &format!("check = \"sh check.sh {id}\"\n"),
            &format!("check = \"sh check.sh {id}\"\npaths = [\"done/{id}\"]\n"),
        );
    }
    config.push_str("\n[run]\nmax_parallel = 4\n");
    repo.configure(&config);
    repo
}

fn assert_recovered(repo: &Repo, context: &str) {
    let out = repo.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(11),
        "{context}: resume\n{}",
        text(&out)
    );
    let mut shipped = repo.shipped_items();
    shipped.sort();
    assert_eq!(
        shipped,
        ["a", "b"],
        "{context}: each item exactly once on the target"
    );
    assert_eq!(repo.item_state("c"), "parked", "{context}");
    repo.assert_clean_end();
    // No lost attempt: every attempt reached a verdict and its work is reachable from a ref.
    let store = repo.store();
    let run = store.latest_run().unwrap().unwrap();
    let mut all = Vec::new();
    let mut runs = vec![run.id.clone()];
    for e in store.events_after(0, 100_000).unwrap() {
        if !runs.contains(&e.run_id) {
            runs.push(e.run_id.clone());
        }
    }
    for run in &runs {
        all.extend(store.attempts(run).unwrap());
    }
    for att in &all {
        assert!(
            att.is_finished(),
            "{context}: attempt {}/{} left in phase {}",
            att.item,
            att.attempt,
            att.phase
        );
        let r = att
            .preserve_ref
            .as_deref()
            .unwrap_or_else(|| panic!("{context}: {}/{} not preserved", att.item, att.attempt));
        repo.git(&["rev-parse", "--verify", r]);
    }
}

#[test]
fn sigkill_at_every_transition_then_resume_ships_each_item_exactly_once() {
    crash_matrix(crash_repo, "");
}

/// The same matrix with the three items' sessions running at once.
#[test]
fn sigkill_at_every_transition_at_max_parallel_4_ships_each_item_exactly_once() {
    crash_matrix(parallel_crash_repo, " (max_parallel = 4)");
}

fn crash_matrix(make: fn() -> Repo, label: &str) {
    let mut killed = 0;
    for point in POINTS {
        for nth in [1, 2, 4] {
            let context = format!("{point}@{nth}{label}");
            let repo = make();
            let out = repo
                .cmd(&["engine"])
                .env(failpoint::ENV, format!("{point}@{nth}"))
                .output()
                .unwrap();
            if nth == 1 {
                assert_eq!(
                    out.status.signal(),
                    Some(9),
                    "{context}: the failpoint was never reached\n{}",
                    text(&out)
                );
            }
            match out.status.signal() {
                Some(9) => killed += 1,
                None => assert_eq!(
                    out.status.code(),
                    Some(11),
                    "{context}: finished without reaching the point\n{}",
                    text(&out)
                ),
                Some(other) => panic!("{context}: died of signal {other}\n{}", text(&out)),
            }
            assert_recovered(&repo, &context);
        }
    }
    // Every point is reached once (asserted above); most several times on this plan.
    assert!(
        killed > POINTS.len(),
        "only {killed} runs were actually killed"
    );
}

/// The points of the operator pause (their own test below).
const PAUSE_POINTS: &[&str] = &["run_paused", "run_unpaused"];

/// The points of `run --until` (their own test below).
const DEADLINE_POINTS: &[&str] = &["deadline_set", "run_stopped"];

/// The points of pushing to a remote (their own test below).
const PUSH_POINTS: &[&str] = &["push_failed", "pushed"];

/// The points of a session's budget (their own test below).
const BUDGET_POINTS: &[&str] = &["budget_warned", "budget_tripped"];

/// The point of a gates file that does not parse (its own test below).
const GATE_POINTS: &[&str] = &["gate_warned"];

/// The point of a review that escalates (its own test below).
const ESCALATION_POINTS: &[&str] = &["item_escalated"];

/// The points of review debt (their own test below).
const DEBT_POINTS: &[&str] = &["debt_review_started", "debt_settled"];

/// The point of a silent session's nudge (its own test below).
const NUDGE_POINTS: &[&str] = &["session_nudged"];

/// The point of an item that waits on a person's action (its own test below).
const OPERATOR_POINTS: &[&str] = &["item_awaiting_operator"];

/// The point of a conflict with the target (its own test below).
const CONFLICT_POINTS: &[&str] = &["conflict_found"];

/// The points a reviewed plan adds.
const REVIEW_POINTS: &[&str] = &["review_started", "review_ended", "review_decided"];

/// Items `a` and `b` ship, each after an approving review (a shell script reviewer).
fn review_repo() -> Repo {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    let script = repo.agent_dir.join("review.sh");
    std::fs::write(
        &script,
        r#"printf '%s\n' '{"verdict": "approve", "reason": "looks right", "findings": []}' > "$NIGHTSHIFT_VERDICT_FILE""#,
    )
    .unwrap();
    repo.configure(&format!(
        "{}\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\n",
        plan(&repo, &["a", "b"], 2, 1),
        script.display()
    ));
    repo
}

/// The kinds a plan journals when nothing goes wrong.
fn journaled_kinds(repo: &Repo, code: i32) -> Vec<&'static str> {
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(code), "{}", text(&out));
    let mut kinds: Vec<&str> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

/// The matrix is computed, not hand-kept: every kind the crash plans journal has its point.
#[test]
fn the_crash_points_cover_every_event_the_crash_plan_journals() {
    let kinds = journaled_kinds(&crash_repo(), 11);
    let missing: Vec<_> = kinds.iter().filter(|k| !POINTS.contains(k)).collect();
    assert!(
        missing.is_empty(),
        "no failpoint in the matrix for {missing:?}"
    );
    let kinds = journaled_kinds(&review_repo(), 10);
    let missing: Vec<_> = kinds
        .iter()
        .filter(|k| !POINTS.contains(k) && !REVIEW_POINTS.contains(k))
        .collect();
    assert!(
        missing.is_empty(),
        "no failpoint in the review matrix for {missing:?}"
    );
}

/// A reviewed plan, killed once at each review transition under the supervisor: the same run
/// resumes, each item ships exactly once, nothing follows `run_finished`.
#[test]
fn sigkill_at_every_review_transition_under_the_supervisor_resumes_the_same_run() {
    for point in REVIEW_POINTS {
        for nth in [1, 2] {
            let spec = format!("{point}@{nth}");
            let repo = review_repo();
            let once = repo.agent_dir.join("failpoint-fired");
            let out = repo
                .cmd(&["run"])
                .env(failpoint::ENV, &spec)
                .env(failpoint::ONCE_ENV, &once)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(10), "{spec}\n{}", text(&out));
            assert!(once.exists(), "{spec}: the failpoint was never reached");
            let kinds: Vec<&'static str> = repo
                .store()
                .events_after(0, 100_000)
                .unwrap()
                .iter()
                .map(|e| e.kind.name())
                .collect();
            assert_eq!(
                kinds.iter().filter(|k| **k == "run_started").count(),
                1,
                "{spec}: {kinds:?}"
            );
            assert_eq!(
                kinds.iter().position(|k| *k == "run_finished"),
                Some(kinds.len() - 1),
                "{spec}: {kinds:?}"
            );
            assert_eq!(repo.shipped_items(), ["a", "b"], "{spec}");
            repo.assert_clean_end();
        }
    }
}

/// The same matrix under the supervisor (`nightshift run`): the engine dies once at the point
/// (`NIGHTSHIFT_FAILPOINT_ONCE`), the supervisor restarts it, and the restarted engine resumes
/// the same run — or, after `run_finished`, exits with its halt. A supervisor never starts a
/// new run: the journal holds exactly one `run_started`, and nothing follows `run_finished`.
#[test]
fn sigkill_at_every_transition_under_the_supervisor_resumes_the_same_run() {
    for point in POINTS {
        for nth in [1, 2] {
            let spec = format!("{point}@{nth}");
            let context = format!("{spec} (supervised)");
            let repo = crash_repo();
            let once = repo.agent_dir.join("failpoint-fired");
            let out = repo
                .cmd(&["run"])
                .env(failpoint::ENV, &spec)
                .env(failpoint::ONCE_ENV, &once)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(11), "{context}\n{}", text(&out));
            if nth == 1 {
                assert!(once.exists(), "{context}: the failpoint was never reached");
            }
            let kinds: Vec<&'static str> = repo
                .store()
                .events_after(0, 100_000)
                .unwrap()
                .iter()
                .map(|e| e.kind.name())
                .collect();
            assert_eq!(
                kinds.iter().filter(|k| **k == "run_started").count(),
                1,
                "{context}: the supervisor started a new run: {kinds:?}"
            );
            let finished = kinds.iter().position(|k| *k == "run_finished");
            assert_eq!(
                finished,
                Some(kinds.len() - 1),
                "{context}: nothing follows run_finished: {kinds:?}"
            );
            assert_eq!(repo.shipped_items(), ["a", "b"], "{context}");
            assert_eq!(repo.item_state("c"), "parked", "{context}");
            repo.assert_clean_end();
        }
    }
}

#[test]
fn an_engine_killed_mid_session_leaves_no_orphan_and_the_session_runs_again() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("killed-once");
    let pidfile = repo.agent_dir.join("orphan.pid");
    // First session: leave a background process in the worktree (its own session, so killpg
    // cannot reach it), then SIGKILL the engine (our parent). Second session: do the work.
    let agent = format!(
        "if [ ! -e {m} ]; then touch {m}; setsid sleep 600 >/dev/null 2>&1 & echo $! > {p}; kill -9 $PPID; sleep 600; fi; mkdir -p done; echo ok > done/x",
        m = marker.display(),
        p = pidfile.display()
    );
    let config = plan(&repo, &["x"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    // The engine alone (`run` would restart it: see supervise.rs).
    let out = repo.run(&["engine"]);
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let orphan: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        std::path::Path::new(&format!("/proc/{orphan}")).exists(),
        "the orphan is running before resume"
    );

    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["x"]);
    let stat = std::fs::read_to_string(format!("/proc/{orphan}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z"),
        "the orphan survived resume: {stat}"
    );
    let sessions = repo
        .store()
        .events_after(0, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.name() == "session_started")
        .count();
    assert_eq!(sessions, 2, "the interrupted session ran again, once");
    repo.assert_clean_end();
}

/// The operator pause's transitions, killed once each under the supervisor: the restarted
/// engine resumes the same run, still paused until `nightshift resume`, then finishes it.
#[test]
fn sigkill_at_the_pause_transitions_under_the_supervisor_resumes_the_same_run() {
    use nightshift_core::store::EventKind;
    use std::process::Stdio;
    for point in PAUSE_POINTS.iter().copied() {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.configure(&plan(&repo, &["a"], 1, 1));
        let once = repo.agent_dir.join("failpoint-fired");
        assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
        let run = repo
            .cmd(&["run"])
            .env(failpoint::ENV, point)
            .env(failpoint::ONCE_ENV, &once)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Paused (again, after the restart when the kill came at run_paused).
        let paused_engines = if point == "run_paused" { 2 } else { 1 };
        wait_for(&repo, |kinds| {
            kinds
                .iter()
                .filter(|k| k.name() == "run_started" || k.name() == "run_resumed")
                .count()
                >= paused_engines
                && kinds
                    .iter()
                    .any(|k| matches!(k, EventKind::RunPaused { .. }))
        });
        assert_eq!(repo.run(&["resume"]).status.code(), Some(0));
        let out = run.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(10),
            "{point}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(once.exists(), "{point}: the failpoint was never reached");
        let kinds: Vec<&'static str> = repo
            .store()
            .events_after(0, 100_000)
            .unwrap()
            .iter()
            .map(|e| e.kind.name())
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "run_started").count(),
            1,
            "{point}: {kinds:?}"
        );
        assert_eq!(repo.shipped_items(), ["a"], "{point}");
        repo.assert_clean_end();
    }
}

/// Polls the journal (a bounded handshake) until `pred` holds for its kinds.
fn wait_for(repo: &Repo, pred: impl Fn(&[nightshift_core::store::EventKind]) -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        let seen =
            nightshift_core::store::Store::open_read_only(&repo.root.join(".nightshift/state.db"))
                .and_then(|s| s.events_after(0, 100_000));
        if let Ok(all) = seen {
            let kinds: Vec<_> = all.into_iter().map(|e| e.kind).collect();
            if pred(&kinds) {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("timed out waiting for the journal");
}

/// `run --until`'s transitions, killed once each under the supervisor (a faked wall clock; the
/// run is held by an operator pause until the clock passes the deadline). A kill right after
/// the deadline's `run_stopped` must not resume work: the restarted engine exits 19 with that
/// halt. Either way no attempt starts after the deadline and there is one run.
#[test]
fn sigkill_at_the_deadline_transitions_under_the_supervisor_starts_nothing_after_it() {
    use nightshift_core::store::EventKind;
    use std::process::Stdio;
    for point in DEADLINE_POINTS.iter().copied() {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.configure(&plan(&repo, &["a"], 1, 1));
        let once = repo.agent_dir.join("failpoint-fired");
        let now = repo.agent_dir.join("now");
        std::fs::write(&now, "2026-01-01T06:59:00Z").unwrap();
        assert_eq!(repo.run(&["pause"]).status.code(), Some(0));
        let run = repo
            .cmd(&["run", "--until", "07:00"])
            .env("NIGHTSHIFT_FAKE_NOW_FILE", &now)
            .env(failpoint::ENV, point)
            .env(failpoint::ONCE_ENV, &once)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&repo, |kinds| {
            kinds
                .iter()
                .any(|k| matches!(k, EventKind::RunPaused { .. }))
        });
        std::fs::write(&now, "2026-01-01T07:00:01Z").unwrap();
        let out = run.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(19), "{point}\n{stderr}");
        assert!(!stderr.contains("kept dying"), "{point}: {stderr}");
        assert!(once.exists(), "{point}: the failpoint was never reached");
        let kinds: Vec<&'static str> = repo
            .store()
            .events_after(0, 100_000)
            .unwrap()
            .iter()
            .map(|e| e.kind.name())
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "run_started").count(),
            1,
            "{point}: {kinds:?}"
        );
        assert!(!kinds.contains(&"attempt_started"), "{point}: {kinds:?}");
        assert_eq!(
            kinds.iter().filter(|k| **k == "run_stopped").count(),
            1,
            "{point}: one deadline stop: {kinds:?}"
        );
        assert_eq!(kinds.last(), Some(&"run_stopped"), "{point}: {kinds:?}");
    }
}

/// Pushing to a remote that refuses until item b's agent reopens it (as in integrate.rs): the
/// engine is killed once at `push_failed` and at `pushed` under the supervisor. The same run
/// resumes, each item lands once, locally and on the remote.
#[test]
fn sigkill_at_the_push_transitions_under_the_supervisor_resumes_the_same_run() {
    for point in PUSH_POINTS.iter().copied() {
        let repo = Repo::new(&project());
        let remote = repo.agent_dir.parent().unwrap().join("remote.git");
        let closed = repo.agent_dir.join("closed");
        repo.git(&["init", "--quiet", "--bare", remote.to_str().unwrap()]);
        repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
        let hook = remote.join("hooks/pre-receive");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\nif [ -e {} ]; then echo 'remote closed' >&2; exit 1; fi\n",
                closed.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        repo.agent("a", &solves("a"));
        let config = plan(&repo, &["a", "b"], 1, 1).replacen(
            &repo.agent_table(),
            &format!(
                "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"if [ $NIGHTSHIFT_ITEM = b ]; then rm -f {closed}; mkdir -p done; echo ok > done/b; else exec {BIN} __fake-agent --script-dir {dir}; fi\"]\n",
                closed = closed.display(),
                dir = repo.agent_dir.display()
            ),
            1,
        ) + "\n[integrate]\npush = true\ndone = \"pushed\"\n";
        repo.configure(&config);
        repo.git(&["push", "--quiet", "origin", "main"]);
        std::fs::write(&closed, "").unwrap();
        let once = repo.agent_dir.join("failpoint-fired");
        let out = repo
            .cmd(&["run"])
            .env(failpoint::ENV, point)
            .env(failpoint::ONCE_ENV, &once)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(10), "{point}\n{}", text(&out));
        assert!(once.exists(), "{point}: the failpoint was never reached");
        let kinds: Vec<&'static str> = repo
            .store()
            .events_after(0, 100_000)
            .unwrap()
            .iter()
            .map(|e| e.kind.name())
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "run_started").count(),
            1,
            "{point}: {kinds:?}"
        );
        assert_eq!(
            kinds.iter().position(|k| *k == "run_finished"),
            Some(kinds.len() - 1),
            "{point}: {kinds:?}"
        );
        assert_eq!(repo.shipped_items(), ["a", "b"], "{point}");
        let remote_main = std::process::Command::new("git")
            .args(["--git-dir", remote.to_str().unwrap(), "rev-parse", "main"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&remote_main.stdout),
            repo.git(&["rev-parse", "main"]),
            "{point}: the remote holds the target"
        );
        repo.assert_clean_end();
    }
}

/// An agent that overspends its session budget (`spend`), then one that solves (`ok`): the
/// engine is killed once at `budget_warned` and at `budget_tripped` under the supervisor. The
/// run ends as the same plan does without a kill (its exit, its shipped items), in one run.
#[test]
fn sigkill_at_the_budget_transitions_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent(
            "spend",
            "busy 400ms usage-per-turn=300 interval=20ms\nwrite done/spend <<EOF\nok\nEOF\n",
        );
        repo.agent("ok", &solves("ok"));
        let config = plan(&repo, &["spend", "ok"], 1, 1)
            .replace("command = [", "format = \"claude-stream\"\ncommand = [")
            .replace("[limits]\n", "[limits]\nsession_tokens = 1000\n");
        repo.configure(&config);
        repo
    };
    ends_as_without_a_kill(&make, BUDGET_POINTS);
}

/// Kills the engine once at each of `points` under the supervisor, in a fresh repository from
/// `make` each time; every run must end as the same plan does without a kill (its exit code and
/// shipped items), in one run, with nothing after `run_finished` and a clean end.
fn ends_as_without_a_kill(make: &dyn Fn() -> Repo, points: &[&str]) {
    let baseline = make();
    let out = baseline.run(&["run"]);
    let code = out.status.code();
    let shipped = baseline.shipped_items();
    let kinds = journaled_kinds_of(&baseline);
    for point in points {
        assert!(
            kinds.contains(point),
            "the plan journals {point}: {kinds:?}"
        );
    }
    for point in points.iter().copied() {
        let repo = make();
        let once = repo.agent_dir.join("failpoint-fired");
        let out = repo
            .cmd(&["run"])
            .env(failpoint::ENV, point)
            .env(failpoint::ONCE_ENV, &once)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), code, "{point}\n{}", text(&out));
        assert!(once.exists(), "{point}: the failpoint was never reached");
        let kinds: Vec<&'static str> = repo
            .store()
            .events_after(0, 100_000)
            .unwrap()
            .iter()
            .map(|e| e.kind.name())
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "run_started").count(),
            1,
            "{point}: {kinds:?}"
        );
        assert_eq!(
            kinds.iter().position(|k| *k == "run_finished"),
            Some(kinds.len() - 1),
            "{point}: {kinds:?}"
        );
        assert_eq!(repo.shipped_items(), shipped, "{point}");
        repo.assert_clean_end();
    }
}

/// The distinct kinds in a repository's journal.
fn journaled_kinds_of(repo: &Repo) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

/// `run_resumed`: an unsupervised engine dies mid-attempt; the user's `run` resumes, and its
/// first engine is killed right after journaling `run_resumed`; the supervisor's restart
/// resumes the same run again and finishes it.
#[test]
fn sigkill_right_after_run_resumed_under_the_supervisor_resumes_the_same_run() {
    let repo = crash_repo();
    let out = repo
        .cmd(&["engine"])
        .env(failpoint::ENV, "session_started")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let once = repo.agent_dir.join("failpoint-fired");
    let out = repo
        .cmd(&["run"])
        .env(failpoint::ENV, "run_resumed")
        .env(failpoint::ONCE_ENV, &once)
        .output()
        .unwrap();
    assert!(once.exists(), "the failpoint was reached");
    let kinds: Vec<&'static str> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "run_resumed").count(),
        2,
        "{kinds:?}"
    );
    assert_recovered_after(&repo, out, "run_resumed");
}

/// [`assert_recovered`] for a run that already ran to its end: one run, each item once.
fn assert_recovered_after(repo: &Repo, out: std::process::Output, context: &str) {
    assert_eq!(out.status.code(), Some(11), "{context}\n{}", text(&out));
    let kinds: Vec<&'static str> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "run_started").count(),
        1,
        "{context}: {kinds:?}"
    );
    assert_eq!(repo.shipped_items(), ["a", "b"], "{context}");
    assert_eq!(repo.item_state("c"), "parked", "{context}");
    repo.assert_clean_end();
}

/// A gates file that does not parse is journaled as `gate_warned` at every engine start: the
/// engine is killed once right after it under the supervisor, and the run ends as without.
#[test]
fn sigkill_at_gate_warned_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.configure(&format!(
            "{}\n[gates]\nfile = \".nightshift/gates.toml\"\n",
            plan(&repo, &["a"], 1, 1)
        ));
        std::fs::create_dir_all(repo.root.join(".nightshift")).unwrap();
        std::fs::write(
            repo.root.join(".nightshift/gates.toml"),
            "this is = not [toml\n",
        )
        .unwrap();
        repo
    };
    ends_as_without_a_kill(&make, GATE_POINTS);
}

/// A review that escalates leaves the item `escalated` (`item_escalated`): killed once right
/// after it under the supervisor, the run ends as without a kill (16, nothing shipped).
#[test]
fn sigkill_at_item_escalated_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        let script = repo.agent_dir.join("review.sh");
        std::fs::write(
            &script,
            r#"printf '%s\n' '{"verdict": "escalate", "reason": "a person must decide", "findings": []}' > "$NIGHTSHIFT_VERDICT_FILE""#,
        )
        .unwrap();
        repo.configure(&format!(
            "{}\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\n",
            plan(&repo, &["a"], 2, 1),
            script.display()
        ));
        repo
    };
    ends_as_without_a_kill(&make, ESCALATION_POINTS);
}

/// A review that times out ships the work with review debt (`salvage-if-done`), and the debt
/// review that follows pays it: killed once at each debt transition under the supervisor, the
/// run ends as without a kill.
#[test]
fn sigkill_at_the_debt_transitions_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        let script = repo.agent_dir.join("review.sh");
        std::fs::write(
            &script,
            "if [ \"$NIGHTSHIFT_REVIEW\" = debt ]; then\n  printf '%s\\n' '{\"verdict\": \"approve\", \"reason\": \"ok later\"}' > \"$NIGHTSHIFT_VERDICT_FILE\"\n  exit 0\nfi\nexec sleep 600\n",
        )
        .unwrap();
        repo.configure(&format!(
            "{}\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\ntimeout = \"1s\"\non_timeout = \"salvage-if-done\"\n",
            plan(&repo, &["a"], 1, 1),
            script.display()
        ));
        repo
    };
    ends_as_without_a_kill(&make, DEBT_POINTS);
}

/// A silent agent is nudged (`session_nudged`) and at last ends `stalled`: killed once right
/// after a nudge under the supervisor, the run ends as without a kill.
#[test]
fn sigkill_at_session_nudged_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("bad", "go-silent forever\n");
        repo.agent("good", &solves("good"));
        let config = plan(&repo, &["bad", "good"], 1, 1)
            .replace("command = [", "format = \"claude-stream\"\ncommand = [")
            .replace(
                "[limits]\n",
                "[limits]\nstall_grace = \"300ms\"\nstall_nudges = 1\nkill_grace = \"200ms\"\n",
            );
        repo.configure(&config);
        repo
    };
    ends_as_without_a_kill(&make, NUDGE_POINTS);
}

/// An agent declares an action only a person can take: `a` ends `awaiting_operator`
/// (`item_awaiting_operator`), `b` ships; killed once right after it under the supervisor, the
/// run ends as without a kill.
#[test]
fn sigkill_at_item_awaiting_operator_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
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
        repo
    };
    ends_as_without_a_kill(&make, OPERATOR_POINTS);
}

/// Someone else commits a conflicting edit to the target while `b`'s work is checked (as in
/// integrate.rs); the conflict (`conflict_found`) gets a repair iteration that lands on top.
/// Killed once right after `conflict_found` under the supervisor, the run ends as without.
#[test]
fn sigkill_at_conflict_found_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.write("shared.txt", "original\n");
        repo.agent("c", &solves("c"));
        let agent = "if [ $NIGHTSHIFT_ITERATION = 1 ]; then echo mine > shared.txt; mkdir -p done; echo ok > done/b; else printf 'theirs1\\nmine\\n' > shared.txt; fi";
        let check = repo.check_after_person(
            "b",
            "echo theirs$NIGHTSHIFT_ATTEMPT > shared.txt && git commit -q -am theirs$NIGHTSHIFT_ATTEMPT",
            "sh check.sh b",
        );
        let config = plan(&repo, &["b", "c"], 1, 1)
            .replacen(
                &repo.agent_table(),
                &format!(
                    "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"if [ $NIGHTSHIFT_ITEM = b ]; then {agent}; else exec {BIN} __fake-agent --script-dir {dir}; fi\"]\n",
                    agent = agent.replace('"', "\\\""),
                    dir = repo.agent_dir.display()
                ),
                1,
            )
            .replacen("check = \"sh check.sh b\"", &format!("check = \"{check}\""), 1);
        repo.configure(&config);
        repo
    };
    ends_as_without_a_kill(&make, CONFLICT_POINTS);
}

/// The point of a teardown that fails (its own test below).
const TEARDOWN_POINTS: &[&str] = &["teardown_failed"];

/// The point of a CLI that names its own session (its own test below).
const AGENT_SESSION_POINTS: &[&str] = &["agent_session_opened"];

/// The points journaled by the operator's own commands, `accept` and `tell` (their own tests
/// below): the command is killed, not an engine.
const COMMAND_POINTS: &[&str] = &["accepted", "operator_message"];

/// Points that are effects, not journaled kinds (killed between an effect and its record).
const EFFECT_POINTS: &[&str] = &["integrate_effect_done"];

/// The points of the control plane's defences (their own tests below): an agent that edits the
/// user's checkout, one that rewrites the store's derived tables, one that kills its engine's
/// process group, and a person who edits nightshift.toml mid-run.
const DEFENCE_POINTS: &[&str] = &[
    "control_plane_tampered",
    "store_repaired",
    "engine_restarted",
    "control_plane_changed",
];

/// The points of a message told to a live Claude-shaped session (its own test below).
const LIVE_TELL_POINTS: &[&str] = &["operator_message_written", "operator_message_delivered"];

/// A `command` agent (a shell script) for two items, `bad` and `good`, of [`project`]: both
/// solve their item; `bad` first runs `attack` (a shell fragment; `$root` is the user's
/// checkout, `$mark` a file that exists after the first session of the run).
fn hostile_repo(attack: &str) -> Repo {
    let repo = Repo::new(&project());
    let script = repo.agent_dir.join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nroot=$(cd ../../.. && pwd)\nmark={dir}/first-session\n\
             if [ \"$NIGHTSHIFT_ITEM\" = bad ]; then\n{attack}\nfi\n: > \"$mark\"\n\
             mkdir -p done && echo ok > done/$NIGHTSHIFT_ITEM\n",
            dir = repo.agent_dir.display()
        ),
    )
    .unwrap();
    let mut config = format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n\n[check]\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\n",
        script.display()
    );
    for id in ["bad", "good"] {
        config.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"sh check.sh {id}\"\n"
        ));
    }
    repo.configure(&config);
    repo
}

/// `control_plane_tampered`: the agent of `bad` edits the user's checkout; killed right after
/// the evidence is journaled, the restarted engine ends the run as without a kill (`bad` kept,
/// not shipped; `good` shipped once).
#[test]
fn sigkill_right_after_control_plane_tampered_ends_as_without_a_kill() {
    let make = || hostile_repo("echo 'agent edit' >> \"$root/README.md\"");
    ends_as_without_a_kill(&make, &["control_plane_tampered"]);
}

/// `store_repaired`: the agent of `bad` rewrites `items.check_command` in the state database;
/// killed right after the repair is journaled, the run ends as without a kill.
#[test]
fn sigkill_right_after_store_repaired_ends_as_without_a_kill() {
    let make = || {
        hostile_repo(
            "sqlite3 -cmd '.timeout 5000' \"$root/.nightshift/state.db\" \"update items set check_command='true'\"",
        )
    };
    ends_as_without_a_kill(&make, &["store_repaired"]);
}

/// `engine_restarted`: the agent of `bad` kills its engine's process group once; the
/// supervisor's restarted engine journals it and is killed right after; the next one ends the
/// run as without a kill.
#[test]
fn sigkill_right_after_engine_restarted_ends_as_without_a_kill() {
    let make = || {
        hostile_repo(
            "if [ ! -e \"$mark.killed\" ]; then : > \"$mark.killed\"; kill -9 -$(cut -d' ' -f5 /proc/$PPID/stat); sleep 600; fi",
        )
    };
    ends_as_without_a_kill(&make, &["engine_restarted"]);
}

/// `control_plane_changed`: a person edits nightshift.toml while the first item's check runs;
/// the engine sees it at the next item's start, journals it and is killed right after; the run
/// ends as without a kill, judged by the pinned copy.
#[test]
fn sigkill_right_after_control_plane_changed_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.agent("b", &solves("b"));
        let check = repo.check_after_person(
            "a",
            "sed -i 's/max_iterations = 1/max_iterations = 3/' nightshift.toml && git -c user.name=P -c user.email=p@example.com commit -qam person",
            "sh check.sh a",
        );
        let config = plan(&repo, &["a", "b"], 1, 1).replacen(
            "check = \"sh check.sh a\"",
            &format!("check = \"{check}\""),
            1,
        );
        repo.configure(&config);
        repo
    };
    ends_as_without_a_kill(&make, &["control_plane_changed"]);
}

/// Every point some crash test of this file kills at.
fn every_point() -> Vec<&'static str> {
    [
        POINTS,
        PAUSE_POINTS,
        DEADLINE_POINTS,
        PUSH_POINTS,
        BUDGET_POINTS,
        GATE_POINTS,
        ESCALATION_POINTS,
        DEBT_POINTS,
        NUDGE_POINTS,
        OPERATOR_POINTS,
        CONFLICT_POINTS,
        REVIEW_POINTS,
        &["run_resumed"],
        TEARDOWN_POINTS,
        AGENT_SESSION_POINTS,
        COMMAND_POINTS,
        DEFENCE_POINTS,
        LIVE_TELL_POINTS,
    ]
    .concat()
}

/// Every kind of `store/event.rs`, read from the enum itself: serde's refusal of an unknown
/// tag lists every variant, so a kind added there is seen here without anyone listing it.
fn every_event_kind() -> Vec<String> {
    let err = serde_json::from_str::<nightshift_core::store::EventKind>(
        r#"{"kind": "no_such_kind_for_the_crash_matrix"}"#,
    )
    .expect_err("an unknown kind is refused");
    let message = err.to_string();
    let listed = message
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("serde names the variants: {message}"))
        .1;
    let kinds: Vec<String> = listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(kinds.contains(&"run_finished".to_owned()), "{message}");
    kinds
}

/// The crash matrix covers every journaled kind: a kind added to `store/event.rs` without a
/// crash test here fails this test (and every listed point is a real kind or a known effect).
#[test]
fn the_crash_matrix_covers_every_event_kind_of_the_journal() {
    let kinds = every_event_kind();
    let points = every_point();
    let missing: Vec<&String> = kinds
        .iter()
        .filter(|k| !points.contains(&k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "journaled kinds no crash test kills at: {missing:?}"
    );
    let unknown: Vec<&&str> = points
        .iter()
        .filter(|p| !kinds.iter().any(|k| k == *p) && !EFFECT_POINTS.contains(p))
        .collect();
    assert!(unknown.is_empty(), "points that are not kinds: {unknown:?}");
}

/// A key file others can read: no receipt can be signed, so every finished attempt journals
/// `teardown_failed` (as in replay.rs). Killed once right after it under the supervisor, the
/// run ends as without a kill.
#[test]
fn sigkill_at_teardown_failed_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.agent("b", NEVER_SOLVES);
        repo.configure(&plan(&repo, &["a", "b"], 1, 1));
        let key = repo.home.join("data/nightshift/receipt-signing.key");
        std::fs::create_dir_all(key.parent().unwrap()).unwrap();
        std::fs::write(&key, format!("{}\n", "11".repeat(32))).unwrap();
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        repo
    };
    ends_as_without_a_kill(&make, TEARDOWN_POINTS);
}

/// A Claude-shaped CLI (the fake agent `--as claude`) names its session in `system/init`,
/// journaled as `agent_session_opened`: killed once right after it under the supervisor, the
/// session resumes and the run ends as without a kill.
#[test]
fn sigkill_at_agent_session_opened_under_the_supervisor_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.agent("b", &solves("b"));
        configure_claude_wrapper(&repo, "");
        repo
    };
    ends_as_without_a_kill(&make, AGENT_SESSION_POINTS);
}

/// A message told while a Claude-shaped session is live: the CLI (a wrapper around the fake
/// agent `--as claude`) reads its opening message from stdin, has `nightshift tell` say
/// something to its own item, reads the message the engine writes to its stdin
/// (`operator_message_written`) and echoes it back as Claude does with
/// `--replay-user-messages` (`operator_message_delivered`), then works as scripted. Killed right
/// after either, the run ends as without a kill.
#[test]
fn sigkill_right_after_a_live_message_is_written_or_delivered_ends_as_without_a_kill() {
    let make = || {
        let repo = Repo::new(&project());
        repo.agent("a", &solves("a"));
        repo.agent("b", &solves("b"));
        configure_claude_wrapper(
            &repo,
            &format!(
                "read -r opening\n\
                 NIGHTSHIFT_DATA_DIR={data} HOME={home} {BIN} tell -C {root} \"$NIGHTSHIFT_ITEM\" 'keep it small' >/dev/null 2>&1\n\
                 told=$(timeout 60 head -n 1)\n\
                 printf '%s\\n' \"$told\" | sed 's/^{{/{{\"isReplay\":true,/'\n\
                 exec </dev/null\n",
                data = repo.home.join("data").display(),
                home = repo.home.display(),
                root = repo.root.display(),
            ),
        );
        repo
    };
    ends_as_without_a_kill(&make, LIVE_TELL_POINTS);
}

/// Configures items `a` and `b` of [`plan`] (2 iterations, 1 attempt) with `kind = "claude"`
/// and a wrapper as its binary: `prelude` (shell lines, each ending in a newline), then the fake
/// agent `--as claude` with the adapter's argv.
pub(crate) fn configure_claude_wrapper(repo: &Repo, prelude: &str) {
    let wrapper = repo.agent_dir.join("claude-cli");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{prelude}exec {BIN} __fake-agent --script-dir {} --as claude -- \"$@\"\n",
            repo.agent_dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let config = plan(repo, &["a", "b"], 2, 1).replace(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"claude\"\nbinary = \"{}\"\n",
            wrapper.display()
        ),
    );
    repo.configure(&config);
}

/// The kinds in a repository's journal, in order.
fn kinds_in_order(repo: &Repo) -> Vec<&'static str> {
    repo.store()
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| e.kind.name())
        .collect()
}

/// `accept` of an escalated item, killed right after it journaled `accepted`: the target holds
/// the work once, the item is shipped, a second `accept` moves nothing, and no run starts.
#[test]
fn sigkill_of_accept_right_after_accepted_leaves_the_item_shipped_once() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    let script = repo.agent_dir.join("review.sh");
    std::fs::write(
        &script,
        r#"printf '%s\n' '{"verdict": "escalate", "reason": "a person must decide", "findings": []}' > "$NIGHTSHIFT_VERDICT_FILE""#,
    )
    .unwrap();
    repo.configure(&format!(
        "{}\n[agent.review]\ncommand = [\"sh\", \"{}\"]\n\n[review]\nwhen = \"always\"\n",
        plan(&repo, &["a"], 2, 1),
        script.display()
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(16), "{}", text(&out));
    assert_eq!(repo.item_state("a"), "escalated");
    let runs_before = kinds_in_order(&repo)
        .iter()
        .filter(|k| **k == "run_started")
        .count();

    let killed = repo
        .cmd(&["accept", "a"])
        .env(failpoint::ENV, "accepted")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{}", text(&killed));
    assert_eq!(repo.item_state("a"), "shipped", "the accept is durable");
    let moved = repo.git(&["rev-parse", "main"]);
    let again = repo.run(&["accept", "a"]);
    assert_ne!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(repo.git(&["rev-parse", "main"]), moved, "not merged twice");
    assert_eq!(repo.shipped_items(), ["a"]);
    let kinds = kinds_in_order(&repo);
    assert_eq!(
        kinds.iter().filter(|k| **k == "accepted").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "run_started").count(),
        runs_before,
        "{kinds:?}"
    );
    repo.assert_clean_end();
}

/// `tell` killed right after it journaled `operator_message`: the message is durable and the
/// item's next session gets it once; the supervised run is untouched (one run).
#[test]
fn sigkill_of_tell_right_after_operator_message_delivers_the_message_once() {
    use std::process::Stdio;
    let repo = Repo::new(&project());
    let HeldFirstIteration {
        ready,
        release,
        prompts: seen,
    } = repo.configure_held_first_iteration();
    let mut run = repo
        .cmd(&["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&ready).unwrap(), "started\n");
    let killed = repo
        .cmd(&["tell", "a", "use the blue one"])
        .env(failpoint::ENV, "operator_message")
        .output()
        .unwrap();
    assert_eq!(killed.status.signal(), Some(9), "{}", text(&killed));
    std::fs::write(&release, "go\n").unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(10));

    let prompts = std::fs::read_to_string(&seen).unwrap();
    let parts: Vec<&str> = prompts.split("----\n").collect();
    assert_eq!(parts.len(), 3, "two sessions: {prompts}");
    assert!(parts[1].contains("use the blue one"), "{}", parts[1]);
    let kinds = kinds_in_order(&repo);
    assert_eq!(
        kinds.iter().filter(|k| **k == "operator_message").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "run_started").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"run_finished"), "{kinds:?}");
    assert_eq!(repo.shipped_items(), ["a"]);
    repo.assert_clean_end();
}
