//! Judging a check beyond its exit code: its output read as test results, the base's results
//! the guards compare against (cached per tree), the guards, `protect_tests`, and progress
//! across iterations (DESIGN.md §7; issue 5).
//!
//! Owns: [`Judge`], the side that never journals (trees of commits, the baseline cache and the
//! base check's run, results files, guard evaluation, `protect_tests` paths, the failing-set
//! trajectory, the determinism monitor ([`Determinism`]), the latest verdicts in the journal,
//! each item's journaled check), over narrow borrows of the engine; the engine keeps the steps
//! that journal (the baseline step, the `check_not_hermetic` refusal).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Engine, EngineError, io_err};
use crate::check::results::{FormatChoice, Progress, Results};
use crate::guard::{self, Change, FileTexts, GuardState, Verdict, paths::PathSet};
use crate::halt::HaltReason;
use crate::store::{AttemptRow, CheckStage, CheckSummary, EventKind, ItemRow};

/// What the check said the first time it judged one tree: the baseline guards compare with,
/// and the verdict a later check of the same tree must repeat.
#[derive(serde::Serialize, serde::Deserialize)]
struct Baseline {
    /// `None` in caches written before verdicts were kept.
    #[serde(default)]
    green: Option<bool>,
    /// `None`: the output did not parse.
    results: Option<Results>,
    /// The run that recorded it: verdicts are compared for determinism within a run only (the
    /// machine, the toolchain and the network may change between runs).
    #[serde(default)]
    run: Option<String>,
}

impl Engine<'_> {
    /// The judge over this engine's parts.
    pub(super) fn judge(&self) -> Judge<'_> {
        Judge {
            ws: &self.ws,
            git: &self.git,
            store: &self.store,
            config: &self.config,
            common_dir: &self.common_dir,
            run_id: self.run.as_ref().map_or("", |r| r.id.as_str()),
            item_checks: &self.item_checks,
            trees: &self.trees,
            determinism: &self.determinism,
            started_boot: self.started_boot,
        }
    }

    /// Before the first session of an attempt (its worktree is still the base): make sure the
    /// base's results are known, running the check once when no earlier check saw this tree.
    /// Where checks get no network, a red base is run once more with the host network: green
    /// there refuses the run (`check_not_hermetic`) before any session, whatever the format.
    /// Returns whether it ran (a step of its own: the scheduler looks at stops, pauses and the
    /// deadline before the first session starts).
    pub(super) fn ensure_baseline(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<bool, EngineError> {
        // `exit-code` keeps no results, but the base's verdict is what tells a check that needs
        // the network from an ordinary red base (decision 93).
        let exit_code = self.config.check.format == FormatChoice::ExitCode;
        if (exit_code && !self.probe_hermetic) || att.iteration > 0 {
            return Ok(false);
        }
        let tree = self.judge().tree_of(&att.base)?;
        // A cached verdict was judged hermetic (a refusal caches nothing, so the next run
        // asks again) or was green.
        if self.judge().cached(item, &tree).is_some() {
            return Ok(false);
        }
        // Once per attempt, even when the cache cannot be written.
        let done = self.store.attempt_events(
            &self.run_id(),
            &att.item,
            att.attempt,
            Some("baseline_checked"),
        )?;
        if !done.is_empty() {
            return Ok(false);
        }
        let logs = self.ws.logs(&self.run_id());
        std::fs::create_dir_all(&logs).map_err(io_err(&logs))?;
        let name = format!("{}-a{}.baseline-check", att.item, att.attempt);
        let log = super::attempt::unused_log(&logs.join(format!("{name}.log")));
        let (run, results) = self.judge().base_check(item, att, &log)?;
        if run.end.outcome == crate::session::Outcome::Stopped {
            // Not a verdict: the baseline runs again when the run resumes.
            return Ok(true);
        }
        if !run.green && self.probe_hermetic {
            use crate::sandbox::{Network, policy};
            let host_log = super::attempt::unused_log(&logs.join(format!("{name}.host.log")));
            let (host, _) = crate::sandbox::with_check_network(Network::Host, || {
                self.judge().base_check(item, att, &host_log)
            })?;
            if host.end.outcome == crate::session::Outcome::Stopped {
                return Ok(true);
            }
            if policy::hermetic(Network::None, run.green, || host.green)
                == policy::Hermetic::NotHermetic
            {
                self.refuse_not_hermetic(item, att, &tree, &log, &host_log)?;
                return Ok(true);
            }
        }
        self.judge()
            .cache_baseline(item, &tree, run.green, results.as_ref());
        self.record(EventKind::BaselineChecked {
            item: att.item.clone(),
            attempt: att.attempt,
            tree,
            results: results.as_ref().map(CheckSummary::of),
            log: log.display().to_string(),
        })?;
        Ok(true)
    }

    /// The base check is red in the check's network namespace and green with the host's
    /// network: no verdict of it means anything offline, so the run halts before any session
    /// (the item is not to blame; it goes round again in the next run).
    fn refuse_not_hermetic(
        &mut self,
        item: &ItemRow,
        att: &AttemptRow,
        tree: &str,
        log: &Path,
        host_log: &Path,
    ) -> Result<(), EngineError> {
        use crate::sandbox::policy::{NOT_HERMETIC, NOT_HERMETIC_HELP};
        let why = format!(
            "{}: {NOT_HERMETIC} (`{}` on the base tree {}: red without a network, log {}; green with the host network, log {}); {NOT_HERMETIC_HELP}",
            HaltReason::CheckNotHermetic,
            self.judge().check_command(item),
            super::attempt::short(tree),
            log.display(),
            host_log.display()
        );
        self.alerts().alert(
            crate::notify::AlertKind::Integrity,
            format!("{}: {why}", att.item),
            Some(&att.item),
        );
        self.halt_requested = Some(HaltReason::CheckNotHermetic);
        self.fail_halting(att, why, HaltReason::CheckNotHermetic)
    }
}

