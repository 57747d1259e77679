//! Issue 12, the pinned control plane: what judges a run is the `nightshift.toml` text pinned
//! in its journal at start, and each item's check is the journaled plan's. A hostile `command`
//! agent that rewrites the store's check column, or edits the user's `nightshift.toml`, hides
//! the edit and kills its engine, ships nothing; the evidence is in the journal.

use std::path::{Path, PathBuf};

use nightshift_core::store::{Event, EventKind};

use crate::harness::*;

fn events(repo: &Repo) -> Vec<Event> {
    repo.store().events_after(0, 100_000).unwrap()
}

fn of_kind<'a>(events: &'a [Event], kind: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.kind.name() == kind).collect()
}

/// The commands the journal says each check ran.
fn checks_started(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CheckStarted { command, .. } => command.clone(),
            _ => None,
        })
        .collect()
}

fn attention(repo: &Repo) -> String {
    std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap_or_default()
}

/// A one-item plan (`x`) judged by `[check] command = check`, whose agent runs `script` (a
/// file, so the script needs no TOML quoting).
fn hostile(repo: &Repo, check: &str, script: &str) -> PathBuf {
    let agent = repo.agent_dir.join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    repo.configure(&format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n\n[check]\ncommand = \"{check}\"\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\n\n[[item]]\nid = \"x\"\nprompt = \"Make done/x say ok.\"\n",
        agent.display()
    ));
    agent
}

fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// The issue's first attack: the agent rewrites `items.check_command` in the state database to
/// `true`. The check that runs is the journaled one (`false`): nothing ships, and the journal
/// says which command each check ran.
#[test]
fn an_agent_that_rewrites_the_check_in_the_store_ships_nothing() {
    let repo = Repo::new(&project());
    let db = repo.root.join(".nightshift/state.db");
    hostile(
        &repo,
        "false",
        &format!(
            "sqlite3 -cmd '.timeout 5000' {} \"update items set check_command='true'\"\nmkdir -p done\necho ok > done/x\n",
            sh_quote(&db)
        ),
    );
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["run"]);
    assert_ne!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), Vec::<String>::new(), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        before,
        "main did not move"
    );
    let all = events(&repo);
    let checks = checks_started(&all);
    assert!(!checks.is_empty(), "a check ran");
    assert!(
        checks.iter().all(|c| c == "false"),
        "every check ran the pinned command: {checks:?}"
    );
    let pinned = of_kind(&all, "control_plane_pinned");
    assert_eq!(pinned.len(), 1, "pinned once, at run start");
    // The edit of the derived state is found after the session, named, and undone from the
    // journal; the run goes on.
    // (once per session of the agent: the parked item's second pass runs it again)
    let repaired = of_kind(&all, "store_repaired");
    assert!(!repaired.is_empty(), "{repaired:?}");
    assert!(
        repaired.iter().all(|e| matches!(&e.kind,
            EventKind::StoreRepaired { detail } if detail.starts_with("table items"))),
        "{repaired:?}"
    );
    assert!(attention(&repo).contains("store_repaired"));
    assert!(repo.store().refold_matches().unwrap());
    assert_eq!(repo.item_state("x"), "parked");
}

/// A journal row edited by hand (here: the command a check ran) breaks the hash chain at that
/// row: `run` refuses with the row named (exit 13), `doctor` and `status` report it.
#[test]
fn a_journal_row_edited_by_hand_is_named_and_the_run_refuses() {
    let repo = Repo::new(&project());
    hostile(&repo, "sh check.sh x", "mkdir -p done\necho ok > done/x\n");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let seq = of_kind(&events(&repo), "check_started")[0].seq;
    let edit = std::process::Command::new("sqlite3")
        .arg(repo.root.join(".nightshift/state.db"))
        .arg(format!(
            "UPDATE events SET data = replace(data, 'sh check.sh x', 'true') WHERE seq = {seq}; SELECT changes();"
        ))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&edit.stdout).trim(),
        "1",
        "{edit:?}"
    );
    let named = format!("store_tampered: journal entry {seq} (check_started)");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&named),
        "{}",
        text(&out)
    );
    let out = repo.run(&["status"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&named),
        "{}",
        text(&out)
    );
    let out = repo.run(&["doctor", "--json", "--runs", "1"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "store")
        .unwrap_or_else(|| panic!("no store finding: {json}"));
    assert_eq!(store["status"], "fail", "{store}");
    assert_eq!(store["halt"], "store_tampered", "{store}");
    assert!(
        store["detail"].as_str().unwrap().contains(&named),
        "{store}"
    );
}

