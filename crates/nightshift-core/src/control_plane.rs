//! The pinned control plane (issue 12): what judges a run — the check command(s), timeouts,
//! guards, blocked paths, gate modes, the agent's argv, kind and env names, the limits — is the
//! exact `nightshift.toml` text the run started with, journaled as `control_plane_pinned` with
//! its SHA-256. Every later decision of the run (after a restart, a resume, a crash, `accept`)
//! parses the journaled copy, never the live file, and reads each item's check from the
//! journaled plan (`run_started`), never from the store's mutable `items.check_command`.
//!
//! A live `nightshift.toml` that differs from the pinned copy is reported
//! (`control_plane_changed`) and applies to the next run, or to this one with an explicit
//! `nightshift run --reload-config` (journaled as a new `control_plane_pinned`, `reloaded`).

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::config::{self, Config, ConfigError};
use crate::store::{EventKind, Store, StoreError};

/// A run's pinned control plane, read back from its journal.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// SHA-256 (hex) of `source`.
    pub sha256: String,
    /// The `nightshift.toml` text pinned.
    pub source: String,
    /// `source`, parsed.
    pub config: Config,
    /// Each planned item's own check (`None`: `[check] command`), from `run_started`.
    pub item_checks: HashMap<String, Option<String>>,
}

/// Errors reading a run's pinned control plane.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("parse the control plane pinned in the journal (entry {seq})")]
    Parse {
        seq: i64,
        #[source]
        source: ConfigError,
    },
}

impl Pinned {
    /// The check command line of `item` as the run journaled it: its own, else the pinned
    /// `[check] command`, else `false` (nothing can be green without a check).
    pub fn check_command(&self, item: &str) -> String {
        self.item_checks
            .get(item)
            .cloned()
            .flatten()
            .or_else(|| self.config.check.command.clone())
            .unwrap_or_else(|| "false".into())
    }
}

/// SHA-256 of `text`, hex.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The control plane `run_id` pinned last (the newest `control_plane_pinned` of the run, so a
/// `--reload-config` replaces it), parsed as the config at `config_path`; `None` for a run
/// journaled before pinning existed.
pub fn pinned(store: &Store, run_id: &str, config_path: &Path) -> Result<Option<Pinned>, PinError> {
    let events = store.run_events(run_id, &["run_started", "control_plane_pinned"])?;
    let mut item_checks = HashMap::new();
    let mut last = None;
    for event in events {
        match event.kind {
            EventKind::RunStarted { items, .. } => {
                item_checks = items.into_iter().map(|i| (i.id, i.check)).collect();
            }
            EventKind::ControlPlanePinned { sha256, source, .. } => {
                last = Some((event.seq, sha256, source));
            }
            _ => {}
        }
    }
    let Some((seq, sha256, source)) = last else {
        return Ok(None);
    };
    let config =
        config::parse_at(&source, config_path).map_err(|source| PinError::Parse { seq, source })?;
    Ok(Some(Pinned {
        sha256,
        source,
        config,
        item_checks,
    }))
}

/// Which parts of the config differ between `pinned` and `live` texts, for a person:
/// `[check] command, [limits] max_iterations`. Compared as TOML values, so a comment or a
/// reformatting alone is `formatting only`.
pub fn differences(pinned: &str, live: &str) -> String {
    let (Ok(a), Ok(b)) = (pinned.parse::<toml::Table>(), live.parse::<toml::Table>()) else {
        return "the live file does not parse as TOML".into();
    };
    let mut out = Vec::new();
    diff_tables("", &a, &b, &mut out);
    if out.is_empty() {
        "formatting only".into()
    } else {
        out.join(", ")
    }
}

fn diff_tables(prefix: &str, a: &toml::Table, b: &toml::Table, out: &mut Vec<String>) {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (x, y) = (a.get(key), b.get(key));
        match (x, y) {
            _ if x == y => {}
            (Some(toml::Value::Table(x)), Some(toml::Value::Table(y))) if prefix.is_empty() => {
                diff_tables(&format!("[{key}] "), x, y, out);
            }
            _ if prefix.is_empty()
                && (x.is_some_and(toml::Value::is_table)
                    || y.is_some_and(toml::Value::is_table)) =>
            {
                out.push(format!("[{key}]"));
            }
            _ => out.push(format!("{prefix}{key}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_the_changed_keys() {
        let pinned =
            "[check]\ncommand = \"false\"\ntimeout = \"1m\"\n[limits]\nmax_iterations = 2\n";
        let live = "# a comment\n[check]\ncommand = \"true\"\ntimeout = \"1m\"\n[limits]\nmax_iterations = 2\n[guards]\nblocked_paths = []\n";
        assert_eq!(differences(pinned, live), "[check] command, [guards]");
        assert_eq!(
            differences(pinned, &format!("# only a comment\n{pinned}")),
            "formatting only"
        );
    }

    #[test]
    fn digests_are_hex_sha256() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
