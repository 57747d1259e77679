//! Parallel items (issue 14): eight items whose agent sleeps `NIGHTSHIFT_BENCH_SLEEP` seconds
//! (default 3) each, with disjoint declared paths, run at `max_parallel = 4`, against the bound
//! the issue sets: `1.25 × (8 × sleep / 4)` plus the sequential orchestration cost, which is the
//! same eight items with an instant agent at `max_parallel = 1`, measured in the same run.
//!
//! With `NIGHTSHIFT_BENCH_CHECK=C` (seconds, default 0) each item's check also takes `C`
//! seconds (its work check and its merged check; the base's check fails at once): merged
//! checks are serialized by the merge queue, so `8 × C` is a floor on top of the agents'.
//!
//! `cargo bench -p nightshift --bench parallel`; `NIGHTSHIFT_BENCH_RUNS=N` (default 3);
//! `NIGHTSHIFT_BENCH_BIN=<path>` runs another nightshift binary (before and after).
//! This is a benchmark, not a test: it prints figures and asserts nothing about time.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

mod common;
use common::git;

const ITEMS: usize = 8;
const PARALLEL: usize = 4;

fn setup(dir: &Path, sleep: &str, check: f64, max_parallel: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let check = if check > 0.0 {
        format!("test -f $NIGHTSHIFT_ITEM/done && sleep {check}")
    } else {
        "true".to_owned()
    };
    let mut config = format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"sleep {sleep}; mkdir -p $NIGHTSHIFT_ITEM; echo ok > $NIGHTSHIFT_ITEM/done\"]\n\n[check]\ncommand = \"{check}\"\n\n[run]\nmax_parallel = {max_parallel}\n"
    );
    for i in 0..ITEMS {
        config.push_str(&format!(
            "\n[[item]]\nid = \"item-{i}\"\nprompt = \"Write item-{i}/done.\"\npaths = [\"item-{i}/**\"]\n"
        ));
    }
    std::fs::write(dir.join("nightshift.toml"), config).unwrap();
    std::fs::write(dir.join("README.md"), "bench\n").unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "-m", "init"]);
}

fn run(dir: &Path) -> f64 {
    let started = Instant::now();
    let bin = std::env::var("NIGHTSHIFT_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_nightshift").into());
    let status = Command::new(bin)
        .arg("run")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(10),
        "the bench plan must ship every item"
    );
    started.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let sleep: f64 = std::env::var("NIGHTSHIFT_BENCH_SLEEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let check: f64 = std::env::var("NIGHTSHIFT_BENCH_CHECK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let (mut par, mut seq) = (Vec::new(), Vec::new());
    for r in 0..runs {
        let p = tmp.path().join(format!("par-{r}"));
        setup(&p, &sleep.to_string(), check, PARALLEL);
        par.push(run(&p));
        let s = tmp.path().join(format!("seq-{r}"));
        setup(&s, "0", 0.0, 1);
        seq.push(run(&s));
    }
    let (par, seq) = (median(&mut par), median(&mut seq));
    if check > 0.0 {
        println!(
            "parallel: {ITEMS} items, agent sleeps {sleep} s, checks take {check} s, max_parallel = {PARALLEL}: {par:.2} s (median of {runs})"
        );
        println!(
            "  floors: merged checks one at a time ≥ {:.1} s; every check one at a time (checks on the loop's thread) ≥ {:.1} s; all sequential ≥ {:.1} s",
            ITEMS as f64 * check,
            2.0 * ITEMS as f64 * check,
            ITEMS as f64 * (sleep + 2.0 * check)
        );
        println!(
            "  sequential orchestration (instant agent, instant check, max_parallel = 1): {seq:.2} s"
        );
        return;
    }
    let ideal = ITEMS as f64 * sleep / PARALLEL as f64;
    let bound = 1.25 * ideal + seq;
    println!(
        "parallel: {ITEMS} items, agent sleeps {sleep} s, max_parallel = {PARALLEL}: {par:.2} s (median of {runs})"
    );
    println!("  sequential orchestration (instant agent, max_parallel = 1): {seq:.2} s");
    println!(
        "  bound 1.25 × {ideal:.1} s + {seq:.2} s = {bound:.2} s: {} ({:.0}% of it)",
        if par <= bound { "within" } else { "OVER" },
        100.0 * par / bound
    );
    println!(
        "  all sequential would be ≥ {:.1} s: {:.2}× faster",
        ITEMS as f64 * sleep,
        ITEMS as f64 * sleep / par
    );
}