/// An agent that rewrites the journal itself mid-run (the plan's check in `run_started`) is
/// caught after its session: the engine stops `store_tampered` (exit 13), alerted, and
/// nothing ships.
#[test]
fn an_agent_that_rewrites_the_journal_stops_the_run() {
    let repo = Repo::new(&project());
    let db = repo.root.join(".nightshift/state.db");
    let sql = repo.agent_dir.join("edit.sql");
    std::fs::write(
        &sql,
        r#"update events set data = replace(data, '"prompt"', '"check":"true","prompt"') where kind = 'run_started';"#,
    )
    .unwrap();
    hostile(
        &repo,
        "false",
        &format!(
            "sqlite3 -cmd '.timeout 5000' {} < {}\nmkdir -p done\necho ok > done/x\n",
            sh_quote(&db),
            sh_quote(&sql)
        ),
    );
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        before,
        "main did not move"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("store_tampered: journal entry 1 (run_started)"),
        "{}",
        text(&out)
    );
    assert!(attention(&repo).contains("store_tampered"));
}

/// The issue's second attack: the agent edits the committed `nightshift.toml` in the user's
/// checkout (`command = "true"`), hides it with `git update-index --assume-unchanged`, then
/// kills its engine. The restarted engine judges by the pinned copy; the change and the kill
/// are journaled and alerted; nothing ships.
#[test]
fn a_hidden_config_edit_and_an_engine_kill_do_not_change_the_judge() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("killed-once");
    let root = sh_quote(&repo.root);
    hostile(
        &repo,
        "false",
        &format!(
            "if [ ! -e {m} ]; then\n  touch {m}\n  sed -i 's/^command = \"false\"/command = \"true\"/' {root}/nightshift.toml\n  git -C {root} update-index --assume-unchanged nightshift.toml\n  kill -9 $PPID\n  sleep 600\nfi\nmkdir -p done\necho ok > done/x\n",
            m = sh_quote(&marker),
        ),
    );
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["run"]);
    assert!(
        marker.exists(),
        "the engine was killed once: {}",
        text(&out)
    );
    let live = std::fs::read_to_string(repo.root.join("nightshift.toml")).unwrap();
    assert!(live.contains("command = \"true\""), "the attack happened");
    assert_ne!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), Vec::<String>::new(), "{}", text(&out));
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        before,
        "main did not move"
    );
    let all = events(&repo);
    let checks = checks_started(&all);
    assert!(!checks.is_empty(), "a check ran: {}", text(&out));
    assert!(checks.iter().all(|c| c == "false"), "{checks:?}");
    let changed = of_kind(&all, "control_plane_changed");
    assert_eq!(changed.len(), 1, "reported once: {changed:?}");
    let EventKind::ControlPlaneChanged { detail, .. } = &changed[0].kind else {
        unreachable!()
    };
    assert_eq!(detail, "[check] command");
    let restarted = of_kind(&all, "engine_restarted");
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert!(
        matches!(&restarted[0].kind, EventKind::EngineRestarted { exit } if exit == "killed by SIGKILL"),
        "{restarted:?}"
    );
    let attention = attention(&repo);
    assert!(attention.contains("control_plane_changed"), "{attention}");
    assert!(attention.contains("engine_restarted"), "{attention}");
}