/// Reads what a check's verdict is judged by: the journal, git, the baseline cache, the pinned
/// config, the determinism monitor; runs the base check (borrowed from the engine for one use;
/// it never journals).
pub(super) struct Judge<'a> {
    ws: &'a crate::workspace::Workspace,
    git: &'a crate::git::Git,
    store: &'a crate::store::Store,
    /// The pinned control plane.
    config: &'a crate::config::Config,
    common_dir: &'a Path,
    /// The open run's id (empty before a run is open).
    run_id: &'a str,
    /// Each item's check as `run_started` journaled it.
    item_checks: &'a std::collections::HashMap<String, Option<String>>,
    /// Commit → tree ids already looked up.
    trees: &'a std::cell::RefCell<std::collections::HashMap<String, String>>,
    /// The oracle's stability over the engine's repeated checks.
    determinism: &'a std::cell::RefCell<Determinism>,
    /// When the engine started, on the boot clock (what a check's sweep looks at).
    started_boot: std::time::Duration,
}

/// Every repeated check of one tree is a sample of the oracle's stability (issue 5): the
/// sequential Wilson bound on its flake rate, per `tree command`, and the trees whose cached
/// first verdict was fed to it by this engine.
pub(super) struct Determinism {
    monitor: crate::check::stats::SequentialWilson,
    seeded: std::collections::HashSet<String>,
}

impl Determinism {
    /// A monitor that has seen nothing, held to the default target (1% at 95%).
    pub(super) fn new() -> Determinism {
        Determinism {
            monitor: crate::check::stats::SequentialWilson::new(
                crate::check::probe::DEFAULT_MAX_FLAKE_RATE,
                crate::check::probe::DEFAULT_CONFIDENCE,
            ),
            seeded: std::collections::HashSet::new(),
        }
    }
}

