//! One signed receipt per attempt, written when the attempt ends (shipped, failed or parked),
//! built from that attempt's journal entries: `.nightshift/receipts/<run>/<item>-a<N>.json`.
//!
//! Writing a receipt is housekeeping: a failure is a `teardown_failed` warning and an
//! ATTENTION line, never a crashed run. It is idempotent (an existing receipt is kept), so the
//! teardown reconciliation at the next start writes a receipt a crash left unwritten.
//!
//! Owns: [`Receipts`], building and signing a receipt over narrow borrows (the store's
//! journal, git objects, the workspace, the config, the clock); the engine keeps only the hook
//! that journals a failure. What the attempt ran is the journal's: each check's command and
//! timeout (`check_started`), who did the work and the version its binary said at each
//! session's launch (`session_started`), the seeded files' digests as its checkout got them
//! (`worktree_ready`); the trees of its commits and its base's context files are git objects,
//! and its prompts and logs are files under `.nightshift/`. A journal from before an entry
//! carried its part falls back to the journaled plan, the pinned config, the working tree and
//! asking the agent's binary now (decision 112).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{Engine, launch};
use crate::check::fingerprint;
use crate::config::AgentKind;
use crate::halt::HaltReason;
use crate::receipt::{
    self, AgentTuple, CheckRecord, DeterminismRecord, GuardState, GuardVerdict, Iteration,
    ManifestEntry, Receipt, SessionRecord, SpendTotals, Tokens, Verdict, key,
};
use crate::store::{AttemptRow, CheckStage, Event, EventKind, ItemState, Phase, StoreError};

/// How long `<agent> --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// Context files an agent CLI reads from its working directory, looked up at the base commit.
const CONTEXT_FILES: &[&str] = &["CLAUDE.md", "AGENTS.md", "GEMINI.md", ".cursorrules"];

