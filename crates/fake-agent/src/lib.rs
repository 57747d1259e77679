//! A scripted stand-in for an agent CLI, for tests, benchmarks and `nightshift demo`.
//!
//! The fake agent runs in the work tree it should change (its cwd) and follows a small
//! line-based script. It reads `NIGHTSHIFT_ITEM`, `NIGHTSHIFT_ATTEMPT`, `NIGHTSHIFT_ITERATION`
//! (1-based; absent means 1), `NIGHTSHIFT_PROMPT_FILE` and `NIGHTSHIFT_FEEDBACK_FILE`.
//!
//! # Command line
//!
//! `fake-agent --script FILE` runs FILE; `fake-agent --script-dir DIR` runs
//! `DIR/<NIGHTSHIFT_ITEM>.fake`, falling back to `DIR/default.fake`. Arguments after `--` are
//! ignored. The exit code is the script's `exit N`, 0 when it runs to its end, and 2 for a bad
//! command line, a syntax error (nothing is executed), or a step that fails; every error is
//! one line on stderr, `fake-agent: <file>:<line>: <what is wrong>` when it has a place.
//!
//! # Script language
//!
//! One command per line. Blank lines are ignored; `#` at the start of a word begins a comment.
//! Words are separated by spaces; a quoted string (`"…"`, with escapes `\n \t \" \\`) is one
//! word, and is glued to adjacent characters like in a shell (`text="two words"`).
//!
//! | command | effect |
//! |---|---|
//! | `write PATH <<WORD` … `WORD` | create/truncate PATH with the lines up to the line `WORD`, verbatim, each ending in `\n` |
//! | `write PATH "text"` | the same with inline content |
//! | `append PATH <<WORD` / `append PATH "text"` | append, creating the file |
//! | `replace PATH "from" "to"` | replace the first occurrence; an error if there is none |
//! | `delete PATH` | remove a file (or a directory with its contents); an error if missing |
//! | `mkdir PATH` | create a directory and its parents |
//! | `print "text"` / `stderr "text"` | one line on stdout / stderr |
//! | `emit claude key=value…` | a Claude Code stream-json transcript on stdout (keys below) |
//! | `emit codex key=value…` | a Codex `exec --json` transcript on stdout (keys below) |
//! | `emit gemini key=value…` | a Gemini CLI stream-json transcript on stdout (keys below) |
//! | `record PATH` | append `{"item","attempt","iteration","cwd","prompt_file","feedback_file"}` as one JSON line to PATH (relative to the cwd, or absolute) |
//! | `touch PATH` | create PATH (relative to the cwd, or absolute; parents created) if missing, and set its mtime to now |
//! | `sleep DURATION` | pause |
//! | `exit N` | stop with exit code N (0–255) |
//! | `when VAR OP N` | the following commands, up to the next `when` or `always`, run only if the condition holds; VAR is `iteration` or `attempt`, OP one of `== != >= <= > <` |
//! | `when file-exists PATH` / `when file-missing PATH` | the same, conditioned on PATH (relative to the cwd, or absolute) existing or not |
//! | `always` | ends a `when` block |
//!
//! A DURATION is a whole number and a unit: `200ms`, `2s`, `1m`, `1h`. A `when` condition is
//! evaluated once, when the first step of its block is reached, so a `touch` inside a
//! `when file-missing` block does not cut the rest of the block short.
//!
//! Misbehaviours a supervisor must survive:
//!
//! | command | effect |
//! |---|---|
//! | `go-silent DURATION` / `go-silent forever` | a hung agent: print nothing, do nothing (blocked in sleep, no CPU), then go on (or never) |
//! | `idle-ticks DURATION` / `idle-ticks forever` | a hung real CLI: print nothing, but burn 10 ms of CPU (one clock tick) every 2 s, as idle Claude and Codex do |
//! | `busy DURATION\|forever usage-per-turn=N interval=DURATION [output-per-turn=N] [format=claude\|codex]` | a productive-looking loop: see below |
//! | `spawn-orphan PATH [interval=DURATION]` | leak a grandchild that escapes the process group: see below |
//! | `ignore-sigterm` | from here on SIGTERM is ignored (also by processes started afterwards, which inherit it) |
//! | `crash` | die by SIGABRT (`abort()`): no exit code, no more output, no core file (the core limit is set to 0 first) |
//! | `usage-limit resets=EPOCH_SECONDS [format=claude\|codex]` / `usage-limit in=DURATION …` | end as the CLI does at a usage limit: see below; exit code 1 |
//! | `emit-malformed` | three lines a lenient reader must skip: see below |
//!
//! "Exit 0 having done nothing" needs no command of its own: a script that is just `exit 0`
//! (or empty).
//!
//! `busy` prints a header (Claude: `system/init`; Codex: `thread.started`) and then a turn at
//! once and one every `interval`, scheduled from its start: `ceil(DURATION / interval)` turns,
//! or turns until killed for `forever`; then the script goes on. A Claude turn is one
//! `assistant` line with its own `message.id` (`msg_fake_busy_<k>`) and usage
//! `input_tokens = usage-per-turn`, `output_tokens = output-per-turn` (default 0), so usage
//! counted once per id rises with every turn; a Codex turn is `turn.started`, an
//! `agent_message` item and `turn.completed` with that usage. Every line is flushed as it is
//! printed. There is never a `result` line: killed, it ends without one.
//!
//! `spawn-orphan` starts `/bin/sh` looping `echo tick >> PATH; sleep INTERVAL` (default 100ms)
//! in a new session (`setsid`, so it leaves the process group and is not killed with it), with
//! the cwd as its cwd and `/dev/null` as stdin, stdout and stderr; PATH is relative to the cwd
//! or absolute, and its parent directories are created (e.g. `.pytest_cache/README.md`). The
//! fake agent prints `fake-agent: orphan pid N` to stderr, never waits for it, and goes on with
//! the next step; the orphan runs until killed.
//!
//! `usage-limit` takes the reset time as an epoch (`resets=`) or from now (`in=`). Claude
//! (default) prints a `rate_limit_event` (`status: "rejected"`, `resetsAt`, `rateLimitType`
//! `five_hour`, or `seven_day` when the reset is over five hours away) and a `result` with
//! `subtype: "success"`, `is_error: true`, `api_error_status: 429` and the text
//! `You've hit your session limit · resets 4pm (UTC)` (`… weekly limit · resets Jan 12, 10:59am
//! (UTC)` beyond five hours). Codex prints an `error` line and a `turn.failed` line, both with
//! `You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more
//! credits or try again at 3:28 PM.` (with the date, `Jan 19th, 2026 3:28 PM`, beyond 20 hours).
//! The Codex clock time is UTC printed without a zone, as the real CLI prints its local time:
//! resolve it as UTC. Then the fake agent exits with code 1; later steps do not run.
//!
//! `emit-malformed` prints three lines: plain text that is not JSON; valid JSON with an unknown
//! `type` (`fake_unknown_event`); and an `assistant` object with a complete `rate_limit_event`
//! object glued into the middle of its text (as Claude Code 2.1.74 did,
//! anthropics/claude-code#49640), which is not valid JSON.
//!
//! `write`, `append`, `replace`, `delete` and `mkdir` take a PATH that must stay inside the
//! work tree: relative, without `..`. Parent directories are created for `write` and `append`.
//!
//! `emit claude` keys, with defaults: `text="done"` (the final answer), `turns=1`, token totals
//! `input=0 output=0 cache_read=0 cache_write=0`, `cost=0` (USD), `model=claude-sonnet-4-5`.
//! It prints a `system/init` line, one `assistant` line per turn (`message.id` =
//! `msg_fake_<k>`, usage totals split evenly, the remainder on the last turn) and a `result`
//! line with the totals. The session id is derived from item, attempt and iteration.
//!
//! `emit codex` keys: `text="done"`, `input=0` (`input_tokens`, which includes the cached
//! ones), `cached=0` (`cached_input_tokens`, at most `input`), `output=0`. It prints
//! `thread.started` (a thread id derived from item, attempt and iteration), `turn.started`, an
//! `item.completed` `agent_message` with the text, and `turn.completed` with the usage.
//!
//! `emit gemini` keys: `text="done"`, `input=0` (`stats.input_tokens`, including the cached
//! ones), `cached=0` (at most `input`), `output=0`, `model=gemini-2.5-pro`, `deltas=2`. It
//! prints `init`, the text split into `deltas` assistant `message` lines with `delta: true`,
//! and a `result` with `status: "success"` and `stats` (`total_tokens`, `input_tokens`,
//! `output_tokens`, `cached`, `input` = uncached, `duration_ms`, `tool_calls`); every line has
//! a UTC `timestamp`.
//!
//! ```text
//! # first iteration: write a buggy function; later ones fix it
//! write src/greet.sh <<EOF
//! greet() { echo "hello, $1"; }
//! EOF
//! when iteration >= 2
//! replace src/greet.sh "hello" "Hello"
//! always
//! record /tmp/calls.jsonl
//! emit claude text="Done." turns=2 input=1200 output=300 cost=0.05
//! ```
//!
//! ```text
//! # misbehave on the first run only (the marker lives outside the work tree), then work
//! when file-missing /tmp/item-3.misbehaved
//! touch /tmp/item-3.misbehaved
//! spawn-orphan .pytest_cache/README.md
//! ignore-sigterm
//! busy forever usage-per-turn=20000 interval=500ms
//! always
//! write src/fix.txt "fixed\n"
//! emit codex text="Fixed." input=9000 cached=4000 output=300
//! ```
//!
//! # Library use
//!
//! [`run_cli`] is the whole program. For tests, [`parse`] and [`execute`] run a script against
//! any directory without touching the process cwd or environment:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let script = fake_agent::parse("demo.fake", "write a/b.txt \"hi\\n\"\nprint \"ok\"\nexit 3\n")?;
//! let ctx = fake_agent::Context::new(dir.path());
//! let (mut out, mut err) = (Vec::new(), Vec::new());
//! assert_eq!(fake_agent::execute(&script, &ctx, &mut out, &mut err), 3);
//! assert_eq!(std::fs::read_to_string(dir.path().join("a/b.txt"))?, "hi\n");
//! assert_eq!(out, b"ok\n");
//! # Ok(())
//! # }
//! ```