impl Judge<'_> {
    /// nightshift's git in an attempt's checkout (as `Engine::checkout`).
    fn checkout(&self, path: impl AsRef<Path>) -> crate::git::Git {
        self.git
            .checkout_at(self.common_dir, path.as_ref().to_path_buf())
    }

    /// The tree of a commit id (remembered: a commit's tree never changes).
    pub(super) fn tree_of(&self, commit: &str) -> Result<String, EngineError> {
        if let Some(tree) = self.trees.borrow().get(commit) {
            return Ok(tree.clone());
        }
        let tree = self.git.tree_of(commit)?;
        if commit.len() >= 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            self.trees
                .borrow_mut()
                .insert(commit.to_owned(), tree.clone());
        }
        Ok(tree)
    }

    /// The tree of a commit made during this run (an attempt's candidate: nightshift's own
    /// commit, or the agent's fetched in), which nothing but its object can name yet: read
    /// from its loose object in the user's store where it is one (decision 106), else asked
    /// of git as [`Judge::tree_of`]. (The base goes through `tree_of`: a user's replace ref
    /// may stand for it, and git's answer is the one that counts.)
    pub(super) fn tree_of_new(&self, commit: &str) -> Result<String, EngineError> {
        if let Some(tree) = self.trees.borrow().get(commit) {
            return Ok(tree.clone());
        }
        match crate::git::object::read_loose_commit(&self.common_dir.join("objects"), commit) {
            Some(object) => {
                self.know_tree(commit, &object.tree);
                Ok(object.tree)
            }
            None => self.tree_of(commit),
        }
    }

    /// Remembers that `commit` has `tree` (both known without asking git).
    pub(super) fn know_tree(&self, commit: &str, tree: &str) {
        self.trees
            .borrow_mut()
            .insert(commit.to_owned(), tree.to_owned());
    }

    /// Reads a finished check's results: the configured results file, else the whole log.
    pub(super) fn read_results(&self, worktree: &Path, log: &Path) -> Option<Results> {
        read_results(self.config, worktree, log)
    }

    /// Removes a stale results file before a check run, so an old report is never read.
    pub(super) fn clear_results_file(&self, worktree: &Path) {
        if let Some(file) = &self.config.check.results {
            clear_results_file(worktree, file);
        }
    }

    /// Where the baseline of `tree` under this item's check is cached.
    fn baseline_path(&self, item: &ItemRow, tree: &str) -> PathBuf {
        baseline_path(self.ws, self.config, &self.check_command(item), tree)
    }

    fn cached(&self, item: &ItemRow, tree: &str) -> Option<Baseline> {
        let bytes = std::fs::read(self.baseline_path(item, tree)).ok()?;
        serde_json::from_slice::<Baseline>(&bytes).ok()
    }

    fn cached_baseline(&self, item: &ItemRow, tree: &str) -> Option<Option<Results>> {
        self.cached(item, tree).map(|b| b.results)
    }

    /// Remembers the first verdict on `tree` (atomically; best effort; a later check of the
    /// same tree is compared with it, never written over it).
    pub(super) fn cache_baseline(
        &self,
        item: &ItemRow,
        tree: &str,
        green: bool,
        results: Option<&Results>,
    ) {
        let path = self.baseline_path(item, tree);
        if path.exists() {
            return;
        }
        let Some(dir) = path.parent() else { return };
        let _ = std::fs::create_dir_all(dir);
        let tmp = path.with_extension("tmp");
        let body = serde_json::to_vec(&Baseline {
            green: Some(green),
            results: results.cloned(),
            run: Some(self.run_id.to_owned()),
        });
        if let Ok(body) = body
            && std::fs::write(&tmp, body).is_ok()
        {
            let _ = std::fs::rename(&tmp, &path);
        }
    }

    /// Whether this check of `tree` contradicts an earlier one of the same tree (another
    /// verdict, or another failing set): proof that the oracle is not deterministic.
    pub(super) fn contradicts_earlier(
        &self,
        item: &ItemRow,
        tree: &str,
        green: bool,
        results: Option<&Results>,
    ) -> Option<String> {
        let earlier = self
            .cached(item, tree)
            .filter(|b| b.run.as_deref() == Some(self.run_id))?;
        let short = super::attempt::short(tree);
        if let Some(was) = earlier.green
            && was != green
        {
            let say = |g: bool| if g { "green" } else { "red" };
            return Some(format!(
                "the check said {} and then {} on the same tree {short}",
                say(was),
                say(green)
            ));
        }
        if let (Some(was), Some(now)) = (&earlier.results, results) {
            let (was, now) = (was.failing_stable(), now.failing_stable());
            if was != now {
                return Some(format!(
                    "the check failed {} tests and then {} other ones on the same tree {short}",
                    was.len(),
                    now.len()
                ));
            }
        }
        None
    }

    /// The test files the attempt changed that exist at its base (modified or deleted): the
    /// ones `protect_tests` puts back for the check.
    pub(super) fn protected_paths(&self, att: &AttemptRow) -> Result<Vec<String>, EngineError> {
        if !self.config.guards.protect_tests {
            return Ok(Vec::new());
        }
        let tests = self.test_paths();
        let wt = self.checkout(&att.worktree);
        let from = guard_base(att);
        let mut paths = Vec::new();
        for (path, _deleted) in wt.changed_paths(&from, "HEAD")? {
            if tests.is_match(&path) && wt.file_at(&from, &path)?.is_some() {
                paths.push(path);
            }
        }
        Ok(paths)
    }

    fn test_paths(&self) -> PathSet {
        // Validated when the config was read.
        PathSet::new(self.config.guards.test_paths.iter().map(String::as_str))
            .unwrap_or_else(|_| PathSet::empty())
    }

    /// The guards on a work check: blocked paths always; the oracle-integrity guards when the
    /// check is green (a red check cannot count as success, and a runner that crashed halfway
    /// reports a partial test set).
    pub(super) fn evaluate_guards(
        &self,
        item: &ItemRow,
        att: &AttemptRow,
        results: Option<&Results>,
        green: bool,
    ) -> Result<Vec<Verdict>, EngineError> {
        let from = guard_base(att);
        let tree = self.tree_of(&from)?;
        let base = self.cached_baseline(item, &tree).flatten();
        // The candidate, what ships (HEAD of the checkout unless a check moved it).
        Ok(evaluate(
            &self.checkout(&att.worktree),
            self.config,
            &from,
            att.candidate.as_deref().unwrap_or("HEAD"),
            base.as_ref(),
            results,
            green,
        )?)
    }

    /// On a red work check: the trajectory of this attempt's failing sets, and whether it says
    /// to stop (no progress, oscillation, a fixed test failing again).
    pub(super) fn no_convergence(
        &self,
        item: &ItemRow,
        att: &AttemptRow,
    ) -> Result<Option<(HaltReason, String)>, EngineError> {
        let (base, checks) = self.failing_history(item, att)?;
        let k = self.config.check.no_progress_after as usize;
        // The base's failing set is where a "fixed" test was failing before the agent touched
        // it, so it counts for oscillation and regression; it does not count as a best to beat
        // (a green base, or an agent that writes the item's tests first, would otherwise make
        // every shrinking trajectory look stuck). `explain` judges the same way.
        let full: Vec<_> = base.iter().cloned().chain(checks.iter().cloned()).collect();
        let progress = match crate::check::results::assess(&full, k) {
            p @ (Progress::Oscillation | Progress::SameTestRegressed { .. }) => p,
            _ => crate::check::results::assess(&checks, k),
        };
        let sizes: Vec<String> = full.iter().map(|s| s.len().to_string()).collect();
        let trajectory = sizes.join(" → ");
        Ok(match progress {
            Progress::Improving | Progress::Converged => None,
            Progress::NoProgress => Some((
                HaltReason::NoProgressDetected,
                format!("no smaller failing set for {k} iterations (failing: {trajectory})"),
            )),
            Progress::Oscillation => Some((
                HaltReason::OscillationDetected,
                format!("the failing set returned to an earlier one (failing: {trajectory})"),
            )),
            Progress::SameTestRegressed { test } => Some((
                HaltReason::SameTestRegressed,
                format!("`{test}` was fixed and fails again (failing: {trajectory})"),
            )),
        })
    }

    /// The guard verdicts of this attempt's latest work check.
    pub(super) fn last_guards(&self, att: &AttemptRow) -> Result<Vec<Verdict>, EngineError> {
        let events =
            self.store
                .attempt_events(self.run_id, &att.item, att.attempt, Some("check_ended"))?;
        Ok(events
            .into_iter()
            .rev()
            .find_map(|e| match e.kind {
                EventKind::CheckEnded {
                    stage: CheckStage::Work,
                    guards,
                    ..
                } => Some(guards),
                _ => None,
            })
            .unwrap_or_default())
    }

    /// Why this attempt's latest check was untrusted.
    pub(super) fn last_untrusted(&self, att: &AttemptRow) -> Result<Option<String>, EngineError> {
        let events =
            self.store
                .attempt_events(self.run_id, &att.item, att.attempt, Some("check_ended"))?;
        Ok(events.into_iter().rev().find_map(|e| match e.kind {
            EventKind::CheckEnded { untrusted, .. } => untrusted,
            _ => None,
        }))
    }

    /// The failing sets the attempt went through, oldest first: the base's (where its output
    /// parsed), then each work check's that parsed. The base is where a "fixed" test was
    /// failing before the agent touched it.
    fn failing_history(&self, item: &ItemRow, att: &AttemptRow) -> Result<Trajectory, EngineError> {
        let tree = self.tree_of(&att.base)?;
        let base = self
            .cached_baseline(item, &tree)
            .flatten()
            .map(|r| r.failing_stable());
        let events =
            self.store
                .attempt_events(self.run_id, &att.item, att.attempt, Some("check_ended"))?;
        let checks = events.into_iter().filter_map(|e| match e.kind {
            EventKind::CheckEnded {
                stage: CheckStage::Work,
                results: Some(summary),
                ..
            } => Some(summary.failing.into_iter().collect()),
            _ => None,
        });
        Ok((base, checks.collect()))
    }

    /// The item's check as the run journaled it (issue 12): its `run_started` plan entry, else
    /// the pinned `[check] command`; never the store's mutable `items.check_command`.
    pub(super) fn check_command(&self, item: &ItemRow) -> String {
        self.item_checks
            .get(&item.id)
            .cloned()
            .flatten()
            .or_else(|| self.config.check.command.clone())
            .unwrap_or_else(|| "false".into())
    }

    /// One run of the item's check on the attempt's base tree, logging to `log`, which leaves
    /// the tree as the base has it.
    fn base_check(
        &self,
        item: &ItemRow,
        att: &AttemptRow,
        log: &Path,
    ) -> Result<(crate::check::CheckRun, Option<Results>), EngineError> {
        let worktree = PathBuf::from(&att.worktree);
        self.clear_results_file(&worktree);
        let run = crate::check::run(
            &self.check_command(item),
            worktree.clone(),
            super::attempt::item_env(self.config, self.ws, self.run_id, att, 0),
            self.config.check.timeout,
            log.to_path_buf(),
        )?;
        // Nothing the check started may outlive it and write into the agent's tree.
        crate::session::sweep(
            &worktree,
            self.config.session.kill_grace,
            crate::session::Reach::Session,
            Some(self.started_boot),
        );
        // The agent starts from the base's tree, not from what its check wrote: untracked
        // litter and edits to tracked files go (ignored files, such as build caches, stay).
        let results = self.read_results(&worktree, log);
        self.clear_results_file(&worktree);
        self.checkout(&worktree).discard_changes()?;
        Ok((run, results))
    }

    /// Feeds this check of `tree` to the sequential Wilson monitor (seeded with the first
    /// verdict ever recorded for the tree) and says why the oracle is untrusted, when the
    /// lower bound on its flake rate is above the target (1% at 95%).
    pub(super) fn determinism(
        &self,
        item: &ItemRow,
        tree: &str,
        green: bool,
        results: Option<&Results>,
    ) -> Option<String> {
        let key = format!("{tree} {}", self.check_command(item));
        let verdict = |green: bool, results: Option<&Results>| {
            let failing: Vec<String> = results
                .map(|r| r.failing_stable().into_set().into_iter().collect())
                .unwrap_or_default();
            format!("{green} {}", failing.join(" "))
        };
        let mut determinism = self.determinism.borrow_mut();
        if determinism.seeded.insert(key.clone())
            && let Some(first) = self.cached(item, tree)
            && first.run.as_deref() == Some(self.run_id)
            && let Some(was) = first.green
        {
            determinism
                .monitor
                .observe(&key, &verdict(was, first.results.as_ref()));
        }
        let stability = determinism.monitor.observe(&key, &verdict(green, results));
        drop(determinism);
        // The bound is over every repeated check of the run; it is this check, contradicting
        // the first verdict on its own tree, that is reported (never an unrelated tree).
        if !stability.untrusted {
            return None;
        }
        let what = self.contradicts_earlier(item, tree, green, results)?;
        Some(format!(
            "{what}: {} of {} repeated checks disagreed, flake rate at least {} with 95% confidence (target: below 1%)",
            stability.disagreements,
            stability.trials,
            crate::check::stats::percent_up(stability.flake_rate_lower)
        ))
    }
}

