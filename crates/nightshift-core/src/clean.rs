//! What `nightshift clean` may remove, and removing it. Only what nightshift made, and only
//! what holds no unique work: the preserve refs of attempts that shipped (their work is on the
//! target), kept branches the target already contains, leftover worktree directories whose
//! attempt is preserved, the pool of finished attempts' clones, and the logs of finished runs older than a cut-off. The kept work of an
//! attempt that did not ship is never removed.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::git::{Git, GitError};
use crate::store::{Phase, Store, StoreError};
use crate::workspace::Workspace;

/// One thing `clean` would remove (or did), and why it may.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    Ref { name: String, why: String },
    Branch { name: String, why: String },
    Dir { path: PathBuf, why: String },
}

/// Something `clean` keeps, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub what: String,
    pub why: String,
}

/// What a clean found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub remove: Vec<Removal>,
    pub keep: Vec<Kept>,
}

#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("remove {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Works out what may go. Touches nothing.
pub fn plan(
    ws: &Workspace,
    store: Option<&Store>,
    older_than: Duration,
) -> Result<Plan, CleanError> {
    let git = Git::new(ws.root());
    let mut plan = Plan::default();
    // Attempts by (item, attempt): whether they shipped, and whether their worktree is open.
    let mut shipped = std::collections::BTreeSet::new();
    let mut open_worktrees = std::collections::BTreeSet::new();
    let mut preserved_worktrees = std::collections::BTreeSet::new();
    let mut finished_runs = Vec::new();
    let mut target = None;
    if let Some(store) = store {
        let mut runs = Vec::new();
        for e in store.events_after(0, usize::MAX >> 1)? {
            if !runs.contains(&e.run_id) {
                runs.push(e.run_id.clone());
            }
        }
        for run_id in &runs {
            if let Some(run) = store.run(run_id)? {
                if !run.is_running() {
                    finished_runs.push(run.id.clone());
                }
                // Journal order: the newest run's target wins.
                target = Some(run.target.clone());
            }
            for att in store.attempts(run_id)? {
                if att.phase == Phase::Integrated {
                    shipped.insert((att.item.clone(), att.attempt));
                }
                if !att.is_finished() {
                    open_worktrees.insert(PathBuf::from(&att.worktree));
                } else if att.preserve_ref.is_some() {
                    preserved_worktrees.insert(PathBuf::from(&att.worktree));
                }
            }
        }
    }
    let tip = match &target {
        Some(t) => git.resolve(&format!("refs/heads/{t}"))?,
        None => None,
    };
    for name in git.refs_under(&["refs/nightshift/preserve/"])? {
        let mut parts = name
            .trim_start_matches("refs/nightshift/preserve/")
            .rsplitn(2, '/');
        let attempt = parts.next().and_then(|a| a.parse::<u32>().ok());
        let item = parts.next().unwrap_or_default().to_owned();
        match attempt {
            Some(a) if shipped.contains(&(item.clone(), a)) => plan.remove.push(Removal::Ref {
                name,
                why: "its attempt shipped: the work is on the target".into(),
            }),
            _ => plan.keep.push(Kept {
                what: name,
                why: "the kept work of an attempt that did not ship".into(),
            }),
        }
    }
    for name in git.refs_under(&["refs/heads/nightshift/"])? {
        let branch = name.trim_start_matches("refs/heads/").to_owned();
        let merged = match &tip {
            Some(tip) => git.is_ancestor(&name, tip)?,
            None => false,
        };
        if merged {
            plan.remove.push(Removal::Branch {
                name: branch,
                why: "the target contains it".into(),
            });
        } else {
            plan.keep.push(Kept {
                what: branch,
                why: "not merged into the target".into(),
            });
        }
    }
    if let Ok(entries) = std::fs::read_dir(ws.worktrees()) {
        for entry in entries.flatten() {
            let path = entry.path();
            if open_worktrees.contains(&path) {
                plan.keep.push(Kept {
                    what: path.display().to_string(),
                    why: "an unfinished run's attempt works in it".into(),
                });
            } else if preserved_worktrees.contains(&path) {
                plan.remove.push(Removal::Dir {
                    path,
                    why: "a leftover worktree whose work is preserved".into(),
                });
            } else {
                plan.keep.push(Kept {
                    what: path.display().to_string(),
                    why: "not known to be preserved".into(),
                });
            }
        }
    }
    // The pool of reusable clones holds no work (each was preserved before it was pooled).
    if std::fs::symlink_metadata(ws.pool()).is_ok() {
        plan.remove.push(Removal::Dir {
            path: ws.pool(),
            why: "finished attempts' clones kept for reuse; their work is preserved".into(),
        });
    }
    let cutoff = SystemTime::now().checked_sub(older_than);
    for run_id in finished_runs {
        let dir = ws.logs(&run_id);
        let old = std::fs::metadata(&dir)
            .and_then(|m| m.modified())
            .is_ok_and(|m| cutoff.is_some_and(|c| m < c));
        if dir.exists() && old {
            plan.remove.push(Removal::Dir {
                path: dir,
                why: format!("logs of finished run {run_id}, older than the cut-off"),
            });
        }
    }
    Ok(plan)
}

/// Removes what `plan` lists.
pub fn apply(ws: &Workspace, plan: &Plan) -> Result<(), CleanError> {
    let git = Git::new(ws.root());
    for removal in &plan.remove {
        match removal {
            Removal::Ref { name, .. } => {
                git.run(&["update-ref", "-d", name])?;
            }
            Removal::Branch { name, .. } => git.delete_branch(name)?,
            Removal::Dir { path, .. } => {
                if ws.owns_worktree_path(path) {
                    let _ = git.worktree_remove(path);
                }
                if *path == ws.pool() && std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir())
                {
                    // A link in its place is removed, never followed.
                    std::fs::remove_file(path).map_err(|source| CleanError::Io {
                        path: path.display().to_string(),
                        source,
                    })?;
                } else if path.exists() {
                    std::fs::remove_dir_all(path).map_err(|source| CleanError::Io {
                        path: path.display().to_string(),
                        source,
                    })?;
                }
            }
        }
    }
    git.worktree_prune()?;
    Ok(())
}
