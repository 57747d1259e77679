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
    /// Ship an escalated or parked item's kept work (check re-run on the merged result; no new
    /// session); a review debt is recorded.
    Accept(AcceptArgs),
    /// Record that an operator did what an `awaiting_operator` item asked, and ship it.
    Confirm(AcceptArgs),
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
    #[arg(long, value_name = "DURATION", default_value = "14d")]
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

#[derive(Debug, Args)]
pub struct AcceptArgs {
    #[command(flatten)]
    pub repo: RepoArgs,
    /// The item to ship.
    pub item: String,
}