/// The first failing guard of a check, as the item's halt and the reason to park it with.
pub(super) fn violation(guards: &[Verdict]) -> Option<(HaltReason, String)> {
    guards
        .iter()
        .find(|g| g.state == GuardState::Fail)
        .and_then(|g| {
            g.halt()
                .map(|h| (h, format!("{h}: {}: {}", g.guard, g.detail)))
        })
}

/// The guards on the change `from` → `to`: blocked paths always; the oracle-integrity guards
/// when the check of `to` is green (a red check cannot count as success, and a runner that
/// crashed halfway reports a partial test set). `base` are the results of the check on `from`.
/// Shared by the engine (an attempt's work against its base) and `accept` (the merged result
/// against the target's tip).
pub(crate) fn evaluate(
    git: &crate::git::Git,
    config: &crate::config::Config,
    from: &str,
    to: &str,
    base: Option<&Results>,
    results: Option<&Results>,
    green: bool,
) -> Result<Vec<Verdict>, crate::git::GitError> {
    let changed: Vec<Change> = git
        .changed_paths(from, to)?
        .into_iter()
        .map(|(path, deleted)| Change { path, deleted })
        .collect();
    // Validated when the config was read.
    let blocked = PathSet::new(
        crate::config::ALWAYS_BLOCKED
            .iter()
            .copied()
            .chain(config.guards.blocked_paths.iter().map(String::as_str)),
    )
    .unwrap_or_else(|_| PathSet::empty());
    let mut verdicts = vec![guard::blocked_paths(&changed, &blocked)];
    if !green {
        return Ok(verdicts);
    }
    let expect = if config.check.format == FormatChoice::ExitCode {
        guard::Expect::Never
    } else if config.check.results.is_some()
        || matches!(config.check.format, FormatChoice::Fixed(_))
    {
        guard::Expect::Required
    } else {
        guard::Expect::Detected
    };
    verdicts.push(guard::test_set(base, results, expect));
    verdicts.push(guard::skipped(base, results, expect));
    let tests = PathSet::new(config.guards.test_paths.iter().map(String::as_str))
        .unwrap_or_else(|_| PathSet::empty());
    let mut files = Vec::new();
    for change in &changed {
        if guard::assertions::Language::of(&change.path).is_none() {
            continue;
        }
        files.push(FileTexts {
            path: change.path.clone(),
            before: git.file_at(from, &change.path)?,
            after: if change.deleted {
                None
            } else {
                git.file_at(to, &change.path)?
            },
        });
    }
    // The files the check's own results say hold tests, at the base or now.
    let from_results: std::collections::BTreeSet<String> = base
        .into_iter()
        .chain(results)
        .flat_map(Results::test_files)
        .collect();
    verdicts.push(guard::assertions(&files, &tests, &from_results));
    Ok(verdicts)
}

