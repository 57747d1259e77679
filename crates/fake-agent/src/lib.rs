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
//! | `record PATH` | append `{"item","attempt","iteration","cwd","prompt_file","feedback_file"}` as one JSON line to PATH (relative to the cwd, or absolute) |
//! | `sleep N(ms\|s\|m)` | pause |
//! | `exit N` | stop with exit code N (0–255) |
//! | `when VAR OP N` | the following commands, up to the next `when` or `always`, run only if the condition holds; VAR is `iteration` or `attempt`, OP one of `== != >= <= > <` |
//! | `always` | ends a `when` block |
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
pub mod exec;
pub mod script;

use std::ffi::OsString;

pub use claude::ClaudeEmit;
pub use cli::{Command, ScriptLocation, USAGE, UsageError, parse_args, run_cli_in};
pub use exec::{Context, EnvError, FAILURE_EXIT, execute};
pub use script::{Condition, Emit, Op, ParseError, Script, Statement, Step, Var, WorkPath, parse};

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
