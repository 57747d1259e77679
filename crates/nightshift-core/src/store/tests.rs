use super::*;

fn planned(id: &str) -> PlannedItem {
    PlannedItem {
        id: id.into(),
        prompt: format!("do {id}"),
        check: None,
        shipped_by: None,
    }
}

fn started(items: &[&str]) -> EventKind {
    EventKind::RunStarted {
        target: "main".into(),
        base: "b0".into(),
        max_iterations: 2,
        max_attempts: 1,
        items: items.iter().map(|i| planned(i)).collect(),
    }
}

#[test]
fn record_appends_and_folds_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("state.db")).unwrap();
    store.record("r1", "t0", started(&["a", "b"])).unwrap();
    store
        .record(
            "r1",
            "t1",
            EventKind::AttemptStarted {
                item: "a".into(),
                attempt: 1,
                base: "b0".into(),
                branch: "nightshift/a/1".into(),
                worktree: "/w/a-1".into(),
            },
        )
        .unwrap();
    store
        .record(
            "r1",
            "t2",
            EventKind::AttemptFailed {
                item: "a".into(),
                attempt: 1,
                reason: "red".into(),
                preserve_ref: None,
                park: false,
                keep_branch: false,
                halt: None,
                verdict: None,
                actions: Vec::new(),
            },
        )
        .unwrap();
    let items = store.items("r1").unwrap();
    assert_eq!(
        items[0].state,
        ItemState::Parked,
        "one allowed attempt, spent"
    );
    assert_eq!(items[0].reason.as_deref(), Some("red"));
    assert_eq!(items[1].state, ItemState::Queued);
    store
        .record(
            "r1",
            "t3",
            EventKind::PassStarted {
                pass: 2,
                requeued: vec!["a".into()],
            },
        )
        .unwrap();
    let items = store.items("r1").unwrap();
    assert_eq!((items[0].state, items[0].allowed), (ItemState::Queued, 2));
    assert_eq!(store.max_attempt_number("a").unwrap(), 1);
    assert_eq!(store.events_after(0, 100).unwrap().len(), 4);
    assert!(store.refold_matches().unwrap());
}

#[test]
fn refold_detects_state_that_is_not_the_fold_of_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("state.db")).unwrap();
    store.record("r1", "t0", started(&["a"])).unwrap();
    assert!(store.refold_matches().unwrap());
    store
        .conn
        .execute("UPDATE items SET state = 'shipped'", [])
        .unwrap();
    assert!(!store.refold_matches().unwrap());
}

#[test]
fn a_newer_database_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(Store::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(conn);
    let err = Store::open(&path).err().unwrap();
    assert!(err.to_string().contains("upgrade nightshift"), "{err}");
}

#[test]
fn the_lock_is_exclusive_and_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lock");
    let held = RunLock::acquire(&path, "pid 42 run r1").unwrap();
    match RunLock::acquire(&path, "pid 43") {
        Err(LockError::Held { holder, .. }) => assert_eq!(holder, "pid 42 run r1"),
        other => panic!("expected Held, got {other:?}"),
    }
    drop(held);
    assert!(RunLock::acquire(&path, "pid 43").is_ok());
}

/// What a restarted engine reads (issue 13): the run opened after a position, and its halt.
#[test]
fn since_names_the_run_opened_after_a_position_and_its_halt() {
    use crate::halt::HaltReason;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("state.db")).unwrap();
    store.record("old", "t0", started(&["a"])).unwrap();
    let finished = |h: HaltReason| EventKind::RunFinished {
        halt_reason: h,
        exit_code: h.class().code(),
    };
    store
        .record("old", "t1", finished(HaltReason::QueueDrainedAllShipped))
        .unwrap();
    let from = store.last_seq().unwrap();
    assert_eq!(
        store.since(from).unwrap(),
        Since::Nothing,
        "the old run is not ours"
    );
    store.record("new", "t2", started(&["a"])).unwrap();
    assert_eq!(store.since(from).unwrap(), Since::Open("new".into()));
    store
        .record(
            "new",
            "t3",
            EventKind::RunStopped {
                graceful: true,
                halt_reason: Some(HaltReason::DeadlineReached),
            },
        )
        .unwrap();
    assert_eq!(
        store.since(from).unwrap(),
        Since::Halted {
            run_id: "new".into(),
            halt: HaltReason::DeadlineReached
        }
    );
    store
        .record("new", "t4", EventKind::RunResumed { pid: 1 })
        .unwrap();
    assert_eq!(
        store.since(from).unwrap(),
        Since::Open("new".into()),
        "resumed again"
    );
    store
        .record("new", "t5", finished(HaltReason::QueueDrainedWithParked))
        .unwrap();
    assert_eq!(
        store.since(from).unwrap(),
        Since::Halted {
            run_id: "new".into(),
            halt: HaltReason::QueueDrainedWithParked
        }
    );
}

