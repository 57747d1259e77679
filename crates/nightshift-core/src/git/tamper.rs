//! What nightshift can see outside an attempt's checkout, taken before a session and compared
//! after it: the shared git directory's `config`, `HEAD`, `info/` and `hooks/`, every ref, and
//! the user's checkout (tracked changes and untracked files). A difference is the session's
//! doing (nothing else of nightshift writes there while a session runs); what can be put back
//! is put back: files of the git directory first (so that no later git call, this module's
//! included, runs a filter, hook or `include.path` the agent planted), then refs, then the
//! user's checkout (its state kept under a ref first, so nothing of anyone's is lost). Before a
//! snapshot, what a long night piles up (a preserve ref and a few loose objects per finished
//! attempt) is packed once there is enough of it, so that the snapshot and every fetch do not
//! grow with the plan ([`Git::pack_loose`]).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::cmd::{Git, GitError};

/// Files larger than this are compared by size and time only, and not restored.
const MAX_KEPT_BYTES: u64 = 1 << 20;
/// Entries read from one directory tree of the git directory (hooks/, info/).
const MAX_ENTRIES: usize = 4096;
/// Changes named in the evidence (the count of the rest is said).
const MAX_NAMED: usize = 50;
/// Loose refs of nightshift's own (`refs/nightshift/…`) at which [`Git::pack_loose`] packs
/// them.
pub(crate) const PACK_LOOSE_AT: usize = 32;

/// One file of the git directory as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileState {
    /// Its bytes and permission bits.
    Kept { bytes: Vec<u8>, mode: u32 },
    /// Too large to keep: its size and modification time.
    Large {
        len: u64,
        modified: Option<SystemTime>,
    },
    /// A symbolic link, by its target.
    Link(PathBuf),
}

/// One path `git status` lists in the user's checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EntryState {
    /// The two-letter status (`??` untracked, ` M` modified, …).
    status: String,
    /// Size, modification time and mode of the file; `None` when it is gone.
    stat: Option<(u64, Option<SystemTime>, u32)>,
}

/// A ref: what it points at, and the ref it names when symbolic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RefState {
    pub(super) oid: String,
    pub(super) symref: Option<String>,
}

/// What nightshift saw outside an attempt's checkout before a session.
#[derive(Debug, Clone)]
pub struct ControlPlane {
    common_dir: PathBuf,
    files: BTreeMap<String, FileState>,
    refs: BTreeMap<String, RefState>,
    checkout: BTreeMap<String, EntryState>,
    /// Refs the session may move (the attempt's own branch).
    own_refs: Vec<String>,
}

/// What a session changed outside its checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tampering {
    /// Each change, in words (`.git/config changed`, `ref refs/heads/main moved 1a2b3c4 → …`).
    pub changes: Vec<String>,
    /// What nightshift put back, in words.
    pub restored: Vec<String>,
    /// The user's checkout's paths the session changed.
    pub paths: Vec<String>,
}

impl ControlPlane {
    /// Takes what nightshift itself changed between `before` and `after` (its own step for
    /// another item while this session ran: a target it advanced, refs it wrote or deleted,
    /// the user's checkout it brought along) as this session's starting point, so only what
    /// the session changed is compared. Files of the git directory (config, hooks, info) are
    /// never taken: nightshift does not write them while a run goes on.
    pub fn absorb(&mut self, before: &ControlPlane, after: &ControlPlane) {
        absorb_map(&mut self.refs, &before.refs, &after.refs);
        absorb_map(&mut self.checkout, &before.checkout, &after.checkout);
    }
}

fn absorb_map<V: Clone + PartialEq>(
    mine: &mut BTreeMap<String, V>,
    before: &BTreeMap<String, V>,
    after: &BTreeMap<String, V>,
) {
    for (key, was) in before {
        match after.get(key) {
            None => {
                mine.remove(key);
            }
            Some(now) if now != was => {
                mine.insert(key.clone(), now.clone());
            }
            Some(_) => {}
        }
    }
    for (key, now) in after {
        if !before.contains_key(key) {
            mine.insert(key.clone(), now.clone());
        }
    }
}

