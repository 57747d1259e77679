//! Human rendering: progress lines while a run works, the status table, the morning summary.

use std::fmt::Write as _;

use nightshift_core::store::{
    CheckStage, DebtRow, Event, EventKind, ItemRow, ItemState, Outcome, RunRow,
};

/// Progress lines of a live run: [`event_line`], except that a pause re-armed for the same
/// reason (a wait retried every few seconds) is said once, until something else happens.
#[derive(Debug, Default)]
pub struct Progress {
    said_pause: Option<String>,
}

impl Progress {
    pub fn line(&mut self, event: &Event) -> Option<String> {
        match &event.kind {
            EventKind::RunPaused { reason, .. } => {
                if self.said_pause.as_deref() == Some(reason.as_str()) {
                    return None;
                }
                self.said_pause = Some(reason.clone());
            }
            EventKind::RunUnpaused => return None,
            _ => self.said_pause = None,
        }
        event_line(event)
    }
}

/// A one-line description of a journal event, or `None` for bookkeeping not worth a line.
pub fn event_line(event: &Event) -> Option<String> {
    let line = match &event.kind {
        EventKind::RunStarted {
            target,
            base,
            items,
            ..
        } => format!(
            "run {} started: {} item{} onto {target} at {}",
            event.run_id,
            items.len(),
            plural(items.len()),
            short(base)
        ),
        EventKind::RunResumed { .. } => format!("run {} resumed", event.run_id),
        EventKind::PassStarted { pass, requeued } => {
            format!("pass {pass}: one more attempt for {}", requeued.join(", "))
        }
        EventKind::AttemptStarted {
            item,
            attempt,
            base,
            ..
        } => {
            format!("{item}: attempt {attempt} from {}", short(base))
        }
        EventKind::SessionEnded {
            item,
            iteration,
            outcome,
            exit_code,
            duration_ms,
            fault,
            ..
        } => format!(
            "{item}:   iteration {iteration}: agent {} ({}){}",
            outcome_text(*outcome, *exit_code),
            ms(*duration_ms),
            match (outcome, fault) {
                (Outcome::PermissionDenied, Some(what)) => format!(": {what}"),
                _ => String::new(),
            }
        ),
        EventKind::CheckEnded {
            item,
            stage,
            green,
            exit_code,
            duration_ms,
            results,
            guards,
            untrusted,
            outcome,
            ..
        } => {
            let failed: Vec<String> = guards
                .iter()
                .filter(|g| g.state == nightshift_core::guard::GuardState::Fail)
                .map(|g| format!("guard {} failed", g.guard))
                .collect();
            format!(
                "{item}:   {} {} ({}{}{}){}{}",
                match stage {
                    CheckStage::Work => "check",
                    CheckStage::Merged => "check on merged target",
                },
                if *green {
                    "green"
                } else if *outcome == Outcome::Timeout {
                    "timed out ([check] timeout)"
                } else {
                    "red"
                },
                exit_code.map(|c| format!("exit {c}, ")).unwrap_or_default(),
                results
                    .as_ref()
                    .map(|r| format!("{} of {} tests failing, ", r.failing.len(), r.tests))
                    .unwrap_or_default(),
                ms(*duration_ms),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", failed.join(", "))
                },
                untrusted
                    .as_ref()
                    .map(|u| format!(" — untrusted: {u}"))
                    .unwrap_or_default()
            )
        }
        EventKind::Integrated { item, commit, .. } => format!("{item}: shipped {}", short(commit)),
        EventKind::AttemptFailed {
            item,
            attempt,
            reason,
            preserve_ref,
            ..
        } => format!(
            "{item}: attempt {attempt} failed: {reason}{}",
            preserve_ref
                .as_ref()
                .map(|r| format!(" (work kept at {r})"))
                .unwrap_or_default()
        ),
        EventKind::TeardownFailed {
            item,
            attempt,
            error,
        } => {
            format!("{item}: warning: housekeeping of attempt {attempt}: {error}")
        }
        EventKind::ItemParked { item, reason } => format!("{item}: parked: {reason}"),
        EventKind::ItemEscalated { item, reason } => {
            format!("{item}: escalated, a person decides (`nightshift accept {item}`): {reason}")
        }
        EventKind::ItemAwaitingOperator { item, reason, .. } => {
            format!("{item}: awaiting an operator: {reason}")
        }
        EventKind::DeadlineSet { until, given } => format!(
            "no new work after {given} ({})",
            jiff::Timestamp::from_second(*until)
                .map(|t| t.to_string())
                .unwrap_or_default()
        ),
        EventKind::RunPaused { reason, .. }
            if nightshift_core::store::PauseCause::of(reason)
                == nightshift_core::store::PauseCause::Operator =>
        {
            "paused by the operator: the step in flight is done; `nightshift resume` goes on"
                .to_owned()
        }
        EventKind::RunPaused { reason, until } => format!(
            "paused: {reason} (tried again at {})",
            jiff::Timestamp::from_second(*until)
                .map(|t| t.to_string())
                .unwrap_or_default()
        ),
        EventKind::RunStopped {
            halt_reason: Some(halt),
            ..
        } => format!(
            "run {} stopped: {halt} (exit {}); the work in flight is preserved, `nightshift run` resumes",
            event.run_id,
            halt.class().code()
        ),
        EventKind::GateWarned {
            gate,
            class,
            detail,
        } => format!("warning: {class} gate `{gate}` (log mode): {detail}"),
        EventKind::ReviewEnded {
            item,
            cycle,
            reviewer,
            outcome,
            verdict,
            error,
            ..
        } => match verdict {
            Some(v) => format!(
                "{item}:   {} {cycle}: {} ({} finding{})",
                reviewer.replace('_', " "),
                v.verdict.as_str(),
                v.findings.len(),
                plural(v.findings.len())
            ),
            None => format!(
                "{item}:   {} {cycle}: no verdict ({}): {}",
                reviewer.replace('_', " "),
                outcome_text(*outcome, None),
                error.as_deref().unwrap_or("")
            ),
        },
        EventKind::ReviewDecided {
            item,
            action,
            class,
            why,
            ..
        } => format!(
            "{item}:   review → {action}{}: {why}",
            class
                .as_ref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ),
        EventKind::DebtSettled {
            item, outcome, why, ..
        } => format!("{item}: review debt {outcome}: {why}"),
        EventKind::Accepted {
            item,
            commit,
            confirmed,
            ..
        } => format!(
            "{item}: shipped {} ({})",
            short(commit),
            if *confirmed { "confirmed" } else { "accepted" }
        ),
        EventKind::RunFinished {
            halt_reason,
            exit_code,
        } => {
            format!(
                "run {} halted: {halt_reason} (exit {exit_code})",
                event.run_id
            )
        }
        _ => return None,
    };
    Some(line)
}