/// A finished check's results: the configured results file, else the whole log.
pub(crate) fn read_results(
    config: &crate::config::Config,
    worktree: &Path,
    log: &Path,
) -> Option<Results> {
    let format = config.check.format;
    if format == FormatChoice::ExitCode {
        return None;
    }
    let bytes = match &config.check.results {
        // Through the worktree's symlinks only while they stay inside it: an agent can make one.
        Some(file) => crate::bounded::read(
            &crate::config::resolve_inside(worktree, file).ok()?,
            crate::bounded::RESULTS_BYTES,
        )
        .ok()?,
        None => std::fs::read(log).ok()?,
    };
    format.parse(&bytes)
}

/// Removes the results file `file` (relative) in `worktree` before a check run, but only inside
/// the worktree: its directory is resolved through the worktree's symlinks (which an agent may
/// have made) and must stay inside it, and a symlink in its place is removed itself, never what
/// it points to. Anything else is left alone: nightshift never deletes a file outside the
/// worktree it made.
pub(crate) fn clear_results_file(worktree: &Path, file: &Path) {
    let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else {
        return;
    };
    let directory = if parent.as_os_str().is_empty() {
        worktree.canonicalize()
    } else {
        match crate::config::resolve_inside(worktree, parent) {
            Ok(directory) => Ok(directory),
            Err(_) => return,
        }
    };
    if let Ok(directory) = directory {
        let _ = std::fs::remove_file(directory.join(name));
    }
}