/// Why a receipt could not be written.
#[derive(Debug, thiserror::Error)]
enum ReceiptError {
    #[error(transparent)]
    Key(#[from] key::KeyError),
    #[error("sign it")]
    Sign(#[from] receipt::SignError),
    #[error("read the journal")]
    Store(#[from] StoreError),
    #[error("write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The receipt file of one attempt.
fn receipt_path(
    ws: &crate::workspace::Workspace,
    run_id: &str,
    item: &str,
    attempt: u32,
) -> PathBuf {
    ws.dir()
        .join("receipts")
        .join(run_id)
        .join(format!("{item}-a{attempt}.json"))
}

impl Engine<'_> {
    /// The receipt hook: writes the finished attempt's signed receipt unless it exists. Never
    /// fails: a receipt that cannot be written is a warning (journal and ATTENTION).
    pub(super) fn write_receipt_once(&mut self, run_id: &str, att: &AttemptRow) {
        if !att.is_finished() {
            return;
        }
        let path = receipt_path(&self.ws, run_id, &att.item, att.attempt);
        if path.exists() {
            return;
        }
        let receipts = Receipts {
            store: &self.store,
            git: &self.git,
            common_dir: &self.common_dir,
            ws: &self.ws,
            config: &self.config,
            item_checks: &self.item_checks,
            clock: self.clock.as_ref(),
        };
        let Err(err) = receipts.write(run_id, att, &path) else {
            return;
        };
        let mut error = format!("write the receipt {}: {err}", path.display());
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            error.push_str(&format!(": {s}"));
            source = s.source();
        }
        crate::notify::attention(
            &self.ws,
            self.clock.as_ref(),
            &format!("{}: {error}", att.item),
        );
        let at = self.clock.wall().to_string();
        let kind = EventKind::TeardownFailed {
            item: att.item.clone(),
            attempt: att.attempt,
            error,
        };
        if let Ok(event) = self.store.record(run_id, &at, kind) {
            (self.observe)(&event);
        }
    }
}

/// Builds and writes one attempt's receipt from the engine's parts it reads.
struct Receipts<'a> {
    store: &'a crate::store::Store,
    git: &'a crate::git::Git,
    /// The user's repository's shared git directory.
    common_dir: &'a Path,
    ws: &'a crate::workspace::Workspace,
    /// The pinned control plane.
    config: &'a crate::config::Config,
    /// Each item's check as `run_started` journaled it.
    item_checks: &'a HashMap<String, Option<String>>,
    clock: &'a dyn crate::clock::Clock,
}

impl Receipts<'_> {
    fn write(&self, run_id: &str, att: &AttemptRow, path: &Path) -> Result<(), ReceiptError> {
        let receipt = self.build(run_id, att)?;
        let signing = key::load_or_create(&key::key_path()?)?;
        key::write_public(&self.ws.dir(), &signing.verifying_key())?;
        let text = receipt::sign(&receipt, &signing)?;
        let io = |source| ReceiptError::Io {
            path: path.into(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("json.tmp");
        crate::sandbox::write_private(&tmp, text.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(io)
    }

    fn build(&self, run_id: &str, att: &AttemptRow) -> Result<Receipt, ReceiptError> {
        let events = self
            .store
            .attempt_events(run_id, &att.item, att.attempt, None)?;
        let run = self.store.run(run_id)?;
        let item = self.store.item(run_id, &att.item)?;
        // What each check ran is what its `check_started` journaled (issue 12): a receipt never
        // signs a command from the live config or the store's mutable columns. A journal from
        // before `check_started` carried it falls back to the run's journaled plan and pinned
        // control plane.
        let fallback_command = self
            .item_checks
            .get(&att.item)
            .cloned()
            .flatten()
            .or_else(|| self.config.check.command.clone())
            .unwrap_or_else(|| "false".into());
        let fallback_timeout = self.config.check.timeout.as_millis() as u64;
        let (mut command, mut timeout_ms) = (fallback_command.clone(), fallback_timeout);

        let mut iterations: BTreeMap<u32, Iteration> = BTreeMap::new();
        let mut prompt = Vec::new();
        // The trees of every commit the attempt made, and which context files its base holds:
        // one git call for all of them.
        let made: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Committed { commit, .. } | EventKind::MergePrepared { commit, .. } => {
                    Some(commit.clone())
                }
                _ => None,
            })
            .collect();
        let mut specs: Vec<String> = made.iter().map(|c| format!("{c}^{{tree}}")).collect();
        specs.extend(CONTEXT_FILES.iter().map(|f| format!("{}:{f}", att.base)));
        let found = loose_true_names(&self.common_dir.join("objects"), &made, &att.base)
            .unwrap_or_else(|| self.true_names(&specs));
        let mut trees: HashMap<String, Option<String>> = made
            .iter()
            .zip(&found)
            .filter(|(_, tree)| tree.is_some())
            .map(|(c, tree)| (c.clone(), tree.clone()))
            .collect();
        let context_present: Vec<&str> = CONTEXT_FILES
            .iter()
            .zip(found.iter().skip(made.len()))
            .filter(|(_, oid)| oid.is_some())
            .map(|(name, _)| *name)
            .collect();
        let (mut work_commit, mut merged_commit) = (None::<String>, None::<String>);
        let (mut shipped_commit, mut reason, mut parked) = (None, None, false);
        let mut session_log: Option<String> = None;
        for event in &events {
            match &event.kind {
                EventKind::SessionStarted { log, .. } => {
                    session_log = Some(log.clone());
                    for suffix in [".prompt.md", ".feedback.txt"] {
                        let file = log.replace(".agent.log", suffix);
                        if let Some(entry) = manifest_file(Path::new(&file), &self.ws.dir()) {
                            prompt.push(entry);
                        }
                    }
                }
                EventKind::SessionEnded {
                    iteration,
                    outcome,
                    exit_code,
                    duration_ms,
                    spend,
                    ..
                } => {
                    iteration_of(&mut iterations, *iteration)
                        .sessions
                        .push(SessionRecord {
                            outcome: *outcome,
                            exit_code: *exit_code,
                            duration_ms: *duration_ms,
                            tokens: spend.map(|s| Tokens {
                                input: s.input,
                                output: s.output,
                                cache_read: s.cache_read,
                                cache_write: s.cache_write,
                                weighted: s.weighted,
                                turns: s.turns,
                            }),
                            cost_usd: spend.and_then(|s| s.cost_usd),
                            confinement: session_log
                                .as_deref()
                                .and_then(|l| crate::sandbox::recorded(Path::new(l))),
                        });
                }
                EventKind::Committed { commit, .. } => work_commit = Some(commit.clone()),
                EventKind::MergePrepared { commit, .. } => merged_commit = Some(commit.clone()),
                EventKind::CheckStarted {
                    command: started,
                    timeout_ms: started_timeout,
                    ..
                } => {
                    command = started.clone().unwrap_or_else(|| fallback_command.clone());
                    timeout_ms = started_timeout.unwrap_or(fallback_timeout);
                }
                EventKind::CheckEnded {
                    iteration,
                    stage,
                    green,
                    outcome,
                    exit_code,
                    log,
                    duration_ms,
                    ..
                } => {
                    let commit = match stage {
                        CheckStage::Work => work_commit.clone(),
                        CheckStage::Merged => merged_commit.clone(),
                    };
                    let bytes = std::fs::read(log).ok();
                    let print = fingerprint::of_run(
                        *outcome,
                        *exit_code,
                        bytes.as_deref().unwrap_or_default(),
                    );
                    let tree = commit.as_deref().and_then(|c| {
                        trees
                            .entry(c.to_owned())
                            .or_insert_with(|| self.true_tree(c))
                            .clone()
                    });
                    let record = CheckRecord {
                        stage: *stage,
                        command: command.clone(),
                        timeout_ms,
                        env: check_env(run_id, &att.item, att.attempt, *iteration),
                        commit,
                        tree,
                        outcome: *outcome,
                        exit_code: *exit_code,
                        green: *green,
                        failing: print.failing,
                        format: print.format,
                        fingerprint: print.sha256,
                        log: bytes.map(|b| ManifestEntry {
                            path: relative(Path::new(log), &self.ws.dir()),
                            sha256: sha256_hex(&b),
                        }),
                        duration_ms: *duration_ms,
                        confinement: crate::sandbox::recorded(Path::new(log)),
                    };
                    iteration_of(&mut iterations, *iteration)
                        .checks
                        .push(record);
                }
                EventKind::Integrated { commit, .. } => shipped_commit = Some(commit.clone()),
                EventKind::AttemptFailed {
                    reason: why, park, ..
                } => {
                    reason = Some(why.clone());
                    parked = *park;
                }
                _ => {}
            }
        }
        let iterations: Vec<Iteration> = iterations.into_values().collect();
        let spend = spend_totals(&iterations);
        let guards = guard_verdicts(&events);
        let guards_complete =
            !guards.is_empty() && guards.iter().all(|g| g.verdict != GuardState::NotRun);
        let agent = self.agent_tuple(&events);
        let item_state = item.as_ref().map(|i| i.state.to_string());
        if item.as_ref().is_some_and(|i| i.state == ItemState::Parked) {
            parked = true;
        }
        let shipped = att.phase == Phase::Integrated;
        let missing = missing_facts(&iterations, &agent, &spend, &guards, guards_complete);
        let verdict = match (shipped, missing.is_empty(), parked) {
            (true, true, _) => Verdict::Success,
            (true, false, _) => Verdict::Unverified,
            (false, _, true) => Verdict::Parked,
            (false, _, false) => Verdict::Failed,
        };
        let halt_reason = halt_reason_of(verdict, reason.as_deref());
        let determinism = determinism(&iterations);
        let bound = determinism_bound(&determinism);
        let seeded = events.iter().find_map(|e| match &e.kind {
            EventKind::WorktreeReady { seeds, .. } if !seeds.is_empty() => Some(seeds.clone()),
            _ => None,
        });
        let mut context = self.context_manifest(&att.base, &context_present, seeded);
        context.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Receipt {
            version: receipt::RECEIPT_VERSION,
            run_id: run_id.to_owned(),
            item: att.item.clone(),
            attempt: att.attempt,
            written_at: self.clock.wall().to_string(),
            target: run.map(|r| r.target).unwrap_or_default(),
            base: att.base.clone(),
            verdict,
            success: verdict == Verdict::Success,
            missing,
            halt_reason: halt_reason.map(|h| h.as_str().to_owned()),
            reason,
            item_state,
            shipped_commit,
            agent,
            prompt,
            context,
            seeds: self
                .config
                .seed
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            iterations,
            spend,
            guards,
            guards_complete,
            determinism,
            determinism_bound: bound,
        })
    }

