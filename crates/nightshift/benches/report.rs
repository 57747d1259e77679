//! The morning report on a 1,000-item night: a store journaling 1,000 items (800 shipped, 200
//! parked after two iterations), each with its signed receipt, reported by the real release
//! binary as text, as `--json` and as an HTML page. Prints the median wall time of each over
//! NIGHTSHIFT_BENCH_RUNS runs (default 9), process start included. Target: under 200 ms.
//!
//! `cargo bench -p nightshift --bench report`. A benchmark, not a test: it asserts nothing
//! about time.

#![expect(clippy::unwrap_used, reason = "a benchmark fails loudly")]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use nightshift_core::receipt::{self, Receipt, key};
use nightshift_core::store::{CheckStage, EventKind, Outcome, PlannedItem, Spend, Store};

const ITEMS: usize = 1000;
const BIN: &str = env!("CARGO_BIN_EXE_nightshift");
const RUN: &str = "20261201T220000Z-bench";

fn at(second: usize) -> String {
    jiff::Timestamp::from_second(1_796_162_400 + second as i64)
        .unwrap()
        .to_string()
}

fn hex40(n: usize) -> String {
    format!("{n:040x}")
}

fn receipt_json(item: &str, shipped: bool) -> Receipt {
    let commit = hex40(7);
    serde_json::from_value(serde_json::json!({
        "version": receipt::RECEIPT_VERSION,
        "run_id": RUN, "item": item, "attempt": 1, "written_at": at(0),
        "target": "main", "base": hex40(1),
        "verdict": if shipped { "unverified" } else { "parked" }, "success": false,
        "missing": if shipped { vec!["model: [agent] model is not set"] } else { vec![] },
        "halt_reason": null, "reason": null,
        "item_state": if shipped { "shipped" } else { "parked" },
        "shipped_commit": if shipped { Some(commit.clone()) } else { None },
        "agent": {"kind": "command", "binary": "sh", "version": null, "model": null, "args": [], "argv": ["sh"]},
        "prompt": [], "context": [], "seeds": [],
        "iterations": [{"iteration": 1, "sessions": [{"outcome": "completed", "exit_code": 0, "duration_ms": 1000,
            "tokens": {"input": 1000, "output": 100, "cache_read": 0, "cache_write": 0, "weighted": 1100.0, "turns": 3},
            "cost_usd": 0.01}],
          "checks": [{"stage": "work", "command": "true", "timeout_ms": 60000, "env": {}, "commit": commit,
            "tree": hex40(9), "outcome": "completed", "exit_code": 0, "green": shipped,
            "failing": if shipped { Some(Vec::<String>::new()) } else { Some(vec!["t1".to_owned()]) },
            "format": "tap", "fingerprint": "f", "log": null, "duration_ms": 10}]}],
        "spend": {"sessions": 1, "sessions_without_spend": 0, "input": 1000, "output": 100,
            "weighted_tokens": 1100.0, "turns": 3, "cost_usd": 0.01},
        "guards": [], "guards_complete": false, "determinism": [], "determinism_bound": null
    }))
    .unwrap()
}

