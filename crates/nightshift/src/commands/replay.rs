//! `nightshift replay RECEIPT [--key PUB]`: does a receipt's verdict still hold?
//!
//! Agent-free and budget-free: verify the signature, check out the recorded commit in a
//! temporary detached worktree (removed afterwards, whatever happens), make sure its tree is the
//! recorded tree (a `git replace` or a rewritten object shows here), run the recorded check with
//! the recorded environment and timeout, and compare the output fingerprint with the receipt's
//! final green check. `MATCH` exits 0; anything else exits 13, `objective_unverified`.

use std::path::PathBuf;
use std::time::Duration;

use nightshift_core::check::{self, fingerprint};
use nightshift_core::git::{Git, Scratch};
use nightshift_core::halt::{ExitClass, HaltReason};
use nightshift_core::receipt::{self, CheckRecord, Receipt, VerifyError, key};
use nightshift_core::workspace::Workspace;

use crate::CommandResult;
use crate::cli::ReplayArgs;
use crate::error::{CommandError, chain};
use crate::json::{REPLAY_VERSION, Replay};

pub fn run(args: &ReplayArgs) -> CommandResult {
    let text = nightshift_core::bounded::read_to_string(
        &args.receipt,
        nightshift_core::bounded::RECEIPT_BYTES,
    )
    .map_err(|e| {
        CommandError::new(
            ExitClass::Invariant,
            format!("read the receipt {}: {e}", args.receipt.display()),
        )
        .hint("pass a file under .nightshift/receipts/<run>/")
    })?;
    // Only a file that is a receipt at all gets as far as its signature.
    let looks_like_receipt = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|v| {
            v.get("format").and_then(|f| f.as_str()) == Some(receipt::ENVELOPE_FORMAT)
        });
    if !looks_like_receipt {
        return Err(CommandError::new(
            ExitClass::Invariant,
            format!(
                "read the receipt {}: it is not a nightshift receipt (JSON with \"format\": \"{}\")",
                args.receipt.display(),
                receipt::ENVELOPE_FORMAT
            ),
        ));
    }
    let ws = super::workspace(&args.repo)?;
    let key_path = args
        .key
        .clone()
        .unwrap_or_else(|| ws.dir().join(key::PUBLIC_FILE));
    let public = key::read_public(&key_path).map_err(|e| {
        CommandError::new(ExitClass::Invariant, chain(&e))
            .hint("pass the public key with --key FILE (a line `ed25519 <hex>`)")
    })?;
    let mut report = Replay {
        version: REPLAY_VERSION,
        receipt: args.receipt.display().to_string(),
        key_id: key::key_id(&public),
        signature: "valid".into(),
        run_id: None,
        item: None,
        attempt: None,
        verdict: None,
        command: None,
        commit: None,
        checked_out: None,
        tree_recorded: None,
        tree_observed: None,
        fingerprint_recorded: None,
        fingerprint_observed: None,
        log: None,
        result: "match".into(),
        halt_reason: None,
        detail: None,
    };
    let receipt = match receipt::verify(&text, &public) {
        Ok(r) => r,
        Err(err @ VerifyError::Content { .. }) | Err(err @ VerifyError::Malformed(_)) => {
            return Err(CommandError::new(ExitClass::Invariant, chain(&err)));
        }
        Err(err) => {
            report.signature = match err {
                VerifyError::WrongKey { .. } => "wrong_key".into(),
                _ => "invalid".into(),
            };
            return unverified(args, report, "bad_signature", chain(&err));
        }
    };
    report.run_id = Some(receipt.run_id.clone());
    report.item = Some(receipt.item.clone());
    report.attempt = Some(receipt.attempt);
    report.verdict = Some(receipt.verdict.as_str().to_owned());
    let Some(check) = receipt.final_green_check().cloned() else {
        return unverified(
            args,
            report,
            "no_green_check",
            format!(
                "the receipt records no green check to reproduce (verdict {})",
                receipt.verdict.as_str()
            ),
        );
    };
    report.command = Some(check.command.clone());
    report.commit = check.commit.clone();
    report.tree_recorded = check.tree.clone();
    report.fingerprint_recorded = Some(check.fingerprint.clone());
    let (Some(commit), Some(tree)) = (check.commit.clone(), check.tree.clone()) else {
        return unverified(
            args,
            report,
            "commit_unknown",
            "the receipt does not name the checked commit and its tree".into(),
        );
    };
    let git = Git::new(ws.root());
    // The checked commit may be gone (a shipped attempt's own commit once `clean` dropped its
    // preserve ref); the shipped commit stands in only if it holds the very same tree, which
    // the tree comparison below enforces.
    let present = |c: &String| git.resolve(c).ok().flatten().is_some();
    let Some(checkout) = std::iter::once(&commit)
        .chain(receipt.shipped_commit.as_ref())
        .find(|c| present(c))
        .cloned()
    else {
        return unverified(
            args,
            report,
            "commit_missing",
            format!("the recorded commit {commit} is not in this repository"),
        );
    };
    if checkout != commit {
        report.checked_out = Some(checkout.clone());
    }
    let outcome = replay_check(&ws, &git, &receipt, &check, &checkout)?;
    report.tree_observed = Some(outcome.tree.clone());
    if outcome.tree != tree {
        return unverified(
            args,
            report,
            "tree_mismatch",
            format!(
                "commit {} checks out tree {}, but the receipt recorded tree {} (a replaced or rewritten object)",
                short(&commit),
                short(&outcome.tree),
                short(&tree)
            ),
        );
    }
    let Some(observed) = outcome.fingerprint else {
        return Err(CommandError::new(
            ExitClass::Internal,
            "replay the check: it was not run".to_owned(),
        ));
    };
    report.log = outcome.log.map(|p| p.display().to_string());
    report.fingerprint_observed = Some(observed.sha256.clone());
    if observed.sha256 != check.fingerprint {
        let failing = observed
            .failing
            .as_ref()
            .map(|f| format!("; failing now: {}", f.join(", ")))
            .unwrap_or_default();
        let detail = format!(
            "the check's verdict differs: recorded exit {}, observed {}{failing}",
            check
                .exit_code
                .map_or_else(|| "none".to_owned(), |c| c.to_string()),
            observed.status,
        );
        return unverified(args, report, "mismatch", detail);
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print_lines(&report);
        outln!("MATCH");
    }
    Ok(0)
}

