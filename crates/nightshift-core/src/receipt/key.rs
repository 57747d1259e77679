//! The receipt signing key. The private half lives outside every repository, in the user's
//! data directory, readable by the user alone; the public half is written to
//! `.nightshift/receipts.pub` so anyone can verify a receipt.
//!
//! - Private key: `<data dir>/nightshift/receipt-signing.key`, where the data dir is
//!   `$NIGHTSHIFT_DATA_DIR` if set, else `$XDG_DATA_HOME`, else `~/.local/share`
//!   (macOS: `~/Library/Application Support`). Created on first use: the directory 0700, the
//!   file 0600, holding the 32-byte Ed25519 seed as 64 hex digits and a newline. A key file
//!   that others can read or write is refused.
//! - Public key (`receipts.pub`): one line, `ed25519 <64 hex digits>`.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The key file's name inside `<data dir>/nightshift/`.
pub const KEY_FILE: &str = "receipt-signing.key";
/// The public key's file name inside `.nightshift/`.
pub const PUBLIC_FILE: &str = "receipts.pub";

/// Errors from finding, reading or creating a key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "find the data directory: none of NIGHTSHIFT_DATA_DIR, XDG_DATA_HOME, HOME is set to an absolute path"
    )]
    NoDataDir,
    #[error("use the signing key {path}: {what}")]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "use the signing key {path}: it is readable or writable by others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    LoosePermissions { path: PathBuf, mode: u32 },
    #[error("read the key {path}: {what}")]
    Malformed { path: PathBuf, what: String },
    #[error("make a signing key: the system gives no randomness ({0})")]
    Random(String),
}

/// The user's data directory (see the module docs).
pub fn data_dir() -> Result<PathBuf, KeyError> {
    let var = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = var("NIGHTSHIFT_DATA_DIR") {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_DATA_HOME") {
        return Ok(dir);
    }
    let home = var("HOME").ok_or(KeyError::NoDataDir)?;
    if cfg!(target_os = "macos") {
        Ok(home.join("Library").join("Application Support"))
    } else {
        Ok(home.join(".local").join("share"))
    }
}

/// Where the private key lives.
pub fn key_path() -> Result<PathBuf, KeyError> {
    Ok(data_dir()?.join("nightshift").join(KEY_FILE))
}

/// The key at `path`, created (0600, its directory 0700) when there is none.
pub fn load_or_create(path: &Path) -> Result<SigningKey, KeyError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => load(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path),
        Err(source) => Err(KeyError::Io {
            path: path.into(),
            what: "read its metadata",
            source,
        }),
    }
}

/// Reads an existing key, refusing one others can read or write.
pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
    let meta = std::fs::metadata(path).map_err(|source| KeyError::Io {
        path: path.into(),
        what: "read its metadata",
        source,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::LoosePermissions {
            path: path.into(),
            mode,
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| KeyError::Io {
        path: path.into(),
        what: "read it",
        source,
    })?;
    let seed: [u8; 32] = from_hex(text.trim())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| KeyError::Malformed {
            path: path.into(),
            what: "expected 64 hex digits (a 32-byte Ed25519 seed)".into(),
        })?;
    Ok(SigningKey::from_bytes(&seed))
}

fn create(path: &Path) -> Result<SigningKey, KeyError> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| KeyError::Io {
                path: path.into(),
                what: "create its directory",
                source,
            })?;
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let key = SigningKey::from_bytes(&seed);
    // Written under a temporary name and linked into place: a key file is never half-written,
    // and two engines starting at once end up with one key (the loser reads the winner's).
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let io = |what| {
        move |source| KeyError::Io {
            path: path.into(),
            what,
            source,
        }
    };
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io("create it"))?;
        writeln!(file, "{}", crate::session::hex(&seed)).map_err(io("write it"))?;
        file.sync_all().map_err(io("write it"))?;
    }
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load(path),
        Err(source) => Err(io("create it")(source)),
    }
}

/// The public key's text form: `ed25519 <hex>` and a newline.
pub fn public_text(key: &VerifyingKey) -> String {
    format!("ed25519 {}\n", crate::session::hex(key.as_bytes()))
}

/// Reads the text form of a public key.
pub fn parse_public(text: &str, path: &Path) -> Result<VerifyingKey, KeyError> {
    let malformed = |what: &str| KeyError::Malformed {
        path: path.into(),
        what: what.into(),
    };
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let hex = line
        .trim()
        .strip_prefix("ed25519 ")
        .ok_or_else(|| malformed("expected a line `ed25519 <64 hex digits>`"))?;
    let bytes: [u8; 32] = from_hex(hex.trim())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| malformed("expected 64 hex digits after `ed25519 `"))?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| malformed("not a valid Ed25519 public key"))
}

/// Reads a public key file.
pub fn read_public(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text =
        crate::bounded::read_to_string(path, crate::bounded::CONFIG_BYTES).map_err(|source| {
            KeyError::Io {
                path: path.into(),
                what: "read it",
                source,
            }
        })?;
    parse_public(&text, path)
}

/// Writes `receipts.pub` into `dir` unless it already holds exactly this key.
pub fn write_public(dir: &Path, key: &VerifyingKey) -> Result<PathBuf, KeyError> {
    let path = dir.join(PUBLIC_FILE);
    let text = public_text(key);
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Ok(path);
    }
    let tmp = dir.join(format!("{PUBLIC_FILE}.tmp{}", std::process::id()));
    std::fs::write(&tmp, &text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| KeyError::Io {
            path: path.clone(),
            what: "write the public key",
            source,
        })?;
    Ok(path)
}

/// A short name for a public key: the first 16 hex digits of SHA-256 over its 32 bytes.
pub fn key_id(key: &VerifyingKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    crate::session::hex(&digest[..8])
}

/// Decodes lowercase or uppercase hex; `None` on anything else.
pub(crate) fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
