//! `nightshift service install [--dry-run]`: a per-user service that resumes a live run after a
//! reboot (systemd user unit on Linux, launchd agent on macOS).

use std::path::PathBuf;
use std::process::Command;

use nightshift_core::halt::ExitClass;
use nightshift_core::supervise::service::{self, Manager};

use crate::CommandResult;
use crate::cli::{ServiceAction, ServiceArgs};
use crate::error::CommandError;

pub fn run(args: &ServiceArgs) -> CommandResult {
    match &args.action {
        ServiceAction::Install(install) => {
            let ws = super::workspace(&install.repo)?;
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .ok_or_else(|| {
                    CommandError::new(
                        ExitClass::Invariant,
                        "find the home directory: HOME is not set",
                    )
                })?;
            let exe = std::env::current_exe().map_err(|e| {
                CommandError::new(
                    ExitClass::Execution,
                    format!("find the nightshift executable: {e}"),
                )
            })?;
            let file = service::service_file(Manager::native(), &home, &exe, ws.root());
            let enable: Vec<String> = file.enable.iter().map(|c| c.join(" ")).collect();
            if install.dry_run {
                outln!("would write {}:", file.path.display());
                out!("{}", file.content);
                for cmd in &enable {
                    outln!("would run: {cmd}");
                }
                return Ok(0);
            }
            if let Some(dir) = file.path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    CommandError::new(
                        ExitClass::Workspace,
                        format!("create {}: {e}", dir.display()),
                    )
                })?;
            }
            std::fs::write(&file.path, &file.content).map_err(|e| {
                CommandError::new(
                    ExitClass::Workspace,
                    format!("write {}: {e}", file.path.display()),
                )
            })?;
            outln!("wrote {}", file.path.display());
            for (argv, text) in file.enable.iter().zip(&enable) {
                let Some((program, rest)) = argv.split_first() else {
                    continue;
                };
                match Command::new(program).args(rest).output() {
                    Ok(out) if out.status.success() => outln!("ran: {text}"),
                    Ok(out) => {
                        let why = String::from_utf8_lossy(&out.stderr);
                        outln!(
                            "could not run `{text}`: {}; run it yourself once it can work",
                            why.lines().next().unwrap_or("failed").trim()
                        );
                        print_rest(&enable, text);
                        return Ok(0);
                    }
                    Err(e) => {
                        outln!(
                            "could not run `{text}`: {e}; run it yourself where it is available"
                        );
                        print_rest(&enable, text);
                        return Ok(0);
                    }
                }
            }
            outln!(
                "{} resumes a live run in {} at {}",
                file.name,
                ws.root().display(),
                if file.manager == Manager::Systemd {
                    "boot (with lingering: `loginctl enable-linger`) or login"
                } else {
                    "login"
                }
            );
            Ok(0)
        }
    }
}

/// Lists the enable commands from `failed` on.
fn print_rest(enable: &[String], failed: &str) {
    let from = enable.iter().position(|c| c == failed).unwrap_or(0);
    outln!("to enable it:");
    for cmd in &enable[from..] {
        outln!("  {cmd}");
    }
}
