//! The journal's hash chain (issue 12): every `events` row carries `mac`, an HMAC-SHA256 of
//! (the previous row's MAC, this row), keyed with a secret kept beside the receipt signing key
//! (`<data dir>/nightshift/journal-chain.key`, 0600, out of the agent's reach under
//! confinement). An edit of a row by hand or by an agent (`sqlite3 … "update events …"`), or
//! a row deleted from the middle, breaks the chain at a row that is then named.
//!
//! Rows written before the chain existed (schema 5 and older) are sealed by the first writer
//! that opens the database with a key; after that, a row without a MAC is tampering.
//! Rows cut from the end of the journal, and the file replaced by an older copy of itself or
//! by a database made without the key, are seen against the chain's head, kept outside the
//! database (`head.rs`).

use sha2::{Digest, Sha256};

/// The chain key file's name, beside the receipt signing key.
pub const KEY_FILE: &str = "journal-chain.key";

/// A chain key.
#[derive(Clone)]
pub struct ChainKey([u8; 32]);

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChainKey(…)")
    }
}

impl ChainKey {
    /// A key from 32 bytes (tests).
    pub fn from_bytes(bytes: [u8; 32]) -> ChainKey {
        ChainKey(bytes)
    }

    /// The user's chain key, created (0600, its directory 0700) when there is none.
    pub fn load_or_create() -> Result<ChainKey, crate::receipt::key::KeyError> {
        let path = crate::receipt::key::data_dir()?
            .join("nightshift")
            .join(KEY_FILE);
        crate::receipt::key::load_or_create(&path).map(|k| ChainKey(k.to_bytes()))
    }

    /// The user's chain key if it exists and is private (readers never create one).
    pub fn load() -> Option<ChainKey> {
        let path = crate::receipt::key::data_dir()
            .ok()?
            .join("nightshift")
            .join(KEY_FILE);
        crate::receipt::key::load(&path)
            .ok()
            .map(|k| ChainKey(k.to_bytes()))
    }
}

/// One journal row as the chain covers it.
pub struct Row<'a> {
    pub seq: i64,
    pub run_id: &'a str,
    pub at: &'a str,
    pub kind: &'a str,
    pub item: Option<&'a str>,
    pub attempt: Option<i64>,
    pub data: &'a str,
}

/// HMAC-SHA256 (RFC 2104) of `row` after `prev` (the previous row's MAC, `""` for the first),
/// hex. Each field is length-prefixed, so no two rows encode alike.
pub fn mac(key: &ChainKey, prev: &str, row: &Row<'_>) -> String {
    let mut message = Vec::with_capacity(row.data.len() + 256);
    let mut field = |bytes: &[u8]| {
        message.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        message.extend_from_slice(bytes);
    };
    field(prev.as_bytes());
    field(&row.seq.to_le_bytes());
    field(row.run_id.as_bytes());
    field(row.at.as_bytes());
    field(row.kind.as_bytes());
    field(row.item.unwrap_or("\u{0}none").as_bytes());
    match row.attempt {
        Some(a) => field(&a.to_le_bytes()),
        None => field(b"none"),
    }
    field(row.data.as_bytes());
    hmac_sha256(&key.0, &message)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded = [0u8; BLOCK];
    padded[..key.len()].copy_from_slice(key);
    let (mut inner, mut outer) = (Sha256::new(), Sha256::new());
    inner.update(padded.map(|b| b ^ 0x36));
    inner.update(message);
    outer.update(padded.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Where the chain was first found broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tamper {
    /// The first row that does not hold.
    Row {
        /// Its journal position.
        seq: i64,
        /// Its kind, as the row says now.
        kind: String,
        /// What is wrong with it.
        what: String,
    },
    /// The journal is behind its head outside the database (see `head.rs`): what was found,
    /// in words.
    Head(String),
}

impl std::fmt::Display for Tamper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tamper::Row { seq, kind, what } => write!(f, "journal entry {seq} ({kind}) {what}"),
            Tamper::Head(what) => f.write_str(what),
        }
    }
}

/// How the journal stands against its head outside the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadState {
    /// The head holds; the journal has `ahead` entries after it (appends whose head write a
    /// crash or a concurrent writer cut off; the next writer brings it up to date).
    Holds { ahead: u64 },
    /// There is none, or it is unreadable: a journal from before heads were kept, a data
    /// directory wiped, a repository moved. The next writer writes one.
    Missing,
    /// There is no place for one (no data directory).
    Nowhere,
}

/// What a check of the chain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every row holds (`rows` checked), and the journal is not behind its head.
    Intact { rows: usize, head: HeadState },
    /// No key to check with (a reader where none was ever created).
    NoKey,
    /// The first row that does not hold, or the journal is behind its head.
    Broken(Tamper),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_a_reference_value() {
        // Computed independently: Python's hmac.new(b"\x0b" * 32, b"Hi There", sha256).
        let out = hmac_sha256(&[0x0b; 32], b"Hi There");
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
        );
    }

    #[test]
    fn a_changed_field_or_predecessor_changes_the_mac() {
        let key = ChainKey::from_bytes([7; 32]);
        let row = Row {
            seq: 3,
            run_id: "r",
            at: "t",
            kind: "check_started",
            item: Some("x"),
            attempt: Some(1),
            data: "{}",
        };
        let a = mac(&key, "", &row);
        assert_ne!(a, mac(&key, "00", &row));
        assert_ne!(a, mac(&key, "", &Row { data: "{ }", ..row }));
        assert_ne!(a, mac(&ChainKey::from_bytes([8; 32]), "", &row));
    }
}