    /// The commit's own tree, replace objects ignored (what the commit really holds).
    fn true_tree(&self, commit: &str) -> Option<String> {
        let no_replace = std::ffi::OsStr::new("1");
        self.git
            .run_env(
                &["rev-parse", "--verify", &format!("{commit}^{{tree}}")],
                &[("GIT_NO_REPLACE_OBJECTS", no_replace)],
            )
            .ok()
            .map(|t| t.trim().to_owned())
    }

    /// Who did the work, as the attempt's `session_started` entries journaled it when each
    /// session was launched (versions that changed between sessions, a CLI that updated
    /// itself in the night, are all named, in order). A journal from before they carried it
    /// falls back to the pinned config and asking the binary now.
    fn agent_tuple(&self, events: &[Event]) -> AgentTuple {
        let journaled: Vec<&AgentTuple> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::SessionStarted {
                    agent: Some(agent), ..
                } => Some(agent),
                _ => None,
            })
            .collect();
        let Some(first) = journaled.first() else {
            return agent_tuple(&self.config.agent, self.ws.root());
        };
        let mut versions: Vec<&str> = Vec::new();
        for v in journaled.iter().filter_map(|a| a.version.as_deref()) {
            if versions.last() != Some(&v) {
                versions.push(v);
            }
        }
        AgentTuple {
            version: (!versions.is_empty()).then(|| versions.join(", then ")),
            ..(*first).clone()
        }
    }

    /// What each of `specs` (`<commit>^{tree}`, `<commit>:<path>`) names, replace objects
    /// ignored, in one `cat-file --batch-check`; `None` for one that names nothing (or when
    /// git cannot be asked: each is then asked alone by its caller, or taken as absent).
    fn true_names(&self, specs: &[String]) -> Vec<Option<String>> {
        let input: String = specs.iter().map(|s| format!("{s}\n")).collect();
        let answer = self
            .git
            .run_input(
                &["cat-file", "--batch-check=%(objectname)"],
                &[("GIT_NO_REPLACE_OBJECTS", std::ffi::OsStr::new("1"))],
                Some(input.as_bytes()),
            )
            .unwrap_or_default();
        let mut lines = answer.lines();
        specs
            .iter()
            .map(|_| {
                lines
                    .next()
                    .filter(|l| {
                        (l.len() == 40 || l.len() == 64) && l.bytes().all(|b| b.is_ascii_hexdigit())
                    })
                    .map(str::to_owned)
            })
            .collect()
    }

    /// Context files at the base commit (`present`: those the base holds, usually none; only
    /// those are read), and the seeded files as the attempt's checkout got them (`seeded`,
    /// journaled), else (an older journal) as they are in the repository now.
    fn context_manifest(
        &self,
        base: &str,
        present: &[&str],
        seeded: Option<Vec<ManifestEntry>>,
    ) -> Vec<ManifestEntry> {
        let mut entries = Vec::new();
        for name in present {
            if let Some(bytes) = blob(self.ws.root(), &format!("{base}:{name}")) {
                entries.push(ManifestEntry {
                    path: (*name).to_owned(),
                    sha256: sha256_hex(&bytes),
                });
            }
        }
        match seeded {
            Some(seeds) => entries.extend(seeds),
            None => entries.extend(seed_manifest(self.ws.root(), &self.config.seed)),
        }
        entries
    }
}

