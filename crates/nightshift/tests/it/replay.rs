//! Receipts and `nightshift replay`: a genuine receipt replays to MATCH; an edited receipt, a
//! replaced commit, or a changed world the check reads turns it into exit 13.

use std::path::{Path, PathBuf};

use crate::harness::*;

/// Every receipt file under `.nightshift/receipts/`, sorted.
fn receipts(repo: &Repo) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let dir = repo.root.join(".nightshift/receipts");
    for run in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(run.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            found.push(f.path());
        }
    }
    found.sort();
    found
}

fn receipt_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A one-item run that ships `alpha`; its check also requires `$HOME/world` to be absent, so a
/// test can change what the check reads without touching the tree.
fn shipped_alpha() -> (Repo, PathBuf) {
    let mut files = project();
    files.push(("CLAUDE.md", "Keep it small.\n"));
    let repo = Repo::new(&files);
    repo.agent("alpha", &solves("alpha"));
    let config = plan(&repo, &["alpha"], 2, 1).replace(
        "check = \"sh check.sh alpha\"",
        "check = \"sh check.sh alpha && test ! -e \\\"$HOME/world\\\"\"",
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let found = receipts(&repo);
    assert_eq!(found.len(), 1, "one receipt per attempt: {found:?}");
    (repo, found[0].clone())
}

fn replay(repo: &Repo, receipt: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["replay", receipt.to_str().unwrap()];
    args.extend_from_slice(extra);
    repo.run(&args)
}

#[test]
fn a_genuine_receipt_replays_to_match() {
    let (repo, path) = shipped_alpha();
    assert!(path.ends_with("alpha-a1.json"), "{}", path.display());
    let r = &receipt_json(&path)["receipt"];
    assert_eq!(r["version"], 1);
    assert_eq!(r["item"], "alpha");
    assert_eq!(r["item_state"], "shipped");
    // Guards are not journaled yet and the scripted agent reports no spend or model:
    // the receipt ships, but it does not claim success.
    assert_eq!(r["verdict"], "unverified");
    assert_eq!(r["success"], false);
    assert_eq!(r["guards_complete"], false);
    assert!(r["determinism_bound"].is_null());
    let missing: Vec<&str> = r["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        missing.iter().any(|m| m.starts_with("guards")),
        "{missing:?}"
    );
    assert!(
        missing.iter().any(|m| m.starts_with("model")),
        "{missing:?}"
    );
    assert_eq!(r["agent"]["kind"], "command");
    assert!(r["agent"]["argv"].as_array().unwrap().len() > 1);
    // The prompt the session was given is in the manifest, with its hash.
    let prompt = &r["prompt"][0];
    let prompt_file = repo
        .root
        .join(".nightshift")
        .join(prompt["path"].as_str().unwrap());
    assert!(prompt_file.exists(), "{prompt}");
    // The last check is the one that let the work through; it ran on the shipped commit's tree.
    let checks: Vec<&serde_json::Value> = r["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["checks"].as_array().unwrap())
        .collect();
    let last = checks.last().unwrap();
    assert_eq!(last["green"], true);
    assert_eq!(last["exit_code"], 0);
    assert_eq!(
        last["tree"].as_str().unwrap(),
        repo.git(&["rev-parse", "main^{tree}"]).trim()
    );
    assert_eq!(r["determinism"][0]["runs"], 1);
    assert_eq!(r["determinism"][0]["disagreements"], 0);
    // The context file the agent found is named with its hash.
    let claude = repo.root.join("CLAUDE.md");
    let sum = std::process::Command::new("sha256sum")
        .arg(&claude)
        .output()
        .unwrap();
    let sum = String::from_utf8_lossy(&sum.stdout);
    assert_eq!(r["context"][0]["path"], "CLAUDE.md");
    assert_eq!(
        r["context"][0]["sha256"].as_str().unwrap(),
        sum.split_whitespace().next().unwrap()
    );
    // The public key is beside the state; the private key is not in the repository.
    let public = std::fs::read_to_string(repo.root.join(".nightshift/receipts.pub")).unwrap();
    assert!(public.starts_with("ed25519 "), "{public}");
    let private = repo.home.join("data/nightshift/receipt-signing.key");
    assert!(private.exists());

    let out = replay(&repo, &path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l == "MATCH"), "{stdout}");
    assert!(stdout.contains("tree ok"), "{stdout}");
    // Replay leaves nothing behind.
    assert_eq!(repo.extra_worktrees(), Vec::<String>::new());
    let json = replay(&repo, &path, &["--json"]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["result"], "match");
    assert_eq!(
        report["fingerprint_observed"],
        report["fingerprint_recorded"]
    );
    repo.assert_clean_end();
}

#[test]
fn an_edited_receipt_fails_its_signature() {
    let (repo, path) = shipped_alpha();
    let text_ = std::fs::read_to_string(&path).unwrap();
    // One byte: the recorded duration of the check.
    let edited = text_.replacen("\"duration_ms\": ", "\"duration_ms\": 1", 1);
    assert_ne!(edited, text_);
    let tampered = path.with_file_name("tampered.json");
    std::fs::write(&tampered, edited).unwrap();
    let out = replay(&repo, &tampered, &[]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("objective_unverified"), "{stderr}");
    assert!(stderr.contains("signature"), "{stderr}");
    // A key that is not the signer's is refused too.
    let other = repo.home.join("other.pub");
    // RFC 8032's first test key: valid, and not this repository's.
    std::fs::write(
        &other,
        "ed25519 d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\n",
    )
    .unwrap();
    let out = replay(&repo, &path, &["--key", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("signed by key"));
    assert_eq!(repo.extra_worktrees(), Vec::<String>::new());
}

#[test]
fn a_replaced_commit_is_caught_by_its_tree() {
    let (repo, path) = shipped_alpha();
    let r = &receipt_json(&path)["receipt"];
    let commit = r["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["checks"].as_array().unwrap())
        .next_back()
        .unwrap()["commit"]
        .as_str()
        .unwrap()
        .to_owned();
    // A commit with the same message whose tree fails the check stands in for the recorded one.
    repo.write("done/alpha", "not ok\n");
    repo.git(&["add", "--all"]);
    repo.git(&["commit", "--quiet", "-m", "imposter"]);
    let imposter = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["reset", "--quiet", "--hard", "HEAD^"]);
    repo.git(&["replace", &commit, imposter.trim()]);

    let out = replay(&repo, &path, &["--json"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["result"], "tree_mismatch", "{report}");
    assert_eq!(report["halt_reason"], "objective_unverified");
    assert_eq!(repo.extra_worktrees(), Vec::<String>::new());
    repo.git(&["replace", "-d", &commit]);
    let out = replay(&repo, &path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_changed_world_the_check_reads_is_a_mismatch() {
    let (repo, path) = shipped_alpha();
    std::fs::write(repo.home.join("world"), "changed\n").unwrap();
    let out = replay(&repo, &path, &[]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("objective_unverified"), "{stderr}");
    assert!(stderr.contains("verdict differs"), "{stderr}");
    assert_eq!(repo.extra_worktrees(), Vec::<String>::new());
}

#[test]
fn a_parked_item_writes_a_receipt_that_is_not_a_success() {
    let repo = Repo::new(&project());
    repo.agent("echo", NEVER_SOLVES);
    repo.configure(&plan(&repo, &["echo"], 2, 1));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(11), "{}", text(&out));
    let found = receipts(&repo);
    // One attempt in the first pass, one more in the parked pass.
    assert_eq!(found.len(), 2, "{found:?}");
    for path in &found {
        let r = &receipt_json(path)["receipt"];
        assert_eq!(r["success"], false, "{}", path.display());
        assert_ne!(r["verdict"], "success");
        assert_eq!(r["halt_reason"], "max_iterations_reached");
        assert_eq!(r["reason"], "check still red after 2 iterations");
        let iterations = r["iterations"].as_array().unwrap();
        assert_eq!(iterations.len(), 2);
        for i in iterations {
            let check = &i["checks"][0];
            assert_eq!(check["green"], false);
            assert_eq!(check["exit_code"], 1);
        }
    }
    let last = &receipt_json(found.last().unwrap())["receipt"];
    assert_eq!(last["verdict"], "parked");
    assert_eq!(last["item_state"], "parked");
    // Nothing green to reproduce: replay says so, exit 13.
    let out = replay(&repo, found.last().unwrap(), &[]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    repo.assert_clean_end();
}

#[test]
fn a_missing_or_foreign_receipt_file_is_bad_input() {
    let repo = Repo::new(&project());
    let out = repo.run(&["replay", "nope.json"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    repo.write("junk.json", "{\"hello\": 1}\n");
    let out = repo.run(&["replay", "junk.json"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a nightshift receipt"));
}

#[test]
fn a_receipt_that_cannot_be_signed_is_a_warning_not_a_failed_run() {
    let repo = Repo::new(&project());
    repo.agent("alpha", &solves("alpha"));
    repo.configure(&plan(&repo, &["alpha"], 1, 1));
    // A key file others can read: refused, so no receipt can be signed.
    let key = repo.home.join("data/nightshift/receipt-signing.key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, format!("{}\n", "11".repeat(32))).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.item_state("alpha"), "shipped");
    assert!(receipts(&repo).is_empty());
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("write the receipt") && attention.contains("chmod 600"),
        "{attention}"
    );
    let log = repo.run(&["log", "--json"]);
    assert!(
        String::from_utf8_lossy(&log.stdout).contains("teardown_failed"),
        "{}",
        text(&log)
    );
    repo.assert_clean_end();
}

#[test]
fn a_pruned_work_commit_replays_on_the_shipped_commit_with_the_same_tree() {
    let repo = Repo::new(&project());
    // The agent commits on its own, so the squashed commit that ships differs from the
    // attempt's own commit that the check judged.
    let agent =
        "mkdir -p done && echo ok > done/alpha && git add -A && git commit -q -m agent-work";
    let config = plan(&repo, &["alpha"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let path = receipts(&repo).pop().unwrap();
    let r = &receipt_json(&path)["receipt"];
    let checked = r["iterations"][0]["checks"][0]["commit"]
        .as_str()
        .unwrap()
        .to_owned();
    let shipped = r["shipped_commit"].as_str().unwrap().to_owned();
    assert_ne!(checked, shipped);
    // `clean` drops a shipped attempt's preserve ref; gc then drops the commit.
    repo.git(&["update-ref", "-d", "refs/nightshift/preserve/alpha/1"]);
    repo.git(&["reflog", "expire", "--expire=now", "--all"]);
    repo.git(&["gc", "--quiet", "--prune=now"]);
    let exists = std::process::Command::new("git")
        .current_dir(&repo.root)
        .args(["cat-file", "-e", &format!("{checked}^{{commit}}")])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!exists.success(), "the checked commit should be pruned");

    let out = replay(&repo, &path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("via shipped commit"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "MATCH"), "{stdout}");
}

#[test]
fn replay_seeds_the_worktree_as_the_run_did() {
    let mut files = project();
    files.push((".gitignore", "secret.txt\n"));
    let repo = Repo::new(&files);
    repo.write("secret.txt", "ok\n");
    repo.agent("alpha", &solves("alpha"));
    let config = plan(&repo, &["alpha"], 1, 1).replace(
        "check = \"sh check.sh alpha\"",
        "check = \"sh check.sh alpha && grep -q ok secret.txt\"",
    ) + "\n[worktree]\nseed = [\"secret.txt\"]\n";
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let path = receipts(&repo).pop().unwrap();
    assert_eq!(receipt_json(&path)["receipt"]["seeds"][0], "secret.txt");
    let out = replay(&repo, &path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn an_interrupted_replay_removes_its_worktree_and_verifies_nothing() {
    let mut files = project();
    files.push((
        "hold.sh",
        "if [ -e \"$HOME/hold\" ]; then echo held > \"$HOME/ready\"; read x < \"$HOME/release\"; fi\n",
    ));
    let repo = Repo::new(&files);
    repo.agent("alpha", &solves("alpha"));
    let config = plan(&repo, &["alpha"], 1, 1).replace(
        "check = \"sh check.sh alpha\"",
        "check = \"sh check.sh alpha && sh hold.sh\"",
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let path = receipts(&repo).pop().unwrap();
    // From now on the check holds until released: a handshake, no sleeping.
    let ready = repo.home.join("ready");
    let release = repo.home.join("release");
    for fifo in [&ready, &release] {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    std::fs::write(repo.home.join("hold"), "").unwrap();
    let child = repo
        .cmd(&["replay", path.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let held = std::fs::read_to_string(&ready).unwrap();
    assert_eq!(held, "held\n");
    assert_eq!(
        repo.extra_worktrees().len(),
        1,
        "the replay worktree exists"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("interrupted"),
        "{}",
        text(&out)
    );
    assert_eq!(repo.extra_worktrees(), Vec::<String>::new());
    let left: Vec<_> = std::fs::read_dir(repo.root.join(".nightshift/worktrees"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_endless_receipt_or_key_is_refused_after_a_bounded_read() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let out = repo.run(&["replay", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("larger than 16 MiB"),
        "{}",
        text(&out)
    );
}

/// A receipt states what ran, from the journal: the version the agent's binary said when each
/// session was launched, and the seeded files as the checkout got them. Item `a`'s session
/// updates the CLI in place (as Claude Code's installer does overnight) and rotates the
/// user's seeded `.env.local`; `a`'s receipt still names the version and seed it ran with, and
/// `b`'s the new ones. Asked when the receipt is written, `a`'s would name what `b` ran with.
#[test]
fn a_receipt_names_the_agent_version_and_seeds_its_sessions_ran_with_not_later_ones() {
    let mut files = project();
    files.push((".gitignore", ".env.local\n"));
    let repo = Repo::new(&files);
    std::fs::write(repo.root.join(".env.local"), "TOKEN=local\n").unwrap();
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    let wrapper = repo.agent_dir.join("claude-cli");
    let updated = repo.agent_dir.join("claude-cli.updated");
    crate::crash::configure_claude_wrapper(
        &repo,
        &format!(
            "if [ \"$1\" = --version ]; then echo '2.1.332 (Claude Code)'; exit 0; fi\n\
             if [ \"$NIGHTSHIFT_ITEM\" = a ]; then\n\
             cp {u} {w}.new && chmod 755 {w}.new && mv {w}.new {w}\n\
             echo TOKEN=rotated > {root}/.env.local\n\
             fi\n",
            u = updated.display(),
            w = wrapper.display(),
            root = repo.root.display(),
        ),
    );
    // The same CLI, a later version: what `a`'s session installs.
    let before = std::fs::read_to_string(&wrapper).unwrap();
    std::fs::write(
        &updated,
        before.replace("echo '2.1.332 (Claude Code)'", "echo '2.1.400-updated'"),
    )
    .unwrap();
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml")).unwrap()
        + "\n[worktree]\nseed = [\".env.local\"]\n";
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let now = std::fs::read_to_string(&wrapper).unwrap();
    assert!(now.contains("2.1.400-updated"), "the CLI updated: {now}");

    let found = receipts(&repo);
    assert_eq!(found.len(), 2, "{found:?}");
    let of = |item: &str| {
        let path = found
            .iter()
            .find(|p| p.ends_with(format!("{item}-a1.json")))
            .unwrap();
        receipt_json(path)["receipt"].clone()
    };
    let (a, b) = (of("a"), of("b"));
    assert_eq!(a["agent"]["kind"], "claude");
    assert_eq!(
        a["agent"]["version"], "2.1.332 (Claude Code)",
        "{}",
        a["agent"]
    );
    assert_eq!(b["agent"]["version"], "2.1.400-updated", "{}", b["agent"]);
    let seed = |r: &serde_json::Value| {
        r["context"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == ".env.local")
            .map(|e| e["sha256"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("no seed in {}", r["context"]))
    };
    use nightshift_core::report::morning::digest;
    assert_eq!(seed(&a), digest(b"TOKEN=local\n"));
    assert_eq!(seed(&b), digest(b"TOKEN=rotated\n"));
}
