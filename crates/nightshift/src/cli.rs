//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Run coding agents unattended over a queue of work items in a git repository — overnight, safely.
#[derive(Debug, Parser)]
#[command(name = "nightshift", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented nightshift.toml and keep .nightshift/ out of git.
    Init(InitArgs),
    /// Run the plan (or resume the unfinished run) until it halts.
    Run(RunArgs),
    /// Show the run and every item's state.
    Status(StatusArgs),
    /// Show the journal; `-f` follows it live.
    Log(LogArgs),
    /// Make a scratch repository with a plan and a scripted agent, run it, and show the report.
    Demo(DemoArgs),
    /// Turn an attempt's kept work into a branch you can inspect, check out or merge.
    Restore(RestoreArgs),
    /// Remove what nightshift made that holds no unique work (never an unshipped attempt's).
    Clean(CleanArgs),
    /// Stop the running run at a safe point, its work preserved; `nightshift run` resumes it.
    Stop(StopArgs),
    /// Work one item until the check passes: an agent (or any command) in a loop, under the
    /// same guards, budgets and commits as a plan item. No nightshift.toml needed.
    Loop(LoopArgs),
    /// Check that a receipt's verdict still holds: verify its signature, re-run its check at the
    /// recorded commit (no agent, no budget), compare fingerprints. MATCH, or exit 13.
    Replay(ReplayArgs),
    /// Block until the run needs someone (an item parked, a person required, the run halted),
    /// print that event as one JSON line, and exit with its class.
    Wait(WaitArgs),
    /// Pause the run: the step in flight finishes, then nothing new starts until `resume`.
    Pause(PauseArgs),
    /// Withdraw a `pause`: the run goes on.
    Resume(PauseArgs),
    /// Alerts: `nightshift notify test` sends a test alert through every channel.
    Notify(NotifyArgs),
    /// Deliver the alerts waiting in .nightshift/outbox/ (started by nightshift itself).
    #[command(name = "__deliver", hide = true)]
    Deliver(DeliverArgs),
    /// Run the check again and again under perturbation; bound its flake rate, or name what breaks it.
    Probe(ProbeArgs),
    /// Check the preconditions of an unattended run: agent, git, the check, notification.
    Doctor(DoctorArgs),
    /// Install a per-user service that resumes a live run after a reboot.
    Service(ServiceArgs),
    /// The run loop itself, as `nightshift run` supervises it (hidden: use `run`).
    #[command(hide = true)]
    Engine(EngineArgs),
    /// Why an item's attempts ended, and whether raising a limit and retrying is rational.
    Explain(ExplainArgs),
    /// Ship an escalated or parked item's kept work (check re-run on the merged result; no new
    /// session); a review debt is recorded.
    Accept(AcceptArgs),
    /// Record that an operator did what an `awaiting_operator` item asked, and ship it.
    Confirm(AcceptArgs),
    /// The morning report: what shipped, what did not and why, what it cost, what needs you,
    /// and whether it verifies — from the store and the receipts only.
    Report(ReportArgs),
    /// Say something to an item's agent: journaled with who and when, and given to its next
    /// session in the prompt.
    Tell(TellArgs),
    /// Watch an item's agent sessions as they work, rendered readably (tool calls, edits, text,
    /// results); follows across iterations until its attempt ends.
    Attach(AttachArgs),
    /// The run at a glance, full screen: items and phases, the live session, usage against the
    /// caps, alerts and pauses, keys for pause/resume/stop, and the morning review queue.
    Tui(TuiArgs),
    /// Print a shell completion script: `nightshift completions bash > ~/.local/share/bash-completion/completions/nightshift`.
    Completions(CompletionsArgs),
    /// Print the man page (roff): `nightshift man > ~/.local/share/man/man1/nightshift.1`.
    Man,
}

