//! `nightshift loop`: the one-item fixpoint. One item ("make the check pass"), worked by an
//! agent CLI or any command, under the same contract as a plan item (guards, progress, budget,
//! commits, integration), in any git repository, with or without a `nightshift.toml`.

use std::io::Write;
use std::sync::Arc;

use nightshift_core::clock::{Clock, SystemClock};
use nightshift_core::config::{self, AgentConfig, AgentKind, ItemConfig, OutputFormat};
use nightshift_core::engine::{self, RunOptions};
use nightshift_core::halt::ExitClass;
use nightshift_core::plan;

use crate::CommandResult;
use crate::cli::LoopArgs;
use crate::error::CommandError;
use crate::json::{LOG_VERSION, LogLine};
use crate::render;

/// Loop items are named `loop-<UTC time>-<pid>`: unique per loop, so an earlier loop's shipped item
/// never makes a new one a no-op.
const PREFIX: &str = "loop-";

/// Settings that every loop has, whatever the repository's config says (or when it has none).
const MINIMAL: &str = "[agent]\ncommand = [\"true\"]\n[check]\ncommand = \"true\"\n\
                       [[item]]\nid = \"loop\"\nprompt = \"loop\"\n";

pub fn run(args: &LoopArgs) -> CommandResult {
    let ws = super::workspace(&args.repo)?;
    // The repository's config, when it has one, brings guards, limits and budgets; its agent,
    // check and items are replaced by the flags.
    let file = ws.root().join(config::FILE_NAME);
    let mut config = if file.exists() {
        config::load(&file)?
    } else {
        config::parse(MINIMAL, "nightshift loop")?
    };
    config.agent = agent(args);
    config.check.command = Some(args.check.clone());
    config.limits.max_iterations = args.max_iterations;
    config.limits.max_attempts = 1;
    config.plan = None;
    let resumable = unfinished_loop(&ws)?;
    let id = match &resumable {
        Some(id) => id.clone(),
        // The time names it for a person; the pid keeps two loops started in one second apart.
        None => format!(
            "{PREFIX}{}-{}",
            SystemClock.wall().strftime("%Y%m%dt%H%M%S"),
            std::process::id()
        ),
    };
    let prompt = match &args.prompt {
        Some(p) if !p.trim().is_empty() => p.trim().to_owned(),
        Some(_) => {
            return Err(
                CommandError::new(ExitClass::Invariant, "read `--prompt`: it is empty")
                    .hint("say what to do, or leave `--prompt` out to ask for the check to pass"),
            );
        }
        None => format!(
            "Make the check pass: `{}` must exit 0. Fix the code, not the tests: tests, \
             assertions and skips are compared with the start, and weakening them halts the loop.",
            args.check
        ),
    };
    config.items = vec![ItemConfig {
        id,
        prompt,
        check: None,
        paths: Vec::new(),
        span: 0..0,
    }];
    let plan = plan::load(&config, ws.root())?;
    let json = args.json;
    let mut progress = render::Progress::default();
    let mut observe = |event: &nightshift_core::store::Event| {
        let mut out = std::io::stdout().lock();
        if json {
            if let Ok(line) = serde_json::to_string(&LogLine {
                version: LOG_VERSION,
                event,
            }) {
                crate::out::note_stdout(writeln!(out, "{line}"));
            }
        } else if let Some(line) = progress.line(event) {
            crate::out::note_stdout(writeln!(out, "{line}"));
        }
    };
    let summary = engine::run(
        RunOptions {
            workspace: ws.clone(),
            config,
            plan,
            fresh: false,
            clock: Arc::new(SystemClock),
            loop_mode: true,
            until: None,
            restart_after: None,
            config_source: None,
            reload_config: false,
            previous_exit: None,
            confine_checks: false,
        },
        &mut observe,
    )?;
    if !json {
        let item = summary.items.first();
        outln!(
            "loop halted: {} (exit {}){}",
            summary.halt,
            summary.halt.class().code(),
            item.and_then(|i| i.reason.as_deref())
                .map(|r| format!("\n  {r}"))
                .unwrap_or_default()
        );
        if summary.halt.class() != ExitClass::Ok
            && summary.halt.class() != ExitClass::Converged
            && let Some(item) = item
        {
            outln!(
                "  `nightshift explain {}` shows the trajectory; `nightshift restore {}` the work",
                item.id,
                item.id
            );
        }
    }
    Ok(summary.halt.class().code())
}

fn agent(args: &LoopArgs) -> AgentConfig {
    match (&args.exec, args.agent) {
        (Some(exec), _) => AgentConfig {
            kind: AgentKind::Command,
            command: vec!["sh".into(), "-c".into(), exec.clone()],
            binary: None,
            model: None,
            args: Vec::new(),
            format: OutputFormat::Text,
            policy: Default::default(),
        },
        (None, kind) => AgentConfig {
            kind: match kind {
                Some(crate::cli::LoopAgent::Codex) => AgentKind::Codex,
                Some(crate::cli::LoopAgent::Gemini) => AgentKind::Gemini,
                Some(crate::cli::LoopAgent::Aider) => AgentKind::Aider,
                Some(crate::cli::LoopAgent::Claude) | None => AgentKind::Claude,
            },
            command: Vec::new(),
            binary: None,
            model: args.model.clone(),
            args: Vec::new(),
            format: OutputFormat::Text,
            policy: Default::default(),
        },
    }
}

/// The item of an unfinished loop (killed, stopped), which this loop resumes. An unfinished
/// plan run is not ours to touch: `nightshift run` resumes it.
fn unfinished_loop(
    ws: &nightshift_core::workspace::Workspace,
) -> Result<Option<String>, CommandError> {
    let Some(store) = super::read_store(ws)? else {
        return Ok(None);
    };
    let Some(run) = store.unfinished_run()? else {
        return Ok(None);
    };
    let items = store.items(&run.id)?;
    match items.as_slice() {
        [only] if only.id.starts_with(PREFIX) => Ok(Some(only.id.clone())),
        _ => Err(CommandError::new(
            ExitClass::Workspace,
            format!(
                "start a loop: run_locked: the plan run {} is unfinished in this repository",
                run.id
            ),
        )
        .hint("`nightshift run` resumes it, or `nightshift run --fresh` closes it first")),
    }
}
