//! Orchestration cost: a 50-item plan with an instant agent and a `true` check, run by the real
//! release binary in a real repository. Prints the median wall time per item over several runs,
//! the same with the agent's and check's own time taken out (what nightshift itself costs), and
//! the peak RSS of any single process of the run (the engine, or a git it ran).
//!
//! `cargo bench -p nightshift --bench orchestration` (NIGHTSHIFT_BENCH_RUNS=N to change runs).
//! This is a benchmark, not a test: it asserts nothing about time.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const ITEMS: usize = 50;
const BIN: &str = env!("CARGO_BIN_EXE_nightshift");

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

fn setup(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut config = String::from(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"echo $NIGHTSHIFT_ITEM > $NIGHTSHIFT_ITEM.txt\"]\n\n[check]\ncommand = \"true\"\n",
    );
    for i in 0..ITEMS {
        config.push_str(&format!(
            "\n[[item]]\nid = \"item-{i:02}\"\nprompt = \"Write item-{i:02}.txt.\"\n"
        ));
    }
    std::fs::write(dir.join("nightshift.toml"), config).unwrap();
    std::fs::write(dir.join("README.md"), "bench\n").unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "-m", "init"]);
}

/// Sum of the agent sessions' and checks' own durations, from the journal.
fn child_ms(dir: &Path) -> u64 {
    let out = Command::new(BIN)
        .args(["log", "--json"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["duration_ms"].as_u64())
        .sum()
}

/// CPU time (user + system) of all waited-for children so far, in ms.
fn children_cpu_ms() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| {
                tv.tv_sec() as f64 * 1000.0 + tv.tv_usec() as f64 / 1000.0
            };
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let tmp = tempfile::tempdir().unwrap();
    let mut per_item = Vec::new();
    let mut overhead = Vec::new();
    let mut cpu_per_item = Vec::new();
    for run in 0..runs {
        let dir = tmp.path().join(format!("run-{run}"));
        setup(&dir);
        let cpu_before = children_cpu_ms();
        let started = Instant::now();
        let status = Command::new(BIN)
            .arg("run")
            .current_dir(&dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        let wall = started.elapsed().as_secs_f64() * 1000.0;
        let cpu = children_cpu_ms() - cpu_before;
        cpu_per_item.push(cpu / ITEMS as f64);
        assert_eq!(
            status.code(),
            Some(10),
            "the bench plan must ship every item"
        );
        let children = child_ms(&dir) as f64;
        per_item.push(wall / ITEMS as f64);
        overhead.push((wall - children) / ITEMS as f64);
        println!(
            "run {run}: {wall:.0} ms for {ITEMS} items ({:.1} ms/item; agent+check {children:.0} ms)",
            wall / ITEMS as f64
        );
    }
    let rss = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| u.max_rss())
        .unwrap_or(0);
    println!("orchestration: {ITEMS}-item plan, instant agent, `true` check, {runs} runs");
    println!(
        "  wall per item, median:                    {:.1} ms",
        median(per_item)
    );
    println!(
        "  without agent and check time, median:     {:.1} ms",
        median(overhead)
    );
    println!(
        "  CPU (user+sys of the engine and all it ran) per item, median: {:.1} ms",
        median(cpu_per_item)
    );
    println!(
        "  peak RSS of any one process of the run:   {:.1} MiB",
        rss as f64 / 1024.0
    );
}
