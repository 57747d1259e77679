//! The interpreter: runs a parsed [`Script`] against a [`Context`].
//!
//! Nothing here reads the process cwd or environment; [`Context`] carries both, so tests run
//! scripts against a temporary directory without touching global state.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::claude::{self, SessionInfo};
use crate::script::{Busy, Emit, Resets, Script, Span, Step, Var, WireFormat};
use crate::{clock, codex, gemini, misbehave};

/// Everything a script can see of its invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The work tree: relative paths in the script resolve against it.
    pub cwd: PathBuf,
    /// `NIGHTSHIFT_ITEM`.
    pub item: Option<String>,
    /// `NIGHTSHIFT_ATTEMPT`, 1-based.
    pub attempt: u64,
    /// `NIGHTSHIFT_ITERATION`, 1-based.
    pub iteration: u64,
    /// `NIGHTSHIFT_PROMPT_FILE`.
    pub prompt_file: Option<PathBuf>,
    /// `NIGHTSHIFT_FEEDBACK_FILE`.
    pub feedback_file: Option<PathBuf>,
    /// Under `--as claude|codex`: the CLI session this process runs (the `--session-id`, the
    /// resumed id, or a new Codex thread); `emit`, `busy` and `usage-limit` print it.
    pub cli_session: Option<String>,
}

/// An environment variable the fake agent cannot make sense of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A counter that is not a positive integer.
    #[error("{var} must be a positive integer, got `{value}`")]
    NotPositive {
        /// The variable's name.
        var: &'static str,
        /// Its value (lossily decoded).
        value: String,
    },
    /// A value that must be text but is not UTF-8.
    #[error("{var} is not valid UTF-8")]
    NotUtf8 {
        /// The variable's name.
        var: &'static str,
    },
}

impl Context {
    /// A context for `cwd` with no item, attempt 1 and iteration 1.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            item: None,
            attempt: 1,
            iteration: 1,
            prompt_file: None,
            feedback_file: None,
            cli_session: None,
        }
    }

    /// Reads the `NIGHTSHIFT_*` variables through `lookup` (e.g. `|key| std::env::var_os(key)`).
    /// Absent or empty values fall back to the defaults of [`Context::new`].
    pub fn from_env(
        cwd: impl Into<PathBuf>,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, EnvError> {
        let present = |var: &str| lookup(var).filter(|value| !value.is_empty());
        let counter = |var: &'static str| match present(var) {
            None => Ok(1),
            Some(value) => value
                .to_str()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .filter(|&n| n >= 1)
                .ok_or_else(|| EnvError::NotPositive {
                    var,
                    value: value.to_string_lossy().into_owned(),
                }),
        };
        let item = match present("NIGHTSHIFT_ITEM") {
            None => None,
            Some(value) => Some(value.into_string().map_err(|_| EnvError::NotUtf8 {
                var: "NIGHTSHIFT_ITEM",
            })?),
        };
        Ok(Self {
            cwd: cwd.into(),
            item,
            attempt: counter("NIGHTSHIFT_ATTEMPT")?,
            iteration: counter("NIGHTSHIFT_ITERATION")?,
            prompt_file: present("NIGHTSHIFT_PROMPT_FILE").map(PathBuf::from),
            feedback_file: present("NIGHTSHIFT_FEEDBACK_FILE").map(PathBuf::from),
            cli_session: None,
        })
    }

    fn value_of(&self, var: Var) -> u64 {
        match var {
            Var::Iteration => self.iteration,
            Var::Attempt => self.attempt,
        }
    }
}

/// The exit code for a runtime failure of a step (and for syntax and usage errors).
pub const FAILURE_EXIT: i32 = 2;

/// What to do after a step.
enum Flow {
    Continue,
    Exit(i32),
}

/// Runs `script`: stdout output goes to `out`, stderr output and error messages to `err`.
/// Returns the exit code: that of an `exit` step, 0 at the end of the script, or 2 when a
/// step fails (after printing `fake-agent: <file>:<line>: <what failed>` to `err`).
pub fn execute<O, E>(script: &Script, ctx: &Context, out: &mut O, err: &mut E) -> i32
where
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    let started = Instant::now();
    // The `when` block being run (its line) and whether its condition held when it was entered.
    let mut block: Option<(usize, bool)> = None;
    for statement in &script.statements {
        if let Some(guard) = &statement.guard {
            let holds = match block {
                Some((line, holds)) if line == guard.line => holds,
                _ => {
                    let holds = guard.condition.holds(|var| ctx.value_of(var), &ctx.cwd);
                    block = Some((guard.line, holds));
                    holds
                }
            };
            if !holds {
                continue;
            }
        }
        match run_step(&statement.step, ctx, started, out, err) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Exit(code)) => return finish(code, out, err),
            Err(message) => {
                // If stderr itself is broken there is nobody left to tell; the code still says it.
                let _ = writeln!(
                    err,
                    "fake-agent: {}:{}: {message}",
                    script.name, statement.line
                );
                return FAILURE_EXIT;
            }
        }
    }
    finish(0, out, err)
}