pub mod claude;
pub mod cli;
pub mod clock;
pub mod codex;
pub mod exec;
pub mod gemini;
pub mod misbehave;
pub mod real;
pub mod script;

use std::ffi::OsString;

pub use claude::ClaudeEmit;
pub use cli::{Command, ScriptLocation, USAGE, UsageError, parse_args, run_cli_in};
pub use codex::CodexEmit;
pub use exec::{Context, EnvError, FAILURE_EXIT, USAGE_LIMIT_EXIT, execute};
pub use gemini::GeminiEmit;
pub use script::{
    Busy, Condition, Emit, Guard, Op, ParseError, Resets, Script, Span, Statement, Step, Var,
    WireFormat, WorkPath, parse,
};

/// Runs the fake agent with command-line arguments (without argv\[0\]); returns the process exit code.
/// Never panics on bad input: prints a clear message to stderr and returns 2.
pub fn run_cli<I, S>(args: I) -> i32
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut err = std::io::stderr().lock();
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => {
            use std::io::Write as _;
            let _ = writeln!(
                err,
                "fake-agent: cannot read the current directory: {error}"
            );
            return FAILURE_EXIT;
        }
    };
    let mut out = std::io::stdout().lock();
    run_cli_in(
        args,
        &cwd,
        |key: &str| std::env::var_os(key),
        &mut out,
        &mut err,
    )
}