fn build(root: &Path) {
    let dir = root.join(".nightshift");
    std::fs::create_dir_all(dir.join("receipts").join(RUN)).unwrap();
    let signing = key::load_or_create(&root.join("key")).unwrap();
    key::write_public(&dir, &signing.verifying_key()).unwrap();
    let mut store = Store::open(&dir.join("state.db")).unwrap();
    let ids: Vec<String> = (0..ITEMS).map(|i| format!("item-{i:04}")).collect();
    store
        .record(
            RUN,
            &at(0),
            EventKind::RunStarted {
                target: "main".into(),
                base: hex40(1),
                max_iterations: 2,
                max_attempts: 1,
                items: ids
                    .iter()
                    .map(|id| PlannedItem {
                        id: id.clone(),
                        prompt: "do it".into(),
                        check: Some("true".into()),
                        shipped_by: None,
                    })
                    .collect(),
            },
        )
        .unwrap();
    let spend = Spend {
        input: 1000,
        output: 100,
        weighted: 1100.0,
        turns: 3,
        cost_usd: Some(0.01),
        ..Spend::default()
    };
    for (i, id) in ids.iter().enumerate() {
        let t = i * 30;
        let shipped = i % 5 != 0;
        let mut events = vec![EventKind::AttemptStarted {
            item: id.clone(),
            attempt: 1,
            base: hex40(1),
            branch: format!("nightshift/{id}/1"),
            worktree: format!("/tmp/wt/{id}"),
        }];
        let iterations = if shipped { 1 } else { 2 };
        for iteration in 1..=iterations {
            events.push(EventKind::SessionStarted {
                item: id.clone(),
                attempt: 1,
                iteration,
                log: format!("logs/{id}.log"),
                agent_session: None,
                resumed: false,
                agent: None,
                told_through: None,
            });
            events.push(EventKind::SessionEnded {
                item: id.clone(),
                attempt: 1,
                iteration,
                outcome: Outcome::Completed,
                exit_code: Some(0),
                duration_ms: 10_000,
                spend: Some(spend),
                resets_at: None,
                fault: None,
                agent_session: None,
            });
            events.push(EventKind::CheckEnded {
                item: id.clone(),
                attempt: 1,
                iteration,
                stage: CheckStage::Work,
                green: shipped,
                outcome: Outcome::Completed,
                exit_code: Some(if shipped { 0 } else { 1 }),
                output_sha256: hex40(3),
                log: format!("logs/{id}.check.log"),
                duration_ms: 100,
                results: None,
                guards: Vec::new(),
                untrusted: None,
            });
        }
        if shipped {
            events.push(EventKind::MergePrepared {
                item: id.clone(),
                attempt: 1,
                commit: hex40(7),
                onto: hex40(1),
            });
            events.push(EventKind::Integrated {
                item: id.clone(),
                attempt: 1,
                commit: hex40(7),
                push: false,
                awaiting_push: false,
            });
        } else {
            events.push(EventKind::AttemptFailed {
                item: id.clone(),
                attempt: 1,
                reason: "check still red after 2 iterations".into(),
                preserve_ref: Some(format!("refs/nightshift/preserve/{id}/1")),
                park: true,
                keep_branch: false,
                halt: None,
                verdict: None,
                actions: Vec::new(),
            });
        }
        for (k, e) in events.into_iter().enumerate() {
            store.record(RUN, &at(t + k), e).unwrap();
        }
        let text = receipt::sign(&receipt_json(id, shipped), &signing).unwrap();
        std::fs::write(
            dir.join("receipts").join(RUN).join(format!("{id}-a1.json")),
            text,
        )
        .unwrap();
    }
}

/// User + system CPU time of every finished child so far, in milliseconds: on a shared, loaded
/// machine the wall time measures the queue for the cores as much as the report.
fn children_cpu_ms() -> f64 {
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1000.0 + t.tv_usec() as f64 / 1000.0;
    ms(usage.user_time()) + ms(usage.system_time())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let git = Command::new("git")
        .args(["init", "--quiet", "--initial-branch=main"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(git.success());
    let setup = Instant::now();
    build(&root);
    eprintln!(
        "built a {ITEMS}-item night in {:.1} s",
        setup.elapsed().as_secs_f64()
    );
    let html = tmp.path().join("report.html");
    for (name, args) in [
        ("text", vec!["report"]),
        ("json", vec!["report", "--json"]),
        ("html", vec!["report", "--html", html.to_str().unwrap()]),
    ] {
        let mut times = Vec::new();
        let mut cpus = Vec::new();
        let mut bytes = 0;
        for _ in 0..runs {
            let before = children_cpu_ms();
            let start = Instant::now();
            let out = Command::new(BIN)
                .args(&args)
                .current_dir(&root)
                .output()
                .unwrap();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            cpus.push(children_cpu_ms() - before);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            bytes = out.stdout.len();
        }
        let low = times.iter().copied().fold(f64::INFINITY, f64::min);
        let high = times.iter().copied().fold(0.0, f64::max);
        println!(
            "report {name:>4} on {ITEMS} items: median {:.1} ms wall (range {low:.1}–{high:.1}), {:.1} ms CPU (user+sys) over {runs} runs; {bytes} bytes on stdout",
            median(times),
            median(cpus)
        );
    }
    println!(
        "html page: {} bytes",
        std::fs::metadata(&html).map(|m| m.len()).unwrap_or(0)
    );
}