/// The status table. `state`: what is true of the run now (its liveness — `paused`,
/// `restarting`, … — over the run table's `running`), in the supervisor's words.
pub fn status(run: &RunRow, state: &str, items: &[ItemRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "run {}  {}{}  target {}  started {}",
        run.id,
        state,
        run.halt_reason
            .as_ref()
            .map(|h| format!(" ({h}, exit {})", run.exit_code.unwrap_or_default()))
            .unwrap_or_default(),
        run.target,
        run.started_at
    );
    if state == nightshift_core::store::RunState::Running.as_str()
        && let Some(reason) = &run.pause_reason
    {
        let until = run
            .paused_until
            .filter(|u| *u != nightshift_core::control::UNTIL_RESUMED)
            .and_then(|u| jiff::Timestamp::from_second(u).ok())
            .map_or_else(|| "until resumed".to_owned(), |t| format!("until {t}"));
        let _ = writeln!(out, "paused ({reason}) {until}");
    }
    let width = items.iter().map(|i| i.id.len()).max().unwrap_or(4).max(4);
    for i in items {
        let detail = match i.state {
            ItemState::Shipped => i
                .shipped_commit
                .as_deref()
                .map(|c| short(c).to_owned())
                .or_else(|| i.reason.clone())
                .unwrap_or_default(),
            _ => i.reason.clone().unwrap_or_default(),
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {:<8}  {} attempt{}  {detail}",
            i.id,
            i.state,
            i.attempts,
            plural(i.attempts as usize)
        );
    }
    out
}

