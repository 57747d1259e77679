//! The script language: tokenizing lines, heredocs, conditions, and the [`Step`]s they become.
//!
//! Parsing is all-or-nothing: [`parse`] either returns a whole [`Script`] or the first
//! [`ParseError`], so a script with a syntax error never runs a single step.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::claude::ClaudeEmit;
use crate::codex::CodexEmit;
use crate::gemini::GeminiEmit;

/// A parsed script, ready for [`crate::execute`].
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// How the script is named in messages (usually its file path).
    pub name: String,
    /// The steps, in order, each with its line number and guard.
    pub statements: Vec<Statement>,
}

/// One step of a script, with where it came from and when it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// 1-based line number of the step's command line.
    pub line: usize,
    /// The enclosing `when` block; `None` means the step always runs.
    pub guard: Option<Guard>,
    /// What the step does.
    pub step: Step,
}

/// What one script line does. Adding a behaviour means adding a variant here, a keyword in
/// [`parse`]'s dispatch, and an arm in the interpreter.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `write PATH <<TERM` / `write PATH "text"`: create or truncate a file (parents created).
    Write { path: WorkPath, content: String },
    /// `append PATH <<TERM` / `append PATH "text"`: append to a file, creating it (and parents).
    Append { path: WorkPath, content: String },
    /// `replace PATH "from" "to"`: replace the first occurrence; an error if there is none.
    Replace {
        path: WorkPath,
        from: String,
        to: String,
    },
    /// `delete PATH`: remove a file, or a directory with its contents.
    Delete { path: WorkPath },
    /// `mkdir PATH`: create a directory and its parents.
    Mkdir { path: WorkPath },
    /// `print "text"`: one line on stdout.
    Print(String),
    /// `stderr "text"`: one line on stderr.
    Stderr(String),
    /// `emit FORMAT key=value…`: an agent wire-format transcript on stdout.
    Emit(Emit),
    /// `record PATH`: append one JSON line describing this invocation (PATH may be anywhere).
    Record { path: PathBuf },
    /// `sleep 200ms`: pause.
    Sleep(Duration),
    /// `exit N`: stop with this exit code.
    Exit(i32),
    /// `touch PATH`: create the file (and its parents) if missing and set its mtime to now;
    /// PATH may be anywhere, like `record`.
    Touch { path: PathBuf },
    /// `go-silent DURATION|forever`: print nothing and do nothing (blocked in sleep).
    GoSilent(Span),
    /// `idle-ticks DURATION|forever`: print nothing, but burn a little CPU now and then, the
    /// way an idle real CLI does (10 ms of CPU every 2 s).
    IdleTicks(Span),
    /// `busy DURATION|forever usage-per-turn=N interval=DURATION …`: a session that keeps
    /// reporting usage and never finishes.
    Busy(Busy),
    /// `spawn-orphan PATH [interval=DURATION]`: leak a grandchild in its own session that keeps
    /// appending to PATH (anywhere, like `record`) until killed.
    SpawnOrphan { path: PathBuf, interval: Duration },
    /// `ignore-sigterm`: from here on SIGTERM is ignored.
    IgnoreSigterm,
    /// `crash`: die by SIGABRT.
    Crash,
    /// `usage-limit resets=EPOCH|in=DURATION [format=…]`: end as the CLI does at a usage
    /// limit, with exit code 1.
    UsageLimit { resets: Resets, format: WireFormat },
    /// `emit-malformed`: three lines a lenient reader must skip.
    EmitMalformed,
}

/// How long a `go-silent` or `busy` step lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// This long, then the script goes on.
    For(Duration),
    /// Until the process is killed.
    Forever,
}

/// The agent wire format of a `busy` or `usage-limit` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// Claude Code stream-json.
    #[default]
    Claude,
    /// Codex `exec --json`.
    Codex,
}

/// A `busy` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// How long it keeps printing.
    pub span: Span,
    /// Input tokens reported by each turn.
    pub usage_per_turn: u64,
    /// Output tokens reported by each turn.
    pub output_per_turn: u64,
    /// Time between turns (more than zero).
    pub interval: Duration,
    /// What the turns look like.
    pub format: WireFormat,
}

/// When a usage limit resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resets {
    /// `resets=EPOCH_SECONDS`.
    At(u64),
    /// `in=DURATION`, from the moment the step runs.
    In(Duration),
}

/// A wire-format transcript to print.
#[derive(Debug, Clone, PartialEq)]
pub enum Emit {
    /// Claude Code `--output-format stream-json --verbose`.
    Claude(ClaudeEmit),
    /// Codex `exec --json`.
    Codex(CodexEmit),
    /// Gemini CLI `--output-format stream-json`.
    Gemini(GeminiEmit),
}

/// A `when` block: its condition and where it starts. The interpreter evaluates the condition
/// once, when it reaches the block's first step, so steps inside the block (such as `touch`)
/// cannot change whether the rest of the block runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// 1-based line number of the `when` line (identifies the block).
    pub line: usize,
    /// What must hold for the block to run.
    pub condition: Condition,
}

/// A `when` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `VAR OP NUMBER`.
    Compare {
        /// The variable tested.
        var: Var,
        /// The comparison.
        op: Op,
        /// The number compared against.
        value: u64,
    },
    /// `file-exists PATH`: PATH (relative to the cwd, or absolute) exists.
    FileExists(PathBuf),
    /// `file-missing PATH`: PATH (relative to the cwd, or absolute) does not exist.
    FileMissing(PathBuf),
}

/// A variable a condition can test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// `NIGHTSHIFT_ITERATION` (1-based).
    Iteration,
    /// `NIGHTSHIFT_ATTEMPT` (1-based).
    Attempt,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `<`
    Lt,
}

impl Condition {
    /// Whether the condition holds, given the value of each variable and the directory that
    /// relative paths resolve against.
    pub fn holds(&self, value_of: impl Fn(Var) -> u64, cwd: &Path) -> bool {
        match self {
            Self::Compare { var, op, value } => {
                let left = value_of(*var);
                let right = *value;
                match op {
                    Op::Eq => left == right,
                    Op::Ne => left != right,
                    Op::Ge => left >= right,
                    Op::Le => left <= right,
                    Op::Gt => left > right,
                    Op::Lt => left < right,
                }
            }
            Self::FileExists(path) => cwd.join(path).exists(),
            Self::FileMissing(path) => !cwd.join(path).exists(),
        }
    }
}