impl Git {
    /// What lies outside an attempt's checkout, seen from the user's checkout (this git's
    /// directory) and its git directory `common_dir`. `own_refs` are the refs the session
    /// may move (its own branch).
    pub fn control_plane(
        &self,
        common_dir: &Path,
        own_refs: &[String],
    ) -> Result<ControlPlane, GitError> {
        Ok(ControlPlane {
            common_dir: common_dir.to_owned(),
            files: read_files(common_dir),
            refs: self.all_refs(common_dir)?,
            checkout: self.checkout_state()?,
            own_refs: own_refs.to_vec(),
        })
    }

    /// Compares what lies outside the attempt's checkout with `before`, and puts back what it
    /// can. The user's checkout, when the session changed it, is first kept whole under
    /// `keep_ref` (a snapshot commit, its index in `scratch_index`). `None`: nothing changed.
    pub fn tampering_since(
        &self,
        before: &ControlPlane,
        keep_ref: &str,
        scratch_index: &Path,
    ) -> Result<Option<Tampering>, GitError> {
        let mut found = Tampering::default();
        // 1. The git directory's files, without running git (a planted fsmonitor, filter or
        //    include would run in any git call made before they are gone).
        let files = read_files(&before.common_dir);
        for (rel, was) in &before.files {
            let now = files.get(rel);
            if now == Some(was) {
                continue;
            }
            let shown = format!(".git/{rel}");
            found.changes.push(match now {
                Some(_) => format!("{shown} changed"),
                None => format!("{shown} deleted"),
            });
            // HEAD is the user's checkout's: put back alone it would disagree with its files.
            if rel == "HEAD" {
                continue;
            }
            if let FileState::Kept { bytes, mode } = was
                && restore_file(&before.common_dir.join(rel), bytes, *mode).is_ok()
            {
                found.restored.push(shown);
            }
        }
        for rel in files.keys().filter(|r| !before.files.contains_key(*r)) {
            let shown = format!(".git/{rel}");
            found.changes.push(format!("{shown} added"));
            if std::fs::remove_file(before.common_dir.join(rel)).is_ok() {
                found.restored.push(format!("{shown} removed"));
            }
        }
        // 2. Refs (the files above are back, so git reads only what the user configured).
        let refs = self.all_refs(&before.common_dir)?;
        let own = |name: &str| before.own_refs.iter().any(|r| r == name);
        let mut transaction = String::new();
        let mut undone = Vec::new();
        for (name, was) in before.refs.iter().filter(|(n, _)| !own(n)) {
            let now = refs.get(name);
            if now == Some(was) {
                continue;
            }
            found.changes.push(match now {
                Some(now) => format!("ref {name} moved {} → {}", short(&was.oid), short(&now.oid)),
                None => format!("ref {name} deleted (was {})", short(&was.oid)),
            });
            if was.symref.is_none() && now.is_none_or(|n| n.symref.is_none()) {
                transaction.push_str(&format!("update {name} {}\n", was.oid));
                undone.push(format!("ref {name} back at {}", short(&was.oid)));
            }
        }
        for (name, now) in refs
            .iter()
            .filter(|(n, _)| !own(n) && !before.refs.contains_key(*n))
        {
            found
                .changes
                .push(format!("ref {name} created at {}", short(&now.oid)));
            if now.symref.is_none() {
                transaction.push_str(&format!("delete {name}\n"));
                undone.push(format!("ref {name} deleted"));
            }
        }
        if !transaction.is_empty()
            && self
                .run_input(
                    &["update-ref", "--stdin"],
                    &[],
                    Some(transaction.as_bytes()),
                )
                .is_ok()
        {
            found.restored.extend(undone);
        }
        // 3. The user's checkout.
        let checkout = self.checkout_state()?;
        let mut changed: Vec<(&String, Option<&EntryState>, Option<&EntryState>)> = Vec::new();
        for (path, was) in &before.checkout {
            let now = checkout.get(path);
            if now != Some(was) {
                changed.push((path, Some(was), now));
            }
        }
        for (path, now) in &checkout {
            if !before.checkout.contains_key(path) {
                changed.push((path, None, Some(now)));
            }
        }
        if !changed.is_empty() {
            let kept = self.keep_checkout(keep_ref, scratch_index);
            for (path, was, now) in &changed {
                found.paths.push((*path).clone());
                found.changes.push(match (was, now) {
                    (None, Some(now)) if now.status == "??" => {
                        format!("checkout: {path} created (untracked)")
                    }
                    (None, Some(_)) => format!("checkout: {path} modified (it was clean)"),
                    (Some(_), None) => format!("checkout: {path} reverted to HEAD"),
                    (Some(_), Some(_)) => format!("checkout: {path} modified again"),
                    (None, None) => format!("checkout: {path} changed"),
                });
            }
            if let Ok(commit) = &kept {
                found.restored.push(format!(
                    "the checkout as the session left it kept at {keep_ref} ({})",
                    short(commit)
                ));
                // Only what was clean before the session is put back: an edit of a file that
                // was already dirty may be the user's, and stays (kept under the ref above).
                let mut tracked = Vec::new();
                for (path, was, now) in &changed {
                    match (was, now) {
                        (None, Some(now)) if now.status == "??" => {
                            let removed = std::fs::remove_file(self.dir().join(path));
                            found
                                .restored
                                .extend(removed.ok().map(|()| format!("checkout: {path} removed")));
                        }
                        (None, Some(_)) => tracked.push((*path).clone()),
                        _ => {}
                    }
                }
                if !tracked.is_empty() && self.restore_paths("HEAD", &tracked).is_ok() {
                    found.restored.extend(
                        tracked
                            .iter()
                            .map(|p| format!("checkout: {p} back at HEAD")),
                    );
                }
            }
        }
        if found.changes.is_empty() {
            return Ok(None);
        }
        for list in [&mut found.changes, &mut found.restored] {
            if list.len() > MAX_NAMED {
                let more = list.len() - MAX_NAMED;
                list.truncate(MAX_NAMED);
                list.push(format!("… and {more} more"));
            }
        }
        Ok(Some(found))
    }