/// Who does the work under `agent`: kind, binary, what the binary says its version is now
/// (asked once per installed file, see [`agent_version`]), model and arguments. Journaled
/// with every session's start.
pub(super) fn agent_tuple(agent: &crate::config::AgentConfig, cwd: &Path) -> AgentTuple {
    let binary = launch::program(agent);
    let version = match (agent.kind, &binary) {
        (AgentKind::Command, _) | (_, None) => None,
        (_, Some(bin)) => Some(agent_version(bin, cwd)),
    };
    AgentTuple {
        kind: agent.kind.as_str().to_owned(),
        binary,
        version,
        model: agent.model.clone(),
        args: agent.args.clone(),
        argv: (agent.kind == AgentKind::Command).then(|| agent.command.clone()),
    }
}

/// The seeded files under `dir` (the repository, or an attempt's checkout), path and SHA-256;
/// a seed that is not there is left out.
pub(super) fn seed_manifest(dir: &Path, seeds: &[PathBuf]) -> Vec<ManifestEntry> {
    seeds
        .iter()
        .filter_map(|seed| {
            let bytes = std::fs::read(dir.join(seed)).ok()?;
            Some(ManifestEntry {
                path: seed.display().to_string(),
                sha256: sha256_hex(&bytes),
            })
        })
        .collect()
}