/// A writer whose file was deleted or replaced refuses to write on (issue 13).
#[test]
fn a_writer_refuses_a_file_deleted_or_replaced_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.record("r", "t0", started(&["a"])).unwrap();
    std::fs::remove_file(&path).unwrap();
    let err = store
        .record("r", "t1", EventKind::RunResumed { pid: 1 })
        .unwrap_err();
    assert_eq!(err.unusable(), Some(Unusable::Replaced));
    std::fs::write(&path, "").unwrap();
    let err = store
        .record("r", "t1", EventKind::RunResumed { pid: 1 })
        .unwrap_err();
    assert_eq!(
        err.unusable(),
        Some(Unusable::Replaced),
        "a new file at the path"
    );
    assert!(
        err.remedy(".nightshift/state.db")
            .is_some_and(|r| r.contains("deleted or replaced"))
    );
}

/// A file that is not a database is classified corrupt, with one line saying what to do.
#[test]
fn a_corrupt_file_is_classified_with_a_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, "not a database at all, just text ".repeat(200)).unwrap();
    let err = Store::open(&path).err().expect("refused");
    assert_eq!(err.unusable(), Some(Unusable::Corrupt), "{err:?}");
    let line = err.remedy(".nightshift/state.db").unwrap();
    assert!(
        line.contains("is corrupt") && line.contains("move it aside"),
        "{line}"
    );
    assert!(!line.contains('\n'));
}

#[test]
fn an_edited_or_removed_journal_row_breaks_the_chain_at_that_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    store.record("r1", "t0", started(&["a"])).unwrap();
    for at in ["t1", "t2"] {
        store
            .record("r1", at, EventKind::RunResumed { pid: 1 })
            .unwrap();
    }
    assert_eq!(
        store.verify_chain().unwrap(),
        chain::Verdict::Intact {
            rows: 3,
            head: chain::HeadState::Holds { ahead: 0 }
        }
    );
    store
        .conn
        .execute(
            "UPDATE events SET data = replace(data, '1', '2') WHERE seq = 2",
            [],
        )
        .unwrap();
    let chain::Verdict::Broken(chain::Tamper::Row { seq, kind, .. }) =
        store.verify_chain().unwrap()
    else {
        panic!("an edited row holds");
    };
    assert_eq!((seq, kind.as_str()), (2, "run_resumed"));
    drop(store);
    assert!(matches!(Store::open(&path), Err(StoreError::Tampered(_))));
    // A removed row: the next one no longer follows its predecessor.
    let path = dir.path().join("other.db");
    let mut store = Store::open(&path).unwrap();
    store.record("r1", "t0", started(&["a"])).unwrap();
    for at in ["t1", "t2"] {
        store
            .record("r1", at, EventKind::RunResumed { pid: 1 })
            .unwrap();
    }
    store
        .conn
        .execute("DELETE FROM events WHERE seq = 2", [])
        .unwrap();
    let chain::Verdict::Broken(chain::Tamper::Row { seq, .. }) = store.verify_chain().unwrap()
    else {
        panic!("a removed row is not seen");
    };
    assert_eq!(seq, 3);
}

#[test]
fn drifted_state_is_named_and_rebuilt_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("state.db")).unwrap();
    store.record("r1", "t0", started(&["a"])).unwrap();
    assert_eq!(store.state_drift().unwrap(), None);
    store
        .conn
        .execute("UPDATE items SET check_command = 'true'", [])
        .unwrap();
    let drift = store.state_drift().unwrap().unwrap();
    assert!(drift.starts_with("table items, row 1"), "{drift}");
    store.rebuild_state().unwrap();
    assert_eq!(store.state_drift().unwrap(), None);
    assert_eq!(store.items("r1").unwrap()[0].check_command, None);
}

