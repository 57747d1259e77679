//! `nightshift accept ITEM` and `nightshift confirm ITEM`: non-destructive continuation.
//!
//! An escalated (or deferred) attempt keeps its branch; so does one awaiting an operator; a
//! parked item's attempts are kept under their preserve refs. Accepting integrates that kept
//! work — no new dev session, nothing re-driven — after running the check and the guards again
//! on the work merged onto the target's current tip. A red check, a failed guard or a conflict
//! moves nothing. Shipping without the review records a debt, which the next run
//! reviews before anything else.

use std::path::Path;

use crate::clock::Clock;
use crate::config::Strategy;
use crate::config::{Config, ReviewWhen};
use crate::git::{Git, GitError, Integrator, Landing, Prepared, Scratch, ScratchError};
use crate::session::SessionError;
use crate::store::{
    AttemptRow, EventKind, ItemRow, ItemState, LockError, Phase, RunLock, Store, StoreError,
};
use crate::workspace::Workspace;

/// What `accept`/`confirm` needs.
pub struct AcceptOptions<'a> {
    pub workspace: &'a Workspace,
    pub config: &'a Config,
    pub clock: &'a dyn Clock,
    pub item: &'a str,
    /// `confirm`: the item awaits an operator, who has now done what it listed.
    pub confirm: bool,
    /// The live config when the run's pinned copy judges instead: its guards must hold too,
    /// so an operator's tightening after the run counts and an agent's loosening does not
    /// (set by `accept` itself; callers pass `None`).
    pub also_guards: Option<&'a Config>,
}

/// What was shipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    pub run_id: String,
    pub item: String,
    pub attempt: u32,
    pub commit: String,
    pub target: String,
    /// Why a review is still owed (the debt recorded), if one is.
    pub debt: Option<String>,
    /// For `confirm`: the actions the operator confirmed.
    pub actions: Vec<String>,
}