/// A path inside the work tree: relative, with no `..`, and not the work tree itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkPath(PathBuf);

impl WorkPath {
    /// Validates `raw`; the error says what is wrong with it.
    pub fn new(raw: &str) -> Result<Self, String> {
        if raw.is_empty() {
            return Err("empty path".to_owned());
        }
        let mut normal = PathBuf::new();
        for component in Path::new(raw).components() {
            match component {
                Component::Normal(part) => normal.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(format!(
                        "path `{raw}` must not contain `..` (it would escape the work tree)"
                    ));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!(
                        "path `{raw}` must be relative to the work tree, not absolute"
                    ));
                }
            }
        }
        if normal.as_os_str().is_empty() {
            return Err(format!("path `{raw}` names the work tree itself"));
        }
        Ok(Self(normal))
    }

    /// The normalized relative path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path under the work tree `cwd`.
    pub fn under(&self, cwd: &Path) -> PathBuf {
        cwd.join(&self.0)
    }
}

impl fmt::Display for WorkPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.display())
    }
}

/// A syntax error: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ParseError {
    /// The script's name.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

const COMMANDS: &str = "write, append, replace, delete, mkdir, print, stderr, emit, record, \
                        sleep, exit, touch, go-silent, idle-ticks, busy, spawn-orphan, ignore-sigterm, crash, \
                        usage-limit, emit-malformed, when, always";

/// Parses a whole script. `name` is used in error messages.
pub fn parse(name: &str, text: &str) -> Result<Script, ParseError> {
    let mut lines = Lines {
        lines: text.lines().collect(),
        next: 0,
    };
    let mut guard = None;
    let mut statements = Vec::new();
    while let Some((line, text)) = lines.next_line() {
        let at = |message: String| ParseError {
            file: name.to_owned(),
            line,
            message,
        };
        let tokens = tokenize(text).map_err(at)?;
        let Some((keyword, args)) = tokens.split_first() else {
            continue;
        };
        if keyword.starts_quoted {
            return Err(at(format!(
                "expected a command, found the quoted string \"{}\"",
                keyword.text
            )));
        }
        match keyword.text.as_str() {
            "when" => {
                guard = Some(Guard {
                    line,
                    condition: parse_condition(args).map_err(at)?,
                });
            }
            "always" => {
                no_args("always", args).map_err(at)?;
                guard = None;
            }
            command => {
                let step = parse_step(command, args, &mut lines).map_err(at)?;
                statements.push(Statement {
                    line,
                    guard: guard.clone(),
                    step,
                });
            }
        }
    }
    Ok(Script {
        name: name.to_owned(),
        statements,
    })
}

/// The script's lines, consumed one at a time (heredocs consume several).
struct Lines<'a> {
    lines: Vec<&'a str>,
    next: usize,
}

impl<'a> Lines<'a> {
    /// The next line and its 1-based number.
    fn next_line(&mut self) -> Option<(usize, &'a str)> {
        let line = self.lines.get(self.next).copied()?;
        self.next += 1;
        Some((self.next, line))
    }

    /// Consumes heredoc content up to (and including) the terminator line.
    fn heredoc(&mut self, terminator: &str) -> Result<String, String> {
        let mut content = String::new();
        while let Some((_, line)) = self.next_line() {
            if line.trim_end() == terminator {
                return Ok(content);
            }
            content.push_str(line);
            content.push('\n');
        }
        Err(format!(
            "heredoc opened here is never closed: no line `{terminator}` before the end of the script"
        ))
    }
}

fn parse_step(command: &str, args: &[Token], lines: &mut Lines<'_>) -> Result<Step, String> {
    match command {
        "write" | "append" => {
            let (path, content) = parse_content(command, args, lines)?;
            Ok(if command == "write" {
                Step::Write { path, content }
            } else {
                Step::Append { path, content }
            })
        }
        "replace" => match args {
            [path, from, to] => {
                if from.text.is_empty() {
                    return Err("`replace`: the text to replace must not be empty".to_owned());
                }
                Ok(Step::Replace {
                    path: WorkPath::new(&path.text)?,
                    from: from.text.clone(),
                    to: to.text.clone(),
                })
            }
            _ => Err(format!(
                "`replace` expects a path and two quoted strings (`replace PATH \"from\" \"to\"`), got {} argument(s)",
                args.len()
            )),
        },
        "delete" => Ok(Step::Delete {
            path: WorkPath::new(one_arg(command, "a path", args)?)?,
        }),
        "mkdir" => Ok(Step::Mkdir {
            path: WorkPath::new(one_arg(command, "a path", args)?)?,
        }),
        "print" => Ok(Step::Print(
            one_arg(command, "one quoted string", args)?.to_owned(),
        )),
        "stderr" => Ok(Step::Stderr(
            one_arg(command, "one quoted string", args)?.to_owned(),
        )),
        "emit" => parse_emit(args),
        "record" => {
            let path = one_arg(command, "a path", args)?;
            if path.is_empty() {
                return Err("`record`: empty path".to_owned());
            }
            Ok(Step::Record {
                path: PathBuf::from(path),
            })
        }
        "sleep" => Ok(Step::Sleep(parse_duration(
            command,
            one_arg(command, "a duration such as 200ms, 2s, 1m or 1h", args)?,
        )?)),
        "exit" => {
            let raw = one_arg(command, "an exit code (0-255)", args)?;
            match raw.parse::<u8>() {
                Ok(code) => Ok(Step::Exit(i32::from(code))),
                Err(_) => Err(format!(
                    "`exit`: `{raw}` is not an exit code (expected 0-255)"
                )),
            }
        }
        "touch" => Ok(Step::Touch {
            path: any_path(command, one_arg(command, "a path", args)?)?,
        }),
        "go-silent" => Ok(Step::GoSilent(parse_span(
            command,
            one_arg(command, "a duration (e.g. 30s) or `forever`", args)?,
        )?)),
        "idle-ticks" => Ok(Step::IdleTicks(parse_span(
            command,
            one_arg(command, "a duration (e.g. 30s) or `forever`", args)?,
        )?)),
        "busy" => parse_busy(args),
        "spawn-orphan" => parse_spawn_orphan(args),
        "ignore-sigterm" => no_args(command, args).map(|()| Step::IgnoreSigterm),
        "crash" => no_args(command, args).map(|()| Step::Crash),
        "usage-limit" => parse_usage_limit(args),
        "emit-malformed" => no_args(command, args).map(|()| Step::EmitMalformed),
        other => Err(format!(
            "unknown command `{other}` (expected one of: {COMMANDS})"
        )),
    }
}

