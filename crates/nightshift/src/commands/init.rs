//! `nightshift init`: a commented nightshift.toml, and `.nightshift/` ignored.

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
    let gitignore = ws.root().join(".gitignore");
    let existing = std::fs::read_to_string(&gitignore).unwrap_or_default();
    let ignored = existing.lines().any(|l| {
        matches!(
            l.trim(),
            ".nightshift" | ".nightshift/" | "/.nightshift" | "/.nightshift/"
        )
    });
    if !ignored {
        let mut text = existing;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("/.nightshift/\n");
        std::fs::write(&gitignore, text).map_err(|e| {
            CommandError::new(
                ExitClass::Workspace,
                format!("write {}: {e}", gitignore.display()),
            )
        })?;
    }
    outln!("wrote {}", path.display());
    if !ignored {
        outln!("added /.nightshift/ to {}", gitignore.display());
    }
    outln!("next: set [agent].command and [check].command, add [[item]]s, then `nightshift run`");
    Ok(0)
}
