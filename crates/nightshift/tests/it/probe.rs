//! `nightshift probe`: a flaky check is caught and its dimension named (exit 14); a
//! deterministic one gets the exact bound its clean runs achieve; bad values are exit 20.

use nightshift_core::check::probe::Rng;
use nightshift_core::check::stats;

use crate::harness::*;

/// `probe` in `repo` with the clock dimension switched off, so the rotation is the same on
/// every machine (baseline, seed, timezone, cpu_load).
fn probe(repo: &Repo, args: &[&str]) -> std::process::Output {
    let mut all = vec!["probe"];
    all.extend_from_slice(args);
    repo.cmd(&all)
        .env("NIGHTSHIFT_FAKETIME_LIB", "")
        .output()
        .expect("run probe")
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Nothing of the probe is left: no worktree, no scratch directory, the checkout untouched.
fn assert_left_nothing(repo: &Repo) {
    assert!(
        repo.extra_worktrees().is_empty(),
        "{:?}",
        repo.extra_worktrees()
    );
    let scratch = repo.root.join(".nightshift/scratch");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_seeded_one_in_twenty_flake_is_caught_and_the_seed_named() {
    // The check fails for one seed in twenty. Pick the probe's own seed so that the first
    // failing seed comes on the 4th to 8th seed run (deterministic, whatever the machine).
    let probe_seed = (0_u64..)
        .find(|s| {
            let mut rng = Rng::new(*s);
            let first = (0..8)
                .map(|_| rng.next_u64() % 1_000_000_007)
                .position(|v| v % 20 == 0);
            first.is_some_and(|j| j >= 3)
        })
        .unwrap();
    let repo = Repo::new(&[(
        "check.sh",
        "#!/bin/sh\n[ -z \"$NIGHTSHIFT_SEED\" ] || [ $((NIGHTSHIFT_SEED % 20)) -ne 0 ] || { echo \"seed $NIGHTSHIFT_SEED breaks it\"; exit 1; }\n",
    )]);
    let seed = probe_seed.to_string();
    let out = probe(
        &repo,
        &["--check", "sh check.sh", "--seed", &seed, "--json"],
    );
    assert_eq!(out.status.code(), Some(14), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["halt_reason"], "check_flaky", "{json}");
    assert_eq!(json["exit_code"], 14);
    assert_eq!(json["broken"], serde_json::json!(["seed"]), "{json}");
    assert_eq!(json["intrinsic"], false);
    assert!(json["disagreements"].as_u64().unwrap() >= 1);
    let run = &json["disagreeing_runs"][0];
    assert_eq!(run["dimension"], "seed");
    let setting = run["setting"].as_str().unwrap();
    let value: u64 = setting
        .strip_prefix("NIGHTSHIFT_SEED=")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(value % 20, 0, "{setting}");
    // Stopped early, well before the 299 runs a clean bound would take.
    assert!(json["runs"].as_u64().unwrap() < 100, "{json}");
    assert_left_nothing(&repo);
    // The logs of the disagreeing runs are kept for a person to read.
    let kept = json["kept_logs"].as_str().unwrap();
    assert!(std::path::Path::new(kept).is_dir(), "{kept}");
}

#[test]
fn a_time_zone_flake_is_named_timezone_in_the_human_report() {
    let repo = Repo::new(&[(
        "check.sh",
        "#!/bin/sh\n[ \"$TZ\" != Asia/Kathmandu ] || { echo 'off by 45 minutes'; exit 1; }\n",
    )]);
    let out = probe(&repo, &["--check", "sh check.sh"]);
    assert_eq!(out.status.code(), Some(14), "{}", text(&out));
    let text_out = stdout(&out);
    assert!(
        text_out.contains("check_flaky") && text_out.contains("broken by: timezone"),
        "{}",
        text(&out)
    );
    assert!(text_out.contains("TZ=Asia/Kathmandu"), "{}", text(&out));
    assert!(!text_out.contains("intrinsic"), "{}", text(&out));
    assert_left_nothing(&repo);
}

#[test]
fn a_flake_in_unperturbed_runs_too_is_called_intrinsic() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let counter = repo.agent_dir.join("count");
    let check = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $((n % 3)) -ne 2 ]",
        c = counter.display()
    );
    let out = probe(&repo, &["--check", &check, "--json"]);
    assert_eq!(out.status.code(), Some(14), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["intrinsic"], true, "{json}");
    assert!(
        json["broken"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("baseline")),
        "{json}"
    );
}

