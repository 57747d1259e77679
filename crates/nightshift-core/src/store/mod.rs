//! The store: `.nightshift/state.db`, an SQLite file in WAL mode with `synchronous=FULL`.
//! The journal (`events`) and the state it folds into (`runs`, `items`, `attempts`) change
//! together, one transaction per transition. One writer (the engine); readers open read-only.

mod cached;
pub mod chain;
mod event;
mod fold;
pub mod head;
mod lock;
mod phase;
#[cfg(test)]
mod phase_tests;
mod schema;
mod state;

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use cached::Cached;

pub use event::{
    CheckStage, CheckSummary, Event, EventKind, Metric, Outcome, PlannedItem, Scope, Spend,
};
pub use lock::{LockError, RunLock, read_holder};
pub use phase::{Phase, Refused, UnknownPhase, transition};
pub use schema::{MigrateError, VERSION as SCHEMA_VERSION};
pub use state::{ItemState, PauseCause, RunState, UnknownName};

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("open the state database {path}")]
    Open {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Migrate(#[from] MigrateError),
    #[error("query the state database")]
    Sql(#[from] rusqlite::Error),
    #[error("decode journal entry {seq}")]
    Decode {
        seq: i64,
        #[source]
        source: serde_json::Error,
    },
    #[error("encode a journal entry")]
    Encode(#[source] serde_json::Error),
    #[error(
        "write the state database {path}: it was deleted or replaced while this engine had it open (it would write on into an unlinked file)"
    )]
    Replaced { path: String },
    /// The journal's hash chain does not hold (issue 12): a row was edited or removed, or the
    /// journal is behind its head outside the database.
    #[error("trust the state database: store_tampered: {0}")]
    Tampered(chain::Tamper),
    /// An event its attempt's phase does not allow (store/phase.rs): nothing was recorded.
    #[error(transparent)]
    Refused(#[from] phase::Refused),
    /// A name (a state, a verdict) this build does not know.
    #[error(transparent)]
    Unknown(#[from] state::UnknownName),
}

/// What is wrong with a state database that the next engine start would meet again, so a
/// restart would not help (issue 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// Deleted or replaced under a running engine.
    Replaced,
    /// Not a database, or damaged.
    Corrupt,
    /// Read-only, or cannot be opened for writing.
    ReadOnly,
    /// The disk is full.
    DiskFull,
}

impl StoreError {
    fn sqlite_code(&self) -> Option<rusqlite::ErrorCode> {
        let e = match self {
            StoreError::Open { source, .. } | StoreError::Sql(source) => source,
            StoreError::Migrate(MigrateError::Sql(source)) => source,
            _ => return None,
        };
        e.sqlite_error_code()
    }

    /// Whether this error is about the database file itself, and which way.
    pub fn unusable(&self) -> Option<Unusable> {
        use rusqlite::ErrorCode as C;
        if matches!(self, StoreError::Replaced { .. }) {
            return Some(Unusable::Replaced);
        }
        match self.sqlite_code()? {
            C::NotADatabase | C::DatabaseCorrupt => Some(Unusable::Corrupt),
            C::ReadOnly | C::CannotOpen | C::PermissionDenied => Some(Unusable::ReadOnly),
            C::DiskFull => Some(Unusable::DiskFull),
            _ => None,
        }
    }

    /// One line for a person: what is wrong with `path` and what to do; `None` when the error
    /// is not about the file.
    pub fn remedy(&self, path: &str) -> Option<String> {
        Some(match self.unusable()? {
            Unusable::Replaced => format!(
                "write the state database {path}: it was deleted or replaced while the engine was writing it, so the engine stopped; run `nightshift run` again (what shipped is rebuilt from the target's Nightshift-Item trailers)"
            ),
            Unusable::Corrupt => format!(
                "use the state database {path}: it is corrupt ({}); move it aside (`mv {path} {path}.corrupt`) and run again (what shipped is rebuilt from the target's Nightshift-Item trailers)",
                self.root_cause()
            ),
            Unusable::ReadOnly => format!(
                "write the state database {path}: it is read-only ({}); make it and its directory writable (`chmod u+w {path} .nightshift`; for root, an immutable flag: `chattr -i {path}`, or a read-only mount) and run again",
                self.root_cause()
            ),
            Unusable::DiskFull => format!(
                "write the state database {path}: the disk is full; free some space and run again"
            ),
        })
    }

    fn root_cause(&self) -> String {
        let mut last: &dyn std::error::Error = self;
        while let Some(next) = last.source() {
            last = next;
        }
        last.to_string()
    }
}

/// A run as the state tables hold it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRow {
    pub id: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub target: String,
    pub base: String,
    pub max_iterations: u32,
    pub max_attempts: u32,
    pub state: RunState,
    pub halt_reason: Option<String>,
    pub exit_code: Option<i32>,
    pub pass: u32,
    pub spent_tokens: f64,
    pub spent_turns: u32,
    pub spent_usd: f64,
    /// Dispatch is paused until this time (epoch seconds), e.g. a usage limit's reset.
    pub paused_until: Option<i64>,
    pub pause_reason: Option<String>,
}

impl RunRow {
    /// Whether the run is still open (not finished).
    pub fn is_running(&self) -> bool {
        self.state == RunState::Running
    }

    /// Why the run is paused, if it is.
    pub fn pause_cause(&self) -> Option<PauseCause> {
        self.pause_reason.as_deref().map(PauseCause::of)
    }
}

/// An item of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ItemRow {
    pub id: String,
    pub position: u32,
    pub prompt: String,
    pub check_command: Option<String>,
    pub state: ItemState,
    pub attempts: u32,
    pub allowed: u32,
    pub current_attempt: Option<u32>,
    pub reason: Option<String>,
    pub preserve_ref: Option<String>,
    pub shipped_commit: Option<String>,
    pub shipped_pass: Option<u32>,
    pub spent_tokens: f64,
    pub spent_turns: u32,
    pub spent_usd: f64,
    /// A push to the remote is still owed for this item's commit.
    pub push_pending: bool,
    /// Findings the item's next attempt starts from (a debt review reopened it).
    pub feedback: Option<String>,
    /// For `awaiting_operator`: what only a person can do, one per line.
    pub operator_actions: Option<String>,
}

