//! Integration cost on a large repository: a 20-item plan with an instant agent and a `true`
//! check, run by the real release binary in a repository of 10,000 files, against the bare git
//! commands that do the same work by hand on a copy of the same repository, in the same run.
//!
//! nightshift's *integration cost* of an item is the wall time from its `attempt_started` to its
//! `worktree_removed` event minus the `duration_ms` of its agent session and its checks: all that
//! nightshift itself did for the item (worktree add, commit, merge, target advance, preserve,
//! teardown, the journal's transactions, the process sweeps). The *bare-git cost* of an item is
//! the wall time of: `git worktree add -b b<i> <path> main`, writing the item's file,
//! `git add -A`, `git commit`, `git merge-tree --write-tree main b<i>`,
//! `git commit-tree <tree> -p <old> -m …`, the target advance, `git worktree remove --force`.
//!
//! Two target-advance modes, each measured both ways:
//! - `update-ref`: the target is not checked out (the checkout is on another branch,
//!   `[integrate] target = "main"`); nightshift and the bare side both move it with
//!   `git update-ref refs/heads/main <new> <old>`.
//! - `ff-only`: the target is checked out, clean; nightshift and the bare side both move it with
//!   `git merge --ff-only` in that checkout (10,000 files to refresh).
//!
//! `cargo bench -p nightshift --bench integration` (NIGHTSHIFT_BENCH_RUNS=N to change runs).
//! This is a benchmark, not a test: it asserts nothing about time.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails loudly"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

mod common;
use common::git;

const ITEMS: usize = 20;
const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const BIN: &str = env!("CARGO_BIN_EXE_nightshift");

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    UpdateRef,
    FfOnly,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::UpdateRef => "update-ref",
            Mode::FfOnly => "ff-only",
        }
    }
}

/// packed as a clone would be.
fn template(dir: &Path) {
    for d in 0..DIRS {
        let sub = dir.join(format!("src/mod{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..FILES_PER_DIR {
            let line = format!("// module {d:03}, file {f:03}: some text to give it body\n");
            std::fs::write(sub.join(format!("f{f:03}.rs")), line.repeat(5)).unwrap();
        }
    }
    let mut config = String::from(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"echo $NIGHTSHIFT_ITEM > $NIGHTSHIFT_ITEM.txt\"]\n\n[check]\ncommand = \"true\"\n\n[integrate]\ntarget = \"main\"\n",
    );
    for i in 0..ITEMS {
        config.push_str(&format!(
            "\n[[item]]\nid = \"item-{i:02}\"\nprompt = \"Write item-{i:02}.txt.\"\n"
        ));
    }
    std::fs::write(dir.join("nightshift.toml"), config).unwrap();
    std::fs::write(dir.join(".gitignore"), ".nightshift/\n.bare/\n").unwrap();
    git(dir, &["init", "--quiet", "--initial-branch=main"]);
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "-m", "init"]);
    git(dir, &["repack", "-a", "-d", "-q"]);
    git(dir, &["prune-packed"]);
}

/// A fresh copy of the template, its checkout on `main` (ff-only) or on `home` (update-ref).
fn copy(template: &Path, dir: &Path, mode: Mode) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(template)
        .arg(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "cp -a");
    if mode == Mode::UpdateRef {
        git(dir, &["checkout", "--quiet", "-b", "home"]);
    }
}