/// What the replayed check showed.
struct Observed {
    tree: String,
    /// `None` when the tree did not match and the check was not run.
    fingerprint: Option<fingerprint::Fingerprint>,
    log: Option<PathBuf>,
}

/// Checks out `commit` in a temporary worktree, compares trees, and runs the check if they match.
fn replay_check(
    ws: &Workspace,
    git: &Git,
    receipt: &Receipt,
    check: &CheckRecord,
    commit: &str,
) -> Result<Observed, CommandError> {
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let name = format!("replay-{stamp}-{}", std::process::id());
    // Ctrl-C or SIGTERM ends the check (its process group, verified) and comes back here, so
    // the temporary worktree is still removed.
    nightshift_core::stop::install();
    let tree = Scratch::add(git, &ws.worktrees(), &name, commit).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("check out {} for the replay: {}", short(commit), chain(&e)),
        )
    })?;
    let path = tree.tree().to_owned();
    let observed_tree = tree
        .git()
        .run(&["rev-parse", "HEAD^{tree}"])
        .map(|t| t.trim().to_owned())
        .map_err(|e| CommandError::new(ExitClass::Internal, chain(&e)))?;
    if Some(&observed_tree) != check.tree.as_ref() {
        return Ok(Observed {
            tree: observed_tree,
            fingerprint: None,
            log: None,
        });
    }
    // The gitignored files the attempt's worktree was seeded with, from the repository root.
    let seeds: Vec<PathBuf> = receipt
        .seeds
        .iter()
        .map(PathBuf::from)
        .filter(|p| ws.root().join(p).exists())
        .collect();
    tree.seed(ws.root(), &seeds).map_err(|why| {
        CommandError::new(
            ExitClass::Workspace,
            format!("seed the replay worktree: {why}"),
        )
    })?;
    let logs = ws.dir().join("logs").join("replay");
    std::fs::create_dir_all(&logs).map_err(|e| {
        CommandError::new(
            ExitClass::Workspace,
            format!("create {}: {e}", logs.display()),
        )
    })?;
    let log = logs.join(format!(
        "{name}-{}-a{}.check.log",
        receipt.item, receipt.attempt
    ));
    let env: Vec<(String, String)> = check
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let run = check::run(
        &check.command,
        path.clone(),
        env,
        Duration::from_millis(check.timeout_ms.max(1)),
        log.clone(),
    )
    .map_err(|e| {
        CommandError::new(
            ExitClass::Execution,
            format!("run the check: {}", chain(&e)),
        )
    })?;
    if run.end.outcome == nightshift_core::session::Outcome::Stopped {
        return Err(CommandError::new(
            ExitClass::Integrity,
            format!(
                "replay the receipt: {}: interrupted before the check finished",
                HaltReason::ObjectiveUnverified.as_str()
            ),
        ));
    }
    let bytes = std::fs::read(&log).unwrap_or_default();
    let print = fingerprint::of_run(run.end.outcome, run.end.exit_code, &bytes);
    drop(tree);
    Ok(Observed {
        tree: observed_tree,
        fingerprint: Some(print),
        log: Some(log),
    })
}

