//! `nightshift restore ITEM [ATTEMPT]`: a branch from an attempt's kept work.
//!
//! Every attempt is kept under `refs/nightshift/preserve/<item>/<attempt>` before its worktree
//! goes. A failed attempt's ref is a snapshot commit holding its whole tree (modified and
//! untracked files) on top of its own commits; a shipped attempt's ref is its candidate commit.

use nightshift_core::git::Git;
use nightshift_core::halt::ExitClass;

use crate::CommandResult;
use crate::cli::RestoreArgs;
use crate::error::{CommandError, chain};

pub fn run(args: &RestoreArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let git = Git::new(ws.root());
    let git_err =
        |e: nightshift_core::git::GitError| CommandError::new(ExitClass::Internal, chain(&e));
    let prefix = format!("refs/nightshift/preserve/{}/", args.item);
    let mut kept: Vec<u32> = git
        .refs_under(&[&prefix])
        .map_err(git_err)?
        .iter()
        .filter_map(|r| r.strip_prefix(&prefix)?.parse().ok())
        .collect();
    kept.sort_unstable();
    let Some(&latest) = kept.last() else {
        let items = kept_items(&git).map_err(git_err)?;
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!("restore `{}`: no attempt of it is kept", args.item),
        )
        .hint(if items.is_empty() {
            "nothing is kept in this repository yet".to_owned()
        } else {
            format!("items with kept work: {}", items.join(", "))
        }));
    };
    let attempt = args.attempt.unwrap_or(latest);
    if !kept.contains(&attempt) {
        let list: Vec<String> = kept.iter().map(u32::to_string).collect();
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!(
                "restore attempt {attempt} of `{}`: it is not kept",
                args.item
            ),
        )
        .hint(format!("kept attempts: {}", list.join(", "))));
    }
    let source = format!("{prefix}{attempt}");
    let commit = git
        .resolve(&source)
        .map_err(git_err)?
        .ok_or_else(|| CommandError::new(ExitClass::Internal, format!("read {source}")))?;
    let branch = format!("restored/{}/{attempt}", args.item);
    match git
        .resolve(&format!("refs/heads/{branch}"))
        .map_err(git_err)?
    {
        Some(existing) if existing == commit => {}
        Some(_) => {
            return Err(CommandError::new(
                ExitClass::Invariant,
                format!("create branch {branch}: it exists and points elsewhere"),
            )
            .hint(format!(
                "delete or rename it first (git branch -m {branch} {branch}-old)"
            )));
        }
        None => {
            git.run(&["branch", &branch, &commit]).map_err(git_err)?;
        }
    }
    let short = commit.get(..10).unwrap_or(&commit);
    outln!(
        "restored attempt {attempt} of {} to branch {branch} ({short})",
        args.item
    );
    outln!("  see what it did:   git log --stat -p {branch}");
    outln!("  work on it:        git switch {branch}");
    Ok(0)
}

/// Item ids that have kept work.
fn kept_items(git: &Git) -> Result<Vec<String>, nightshift_core::git::GitError> {
    let mut items: Vec<String> = git
        .refs_under(&["refs/nightshift/preserve/"])?
        .iter()
        .filter_map(|r| {
            r.strip_prefix("refs/nightshift/preserve/")?
                .split('/')
                .next()
                .map(str::to_owned)
        })
        .collect();
    items.dedup();
    Ok(items)
}
