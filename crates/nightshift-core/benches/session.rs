//! Fault-to-process-gone latency of the session runner, for the four ways a session is ended:
//! a crash, a budget crossed mid-stream, a timeout, and silence past the stall grace. Each is a
//! real process (sh) under the real runner; times are medians over several runs.
//!
//! `cargo bench -p nightshift-core --bench session`. A benchmark: it prints, it asserts nothing
//! about time.

#![expect(clippy::unwrap_used, reason = "a benchmark fails loudly")]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nightshift_core::agent::parser_for;
use nightshift_core::clock::SystemClock;
use nightshift_core::session::{
    Budget, Limit, Metric, Outcome, ProcessSpec, Scope, SessionPacket, run_session,
};

const RUNS: usize = 15;

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn packet(dir: &std::path::Path, script: &str, timeout: Duration) -> SessionPacket {
    SessionPacket {
        spec: ProcessSpec {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            cwd: dir.to_owned(),
            env: Vec::new(),
            timeout,
            kill_grace: Duration::from_secs(2),
            log: dir.join("session.log"),
            tail_bytes: 1024,
            env_allow: None,
            stdin: None,
            log_limit: None,
        },
        parser: None,
        stall_grace: None,
        budget: Budget::default(),
        enforce_budget: true,
        log_stall: false,
        clock: Arc::new(SystemClock),
        usage_log_dir: None,
        live_input: None,
    }
}

fn median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[(v.len() * 9) / 10])
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let stamp = dir.join("crashed_at");

    // Crash: the process aborts; from its last breath (it writes the time) to supervision done.
    let mut crash = Vec::new();
    for _ in 0..RUNS {
        let script = format!("date +%s.%N > {}; kill -ABRT $$", stamp.display());
        let end = run_session(packet(dir, &script, Duration::from_secs(60)), &mut |_| {}).unwrap();
        let done = now_secs();
        assert_eq!(end.outcome, Outcome::Crashed);
        let at: f64 = std::fs::read_to_string(&stamp)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        crash.push((done - at) * 1000.0);
    }

    // Over budget: a stream whose usage keeps rising; from the decision (the first parsed event
    // past the limit) to the process gone.
    let mut budget = Vec::new();
    for _ in 0..RUNS {
        let line = r#"{"type":"assistant","message":{"id":"msg_$i","role":"assistant","content":[],"usage":{"input_tokens":300,"output_tokens":1}},"session_id":"s"}"#;
        let script = format!(
            "i=0; while :; do i=$((i+1)); echo '{line}' | sed \"s/\\$i/$i/\"; sleep 0.01; done"
        );
        let mut p = packet(dir, &script, Duration::from_secs(60));
        p.parser = parser_for("claude");
        p.budget = Budget {
            limits: vec![Limit {
                scope: Scope::Session,
                metric: Metric::Tokens,
                hard: 1000.0,
                baseline: 0.0,
            }],
            soft: 0.8,
            cache_read_weight: 0.1,
            ledger: None,
        };
        let end = run_session(p, &mut |_| {}).unwrap();
        assert_eq!(end.outcome, Outcome::OverBudget);
        budget.push(end.ended_after.unwrap().as_secs_f64() * 1000.0);
    }

    // Timeout: from the deadline to the process gone.
    let mut timeout = Vec::new();
    let limit = Duration::from_millis(300);
    for _ in 0..RUNS {
        let end = run_session(packet(dir, "sleep 600", limit), &mut |_| {}).unwrap();
        assert_eq!(end.outcome, Outcome::Timeout);
        timeout.push((end.duration.as_secs_f64() - limit.as_secs_f64()) * 1000.0);
    }

    // Stall: silent from the start; from the end of the grace to the process gone.
    let mut stall = Vec::new();
    let grace = Duration::from_millis(300);
    for _ in 0..RUNS {
        let mut p = packet(dir, "sleep 600", Duration::from_secs(60));
        p.stall_grace = Some(grace);
        let end = run_session(p, &mut |_| {}).unwrap();
        assert_eq!(end.outcome, Outcome::Stalled);
        stall.push((end.duration.as_secs_f64() - grace.as_secs_f64()) * 1000.0);
    }

    println!("fault-to-process-gone latency, {RUNS} runs each (median / p90):");
    for (name, v) in [
        ("crash", crash),
        ("over budget", budget),
        ("timeout", timeout),
        ("stall beyond grace", stall),
    ] {
        let (m, p90) = median(v);
        println!("  {name:<20} {m:7.1} ms / {p90:7.1} ms");
    }
}