/// Why nothing was accepted. Nothing moved in every case.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error(transparent)]
    Locked(#[from] LockError),
    #[error(transparent)]
    Pinned(#[from] crate::control_plane::PinError),
    #[error("find a run: no run has happened in this repository")]
    NoRun,
    #[error("find item `{item}` in run {run_id}")]
    UnknownItem { item: String, run_id: String },
    #[error("{verb} `{item}`: it is {state}, not {wanted}")]
    WrongState {
        verb: &'static str,
        item: String,
        state: String,
        wanted: &'static str,
    },
    #[error(
        "find the kept work of `{item}`: no attempt of it has a kept branch or a preserved change"
    )]
    NoKeptWork { item: String },
    #[error("merge `{item}` onto {target}: it conflicts in {}", paths.join(", "))]
    Conflict {
        item: String,
        target: String,
        paths: Vec<String>,
    },
    #[error(
        "accept `{item}`: the check is red on its work merged onto {target} (log: {log}); nothing moved"
    )]
    CheckRed {
        item: String,
        target: String,
        log: String,
    },
    #[error("accept `{item}`: {halt}: guard {guard}: {detail}; nothing moved")]
    GuardFailed {
        item: String,
        halt: crate::halt::HaltReason,
        guard: String,
        detail: String,
    },
    #[error("move {target}: {why}; nothing moved")]
    TargetBlocked { target: String, why: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("write {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Accepts (or confirms) an item's kept attempt. Takes the run lock: refuses while a run is live.
pub fn accept(opts: &AcceptOptions<'_>) -> Result<Accepted, AcceptError> {
    let ws = opts.workspace;
    let verb = if opts.confirm { "confirm" } else { "accept" };
    let holder = format!("pid {} ({verb} {})", std::process::id(), opts.item);
    let _lock = RunLock::acquire(&ws.lock(), &holder)?;
    let mut store = Store::open(&ws.state_db())?;
    let run = store.latest_run()?.ok_or(AcceptError::NoRun)?;
    let mut item = store
        .items(&run.id)?
        .into_iter()
        .find(|i| i.id == opts.item)
        .ok_or_else(|| AcceptError::UnknownItem {
            item: opts.item.to_owned(),
            run_id: run.id.clone(),
        })?;
    // The run's pinned control plane judges its work (issue 12), never the live file; the
    // item's check is the one its run journaled, never the store's mutable column.
    let pinned =
        crate::control_plane::pinned(&store, &run.id, &ws.root().join(crate::config::FILE_NAME))?;
    let pinned_opts;
    let opts = match &pinned {
        Some(p) => {
            item.check_command = Some(p.check_command(&item.id));
            pinned_opts = AcceptOptions {
                config: &p.config,
                also_guards: Some(opts.config),
                ..*opts
            };
            &pinned_opts
        }
        None => opts,
    };
    let allowed: &[ItemState] = if opts.confirm {
        &[ItemState::AwaitingOperator]
    } else {
        &[
            ItemState::Escalated,
            ItemState::Parked,
            ItemState::AwaitingOperator,
        ]
    };
    if !allowed.contains(&item.state) {
        return Err(AcceptError::WrongState {
            verb,
            item: item.id.clone(),
            state: item.state.to_string(),
            wanted: if opts.confirm {
                "awaiting_operator"
            } else {
                "escalated, parked or awaiting_operator"
            },
        });
    }
    let git = Git::new(ws.root());
    let (att, candidate) = kept_work(&store, &git, &run.id, &item)?;
    let target_ref = format!("refs/heads/{}", run.target);
    let tip = git
        .resolve(&target_ref)?
        .ok_or_else(|| AcceptError::TargetBlocked {
            target: run.target.clone(),
            why: "the branch does not exist".into(),
        })?;
    // Killed (or the journal failed) between moving the target and recording it: the commit
    // is on the target already, with this item's and attempt's trailers. Record it; never
    // merge the same work a second time.
    let landed = git.run(&[
        "log",
        "-1",
        "--format=%H",
        "--all-match",
        "--fixed-strings",
        "--grep",
        &format!("Nightshift-Run: {}", run.id),
        "--grep",
        &format!("Nightshift-Item: {}", item.id),
        "--grep",
        &format!("Nightshift-Attempt: {}", att.attempt),
        "--grep",
        "Nightshift-Accepted: ",
        &tip,
    ])?;
    let landed = landed.trim();
    let merged = if landed.is_empty() {
        merge_check_and_move(opts, &git, &item, &att, &candidate, &tip, &run, verb)?
    } else {
        landed.to_owned()
    };
    let debt = if opts.confirm && opts.config.review.review.when == ReviewWhen::Never {
        None
    } else if opts.confirm {
        Some("confirmed by an operator; shipped without its review".to_owned())
    } else {
        Some("accepted by an operator without its review".to_owned())
    };
    let actions: Vec<String> = item
        .operator_actions
        .as_deref()
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    store.record(
        &run.id,
        &opts.clock.wall().to_string(),
        EventKind::Accepted {
            item: item.id.clone(),
            attempt: att.attempt,
            commit: merged.clone(),
            onto: tip,
            confirmed: opts.confirm,
            debt: debt.clone(),
        },
    )?;
    Ok(Accepted {
        run_id: run.id,
        item: item.id,
        attempt: att.attempt,
        commit: merged,
        target: run.target,
        debt,
        actions,
    })
}

/// Merges the kept work onto the tip, checks it (check and guards) in a tree of its own, and
/// moves the target; returns the commit that landed.
#[expect(
    clippy::too_many_arguments,
    reason = "the facts of one accept, passed down once"
)]
fn merge_check_and_move(
    opts: &AcceptOptions<'_>,
    git: &Git,
    item: &ItemRow,
    att: &AttemptRow,
    candidate: &str,
    tip: &str,
    run: &crate::store::RunRow,
    verb: &str,
) -> Result<String, AcceptError> {
    let ws = opts.workspace;
    let common_dir = git.common_dir()?;
    let integrator = Integrator::new(git, &common_dir);
    let message = message(item, &run.id, att.attempt, verb);
    let merged = match integrator.prepare(&att.base, candidate, tip, Strategy::Squash, &message)? {
        Prepared::Ready { commit, .. } => commit,
        Prepared::Conflict { paths } => {
            return Err(AcceptError::Conflict {
                item: item.id.clone(),
                target: run.target.clone(),
                paths,
            });
        }
    };
    // The oracle judges exactly what would land, in a tree of its own.
    let log = ws
        .logs(&run.id)
        .join(format!("{}-a{}.{verb}-check.log", item.id, att.attempt));
    let green = check_merged(opts, git, item, att, &merged, tip, &run.id, &log)?;
    if !green {
        return Err(AcceptError::CheckRed {
            item: item.id.clone(),
            target: run.target.clone(),
            log: log.display().to_string(),
        });
    }
    let landing = integrator.land(&run.target, &merged, tip)?;
    refused(landing, &run.target)?;
    crate::failpoint::hit("accept_moved");
    Ok(merged)
}

