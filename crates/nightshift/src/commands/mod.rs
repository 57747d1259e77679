//! One module per command.

pub mod accept;
pub mod clean;
pub mod confirm;
pub mod demo;
pub mod doctor;
pub mod engine;
pub mod explain;
pub mod fixpoint;
pub mod init;
pub mod log;
pub mod notify;
pub mod pause;
pub mod probe;
pub mod replay;
pub mod report;
pub mod restore;
pub mod run;
pub mod service;
pub mod status;
pub mod stop;
pub mod testclock;
pub mod wait;

use std::path::{Path, PathBuf};

use nightshift_core::git::Git;
use nightshift_core::halt::ExitClass;
use nightshift_core::store::Store;
use nightshift_core::workspace::Workspace;

use crate::cli::RepoArgs;
use crate::error::{CommandError, chain};

/// The repository the command works on: `-C DIR` or the current directory.
pub fn workspace(args: &RepoArgs) -> Result<Workspace, CommandError> {
    let dir = match &args.repo {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| {
            CommandError::new(
                ExitClass::Workspace,
                format!("read the current directory: {e}"),
            )
        })?,
    };
    Ok(Workspace::new(repo_root(&dir)?))
}

/// The top level of the git repository containing `dir`.
pub fn repo_root(dir: &Path) -> Result<PathBuf, CommandError> {
    if !dir.is_dir() {
        return Err(CommandError::new(
            ExitClass::Workspace,
            format!(
                "find the repository: workspace_invalid: {} is not a directory",
                dir.display()
            ),
        ));
    }
    Git::new(dir).toplevel().map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!(
                "find the repository: workspace_invalid: {} is not inside a git repository",
                dir.display()
            ),
        )
        .hint(format!(
            "run nightshift inside a git work tree, or `git init` one ({})",
            chain(&e)
        ))
    })
}

/// The store for reading, or `None` when no run has happened here.
pub fn read_store(ws: &Workspace) -> Result<Option<Store>, CommandError> {
    let path = ws.state_db();
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some(Store::open_read_only(&path)?))
}
