//! Seeding a fresh worktree with the (usually gitignored) files an agent needs — `.mcp.json`,
//! `.claude/settings.local.json`, `.env.local` — which a checkout never brings. Files missing
//! from a directory that already exists are copied too; nothing checked out is overwritten; and
//! every seed is verified after the copy, because a silently missing seed is a session that
//! idles or rebuilds for nothing.

use std::path::{Path, PathBuf};

/// Copies every seed from `root` into `worktree` and verifies it. The error says which seed.
pub fn seed_worktree(root: &Path, worktree: &Path, seeds: &[PathBuf]) -> Result<usize, String> {
    let mut copied = 0;
    for seed in seeds {
        let src = root.join(seed);
        let dst = worktree.join(seed);
        copied += copy_missing(&src, &dst).map_err(|e| format!("seed {}: {e}", seed.display()))?;
        verify(&src, &dst).map_err(|e| format!("seed {} did not land: {e}", seed.display()))?;
    }
    Ok(copied)
}

/// Seeds that do not exist under `root`.
pub fn missing_seeds(root: &Path, seeds: &[PathBuf]) -> Vec<PathBuf> {
    seeds
        .iter()
        .filter(|s| std::fs::symlink_metadata(root.join(s)).is_err())
        .cloned()
        .collect()
}

fn copy_missing(src: &Path, dst: &Path) -> std::io::Result<usize> {
    let meta = std::fs::symlink_metadata(src)?;
    if meta.is_dir() {
        std::fs::create_dir_all(dst)?;
        let mut n = 0;
        for entry in std::fs::read_dir(src)? {
            let entry = entry?;
            n += copy_missing(&entry.path(), &dst.join(entry.file_name()))?;
        }
        Ok(n)
    } else if std::fs::symlink_metadata(dst).is_ok() {
        Ok(0) // checked out (or seeded) already: never overwritten
    } else {
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(src)?, dst)?;
        } else {
            std::fs::copy(src, dst)?;
        }
        Ok(1)
    }
}

fn verify(src: &Path, dst: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(src).map_err(|e| format!("{}: {e}", src.display()))?;
    if meta.is_dir() {
        let entries = std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))?;
        for entry in entries.flatten() {
            verify(&entry.path(), &dst.join(entry.file_name()))?;
        }
        Ok(())
    } else if std::fs::symlink_metadata(dst).is_ok() {
        Ok(())
    } else {
        Err(format!("{} is missing", dst.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_fill_in_missing_children_without_overwriting_and_are_verified() {
        let root = tempfile::tempdir().unwrap();
        let wt = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join(".mcp.json"), "{}").unwrap();
        std::fs::create_dir_all(root.path().join(".claude/agents")).unwrap();
        std::fs::write(root.path().join(".claude/settings.json"), "root version").unwrap();
        std::fs::write(root.path().join(".claude/settings.local.json"), "local").unwrap();
        std::fs::write(root.path().join(".claude/agents/x.md"), "agent").unwrap();
        // The worktree already has the directory, with a checked-out file in it.
        std::fs::create_dir_all(wt.path().join(".claude")).unwrap();
        std::fs::write(wt.path().join(".claude/settings.json"), "checked out").unwrap();

        let seeds = [PathBuf::from(".mcp.json"), PathBuf::from(".claude")];
        let copied = seed_worktree(root.path(), wt.path(), &seeds).unwrap();
        assert_eq!(copied, 3);
        assert_eq!(
            std::fs::read_to_string(wt.path().join(".claude/settings.local.json")).unwrap(),
            "local"
        );
        assert_eq!(
            std::fs::read_to_string(wt.path().join(".claude/agents/x.md")).unwrap(),
            "agent"
        );
        assert_eq!(
            std::fs::read_to_string(wt.path().join(".claude/settings.json")).unwrap(),
            "checked out",
            "never overwritten"
        );
        assert_eq!(
            seed_worktree(root.path(), wt.path(), &seeds).unwrap(),
            0,
            "idempotent"
        );
    }

    #[test]
    fn a_missing_seed_is_named() {
        let root = tempfile::tempdir().unwrap();
        let wt = tempfile::tempdir().unwrap();
        let seeds = [PathBuf::from(".env.local")];
        assert_eq!(missing_seeds(root.path(), &seeds), seeds);
        let err = seed_worktree(root.path(), wt.path(), &seeds).unwrap_err();
        assert!(err.contains(".env.local"), "{err}");
    }
}