/// Where the first verdict of `command` on `tree` is cached.
fn baseline_path(
    ws: &crate::workspace::Workspace,
    config: &crate::config::Config,
    command: &str,
    tree: &str,
) -> PathBuf {
    let mut key = Sha256::new();
    key.update(tree.as_bytes());
    key.update(b"\n");
    key.update(command.as_bytes());
    key.update(b"\n");
    // A format named in the config reads other ids than detection might.
    key.update(format!("{:?}", config.check.format).as_bytes());
    key.update(b"\n");
    if let Some(file) = &config.check.results {
        key.update(file.display().to_string().as_bytes());
    }
    let key: String = key
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    ws.dir().join("baselines").join(format!("{key}.json"))
}

/// The cached results of `command` on `tree`, when an earlier check judged it and parsed.
pub(crate) fn cached_results(
    ws: &crate::workspace::Workspace,
    config: &crate::config::Config,
    command: &str,
    tree: &str,
) -> Option<Results> {
    let bytes = std::fs::read(baseline_path(ws, config, command, tree)).ok()?;
    serde_json::from_slice::<Baseline>(&bytes).ok()?.results
}

/// The base's failing set (when its output parsed) and each work check's, oldest first.
type Trajectory = (
    Option<crate::check::results::FailingSet>,
    Vec<crate::check::results::FailingSet>,
);

