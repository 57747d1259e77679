//! `nightshift demo`: a scratch repository with a small real project, a plan of five items and
//! the scripted agent (run from this very binary), run end to end, then the morning summary.
//! One item is designed never to pass, to show parking: the run goes on without it.

use std::path::Path;
use std::sync::Arc;

use nightshift_core::clock::SystemClock;
use nightshift_core::engine::{self, RunOptions};
use nightshift_core::halt::{ExitClass, HaltReason};
use nightshift_core::workspace::Workspace;
use nightshift_core::{config, plan};

use crate::CommandResult;
use crate::cli::DemoArgs;
use crate::error::CommandError;
use crate::render;

/// The project's files: (path, content).
const PROJECT: &[(&str, &str)] = &[
    ("README.md", include_str!("demo_files/README.md")),
    ("lib/textkit.sh", include_str!("demo_files/textkit.sh")),
    ("tests/run.sh", include_str!("demo_files/run.sh")),
    (
        "tests/test_greet.sh",
        include_str!("demo_files/test_greet.sh"),
    ),
    (
        "tests/test_shout.sh",
        include_str!("demo_files/test_shout.sh"),
    ),
    (
        "tests/test_slugify.sh",
        include_str!("demo_files/test_slugify.sh"),
    ),
    (
        "tests/test_count_words.sh",
        include_str!("demo_files/test_count_words.sh"),
    ),
    (
        "tests/test_iso_week.sh",
        include_str!("demo_files/test_iso_week.sh"),
    ),
];

/// The scripted agent's behaviour per item: (item id, fake-agent script).
const AGENT: &[(&str, &str)] = &[
    ("add-greet", include_str!("demo_files/add-greet.fake")),
    ("add-shout", include_str!("demo_files/add-shout.fake")),
    ("add-slugify", include_str!("demo_files/add-slugify.fake")),
    (
        "add-count-words",
        include_str!("demo_files/add-count-words.fake"),
    ),
    ("add-iso-week", include_str!("demo_files/add-iso-week.fake")),
];

const PLAN: &str = include_str!("demo_files/plan.toml");

pub fn run(args: &DemoArgs) -> CommandResult {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "nightshift-demo-{}",
            jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S")
        )),
    };
    if dir.exists() {
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!("create the demo at {}: it already exists", dir.display()),
        )
        .hint("pass --dir with a path that does not exist yet"));
    }
    let repo = dir.join("repo");
    let agent_dir = dir.join("agent");
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::new(
            ExitClass::Execution,
            format!("find the nightshift binary: {e}"),
        )
    })?;
    setup(&repo, &agent_dir, &exe).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("set up the demo in {}: {e}", dir.display()),
        )
    })?;

    outln!("nightshift demo: a shell project with five open items, worked by a scripted agent");
    outln!("repository: {}\n", repo.display());
    let ws = Workspace::new(&repo);
    let (config, source) = config::load_with_source(&repo.join(config::FILE_NAME))?;
    let plan = plan::load(&config, &repo)?;
    let mut progress = render::Progress::default();
    let mut observe = |event: &nightshift_core::store::Event| {
        if let Some(line) = progress.line(event) {
            outln!("  {line}");
        }
    };
    let summary = engine::run(
        RunOptions {
            workspace: ws.clone(),
            config,
            plan,
            fresh: false,
            clock: Arc::new(SystemClock),
            loop_mode: false,
            until: None,
            restart_after: None,
            config_source: Some(source),
            reload_config: false,
            previous_exit: None,
            confine_checks: false,
        },
        &mut observe,
    )?;
    if let Some(store) = super::read_store(&ws)?
        && let Some(run) = store.run(&summary.run_id)?
    {
        out!("{}", render::summary(&run, &summary.items));
        out!("{}", super::report::terminal_report(&ws));
    }
    let page = dir.join("report.html");
    if let Some(store) = super::read_store(&ws)?
        && let Some(report) = super::report::build(&ws, &store, Some(&summary.run_id), None)?
    {
        super::report::write_page(&page, &report)?;
        outln!(
            "
the morning report as a page: {}",
            page.display()
        );
    }
    outln!(
        "
look around:"
    );
    outln!("  cd {}", repo.display());
    outln!("  git log --oneline            # one commit per shipped item");
    outln!("  nightshift status            # every item's state (--json for scripts)");
    outln!("  nightshift log               # the journal of everything that happened");
    outln!("  nightshift report            # the morning report (--html FILE for a page)");
    let shipped = summary
        .items
        .iter()
        .filter(|i| i.state == nightshift_core::store::ItemState::Shipped)
        .count();
    let as_designed = summary.halt == HaltReason::QueueDrainedWithParked && shipped == 4;
    if as_designed {
        outln!(
            "\nthe demo ran as designed: 4 shipped, 1 parked (run exit code: {})",
            summary.halt.class().code()
        );
        Ok(0)
    } else {
        eoutln!(
            "the demo did not run as designed: {shipped} shipped, halt {}",
            summary.halt
        );
        Ok(summary.halt.class().code())
    }
}

fn setup(repo: &Path, agent_dir: &Path, exe: &Path) -> std::io::Result<()> {
    for (path, content) in PROJECT {
        let file = repo.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(file, content)?;
    }
    std::fs::create_dir_all(agent_dir)?;
    for (item, script) in AGENT {
        std::fs::write(agent_dir.join(format!("{item}.fake")), script)?;
    }
    let plan = PLAN
        .replace("@EXE@", &toml_string(exe))
        .replace("@AGENT_DIR@", &toml_string(agent_dir));
    std::fs::write(repo.join(config::FILE_NAME), plan)?;
    std::fs::write(repo.join(".gitignore"), "/.nightshift/\n")?;
    git(repo, &["init", "--quiet", "--initial-branch=main"])?;
    git(repo, &["config", "user.name", "nightshift demo"])?;
    git(repo, &["config", "user.email", "demo@nightshift.invalid"])?;
    git(repo, &["add", "--all"])?;
    git(
        repo,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            "textkit: tests for five helpers, one implemented",
        ],
    )?;
    Ok(())
}

/// A path as the inside of a TOML basic string.
fn toml_string(path: &Path) -> String {
    path.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

fn git(dir: &Path, args: &[&str]) -> std::io::Result<()> {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .env("LC_ALL", "C")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "commit.gpgSign=false",
        ])
        .args(args)
        .output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
