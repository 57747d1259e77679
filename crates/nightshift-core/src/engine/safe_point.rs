//! What the scheduler looks at between steps, none of which journals: the `--until` deadline,
//! the end of a recorded pause, an operator's pause request, the gates file, the live
//! `nightshift.toml` and the store's integrity. Each returns what is to be journaled, if
//! anything; the engine journals it.

use std::path::Path;

use super::{EngineError, error_chain};
use crate::clock::Clock;
use crate::halt::HaltReason;
use crate::store::{EventKind, PauseCause, RunRow, Store, StoreError};
use crate::workspace::Workspace;

/// The `--until` deadline (epoch seconds): no new session or attempt after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Deadline(Option<i64>);

impl Deadline {
    /// A deadline at `until` (epoch seconds).
    pub(super) fn at(until: i64) -> Deadline {
        Deadline(Some(until))
    }

    /// The deadline run `run_id` journaled and no deadline stop has consumed yet.
    pub(super) fn journaled(store: &Store, run_id: &str) -> Result<Deadline, EngineError> {
        let mut deadline = None;
        for event in store.run_events(run_id, &["deadline_set", "run_stopped"])? {
            match event.kind {
                EventKind::DeadlineSet { until, .. } => deadline = Some(until),
                EventKind::RunStopped {
                    halt_reason: Some(HaltReason::DeadlineReached),
                    ..
                } => deadline = None,
                _ => {}
            }
        }
        Ok(Deadline(deadline))
    }

    /// Whether it has passed (never, when there is none).
    pub(super) fn passed(self, clock: &dyn Clock) -> bool {
        self.0.is_some_and(|d| clock.wall().as_second() >= d)
    }
}

/// Waits until the pause `run` recorded (a usage limit's reset, an environment back-off, an
/// operator pause) is over. The pause is in the journal, so a crash during it resumes the wait,
/// not the work. A stop asked for meanwhile ends the wait (the pause stays recorded); so does
/// `deadline`, when given, once it passes (the scheduler then stops `deadline_reached`).
/// Returns whether the pause is over: the engine then journals `run_unpaused`.
pub(super) fn wait_pause(
    ws: &Workspace,
    clock: &dyn Clock,
    run: &RunRow,
    deadline: Option<Deadline>,
) -> bool {
    let Some(until) = run.paused_until else {
        return false;
    };
    let operator = run.pause_cause() == Some(PauseCause::Operator);
    loop {
        // A stop, or the `--until` deadline, ends the wait; the pause stays recorded.
        if crate::stop::requested().is_some() || deadline.is_some_and(|d| d.passed(clock)) {
            return false;
        }
        if operator {
            if !crate::control::pause_requested(ws) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
            continue;
        }
        let now = clock.wall().as_second();
        if now >= until {
            return true;
        }
        let left = u64::try_from(until - now).unwrap_or(1);
        std::thread::sleep(std::time::Duration::from_secs(left.min(1)));
    }
}

/// At a safe point: an operator pause asked for (`nightshift pause`) and not yet journaled in
/// `run` is the `run_paused` (reason `operator`, lasting until `nightshift resume`) to journal.
pub(super) fn operator_pause(ws: &Workspace, run: &RunRow) -> Option<EventKind> {
    if !crate::control::pause_requested(ws) || run.pause_cause() == Some(PauseCause::Operator) {
        return None;
    }
    Some(EventKind::RunPaused {
        reason: crate::control::OPERATOR_PAUSE.into(),
        until: crate::control::UNTIL_RESUMED,
    })
}

/// At a safe point: re-reads the gates file (relative to `root`) if it changed. A bad file
/// keeps the modes in force; what is wrong with it is returned, for the engine to journal as
/// a warning (`gate_warned`, gate `gates_file`).
pub(super) fn reload_gates(gates: &mut crate::gate::Gates, root: &Path) -> Option<String> {
    match gates.reload_if_changed(root) {
        None => None,
        // A change of modes is not a warning; the modes in force are in `status`-adjacent
        // docs and the file itself.
        Some(Ok(_)) => None,
        Some(Err(error)) => Some(format!("ignored (modes unchanged): {error}")),
    }
}

/// The pinned `nightshift.toml` and the live file's digest last reported as differing from it.
#[derive(Debug, Default)]
pub(super) struct ConfigWatch {
    /// SHA-256 of the pinned `nightshift.toml` (empty: nothing pinned, as in `loop`).
    pub(super) pinned_sha256: String,
    /// The live file's digest last reported as differing, so a change is reported once.
    reported_live: Option<String>,
}