/// A path that may be anywhere (relative to the cwd, or absolute); only emptiness is an error.
fn any_path(command: &str, raw: &str) -> Result<PathBuf, String> {
    if raw.is_empty() {
        return Err(format!("`{command}`: empty path"));
    }
    Ok(PathBuf::from(raw))
}

/// `KEY=VALUE` tokens, in order.
fn key_values<'t>(command: &str, tokens: &'t [Token]) -> Result<Vec<(&'t str, &'t str)>, String> {
    tokens
        .iter()
        .map(|token| {
            token
                .text
                .split_once('=')
                .ok_or_else(|| format!("`{command}`: expected key=value, found `{}`", token.text))
        })
        .collect()
}

fn parse_wire_format(command: &str, value: &str) -> Result<WireFormat, String> {
    match value {
        "claude" => Ok(WireFormat::Claude),
        "codex" => Ok(WireFormat::Codex),
        other => Err(format!(
            "`{command}`: unknown format `{other}` (expected claude or codex)"
        )),
    }
}

fn parse_busy(args: &[Token]) -> Result<Step, String> {
    const USAGE: &str = "expected `busy DURATION|forever usage-per-turn=N interval=DURATION \
                         [output-per-turn=N] [format=claude|codex]`";
    let Some((span, pairs)) = args.split_first() else {
        return Err(format!("`busy`: {USAGE}"));
    };
    let span = parse_span("busy", &span.text)?;
    let count = |key: &str, value: &str| {
        value
            .parse::<u64>()
            .map_err(|_| format!("`busy`: `{key}` must be a non-negative integer, got `{value}`"))
    };
    let (mut usage_per_turn, mut output_per_turn, mut interval) = (None, 0, None);
    let mut format = WireFormat::default();
    for (key, value) in key_values("busy", pairs)? {
        match key {
            "usage-per-turn" => usage_per_turn = Some(count(key, value)?),
            "output-per-turn" => output_per_turn = count(key, value)?,
            "interval" => interval = Some(positive_duration("busy", key, value)?),
            "format" => format = parse_wire_format("busy", value)?,
            other => {
                return Err(format!(
                    "`busy`: unknown key `{other}` (expected usage-per-turn, interval, \
                     output-per-turn, format)"
                ));
            }
        }
    }
    let missing = |key: &str| format!("`busy`: missing `{key}=…`; {USAGE}");
    Ok(Step::Busy(Busy {
        span,
        usage_per_turn: usage_per_turn.ok_or_else(|| missing("usage-per-turn"))?,
        output_per_turn,
        interval: interval.ok_or_else(|| missing("interval"))?,
        format,
    }))
}

/// The default pause between an orphan's writes.
pub const ORPHAN_INTERVAL: Duration = Duration::from_millis(100);

fn parse_spawn_orphan(args: &[Token]) -> Result<Step, String> {
    let Some((path, pairs)) = args.split_first() else {
        return Err("`spawn-orphan`: expected `spawn-orphan PATH [interval=DURATION]`".to_owned());
    };
    let path = any_path("spawn-orphan", &path.text)?;
    let mut interval = ORPHAN_INTERVAL;
    for (key, value) in key_values("spawn-orphan", pairs)? {
        match key {
            "interval" => interval = positive_duration("spawn-orphan", key, value)?,
            other => {
                return Err(format!(
                    "`spawn-orphan`: unknown key `{other}` (expected interval)"
                ));
            }
        }
    }
    Ok(Step::SpawnOrphan { path, interval })
}

fn parse_usage_limit(args: &[Token]) -> Result<Step, String> {
    const USAGE: &str =
        "expected `usage-limit resets=EPOCH_SECONDS|in=DURATION [format=claude|codex]`";
    let mut resets = None;
    let mut format = WireFormat::default();
    for (key, value) in key_values("usage-limit", args)? {
        let when = match key {
            "resets" => Resets::At(value.parse::<u64>().map_err(|_| {
                format!("`usage-limit`: `resets` must be epoch seconds, got `{value}`")
            })?),
            "in" => Resets::In(parse_duration("usage-limit", value)?),
            "format" => {
                format = parse_wire_format("usage-limit", value)?;
                continue;
            }
            other => {
                return Err(format!(
                    "`usage-limit`: unknown key `{other}` (expected resets, in, format)"
                ));
            }
        };
        if resets.replace(when).is_some() {
            return Err(format!(
                "`usage-limit`: give exactly one of `resets=` and `in=`; {USAGE}"
            ));
        }
    }
    let resets = resets.ok_or_else(|| format!("`usage-limit`: {USAGE}"))?;
    Ok(Step::UsageLimit { resets, format })
}

/// `PATH <<TERM` (content from the following lines) or `PATH "text"`.
fn parse_content(
    command: &str,
    args: &[Token],
    lines: &mut Lines<'_>,
) -> Result<(WorkPath, String), String> {
    let expected =
        || format!("`{command}` expects a path and then `<<TERMINATOR` or one quoted string");
    let (path, rest) = args.split_first().ok_or_else(expected)?;
    let path = WorkPath::new(&path.text)?;
    let terminator = match rest {
        [marker] if marker.is_heredoc() => marker.text.strip_prefix("<<").unwrap_or_default(),
        [marker, word] if marker.is_heredoc() && marker.text == "<<" => word.text.as_str(),
        [text] => return Ok((path, text.text.clone())),
        _ => return Err(expected()),
    };
    if terminator.is_empty() {
        return Err(format!(
            "`{command}`: `<<` must be followed by a terminator word, e.g. `<<EOF`"
        ));
    }
    let content = lines.heredoc(terminator)?;
    Ok((path, content))
}