#[test]
fn a_deterministic_check_reports_the_exact_bound_it_achieved() {
    let repo = Repo::new(&[("check.sh", "#!/bin/sh\necho '1..1'\necho 'ok 1 - works'\n")]);
    let out = probe(&repo, &["--check", "sh check.sh", "--runs", "60"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let bound = stats::clopper_pearson_upper(0, 60, 0.95);
    assert!((bound - 0.048_703).abs() < 1e-5);
    let expected = format!(
        "0 failures in 60 runs: flake rate below {} at 95% confidence",
        stats::percent_up(bound)
    );
    assert_eq!(
        expected,
        "0 failures in 60 runs: flake rate below 4.9% at 95% confidence"
    );
    assert!(stdout(&out).contains(&expected), "{}", text(&out));
    // Every available dimension took its turn; the clock's absence is said, not faked.
    assert!(stdout(&out).contains("timezone"), "{}", text(&out));
    assert!(
        stdout(&out).contains("clock     not perturbed"),
        "{}",
        text(&out)
    );
    assert_left_nothing(&repo);

    let out = probe(&repo, &["--check", "sh check.sh", "--runs", "20", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["version"], 1);
    assert_eq!(json["runs"], 20);
    assert_eq!(json["disagreements"], 0);
    assert!(json["halt_reason"].is_null());
    let upper = json["flake_rate_upper"].as_f64().unwrap();
    assert!((upper - stats::clopper_pearson_upper(0, 20, 0.95)).abs() < 1e-12);
}

#[test]
fn the_default_target_takes_299_clean_runs_for_one_percent_at_95() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let out = probe(&repo, &["--check", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stdout(&out).contains("0 failures in 299 runs: flake rate below 1.0% at 95% confidence"),
        "{}",
        text(&out)
    );
    assert_left_nothing(&repo);
}

#[test]
fn a_check_that_cannot_start_is_an_execution_failure() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let out = probe(&repo, &["--check", "no-such-test-runner-xyz --all"]);
    assert_eq!(out.status.code(), Some(40), "{}", text(&out));
    assert!(stdout(&out).contains("execution_failure"), "{}", text(&out));
    assert_left_nothing(&repo);
}

#[test]
fn bad_values_are_refused_with_exit_20_before_anything_runs() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    for (args, says) in [
        (vec!["--max-flake-rate", "1.5"], "--max-flake-rate"),
        (vec!["--max-flake-rate", "0"], "--max-flake-rate"),
        (vec!["--confidence", "1"], "--confidence"),
        (vec!["--confidence=-0.2"], "--confidence"),
        (vec!["--runs", "0"], "--runs"),
    ] {
        let mut all = vec!["--check", "true"];
        all.extend(args.iter().copied());
        let out = probe(&repo, &all);
        assert_eq!(out.status.code(), Some(20), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out)
        );
    }
    assert!(!repo.root.join(".nightshift").exists());
    // No check anywhere: said, with what to do.
    let out = probe(&repo, &[]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
}

#[test]
fn the_clock_is_perturbed_with_libfaketime_and_never_faked_without_it() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    // Red whenever the wall clock reads another year than the real one.
    let this_year = std::process::Command::new("date")
        .arg("+%Y")
        .output()
        .expect("date");
    let this_year = String::from_utf8_lossy(&this_year.stdout).trim().to_owned();
    let check = format!("test \"$(date +%Y)\" = {this_year}");
    match nightshift_core::check::probe::faketime_library() {
        Some(lib) => {
            let lib = lib.display().to_string();
            let out = repo
                .cmd(&["probe", "--check", &check, "--runs", "25", "--json"])
                .env("NIGHTSHIFT_FAKETIME_LIB", &lib)
                .output()
                .expect("probe");
            assert_eq!(out.status.code(), Some(14), "{}", text(&out));
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(json["broken"], serde_json::json!(["clock"]), "{json}");
        }
        None => {
            let out = probe(&repo, &["--check", &check, "--runs", "8", "--json"]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out));
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let clock = json["dimensions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["dimension"] == "clock")
                .unwrap()
                .clone();
            assert_eq!(clock["available"], false, "{json}");
            assert_eq!(clock["runs"], 0, "{json}");
        }
    }
}

#[test]
fn an_operator_stop_ends_the_check_in_flight_and_leaves_nothing_behind() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let ready = repo.agent_dir.join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::S_IRWXU).unwrap();
    // The third run announces itself, then would hang for ten minutes.
    let counter = repo.agent_dir.join("count");
    let check = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; if [ $n -eq 2 ]; then echo go > {r}; sleep 600; fi",
        c = counter.display(),
        r = ready.display()
    );
    let child = repo
        .cmd(&["probe", "--check", &check, "--runs", "50", "--json"])
        .env("NIGHTSHIFT_FAKETIME_LIB", "")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _ = std::fs::read_to_string(&ready).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["runs"], 2, "the stopped run is no verdict: {json}");
    assert!(
        json["summary"]
            .as_str()
            .unwrap()
            .starts_with("interrupted: "),
        "{json}"
    );
    assert_left_nothing(&repo);
}

#[test]
fn probe_json_shape_is_pinned() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let out = repo.run(&["probe", "--json-schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema");
    insta::assert_json_snapshot!(schema);
}

#[test]
fn scratch_worktrees_of_a_killed_probe_are_removed_by_the_next() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    // What a probe killed with SIGKILL leaves: a registered worktree under .nightshift/scratch/
    // named after a process that no longer exists (no pid is that large).
    let stale = repo.root.join(".nightshift/scratch/probe-999999999-0");
    std::fs::create_dir_all(stale.join("logs")).unwrap();
    let tree = stale.join("tree");
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "--detach",
        tree.to_str().unwrap(),
        "HEAD",
    ]);
    assert_eq!(repo.extra_worktrees().len(), 1);
    // A foreign directory there is not ours to judge (no pid in its name): kept.
    let foreign = repo.root.join(".nightshift/scratch/notes");
    std::fs::create_dir_all(&foreign).unwrap();
    let out = probe(&repo, &["--check", "true", "--runs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        repo.extra_worktrees().is_empty(),
        "{:?}",
        repo.extra_worktrees()
    );
    assert!(!stale.exists());
    assert!(foreign.exists());
}

#[test]
fn progress_is_counted_on_stderr_in_plain_lines_when_it_is_not_a_terminal() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let out = probe(&repo, &["--check", "true", "--runs", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("probe: 0/3 check runs done"), "{stderr}");
    assert!(
        stderr.contains("probe: 3/3 check runs done · run 3 ("),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\r'),
        "no terminal redraws into a pipe: {stderr:?}"
    );
}