/// Open review debts, one line each (empty when there are none).
pub fn debts(debts: &[DebtRow]) -> String {
    let mut out = String::new();
    let open: Vec<_> = debts.iter().filter(|d| d.is_open()).collect();
    if !open.is_empty() {
        let _ = writeln!(
            out,
            "review debt ({}): the next run reviews it before new work",
            open.len()
        );
        for d in open {
            let _ = writeln!(
                out,
                "  {} attempt {}  {}  {}",
                d.item,
                d.attempt,
                short(&d.commit),
                d.reason
            );
        }
    }
    out
}

/// The morning summary: what shipped, what is parked and where its work is.
pub fn summary(run: &RunRow, items: &[ItemRow]) -> String {
    let shipped: Vec<_> = items
        .iter()
        .filter(|i| i.state == ItemState::Shipped)
        .collect();
    let parked: Vec<_> = items
        .iter()
        .filter(|i| i.state == ItemState::Parked)
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} of {} item{} shipped onto {}; {} parked.",
        shipped.len(),
        items.len(),
        plural(items.len()),
        run.target,
        parked.len()
    );
    for i in &shipped {
        let _ = writeln!(
            out,
            "  shipped  {}  {}",
            i.id,
            i.shipped_commit
                .as_deref()
                .map(short)
                .unwrap_or("(earlier run)")
        );
    }
    for i in &parked {
        let _ = writeln!(
            out,
            "  parked   {}  after {} attempt{}: {}",
            i.id,
            i.attempts,
            plural(i.attempts as usize),
            i.reason.as_deref().unwrap_or("?")
        );
        if let Some(r) = &i.preserve_ref {
            let _ = writeln!(
                out,
                "           work kept at {r}  (get it back: nightshift restore {})",
                i.id
            );
        }
    }
    if let Some(h) = &run.halt_reason {
        let _ = writeln!(
            out,
            "halt: {h} (exit {})",
            run.exit_code.unwrap_or_default()
        );
    }
    out
}

fn outcome_text(outcome: Outcome, exit_code: Option<i32>) -> String {
    match (outcome, exit_code) {
        (Outcome::Completed, _) => "completed".into(),
        (Outcome::Failed, Some(c)) => format!("failed, exit {c}"),
        (Outcome::Failed, None) => "failed (signal)".into(),
        (Outcome::Timeout, _) => "timed out".into(),
        (Outcome::SpawnFailed, _) => "could not start".into(),
        (Outcome::Stalled, _) => "stalled (silent past the grace)".into(),
        (Outcome::OverBudget, _) => "ended over budget".into(),
        (Outcome::Crashed, _) => "crashed".into(),
        (Outcome::RateLimited, _) => "hit its usage limit".into(),
        (Outcome::EnvFault, _) => "hit an API or network fault".into(),
        (Outcome::Stopped, _) => "stopped by the operator".into(),
        (Outcome::PermissionDenied, _) => {
            "was denied permission (see docs/agents.md: permission_mode, allowed_tools)".into()
        }
    }
}

pub fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightshift_core::store::CheckStage;

    fn check_ended(outcome: Outcome, green: bool) -> Event {
        Event {
            seq: 1,
            run_id: "r".into(),
            at: "2026-12-01T00:00:00Z".into(),
            kind: EventKind::CheckEnded {
                item: "a".into(),
                attempt: 1,
                iteration: 1,
                stage: CheckStage::Work,
                green,
                outcome,
                exit_code: None,
                output_sha256: String::new(),
                log: String::new(),
                duration_ms: 600_000,
                results: None,
                guards: Vec::new(),
                untrusted: None,
            },
        }
    }

    #[test]
    fn a_timed_out_check_says_so_instead_of_red() {
        let line = event_line(&check_ended(Outcome::Timeout, false)).unwrap_or_default();
        assert!(line.contains("check timed out ([check] timeout)"), "{line}");
        assert!(!line.contains("red"), "{line}");
        let line = event_line(&check_ended(Outcome::Failed, false)).unwrap_or_default();
        assert!(line.contains("check red"), "{line}");
    }
}
