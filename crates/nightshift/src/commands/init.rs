//! `nightshift init`: a commented nightshift.toml, and `.nightshift/` ignored through
//! `.git/info/exclude` (no tracked file is touched).

use nightshift_core::config;
use nightshift_core::halt::ExitClass;

use crate::CommandResult;
use crate::cli::InitArgs;
use crate::error::CommandError;

pub fn run(args: &InitArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    let path = ws.root().join(config::FILE_NAME);
    if path.exists() && !args.force {
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!("write {}: it already exists", path.display()),
        )
        .hint("edit it, or pass --force to replace it with the commented template"));
    }
    std::fs::write(&path, config::template()).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("write {}: {e}", path.display()),
        )
    })?;
    // `.nightshift/` is kept out of git through `.git/info/exclude`, never by editing a tracked
    // file: a dirty `.gitignore` would hold every green item at integration.
    let common = nightshift_core::git::Git::new(ws.root())
        .common_dir()
        .map_err(|e| {
            CommandError::new(ExitClass::Workspace, format!("find the git directory: {e}"))
        })?;
    nightshift_core::engine::ensure_excluded(&common)?;
    outln!("wrote {}", path.display());
    outln!(
        "kept .nightshift/ out of git in {} (no tracked file is changed)",
        common.join("info").join("exclude").display()
    );
    outln!("next: set [agent].command and [check].command, add [[item]]s, then `nightshift run`");
    Ok(0)
}