/// `run --reload-config` resumes with the live file, journaled as a reloaded pin.
#[test]
fn reload_config_pins_the_live_file_and_says_so() {
    let repo = Repo::new(&project());
    hostile(&repo, "false", "mkdir -p done\necho ok > done/x\n");
    let out = repo
        .cmd(&["engine"])
        .env(nightshift_core::failpoint::ENV, "worktree_ready")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "killed at the failpoint: {}",
        text(&out)
    );
    // The user fixes the check and commits it; the run resumes with it only when asked.
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml"))
        .unwrap()
        .replace("command = \"false\"", "command = \"sh check.sh x\"");
    repo.write("nightshift.toml", &config);
    repo.git(&["commit", "--quiet", "-am", "fix the check"]);
    let out = repo.run(&["run", "--reload-config"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["x"]);
    let all = events(&repo);
    let pinned = of_kind(&all, "control_plane_pinned");
    assert_eq!(pinned.len(), 2, "{pinned:?}");
    assert!(matches!(
        &pinned[1].kind,
        EventKind::ControlPlanePinned { reloaded: true, .. }
    ));
    assert!(of_kind(&all, "control_plane_changed").is_empty());
    assert_eq!(checks_started(&all), ["sh check.sh x"; 2]);
}

/// A receipt written after the user edited `nightshift.toml` (the engine died between shipping
/// and writing it) signs the command the check ran, from `check_started`, not the live one.
#[test]
fn a_receipt_written_after_a_config_edit_signs_what_ran() {
    let repo = Repo::new(&project());
    hostile(&repo, "sh check.sh x", "mkdir -p done\necho ok > done/x\n");
    let out = repo
        .cmd(&["engine"])
        .env(nightshift_core::failpoint::ENV, "integrated")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "killed at the failpoint: {}",
        text(&out)
    );
    assert_eq!(repo.shipped_items(), ["x"]);
    let config = std::fs::read_to_string(repo.root.join("nightshift.toml"))
        .unwrap()
        .replace(
            "command = \"sh check.sh x\"",
            "command = \"sh check.sh x || true\"",
        );
    repo.write("nightshift.toml", &config);
    repo.git(&["commit", "--quiet", "-am", "loosen the check"]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let receipt = std::fs::read_dir(repo.root.join(".nightshift/receipts"))
        .unwrap()
        .flatten()
        .flat_map(|run| std::fs::read_dir(run.path()).unwrap().flatten())
        .map(|f| f.path())
        .next()
        .expect("a receipt was written");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&receipt).unwrap()).unwrap();
    let checks = json["receipt"]["iterations"][0]["checks"]
        .as_array()
        .unwrap();
    assert!(!checks.is_empty(), "{json}");
    for check in checks {
        assert_eq!(check["command"], "sh check.sh x", "{check}");
    }
    let all = events(&repo);
    assert_eq!(of_kind(&all, "control_plane_changed").len(), 1);
}

/// The issue's kill of the engine's process group: the supervisor is outside it, restarts the
/// engine, and the kill is journaled and alerted; the item ships once.
#[test]
fn killing_the_engines_process_group_does_not_end_the_night() {
    use std::os::unix::process::CommandExt;
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("killed-once");
    hostile(
        &repo,
        "sh check.sh x",
        &format!(
            "if [ ! -e {m} ]; then\n  touch {m}\n  kill -9 -$(cut -d' ' -f5 /proc/$PPID/stat)\n  sleep 600\nfi\nmkdir -p done\necho ok > done/x\n",
            m = sh_quote(&marker),
        ),
    );
    // As from a shell: `nightshift run` leads its own process group (never the test's).
    let out = repo.cmd(&["run"]).process_group(0).output().unwrap();
    assert!(marker.exists(), "the group was killed once: {}", text(&out));
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["x"]);
    let all = events(&repo);
    let restarted = of_kind(&all, "engine_restarted");
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert!(attention(&repo).contains("engine_restarted"));
    let health: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.root.join(".nightshift/health.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(health["state"], "finished", "{health}");
    assert_eq!(health["engine_restarts"], 1, "{health}");
}
