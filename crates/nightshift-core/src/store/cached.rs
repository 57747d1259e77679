//! Statements through the connection's statement cache. Every journal entry runs a dozen
//! statements (the insert, its MAC, the fold's updates) and every step reads a few rows:
//! preparing each anew cost a fifth of the engine's CPU in the orchestration bench (issue 14),
//! parsing the same SQL text thousands of times a night. The SQL text is the cache key, so a
//! statement built with `format!` from constant parts is cached like a literal.

use rusqlite::{Connection, Params, Row};

/// How many prepared statements a connection keeps: more than the store's distinct
/// statements, so none is evicted and prepared again within a night.
const CAPACITY: usize = 128;

/// Sets a new connection up for its statements to stay prepared: the cache, and the query
/// planner's stability guarantee (QPSG). Without it SQLite plans some statements with their
/// bound values (a `LIMIT ?`, `?1 IS NULL`) and then re-prepares such a statement at every
/// bind, past the cache; with it a statement keeps one plan, as it does when its values are
/// not known at planning anyway.
pub(super) fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_prepared_statement_cache_capacity(CAPACITY);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// `execute` and `query_row` as [`Connection`]'s, through its statement cache.
pub(super) trait Cached {
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// How often the cached `SELECT … LIMIT ?1` was re-prepared over five binds.
    fn reprepares(conn: &Connection) -> i32 {
        let sql = "SELECT x FROM t WHERE x > ?1 ORDER BY x LIMIT ?2";
        conn.execute_batch(
            "CREATE TABLE t (x INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3);",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for limit in 1..=5_i64 {
            let rows: Vec<i64> = conn
                .prepare_cached(sql)
                .and_then(|mut s| s.query_map([0, limit], |r| r.get(0))?.collect())
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(rows.len(), usize::try_from(limit.min(3)).unwrap_or(0));
        }
        conn.prepare_cached(sql)
            .map(|s| s.get_status(StatementStatus::RePrepare))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_configured_connection_never_re_prepares_a_cached_statement_at_a_bind() {
        let plain = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        // The bundled SQLite re-prepares at each new bound LIMIT: what `configure` prevents.
        assert!(
            reprepares(&plain) > 0,
            "the bundled SQLite no longer re-prepares a bound LIMIT"
        );
        let configured = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        configure(&configured).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reprepares(&configured), 0);
    }
}