/// Where to find the repository.
#[derive(Debug, Args)]
pub struct RepoArgs {
    /// The repository (any directory inside it). Default: the current directory.
    #[arg(short = 'C', long = "repo", value_name = "DIR", global = true)]
    pub repo: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Overwrite an existing nightshift.toml.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Start a new run even if one is unfinished (its open attempts are preserved first).
    #[arg(long)]
    pub fresh: bool,
    /// Print one JSON object per journal event instead of progress lines.
    #[arg(long)]
    pub json: bool,
    /// No new session or attempt after this time (local `HH:MM`, or RFC 3339); the run then
    /// stops `deadline_reached` (exit 19), its work preserved and resumable.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub until: Option<String>,
    /// Run in the background (its own session, surviving the terminal); print the run id and
    /// how to follow it, and return at once.
    #[arg(long)]
    pub detach: bool,
    /// Only resume an unfinished run; do nothing (exit 0) when there is none. What the service
    /// installed by `nightshift service install` runs at boot.
    #[arg(long)]
    pub resume_only: bool,
    /// Resume the unfinished run with the live nightshift.toml instead of the copy the run
    /// pinned at its start (journaled as `control_plane_pinned`, reloaded).
    #[arg(long)]
    pub reload_config: bool,
}

/// `nightshift engine`: the flags `run` passes on.
#[derive(Debug, Args)]
pub struct EngineArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Start a new run even if one is unfinished.
    #[arg(long)]
    pub fresh: bool,
    /// Print one JSON object per journal event instead of progress lines.
    #[arg(long)]
    pub json: bool,
    /// The `--until` deadline, as `run` resolved it (RFC 3339). Absent: the journaled one.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// The deadline as the operator wrote it (`07:00`), for the journal and messages.
    #[arg(long, value_name = "TEXT", requires = "until")]
    pub until_given: Option<String>,
    /// Set by the supervisor on a restart: the journal position when it first started an
    /// engine. The run opened since is resumed; if it halted, exit with its halt (no new run).
    #[arg(long, value_name = "SEQ")]
    pub restart_after: Option<i64>,
    /// `run --reload-config`: resume with the live nightshift.toml (first start only).
    #[arg(long)]
    pub reload_config: bool,
    /// Set by the supervisor on a restart: how the previous engine ended (journaled).
    #[arg(long, value_name = "TEXT", requires = "restart_after")]
    pub previous_exit: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write a systemd user unit (Linux) or a launchd agent (macOS) that runs
    /// `nightshift run --resume-only` in this repository at boot or login, and enable it.
    Install(ServiceInstallArgs),
}

#[derive(Debug, Args)]
pub struct ServiceInstallArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Print what would be written and run, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// One JSON object on stdout (schema: `nightshift status --json-schema`).
    #[arg(long)]
    pub json: bool,
    /// Print the JSON Schema of `--json` output.
    #[arg(long, hide = true)]
    pub json_schema: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Keep printing new events until the run finishes.
    #[arg(short = 'f', long)]
    pub follow: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo (must not exist). Default: a new directory under the system temp dir.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The item whose work to restore.
    pub item: String,
    /// Which attempt (default: the latest one kept).
    pub attempt: Option<u32>,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// List what would be removed and what is kept, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove logs of finished runs older than this (e.g. 14d, 36h).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "14d",
        allow_hyphen_values = true
    )]
    pub older_than: String,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Let the step in flight (a session, a check) finish first.
    #[arg(long)]
    pub graceful: bool,
}

/// The agent CLIs `loop --agent` drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoopAgent {
    Claude,
    Codex,
    Gemini,
    Aider,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("worker").required(true).args(["agent", "exec"]))]
