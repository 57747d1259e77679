//! A pool of attempt clones whose attempts are over, reused instead of a fresh clone: the next
//! attempt takes one, and [`Git::clone_reset`] makes it what [`Git::clone_add`] would have made.
//!
//! Nothing in a pooled clone is trusted: its `.git` is deleted and made again, and its files are
//! put back against a copy of the index nightshift kept outside the clone (in the pool
//! directory, under `.nightshift/`, out of the agent's reach) when its own reset ended. That
//! copy is what makes a reuse cheap: a file the agent never touched matches its stat data and
//! is not written again; one it touched has a newer ctime (which no unprivileged process can
//! set back) and is written anew.
//!
//! Layout of the pool directory:
//! - `c-<id>/`: a pooled clone, moved in with one `rename` (never half there);
//! - `c-<id>.index`: the index copy of that clone's last reset, moved in before it;
//! - `held/<name>.index`: the index copy of the clone in use at `worktrees/<name>`.
//!
//! Every step is a rename or a removal, so a `kill -9` at any point leaves either the clone
//! where it was (the teardown or the preparation is redone at the next start) or in its new
//! place, never a clone that is used as it was: a pooled clone is reset wholly when it is
//! taken, whatever state it was left in.

use std::path::{Path, PathBuf};

/// How many clones the pool keeps; the clones of further finished attempts are deleted.
pub const POOL_MAX: usize = 3;

/// Below this many tracked files a fresh clone costs less than resetting a pooled one: a
/// fresh clone is one git call (`read-tree -u`) that writes every file, a reset is five
/// (`diff-index`, `clean`, `read-tree`, `clean`, `status`, [`super::Git::clone_reset`]) that
/// write only what the agent touched; both write the clone's `.git` anew. Five git calls cost
/// ≈ 8–10 ms, a small file ≈ 75 µs to write (decision 104): the two meet near a hundred files.
pub const POOL_MIN_FILES: u32 = 64;

/// Whether pooling clones pays for the repository whose git directory is `common_dir`: it
/// tracks at least [`POOL_MIN_FILES`] files, read from its index's header (no git call).
/// An index that cannot be read (none, a linked worktree's, a split one) says yes: the pool
/// is never wrong, only sometimes slower.
pub fn pool_pays(common_dir: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 12];
    let read =
        std::fs::File::open(common_dir.join("index")).and_then(|mut f| f.read_exact(&mut header));
    if read.is_err() || &header[..4] != b"DIRC" {
        return true;
    }
    let entries = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    entries >= POOL_MIN_FILES
}

/// The pool of reusable clones in `dir` (`.nightshift/pool`).
#[derive(Debug, Clone)]
pub struct ClonePool {
    dir: PathBuf,
    max: usize,
}

/// A clone taken from the pool: moved to the attempt's path, not reset yet.
#[derive(Debug)]
pub struct Taken {
    /// The index copy of its last reset, if it still has one.
    pub index: Option<PathBuf>,
}

impl ClonePool {
    pub fn new(dir: impl Into<PathBuf>) -> ClonePool {
        ClonePool {
            dir: dir.into(),
            max: POOL_MAX,
        }
    }