/// The facts a success needs that the receipt cannot state: the oracle (a green check), the
/// checked commit and its tree, the model and (CLI agents) the agent's version, the spend of
/// every session, and guards that were all evaluated and none failed.
fn missing_facts(
    iterations: &[Iteration],
    agent: &AgentTuple,
    spend: &SpendTotals,
    guards: &[GuardVerdict],
    guards_complete: bool,
) -> Vec<String> {
    let mut missing = Vec::new();
    let green = iterations
        .iter()
        .flat_map(|i| i.checks.iter())
        .rfind(|c| c.green);
    match green {
        None => missing.push("oracle: no green check".to_owned()),
        Some(c) if c.command.trim().is_empty() => {
            missing.push("oracle: the check command is empty".to_owned())
        }
        Some(c) if c.commit.is_none() || c.tree.is_none() => {
            missing.push("commit: the checked commit is unknown".to_owned())
        }
        Some(_) => {}
    }
    if agent.model.is_none() {
        missing.push("model: [agent] model is not set".to_owned());
    }
    if agent.kind != AgentKind::Command.as_str()
        && agent.version.as_deref().is_none_or(|v| v == "unknown")
    {
        missing.push("agent: its version is unknown".to_owned());
    }
    if spend.sessions == 0 || spend.sessions_without_spend > 0 {
        missing.push(format!(
            "spend: {} of {} sessions reported none",
            spend.sessions_without_spend, spend.sessions
        ));
    }
    if !guards_complete {
        missing.push("guards: not evaluated".to_owned());
    }
    for g in guards.iter().filter(|g| g.verdict == GuardState::Fail) {
        missing.push(format!("guards: {} failed", g.name));
    }
    // A failure its gate only logged is still a failure: not intact, so not a success.
    for g in guards.iter().filter(|g| g.verdict == GuardState::Logged) {
        missing.push(format!("guards: {} failed (logged, not enforced)", g.name));
    }
    missing
}

/// The loop-contract reason an attempt with this verdict stopped for, where one applies.
fn halt_reason_of(verdict: Verdict, reason: Option<&str>) -> Option<HaltReason> {
    match verdict {
        Verdict::Success => Some(HaltReason::SuccessConditionMet),
        Verdict::Unverified => Some(HaltReason::ObjectiveUnverified),
        Verdict::Failed | Verdict::Parked => {
            let why = reason.unwrap_or_default();
            if why.starts_with("check still red after") {
                Some(HaltReason::MaxIterationsReached)
            } else if why.contains("budget is spent") {
                Some(HaltReason::BudgetExceeded)
            } else {
                None
            }
        }
    }
}

