//! `__exec` where Linux confinement does not exist (macOS, the BSDs): the target runs in its own
//! process session, unconfined, and the status file says so.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use super::{Held, SETUP_FAILED, Spec, keep_env};

pub(super) fn exec(spec: &Spec, argv: &[OsString], probe: bool) -> i32 {
    let mut held = Held::unconfined(format!(
        "no Landlock or network namespaces on {}",
        std::env::consts::OS
    ));
    held.session = true;
    if let Some(path) = &spec.status
        && let Ok(json) = serde_json::to_vec(&held)
        && std::fs::write(path, json).is_err()
    {
        return SETUP_FAILED;
    }
    if spec.require {
        eprintln!(
            "nightshift: confinement did not hold ({held}); `[sandbox] require = true` in \
             nightshift.toml refuses to run unconfined"
        );
        return SETUP_FAILED;
    }
    if probe {
        return 0;
    }
    let Some((program, args)) = argv.split_first() else {
        return SETUP_FAILED;
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(allow) = &spec.env_keep {
        cmd.env_clear();
        cmd.envs(
            std::env::vars_os().filter(|(k, _)| k.to_str().is_some_and(|k| keep_env(allow, k))),
        );
    }
    if let Some(tmp) = &spec.tmp {
        let _ = std::fs::create_dir_all(tmp);
        cmd.env("TMPDIR", tmp);
    }
    let err = cmd.exec();
    eprintln!(
        "nightshift: could not start {}: {err}",
        program.to_string_lossy()
    );
    127
}
