//! Orchestration cost: an N-item plan with an instant agent and a `true` check, run by the real
//! release binary in a real repository, against a bare-git floor measured in the same run. Each
//! item's agent writes its id into the same file, `work.txt`, so the repository does not grow
//! with the plan (a file per item would make every checkout, and so the floor itself, grow
//! with the plan's length): what grows is nightshift's own.
//!
//! For each plan size it prints the median wall time per item over several runs, the same with
//! the agent's and check's own time taken out (what nightshift itself costs), the CPU per item,
//! and the *floor*: the git commands that do the same per-item work by hand, one item after
//! another in a copy of the same repository, the way nightshift does it today (a detached
//! clone per attempt, `git/clone.rs`): `git init --template=` of the clone, its alternates,
//! `update-ref` + `read-tree --reset -u HEAD`, writing `work.txt`, `add -A` + `commit`,
//! `fetch` of the clone's branch, `merge-tree --write-tree`, `commit-tree`, the target's
//! `merge --ff-only` in the (clean) checkout, removing the clone and the branch. Then the ratio
//! of nightshift's wall per item to the floor's, and (with more than one size) the per-item cost of the largest
//! plan against the smallest's. Each run's line ends with the 1-minute load average before and
//! after it: on a shared machine, compare ratios measured in the same run.
//!
//! `cargo bench -p nightshift --bench orchestration`; `NIGHTSHIFT_BENCH_ITEMS=50,1000` (plan
//! sizes, comma-separated; default 50), `NIGHTSHIFT_BENCH_RUNS=N` (runs per size; default 5),
//! `NIGHTSHIFT_BENCH_BIN=<path>` (another nightshift binary, e.g. a copy of an older build, to
//! compare before and after with one bench).
//! This is a benchmark, not a test: it asserts nothing about time.

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

/// The nightshift binary measured.
fn bin() -> String {
    std::env::var("NIGHTSHIFT_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_nightshift").into())
}

fn item_id(i: usize) -> String {
    format!("item-{i:04}")
}