/// Reports a verdict that does not hold: the lines (or JSON), then exit 13.
fn unverified(
    args: &ReplayArgs,
    mut report: Replay,
    result: &str,
    detail: String,
) -> CommandResult {
    report.result = result.into();
    report.halt_reason = Some(HaltReason::ObjectiveUnverified.as_str().into());
    report.detail = Some(detail.clone());
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
        return Ok(HaltReason::ObjectiveUnverified.class().code());
    }
    print_lines(&report);
    Err(CommandError::new(
        ExitClass::Integrity,
        format!(
            "replay the receipt: {}: {detail}",
            HaltReason::ObjectiveUnverified.as_str()
        ),
    ))
}

fn print_lines(r: &Replay) {
    outln!(
        "receipt:      {}  (signature {}, key {})",
        r.receipt,
        r.signature,
        r.key_id
    );
    if let (Some(item), Some(attempt), Some(verdict)) = (&r.item, r.attempt, &r.verdict) {
        outln!(
            "recorded:     {item} attempt {attempt}, run {}, verdict {verdict}",
            r.run_id.as_deref().unwrap_or("?")
        );
    }
    if let (Some(command), Some(commit)) = (&r.command, &r.commit) {
        let tree = match (&r.tree_recorded, &r.tree_observed) {
            (Some(a), Some(b)) if a == b => "tree ok".to_owned(),
            (Some(a), Some(b)) => format!("tree {} != recorded {}", short(b), short(a)),
            _ => "tree not compared".to_owned(),
        };
        let via = r
            .checked_out
            .as_deref()
            .map(|c| format!(", via shipped commit {}", short(c)))
            .unwrap_or_default();
        outln!(
            "check:        {command}  @ {}  ({tree}{via})",
            short(commit)
        );
    }
    if let Some(recorded) = &r.fingerprint_recorded {
        let observed = r.fingerprint_observed.as_deref().unwrap_or("-");
        outln!(
            "fingerprint:  recorded {}  observed {}",
            short(recorded),
            short(observed)
        );
    }
    if let Some(log) = &r.log {
        outln!("log:          {log}");
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}