pub struct LoopArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The agent CLI to run (its usual binary on PATH).
    #[arg(long, value_enum)]
    pub agent: Option<LoopAgent>,
    /// Any command line (run with `sh -c` in the loop's worktree, like a `command` agent: the
    /// prompt is in $NIGHTSHIFT_PROMPT_FILE, the check's output in $NIGHTSHIFT_FEEDBACK_FILE).
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// The check: a shell command line; exit 0 is the fixpoint.
    #[arg(long, value_name = "CMD", value_parser = command_line, allow_hyphen_values = true)]
    pub check: String,
    /// Sessions before the loop halts with `max_iterations_reached` (exit 12).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = positive_u32, allow_negative_numbers = true)]
    pub max_iterations: u32,
    /// What to ask of the agent. Default: make the check pass without weakening the tests.
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// The model to ask the agent CLI for.
    #[arg(long, value_name = "MODEL", requires = "agent")]
    pub model: Option<String>,
    /// Print one JSON object per journal event instead of progress lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The receipt file (`.nightshift/receipts/<run>/<item>-a<N>.json`).
    #[arg(value_name = "RECEIPT")]
    pub receipt: PathBuf,
    /// The public key to verify with. Default: the repository's `.nightshift/receipts.pub`.
    #[arg(long, value_name = "PUB")]
    pub key: Option<PathBuf>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// What wakes it: `actionable` (parked, person required, halted), `finished` (halted or
    /// stopped), `any` (those and every pause).
    #[arg(long = "for", value_name = "WHAT", default_value = "actionable", value_parser = ["actionable", "finished", "any"])]
    pub for_: String,
    /// Give up after this long (e.g. 30s, 8h): prints `"wake": "timeout"` and exits 19.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub timeout: Option<String>,
    /// Print the JSON Schema of the printed line.
    #[arg(long, hide = true)]
    pub json_schema: bool,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Exactly this many runs (instead of the count derived from the target rate).
    #[arg(long, value_name = "N", conflicts_with = "max_flake_rate", value_parser = count_u64, allow_negative_numbers = true)]
    pub runs: Option<u64>,
    /// The flake rate to rule out, in (0, 1); the run count is derived from it. Default 0.01.
    #[arg(long, value_name = "RATE", value_parser = fraction, allow_negative_numbers = true)]
    pub max_flake_rate: Option<f64>,
    /// Confidence of the bound, in (0, 1).
    #[arg(long, value_name = "C", default_value_t = 0.95, value_parser = fraction, allow_negative_numbers = true)]
    pub confidence: f64,
    /// The check command line to probe (default: [check] command, else the first item's check).
    #[arg(long, value_name = "COMMAND")]
    pub check: Option<String>,
    /// Seed of the perturbations; the same seed repeats the same settings.
    #[arg(long, value_name = "N", value_parser = count_u64, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// One JSON object on stdout at the end.
    #[arg(long)]
    pub json: bool,
    /// Print the JSON Schema of `--json` output.
    #[arg(long, hide = true)]
    pub json_schema: bool,
}

#[derive(Debug, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
}

#[derive(Debug, Args)]
pub struct NotifyArgs {
    #[command(subcommand)]
    pub command: NotifyCommand,
}

#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Send a test alert through ATTENTION and every [notify] channel; say, per channel, whether
    /// it was delivered, is inert here (and why), or failed (and why). Exit 0 only if all
    /// delivered; 40 otherwise.
    Test(NotifyTestArgs),
}

#[derive(Debug, Args)]
pub struct NotifyTestArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
}

#[derive(Debug, Args)]
pub struct DeliverArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Skip the check runs (determinism, adequacy): what `run` does at its start.
    #[arg(long)]
    pub quick: bool,
    /// Check runs for determinism, the first included.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = positive_u32, allow_negative_numbers = true)]
    pub runs: u32,
    /// The check command line to examine (default: [check] command, else the first item's check).
    #[arg(long, value_name = "COMMAND")]
    pub check: Option<String>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print the JSON Schema of `--json` output.
    #[arg(long, hide = true)]
    pub json_schema: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The item to explain. Default: every item of the latest run that did not ship.
    pub item: Option<String>,
    /// One JSON object on stdout (schema: `nightshift explain --json-schema`).
    #[arg(long)]
    pub json: bool,
    /// Print the JSON Schema of `--json` output.
    #[arg(long, hide = true)]
    pub json_schema: bool,
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The item to ship.
    pub item: String,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The run to report on. Default: the latest.
    pub run: Option<String>,
    /// Also write the report as one self-contained HTML page (inline SVG charts, no script).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// One JSON object on stdout (schema: `nightshift report --json-schema`).
    #[arg(long)]
    pub json: bool,
    /// Print the JSON Schema of `--json` output.
    #[arg(long, hide = true)]
    pub json_schema: bool,
    /// The public key receipts are verified with. Default: `.nightshift/receipts.pub`.
    #[arg(long, value_name = "PUB")]
    pub key: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TellArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The item whose sessions should hear it.
    pub item: String,
    /// What to say.
    pub message: String,
    /// Who says it. Default: $USER.
    #[arg(long, value_name = "NAME")]
    pub from: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The item to watch.
    pub item: String,
    /// The CLI's own lines, as it wrote them.
    #[arg(long)]
    pub raw: bool,
    /// Print what is there and return, instead of following the live session.
    #[arg(long)]
    pub no_follow: bool,
}