fn parse_emit(args: &[Token]) -> Result<Step, String> {
    let Some((format, pairs)) = args.split_first() else {
        return Err(
            "`emit` expects a format (`claude`, `codex` or `gemini`) and then key=value pairs"
                .to_owned(),
        );
    };
    let emit = match format.text.as_str() {
        "claude" => {
            let mut emit = ClaudeEmit::default();
            for (key, value) in key_values("emit claude", pairs)? {
                emit.set(key, value)?;
            }
            Emit::Claude(emit)
        }
        "codex" => {
            let mut emit = CodexEmit::default();
            for (key, value) in key_values("emit codex", pairs)? {
                emit.set(key, value)?;
            }
            emit.validate()?;
            Emit::Codex(emit)
        }
        "gemini" => {
            let mut emit = GeminiEmit::default();
            for (key, value) in key_values("emit gemini", pairs)? {
                emit.set(key, value)?;
            }
            emit.validate()?;
            Emit::Gemini(emit)
        }
        other => {
            return Err(format!(
                "`emit`: unknown format `{other}` (expected: claude, codex, gemini)"
            ));
        }
    };
    Ok(Step::Emit(emit))
}

fn parse_condition(args: &[Token]) -> Result<Condition, String> {
    if let Some((first, rest)) = args.split_first()
        && !first.starts_quoted
        && let Some(make) = match first.text.as_str() {
            "file-exists" => Some(Condition::FileExists as fn(PathBuf) -> Condition),
            "file-missing" => Some(Condition::FileMissing as fn(PathBuf) -> Condition),
            _ => None,
        }
    {
        let command = format!("when {}", first.text);
        let path = one_arg(&command, "a path", rest)?;
        return Ok(make(any_path(&command, path)?));
    }
    // Tokens are glued back together so `iteration>=2` and `iteration >= 2` both work.
    let text: String = args.iter().map(|token| token.text.as_str()).collect();
    let usage = "expected `when VARIABLE OP NUMBER`, e.g. `when iteration >= 2` \
                 (variables: iteration, attempt; operators: == != >= <= > <)";
    // The name ends within the first word (`iteration>=2`), so `when foo bar` names `foo`.
    let first = args.first().map_or("", |token| token.text.as_str());
    let name_end = first
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(first.len());
    let (name, rest) = text.split_at(name_end);
    let var = match name {
        "iteration" => Var::Iteration,
        "attempt" => Var::Attempt,
        "" => return Err(format!("`when`: {usage}")),
        other => {
            return Err(format!(
                "`when`: unknown variable `{other}` (expected iteration or attempt, or \
                 `when file-exists PATH` / `when file-missing PATH`)"
            ));
        }
    };
    // Two-character operators first, so `>=` is not read as `>` followed by `=2`.
    let operators = [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">=", Op::Ge),
        ("<=", Op::Le),
        (">", Op::Gt),
        ("<", Op::Lt),
    ];
    let Some((op, number)) = operators
        .iter()
        .find_map(|(symbol, op)| rest.strip_prefix(symbol).map(|number| (*op, number)))
    else {
        return Err(format!("`when`: {usage}"));
    };
    let value = number
        .parse::<u64>()
        .map_err(|_| format!("`when`: `{number}` is not a non-negative integer; {usage}"))?;
    Ok(Condition::Compare { var, op, value })
}

/// `200ms`, `2s`, `1m`, `1h`: a whole number and a unit.
fn duration_value(raw: &str) -> Option<Duration> {
    let digits_end = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (digits, unit) = raw.split_at(digits_end);
    let amount = digits.parse::<u64>().ok()?;
    let seconds_per = match unit {
        "ms" => return Some(Duration::from_millis(amount)),
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return None,
    };
    amount.checked_mul(seconds_per).map(Duration::from_secs)
}

fn parse_duration(command: &str, raw: &str) -> Result<Duration, String> {
    duration_value(raw).ok_or_else(|| {
        format!("`{command}`: bad duration `{raw}` (expected e.g. 200ms, 2s, 1m or 1h)")
    })
}

/// A duration or `forever`.
fn parse_span(command: &str, raw: &str) -> Result<Span, String> {
    if raw == "forever" {
        return Ok(Span::Forever);
    }
    duration_value(raw).map(Span::For).ok_or_else(|| {
        format!("`{command}`: bad duration `{raw}` (expected e.g. 200ms, 2s, 1m, 1h or `forever`)")
    })
}

/// The value of `key=DURATION`, which must be more than zero.
fn positive_duration(command: &str, key: &str, raw: &str) -> Result<Duration, String> {
    let duration = parse_duration(command, raw)?;
    if duration.is_zero() {
        return Err(format!("`{command}`: `{key}` must be more than zero"));
    }
    Ok(duration)
}

fn one_arg<'t>(command: &str, what: &str, args: &'t [Token]) -> Result<&'t str, String> {
    match args {
        [arg] => Ok(&arg.text),
        _ => Err(format!(
            "`{command}` expects {what}, got {} arguments (quote text that contains spaces)",
            args.len()
        )),
    }
}

fn no_args(command: &str, args: &[Token]) -> Result<(), String> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!("`{command}` takes no arguments"))
    }
}

/// A word of a line: bare characters and quoted strings glued together, shell-like.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    text: String,
    /// The token began with `"` (so it cannot be a keyword or a heredoc marker).
    starts_quoted: bool,
}

impl Token {
    fn is_heredoc(&self) -> bool {
        !self.starts_quoted && self.text.starts_with("<<")
    }
}

/// Splits a line into tokens. A `#` at the start of a token begins a comment.
fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        match chars.peek() {
            None | Some('#') => return Ok(tokens),
            Some(_) => {}
        }
        let mut token = Token {
            text: String::new(),
            starts_quoted: chars.peek() == Some(&'"'),
        };
        while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
            if c == '"' {
                read_quoted(&mut chars, &mut token.text)?;
            } else {
                token.text.push(c);
            }
        }
        tokens.push(token);
    }
}