/// A store with `n` entries of one run.
fn journal_of(path: &Path, n: usize) -> Store {
    let mut store = Store::open(path).unwrap();
    store.record("r1", "t0", started(&["a"])).unwrap();
    for i in 1..n {
        store
            .record("r1", &format!("t{i}"), EventKind::RunResumed { pid: 1 })
            .unwrap();
    }
    store
}

fn head_of(path: &Path) -> head::Read {
    head::read(&head::path_for(path).unwrap())
}

fn tampered(path: &Path) -> String {
    match Store::open(path) {
        Err(StoreError::Tampered(t)) => t.to_string(),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("opened"),
    }
}

#[test]
fn every_append_moves_the_head_outside_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = journal_of(&path, 3);
    let head::Read::Head(h) = head_of(&path) else {
        panic!("no head");
    };
    let last: String = store
        .conn
        .query_row("SELECT mac FROM events WHERE seq = 3", [], |r| r.get(0))
        .unwrap();
    assert_eq!((h.seq, h.count, h.mac), (3, 3, last));
}

#[test]
fn entries_cut_from_the_end_are_named_against_the_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = journal_of(&path, 5);
    store
        .conn
        .execute("DELETE FROM events WHERE seq > 3", [])
        .unwrap();
    // The chain alone holds: what is left is a prefix.
    let chain::Verdict::Broken(chain::Tamper::Head(what)) = store.verify_chain().unwrap() else {
        panic!("a cut tail is not seen");
    };
    assert!(
        what.starts_with(
            "the journal ends at entry 3 (run_resumed, 3 entries) but its head outside the database says it ends at entry 5 (5 entries)"
        ),
        "{what}"
    );
    drop(store);
    assert!(tampered(&path).contains("deleted from its end"));
}

#[test]
fn an_older_copy_of_the_database_is_named_against_the_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let older = dir.path().join("older.db");
    let mut store = journal_of(&path, 2);
    store
        .conn
        .execute(&format!("VACUUM INTO '{}'", older.display()), [])
        .unwrap();
    store
        .record("r1", "t9", EventKind::RunResumed { pid: 2 })
        .unwrap();
    drop(store);
    std::fs::rename(&older, &path).unwrap();
    let what = tampered(&path);
    assert!(
        what.contains("the journal ends at entry 2") && what.contains("an older copy"),
        "{what}"
    );
}

#[test]
fn a_database_made_without_the_key_is_not_sealed_over_its_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(journal_of(&path, 2));
    // The agent's own database in its place, longer than the real one, with no MACs (as
    // from before the chain): it must not be sealed as a legacy journal.
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute("DELETE FROM events", []).unwrap();
        for at in ["a", "b", "c"] {
            conn.execute(
                "INSERT INTO events (run_id, at, kind, data) VALUES ('r1', ?1, 'run_resumed', '{\"run_resumed\":{\"pid\":1}}')",
                [at],
            )
            .unwrap();
        }
    }
    let what = tampered(&path);
    assert!(what.contains("the database was replaced"), "{what}");
    let sealed: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(mac) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sealed, 0, "not sealed");
}

#[test]
fn a_head_behind_the_journal_holds_and_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(journal_of(&path, 4));
    let head_path = head::path_for(&path).unwrap();
    let head::Read::Head(at4) = head::read(&head_path) else {
        panic!("no head");
    };
    // As a crash between the commit of entry 4 and its head write leaves it: one behind.
    let mac3: String = Connection::open(&path)
        .unwrap()
        .query_row("SELECT mac FROM events WHERE seq = 3", [], |r| r.get(0))
        .unwrap();
    let at3 = head::Head {
        seq: 3,
        count: 3,
        mac: mac3,
    };
    head::write(&head_path, &at3).unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(head::read(&head_path), head::Read::Head(at4), "caught up");
    drop(store);
    // Read-only, a head behind is said as such.
    head::write(&head_path, &at3).unwrap();
    let reader = Store {
        chain: writer_key(),
        ..Store::open_read_only(&path).unwrap()
    };
    assert_eq!(
        reader.verify_chain().unwrap(),
        chain::Verdict::Intact {
            rows: 4,
            head: chain::HeadState::Holds { ahead: 1 }
        }
    );
}

