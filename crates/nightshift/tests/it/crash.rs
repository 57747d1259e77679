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

fn assert_recovered(repo: &Repo, context: &str) {
    let out = repo.run(&["run"]);
    assert_eq!(
        out.status.code(),
        Some(11),
        "{context}: resume\n{}",
        text(&out)
    );
    assert_eq!(
        repo.shipped_items(),
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
    let mut killed = 0;
    for point in POINTS {
        for nth in [1, 2, 4] {
            let context = format!("{point}@{nth}");
            let repo = crash_repo();
            let out = repo
                .cmd(&["engine"])
                .env(failpoint::ENV, &context)
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