/// One attempt at an item.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AttemptRow {
    pub item: String,
    pub attempt: u32,
    pub base: String,
    pub branch: String,
    pub worktree: String,
    pub phase: Phase,
    pub iteration: u32,
    pub candidate: Option<String>,
    pub merged: Option<String>,
    pub onto: Option<String>,
    pub preserve_ref: Option<String>,
    pub reason: Option<String>,
    pub worktree_present: bool,
    pub last_check_log: Option<String>,
    /// Stall nudges given in this attempt.
    pub nudges: u32,
    /// Sessions of this attempt that ended on a rate limit or an environment fault.
    pub env_retries: u32,
    /// How its last session ended (`completed`, `stalled`, …).
    pub last_outcome: Option<String>,
    /// The agent CLI's own session id, for resuming it.
    pub agent_session: Option<String>,
    /// Conflict repair iterations given to this attempt.
    pub conflict_repairs: u32,
    /// The paths of the last conflict, one per line.
    pub conflict_paths: Option<String>,
    /// Whether teardown keeps the attempt's branch for a person.
    pub keep_branch: bool,
    /// Review verdicts this attempt got (each spends a cycle).
    pub review_cycles: u32,
    /// The last review's ending as JSON (`reviewer`, `outcome`, `verdict`, `error`).
    pub review_verdict: Option<String>,
    /// Why the attempt ships without its review (becomes a debt when it integrates).
    pub review_debt: Option<String>,
}

/// An obligation created by shipping work without its review; it blocks until paid.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DebtRow {
    pub item: String,
    pub attempt: u32,
    /// The run that shipped the work.
    pub run_id: String,
    /// The commit that landed on the target, and what it landed on (the diff to review).
    pub commit: String,
    pub base: String,
    pub reason: String,
    /// `open`, `paid` or `reopened`.
    pub state: String,
    pub created_at: String,
    /// Debt reviews tried in `last_run`.
    pub tries: u32,
    pub last_run: Option<String>,
    pub settled_at: Option<String>,
    pub outcome: Option<String>,
}

impl DebtRow {
    pub fn is_open(&self) -> bool {
        self.state == "open"
    }
}

impl AttemptRow {
    /// Whether the attempt has reached a verdict (shipped or failed).
    pub fn is_finished(&self) -> bool {
        self.phase.is_finished()
    }
}

/// See [`Store::since`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// No run was opened.
    Nothing,
    /// This run was opened and has not halted.
    Open(String),
    /// This run was opened and then halted.
    Halted {
        run_id: String,
        halt: crate::halt::HaltReason,
    },
}

/// The state database.
pub struct Store {
    conn: Connection,
    /// The writer's file and its identity (device, inode) when opened: every transaction checks
    /// that the path still names that file (issue 13: deleted mid-run, the engine wrote on into
    /// an unlinked file). `None` for readers.
    identity: Option<(std::path::PathBuf, (u64, u64))>,
    /// The journal chain's key (issue 12); `None` where there is none (rows are then written
    /// without a MAC, and the chain cannot be checked).
    chain: Option<chain::ChainKey>,
    /// Where the journal's head outside the database lives (`head.rs`); `None` where there is
    /// no place for one.
    head: Option<std::path::PathBuf>,
    /// The head this writer last wrote or found (`None`: not known), so an append counts the
    /// journal's entries without reading it.
    last_head: Option<head::Head>,
    /// `PRAGMA data_version` when [`Store::written_by_others`] last looked: it changes only when
    /// another connection commits to the database. `None`: not looked yet.
    data_version: std::cell::Cell<Option<i64>>,
}

/// The journal's kind index (made with [`INDEXES`]).
const BY_KIND: &str = "events_kind";
/// The journal's item index.
const BY_ITEM: &str = "events_item";

/// A journal query: the columns [`Store::events_where`] decodes, through `index` when one is
/// named (`INDEXED BY`), matching `condition` (SQL after `WHERE`, with its ordering).
fn events_sql(index: Option<&str>, condition: &str) -> String {
    let by = index
        .map(|i| format!(" INDEXED BY {i}"))
        .unwrap_or_default();
    format!("SELECT seq, run_id, at, kind, data FROM events{by} WHERE {condition}")
}

/// `?from, …` for `n` values.
fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`Store::run_events`]'s condition, read through the kind index: left to itself, SQLite
/// walks the run's whole journal in `seq` order for the `ORDER BY` (issue 14: the operator
/// messages `told` reads before every session made a night quadratic).
fn run_events_condition(kinds: usize) -> String {
    format!(
        "run_id = ?1 AND kind IN ({}) ORDER BY seq",
        placeholders(2, kinds)
    )
}

