//! What the benches share: git run the way their bare-git sides need it (no user or system
//! config, a fixed identity, stdin closed).

use std::path::Path;
use std::process::{Command, Stdio};

fn git_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .stdin(Stdio::null());
    cmd
}

/// Runs git; returns its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir, args).output().expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