/// Reads the rest of a quoted string (after its opening `"`), decoding escapes.
fn read_quoted(chars: &mut impl Iterator<Item = char>, into: &mut String) -> Result<(), String> {
    while let Some(c) = chars.next() {
        match c {
            '"' => return Ok(()),
            '\\' => match chars.next() {
                Some('n') => into.push('\n'),
                Some('t') => into.push('\t'),
                Some('"') => into.push('"'),
                Some('\\') => into.push('\\'),
                Some(other) => {
                    return Err(format!(
                        "unknown escape `\\{other}` in quoted string (allowed: \\n \\t \\\" \\\\)"
                    ));
                }
                None => break,
            },
            other => into.push(other),
        }
    }
    Err("unterminated quoted string (missing closing `\"`)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Vec<Statement> {
        match parse("t.fake", text) {
            Ok(script) => script.statements,
            Err(error) => panic!("unexpected parse error: {error}"),
        }
    }

    fn steps(text: &str) -> Vec<Step> {
        parse_ok(text).into_iter().map(|s| s.step).collect()
    }

    fn parse_err(text: &str) -> ParseError {
        match parse("t.fake", text) {
            Ok(script) => panic!("expected a parse error, got {script:?}"),
            Err(error) => error,
        }
    }

    fn wp(raw: &str) -> WorkPath {
        match WorkPath::new(raw) {
            Ok(path) => path,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn comments_and_blank_lines_are_ignored() {
        let script = "# a comment\n\n   \n  # indented comment\nprint \"x\"  # trailing\n";
        let statements = parse_ok(script);
        assert_eq!(statements.len(), 1);
        assert_eq!(statements[0].line, 5);
        assert_eq!(statements[0].step, Step::Print("x".into()));
    }

    #[test]
    fn write_heredoc_is_verbatim_with_newlines() {
        let script = "write src/greet.sh <<EOF\ngreet() { echo \"hello, $1\"; }\n  # not a comment\n\nEOF\nprint \"after\"\n";
        assert_eq!(
            steps(script),
            vec![
                Step::Write {
                    path: wp("src/greet.sh"),
                    content: "greet() { echo \"hello, $1\"; }\n  # not a comment\n\n".into(),
                },
                Step::Print("after".into()),
            ]
        );
        assert_eq!(parse_ok(script)[1].line, 6);
    }

    #[test]
    fn append_heredoc_with_custom_terminator_and_spaced_marker() {
        let script =
            "append notes.txt <<END\nEOF\none more line\nEND\nappend b.txt << STOP\nx\nSTOP\n";
        assert_eq!(
            steps(script),
            vec![
                Step::Append {
                    path: wp("notes.txt"),
                    content: "EOF\none more line\n".into(),
                },
                Step::Append {
                    path: wp("b.txt"),
                    content: "x\n".into(),
                },
            ]
        );
    }

    #[test]
    fn empty_heredoc_and_inline_content() {
        assert_eq!(
            steps("write a <<EOF\nEOF\nwrite b \"one\\ntwo\\n\"\n"),
            vec![
                Step::Write {
                    path: wp("a"),
                    content: String::new(),
                },
                Step::Write {
                    path: wp("b"),
                    content: "one\ntwo\n".into(),
                },
            ]
        );
    }

    #[test]
    fn unterminated_heredoc_is_reported_at_its_opening_line() {
        let error = parse_err("print \"a\"\nwrite f <<EOF\nbody\n");
        assert_eq!(error.line, 2);
        assert!(error.message.contains("never closed"), "{error}");
        assert!(error.message.contains("EOF"), "{error}");
    }

    #[test]
    fn heredoc_marker_needs_a_word() {
        let error = parse_err("write f <<\n");
        assert_eq!(error.line, 1);
        assert!(error.message.contains("terminator"), "{error}");
    }

    #[test]
    fn replace_delete_mkdir() {
        assert_eq!(
            steps(
                "replace src/greet.sh \"hello\" \"Hello, \\\"you\\\"\"\ndelete old.txt\nmkdir some/dir\n"
            ),
            vec![
                Step::Replace {
                    path: wp("src/greet.sh"),
                    from: "hello".into(),
                    to: "Hello, \"you\"".into(),
                },
                Step::Delete {
                    path: wp("old.txt")
                },
                Step::Mkdir {
                    path: wp("some/dir"),
                },
            ]
        );
    }

    #[test]
    fn replace_needs_three_arguments_and_nonempty_needle() {
        assert!(
            parse_err("replace f \"a\"\n")
                .message
                .contains("two quoted strings")
        );
        assert!(
            parse_err("replace f \"\" \"b\"\n")
                .message
                .contains("must not be empty")
        );
    }

    #[test]
    fn print_and_stderr_decode_escapes() {
        assert_eq!(
            steps(
                "print \"a\\tb\\nc \\\"q\\\" \\\\ # not a comment\"\nstderr \"oops\"\nprint bare\n"
            ),
            vec![
                Step::Print("a\tb\nc \"q\" \\ # not a comment".into()),
                Step::Stderr("oops".into()),
                Step::Print("bare".into()),
            ]
        );
    }

    #[test]
    fn bad_strings_are_syntax_errors() {
        let error = parse_err("print \"ok\"\nprint \"no end\n");
        assert_eq!((error.line, error.file.as_str()), (2, "t.fake"));
        assert!(error.message.contains("unterminated"), "{error}");
        let error = parse_err("print \"bad \\q escape\"\n");
        assert!(error.message.contains("\\q"), "{error}");
        let error = parse_err("print two words\n");
        assert!(error.message.contains("got 2 arguments"), "{error}");
    }

    #[test]
    fn emit_claude_with_all_keys() {
        let parsed = steps(
            "emit claude text=\"Done. All good\" turns=2 input=1200 output=300 cache_read=15000 cache_write=2000 cost=0.05 model=claude-opus-4\n",
        );
        assert_eq!(
            parsed,
            vec![Step::Emit(Emit::Claude(ClaudeEmit {
                text: "Done. All good".into(),
                turns: 2,
                input: 1200,
                output: 300,
                cache_read: 15000,
                cache_write: 2000,
                cost: 0.05,
                model: "claude-opus-4".into(),
            }))]
        );
    }

    #[test]
    fn emit_claude_defaults() {
        assert_eq!(
            steps("emit claude\n"),
            vec![Step::Emit(Emit::Claude(ClaudeEmit::default()))]
        );
        let defaults = ClaudeEmit::default();
        assert_eq!(defaults.turns, 1);
        assert_eq!(defaults.text, "done");
        assert_eq!(defaults.model, "claude-sonnet-4-5");
        assert_eq!(
            (
                defaults.input,
                defaults.output,
                defaults.cache_read,
                defaults.cache_write
            ),
            (0, 0, 0, 0)
        );
        assert!(defaults.cost.abs() < f64::EPSILON);
    }

    #[test]
    fn emit_errors() {
        assert!(parse_err("emit\n").message.contains("expects a format"));
        assert!(
            parse_err("emit aider\n")
                .message
                .contains("unknown format `aider`")
        );
        assert!(
            parse_err("emit claude turns\n")
                .message
                .contains("key=value")
        );
        assert!(
            parse_err("emit claude bogus=1\n")
                .message
                .contains("unknown key `bogus`")
        );
        assert!(parse_err("emit claude turns=0\n").message.contains("turns"));
        assert!(
            parse_err("emit claude input=-3\n")
                .message
                .contains("input")
        );
        assert!(parse_err("emit claude cost=abc\n").message.contains("cost"));
        assert!(parse_err("emit claude cost=-1\n").message.contains("cost"));
    }

    #[test]
    fn record_accepts_any_path() {
        assert_eq!(
            steps("record /abs/path/log.jsonl\nrecord ../rel.jsonl\n"),
            vec![
                Step::Record {
                    path: "/abs/path/log.jsonl".into()
                },
                Step::Record {
                    path: "../rel.jsonl".into()
                },
            ]
        );
    }

    #[test]
    fn sleep_durations() {
        assert_eq!(
            steps("sleep 200ms\nsleep 2s\nsleep 1m\nsleep 1h\n"),
            vec![
                Step::Sleep(Duration::from_millis(200)),
                Step::Sleep(Duration::from_secs(2)),
                Step::Sleep(Duration::from_secs(60)),
                Step::Sleep(Duration::from_secs(3600)),
            ]
        );
        for bad in [
            "sleep 5\n",
            "sleep ms\n",
            "sleep 1d\n",
            "sleep forever\n",
            "sleep 1.5s\n",
            "sleep\n",
        ] {
            let error = parse_err(bad);
            assert!(error.message.contains("sleep"), "{bad}: {error}");
        }
    }

    #[test]
    fn exit_codes() {
        assert_eq!(
            steps("exit 3\nexit 0\n"),
            vec![Step::Exit(3), Step::Exit(0)]
        );
        assert!(parse_err("exit 256\n").message.contains("0-255"));
        assert!(parse_err("exit -1\n").message.contains("0-255"));
        assert!(parse_err("exit\n").message.contains("exit code"));
    }

    #[test]
    fn when_and_always_set_guards() {
        let statements = parse_ok(
            "print \"a\"\nwhen iteration >= 2\nprint \"b\"\nprint \"c\"\nwhen attempt==1\nprint \"d\"\nalways\nprint \"e\"\n",
        );
        let guards: Vec<_> = statements.iter().map(|s| s.guard.clone()).collect();
        let iteration_ge_2 = Some(Guard {
            line: 2,
            condition: Condition::Compare {
                var: Var::Iteration,
                op: Op::Ge,
                value: 2,
            },
        });
        let attempt_eq_1 = Some(Guard {
            line: 5,
            condition: Condition::Compare {
                var: Var::Attempt,
                op: Op::Eq,
                value: 1,
            },
        });
        assert_eq!(
            guards,
            vec![
                None,
                iteration_ge_2.clone(),
                iteration_ge_2,
                attempt_eq_1,
                None
            ]
        );
        let lines: Vec<_> = statements.iter().map(|s| s.line).collect();
        assert_eq!(lines, vec![1, 3, 4, 6, 8]);
    }

    #[test]
    fn every_operator_parses_and_evaluates() {
        let cases = [
            ("==", Op::Eq, [false, true, false]),
            ("!=", Op::Ne, [true, false, true]),
            (">=", Op::Ge, [false, true, true]),
            ("<=", Op::Le, [true, true, false]),
            (">", Op::Gt, [false, false, true]),
            ("<", Op::Lt, [true, false, false]),
        ];
        for (symbol, op, expected) in cases {
            let statements = parse_ok(&format!("when attempt {symbol} 2\nprint \"x\"\n"));
            let Some(Guard { condition, .. }) = &statements[0].guard else {
                panic!("no guard for {symbol}");
            };
            assert!(
                matches!(condition, Condition::Compare { op: parsed, .. } if *parsed == op),
                "{symbol}: {condition:?}"
            );
            let actual = [1, 2, 3].map(|attempt| {
                condition.holds(
                    |var| match var {
                        Var::Attempt => attempt,
                        Var::Iteration => 99,
                    },
                    Path::new("/nonexistent"),
                )
            });
            assert_eq!(actual, expected, "{symbol}");
        }
    }

    #[test]
    fn bad_conditions() {
        assert!(
            parse_err("when\n")
                .message
                .contains("when VARIABLE OP NUMBER")
        );
        assert!(
            parse_err("when turn == 1\n")
                .message
                .contains("unknown variable `turn`")
        );
        assert!(
            parse_err("when attempt = 1\n")
                .message
                .contains("when VARIABLE OP NUMBER")
        );
        assert!(parse_err("when attempt == x\n").message.contains("`x`"));
        assert!(parse_err("always now\n").message.contains("no arguments"));
    }

    #[test]
    fn unknown_command_and_quoted_keyword() {
        let error = parse_err("print \"ok\"\n\nfrobnicate x\n");
        assert_eq!(error.line, 3);
        assert!(
            error.message.contains("unknown command `frobnicate`"),
            "{error}"
        );
        assert_eq!(error.to_string(), format!("t.fake:3: {}", error.message));
        assert!(
            parse_err("\"print\" x\n")
                .message
                .contains("expected a command")
        );
    }

    #[test]
    fn paths_that_escape_are_rejected() {
        for (script, needle) in [
            ("write ../x \"a\"\n", "`..`"),
            ("append a/../../x \"a\"\n", "`..`"),
            ("delete /etc/passwd\n", "absolute"),
            ("mkdir .\n", "work tree itself"),
            ("replace \"\" \"a\" \"b\"\n", "empty path"),
            ("write /tmp/x <<EOF\nEOF\n", "absolute"),
        ] {
            let error = parse_err(script);
            assert_eq!(error.line, 1);
            assert!(error.message.contains(needle), "{script}: {error}");
        }
    }

    #[test]
    fn work_paths_are_normalized() {
        assert_eq!(wp("./a/./b").as_path(), Path::new("a/b"));
        assert_eq!(wp("a/b").to_string(), "a/b");
        assert_eq!(wp("x").under(Path::new("/w")), PathBuf::from("/w/x"));
    }

    #[test]
    fn a_syntax_error_anywhere_rejects_the_whole_script() {
        let error = parse_err("write a \"x\"\nprint \"y\"\nwhen iteration ~ 2\n");
        assert_eq!(error.line, 3);
    }

    #[test]
    fn crlf_line_endings_are_accepted() {
        assert_eq!(
            steps("write a <<EOF\r\nhi\r\nEOF\r\nprint \"x\"\r\n"),
            vec![
                Step::Write {
                    path: wp("a"),
                    content: "hi\n".into(),
                },
                Step::Print("x".into()),
            ]
        );
    }

    #[test]
    fn go_silent_for_a_while_or_forever() {
        assert_eq!(
            steps("go-silent 30s\ngo-silent forever\ngo-silent 1h\n"),
            vec![
                Step::GoSilent(Span::For(Duration::from_secs(30))),
                Step::GoSilent(Span::Forever),
                Step::GoSilent(Span::For(Duration::from_secs(3600))),
            ]
        );
        let error = parse_err("print \"x\"\ngo-silent\n");
        assert_eq!(error.line, 2);
        assert!(
            error.message.contains("`go-silent` expects a duration"),
            "{error}"
        );
        let error = parse_err("go-silent soon\n");
        assert!(error.message.contains("bad duration `soon`"), "{error}");
        assert!(error.message.contains("forever"), "{error}");
        assert!(
            parse_err("go-silent 1s 2s\n")
                .message
                .contains("got 2 arguments")
        );
    }

    #[test]
    fn busy_with_all_keys_and_defaults() {
        assert_eq!(
            steps(
                "busy forever usage-per-turn=5000 interval=200ms\n\
                 busy 2m interval=1s usage-per-turn=0 output-per-turn=7 format=codex\n"
            ),
            vec![
                Step::Busy(Busy {
                    span: Span::Forever,
                    usage_per_turn: 5000,
                    output_per_turn: 0,
                    interval: Duration::from_millis(200),
                    format: WireFormat::Claude,
                }),
                Step::Busy(Busy {
                    span: Span::For(Duration::from_secs(120)),
                    usage_per_turn: 0,
                    output_per_turn: 7,
                    interval: Duration::from_secs(1),
                    format: WireFormat::Codex,
                }),
            ]
        );
    }

    #[test]
    fn busy_errors() {
        for (script, needle) in [
            ("busy\n", "expected `busy DURATION"),
            (
                "busy soon usage-per-turn=1 interval=1s\n",
                "bad duration `soon`",
            ),
            ("busy 1s interval=1s\n", "missing `usage-per-turn=…`"),
            ("busy 1s usage-per-turn=1\n", "missing `interval=…`"),
            (
                "busy 1s usage-per-turn=1 interval=0ms\n",
                "`interval` must be more than zero",
            ),
            ("busy 1s usage-per-turn=1 interval=1\n", "bad duration `1`"),
            (
                "busy 1s usage-per-turn=-1 interval=1s\n",
                "`usage-per-turn` must be",
            ),
            (
                "busy 1s usage-per-turn=1 interval=1s format=gemini\n",
                "unknown format `gemini`",
            ),
            (
                "busy 1s usage-per-turn=1 interval=1s tokens=3\n",
                "unknown key `tokens`",
            ),
            (
                "busy 1s usage-per-turn=1 interval=1s fast\n",
                "expected key=value, found `fast`",
            ),
        ] {
            let error = parse_err(&format!("print \"x\"\n{script}"));
            assert_eq!(error.line, 2, "{script}");
            assert!(error.message.contains(needle), "{script}: {error}");
        }
    }

    #[test]
    fn spawn_orphan_paths_and_interval() {
        assert_eq!(
            steps("spawn-orphan .pytest_cache/README.md\nspawn-orphan /tmp/x.log interval=2s\n"),
            vec![
                Step::SpawnOrphan {
                    path: ".pytest_cache/README.md".into(),
                    interval: ORPHAN_INTERVAL,
                },
                Step::SpawnOrphan {
                    path: "/tmp/x.log".into(),
                    interval: Duration::from_secs(2),
                },
            ]
        );
        assert_eq!(ORPHAN_INTERVAL, Duration::from_millis(100));
        for (script, needle) in [
            ("spawn-orphan\n", "expected `spawn-orphan PATH"),
            ("spawn-orphan \"\"\n", "empty path"),
            ("spawn-orphan a interval=0s\n", "must be more than zero"),
            ("spawn-orphan a every=1s\n", "unknown key `every`"),
            ("spawn-orphan a b\n", "expected key=value, found `b`"),
        ] {
            let error = parse_err(&format!("\n\n{script}"));
            assert_eq!(error.line, 3, "{script}");
            assert!(error.message.contains(needle), "{script}: {error}");
        }
    }

    #[test]
    fn argumentless_misbehaviours() {
        assert_eq!(
            steps("ignore-sigterm\ncrash\nemit-malformed\n"),
            vec![Step::IgnoreSigterm, Step::Crash, Step::EmitMalformed]
        );
        for command in ["ignore-sigterm", "crash", "emit-malformed"] {
            let error = parse_err(&format!("print \"x\"\n{command} now\n"));
            assert_eq!(error.line, 2);
            assert!(
                error
                    .message
                    .contains(&format!("`{command}` takes no arguments")),
                "{error}"
            );
        }
    }

    #[test]
    fn usage_limit_forms() {
        assert_eq!(
            steps(
                "usage-limit resets=1790016000\nusage-limit in=2h format=codex\n\
                 usage-limit format=claude in=90s\n"
            ),
            vec![
                Step::UsageLimit {
                    resets: Resets::At(1_790_016_000),
                    format: WireFormat::Claude,
                },
                Step::UsageLimit {
                    resets: Resets::In(Duration::from_secs(7200)),
                    format: WireFormat::Codex,
                },
                Step::UsageLimit {
                    resets: Resets::In(Duration::from_secs(90)),
                    format: WireFormat::Claude,
                },
            ]
        );
        for (script, needle) in [
            ("usage-limit\n", "expected `usage-limit resets="),
            (
                "usage-limit format=codex\n",
                "expected `usage-limit resets=",
            ),
            ("usage-limit resets=1 in=1s\n", "exactly one of"),
            (
                "usage-limit resets=soon\n",
                "`resets` must be epoch seconds",
            ),
            ("usage-limit in=soon\n", "bad duration `soon`"),
            (
                "usage-limit in=1s format=gemini\n",
                "unknown format `gemini`",
            ),
            ("usage-limit at=1\n", "unknown key `at`"),
        ] {
            let error = parse_err(&format!("\n{script}"));
            assert_eq!(error.line, 2, "{script}");
            assert!(error.message.contains(needle), "{script}: {error}");
        }
    }

    #[test]
    fn emit_codex_and_gemini() {
        assert_eq!(
            steps(
                "emit codex text=\"All fixed.\" input=88000 cached=70400 output=3100\n\
                 emit codex\n\
                 emit gemini text=\"Patched.\" input=49000 cached=30000 output=2200 model=gemini-2.5-flash deltas=3\n\
                 emit gemini\n"
            ),
            vec![
                Step::Emit(Emit::Codex(CodexEmit {
                    text: "All fixed.".into(),
                    input: 88_000,
                    cached: 70_400,
                    output: 3100,
                })),
                Step::Emit(Emit::Codex(CodexEmit::default())),
                Step::Emit(Emit::Gemini(GeminiEmit {
                    text: "Patched.".into(),
                    input: 49_000,
                    cached: 30_000,
                    output: 2200,
                    model: "gemini-2.5-flash".into(),
                    deltas: 3,
                })),
                Step::Emit(Emit::Gemini(GeminiEmit::default())),
            ]
        );
        for (script, needle) in [
            ("emit codex input=1 cached=2\n", "must not exceed"),
            ("emit codex turns=2\n", "unknown key `turns`"),
            ("emit codex input\n", "`emit codex`: expected key=value"),
            ("emit gemini cached=2\n", "must not exceed"),
            ("emit gemini deltas=0\n", "`deltas` must be at least 1"),
            ("emit gemini cost=1\n", "unknown key `cost`"),
        ] {
            let error = parse_err(&format!("print \"x\"\n{script}"));
            assert_eq!(error.line, 2, "{script}");
            assert!(error.message.contains(needle), "{script}: {error}");
        }
    }

    #[test]
    fn file_conditions_and_touch() {
        let statements = parse_ok(
            "when file-missing .fake/once\ntouch .fake/once\nexit 1\n\
             when file-exists /abs/marker\nprint \"again\"\nalways\ntouch ../outside\n",
        );
        let guards: Vec<_> = statements.iter().map(|s| s.guard.clone()).collect();
        let missing = Some(Guard {
            line: 1,
            condition: Condition::FileMissing(".fake/once".into()),
        });
        let exists = Some(Guard {
            line: 4,
            condition: Condition::FileExists("/abs/marker".into()),
        });
        assert_eq!(guards, vec![missing.clone(), missing, exists, None]);
        let steps: Vec<_> = statements.into_iter().map(|s| s.step).collect();
        assert_eq!(
            steps,
            vec![
                Step::Touch {
                    path: ".fake/once".into()
                },
                Step::Exit(1),
                Step::Print("again".into()),
                Step::Touch {
                    path: "../outside".into()
                },
            ]
        );
        for (script, needle) in [
            ("when file-exists\n", "`when file-exists` expects a path"),
            (
                "when file-missing a b\n",
                "`when file-missing` expects a path",
            ),
            ("when file-exists \"\"\n", "empty path"),
            ("when file-present a\n", "unknown variable `file-present`"),
            ("touch\n", "`touch` expects a path"),
            ("touch \"\"\n", "`touch`: empty path"),
        ] {
            let error = parse_err(&format!("print \"x\"\n{script}"));
            assert_eq!(error.line, 2, "{script}");
            assert!(error.message.contains(needle), "{script}: {error}");
        }
    }

    #[test]
    fn file_conditions_evaluate_against_the_cwd() {
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(error) => panic!("{error}"),
        };
        let root = dir.path();
        if let Err(error) = std::fs::write(root.join("here"), "") {
            panic!("{error}");
        }
        let no_vars = |_: Var| 1;
        let absolute = root.join("here");
        assert!(Condition::FileExists("here".into()).holds(no_vars, root));
        assert!(Condition::FileExists(absolute.clone()).holds(no_vars, Path::new("/")));
        assert!(!Condition::FileMissing("here".into()).holds(no_vars, root));
        assert!(Condition::FileMissing("gone".into()).holds(no_vars, root));
        assert!(!Condition::FileExists("gone".into()).holds(no_vars, root));
    }

    #[test]
    fn the_documented_misbehaviour_example_parses() {
        let docs = include_str!("lib.rs");
        let example: String = docs
            .split("//! ```text\n")
            .nth(2)
            .and_then(|rest| rest.split("//! ```").next())
            .unwrap_or_else(|| panic!("no second example in lib.rs"))
            .lines()
            .map(|line| format!("{}\n", line.trim_start_matches("//!").trim_start()))
            .collect();
        assert!(example.contains("spawn-orphan"), "{example}");
        let statements = parse_ok(&example);
        assert!(statements.iter().any(|s| matches!(
            s.step,
            Step::Busy(Busy {
                span: Span::Forever,
                ..
            })
        )));
        assert!(statements.iter().any(|s| s.step == Step::IgnoreSigterm));
    }
}