/// [`Store::item_events`]'s condition: the item's few entries, read through the item index
/// (as in [`run_events_condition`]), then sorted.
fn item_events_condition(kinds: usize) -> String {
    format!(
        "run_id = ?1 AND item = ?2 AND kind IN ({}) ORDER BY seq",
        placeholders(3, kinds)
    )
}

/// Indexes the journal's and the state's queries use, so no query of a step reads the whole
/// run (issue 14). Not part of the versioned schema: an index changes no data, an older
/// nightshift reading the database ignores it, and every writer open creates what is missing.
const INDEXES: &str = r#"
CREATE INDEX IF NOT EXISTS events_item ON events(run_id, item, attempt, seq);
CREATE INDEX IF NOT EXISTS events_kind ON events(run_id, kind, seq);
CREATE INDEX IF NOT EXISTS items_id ON items(id);
CREATE INDEX IF NOT EXISTS items_state ON items(run_id, state, position);
CREATE INDEX IF NOT EXISTS attempts_item ON attempts(item, attempt);
"#;

/// The chain key a writer uses: the user's (created on first use); a fixed one in unit tests.
fn writer_key() -> Option<chain::ChainKey> {
    if cfg!(test) {
        return Some(chain::ChainKey::from_bytes([42; 32]));
    }
    chain::ChainKey::load_or_create().ok()
}

