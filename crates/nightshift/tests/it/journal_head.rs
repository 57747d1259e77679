//! Issue 12, the journal chain's head outside the database: entries cut from the end of the
//! journal (by hand between runs, or by a hostile unconfined agent during one) and the state
//! database rolled back to an earlier copy of itself stop the engine `store_tampered` (exit
//! 13), named; a crash between an entry's commit and its head write is no tampering.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use nightshift_core::failpoint;
use nightshift_core::store::head::{self, Head};

use crate::harness::*;

fn db(repo: &Repo) -> PathBuf {
    repo.root.join(".nightshift/state.db")
}

fn sqlite(db: &Path, sql: &str) -> String {
    let out = std::process::Command::new("sqlite3")
        .arg("-cmd")
        .arg(".timeout 5000")
        .arg(db)
        .arg(sql)
        .output()
        .expect("run the sqlite3 shell");
    assert!(out.status.success(), "sqlite3 {sql}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The one head the test's data directory holds.
fn the_head(repo: &Repo) -> Head {
    let dir = repo.home.join("data/nightshift").join(head::DIR);
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no heads in {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one head: {files:?}");
    match head::read(&files[0]) {
        head::Read::Head(h) => h,
        other => panic!("{}: {other:?}", files[0].display()),
    }
}

/// A two-item plan whose items both ship.
fn shipping_repo() -> Repo {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.agent("b", &solves("b"));
    repo.configure(&plan(&repo, &["a", "b"], 1, 1));
    repo
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The doctor's `store` finding.
fn doctor_store(repo: &Repo) -> serde_json::Value {
    let out = repo.run(&["doctor", "--json", "--runs", "1"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "store")
        .cloned()
        .unwrap_or_else(|| panic!("no store finding: {json}"))
}

/// The last entries deleted by hand between two runs: the remaining prefix still chains, but
/// it ends before the head outside the database, so `run` refuses (exit 13) naming both ends,
/// and `status` and `doctor` say so too.
#[test]
fn entries_cut_from_the_end_between_runs_are_named_and_the_run_refuses() {
    let repo = shipping_repo();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let last = repo.store().last_seq().unwrap();
    assert_eq!(the_head(&repo).seq, last, "the head follows the journal");
    assert_eq!(
        sqlite(
            &db(&repo),
            &format!(
                "DELETE FROM events WHERE seq > {}; SELECT changes();",
                last - 3
            )
        ),
        "3"
    );
    let named = format!("store_tampered: the journal ends at entry {}", last - 3);
    let says = format!("its head outside the database says it ends at entry {last}");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&named) && err.contains(&says) && err.contains("deleted from its end"),
        "{}",
        text(&out)
    );
    let out = repo.run(&["status"]);
    assert!(stderr(&out).contains(&named), "{}", text(&out));
    let store = doctor_store(&repo);
    assert_eq!(store["status"], "fail", "{store}");
    assert_eq!(store["halt"], "store_tampered", "{store}");
    assert!(store["detail"].as_str().unwrap().contains(&says), "{store}");
    // The refusal does not move the head to the cut journal: it still refuses.
    assert_eq!(the_head(&repo).seq, last);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
}

/// A hostile `command` agent (unconfined) deletes the journal's last entries during its
/// session: the check after the session finds the journal behind its head and stops the
/// engine `store_tampered` (exit 13), alerted; nothing ships.
#[test]
fn an_agent_that_cuts_the_journal_s_end_stops_the_run() {
    let repo = Repo::new(&project());
    let agent = repo.agent_dir.join("agent.sh");
    std::fs::write(
        &agent,
        format!(
            "sqlite3 -cmd '.timeout 5000' '{}' 'delete from events where seq > (select max(seq) - 2 from events)' 2>> '{}'\nmkdir -p done\necho ok > done/x\n",
            db(&repo).display(),
            repo.agent_dir.join("sqlite.err").display()
        ),
    )
    .unwrap();
    repo.configure(&format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n\n[check]\ncommand = \"sh check.sh x\"\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\n\n[[item]]\nid = \"x\"\nprompt = \"Make done/x say ok.\"\n",
        agent.display()
    ));
    let before = repo.git(&["rev-parse", "main"]);
    let out = repo.run(&["run"]);
    let sqlite_err = std::fs::read_to_string(repo.agent_dir.join("sqlite.err")).unwrap_or_default();
    assert_eq!(
        out.status.code(),
        Some(13),
        "{}\nsqlite3: {sqlite_err}",
        text(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains("store_tampered: the journal ends at entry")
            && err.contains("deleted from its end"),
        "{}",
        text(&out)
    );
    assert_eq!(
        repo.git(&["rev-parse", "main"]),
        before,
        "main did not move"
    );
    let attention =
        std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap_or_default();
    assert!(attention.contains("store_tampered"), "{attention}");
}

/// The state database replaced by an earlier copy of itself (rolled back past a run): every
/// row of the copy still chains, but it ends before the head, so `run` refuses (exit 13).
#[test]
fn a_state_database_rolled_back_to_an_earlier_copy_is_named() {
    let repo = shipping_repo();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let earlier = repo.agent_dir.join("earlier.db");
    sqlite(&db(&repo), &format!(".backup '{}'", earlier.display()));
    let copied = repo.store().last_seq().unwrap();
    let out = repo.run(&["run"]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    let last = repo.store().last_seq().unwrap();
    assert!(last > copied, "the second run journaled");
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(repo.root.join(format!(".nightshift/state.db{side}")));
    }
    std::fs::copy(&earlier, db(&repo)).unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(13), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("the journal ends at entry {copied}"))
            && err.contains(&format!("says it ends at entry {last}"))
            && err.contains("replaced by an older copy"),
        "{}",
        text(&out)
    );
}

/// `kill -9` right after an entry commits, before its head is written (every journaled kind's
/// failpoint sits there): the head is one entry behind the journal, which is no tampering; the
/// resumed run finishes and brings the head up to the journal's end.
#[test]
fn a_crash_between_the_commit_and_the_head_write_resumes_untampered() {
    let repo = shipping_repo();
    let out = repo
        .cmd(&["engine"])
        .env(failpoint::ENV, "check_ended@2")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(9), "{}", text(&out));
    let last = repo.store().last_seq().unwrap();
    let behind = the_head(&repo);
    assert_eq!(behind.seq, last - 1, "the head is one entry behind");
    let store = doctor_store(&repo);
    assert_eq!(store["status"], "ok", "{store}");
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert!(!stderr(&out).contains("store_tampered"), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a", "b"]);
    let head = the_head(&repo);
    let store = repo.store();
    assert_eq!(head.seq, store.last_seq().unwrap(), "caught up");
    assert_eq!(
        head.count,
        store.events_after(0, 100_000).unwrap().len() as u64
    );
}

/// A journal from before heads were kept (here: its head deleted) is no tampering: `doctor`
/// warns, and the next run writes the head and goes on.
#[test]
fn a_missing_head_is_a_warning_and_the_next_run_writes_it() {
    let repo = shipping_repo();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let dir = repo.home.join("data/nightshift").join(head::DIR);
    std::fs::remove_dir_all(&dir).unwrap();
    let store = doctor_store(&repo);
    assert_eq!(store["status"], "warn", "{store}");
    assert!(
        store["detail"]
            .as_str()
            .unwrap()
            .contains("its head outside the database is missing"),
        "{store}"
    );
    let out = repo.run(&["run"]);
    assert!(!stderr(&out).contains("store_tampered"), "{}", text(&out));
    assert_eq!(the_head(&repo).seq, repo.store().last_seq().unwrap());
    assert_eq!(doctor_store(&repo)["status"], "ok");
}
