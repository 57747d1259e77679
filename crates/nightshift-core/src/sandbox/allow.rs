//! The read allowlist. Landlock only allows, so "everything under `/` except `.nightshift/`" is
//! built by allowing the parents of each denied tree entry by entry, skipping the denied one.

use std::path::{Path, PathBuf};

/// The trees to allow reading so that everything under `read` is readable except what lies under
/// a `deny` tree. The directories on the way down to a denied tree are not themselves allowed
/// (listing them fails; opening and walking through them works: Landlock does not check path
/// traversal). Symlinks on the way down are skipped (a link into a denied tree must not allow
/// it; a path through a link resolves to a target that is allowed on its own).
pub fn read_rules(read: &[PathBuf], deny: &[PathBuf]) -> Vec<PathBuf> {
    let deny: Vec<PathBuf> = deny.iter().map(|d| real(d)).collect();
    let mut out = Vec::new();
    for root in read {
        walk(&real(root), &deny, &mut out);
    }
    out
}

fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

fn walk(path: &Path, deny: &[PathBuf], out: &mut Vec<PathBuf>) {
    if deny.iter().any(|d| path.starts_with(d)) {
        return;
    }
    if !deny.iter().any(|d| d.starts_with(path)) {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        walk(&child, deny, out);
    }
}