/// The (device, inode) of `path`, if it exists.
fn identity_of(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Store {
    /// Opens (creating if needed) the database for writing, migrates it, and checks the
    /// journal's hash chain and its head: a row edited or removed, or entries cut from the end
    /// (or the file replaced by an older copy), is [`StoreError::Tampered`]. A head that is
    /// missing or behind the journal is written.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let mut store = Store::open_unchecked(path, writer_key())?;
        let (verdict, last) = store.check_chain()?;
        match verdict {
            chain::Verdict::Broken(tamper) => return Err(StoreError::Tampered(tamper)),
            chain::Verdict::Intact {
                head: chain::HeadState::Holds { ahead: 0 },
                ..
            } => store.last_head = last,
            chain::Verdict::Intact { .. } => {
                if let Some(last) = last {
                    store.write_head(&last);
                    store.last_head = Some(last);
                }
            }
            chain::Verdict::NoKey => {}
        }
        Ok(store)
    }

    /// Opens for writing with `key`, sealing rows from before the chain, without checking it.
    /// A database that did not exist (or an empty file) gets a fresh head: whatever head a
    /// database at this path left is not its own (a person moved the old one aside to start
    /// afresh, as `store_tampered` tells them to).
    pub fn open_unchecked(path: &Path, key: Option<chain::ChainKey>) -> Result<Store, StoreError> {
        // An empty file is no database yet (SQLite makes one in it), as a missing one.
        let existed = std::fs::metadata(path).is_ok_and(|m| m.len() > 0);
        let mut conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        cached::configure(&conn)?;
        schema::migrate(&mut conn)?;
        conn.execute_batch(INDEXES)?;
        let identity = identity_of(path).map(|id| (path.to_owned(), id));
        let head = key.as_ref().and_then(|_| head::path_for(path));
        let store = Store {
            conn,
            identity,
            chain: key,
            head,
            last_head: None,
            data_version: std::cell::Cell::new(None),
        };
        if !existed {
            store.write_head(&head::Head::empty());
        }
        store.seal_legacy()?;
        Ok(store)
    }

    /// Seals a journal that has no MAC at all yet (written before schema 6): the rows are
    /// trusted as they are now, as they were before. Not when a head outside the database
    /// names entries: the journal had MACs then, so one without any replaced it.
    fn seal_legacy(&self) -> Result<(), StoreError> {
        let Some(key) = &self.chain else {
            return Ok(());
        };
        if let Some(path) = &self.head
            && let head::Read::Head(h) = head::read(path)
            && h.count > 0
        {
            return Ok(());
        }
        let chained: bool = self.conn.query_row_cached(
            "SELECT EXISTS (SELECT 1 FROM events WHERE mac IS NOT NULL)",
            [],
            |r| r.get(0),
        )?;
        if chained {
            return Ok(());
        }
        let tx = self.conn.unchecked_transaction()?;
        let mut prev = String::new();
        let rows = chain_rows(&tx)?;
        for row in rows {
            prev = chain::mac(key, &prev, &row.as_row());
            tx.execute_cached(
                "UPDATE events SET mac = ?1 WHERE seq = ?2",
                params![prev, row.seq],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Checks the journal's hash chain, row by row: the first row whose MAC does not hold
    /// (edited by hand or by an agent, or after a removed row), or that lost its MAC, is named;
    /// then the journal against its head outside the database: a journal behind it (entries
    /// cut from its end, an older copy of the file, another database) is named too.
    pub fn verify_chain(&self) -> Result<chain::Verdict, StoreError> {
        Ok(self.check_chain()?.0)
    }

    /// [`Store::verify_chain`], and the journal's last entry as a head.
    fn check_chain(&self) -> Result<(chain::Verdict, Option<head::Head>), StoreError> {
        let Some(key) = self.chain.clone().or_else(chain::ChainKey::load) else {
            return Ok((chain::Verdict::NoKey, None));
        };
        // The head first: it is written after the journal commits, so a head read before the
        // journal is never ahead of it (a concurrent writer cannot make this read a false
        // tampering).
        let found_head = self.head.as_deref().map(head::read);
        let named = match &found_head {
            Some(head::Read::Head(h)) if h.count > 0 => Some(h.seq),
            _ => None,
        };
        let rows = chain_rows(&self.conn)?;
        let mut prev = String::new();
        let mut chained = false;
        let count = rows.len();
        let mut end = head::JournalEnd::default();
        for row in rows {
            end.count += 1;
            if Some(row.seq) == named {
                end.at_head = Some(head::AtHead {
                    kind: row.kind.clone(),
                    mac: row.mac.clone(),
                    count: end.count,
                });
            }
            let Some(found) = &row.mac else {
                if chained {
                    return Ok((
                        chain::Verdict::Broken(chain::Tamper::Row {
                            seq: row.seq,
                            kind: row.kind,
                            what: "has lost its MAC".into(),
                        }),
                        None,
                    ));
                }
                end.last = Some((row.seq, row.kind));
                continue;
            };
            let expected = chain::mac(&key, &prev, &row.as_row());
            if *found != expected {
                let what = if chained {
                    "does not match its MAC: it, or the entry before it, was edited or removed"
                } else {
                    "does not match its MAC: it was edited"
                };
                return Ok((
                    chain::Verdict::Broken(chain::Tamper::Row {
                        seq: row.seq,
                        kind: row.kind,
                        what: what.into(),
                    }),
                    None,
                ));
            }
            chained = true;
            prev = expected;
            end.last = Some((row.seq, row.kind));
        }
        let last = Some(match &end.last {
            Some((seq, _)) => head::Head {
                seq: *seq,
                count: end.count,
                mac: prev,
            },
            None => head::Head::empty(),
        });
        let head = match found_head {
            None => chain::HeadState::Nowhere,
            Some(head::Read::Missing | head::Read::Unreadable) => chain::HeadState::Missing,
            Some(head::Read::Head(h)) => match head::compare(&h, &end) {
                Ok(ahead) => chain::HeadState::Holds { ahead },
                Err(tamper) => return Ok((chain::Verdict::Broken(tamper), None)),
            },
        };
        Ok((chain::Verdict::Intact { rows: count, head }, last))
    }

    /// The heads an append checks the journal against (see [`follow_heads`]).
    fn heads_to_follow(&self) -> Vec<head::Head> {
        let Some(path) = &self.head else {
            return Vec::new();
        };
        let mut heads = Vec::new();
        if let head::Read::Head(h) = head::read(path) {
            heads.push(h);
        }
        heads.extend(self.last_head.clone());
        heads.retain(|h| h.count > 0);
        heads
    }

    /// Replaces the journal's head outside the database with `head`, unless the head there is
    /// already further (a concurrent writer's). Best effort: the journal is durable already, and
    /// a head that could not be written reads as behind it, which is no tampering.
    fn write_head(&self, head: &head::Head) {
        let Some(path) = &self.head else {
            return;
        };
        if head.count > 0
            && let head::Read::Head(there) = head::read(path)
            && there.seq >= head.seq
        {
            return;
        }
        let _ = head::write(path, head);
    }

    /// Fails when the file this store was opened on is no longer at its path.
    fn check_identity(&self) -> Result<(), StoreError> {
        match &self.identity {
            Some((path, id)) if identity_of(path) != Some(*id) => Err(StoreError::Replaced {
                path: path.display().to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Whether another connection (another process: an agent's `sqlite3`, `nightshift tell`)
    /// may have committed to the database since the last call; `true` on the first call. What
    /// this connection writes does not count (SQLite's `PRAGMA data_version`).
    pub fn written_by_others(&self) -> Result<bool, StoreError> {
        let now: i64 = self
            .conn
            .query_row_cached("PRAGMA data_version", [], |r| r.get(0))?;
        Ok(self.data_version.replace(Some(now)) != Some(now))
    }

    /// Opens the database read-only (for `status`, `log` and other readers).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.display().to_string(),
            source,
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        cached::configure(&conn)?;
        let found: i64 = conn.query_row_cached("PRAGMA user_version", [], |r| r.get(0))?;
        if found > schema::VERSION {
            return Err(MigrateError::TooNew { found }.into());
        }
        Ok(Store {
            conn,
            identity: None,
            chain: None,
            head: head::path_for(path),
            last_head: None,
            data_version: std::cell::Cell::new(None),
        })
    }

    /// Appends `kind` to the journal and applies it to the state, in one transaction.
    pub fn record(&mut self, run_id: &str, at: &str, kind: EventKind) -> Result<Event, StoreError> {
        self.check_identity()?;
        if crate::failpoint::disk_full() {
            return Err(StoreError::Sql(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                Some("database or disk is full (injected)".into()),
            )));
        }
        let data = serde_json::to_string(&kind).map_err(StoreError::Encode)?;
        let (item, attempt) = kind.item_attempt();
        // The heads this append must not fall behind: the one outside the database (read
        // before the journal, like every check of it) and the one this writer last wrote.
        let heads = self.heads_to_follow();
        let tx = self.conn.transaction()?;
        tx.execute_cached(
            "INSERT INTO events (run_id, at, kind, item, attempt, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![run_id, at, kind.name(), item, attempt, data],
        )?;
        let seq = tx.last_insert_rowid();
        // After the insert, which took the write lock (a read first could not be upgraded
        // once another writer committed).
        follow_heads(&tx, &heads, seq)?;
        let mut new_head = None;
        if let Some(key) = &self.chain {
            let (prev_seq, prev): (i64, String) = tx
                .query_row_cached(
                    "SELECT seq, COALESCE(mac, '') FROM events WHERE seq < ?1 ORDER BY seq DESC LIMIT 1",
                    [seq],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?
                .unwrap_or((0, String::new()));
            let mac = chain::mac(
                key,
                &prev,
                &chain::Row {
                    seq,
                    run_id,
                    at,
                    kind: kind.name(),
                    item,
                    attempt: attempt.map(i64::from),
                    data: &data,
                },
            );
            tx.execute_cached(
                "UPDATE events SET mac = ?1 WHERE seq = ?2",
                params![mac, seq],
            )?;
            // The entries up to this one: one more than this writer's last head when that was
            // the entry before (the common case, no read of the journal), else counted.
            if self.head.is_some() {
                let count = match &self.last_head {
                    Some(h) if h.seq == prev_seq => h.count + 1,
                    _ => tx
                        .query_row_cached("SELECT COUNT(*) FROM events", [], |r| {
                            r.get::<_, i64>(0)
                        })?
                        .unsigned_abs(),
                };
                new_head = Some(head::Head { seq, count, mac });
            }
        }
        fold::apply(&tx, run_id, at, &kind)?;
        tx.commit()?;
        // Every journaled kind, whoever records it (the engine, its teardown and receipt hooks,
        // `accept`, `tell`), passes its failpoint right after it is durable — before the head
        // outside the database follows it, so every crash point also leaves the head behind
        // the journal by this entry, as a crash between the two would.
        crate::failpoint::hit(kind.name());
        if let Some(h) = new_head {
            self.write_head(&h);
            self.last_head = Some(h);
        }
        Ok(Event {
            seq,
            run_id: run_id.to_owned(),
            at: at.to_owned(),
            kind,
        })
    }

    /// The most recently started run (journal order).
    pub fn latest_run(&self) -> Result<Option<RunRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                &format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY rowid DESC LIMIT 1"),
                [],
                run_row,
            )
            .optional()?)
    }

    /// The newest run that has not finished (journal order, not the wall clock, which may
    /// step backwards).
    pub fn unfinished_run(&self) -> Result<Option<RunRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE state = 'running' ORDER BY rowid DESC LIMIT 1"),
                [],
                run_row,
            )
            .optional()?)
    }

    /// A run by id.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [run_id],
                run_row,
            )
            .optional()?)
    }

    /// The items of a run, in plan order.
    pub fn items(&self, run_id: &str) -> Result<Vec<ItemRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {ITEM_COLUMNS} FROM items WHERE run_id = ?1 ORDER BY position"
        ))?;
        let rows = stmt.query_map([run_id], item_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One item of a run (its primary key: no read of the other items).
    pub fn item(&self, run_id: &str, id: &str) -> Result<Option<ItemRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                &format!("SELECT {ITEM_COLUMNS} FROM items WHERE run_id = ?1 AND id = ?2"),
                params![run_id, id],
                item_row,
            )
            .optional()?)
    }

    /// The first item of a run (plan order) in `state`: what the scheduler looks for at every
    /// step, without reading the other items.
    pub fn first_item(
        &self,
        run_id: &str,
        state: ItemState,
    ) -> Result<Option<ItemRow>, StoreError> {
        let state = state.as_str();
        Ok(self
            .conn
            .query_row_cached(
                &format!(
                    "SELECT {ITEM_COLUMNS} FROM items WHERE run_id = ?1 AND state = ?2
                     ORDER BY position LIMIT 1"
                ),
                params![run_id, state],
                item_row,
            )
            .optional()?)
    }

    /// The first `limit` items of a run (plan order) in `state`.
    pub fn items_in(
        &self,
        run_id: &str,
        state: ItemState,
        limit: usize,
    ) -> Result<Vec<ItemRow>, StoreError> {
        // The limit is written into the SQL, not bound: SQLite re-prepares a statement each
        // time a value is bound to a `LIMIT ?` (it plans with the value), which undid the
        // statement cache on this read of every step.
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {ITEM_COLUMNS} FROM items WHERE run_id = ?1 AND state = ?2
             ORDER BY position LIMIT {limit}"
        ))?;
        let rows = stmt.query_map(params![run_id, state.as_str()], item_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many items a run has, and how many of them are in `state`.
    pub fn count_items(
        &self,
        run_id: &str,
        state: ItemState,
    ) -> Result<(usize, usize), StoreError> {
        let state = state.as_str();
        let (all, in_state): (i64, i64) = self.conn.query_row_cached(
            "SELECT COUNT(*), COALESCE(SUM(state = ?2), 0) FROM items WHERE run_id = ?1",
            params![run_id, state],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((
            usize::try_from(all).unwrap_or(0),
            usize::try_from(in_state).unwrap_or(0),
        ))
    }

    /// The attempts of a run, oldest first.
    pub fn attempts(&self, run_id: &str) -> Result<Vec<AttemptRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT item, attempt, base, branch, worktree, phase, iteration, candidate, merged, onto,
                    preserve_ref, reason, worktree_present, last_check_log, nudges, env_retries, last_outcome, agent_session,
                    conflict_repairs, conflict_paths, keep_branch, review_cycles, review_verdict, review_debt
             FROM attempts WHERE run_id = ?1 ORDER BY rowid",
        )?;
        let rows = stmt.query_map([run_id], attempt_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Attempts of any run whose worktree may still exist on disk.
    pub fn lingering_attempts(&self) -> Result<Vec<(String, AttemptRow)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT item, attempt, base, branch, worktree, phase, iteration, candidate, merged, onto,
                    preserve_ref, reason, worktree_present, last_check_log, nudges, env_retries, last_outcome, agent_session,
                    conflict_repairs, conflict_paths, keep_branch, review_cycles, review_verdict, review_debt, run_id
             FROM attempts WHERE worktree_present = 1 ORDER BY rowid",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(24)?, attempt_row(r)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One attempt.
    pub fn attempt(
        &self,
        run_id: &str,
        item: &str,
        attempt: u32,
    ) -> Result<Option<AttemptRow>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT item, attempt, base, branch, worktree, phase, iteration, candidate, merged, onto,
                        preserve_ref, reason, worktree_present, last_check_log, nudges, env_retries, last_outcome, agent_session,
                    conflict_repairs, conflict_paths, keep_branch, review_cycles, review_verdict, review_debt
                 FROM attempts WHERE run_id = ?1 AND item = ?2 AND attempt = ?3",
                params![run_id, item, attempt],
                attempt_row,
            )
            .optional()?)
    }

    /// The highest attempt number any run has used for `item` (attempt numbers never repeat,
    /// so refs and worktree paths named after them never collide across runs).
    pub fn max_attempt_number(&self, item: &str) -> Result<u32, StoreError> {
        Ok(self.conn.query_row_cached(
            "SELECT COALESCE(MAX(attempt), 0) FROM attempts WHERE item = ?1",
            [item],
            |r| r.get(0),
        )?)
    }

    /// The run that shipped `item`, if any finished or running run did (a shipment whose debt
    /// review reopened the item does not count).
    pub fn shipped_by(&self, item: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row_cached(
                "SELECT run_id FROM items WHERE id = ?1 AND state = 'shipped' AND shipped_commit IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM debts d WHERE d.item = items.id AND d.state = 'reopened'
                                   AND d.commit_id = items.shipped_commit)
                 ORDER BY rowid DESC LIMIT 1",
                [item],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Whether any run has planned `item` (the store has a record of it).
    pub fn knows_item(&self, item: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row_cached("SELECT 1 FROM items WHERE id = ?1 LIMIT 1", [item], |_| {
                Ok(())
            })
            .optional()?
            .is_some())
    }

    /// The journal entries of one attempt of one run, oldest first (`kind`: only that kind).
    pub fn attempt_events(
        &self,
        run_id: &str,
        item: &str,
        attempt: u32,
        kind: Option<&str>,
    ) -> Result<Vec<Event>, StoreError> {
        // Two statements, not `(?4 IS NULL OR kind = ?4)`: SQLite plans that with the bound
        // value and so re-prepares it at every bind, past the statement cache.
        match kind {
            Some(kind) => self.events_where(
                None,
                "run_id = ?1 AND item = ?2 AND attempt = ?3 AND kind = ?4 ORDER BY seq",
                params![run_id, item, attempt, kind],
                |_| true,
            ),
            None => self.events_where(
                None,
                "run_id = ?1 AND item = ?2 AND attempt = ?3 ORDER BY seq",
                params![run_id, item, attempt],
                |_| true,
            ),
        }
    }

    /// Every review debt, oldest first (all runs).
    pub fn debts(&self) -> Result<Vec<DebtRow>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT item, attempt, run_id, commit_id, base, reason, state, created_at, tries, last_run,
                    settled_at, outcome
             FROM debts ORDER BY created_at, rowid",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(DebtRow {
                item: r.get(0)?,
                attempt: r.get(1)?,
                run_id: r.get(2)?,
                commit: r.get(3)?,
                base: r.get(4)?,
                reason: r.get(5)?,
                state: r.get(6)?,
                created_at: r.get(7)?,
                tries: r.get(8)?,
                last_run: r.get(9)?,
                settled_at: r.get(10)?,
                outcome: r.get(11)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The open debts, oldest first.
    pub fn open_debts(&self) -> Result<Vec<DebtRow>, StoreError> {
        Ok(self.debts()?.into_iter().filter(DebtRow::is_open).collect())
    }

    /// Journal entries after `after_seq` (all runs), oldest first, at most `limit`.
    pub fn events_after(&self, after_seq: i64, limit: usize) -> Result<Vec<Event>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.events_where(
            None,
            &format!("seq > ?1 ORDER BY seq LIMIT {limit}"),
            [after_seq],
            |_| true,
        )
    }

    /// The position of the newest journal entry (0 when the journal is empty).
    pub fn last_seq(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row_cached("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Where the work journaled after position `after` stands: the run an engine opened
    /// (started or resumed) since, and whether that run has halted since (finished, or stopped
    /// by an operator or its deadline). A supervisor's restarted engine reads it, so it resumes
    /// the run it was started for and never starts a new one (issue 13).
    pub fn since(&self, after: i64) -> Result<Since, StoreError> {
        let events = self.events_where(None, "seq > ?1 ORDER BY seq", [after], |kind| {
            matches!(
                kind,
                "run_started" | "run_resumed" | "run_finished" | "run_stopped"
            )
        })?;
        let mut since = Since::Nothing;
        for event in events {
            since = match (event.kind, since) {
                (EventKind::RunStarted { .. } | EventKind::RunResumed { .. }, _) => {
                    Since::Open(event.run_id)
                }
                (EventKind::RunFinished { halt_reason, .. }, Since::Open(run_id))
                    if run_id == event.run_id =>
                {
                    Since::Halted {
                        run_id,
                        halt: halt_reason,
                    }
                }
                (EventKind::RunStopped { halt_reason, .. }, Since::Open(run_id))
                    if run_id == event.run_id =>
                {
                    Since::Halted {
                        run_id,
                        halt: halt_reason.unwrap_or(crate::halt::HaltReason::OperatorStop),
                    }
                }
                (_, since) => since,
            };
        }
        Ok(since)
    }

    /// The journal entries of one run about `item`, of kind `kind`, after `after_seq`, oldest
    /// first: what a live session polls (cheap: the run index bounds it).
    pub fn item_events_after(
        &self,
        run_id: &str,
        item: &str,
        kind: &str,
        after_seq: i64,
    ) -> Result<Vec<Event>, StoreError> {
        self.events_where(
            None,
            "run_id = ?1 AND seq > ?2 AND kind = ?3 AND item = ?4 ORDER BY seq",
            params![run_id, after_seq, kind, item],
            |_| true,
        )
    }

    /// The journal entries of one run whose kind is one of `kinds`, oldest first (only those
    /// rows are read: the kind index bounds it).
    pub fn run_events(&self, run_id: &str, kinds: &[&str]) -> Result<Vec<Event>, StoreError> {
        let params = std::iter::once(run_id).chain(kinds.iter().copied());
        self.events_where(
            Some(BY_KIND),
            &run_events_condition(kinds.len()),
            rusqlite::params_from_iter(params),
            |kind| kinds.contains(&kind),
        )
    }

    /// The journal entries of one run about `item` (any attempt, or none) whose kind is one of
    /// `kinds`, oldest first (the item index bounds it).
    pub fn item_events(
        &self,
        run_id: &str,
        item: &str,
        kinds: &[&str],
    ) -> Result<Vec<Event>, StoreError> {
        let params = [run_id, item].into_iter().chain(kinds.iter().copied());
        self.events_where(
            Some(BY_ITEM),
            &item_events_condition(kinds.len()),
            rusqlite::params_from_iter(params),
            |kind| kinds.contains(&kind),
        )
    }

    /// The journal entries matching `condition` (SQL after `WHERE`, with its ordering), read
    /// through `index` when one is named, those whose kind `keep` rejects left undecoded.
    fn events_where(
        &self,
        index: Option<&str>,
        condition: &str,
        params: impl rusqlite::Params,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<Event>, StoreError> {
        let mut stmt = match (
            self.conn.prepare_cached(&events_sql(index, condition)),
            index,
        ) {
            (Ok(stmt), _) => stmt,
            // A database a reader opens without the index (made by a writer of an older
            // nightshift) is read without the hint: slower, never refused.
            (Err(_), Some(_)) => self.conn.prepare_cached(&events_sql(None, condition))?,
            (Err(e), None) => return Err(e.into()),
        };
        let rows = stmt.query_map(params, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        let mut events = Vec::new();
        for row in rows {
            let (seq, run_id, at, kind, data) = row?;
            if !keep(&kind) {
                continue;
            }
            let kind =
                serde_json::from_str(&data).map_err(|source| StoreError::Decode { seq, source })?;
            events.push(Event {
                seq,
                run_id,
                at,
                kind,
            });
        }
        Ok(events)
    }

    /// The first state table that is not the fold of the journal (issue 12: the state tables
    /// are derived; an edit of them, such as `update items set check_command='true'`, is
    /// drift), and the first row that differs; `None` when they all are.
    pub fn state_drift(&self) -> Result<Option<String>, StoreError> {
        let mut scratch = Connection::open_in_memory()?;
        cached::configure(&scratch)?;
        schema::migrate(&mut scratch)?;
        let events = self.events_after(0, usize::MAX >> 1)?;
        {
            let tx = scratch.transaction()?;
            for event in &events {
                fold::apply(&tx, &event.run_id, &event.at, &event.kind)?;
            }
            tx.commit()?;
        }
        for (table, order) in STATE_TABLES {
            let (ours, folded) = (
                dump(&self.conn, table, order)?,
                dump(&scratch, table, order)?,
            );
            if ours != folded {
                let row = ours
                    .iter()
                    .zip(folded.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(ours.len().min(folded.len()));
                return Ok(Some(format!(
                    "table {table}, row {} of {} (the journal's fold has {})",
                    row + 1,
                    ours.len(),
                    folded.len()
                )));
            }
        }
        Ok(None)
    }

    /// Rebuilds the state tables from the journal, in one transaction (after [`state_drift`]:
    /// the journal, whose chain holds, is the truth).
    ///
    /// [`state_drift`]: Store::state_drift
    pub fn rebuild_state(&mut self) -> Result<(), StoreError> {
        self.check_identity()?;
        let events = self.events_after(0, usize::MAX >> 1)?;
        let tx = self.conn.transaction()?;
        for (table, _) in STATE_TABLES {
            tx.execute_cached(&format!("DELETE FROM {table}"), [])?;
        }
        for event in &events {
            fold::apply(&tx, &event.run_id, &event.at, &event.kind)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Rebuilds the state tables from the journal in a scratch in-memory database and returns
    /// whether they equal the stored ones. A consistency proof for tests and `doctor`.
    pub fn refold_matches(&self) -> Result<bool, StoreError> {
        let mut scratch = Connection::open_in_memory()?;
        cached::configure(&scratch)?;
        schema::migrate(&mut scratch)?;
        let events = self.events_after(0, usize::MAX >> 1)?;
        {
            let tx = scratch.transaction()?;
            for event in &events {
                fold::apply(&tx, &event.run_id, &event.at, &event.kind)?;
            }
            tx.commit()?;
        }
        for (table, order) in [
            ("runs", "id"),
            ("items", "run_id, id"),
            ("attempts", "run_id, item, attempt"),
            ("debts", "item, attempt"),
        ] {
            if dump(&self.conn, table, order)? != dump(&scratch, table, order)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// A journal row with its MAC, as the chain reads it.
struct ChainRow {
    seq: i64,
    run_id: String,
    at: String,
    kind: String,
    item: Option<String>,
    attempt: Option<i64>,
    data: String,
    mac: Option<String>,
}

impl ChainRow {
    fn as_row(&self) -> chain::Row<'_> {
        chain::Row {
            seq: self.seq,
            run_id: &self.run_id,
            at: &self.at,
            kind: &self.kind,
            item: self.item.as_deref(),
            attempt: self.attempt,
            data: &self.data,
        }
    }
}

/// Refuses to append to a journal behind one of `heads` (entries deleted from its end during
/// a session, the file swapped under this writer): the append would chain onto what is left
/// and carry the head past the cut. `appending` is the entry being appended (not yet
/// committed). Indexed reads, not a scan.
fn follow_heads(
    tx: &rusqlite::Transaction<'_>,
    heads: &[head::Head],
    appending: i64,
) -> Result<(), StoreError> {
    if heads.is_empty() {
        return Ok(());
    }
    let last: Option<(i64, String)> = tx
        .query_row_cached(
            "SELECT seq, kind FROM events WHERE seq < ?1 ORDER BY seq DESC LIMIT 1",
            [appending],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    for h in heads {
        let at: Option<(String, Option<String>)> = tx
            .query_row_cached(
                "SELECT kind, mac FROM events WHERE seq = ?1",
                [h.seq],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        head::check_append(h, last.clone(), at).map_err(StoreError::Tampered)?;
    }
    Ok(())
}

fn chain_rows(conn: &Connection) -> Result<Vec<ChainRow>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, run_id, at, kind, item, attempt, data, mac FROM events ORDER BY seq",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(ChainRow {
            seq: r.get(0)?,
            run_id: r.get(1)?,
            at: r.get(2)?,
            kind: r.get(3)?,
            item: r.get(4)?,
            attempt: r.get(5)?,
            data: r.get(6)?,
            mac: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The tables folded from the journal, and the order they are compared in.
const STATE_TABLES: [(&str, &str); 4] = [
    ("runs", "id"),
    ("items", "run_id, id"),
    ("attempts", "run_id, item, attempt"),
    ("debts", "item, attempt"),
];

const ITEM_COLUMNS: &str = "id, position, prompt, check_command, state, attempts, allowed, current_attempt, reason, preserve_ref, shipped_commit, shipped_pass, spent_tokens, spent_turns, spent_usd, push_pending, feedback, operator_actions";

fn item_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ItemRow> {
    Ok(ItemRow {
        id: r.get(0)?,
        position: r.get(1)?,
        prompt: r.get(2)?,
        check_command: r.get(3)?,
        state: r.get(4)?,
        attempts: r.get(5)?,
        allowed: r.get(6)?,
        current_attempt: r.get(7)?,
        reason: r.get(8)?,
        preserve_ref: r.get(9)?,
        shipped_commit: r.get(10)?,
        shipped_pass: r.get(11)?,
        spent_tokens: r.get(12)?,
        spent_turns: r.get(13)?,
        spent_usd: r.get(14)?,
        push_pending: r.get::<_, i64>(15)? != 0,
        feedback: r.get(16)?,
        operator_actions: r.get(17)?,
    })
}

const RUN_COLUMNS: &str = "id, started_at, finished_at, target, base, max_iterations, max_attempts, state, halt_reason, exit_code, pass, spent_tokens, spent_turns, spent_usd, paused_until, pause_reason";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        started_at: r.get(1)?,
        finished_at: r.get(2)?,
        target: r.get(3)?,
        base: r.get(4)?,
        max_iterations: r.get(5)?,
        max_attempts: r.get(6)?,
        state: r.get(7)?,
        halt_reason: r.get(8)?,
        exit_code: r.get(9)?,
        pass: r.get(10)?,
        spent_tokens: r.get(11)?,
        spent_turns: r.get(12)?,
        spent_usd: r.get(13)?,
        paused_until: r.get(14)?,
        pause_reason: r.get(15)?,
    })
}

fn attempt_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AttemptRow> {
    Ok(AttemptRow {
        item: r.get(0)?,
        attempt: r.get(1)?,
        base: r.get(2)?,
        branch: r.get(3)?,
        worktree: r.get(4)?,
        phase: r.get(5)?,
        iteration: r.get(6)?,
        candidate: r.get(7)?,
        merged: r.get(8)?,
        onto: r.get(9)?,
        preserve_ref: r.get(10)?,
        reason: r.get(11)?,
        worktree_present: r.get::<_, i64>(12)? != 0,
        last_check_log: r.get(13)?,
        nudges: r.get(14)?,
        env_retries: r.get(15)?,
        last_outcome: r.get(16)?,
        agent_session: r.get(17)?,
        conflict_repairs: r.get(18)?,
        conflict_paths: r.get(19)?,
        keep_branch: r.get::<_, i64>(20)? != 0,
        review_cycles: r.get(21)?,
        review_verdict: r.get(22)?,
        review_debt: r.get(23)?,
    })
}

fn dump(conn: &Connection, table: &str, order: &str) -> rusqlite::Result<Vec<Vec<String>>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT * FROM {table} ORDER BY {order}"))?;
    let columns = stmt.column_count();
    let rows = stmt.query_map([], |r| {
        (0..columns)
            .map(|i| {
                r.get::<_, rusqlite::types::Value>(i)
                    .map(|v| format!("{v:?}"))
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests;
