//! The receipts a report reads: the files of one run as bytes, and the public key to verify
//! them with. Loading is the only I/O of the morning report; [`super::build`] is pure over it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};

use crate::receipt::{self, Receipt, key};
use crate::workspace::Workspace;

/// One run's receipt files, read whole, and the key they are verified against.
#[derive(Debug, Clone, Default)]
pub struct ReceiptSet {
    /// `(item, attempt)` → (path relative to the repository root, content).
    pub files: BTreeMap<(String, u32), (String, Vec<u8>)>,
    /// The public key, or why there is none.
    pub key: Option<VerifyingKey>,
    /// Why the key could not be read, when it could not.
    pub key_error: Option<String>,
}

/// What loading receipts can fail with (a missing directory is not a failure: no receipts).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("read the receipts in {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads `.nightshift/receipts/<run_id>/*.json` and the repository's public key (or `key_file`).
pub fn load(
    ws: &Workspace,
    run_id: &str,
    key_file: Option<&Path>,
) -> Result<ReceiptSet, LoadError> {
    let dir = ws.dir().join("receipts").join(run_id);
    let mut set = ReceiptSet::default();
    let key_path = key_file
        .map(Path::to_path_buf)
        .unwrap_or_else(|| ws.dir().join(key::PUBLIC_FILE));
    match key::read_public(&key_path) {
        Ok(k) => set.key = Some(k),
        Err(e) => set.key_error = Some(e.to_string()),
    }
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(set),
        Err(source) => return Err(LoadError::Io { path: dir, source }),
    };
    for entry in entries {
        let entry = entry.map_err(|source| LoadError::Io {
            path: dir.clone(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((item, attempt)) = parse_name(&name) else {
            continue;
        };
        let path = entry.path();
        let bytes = std::fs::read(&path).map_err(|source| LoadError::Io {
            path: path.clone(),
            source,
        })?;
        let rel = path
            .strip_prefix(ws.root())
            .unwrap_or(&path)
            .display()
            .to_string();
        set.files.insert((item, attempt), (rel, bytes));
    }
    Ok(set)
}

/// `<item>-a<N>.json` → (item, N).
fn parse_name(name: &str) -> Option<(String, u32)> {
    let stem = name.strip_suffix(".json")?;
    let (item, attempt) = stem.rsplit_once("-a")?;
    Some((item.to_owned(), attempt.parse().ok()?))
}

/// SHA-256 of a receipt file's bytes, hex: the digest the report names it by.
pub fn digest(bytes: &[u8]) -> String {
    crate::session::hex(&Sha256::digest(bytes))
}

/// A receipt file checked against the key.
pub(super) enum Checked {
    Valid(Box<Receipt>),
    Invalid(String),
    NoKey(String),
}

pub(super) fn check(set: &ReceiptSet, bytes: &[u8]) -> Checked {
    let Some(key) = &set.key else {
        return Checked::NoKey(
            set.key_error
                .clone()
                .unwrap_or_else(|| "no public key".into()),
        );
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return Checked::Invalid("the file is not UTF-8".into()),
    };
    match receipt::verify(text, key) {
        Ok(r) => Checked::Valid(Box::new(r)),
        Err(e) => Checked::Invalid(e.to_string()),
    }
}