    /// Packs what a night piles up in the user's repository once [`PACK_LOOSE_AT`] of
    /// nightshift's own refs (`refs/nightshift/…`: a preserve ref per finished attempt) are
    /// loose, and says whether it did: those refs into `packed-refs`, and the loose objects
    /// (each attempt's commit, fetched from its clone) into a pack. Every ref listing (the
    /// snapshot's `for-each-ref`, twice per session) reads each loose ref as a file of its own,
    /// and every fetch reads the commit of every ref (a loose one inflated from a file of its
    /// own): a thousand items would pay for a thousand files, twice, at every step. Nothing
    /// moves: ref values are the same (a snapshot taken before compares equal after), the user's
    /// own refs are not packed, and the objects are packed by git's `loose-objects` maintenance
    /// task, made to run beside other git processes (a loose object is deleted only once a
    /// pack held it before the task began). A git without `pack-refs --include` (before 2.42)
    /// packs no refs; a failure of either step leaves things as they were.
    pub fn pack_loose(&self, common_dir: &Path) -> bool {
        if loose_refs(&common_dir.join("refs/nightshift"), PACK_LOOSE_AT) < PACK_LOOSE_AT {
            return false;
        }
        let objects = self
            .run(&["maintenance", "run", "--task=loose-objects", "--quiet"])
            .is_ok();
        let refs = self
            .run(&["pack-refs", "--include=refs/nightshift/*"])
            .is_ok();
        objects || refs
    }

    /// Every ref of the repository (per-worktree ones of this checkout included): read from
    /// the ref files where they say what `for-each-ref` would ([`refs_from_files`]), else
    /// asked of git. Twice per session, so a git call saved here is two per item.
    fn all_refs(&self, common_dir: &Path) -> Result<BTreeMap<String, RefState>, GitError> {
        if let Some(refs) = refs_from_files(self.dir(), common_dir) {
            return Ok(refs);
        }
        self.refs_from_git()
    }

    /// Every ref, as `for-each-ref` lists them.
    pub(super) fn refs_from_git(&self) -> Result<BTreeMap<String, RefState>, GitError> {
        let out = self.run(&[
            "for-each-ref",
            "--format=%(objectname)%00%(refname)%00%(symref)",
        ])?;
        Ok(out
            .lines()
            .filter_map(|line| {
                let mut parts = line.split('\0');
                let oid = parts.next()?.to_owned();
                let name = parts.next()?.to_owned();
                let symref = parts.next().filter(|s| !s.is_empty()).map(str::to_owned);
                Some((name, RefState { oid, symref }))
            })
            .collect())
    }