    /// The same pool, keeping at most `max` clones.
    pub fn with_max(mut self, max: usize) -> ClonePool {
        self.max = max;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the index copy of the clone in use at `<worktrees>/<name>` is kept.
    pub fn held_index(&self, checkout: &Path) -> Option<PathBuf> {
        let name = checkout.file_name()?;
        let mut file = name.to_os_string();
        file.push(".index");
        Some(self.dir.join("held").join(file))
    }

    /// Whether the pool directory is a real directory (not a link an agent put in its place).
    fn usable(&self) -> bool {
        real_dir(&self.dir) && self.dir.parent().is_some_and(real_dir)
    }

    /// The pooled clones, oldest name first.
    fn entries(&self) -> Vec<PathBuf> {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = read
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("c-") && !n.ends_with(".index"))
            })
            .collect();
        out.sort();
        out
    }

    /// Moves a pooled clone to `dest` (which must not exist). `None` when the pool has none
    /// that is a real directory with a real `.git` directory; a rejected one is deleted.
    pub fn take(&self, dest: &Path) -> Option<Taken> {
        if !self.usable() {
            return None;
        }
        for entry in self.entries() {
            let index = index_of(&entry);
            if !(real_dir(&entry) && real_dir(&entry.join(".git"))) {
                remove_any(&entry);
                let _ = std::fs::remove_file(&index);
                continue;
            }
            if std::fs::rename(&entry, dest).is_err() {
                continue;
            }
            crate::failpoint::hit("pool_taken");
            // Taken out of the pool's name space at once, so a crash from here on leaves no
            // index copy beside another clone.
            let held = self.held_index(dest);
            let index = match held {
                Some(held) if index.exists() => {
                    let moved = held
                        .parent()
                        .is_some_and(|p| std::fs::create_dir_all(p).is_ok())
                        && std::fs::rename(&index, &held).is_ok();
                    moved.then_some(held)
                }
                _ => None,
            };
            crate::failpoint::hit("pool_index_taken");
            return Some(Taken { index });
        }
        None
    }

    /// Puts the finished clone at `checkout` into the pool; `false` (nothing moved) when the
    /// pool is full or cannot take it, and the caller deletes it.
    pub fn put(&self, checkout: &Path, unique: &str) -> bool {
        if std::fs::create_dir_all(&self.dir).is_err() || !self.usable() {
            return false;
        }
        if self.entries().len() >= self.max
            || !(real_dir(checkout) && real_dir(&checkout.join(".git")))
        {
            return false;
        }
        let entry = self.dir.join(format!("c-{unique}"));
        if std::fs::symlink_metadata(&entry).is_ok() {
            return false;
        }
        // The index copy first: a crash between the two renames leaves the clone in place (the
        // teardown is redone and pools it without a copy: one full write at its next use).
        if let Some(held) = self.held_index(checkout)
            && held.exists()
        {
            let _ = std::fs::rename(&held, index_of(&entry));
        }
        crate::failpoint::hit("pool_index_pooled");
        if std::fs::rename(checkout, &entry).is_err() {
            let _ = std::fs::remove_file(index_of(&entry));
            return false;
        }
        crate::failpoint::hit("pool_clone_pooled");
        true
    }

    /// Forgets the index copy of the clone at `checkout` (it is being deleted).
    pub fn drop_held(&self, checkout: &Path) {
        if let Some(held) = self.held_index(checkout) {
            let _ = std::fs::remove_file(held);
        }
    }

    /// At start: deletes what a crash or an agent may have left that is not a pooled clone
    /// with its copy (an index copy without its clone, a held copy whose checkout is gone,
    /// anything else), and the clones beyond the bound.
    pub fn tidy(&self, worktrees: &Path) {
        if std::fs::symlink_metadata(&self.dir).is_err() {
            return;
        }
        if !self.usable() {
            remove_any(&self.dir);
            return;
        }
        let entries = self.entries();
        for (n, entry) in entries.iter().enumerate() {
            if n >= self.max || !real_dir(entry) {
                remove_any(entry);
                let _ = std::fs::remove_file(index_of(entry));
            }
        }
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in read.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let keep = if name == "held" {
                real_dir(&path)
            } else if let Some(clone) = name.strip_suffix(".index") {
                name.starts_with("c-") && real_dir(&self.dir.join(clone))
            } else {
                name.starts_with("c-") && real_dir(&path)
            };
            if !keep {
                remove_any(&path);
            }
        }
        if let Ok(read) = std::fs::read_dir(self.dir.join("held")) {
            for e in read.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let in_use = name
                    .strip_suffix(".index")
                    .is_some_and(|n| worktrees.join(n).exists());
                if !in_use {
                    remove_any(&e.path());
                }
            }
        }
    }
}

/// The index copy beside pooled clone `entry`.
fn index_of(entry: &Path) -> PathBuf {
    let mut name = entry.as_os_str().to_os_string();
    name.push(".index");
    PathBuf::from(name)
}

/// A directory, not a link to one.
pub(crate) fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Removes a file, link or directory tree (never following a link).
fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}