fn finish<O, E>(code: i32, out: &mut O, err: &mut E) -> i32
where
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    match out.flush() {
        Ok(()) => code,
        Err(error) => {
            let _ = writeln!(err, "fake-agent: cannot flush stdout: {error}");
            FAILURE_EXIT
        }
    }
}

fn run_step<O, E>(
    step: &Step,
    ctx: &Context,
    started: Instant,
    out: &mut O,
    err: &mut E,
) -> Result<Flow, String>
where
    O: Write + ?Sized,
    E: Write + ?Sized,
{
    match step {
        Step::Write { path, content } => {
            let target = path.under(&ctx.cwd);
            create_parent(&target, &path.to_string())?;
            fs::write(&target, content).map_err(|e| format!("write {path}: {e}"))?;
        }
        Step::Append { path, content } => {
            let target = path.under(&ctx.cwd);
            create_parent(&target, &path.to_string())?;
            append(&target, content.as_bytes()).map_err(|e| format!("append {path}: {e}"))?;
        }
        Step::Replace { path, from, to } => {
            let target = path.under(&ctx.cwd);
            let text =
                fs::read_to_string(&target).map_err(|e| format!("replace in {path}: {e}"))?;
            if !text.contains(from.as_str()) {
                return Err(format!("replace in {path}: text {from:?} not found"));
            }
            fs::write(&target, text.replacen(from.as_str(), to, 1))
                .map_err(|e| format!("replace in {path}: {e}"))?;
        }
        Step::Delete { path } => {
            let target = path.under(&ctx.cwd);
            let metadata =
                fs::symlink_metadata(&target).map_err(|e| format!("delete {path}: {e}"))?;
            let removed = if metadata.is_dir() {
                fs::remove_dir_all(&target)
            } else {
                fs::remove_file(&target)
            };
            removed.map_err(|e| format!("delete {path}: {e}"))?;
        }
        Step::Mkdir { path } => {
            fs::create_dir_all(path.under(&ctx.cwd)).map_err(|e| format!("mkdir {path}: {e}"))?;
        }
        Step::Print(text) => write_line(out, text).map_err(|e| format!("print to stdout: {e}"))?,
        Step::Stderr(text) => write_line(err, text).map_err(|e| format!("print to stderr: {e}"))?,
        Step::Emit(Emit::Claude(emit)) => {
            print_json(
                out,
                "emit claude",
                &emit.stream(&claude_session(ctx, started)),
            )?;
        }
        Step::Emit(Emit::Codex(emit)) => {
            print_json(out, "emit codex", &emit.stream(&codex_thread(ctx)))?;
        }
        Step::Emit(Emit::Gemini(emit)) => {
            let session = gemini::GeminiSession {
                session_id: gemini::session_id(ctx.item.as_deref(), ctx.attempt, ctx.iteration),
                now_ms: clock::now_epoch_ms(),
                duration_ms: elapsed_ms(started),
            };
            print_json(out, "emit gemini", &emit.stream(&session))?;
        }
        Step::Record { path } => {
            let target = ctx.cwd.join(path);
            let shown = path.display().to_string();
            create_parent(&target, &shown)?;
            let record = json!({
                "item": ctx.item,
                "attempt": ctx.attempt,
                "iteration": ctx.iteration,
                "cwd": ctx.cwd.to_string_lossy(),
                "prompt_file": ctx.prompt_file.as_deref().map(Path::to_string_lossy),
                "feedback_file": ctx.feedback_file.as_deref().map(Path::to_string_lossy),
            });
            let mut line = serde_json::to_string(&record)
                .map_err(|e| format!("record {shown}: cannot encode JSON: {e}"))?;
            line.push('\n');
            // One write of a whole line under O_APPEND, so concurrent agents don't interleave.
            append(&target, line.as_bytes()).map_err(|e| format!("record {shown}: {e}"))?;
        }
        Step::Sleep(duration) => std::thread::sleep(*duration),
        Step::Exit(code) => return Ok(Flow::Exit(*code)),
        Step::Touch { path } => {
            let target = ctx.cwd.join(path);
            let shown = path.display().to_string();
            create_parent(&target, &shown)?;
            touch(&target).map_err(|e| format!("touch {shown}: {e}"))?;
        }
        Step::GoSilent(span) => pause(*span),
        Step::IdleTicks(span) => idle_ticks(*span),
        Step::Busy(busy) => run_busy(busy, ctx, started, out)?,
        Step::SpawnOrphan { path, interval } => {
            let target = ctx.cwd.join(path);
            let shown = path.display().to_string();
            create_parent(&target, &shown)?;
            let pid = misbehave::spawn_orphan(&target, *interval, &ctx.cwd)
                .map_err(|e| format!("spawn-orphan {shown}: cannot start /bin/sh: {e}"))?;
            write_line(err, &format!("fake-agent: orphan pid {pid}"))
                .map_err(|e| format!("print to stderr: {e}"))?;
        }
        Step::IgnoreSigterm => {
            misbehave::ignore_sigterm().map_err(|e| format!("ignore-sigterm: {e}"))?;
        }
        Step::Crash => {
            // Whatever was printed is already flushed (every line is); a crash says no more.
            misbehave::crash()
        }
        Step::UsageLimit { resets, format } => {
            let now = clock::now_epoch();
            let resets_at = match resets {
                Resets::At(epoch) => *epoch,
                Resets::In(wait) => {
                    now.saturating_add(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
                }
            };
            let lines = match format {
                WireFormat::Claude => {
                    claude::usage_limit(&claude_session(ctx, started), resets_at, now)
                }
                WireFormat::Codex => codex::usage_limit(resets_at, now),
            };
            print_json(out, "usage-limit", &lines)?;
            return Ok(Flow::Exit(USAGE_LIMIT_EXIT));
        }
        Step::EmitMalformed => {
            for line in claude::malformed(&claude_session(ctx, started)) {
                write_line(out, &line).map_err(|e| format!("emit-malformed: {e}"))?;
            }
        }
    }
    Ok(Flow::Continue)
}

/// The exit code of a CLI that stopped at a usage limit (Claude and Codex both use 1).
pub const USAGE_LIMIT_EXIT: i32 = 1;

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The Codex thread this process prints: the CLI session under `--as codex`, else one
/// derived from the item's coordinates.
fn codex_thread(ctx: &Context) -> String {
    ctx.cli_session
        .clone()
        .unwrap_or_else(|| codex::thread_id(ctx.item.as_deref(), ctx.attempt, ctx.iteration))
}

fn claude_session(ctx: &Context, started: Instant) -> SessionInfo {
    SessionInfo {
        session_id: ctx
            .cli_session
            .clone()
            .unwrap_or_else(|| claude::session_id(ctx.item.as_deref(), ctx.attempt, ctx.iteration)),
        cwd: ctx.cwd.to_string_lossy().into_owned(),
        duration_ms: elapsed_ms(started),
    }
}

/// Prints each value as one JSON line, flushing each.
fn print_json<O: Write + ?Sized>(out: &mut O, what: &str, lines: &[Value]) -> Result<(), String> {
    for value in lines {
        let line =
            serde_json::to_string(value).map_err(|e| format!("{what}: cannot encode JSON: {e}"))?;
        write_line(out, &line).map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// Blocks in sleep for the span; `Forever` never returns.
/// CPU an idle tick burns, and how often: 10 ms (one clock tick) every 2 s (0.5% of a core), like the idle real
/// CLIs measured in 2026-12 (Claude a tick every few seconds, Codex every 2–6 s).
const IDLE_BURN: Duration = Duration::from_millis(10);
const IDLE_EVERY: Duration = Duration::from_secs(2);

fn idle_ticks(span: Span) {
    let start = Instant::now();
    loop {
        let burn = Instant::now();
        let mut x = 0u64;
        while burn.elapsed() < IDLE_BURN {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        if let Span::For(d) = span
            && start.elapsed() >= d
        {
            return;
        }
        std::thread::sleep(IDLE_EVERY);
    }
}

fn pause(span: Span) {
    match span {
        Span::For(duration) => std::thread::sleep(duration),
        Span::Forever => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
    }
}

/// Prints one turn at once and then one every `interval` (scheduled from the start, so a late
/// wake-up does not lose a turn): `ceil(duration / interval)` turns for a finite span. Claude
/// turns follow a `system/init` line; Codex turns follow `thread.started`. No final result.
fn run_busy<O: Write + ?Sized>(
    busy: &Busy,
    ctx: &Context,
    started: Instant,
    out: &mut O,
) -> Result<(), String> {
    let begin = Instant::now();
    let session = claude_session(ctx, started);
    let header = match busy.format {
        WireFormat::Claude => claude::init_line(&session, claude::BUSY_MODEL),
        WireFormat::Codex => codex::thread_started(&codex_thread(ctx)),
    };
    print_json(out, "busy", &[header])?;
    let interval = busy.interval.max(Duration::from_millis(1));
    let mut turn: u64 = 1;
    loop {
        let lines = match busy.format {
            WireFormat::Claude => vec![claude::busy_line(
                &session,
                turn,
                busy.usage_per_turn,
                busy.output_per_turn,
            )],
            WireFormat::Codex => codex::busy_turn(turn, busy.usage_per_turn, busy.output_per_turn),
        };
        print_json(out, "busy", &lines)?;
        let Some(next) = u32::try_from(turn)
            .ok()
            .and_then(|turn| interval.checked_mul(turn))
        else {
            // Past u32::MAX turns: keep the pace without the schedule.
            std::thread::sleep(interval);
            turn = turn.saturating_add(1);
            continue;
        };
        if let Span::For(duration) = busy.span
            && next >= duration
        {
            return Ok(());
        }
        if let Some(wait) = next.checked_sub(begin.elapsed()) {
            std::thread::sleep(wait);
        }
        turn += 1;
    }
}

/// Creates the file if missing and sets its modification time to now.
fn touch(target: &Path) -> std::io::Result<()> {
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)?;
    file.set_modified(std::time::SystemTime::now())
}

/// Writes `text` and a newline, then flushes, so a reader sees each line as it happens.
fn write_line<W: Write + ?Sized>(to: &mut W, text: &str) -> std::io::Result<()> {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    to.write_all(line.as_bytes())?;
    to.flush()
}

fn create_parent(target: &Path, shown: &str) -> Result<(), String> {
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the directory of {shown}: {e}")),
        _ => Ok(()),
    }
}

fn append(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(target)?
        .write_all(bytes)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::script::parse;

    struct Run {
        code: i32,
        out: String,
        err: String,
    }

    fn run_in(dir: &Path, ctx: &Context, text: &str) -> Run {
        let script = match parse("t.fake", text) {
            Ok(script) => script,
            Err(error) => panic!("parse error: {error}"),
        };
        assert_eq!(ctx.cwd, dir);
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = execute(&script, ctx, &mut out, &mut err);
        Run {
            code,
            out: String::from_utf8_lossy(&out).into_owned(),
            err: String::from_utf8_lossy(&err).into_owned(),
        }
    }

    fn tempdir() -> tempfile::TempDir {
        match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(error) => panic!("tempdir: {error}"),
        }
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    #[test]
    fn file_steps_change_the_work_tree() {
        let dir = tempdir();
        let root = dir.path();
        fs::write(root.join("old.txt"), "bye").unwrap_or_else(|e| panic!("{e}"));
        let run = run_in(
            root,
            &Context::new(root),
            "write src/greet.sh <<EOF\ngreet() { echo \"hello, $1\"; }\nEOF\n\
             append notes/n.txt <<END\none\nEND\nappend notes/n.txt \"two\\n\"\n\
             replace src/greet.sh \"hello\" \"Hello\"\ndelete old.txt\nmkdir some/dir\n\
             mkdir gone/deep\ndelete gone\n",
        );
        assert_eq!((run.code, run.err.as_str(), run.out.as_str()), (0, "", ""));
        assert_eq!(
            read(&root.join("src/greet.sh")),
            "greet() { echo \"Hello, $1\"; }\n"
        );
        assert_eq!(read(&root.join("notes/n.txt")), "one\ntwo\n");
        assert!(!root.join("old.txt").exists());
        assert!(root.join("some/dir").is_dir());
        assert!(!root.join("gone").exists());
    }

    #[test]
    fn replace_changes_only_the_first_occurrence() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "write f \"a a a\"\nreplace f \"a\" \"b\"\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        assert_eq!(read(&root.join("f")), "b a a");
    }

    #[test]
    fn missing_replace_target_fails_with_line_number_and_stops() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "write f \"abc\"\n\nreplace f \"zzz\" \"y\"\nwrite after \"x\"\n",
        );
        assert_eq!(run.code, 2);
        assert!(run.err.starts_with("fake-agent: t.fake:3: "), "{}", run.err);
        assert!(run.err.contains("\"zzz\" not found"), "{}", run.err);
        assert!(
            !root.join("after").exists(),
            "steps after a failure must not run"
        );
    }

    #[test]
    fn io_failures_report_the_line() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(root, &Context::new(root), "print \"a\"\ndelete nope\n");
        assert_eq!(run.code, 2);
        assert_eq!(run.out, "a\n");
        assert!(
            run.err.starts_with("fake-agent: t.fake:2: delete nope: "),
            "{}",
            run.err
        );
        let run = run_in(root, &Context::new(root), "replace nope \"a\" \"b\"\n");
        assert_eq!(run.code, 2);
        assert!(run.err.contains("t.fake:1: replace in nope"), "{}", run.err);
    }

    #[test]
    fn print_stderr_and_exit() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "print \"out\\tline\"\nstderr \"err line\"\nexit 3\nprint \"never\"\n",
        );
        assert_eq!(run.code, 3);
        assert_eq!(run.out, "out\tline\n");
        assert_eq!(run.err, "err line\n");
    }

    #[test]
    fn when_blocks_follow_attempt_and_iteration() {
        let dir = tempdir();
        let root = dir.path();
        let script = "print \"start\"\nwhen iteration >= 2\nprint \"late\"\nwhen attempt == 1\n\
                      print \"first-attempt\"\nwhen attempt != 1\nexit 7\nalways\nprint \"end\"\n";
        let mut ctx = Context::new(root);
        let run = run_in(root, &ctx, script);
        assert_eq!(
            (run.code, run.out.as_str()),
            (0, "start\nfirst-attempt\nend\n")
        );
        ctx.iteration = 2;
        let run = run_in(root, &ctx, script);
        assert_eq!(
            (run.code, run.out.as_str()),
            (0, "start\nlate\nfirst-attempt\nend\n")
        );
        ctx.attempt = 2;
        let run = run_in(root, &ctx, script);
        assert_eq!((run.code, run.out.as_str()), (7, "start\nlate\n"));
    }

    #[test]
    fn record_appends_one_json_line_per_run() {
        let dir = tempdir();
        let root = dir.path();
        let log = root.join("logs/calls.jsonl");
        let mut ctx = Context::new(root);
        ctx.item = Some("item-9".into());
        ctx.feedback_file = Some("/tmp/feedback.md".into());
        let absolute = format!("record {}\n", log.display());
        assert_eq!(run_in(root, &ctx, &absolute).code, 0);
        ctx.attempt = 2;
        ctx.iteration = 3;
        assert_eq!(run_in(root, &ctx, "record logs/calls.jsonl\n").code, 0);
        let text = read(&log);
        let records: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0]["item"], "item-9");
        assert_eq!(records[0]["attempt"], 1);
        assert_eq!(records[0]["iteration"], 1);
        assert_eq!(records[0]["cwd"], root.to_string_lossy().as_ref());
        assert_eq!(records[0]["feedback_file"], "/tmp/feedback.md");
        assert!(records[0]["prompt_file"].is_null());
        assert_eq!(
            (&records[1]["attempt"], &records[1]["iteration"]),
            (&Value::from(2), &Value::from(3))
        );
    }

    #[test]
    fn emitted_claude_stream_is_consistent() {
        let dir = tempdir();
        let root = dir.path();
        let mut ctx = Context::new(root);
        ctx.item = Some("item-1".into());
        let run = run_in(
            root,
            &ctx,
            "emit claude text=\"Done.\" turns=4 input=1203 output=301 cache_read=15001 cache_write=2003 cost=0.05\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        let lines: Vec<Value> = run
            .out
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "system",
                "assistant",
                "assistant",
                "assistant",
                "assistant",
                "result"
            ]
        );
        let result = &lines[5];
        let mut seen = BTreeSet::new();
        let mut sums: BTreeMap<String, u64> = BTreeMap::new();
        for line in &lines[1..5] {
            if seen.insert(line["message"]["id"].to_string()) {
                let Some(usage) = line["message"]["usage"].as_object() else {
                    panic!("no usage in {line}");
                };
                for (key, value) in usage {
                    if let Some(n) = value.as_u64() {
                        *sums.entry(key.clone()).or_default() += n;
                    }
                }
            }
        }
        assert_eq!(seen.len(), 4);
        for key in [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ] {
            assert_eq!(Some(sums[key]), result["usage"][key].as_u64(), "{key}");
        }
        assert_eq!(result["usage"]["input_tokens"], 1203);
        let sid = claude::session_id(Some("item-1"), 1, 1);
        assert!(lines.iter().all(|l| l["session_id"] == sid.as_str()));
        assert_eq!(lines[0]["cwd"], root.to_string_lossy().as_ref());
    }

    #[test]
    fn context_from_env() {
        let vars: BTreeMap<&str, &str> = [
            ("NIGHTSHIFT_ITEM", "item-3"),
            ("NIGHTSHIFT_ATTEMPT", "2"),
            ("NIGHTSHIFT_ITERATION", "4"),
            ("NIGHTSHIFT_PROMPT_FILE", "/p.md"),
            ("NIGHTSHIFT_FEEDBACK_FILE", ""),
        ]
        .into();
        let ctx = Context::from_env("/w", |k| vars.get(k).map(OsString::from));
        assert_eq!(
            ctx,
            Ok(Context {
                cwd: "/w".into(),
                item: Some("item-3".into()),
                attempt: 2,
                iteration: 4,
                prompt_file: Some("/p.md".into()),
                feedback_file: None,
                cli_session: None,
            })
        );
        assert_eq!(Context::from_env("/w", |_| None), Ok(Context::new("/w")));
        for bad in ["0", "-1", "x", "1.5"] {
            let error = Context::from_env("/w", |k| {
                (k == "NIGHTSHIFT_ITERATION").then(|| OsString::from(bad))
            });
            assert_eq!(
                error,
                Err(EnvError::NotPositive {
                    var: "NIGHTSHIFT_ITERATION",
                    value: bad.into()
                })
            );
        }
    }

    #[test]
    fn a_broken_stdout_is_an_error_not_a_panic() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let script = match parse("t.fake", "print \"x\"\n") {
            Ok(script) => script,
            Err(error) => panic!("{error}"),
        };
        let mut err = Vec::new();
        let code = execute(
            &script,
            &Context::new("/nonexistent"),
            &mut Broken,
            &mut err,
        );
        assert_eq!(code, 2);
        assert!(String::from_utf8_lossy(&err).contains("t.fake:1: print to stdout"));
    }

    fn json_lines(text: &str) -> Vec<Value> {
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    #[test]
    fn go_silent_prints_nothing_for_its_duration_then_goes_on() {
        let dir = tempdir();
        let root = dir.path();
        let before = Instant::now();
        let run = run_in(
            root,
            &Context::new(root),
            "go-silent 50ms\nprint \"after\"\n",
        );
        assert!(before.elapsed() >= Duration::from_millis(50));
        assert_eq!(
            (run.code, run.out.as_str(), run.err.as_str()),
            (0, "after\n", "")
        );
    }

    #[test]
    fn busy_claude_usage_keeps_rising_and_never_finishes() {
        let dir = tempdir();
        let root = dir.path();
        let mut ctx = Context::new(root);
        ctx.item = Some("item-4".into());
        let run = run_in(
            root,
            &ctx,
            "busy 100ms usage-per-turn=250 interval=20ms output-per-turn=3\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        let lines = json_lines(&run.out);
        assert_eq!(lines[0]["type"], "system");
        assert_eq!(lines[0]["subtype"], "init");
        let turns = &lines[1..];
        // Turns at 0, 20, 40, 60 and 80ms: ceil(100 / 20), however late the wake-ups.
        assert_eq!(turns.len(), 5, "{}", run.out);
        let sid = claude::session_id(Some("item-4"), 1, 1);
        let mut seen = BTreeSet::new();
        let mut cumulative = Vec::new();
        let mut total = 0;
        for line in turns {
            assert_eq!(
                line["type"], "assistant",
                "no result line, only turns: {line}"
            );
            assert_eq!(line["session_id"], sid.as_str());
            assert!(
                seen.insert(line["message"]["id"].to_string()),
                "repeated id: {line}"
            );
            assert_eq!(line["message"]["usage"]["output_tokens"], 3);
            total += line["message"]["usage"]["input_tokens"]
                .as_u64()
                .unwrap_or_else(|| panic!("no input_tokens: {line}"));
            cumulative.push(total);
        }
        assert!(cumulative.windows(2).all(|w| w[0] < w[1]), "{cumulative:?}");
        assert_eq!(cumulative.last(), Some(&1250));
    }

    #[test]
    fn busy_codex_reports_usage_per_turn() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "busy 30ms usage-per-turn=100 interval=10ms format=codex\nprint \"{}\"\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        let lines = json_lines(&run.out);
        assert_eq!(lines[0]["type"], "thread.started");
        let usage: Vec<u64> = lines
            .iter()
            .filter(|l| l["type"] == "turn.completed")
            .filter_map(|l| l["usage"]["input_tokens"].as_u64())
            .collect();
        assert_eq!(usage, [100, 100, 100]);
        assert_eq!(
            lines.last(),
            Some(&json!({})),
            "the script goes on after `busy`"
        );
    }

    #[test]
    fn usage_limit_claude_ends_like_the_cli() {
        let dir = tempdir();
        let root = dir.path();
        let mut ctx = Context::new(root);
        ctx.item = Some("item-2".into());
        // 2026-09-01T16:00:00Z: an epoch in the past is still printed as given.
        let run = run_in(
            root,
            &ctx,
            "usage-limit resets=1788278400\nprint \"never\"\n",
        );
        assert_eq!(run.code, 1, "{}", run.err);
        let lines = json_lines(&run.out);
        assert_eq!(lines.len(), 2, "{}", run.out);
        let sid = claude::session_id(Some("item-2"), 1, 1);
        assert_eq!(lines[0]["type"], "rate_limit_event");
        assert_eq!(lines[0]["rate_limit_info"]["status"], "rejected");
        assert_eq!(lines[0]["rate_limit_info"]["resetsAt"], 1_788_278_400_u64);
        assert_eq!(lines[0]["session_id"], sid.as_str());
        let result = &lines[1];
        assert_eq!(result["type"], "result");
        assert_eq!(result["subtype"], "success");
        assert_eq!(result["is_error"], true);
        assert_eq!(result["api_error_status"], 429);
        assert_eq!(result["session_id"], sid.as_str());
        assert_eq!(
            result["result"],
            "You've hit your session limit \u{b7} resets 4pm (UTC)"
        );
    }

    #[test]
    fn usage_limit_in_counts_from_now() {
        let dir = tempdir();
        let root = dir.path();
        let before = clock::now_epoch();
        let run = run_in(root, &Context::new(root), "usage-limit in=2h\n");
        let after = clock::now_epoch();
        assert_eq!(run.code, 1, "{}", run.err);
        let lines = json_lines(&run.out);
        let resets = lines[0]["rate_limit_info"]["resetsAt"]
            .as_u64()
            .unwrap_or_else(|| panic!("no resetsAt: {}", lines[0]));
        assert!((before + 7200..=after + 7200).contains(&resets), "{resets}");
        let text = lines[1]["result"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("You've hit your session limit \u{b7} resets "),
            "{text}"
        );
        assert!(text.ends_with(" (UTC)"), "{text}");

        // A reset days away is a weekly limit, printed with its date.
        let run = run_in(root, &Context::new(root), "usage-limit in=72h\n");
        let lines = json_lines(&run.out);
        assert_eq!(lines[0]["rate_limit_info"]["rateLimitType"], "seven_day");
        let text = lines[1]["result"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("You've hit your weekly limit \u{b7} resets "),
            "{text}"
        );
    }

    #[test]
    fn usage_limit_codex_ends_like_the_cli() {
        let dir = tempdir();
        let root = dir.path();
        let now = clock::now_epoch();
        // Within the next day, at 3:28 PM UTC (tomorrow's if today's has passed).
        let today = now - now % 86_400;
        let mut resets = today + 15 * 3600 + 28 * 60;
        if resets <= now {
            resets += 86_400;
        }
        let run = run_in(
            root,
            &Context::new(root),
            &format!("usage-limit resets={resets} format=codex\nexit 0\n"),
        );
        assert_eq!(run.code, 1, "{}", run.err);
        let lines = json_lines(&run.out);
        assert_eq!(lines.len(), 2, "{}", run.out);
        assert_eq!(lines[0]["type"], "error");
        assert_eq!(lines[1]["type"], "turn.failed");
        let message = lines[0]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("You've hit your usage limit."),
            "{message}"
        );
        // Today's reset reads "try again at 3:28 PM."; a later day's names the date first
        // ("try again at Dec 1st, 2026 3:28 PM."), as the CLI does.
        assert!(
            message.contains(" try again at ") && message.ends_with(" 3:28 PM."),
            "{message}"
        );
        assert_eq!(lines[1]["error"]["message"], message);
    }

    #[test]
    fn emit_malformed_prints_exactly_three_bad_lines() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(root, &Context::new(root), "emit-malformed\n");
        assert_eq!(run.code, 0, "{}", run.err);
        let lines: Vec<&str> = run.out.lines().collect();
        assert_eq!(lines.len(), 3, "{}", run.out);

        assert!(
            serde_json::from_str::<Value>(lines[0]).is_err(),
            "{}",
            lines[0]
        );

        let unknown: Value = serde_json::from_str(lines[1])
            .unwrap_or_else(|e| panic!("line 2 must be valid JSON: {e}"));
        let kind = unknown["type"].as_str().unwrap_or_default();
        let known = [
            "system",
            "assistant",
            "user",
            "stream_event",
            "rate_limit_event",
            "result",
        ];
        assert!(!kind.is_empty() && !known.contains(&kind), "{unknown}");

        let glued = lines[2];
        assert!(serde_json::from_str::<Value>(glued).is_err(), "{glued}");
        assert!(glued.starts_with("{\"type\":\"assistant\""), "{glued}");
        let at = glued
            .find("{\"type\":\"rate_limit_event\"")
            .unwrap_or_else(|| panic!("no rate_limit_event in {glued}"));
        assert!(at > 0);
        // The glued-in object is complete, and the outer object goes on after it.
        let mut inner = serde_json::Deserializer::from_str(&glued[at..]).into_iter::<Value>();
        let event = match inner.next() {
            Some(Ok(event)) => event,
            other => panic!("the glued object does not parse: {other:?}"),
        };
        assert_eq!(event["rate_limit_info"]["status"], "allowed");
        let rest = &glued[at + inner.byte_offset()..];
        assert!(rest.contains("\"session_id\""), "{rest}");
        assert!(rest.ends_with('}'), "{rest}");
    }

    #[test]
    fn emit_codex_and_gemini_streams() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "emit codex text=\"Fixed.\" input=100 cached=40 output=9\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        let lines = json_lines(&run.out);
        let types: Vec<_> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "thread.started",
                "turn.started",
                "item.completed",
                "turn.completed"
            ]
        );
        assert_eq!(lines[0]["thread_id"], codex::thread_id(None, 1, 1).as_str());
        assert_eq!(
            lines[3]["usage"],
            json!({"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 9})
        );

        let run = run_in(
            root,
            &Context::new(root),
            "emit gemini text=\"Patched it.\" input=100 cached=40 output=9\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        let lines = json_lines(&run.out);
        let types: Vec<_> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(types, ["init", "message", "message", "result"]);
        let text: String = lines[1..3]
            .iter()
            .filter_map(|l| l["content"].as_str())
            .collect();
        assert_eq!(text, "Patched it.");
        assert_eq!(lines[3]["stats"]["input_tokens"], 100);
        assert_eq!(lines[3]["stats"]["input"], 60);
        assert_eq!(lines[3]["stats"]["total_tokens"], 109);
        assert!(
            lines
                .iter()
                .all(|l| l["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')))
        );
    }

    #[test]
    fn misbehave_once_then_work() {
        let dir = tempdir();
        let root = dir.path();
        // The `touch` inside the block must not stop the block's `exit 1`: a condition is
        // evaluated once, when its block is entered.
        let script = "when file-missing state/misbehaved\ntouch state/misbehaved\n\
                      print \"misbehaving\"\nexit 1\nwhen file-exists state/misbehaved\n\
                      print \"working\"\n";
        let run = run_in(root, &Context::new(root), script);
        assert_eq!(
            (run.code, run.out.as_str()),
            (1, "misbehaving\n"),
            "{}",
            run.err
        );
        assert!(root.join("state/misbehaved").is_file());
        let run = run_in(root, &Context::new(root), script);
        assert_eq!(
            (run.code, run.out.as_str()),
            (0, "working\n"),
            "{}",
            run.err
        );
    }

    #[test]
    fn touch_creates_and_keeps_content() {
        let dir = tempdir();
        let root = dir.path();
        let run = run_in(
            root,
            &Context::new(root),
            "write f \"keep\"\ntouch f\ntouch deep/new\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        assert_eq!(read(&root.join("f")), "keep");
        assert_eq!(read(&root.join("deep/new")), "");
    }

    /// Reads whole lines from the FIFO `path` (each writer's open-write-close is one round)
    /// until `want` lines arrived, giving up after `timeout`. Blocking reads, no polling.
    fn lines_from_fifo(path: &Path, want: usize, timeout: Duration) -> Option<Vec<String>> {
        let (send, receive) = std::sync::mpsc::channel();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            let mut lines = Vec::new();
            while lines.len() < want {
                // Blocks until a writer opens; returns at EOF, when it closes.
                match fs::read_to_string(&path) {
                    Ok(text) => lines.extend(text.lines().map(str::to_owned)),
                    Err(_) => return,
                }
            }
            let _ = send.send(lines);
        });
        receive.recv_timeout(timeout).ok()
    }

    /// The session id (field 6) and state (field 3) of `pid`, from `/proc/<pid>/stat`.
    fn session_and_state(pid: i32) -> (i32, char) {
        let stat = read(Path::new(&format!("/proc/{pid}/stat")));
        let after_name = &stat[stat.rfind(')').unwrap_or_else(|| panic!("{stat}")) + 1..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let session = fields[3].parse().unwrap_or_else(|e| panic!("{e}: {stat}"));
        let state = fields[0].chars().next().unwrap_or('?');
        (session, state)
    }

    #[test]
    fn spawn_orphan_escapes_the_session_and_keeps_writing() {
        use nix::sys::signal::{Signal, kill, killpg};
        use nix::sys::wait::{WaitStatus, waitpid};
        use nix::unistd::Pid;

        let dir = tempdir();
        let root = dir.path();
        fs::create_dir(root.join(".pytest_cache")).unwrap_or_else(|e| panic!("{e}"));
        let fifo = root.join(".pytest_cache/README.md");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)
            .unwrap_or_else(|e| panic!("mkfifo: {e}"));
        let run = run_in(
            root,
            &Context::new(root),
            "spawn-orphan .pytest_cache/README.md interval=10ms\nprint \"went on\"\n",
        );
        assert_eq!(run.code, 0, "{}", run.err);
        assert_eq!(run.out, "went on\n");
        let pid: i32 = run
            .err
            .trim_end()
            .strip_prefix("fake-agent: orphan pid ")
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("no pid in stderr: {:?}", run.err));
        let orphan = Pid::from_raw(pid);

        let lines = lines_from_fifo(&fifo, 2, Duration::from_secs(20));
        let (session, state) = session_and_state(pid);
        let ours = nix::unistd::getsid(None).unwrap_or_else(|e| panic!("{e}"));
        // Kill the orphan (and its group, with any `sleep` it runs) before asserting, so a
        // failure leaks nothing; the group exists only if the orphan did call setsid.
        let _ = killpg(orphan, Signal::SIGKILL);
        kill(orphan, Signal::SIGKILL).unwrap_or_else(|e| panic!("kill: {e}"));
        let status = waitpid(orphan, None).unwrap_or_else(|e| panic!("waitpid: {e}"));

        let lines = lines.unwrap_or_else(|| panic!("the orphan did not write twice"));
        assert!(
            lines.len() >= 2 && lines.iter().all(|l| l == "tick"),
            "{lines:?}"
        );
        assert_eq!(session, pid, "the orphan leads its own session");
        assert_ne!(session, ours.as_raw());
        assert_ne!(state, 'Z');
        assert_eq!(status, WaitStatus::Signaled(orphan, Signal::SIGKILL, false));
    }
}