fn setup(dir: &Path, items: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let mut config = String::from(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"echo $NIGHTSHIFT_ITEM > work.txt\"]\n\n[check]\ncommand = \"true\"\n",
    );
    for i in 0..items {
        let id = item_id(i);
        config.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Write {id} into work.txt.\"\n"
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
    let out = Command::new(bin())
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

/// The machine's 1-minute load average (`/proc/loadavg`), "?" where there is none: the figures
/// of a run on a shared machine are read with it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One nightshift run of the plan in `dir`: (wall per item, without agent and check, CPU per
/// item), ms.
fn run_nightshift(dir: &Path, items: usize) -> (f64, f64, f64) {
    let cpu_before = children_cpu_ms();
    let started = Instant::now();
    let status = Command::new(bin())
        .arg("run")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let cpu = children_cpu_ms() - cpu_before;
    assert_eq!(
        status.code(),
        Some(10),
        "the bench plan must ship every item"
    );
    let children = child_ms(dir) as f64;
    let n = items as f64;
    (wall / n, (wall - children) / n, cpu / n)
}

/// The bare-git floor: the same per-item work by hand, every item one after another in `dir`
/// (a copy of the plan's repository). Returns the wall and CPU per item of the whole loop, ms.
fn run_floor(dir: &Path, items: usize) -> (f64, f64) {
    let objects = dir.join(".git/objects");
    let clones = dir.with_extension("clones");
    std::fs::create_dir_all(&clones).unwrap();
    let mut old = git(dir, &["rev-parse", "refs/heads/main"]);
    let cpu_before = children_cpu_ms();
    let started = Instant::now();
    for i in 0..items {
        let id = item_id(i);
        let branch = format!("floor/{id}");
        let clone = clones.join(&id);
        let c = clone.to_str().unwrap();
        git(
            dir,
            &[
                "init",
                "--quiet",
                "--template=",
                &format!("--initial-branch={id}"),
                c,
            ],
        );
        let info = clone.join(".git/objects/info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(info.join("alternates"), format!("{}\n", objects.display())).unwrap();
        git(&clone, &["update-ref", &format!("refs/heads/{id}"), &old]);
        git(&clone, &["read-tree", "--reset", "-u", "HEAD"]);
        std::fs::write(clone.join("work.txt"), format!("{id}\n")).unwrap();
        git(&clone, &["add", "-A"]);
        git(&clone, &["commit", "--quiet", "-m", &id]);
        git(
            dir,
            &[
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                c,
                &format!("+refs/heads/{id}:refs/heads/{branch}"),
            ],
        );
        let tree = git(dir, &["merge-tree", "--write-tree", "main", &branch]);
        let new = git(dir, &["commit-tree", &tree, "-p", &old, "-m", &id]);
        // The target is checked out (clean), as in the nightshift run: fast-forwarded there.
        git(dir, &["merge", "--quiet", "--ff-only", &new]);
        std::fs::remove_dir_all(&clone).unwrap();
        git(dir, &["update-ref", "-d", &format!("refs/heads/{branch}")]);
        old = new;
    }
    let per_item = started.elapsed().as_secs_f64() * 1000.0 / items as f64;
    let cpu = (children_cpu_ms() - cpu_before) / items as f64;
    assert_eq!(
        git(dir, &["rev-list", "--count", "main"]),
        (items + 1).to_string()
    );
    (per_item, cpu)
}

/// Per plan size: (wall per item, floor per item, CPU per item), medians over the runs.
fn bench(tmp: &Path, items: usize, runs: usize) -> (f64, f64, f64) {
    let (mut wall, mut overhead, mut cpu, mut floor, mut ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut floor_cpu, mut cpu_ratios) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let ns_dir = tmp.join(format!("{items}-{run}-nightshift"));
        let floor_dir = tmp.join(format!("{items}-{run}-floor"));
        setup(&ns_dir, items);
        setup(&floor_dir, items);
        let load_before = load_average();
        // Alternate which goes first, so neither always gets the warmer cache.
        let ((w, o, c), (f, fc)) = if run % 2 == 0 {
            let ns = run_nightshift(&ns_dir, items);
            (ns, run_floor(&floor_dir, items))
        } else {
            let f = run_floor(&floor_dir, items);
            (run_nightshift(&ns_dir, items), f)
        };
        println!(
            "  {items} items, run {run}: nightshift {w:.1} ms/item ({o:.1} without agent and check, CPU {c:.1}); bare-git floor {f:.1} ms/item (CPU {fc:.1}); ratio {:.2} (CPU {:.2}); load average {load_before} → {}",
            w / f,
            c / fc,
            load_average()
        );
        floor_cpu.push(fc);
        cpu_ratios.push(c / fc);
        wall.push(w);
        overhead.push(o);
        cpu.push(c);
        floor.push(f);
        ratios.push(w / f);
        std::fs::remove_dir_all(&ns_dir).unwrap();
        std::fs::remove_dir_all(&floor_dir).unwrap();
        std::fs::remove_dir_all(floor_dir.with_extension("clones")).unwrap();
    }
    println!("orchestration: {items}-item plan, instant agent, `true` check, {runs} runs");
    println!(
        "  wall per item, median:                    {:.1} ms",
        median(&wall)
    );
    println!(
        "  without agent and check time, median:     {:.1} ms",
        median(&overhead)
    );
    println!(
        "  CPU (user+sys of the engine and all it ran) per item, median: {:.1} ms",
        median(&cpu)
    );
    println!(
        "  bare-git floor per item, median:          {:.1} ms",
        median(&floor)
    );
    println!(
        "  bare-git floor CPU per item, median:      {:.1} ms",
        median(&floor_cpu)
    );
    println!(
        "  ratio to the floor (median of runs):      {:.2}× wall, {:.2}× CPU",
        median(&ratios),
        median(&cpu_ratios)
    );
    (median(&wall), median(&floor), median(&cpu))
}

fn main() {
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let sizes: Vec<usize> = std::env::var("NIGHTSHIFT_BENCH_ITEMS")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![50]);
    let tmp = tempfile::tempdir().unwrap();
    let results: Vec<(usize, (f64, f64, f64))> = sizes
        .iter()
        .map(|&n| (n, bench(tmp.path(), n, runs)))
        .collect();
    if let (Some((small, (ws, fs, cs))), Some((large, (wl, fl, cl)))) = (
        results.iter().min_by_key(|r| r.0),
        results.iter().max_by_key(|r| r.0),
    ) && small != large
    {
        println!(
            "growth: per item at {large} items {wl:.1} ms vs {ws:.1} ms at {small}: {:.2}× wall, {:.2}× CPU (floor {:.2}×)",
            wl / ws,
            cl / cs,
            fl / fs
        );
    }
    let rss = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| u.max_rss())
        .unwrap_or(0);
    println!(
        "peak RSS of any one process of the runs:    {:.1} MiB",
        rss as f64 / 1024.0
    );
}