/// The item's kept work and the commit that holds it: the latest attempt that kept its branch
/// (escalated, awaiting an operator: its candidate, else its branch), else — a parked item,
/// whose branches are gone — the latest failed attempt's preserve ref (its commits and its
/// whole tree at the end, as `restore` shows it). Work that changes nothing is not kept work.
fn kept_work(
    store: &Store,
    git: &Git,
    run_id: &str,
    item: &ItemRow,
) -> Result<(AttemptRow, String), AcceptError> {
    let no_kept_work = || AcceptError::NoKeptWork {
        item: item.id.clone(),
    };
    let failed: Vec<AttemptRow> = store
        .attempts(run_id)?
        .into_iter()
        .filter(|a| a.item == item.id && a.phase == Phase::Failed)
        .collect();
    if let Some(att) = failed
        .iter()
        .filter(|a| a.keep_branch)
        .max_by_key(|a| a.attempt)
    {
        let candidate = match att
            .candidate
            .as_deref()
            .map(|c| git.resolve(c))
            .transpose()?
        {
            Some(Some(c)) => c,
            _ => git
                .resolve(&format!("refs/heads/{}", att.branch))?
                .ok_or_else(no_kept_work)?,
        };
        return Ok((att.clone(), candidate));
    }
    let mut preserved: Vec<&AttemptRow> =
        failed.iter().filter(|a| a.preserve_ref.is_some()).collect();
    preserved.sort_by_key(|a| std::cmp::Reverse(a.attempt));
    for att in preserved {
        let Some(commit) = git.resolve(att.preserve_ref.as_deref().unwrap_or_default())? else {
            continue;
        };
        if git.tree_of(&commit)? != git.tree_of(&att.base)? {
            return Ok((att.clone(), commit));
        }
    }
    Err(no_kept_work())
}

fn message(item: &ItemRow, run_id: &str, attempt: u32, verb: &str) -> String {
    let (summary, _) = crate::git::message::prompt_subject(&item.prompt, 64);
    format!(
        "{}: {summary}\n\n{}\n\nNightshift-Run: {run_id}\nNightshift-Item: {}\nNightshift-Attempt: {attempt}\nNightshift-Accepted: {verb}\n",
        item.id,
        item.prompt.trim(),
        item.id,
    )
}