#[test]
fn a_missing_head_is_no_tampering_and_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(journal_of(&path, 3));
    let head_path = head::path_for(&path).unwrap();
    std::fs::remove_file(&head_path).unwrap();
    let reader = Store {
        chain: writer_key(),
        ..Store::open_read_only(&path).unwrap()
    };
    assert_eq!(
        reader.verify_chain().unwrap(),
        chain::Verdict::Intact {
            rows: 3,
            head: chain::HeadState::Missing
        }
    );
    drop(reader);
    drop(Store::open(&path).unwrap());
    assert!(matches!(head::read(&head_path), head::Read::Head(h) if h.seq == 3));
}

#[test]
fn a_database_moved_aside_starts_afresh_with_a_fresh_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(journal_of(&path, 3));
    std::fs::rename(&path, dir.path().join("state.db.tampered")).unwrap();
    let mut store = Store::open(&path).unwrap();
    assert_eq!(head_of(&path), head::Read::Head(head::Head::empty()));
    store.record("r2", "t0", started(&["a"])).unwrap();
    assert!(matches!(head_of(&path), head::Read::Head(h) if h.seq == 1 && h.count == 1));
    drop(store);
    // An emptied file is the same: no database, no older copy.
    std::fs::write(&path, "").unwrap();
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.path().join(format!("state.db{side}")));
    }
    drop(Store::open(&path).unwrap());
    assert_eq!(head_of(&path), head::Read::Head(head::Head::empty()));
}

#[test]
fn the_head_counts_entries_another_writer_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut engine = journal_of(&path, 2);
    let mut other = Store::open(&path).unwrap();
    other
        .record("r1", "t5", EventKind::RunResumed { pid: 3 })
        .unwrap();
    engine
        .record("r1", "t6", EventKind::RunResumed { pid: 4 })
        .unwrap();
    assert!(matches!(head_of(&path), head::Read::Head(h) if (h.seq, h.count) == (4, 4)));
    drop((engine, other));
    drop(Store::open(&path).unwrap());
}

#[test]
fn an_append_after_entries_were_cut_from_the_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = journal_of(&path, 5);
    // Another connection (an agent's sqlite3 shell) cuts the last two entries.
    Connection::open(&path)
        .unwrap()
        .execute("DELETE FROM events WHERE seq > 3", [])
        .unwrap();
    let err = store
        .record("r1", "t9", EventKind::RunResumed { pid: 9 })
        .expect_err("refused");
    let StoreError::Tampered(t) = err else {
        panic!("{err}");
    };
    assert!(t.to_string().contains("the journal ends at entry 3"), "{t}");
    // Nothing was appended, and the head still names entry 5.
    assert_eq!(store.last_seq().unwrap(), 3);
    assert!(matches!(head_of(&path), head::Read::Head(h) if h.seq == 5));
}

