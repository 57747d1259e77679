//! `nightshift run`: check the input, then supervise the engine (`nightshift engine`) until the
//! run halts: restart it when it dies, keep `health.json` fresh, alert, keep the machine awake
//! (docs/supervisor.md). `--detach` does the same in the background.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nightshift_core::clock::{Clock, SystemClock};
use nightshift_core::halt::{ExitClass, HaltReason};
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
    let clock = super::testclock::clock();
    // `--until 07:00` means the next 07:00 from now: resolved once, here, so an engine restarted
    // after it does not read it as tomorrow's.
    let until = parse_until(args.until.as_deref(), clock.as_ref())?;
    if args.resume_only && !has_unfinished_run(&ws)? {
        outln!(
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
    // A channel that cannot deliver here is said now, on stderr and in ATTENTION (issue 6);
    // then the quick doctor: a failing safety or product finding refuses to start.
    for line in nightshift_core::notify::run_starting(&ws, clock.as_ref(), &config.notify) {
        eoutln!("warning: {line}");
    }
    super::doctor::gate_run(&ws, &config)?;
    let until_arg = until.map(|u| (u.at.to_string(), u.given));
    let root = ws.root().to_owned();
    let (json, fresh, reload_config) = (args.json, args.fresh, args.reload_config);
    let engine = Box::new(move |start: supervise::Start| {
        let first = start == supervise::Start::First;
        let mut cmd = Command::new(&exe);
        cmd.arg("engine").arg("-C").arg(&root);
        if json {
            cmd.arg("--json");
        }
        // A restarted engine resumes: `--fresh` is for the first start only, and so is the
        // deadline (the engine journals it; a restart keeps the journaled one).
        if first && fresh {
            cmd.arg("--fresh");
        }
        if first && let Some((at, given)) = &until_arg {
            cmd.arg("--until").arg(at).arg("--until-given").arg(given);
        }
        if first && reload_config {
            cmd.arg("--reload-config");
        }
        if let supervise::Start::Restart {
            journal_from,
            previous,
        } = start
        {
            cmd.arg("--restart-after").arg(journal_from.to_string());
            cmd.arg("--previous-exit").arg(previous.to_string());
        }
        cmd
    });
    let ended = supervise::run(
        supervise::Options {
            workspace: ws.clone(),
            clock: clock.clone(),
            policy: Policy::DEFAULT,
            engine,
            prevent_sleep: config.run.prevent_sleep,
            tokens_limit: config.budget.run_tokens,
            usd_limit: config.budget.run_usd,
            // The engine raises `no_ship` between its steps, from `[alert] no_ship_hours`; the
            // supervisor's own would ring the same alert twice.
            no_ship_hours: 0.0,
            notify: config.notify.clone(),
        },
        &mut |line| eoutln!("nightshift: {line}"),
    )
    .map_err(|e| CommandError::new(ExitClass::Execution, crate::error::chain(&e)))?;
    if ended.halt == Some(HaltReason::RestartStorm) {
        eoutln!(
            "error: the engine kept dying (restart_storm); see .nightshift/ATTENTION and the output above"
        );
        eoutln!("  help: the run is resumable: fix the cause, then `nightshift run`");
    }
    Ok(ended.code)
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
    if args.reload_config {
        cmd.arg("--reload-config");
    }
    if let Some(until) = &args.until {
        cmd.arg("--until").arg(until);
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
                eout!("{tail}");
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
        None => outln!(
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
    outln!("run {run_id} is working in the background (supervisor pid {pid})");
    outln!("  follow:  nightshift{c} log -f");
    outln!("  status:  nightshift{c} status");
    outln!("  wait:    nightshift{c} wait");
    outln!("  stop:    nightshift{c} stop");
    outln!("  output:  {}", log.display());
}

fn class_of(code: i32) -> ExitClass {
    nightshift_core::halt::TABLE
        .iter()
        .map(|(_, _, c)| *c)
        .find(|c| c.code() == code)
        .unwrap_or(ExitClass::Internal)
}

/// Reads `--until` (local `HH:MM`, the next one from now, or RFC 3339) against `clock`.
pub fn parse_until(
    text: Option<&str>,
    clock: &dyn Clock,
) -> Result<Option<nightshift_core::engine::Until>, CommandError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let tz = jiff::tz::TimeZone::system();
    let at = nightshift_core::control::parse_until(text, clock.wall(), &tz).map_err(|reason| {
        CommandError::new(ExitClass::Invariant, format!("read --until: {reason}")).hint(
            "give a local time like 07:00, or an RFC 3339 time like 2026-12-01T07:00:00+01:00",
        )
    })?;
    Ok(Some(nightshift_core::engine::Until {
        at,
        given: text.to_owned(),
    }))
}
