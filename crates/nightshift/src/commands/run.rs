//! `nightshift run`: check the input, then supervise the engine (`nightshift engine`) until the
//! run halts: restart it when it dies, keep `health.json` fresh, alert, keep the machine awake
//! (docs/supervisor.md). `--detach` does the same in the background.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nightshift_core::clock::{Clock, SystemClock};
use nightshift_core::halt::ExitClass;
use nightshift_core::store::{EventKind, Store};
use nightshift_core::supervise::{self, Policy};
use nightshift_core::workspace::Workspace;
use nightshift_core::{config, plan};

use crate::CommandResult;
use crate::cli::RunArgs;
use crate::error::CommandError;

/// How long `run --detach` waits for the background run to open its run.
const DETACH_WAIT: Duration = Duration::from_secs(60);

pub fn run(args: &RunArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    // Everything that can be wrong with the input is found before anything is written.
    let config = config::load(&ws.root().join(config::FILE_NAME))?;
    plan::load(&config, ws.root())?;
    if args.resume_only && !has_unfinished_run(&ws)? {
        println!(
            "no unfinished run in {}; nothing to resume",
            ws.root().display()
        );
        return Ok(0);
    }
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::new(
            ExitClass::Execution,
            format!("find the nightshift executable: {e}"),
        )
    })?;
    if args.detach {
        return detach(&ws, &exe, args);
    }
    let root = ws.root().to_owned();
    let (json, fresh) = (args.json, args.fresh);
    let engine = Box::new(move |first: bool| {
        let mut cmd = Command::new(&exe);
        cmd.arg("engine").arg("-C").arg(&root);
        if json {
            cmd.arg("--json");
        }
        // A restarted engine resumes: `--fresh` is for the first start only.
        if first && fresh {
            cmd.arg("--fresh");
        }
        cmd
    });
    let code = supervise::run(
        supervise::Options {
            workspace: ws.clone(),
            clock: Arc::new(SystemClock),
            policy: Policy::DEFAULT,
            engine,
            prevent_sleep: config.run.prevent_sleep,
            tokens_limit: config.budget.run_tokens,
            usd_limit: config.budget.run_usd,
            // lead: wire config.alert.no_ship_hours
            no_ship_hours: supervise::NO_SHIP_HOURS,
        },
        &mut |line| eprintln!("nightshift: {line}"),
    )
    .map_err(|e| CommandError::new(ExitClass::Execution, crate::error::chain(&e)))?;
    if code == ExitClass::Liveness.code() {
        eprintln!(
            "error: the engine kept dying (restart_storm); see .nightshift/ATTENTION and the output above"
        );
        eprintln!("  help: the run is resumable: fix the cause, then `nightshift run`");
    }
    Ok(code)
}

fn has_unfinished_run(ws: &Workspace) -> Result<bool, CommandError> {
    Ok(match super::read_store(ws)? {
        Some(store) => store.unfinished_run()?.is_some(),
        None => false,
    })
}

/// Starts the supervisor again in its own session, output to a log, and returns once the run
/// is open (or the background process failed).
fn detach(ws: &Workspace, exe: &Path, args: &RunArgs) -> CommandResult {
    let logs = ws.dir().join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("create {}: {e}", logs.display()),
        )
    })?;
    let stamp = SystemClock.wall().strftime("%Y%m%dT%H%M%SZ").to_string();
    let log = logs.join(format!("supervisor-{stamp}-{}.log", std::process::id()));
    let open_log = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| {
                CommandError::new(ExitClass::Workspace, format!("open {}: {e}", log.display()))
            })
    };
    let before = match super::read_store(ws)? {
        Some(store) => store.last_seq()?,
        None => 0,
    };
    let mut cmd = Command::new(exe);
    cmd.arg("run").arg("-C").arg(ws.root());
    if args.json {
        cmd.arg("--json");
    }
    if args.fresh {
        cmd.arg("--fresh");
    }
    cmd.stdin(Stdio::null())
        .stdout(open_log()?)
        .stderr(open_log()?);
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().map_err(|e| {
        CommandError::new(
            ExitClass::Execution,
            format!("start the background supervisor: {e}"),
        )
    })?;
    let started = Instant::now();
    let run_id = loop {
        if let Some(id) = opened_run(ws, before) {
            break Some(id);
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                let code = status.code().unwrap_or(ExitClass::Internal.code());
                // Maybe it finished at once (nothing to do): the journal says so.
                if let Some(id) = opened_run(ws, before) {
                    print_detached(ws, args, &id, child.id(), &log);
                    return Ok(0);
                }
                let tail = std::fs::read_to_string(&log).unwrap_or_default();
                eprint!("{tail}");
                return Err(CommandError::new(
                    class_of(code),
                    format!(
                        "start the run in the background: it exited with {code} (log: {})",
                        log.display()
                    ),
                ));
            }
            Ok(None) => {}
            Err(e) => {
                return Err(CommandError::new(
                    ExitClass::Execution,
                    format!("watch the background supervisor: {e}"),
                ));
            }
        }
        if started.elapsed() >= DETACH_WAIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    match run_id {
        Some(id) => print_detached(ws, args, &id, child.id(), &log),
        None => println!(
            "started in the background (supervisor pid {}), but no run opened within {}s; see {}",
            child.id(),
            DETACH_WAIT.as_secs(),
            log.display()
        ),
    }
    Ok(0)
}

/// The run a `run_started` or `run_resumed` after `before` names.
fn opened_run(ws: &Workspace, before: i64) -> Option<String> {
    let path = ws.state_db();
    if !path.exists() {
        return None;
    }
    let store = Store::open_read_only(&path).ok()?;
    store
        .events_after(before, 10_000)
        .ok()?
        .into_iter()
        .find(|e| {
            matches!(
                e.kind,
                EventKind::RunStarted { .. } | EventKind::RunResumed { .. }
            )
        })
        .map(|e| e.run_id)
}

fn print_detached(ws: &Workspace, args: &RunArgs, run_id: &str, pid: u32, log: &Path) {
    let c = match &args.repo.repo {
        Some(_) => format!(" -C {}", ws.root().display()),
        None => String::new(),
    };
    println!("run {run_id} is working in the background (supervisor pid {pid})");
    println!("  follow:  nightshift{c} log -f");
    println!("  status:  nightshift{c} status");
    println!("  wait:    nightshift{c} wait");
    println!("  stop:    nightshift{c} stop");
    println!("  output:  {}", log.display());
}

fn class_of(code: i32) -> ExitClass {
    nightshift_core::halt::TABLE
        .iter()
        .map(|(_, _, c)| *c)
        .find(|c| c.code() == code)
        .unwrap_or(ExitClass::Internal)
}