/// Every guard's verdict on the attempt: those of its latest work check (the one whose green
/// would have counted). No guard journaled (no work check ran) → none, and the receipt says
/// `guards_complete: false`.
fn guard_verdicts(events: &[Event]) -> Vec<GuardVerdict> {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::CheckEnded {
                stage: crate::store::CheckStage::Work,
                guards,
                ..
            } if !guards.is_empty() => Some(guards),
            _ => None,
        })
        .map(|guards| {
            guards
                .iter()
                .map(|g| GuardVerdict {
                    name: g.guard.clone(),
                    verdict: match g.state {
                        crate::guard::GuardState::Pass => GuardState::Pass,
                        crate::guard::GuardState::Fail => GuardState::Fail,
                        crate::guard::GuardState::NotRun => GuardState::NotRun,
                        crate::guard::GuardState::Logged => GuardState::Logged,
                    },
                    detail: Some(g.detail.clone()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The environment nightshift gives a check, as the receipt records it.
fn check_env(run_id: &str, item: &str, attempt: u32, iteration: u32) -> BTreeMap<String, String> {
    super::attempt::check_env(run_id, item, attempt, iteration)
        .into_iter()
        .collect()
}

fn iteration_of(map: &mut BTreeMap<u32, Iteration>, n: u32) -> &mut Iteration {
    map.entry(n).or_insert_with(|| Iteration {
        iteration: n,
        sessions: Vec::new(),
        checks: Vec::new(),
    })
}

fn spend_totals(iterations: &[Iteration]) -> SpendTotals {
    let mut t = SpendTotals::default();
    for s in iterations.iter().flat_map(|i| i.sessions.iter()) {
        t.sessions += 1;
        match &s.tokens {
            Some(tok) => {
                t.input += tok.input;
                t.output += tok.output;
                t.weighted_tokens += tok.weighted;
                t.turns += tok.turns;
            }
            None => t.sessions_without_spend += 1,
        }
        if let Some(c) = s.cost_usd {
            t.cost_usd = Some(t.cost_usd.unwrap_or(0.0) + c);
        }
    }
    t
}

/// Check runs grouped by the tree they judged (by commit when the tree is unknown).
/// The achieved bound on the check's flake rate from this attempt's repeated checks of one tree
/// (exact Clopper–Pearson upper bound at 95%): `None` when no tree was checked twice, which is
/// the usual case (each iteration checks new work). `probe` reaches a useful bound on purpose.
fn determinism_bound(records: &[DeterminismRecord]) -> Option<f64> {
    let trials: u64 = records
        .iter()
        .map(|r| u64::from(r.runs.saturating_sub(1)))
        .sum();
    let disagreements: u64 = records.iter().map(|r| u64::from(r.disagreements)).sum();
    (trials > 0).then(|| {
        crate::check::stats::clopper_pearson_upper(
            disagreements,
            trials,
            crate::check::probe::DEFAULT_CONFIDENCE,
        )
    })
}

fn determinism(iterations: &[Iteration]) -> Vec<DeterminismRecord> {
    let mut groups: Vec<(String, DeterminismRecord, String)> = Vec::new();
    for c in iterations.iter().flat_map(|i| i.checks.iter()) {
        let Some(key) = c.tree.clone().or_else(|| c.commit.clone()) else {
            continue;
        };
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, record, first)) => {
                record.runs += 1;
                if c.fingerprint != *first {
                    record.disagreements += 1;
                }
                if let Some(commit) = &c.commit
                    && !record.commits.contains(commit)
                {
                    record.commits.push(commit.clone());
                }
            }
            None => groups.push((
                key.clone(),
                DeterminismRecord {
                    tree: key,
                    commits: c.commit.iter().cloned().collect(),
                    runs: 1,
                    disagreements: 0,
                },
                c.fingerprint.clone(),
            )),
        }
    }
    groups.into_iter().map(|(_, r, _)| r).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::session::hex(&Sha256::digest(bytes))
}

/// `path` relative to `.nightshift/` when inside it.
fn relative(path: &Path, dir: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

fn manifest_file(path: &Path, dir: &Path) -> Option<ManifestEntry> {
    let bytes = std::fs::read(path).ok()?;
    Some(ManifestEntry {
        path: relative(path, dir),
        sha256: sha256_hex(&bytes),
    })
}

/// The bytes of a blob (`<commit>:<path>`), or `None` when there is none.
/// Bytes, not text (the digest is of what is there), so not `Git::output`; bounded as git's
/// calls are (decision 108).
fn blob(repo: &Path, spec: &str) -> Option<Vec<u8>> {
    let mut command = std::process::Command::new("git");
    command
        .current_dir(repo)
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(["cat-file", "blob", spec]);
    let out = crate::bounded::process::Bounded::new(BLOB_TIMEOUT)
        .stdout(u64::MAX)
        .run(command)
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The deadline of one `git cat-file blob` (a hang detector, as git's calls have).
const BLOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// What [`Receipts::true_names`] answers for the trees of `made` and the context files at
/// `base`, read from loose objects alone (decision 106): commits this run made and the base an
/// attempt was just given are loose in the user's store, and a loose object's contents are
/// what it is, whatever a replace ref says. `None` when any of them is not loose (the caller
/// asks git).
fn loose_true_names(objects: &Path, made: &[String], base: &str) -> Option<Vec<Option<String>>> {
    use crate::git::object::{read_loose_commit, read_loose_tree};
    let mut found = Vec::with_capacity(made.len() + CONTEXT_FILES.len());
    for commit in made {
        found.push(Some(read_loose_commit(objects, commit)?.tree));
    }
    let entries = read_loose_tree(objects, &read_loose_commit(objects, base)?.tree)?;
    for name in CONTEXT_FILES {
        // A gitlink names a commit of another repository, which `cat-file` finds missing.
        found.push(
            entries
                .iter()
                .find(|e| e.name == name.as_bytes() && e.mode != "160000")
                .map(|e| e.id.clone()),
        );
    }
    Some(found)
}

/// The first line `<binary> --version` prints, bounded by [`VERSION_TIMEOUT`]; `unknown` when
/// it cannot say. Asked once per installed file: the answer is kept under the file `binary`
/// resolves to (through `PATH` and symlinks) with its size and modification time, so a CLI that
/// updates itself overnight (Claude Code's native installer moves its symlink to a new
/// version) is asked again, and an unchanged one costs a `stat`, not a process.
fn agent_version(binary: &str, cwd: &Path) -> String {
    type Installed = (
        String,
        Option<(PathBuf, u64, Option<std::time::SystemTime>)>,
    );
    static CACHE: OnceLock<Mutex<HashMap<Installed, String>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key: Installed = (binary.to_owned(), installed_file(binary, cwd));
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return v;
    }
    let version = ask_version(binary, cwd).unwrap_or_else(|| "unknown".into());
    if let Ok(mut c) = cache.lock() {
        c.insert(key, version.clone());
    }
    version
}

/// The file `binary` runs (a path as given, else the first executable of that name on `PATH`),
/// its symlinks resolved, with its size and modification time; `None` when none is found.
fn installed_file(
    binary: &str,
    cwd: &Path,
) -> Option<(PathBuf, u64, Option<std::time::SystemTime>)> {
    use std::os::unix::fs::PermissionsExt;
    let candidates: Vec<PathBuf> = if binary.contains('/') {
        vec![cwd.join(binary)]
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(binary))
            .collect()
    };
    candidates.into_iter().find_map(|path| {
        let real = std::fs::canonicalize(&path).ok()?;
        let meta = std::fs::metadata(&real).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            .then(|| (real, meta.len(), meta.modified().ok()))
    })
}

fn ask_version(binary: &str, cwd: &Path) -> Option<String> {
    let mut cmd = std::process::Command::new(binary);
    cmd.arg("--version").current_dir(cwd);
    let done = crate::bounded::process::Bounded::new(VERSION_TIMEOUT)
        .stdout(64 * 1024)
        .run(cmd)
        .ok()?;
    if !done.status.success() {
        return None;
    }
    String::from_utf8_lossy(&done.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Outcome;

    fn green_check() -> CheckRecord {
        CheckRecord {
            stage: CheckStage::Work,
            command: "make test".into(),
            timeout_ms: 1000,
            env: BTreeMap::new(),
            commit: Some("c".repeat(40)),
            tree: Some("t".repeat(40)),
            outcome: Outcome::Completed,
            exit_code: Some(0),
            green: true,
            failing: None,
            format: None,
            fingerprint: "f".repeat(64),
            log: None,
            duration_ms: 1,
            confinement: None,
        }
    }

    fn facts() -> (Vec<Iteration>, AgentTuple, SpendTotals, Vec<GuardVerdict>) {
        let iterations = vec![Iteration {
            iteration: 1,
            sessions: vec![],
            checks: vec![green_check()],
        }];
        let agent = AgentTuple {
            kind: "claude".into(),
            binary: Some("claude".into()),
            version: Some("2.0.1 (Claude Code)".into()),
            model: Some("opus".into()),
            args: vec![],
            argv: None,
        };
        let spend = SpendTotals {
            sessions: 1,
            input: 10,
            ..SpendTotals::default()
        };
        let guards = vec![GuardVerdict {
            name: "metric_integrity".into(),
            verdict: GuardState::Pass,
            detail: None,
        }];
        (iterations, agent, spend, guards)
    }

    #[test]
    fn every_fact_named_leaves_nothing_missing() {
        let (i, a, s, g) = facts();
        assert_eq!(missing_facts(&i, &a, &s, &g, true), Vec::<String>::new());
    }

    #[test]
    fn each_missing_fact_is_named() {
        let (i, a, s, g) = facts();
        let mut no_model = a.clone();
        no_model.model = None;
        let mut unknown = a.clone();
        unknown.version = Some("unknown".into());
        let mut unspent = s.clone();
        unspent.sessions_without_spend = 1;
        let mut failed = g.clone();
        failed[0].verdict = GuardState::Fail;
        let mut red = i.clone();
        red[0].checks[0].green = false;
        let mut no_commit = i.clone();
        no_commit[0].checks[0].commit = None;
        let cases = [
            (missing_facts(&i, &no_model, &s, &g, true), "model"),
            (missing_facts(&i, &unknown, &s, &g, true), "agent"),
            (missing_facts(&i, &a, &unspent, &g, true), "spend"),
            (
                missing_facts(&i, &a, &s, &[], false),
                "guards: not evaluated",
            ),
            (
                missing_facts(&i, &a, &s, &failed, true),
                "guards: metric_integrity failed",
            ),
            (missing_facts(&red, &a, &s, &g, true), "oracle"),
            (missing_facts(&no_commit, &a, &s, &g, true), "commit"),
        ];
        for (missing, expected) in cases {
            assert_eq!(missing.len(), 1, "{expected}: {missing:?}");
            assert!(missing[0].starts_with(expected), "{expected}: {missing:?}");
        }
    }

    #[test]
    fn halt_reasons_follow_the_verdict() {
        assert_eq!(
            halt_reason_of(Verdict::Success, None),
            Some(HaltReason::SuccessConditionMet)
        );
        assert_eq!(
            halt_reason_of(Verdict::Unverified, None),
            Some(HaltReason::ObjectiveUnverified)
        );
        assert_eq!(
            halt_reason_of(Verdict::Parked, Some("check still red after 2 iterations")),
            Some(HaltReason::MaxIterationsReached)
        );
        assert_eq!(
            halt_reason_of(Verdict::Failed, Some("the run's budget is spent")),
            Some(HaltReason::BudgetExceeded)
        );
        assert_eq!(
            halt_reason_of(Verdict::Failed, Some("the agent made no changes")),
            None
        );
    }

    #[test]
    fn determinism_counts_runs_per_tree_and_disagreements_with_the_first() {
        let first = green_check();
        let mut flaky = green_check();
        flaky.green = false;
        flaky.fingerprint = "0".repeat(64);
        let mut other_commit_same_tree = green_check();
        other_commit_same_tree.commit = Some("d".repeat(40));
        let iterations = vec![Iteration {
            iteration: 1,
            sessions: vec![],
            checks: vec![first, flaky, other_commit_same_tree],
        }];
        let d = determinism(&iterations);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].runs, 3);
        assert_eq!(d[0].disagreements, 1);
        assert_eq!(d[0].commits.len(), 2);
    }
}