#[test]
fn a_step_reads_the_items_and_events_it_needs_and_no_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("state.db")).unwrap();
    store.record("r1", "t0", started(&["a", "b", "c"])).unwrap();
    store
        .record(
            "r1",
            "t1",
            EventKind::AttemptStarted {
                item: "b".into(),
                attempt: 1,
                base: "b0".into(),
                branch: "nightshift/b/1".into(),
                worktree: "/w/b-1".into(),
            },
        )
        .unwrap();
    for (at, item) in [("t2", "a"), ("t3", "b"), ("t4", "a")] {
        store
            .record(
                "r1",
                at,
                EventKind::OperatorMessage {
                    item: item.into(),
                    who: "me".into(),
                    text: format!("to {item}"),
                },
            )
            .unwrap();
    }
    let running = store.first_item("r1", ItemState::Running).unwrap().unwrap();
    assert_eq!(
        (running.id.as_str(), running.current_attempt),
        ("b", Some(1))
    );
    assert_eq!(
        store
            .first_item("r1", ItemState::Queued)
            .unwrap()
            .unwrap()
            .id,
        "a"
    );
    assert_eq!(store.first_item("r1", ItemState::Shipped).unwrap(), None);
    assert_eq!(store.first_item("r2", ItemState::Queued).unwrap(), None);
    assert_eq!(store.item("r1", "b").unwrap(), Some(running.clone()));
    assert_eq!(store.item("r1", "c").unwrap().unwrap().position, 2);
    assert_eq!(store.item("r1", "d").unwrap(), None);
    assert_eq!(store.item("r2", "b").unwrap(), None);
    assert_eq!(store.count_items("r1", ItemState::Queued).unwrap(), (3, 2));
    assert_eq!(store.count_items("r2", ItemState::Queued).unwrap(), (0, 0));
    let seqs = |events: Vec<Event>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(store.run_events("r1", &["operator_message"]).unwrap()),
        [3, 4, 5]
    );
    assert_eq!(
        seqs(
            store
                .run_events("r1", &["attempt_started", "run_started"])
                .unwrap()
        ),
        [1, 2]
    );
    assert_eq!(
        seqs(store.run_events("r1", &[]).unwrap()),
        Vec::<i64>::new()
    );
    assert_eq!(
        seqs(
            store
                .item_events("r1", "a", &["operator_message", "attempt_started"])
                .unwrap()
        ),
        [3, 5]
    );
    assert_eq!(
        seqs(
            store
                .item_events("r1", "b", &["operator_message", "attempt_started"])
                .unwrap()
        ),
        [2, 4]
    );
    assert_eq!(
        seqs(
            store
                .attempt_events("r1", "b", 1, Some("attempt_started"))
                .unwrap()
        ),
        [2]
    );
    assert_eq!(
        seqs(
            store
                .attempt_events("r1", "b", 1, Some("session_ended"))
                .unwrap()
        ),
        Vec::<i64>::new()
    );
}

#[test]
fn only_another_connections_commit_counts_as_written_by_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let mut store = Store::open(&path).unwrap();
    assert!(store.written_by_others().unwrap(), "not looked yet");
    assert!(!store.written_by_others().unwrap());
    store.record("r1", "t0", started(&["a"])).unwrap();
    assert!(!store.written_by_others().unwrap(), "its own commit");
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute("UPDATE items SET check_command = 'true'", [])
        .unwrap();
    assert!(
        store.written_by_others().unwrap(),
        "another connection's commit"
    );
    assert!(!store.written_by_others().unwrap());
    // Read-only readers do not count.
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.items("r1").unwrap().len(), 1);
    assert!(!store.written_by_others().unwrap());
}

/// The plan SQLite picks for a journal query (`EXPLAIN QUERY PLAN`), its detail lines joined.
fn plan_of(store: &Store, index: Option<&str>, condition: &str) -> String {
    let sql = format!("EXPLAIN QUERY PLAN {}", events_sql(index, condition));
    let mut stmt = store.conn.prepare(&sql).unwrap();
    // Unbound: the plan is made without the values (as the store's connections make it).
    let mut rows = stmt.raw_query();
    let mut details = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        details.push(row.get::<_, String>(3).unwrap());
    }
    details.join("; ")
}

#[test]
fn the_runs_and_an_items_journal_queries_read_only_their_kinds_and_item_not_the_whole_run() {
    // Issue 14: without the index named, SQLite answered both by walking the run's journal in
    // `seq` order (`events_run`) for the `ORDER BY`: `told`, before every session, read every
    // entry of the night so far.
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("state.db")).unwrap();
    store.record("r1", "t0", started(&["a"])).unwrap();
    for kinds in [1, 3] {
        let run = plan_of(&store, Some(BY_KIND), &run_events_condition(kinds));
        assert!(run.contains("USING INDEX events_kind"), "{run}");
        let item = plan_of(&store, Some(BY_ITEM), &item_events_condition(kinds));
        assert!(item.contains("USING INDEX events_item"), "{item}");
    }
    // Left to itself, the planner takes the run's index (what this guards against).
    let bare = plan_of(&store, None, &item_events_condition(3));
    assert!(bare.contains("events_run"), "{bare}");
}