/// What an attempt's changes are measured from: its base, or after a conflict repair merged the
/// target's tip into it, that tip (the target's own changes since the base are not the agent's).
pub(super) fn guard_base(att: &AttemptRow) -> String {
    match &att.onto {
        Some(onto) if att.conflict_repairs > 0 => onto.clone(),
        _ => att.base.clone(),
    }
}

#[cfg(test)]
mod results_file_tests {
    use super::clear_results_file;
    use std::path::Path;

    #[test]
    fn a_stale_results_file_is_removed_but_never_one_outside_the_worktree() -> std::io::Result<()> {
        let outside = tempfile::tempdir()?;
        let worktree = tempfile::tempdir()?;
        let victim = outside.path().join("junit.xml");
        std::fs::write(&victim, "keep me")?;
        // An agent links a directory of the worktree out of it.
        std::os::unix::fs::symlink(outside.path(), worktree.path().join("target"))?;
        clear_results_file(worktree.path(), Path::new("target/junit.xml"));
        assert!(victim.exists(), "a file outside the worktree was deleted");
        // ...or puts a symlink where the results file goes: the link goes, the target stays.
        std::os::unix::fs::symlink(&victim, worktree.path().join("report.xml"))?;
        clear_results_file(worktree.path(), Path::new("report.xml"));
        assert!(victim.exists(), "the symlink's target was deleted");
        assert!(std::fs::symlink_metadata(worktree.path().join("report.xml")).is_err());
        // `..` never leaves either (the config refuses it; this is the second line).
        let nested = worktree.path().join("a/b");
        std::fs::create_dir_all(&nested)?;
        clear_results_file(&nested, Path::new("../../../junit.xml"));
        // A real stale report inside is removed.
        std::fs::create_dir(worktree.path().join("out"))?;
        let stale = worktree.path().join("out/junit.xml");
        std::fs::write(&stale, "old")?;
        clear_results_file(worktree.path(), Path::new("out/junit.xml"));
        assert!(!stale.exists());
        Ok(())
    }
}