    /// The paths `git status` lists in this checkout (untracked files one by one, ignored
    /// ones not), with what their files look like. Taken without optional locks: the user's
    /// index is not rewritten.
    fn checkout_state(&self) -> Result<BTreeMap<String, EntryState>, GitError> {
        let out = self.run_env(
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--no-renames",
                "--untracked-files=all",
                "--ignore-submodules=none",
            ],
            &[("GIT_OPTIONAL_LOCKS", OsStr::new("0"))],
        )?;
        let mut entries = BTreeMap::new();
        for entry in out.split('\0').filter(|f| !f.is_empty()) {
            let (Some(status), Some(path)) = (entry.get(..2), entry.get(3..)) else {
                continue;
            };
            let stat = std::fs::symlink_metadata(self.dir().join(path))
                .ok()
                .map(|m| {
                    (
                        m.len(),
                        m.modified().ok(),
                        std::os::unix::fs::PermissionsExt::mode(&m.permissions()),
                    )
                });
            entries.insert(
                path.to_owned(),
                EntryState {
                    status: status.to_owned(),
                    stat,
                },
            );
        }
        Ok(entries)
    }

    /// A snapshot commit of this checkout (untracked files included) under `keep_ref`.
    fn keep_checkout(&self, keep_ref: &str, scratch_index: &Path) -> Result<String, GitError> {
        let commit = self.snapshot(
            "nightshift: the user's checkout as a session left it\n\nchanged during an agent session (control_plane_tampered)\n",
            None,
            scratch_index,
        )?;
        self.set_ref(keep_ref, &commit)?;
        Ok(commit)
    }
}

/// The files of the git directory an agent could plant something in: `config`,
/// `config.worktree`, `HEAD`, and everything under `info/` and `hooks/`.
/// Entries read from `refs/` by [`refs_from_files`] before it leaves the answer to git.
const MAX_REF_FILES: usize = 100_000;