fn event_list(dir: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(BIN)
        .args(["log", "--json"])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

fn at_ms(event: &serde_json::Value) -> f64 {
    let ts: jiff::Timestamp = event["at"].as_str().unwrap().parse().unwrap();
    ts.as_nanosecond() as f64 / 1e6
}

/// What one nightshift run measured.
struct Measured {
    /// Per item: span minus the agent's and the check's own time, ms.
    per_item: Vec<f64>,
    /// The same without `attempt_started → worktree_ready` (making the worktree), ms.
    per_item_rest: Vec<f64>,
    /// (wall of the whole run minus all agent and check time) / items, ms.
    whole_run: f64,
    /// Gaps between consecutive events of an attempt, by transition, ms.
    gaps: BTreeMap<String, Vec<f64>>,
    /// Agent sessions' and checks' own time per item, ms.
    child_per_item: f64,
}

fn run_nightshift(dir: &Path) -> Measured {
    let started = Instant::now();
    let status = Command::new(BIN)
        .arg("run")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(
        status.code(),
        Some(10),
        "the bench plan must ship every item"
    );
    let events = event_list(dir);
    let mut by_attempt: BTreeMap<(String, u64), Vec<&serde_json::Value>> = BTreeMap::new();
    for e in &events {
        if let (Some(item), Some(attempt)) = (e["item"].as_str(), e["attempt"].as_u64()) {
            by_attempt
                .entry((item.to_owned(), attempt))
                .or_default()
                .push(e);
        }
    }
    assert_eq!(by_attempt.len(), ITEMS, "one attempt per item");
    let mut per_item = Vec::new();
    let mut per_item_rest = Vec::new();
    let mut gaps: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut children = 0.0;
    for evs in by_attempt.values() {
        let first = evs.first().unwrap();
        let last = evs.last().unwrap();
        assert_eq!(first["kind"], "attempt_started");
        assert_eq!(last["kind"], "worktree_removed");
        let child: f64 = evs
            .iter()
            .filter_map(|e| e["duration_ms"].as_u64())
            .map(|d| d as f64)
            .sum();
        children += child;
        let cost = at_ms(last) - at_ms(first) - child;
        assert_eq!(evs[1]["kind"], "worktree_ready");
        per_item.push(cost);
        per_item_rest.push(cost - (at_ms(evs[1]) - at_ms(first)));
        for pair in evs.windows(2) {
            let name = format!(
                "{} → {}",
                pair[0]["kind"].as_str().unwrap(),
                pair[1]["kind"].as_str().unwrap()
            );
            let mut gap = at_ms(pair[1]) - at_ms(pair[0]);
            if let Some(d) = pair[1]["duration_ms"].as_u64() {
                gap -= d as f64;
            }
            gaps.entry(name).or_default().push(gap);
        }
    }
    let all_children: f64 = events
        .iter()
        .filter_map(|e| e["duration_ms"].as_u64())
        .map(|d| d as f64)
        .sum();
    Measured {
        per_item,
        per_item_rest,
        whole_run: (wall - all_children) / ITEMS as f64,
        gaps,
        child_per_item: children / ITEMS as f64,
    }
}

/// What the bare git commands measured.
struct Bare {
    /// Per item, ms.
    per_item: Vec<f64>,
    /// Per item without `git worktree add`, ms.
    per_item_rest: Vec<f64>,
    /// Per step, ms.
    steps: BTreeMap<&'static str, Vec<f64>>,
}

/// The bare git commands for every item, one after another.
fn run_bare(dir: &Path, mode: Mode) -> Bare {
    let worktrees = dir.join(".bare/worktrees");
    std::fs::create_dir_all(&worktrees).unwrap();
    let mut old = git(dir, &["rev-parse", "refs/heads/main"]);
    let mut per_item = Vec::new();
    let mut per_item_rest = Vec::new();
    let mut steps: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for i in 0..ITEMS {
        let branch = format!("b{i:02}");
        let path = worktrees.join(format!("item-{i:02}"));
        let p = path.to_str().unwrap();
        let item_started = Instant::now();
        let mut step = |name: &'static str, f: &mut dyn FnMut() -> String| {
            let t = Instant::now();
            let out = f();
            steps
                .entry(name)
                .or_default()
                .push(t.elapsed().as_secs_f64() * 1000.0);
            out
        };
        step("worktree add", &mut || {
            git(
                dir,
                &["worktree", "add", "--quiet", "-b", &branch, p, "main"],
            )
        });
        step("write file", &mut || {
            std::fs::write(
                path.join(format!("item-{i:02}.txt")),
                format!("item-{i:02}\n"),
            )
            .unwrap();
            String::new()
        });
        step("add -A", &mut || git(&path, &["add", "-A"]));
        step("commit", &mut || {
            git(&path, &["commit", "--quiet", "-m", "item"])
        });
        let tree = step("merge-tree", &mut || {
            git(dir, &["merge-tree", "--write-tree", "main", &branch])
        });
        let new = step("commit-tree", &mut || {
            git(dir, &["commit-tree", &tree, "-p", &old, "-m", "item"])
        });
        match mode {
            Mode::UpdateRef => step("update-ref", &mut || {
                git(dir, &["update-ref", "refs/heads/main", &new, &old])
            }),
            Mode::FfOnly => step("merge --ff-only", &mut || {
                git(dir, &["merge", "--quiet", "--ff-only", &new])
            }),
        };
        step("worktree remove", &mut || {
            git(dir, &["worktree", "remove", "--force", p])
        });
        let total = item_started.elapsed().as_secs_f64() * 1000.0;
        per_item.push(total);
        per_item_rest.push(total - steps["worktree add"].last().unwrap());
        old = new;
    }
    assert_eq!(
        git(dir, &["rev-list", "--count", "main"]),
        (ITEMS + 1).to_string()
    );
    Bare {
        per_item,
        per_item_rest,
        steps,
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn main() {
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();
    let template_dir = tmp.path().join("template");
    template(&template_dir);
    let files = git(&template_dir, &["ls-files"]).lines().count();
    println!(
        "integration: {ITEMS}-item plan, instant agent, `true` check, {files} files in the repository, {runs} runs per mode"
    );
    for mode in [Mode::UpdateRef, Mode::FfOnly] {
        let mut median_ratios = Vec::new();
        let mut mean_ratios = Vec::new();
        let (mut ns_all, mut bare_all, mut whole_all) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ns_rest, mut bare_rest) = (Vec::new(), Vec::new());
        let (mut rest_median_ratios, mut rest_mean_ratios) = (Vec::new(), Vec::new());
        let mut gaps: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut steps: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
        for run in 0..runs {
            let ns_dir = tmp.path().join(format!("{}-{run}-nightshift", mode.name()));
            let bare_dir = tmp.path().join(format!("{}-{run}-bare", mode.name()));
            copy(&template_dir, &ns_dir, mode);
            copy(&template_dir, &bare_dir, mode);
            // Alternate which goes first, so neither always gets the warmer cache.
            let (ns, bare) = if run % 2 == 0 {
                let ns = run_nightshift(&ns_dir);
                (ns, run_bare(&bare_dir, mode))
            } else {
                let bare = run_bare(&bare_dir, mode);
                (run_nightshift(&ns_dir), bare)
            };
            let (ns_med, bare_med) = (median(&ns.per_item), median(&bare.per_item));
            let (ns_mean, bare_mean) = (mean(&ns.per_item), mean(&bare.per_item));
            println!(
                "  {} run {run}: nightshift {ns_med:.1} ms/item median, {ns_mean:.1} mean (agent+check {:.1} excluded; whole run {:.1}/item); bare git {bare_med:.1} median, {bare_mean:.1} mean; ratio {:.2} / {:.2}; without the checkout {:.1} vs {:.1} median, ratio {:.2}",
                mode.name(),
                ns.child_per_item,
                ns.whole_run,
                ns_med / bare_med,
                ns_mean / bare_mean,
                median(&ns.per_item_rest),
                median(&bare.per_item_rest),
                median(&ns.per_item_rest) / median(&bare.per_item_rest),
            );
            median_ratios.push(ns_med / bare_med);
            mean_ratios.push(ns_mean / bare_mean);
            rest_median_ratios.push(median(&ns.per_item_rest) / median(&bare.per_item_rest));
            rest_mean_ratios.push(mean(&ns.per_item_rest) / mean(&bare.per_item_rest));
            ns_all.extend(ns.per_item);
            bare_all.extend(bare.per_item);
            ns_rest.extend(ns.per_item_rest);
            bare_rest.extend(bare.per_item_rest);
            whole_all.push(ns.whole_run);
            for (k, v) in ns.gaps {
                gaps.entry(k).or_default().extend(v);
            }
            for (k, v) in bare.steps {
                steps.entry(k).or_default().extend(v);
            }
            std::fs::remove_dir_all(&ns_dir).unwrap();
            std::fs::remove_dir_all(&bare_dir).unwrap();
        }
        println!(
            "{}: target {}",
            mode.name(),
            match mode {
                Mode::UpdateRef => "not checked out, moved by `git update-ref <new> <old>`",
                Mode::FfOnly => "checked out (clean), moved by `git merge --ff-only`",
            }
        );
        println!("  items, files:                              {ITEMS}, {files}");
        println!(
            "  integration cost per item, nightshift:     {:.1} ms median, {:.1} ms mean",
            median(&ns_all),
            mean(&ns_all)
        );
        println!(
            "  the same by bare git commands:             {:.1} ms median, {:.1} ms mean",
            median(&bare_all),
            mean(&bare_all)
        );
        println!(
            "  ratio (median of {runs} runs):               {:.2}× of medians, {:.2}× of means",
            median(&median_ratios),
            median(&mean_ratios)
        );
        println!(
            "  without making the worktree, nightshift:   {:.1} ms median, {:.1} ms mean",
            median(&ns_rest),
            mean(&ns_rest)
        );
        println!(
            "  without `worktree add`, bare git:          {:.1} ms median, {:.1} ms mean",
            median(&bare_rest),
            mean(&bare_rest)
        );
        println!(
            "  ratio without the checkout (median of runs): {:.2}× of medians, {:.2}× of means",
            median(&rest_median_ratios),
            median(&rest_mean_ratios)
        );
        println!(
            "  whole run minus agent and check, per item: {:.1} ms median",
            median(&whole_all)
        );
        println!(
            "  nightshift, mean gap between an attempt's consecutive events (agent/check time taken out):"
        );
        let mut gaps: Vec<_> = gaps.into_iter().collect();
        gaps.sort_by(|a, b| mean(&b.1).total_cmp(&mean(&a.1)));
        for (k, v) in gaps {
            println!("    {:>7.1} ms  {k} (×{})", mean(&v), v.len());
        }
        println!("  bare git, mean per step:");
        for (k, v) in steps {
            println!("    {:>7.1} ms  {k}", mean(&v));
        }
    }
}