#[derive(Debug, Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// Draw one frame of this size (WIDTHxHEIGHT) as text and exit (tests).
    #[arg(long, hide = true, value_name = "WxH")]
    pub print_frame: Option<String>,
}

// Value parsers. Negative numbers are let through to them (`allow_negative_numbers`; durations and
// times: `allow_hyphen_values`, read by their command) so that `--runs -1` is told what is wrong
// with `-1` instead of clap's "unexpected argument '-1'".

/// A whole number, 0 or more.
fn count_u64(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "`{text}` is negative; give a whole number, 0 or more"
        ));
    }
    trimmed
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number; give one such as 3"))
}

/// A whole number, 1 or more.
fn positive_u32(text: &str) -> Result<u32, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "`{text}` is negative; give a whole number, 1 or more"
        ));
    }
    match trimmed.parse::<u32>() {
        Ok(0) => Err("0 is too small; give a whole number, 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{text}` is not a whole number; give one such as 3"
        )),
    }
}

/// A probability strictly between 0 and 1.
fn fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value > 0.0 && value < 1.0 => Ok(value),
        Ok(_) => Err(format!(
            "`{text}` is not between 0 and 1 (exclusive); give one such as 0.05"
        )),
        Err(_) => Err(format!(
            "`{text}` is not a number; give one between 0 and 1 such as 0.05"
        )),
    }
}

/// A shell command line that is not empty: an empty check would pass everything.
fn command_line(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "the command is empty; an empty check would pass every change, so give \
                    the command that tests the work (e.g. --check 'cargo test')"
                .to_owned(),
        );
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    fn error(args: &[&str]) -> String {
        match Cli::try_parse_from(args) {
            Ok(cli) => panic!("{args:?} was accepted: {cli:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn an_empty_loop_check_is_refused() {
        for check in ["", "  "] {
            let message = error(&["nightshift", "loop", "--exec", "true", "--check", check]);
            assert!(message.contains("the command is empty"), "{message}");
        }
    }

    #[test]
    fn negative_numbers_and_durations_reach_their_validation() {
        let cases: &[(&[&str], &str)] = &[
            (&["nightshift", "probe", "--runs", "-1"], "`-1` is negative"),
            (&["nightshift", "probe", "--seed", "-7"], "`-7` is negative"),
            (
                &["nightshift", "probe", "--confidence", "-0.5"],
                "not between 0 and 1",
            ),
            (
                &["nightshift", "probe", "--max-flake-rate", "1.5"],
                "not between 0 and 1",
            ),
            (
                &["nightshift", "probe", "--confidence", "x"],
                "is not a number",
            ),
            (
                &["nightshift", "doctor", "--runs", "-3"],
                "`-3` is negative",
            ),
            (&["nightshift", "doctor", "--runs", "0"], "0 is too small"),
            (
                &[
                    "nightshift",
                    "loop",
                    "--exec",
                    "true",
                    "--check",
                    "true",
                    "--max-iterations",
                    "-2",
                ],
                "`-2` is negative",
            ),
        ];
        for (args, expected) in cases {
            let message = error(args);
            assert!(message.contains(expected), "{args:?}: {message}");
            assert!(
                !message.contains("unexpected argument"),
                "{args:?}: {message}"
            );
        }
    }

    #[test]
    fn negative_durations_are_values_for_the_command_to_read() {
        let parsed = Cli::try_parse_from(["nightshift", "wait", "--timeout", "-1"]);
        let Ok(Cli {
            command: Command::Wait(args),
        }) = parsed
        else {
            panic!("{parsed:?}");
        };
        assert_eq!(args.timeout.as_deref(), Some("-1"));
        let parsed = Cli::try_parse_from(["nightshift", "clean", "--older-than", "-5d"]);
        let Ok(Cli {
            command: Command::Clean(args),
        }) = parsed
        else {
            panic!("{parsed:?}");
        };
        assert_eq!(args.older_than, "-5d");
    }
}