/// Every ref as `git for-each-ref` run in `checkout` lists it (name, commit, the ref a
/// symbolic one names), read from `packed-refs` and the loose files under `refs/`, a loose ref
/// shadowing its packed value — as git reads them, skipping what git skips: a name
/// `check-ref-format` refuses, a `.lock` file, a file that holds no object name, a symbolic
/// ref that leads nowhere. `None` where the files cannot be taken for git's answer: a
/// reftable repository (or any `refStorage` setting), a checkout that is not the main
/// worktree (its own per-worktree refs live elsewhere), a link among the refs (git's legacy
/// symbolic refs), an unreadable file or directory, more than [`MAX_REF_FILES`] entries.
pub(super) fn refs_from_files(
    checkout: &Path,
    common_dir: &Path,
) -> Option<BTreeMap<String, RefState>> {
    if common_dir.join("reftable").exists() {
        return None;
    }
    let dot_git = checkout.join(".git");
    let main_worktree = std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_dir())
        && std::fs::canonicalize(&dot_git).ok()? == std::fs::canonicalize(common_dir).ok()?;
    if !main_worktree {
        return None;
    }
    let config = std::fs::read_to_string(common_dir.join("config")).ok()?;
    if config.to_ascii_lowercase().contains("refstorage") {
        return None;
    }
    // Loose refs first, then `packed-refs`: a `pack-refs` running meanwhile writes the packed
    // file before it deletes the loose ones, so a ref is seen in one or the other.
    let mut raw: BTreeMap<String, String> = BTreeMap::new();
    let mut seen = 0;
    loose_refs_into(&common_dir.join("refs"), "refs", &mut raw, &mut seen)?;
    match std::fs::read_to_string(common_dir.join("packed-refs")) {
        Ok(text) => {
            for line in text.lines() {
                if line.starts_with('#') || line.starts_with('^') || line.is_empty() {
                    continue;
                }
                let (oid, name) = line.split_once(' ')?;
                if !is_oid(oid) {
                    return None;
                }
                if valid_ref_name(name) && !raw.contains_key(name) {
                    raw.insert(name.to_owned(), oid.to_owned());
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    let mut refs = BTreeMap::new();
    for (name, value) in &raw {
        let Some(target) = value.strip_prefix("ref: ") else {
            if is_oid(value) {
                refs.insert(
                    name.clone(),
                    RefState {
                        oid: value.clone(),
                        symref: None,
                    },
                );
            }
            continue;
        };
        // Followed as git does, a few levels deep; one that leads nowhere is not listed.
        let mut next = target;
        for _ in 0..5 {
            match raw.get(next).map(|v| (v.strip_prefix("ref: "), v)) {
                Some((Some(further), _)) => next = further,
                Some((None, oid)) if is_oid(oid) => {
                    refs.insert(
                        name.clone(),
                        RefState {
                            oid: oid.clone(),
                            symref: Some(target.to_owned()),
                        },
                    );
                    break;
                }
                _ => break,
            }
        }
    }
    Some(refs)
}

/// The loose refs under `dir` (named `prefix/…`) into `raw`: a file's object name, or its
/// `ref: <name>` when symbolic, or what a broken one holds (listed by nobody).
fn loose_refs_into(
    dir: &Path,
    prefix: &str,
    raw: &mut BTreeMap<String, String>,
    seen: &mut usize,
) -> Option<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(()),
        Err(_) => return None,
    };
    for entry in entries {
        let entry = entry.ok()?;
        *seen += 1;
        if *seen > MAX_REF_FILES {
            return None;
        }
        let file_name = entry.file_name();
        let name = format!("{prefix}/{}", file_name.to_str()?);
        let kind = entry.file_type().ok()?;
        if kind.is_symlink() {
            return None;
        }
        if kind.is_dir() {
            loose_refs_into(&entry.path(), &name, raw, seen)?;
            continue;
        }
        if !kind.is_file() || !valid_ref_name(&name) {
            continue;
        }
        let text = match std::fs::read_to_string(entry.path()) {
            Ok(text) => text,
            // Renamed or deleted by a git process meanwhile: as if read a moment later.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
        // A broken file shadows a packed value all the same: git lists neither.
        raw.insert(name, text.trim_end().to_owned());
    }
    Some(())
}

/// A full object name (SHA-1 or SHA-256), lowercase hex.
fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether git's `check-ref-format` takes `name` (a full name, `refs/…`).
fn valid_ref_name(name: &str) -> bool {
    !name.ends_with('/')
        && !name.ends_with('.')
        && !name.contains("..")
        && !name.contains("@{")
        && name != "@"
        && !name
            .bytes()
            .any(|b| b < 0x20 || b == 0x7f || b" ~^:?*[\\".contains(&b))
        && name
            .split('/')
            .all(|c| !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock"))
}

fn read_files(common_dir: &Path) -> BTreeMap<String, FileState> {
    let mut files = BTreeMap::new();
    for name in ["config", "config.worktree", "HEAD"] {
        if let Some(state) = file_state(&common_dir.join(name)) {
            files.insert(name.to_owned(), state);
        }
    }
    for dir in ["info", "hooks"] {
        let mut stack = vec![PathBuf::from(dir)];
        let mut seen = 0;
        while let Some(rel) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(common_dir.join(&rel)) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    break;
                }
                let rel = rel.join(entry.file_name());
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    stack.push(rel);
                } else if let Some(state) = file_state(&common_dir.join(&rel)) {
                    files.insert(rel.to_string_lossy().into_owned(), state);
                }
            }
        }
    }
    files
}

/// How many loose ref files lie under `dir`, counted up to `enough`.
fn loose_refs(dir: &Path, enough: usize) -> usize {
    let mut stack = vec![dir.to_owned()];
    let mut found = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                Ok(kind) if kind.is_file() => {
                    found += 1;
                    if found >= enough {
                        return found;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

fn file_state(path: &Path) -> Option<FileState> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_symlink() {
        return std::fs::read_link(path).ok().map(FileState::Link);
    }
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_KEPT_BYTES {
        return Some(FileState::Large {
            len: meta.len(),
            modified: meta.modified().ok(),
        });
    }
    let bytes = std::fs::read(path).ok()?;
    Some(FileState::Kept {
        bytes,
        mode: std::os::unix::fs::PermissionsExt::mode(&meta.permissions()),
    })
}

/// Writes `bytes` back at `path` with `mode`, replacing whatever is there (a link included).
fn restore_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.is_file()
    {
        if meta.is_dir() {
            std::fs::remove_dir_all(path)?;
        } else {
            std::fs::remove_file(path)?;
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, bytes)?;
    std::fs::set_permissions(
        path,
        std::os::unix::fs::PermissionsExt::from_mode(mode & 0o7777),
    )
}

fn short(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}
