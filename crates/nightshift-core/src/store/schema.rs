//! The database schema and its forward migrations, versioned with `PRAGMA user_version`.

use rusqlite::Connection;

/// The schema version this binary writes. An older binary refuses a newer database.
pub const VERSION: i64 = 6;

const V1: &str = r#"
CREATE TABLE events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id  TEXT NOT NULL,
    at      TEXT NOT NULL,
    kind    TEXT NOT NULL,
    item    TEXT,
    attempt INTEGER,
    data    TEXT NOT NULL
);
CREATE INDEX events_run ON events(run_id, seq);
CREATE TABLE runs (
    id             TEXT PRIMARY KEY,
    started_at     TEXT NOT NULL,
    finished_at    TEXT,
    target         TEXT NOT NULL,
    base           TEXT NOT NULL,
    max_iterations INTEGER NOT NULL,
    max_attempts   INTEGER NOT NULL,
    state          TEXT NOT NULL,
    halt_reason    TEXT,
    exit_code      INTEGER,
    pass           INTEGER NOT NULL
);
CREATE TABLE items (
    run_id          TEXT NOT NULL,
    id              TEXT NOT NULL,
    position        INTEGER NOT NULL,
    prompt          TEXT NOT NULL,
    check_command   TEXT,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    allowed         INTEGER NOT NULL,
    current_attempt INTEGER,
    reason          TEXT,
    preserve_ref    TEXT,
    shipped_commit  TEXT,
    shipped_pass    INTEGER,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE attempts (
    run_id           TEXT NOT NULL,
    item             TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    base             TEXT NOT NULL,
    branch           TEXT NOT NULL,
    worktree         TEXT NOT NULL,
    phase            TEXT NOT NULL,
    iteration        INTEGER NOT NULL,
    candidate        TEXT,
    merged           TEXT,
    onto             TEXT,
    preserve_ref     TEXT,
    reason           TEXT,
    worktree_present INTEGER NOT NULL,
    last_check_log   TEXT,
    PRIMARY KEY (run_id, item, attempt)
);
"#;

/// Version 2: what sessions spent, run pauses, nudges and environmental retries.
const V2: &str = r#"
ALTER TABLE items ADD COLUMN spent_tokens REAL NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN spent_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN spent_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN spent_tokens REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN spent_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN spent_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN paused_until INTEGER;
ALTER TABLE runs ADD COLUMN pause_reason TEXT;
ALTER TABLE attempts ADD COLUMN nudges INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN env_retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN last_outcome TEXT;
ALTER TABLE attempts ADD COLUMN agent_session TEXT;
"#;

/// Version 3: conflict repairs, and branches kept for a person.
const V3: &str = r#"
ALTER TABLE attempts ADD COLUMN conflict_repairs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN conflict_paths TEXT;
ALTER TABLE attempts ADD COLUMN keep_branch INTEGER NOT NULL DEFAULT 0;
"#;

/// Version 4: remote closeout.
const V4: &str = r#"
ALTER TABLE items ADD COLUMN push_pending INTEGER NOT NULL DEFAULT 0;
"#;

/// Version 5: reviews, triage, review debt, escalated and awaiting-operator items.
const V5: &str = r#"
ALTER TABLE attempts ADD COLUMN review_cycles INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN review_verdict TEXT;
ALTER TABLE attempts ADD COLUMN review_debt TEXT;
ALTER TABLE items ADD COLUMN feedback TEXT;
ALTER TABLE items ADD COLUMN operator_actions TEXT;
CREATE TABLE debts (
    item        TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    run_id      TEXT NOT NULL,
    commit_id   TEXT NOT NULL,
    base        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    tries       INTEGER NOT NULL DEFAULT 0,
    last_run    TEXT,
    settled_at  TEXT,
    outcome     TEXT,
    PRIMARY KEY (item, attempt)
);
"#;

/// Version 6: the journal's hash chain (issue 12): each row's HMAC over the previous row's
/// and its own (see `chain.rs`). Rows from before stay NULL until a writer with the key seals
/// them.
const V6: &str = r#"
ALTER TABLE events ADD COLUMN mac TEXT;
"#;

/// Errors from bringing a database to this binary's schema.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "open a state database of schema version {found}; this nightshift understands up to {VERSION}: upgrade nightshift"
    )]
    TooNew { found: i64 },
    #[error("migrate the state database")]
    Sql(#[from] rusqlite::Error),
}

/// Brings `conn` forward to [`VERSION`], one transaction per step.
pub fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > VERSION {
        return Err(MigrateError::TooNew { found });
    }
    if found < 1 {
        let tx = conn.transaction()?;
        tx.execute_batch(V1)?;
        tx.pragma_update(None, "user_version", 1)?;
        tx.commit()?;
    }
    if found < 2 {
        let tx = conn.transaction()?;
        tx.execute_batch(V2)?;
        tx.pragma_update(None, "user_version", 2)?;
        tx.commit()?;
    }
    if found < 3 {
        let tx = conn.transaction()?;
        tx.execute_batch(V3)?;
        tx.pragma_update(None, "user_version", 3)?;
        tx.commit()?;
    }
    if found < 4 {
        let tx = conn.transaction()?;
        tx.execute_batch(V4)?;
        tx.pragma_update(None, "user_version", 4)?;
        tx.commit()?;
    }
    if found < 5 {
        let tx = conn.transaction()?;
        tx.execute_batch(V5)?;
        tx.pragma_update(None, "user_version", 5)?;
        tx.commit()?;
    }
    if found < 6 {
        let tx = conn.transaction()?;
        tx.execute_batch(V6)?;
        tx.pragma_update(None, "user_version", 6)?;
        tx.commit()?;
    }
    Ok(())
}