/// Runs the item's check on `merged` in a scratch checkout, removed afterwards.
#[expect(
    clippy::too_many_arguments,
    reason = "the facts of one accept, passed down once; grouping them would only rename them"
)]
fn check_merged(
    opts: &AcceptOptions<'_>,
    git: &Git,
    item: &ItemRow,
    att: &AttemptRow,
    merged: &str,
    tip: &str,
    run_id: &str,
    log: &Path,
) -> Result<bool, AcceptError> {
    let ws = opts.workspace;
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| AcceptError::Io { path, source }
    };
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let scratch = Scratch::add(
        git,
        &ws.worktrees(),
        &format!("accept-{}-{}", item.id, att.attempt),
        merged,
    )
    .map_err(|e| match e {
        ScratchError::Git(e) => AcceptError::Git(e),
        ScratchError::Io { path, source } => io(&path)(source),
    })?;
    let path = scratch.tree().to_owned();
    let result = (|| {
        scratch
            .seed(ws.root(), &opts.config.seed)
            .map_err(|why| AcceptError::Io {
                path: path.display().to_string(),
                source: std::io::Error::other(why),
            })?;
        let command = item
            .check_command
            .clone()
            .or_else(|| opts.config.check.command.clone())
            .unwrap_or_else(|| "false".into());
        let mut env = opts.config.worktree_env(ws.root());
        env.extend(crate::engine::check_env(
            run_id,
            &item.id,
            att.attempt,
            att.iteration,
        ));
        let green = crate::check::run(
            &command,
            path.clone(),
            env,
            opts.config.check.timeout,
            log.to_path_buf(),
        )?
        .green;
        if !green {
            return Ok(false);
        }
        // The guards, as on any green check: what the merged result changes against the
        // target's tip (blocked paths, assertions), and its tests against the tip's, when an
        // earlier check of the tip's tree left results.
        let results = crate::engine::verdict::read_results(opts.config, &path, log);
        let base =
            crate::engine::verdict::cached_results(ws, opts.config, &command, &git.tree_of(tip)?);
        let mut verdicts = crate::engine::verdict::evaluate(
            git,
            opts.config,
            tip,
            merged,
            base.as_ref(),
            results.as_ref(),
            true,
        )?;
        if let Some(live) = opts.also_guards {
            verdicts.extend(crate::engine::verdict::evaluate(
                git,
                live,
                tip,
                merged,
                base.as_ref(),
                results.as_ref(),
                true,
            )?);
        }
        if let Some(failed) = verdicts
            .iter()
            .find(|v| v.state == crate::guard::GuardState::Fail)
        {
            return Err(AcceptError::GuardFailed {
                item: item.id.clone(),
                halt: failed
                    .halt()
                    .unwrap_or(crate::halt::HaltReason::MetricIntegrityViolation),
                guard: failed.guard.clone(),
                detail: failed.detail.clone(),
            });
        }
        Ok(true)
    })();
    drop(scratch);
    result
}

/// What of a landing refuses the accept (nothing moved then): every way the integrator did
/// not move the target, the engine's reasons to wait or merge again.
fn refused(landing: Landing, target: &str) -> Result<(), AcceptError> {
    let why = match landing {
        Landing::Landed | Landing::AlreadyLanded => return Ok(()),
        Landing::Moved { tip } => {
            format!("it moved meanwhile (to {})", tip.get(..10).unwrap_or(&tip))
        }
        Landing::Lost { why } => format!("it moved meanwhile ({why})"),
        Landing::Stuck { why } => {
            format!("git refuses to move it ({why}); remove a stale `.lock` file if git names one")
        }
        // Uncommitted edits hold the accept only where it changes the same files; others are
        // carried over by the fast-forward (which refuses to overwrite any).
        Landing::Dirty { checkout, paths } => format!(
            "it is checked out at {} with uncommitted changes to {} that the item also \
             changes; commit or stash them",
            checkout.display(),
            paths.join(", ")
        ),
        Landing::FastForwardRefused { error, .. } => {
            format!("fast-forward the checkout: {error}")
        }
        Landing::Gone => "the branch does not exist".into(),
    };
    Err(AcceptError::TargetBlocked {
        target: target.to_owned(),
        why,
    })
}