impl ConfigWatch {
    /// Compares the live `nightshift.toml` in `ws` with the pinned copy (at a resume and at each
    /// item's start): a difference is alerted once per live version and returned as the
    /// `control_plane_changed` to journal; the pinned copy stays in force.
    pub(super) fn changed(
        &mut self,
        ws: &Workspace,
        store: &Store,
        clock: &dyn Clock,
        notify: &crate::config::NotifyConfig,
        run_id: &str,
    ) -> Result<Option<EventKind>, EngineError> {
        if self.pinned_sha256.is_empty() {
            return Ok(None); // nothing pinned (`loop`)
        }
        let path = ws.root().join(crate::config::FILE_NAME);
        let live = crate::config::read_source(&path);
        let (live_sha, text) = match &live {
            Ok(text) => (crate::control_plane::sha256_hex(text), Some(text.as_str())),
            Err(e) => (format!("unreadable: {}", error_chain(e)), None),
        };
        if live_sha == self.pinned_sha256 || self.reported_live.as_deref() == Some(&live_sha) {
            return Ok(None);
        }
        self.reported_live = Some(live_sha.clone());
        let pinned_source = store
            .run_events(run_id, &["control_plane_pinned"])?
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::ControlPlanePinned { source, .. } => Some(source),
                _ => None,
            })
            .next_back()
            .unwrap_or_default();
        let detail = match text {
            Some(text) => crate::control_plane::differences(&pinned_source, text),
            None => "the live file cannot be read".into(),
        };
        let line = format!(
            "control_plane_changed: {} differs from the copy this run pinned ({detail}); the run goes on with the pinned copy; the change applies to the next run, or now with `nightshift run --reload-config`",
            crate::config::FILE_NAME
        );
        let mut alert = crate::notify::Alert::new(crate::notify::AlertKind::Integrity, line);
        alert.run_id = Some(run_id.to_owned());
        crate::notify::raise(ws, clock, notify, &alert);
        Ok(Some(EventKind::ControlPlaneChanged {
            pinned: self.pinned_sha256.clone(),
            live: live_sha,
            detail,
        }))
    }
}

/// Checks the store after a session (and at start): a journal whose chain does not hold stops
/// the engine (`store_tampered`, exit 13); state tables that are not the journal's fold are
/// rebuilt from it (the open `run`'s row read again) and alerted, and the run goes on. Returns
/// the `store_repaired` to journal when it rebuilt them with a run open.
pub(super) fn verify_store(
    store: &mut Store,
    run: &mut Option<RunRow>,
    ws: &Workspace,
    clock: &dyn Clock,
    notify: &crate::config::NotifyConfig,
) -> Result<Option<EventKind>, EngineError> {
    // Only another connection can break the chain or edit the state (this engine's own
    // writes are the journal and its fold): nothing committed since the last look, nothing
    // to verify (issue 14: reading and refolding the whole journal after every session made
    // a night quadratic). Looked at before the verification reads, so a commit racing it is
    // seen at the next look.
    if !store.written_by_others()? {
        return Ok(None);
    }
    if let crate::store::chain::Verdict::Broken(tamper) = store.verify_chain()? {
        let mut alert = crate::notify::Alert::new(
            crate::notify::AlertKind::Integrity,
            format!("store_tampered: {tamper}; the run does not go on"),
        );
        alert.run_id = run.as_ref().map(|r| r.id.clone());
        crate::notify::raise(ws, clock, notify, &alert);
        return Err(StoreError::Tampered(tamper).into());
    }
    let Some(detail) = store.state_drift()? else {
        return Ok(None);
    };
    store.rebuild_state()?;
    if let Some(open) = run.as_ref() {
        let run_id = open.id.clone();
        *run = store.run(&run_id)?;
    }
    let mut alert = crate::notify::Alert::new(
        crate::notify::AlertKind::Integrity,
        format!(
            "store_repaired: the state database was edited outside nightshift ({detail}); rebuilt from the journal, the run goes on"
        ),
    );
    alert.run_id = run.as_ref().map(|r| r.id.clone());
    crate::notify::raise(ws, clock, notify, &alert);
    Ok(run.is_some().then_some(EventKind::StoreRepaired { detail }))
}
