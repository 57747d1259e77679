//! Tamper detection around an agent session: what nightshift can see outside the attempt's
//! checkout (the user's checkout, every ref, `.git/config`, `.git/info/`, hooks) is taken
//! before the session and compared after it; a change ends the attempt as `integrity`
//! (`control_plane_tampered`) with the evidence journaled and alerted, and what can be put
//! back is put back before nightshift's next git call (git/tamper.rs).

use std::path::Path;

use super::{Engine, EngineError};
use crate::git::{ControlPlane, Git, Tampering};
use crate::halt::HaltReason;
use crate::notify;
use crate::store::Store;
use crate::store::{AttemptRow, EventKind};
use crate::workspace::Workspace;

/// Where the user's checkout, as a tampering session left it, is kept.
pub(super) fn tampered_ref(item: &str, attempt: u32) -> String {
    format!("refs/nightshift/tampered/{item}/{attempt}")
}

impl Engine<'_> {
    /// nightshift's git in an attempt's checkout (for a clone, its git directory is put back
    /// as nightshift made it before every call: git/clone.rs).
    pub(super) fn checkout(&self, path: impl AsRef<std::path::Path>) -> crate::git::Git {
        self.git
            .checkout_at(&self.common_dir, path.as_ref().to_path_buf())
    }

    /// Journals what a session changed outside its checkout (the attempt's phase becomes
    /// `tampered`; [`Engine::end_tampered`] ends it).
    pub(super) fn record_tampering(
        &mut self,
        att: &AttemptRow,
        iteration: u32,
        found: Tampering,
    ) -> Result<(), EngineError> {
        self.record(EventKind::ControlPlaneTampered {
            item: att.item.clone(),
            attempt: att.attempt,
            iteration,
            changes: found.changes,
            restored: found.restored,
            paths: found.paths,
        })?;
        Ok(())
    }

    /// Ends an attempt whose session tampered: alerted, parked with its work kept (it never
    /// ships unless a person accepts it), the run goes on with the next item.
    pub(super) fn end_tampered(&mut self, att: &AttemptRow) -> Result<(), EngineError> {
        let changes = self
            .store
            .attempt_events(
                &self.run_id(),
                &att.item,
                att.attempt,
                Some("control_plane_tampered"),
            )?
            .into_iter()
            .rev()
            .find_map(|e| match e.kind {
                EventKind::ControlPlaneTampered { changes, .. } => Some(changes),
                _ => None,
            })
            .unwrap_or_default();
        let mut named: Vec<&str> = changes.iter().take(3).map(String::as_str).collect();
        if changes.len() > 3 {
            named.push("…");
        }
        let reason = format!(
            "control_plane_tampered: the agent's session changed what lies outside its checkout: {}",
            named.join("; ")
        );
        self.alerts().alert(
            notify::AlertKind::Integrity,
            format!("{}: {reason}", att.item),
            Some(&att.item),
        );
        self.park_halting(att, reason, HaltReason::ControlPlaneTampered)
    }
}

/// What lies outside the attempt's checkout, before its session. What a night piles up (a
/// preserve ref and a few loose objects per finished attempt) is packed first once there is
/// enough of it: the snapshot lists every ref twice per session, and every fetch from a clone
/// reads the commit of every ref.
pub(super) fn watch_control_plane(
    git: &Git,
    common_dir: &Path,
    att: &AttemptRow,
) -> Result<ControlPlane, EngineError> {
    git.pack_loose(common_dir);
    let own = vec![format!("refs/heads/{}", att.branch)];
    Ok(git.control_plane(common_dir, &own)?)
}

/// What the session changed outside its checkout since `before` (put back where it can).
pub(super) fn tampering(
    git: &Git,
    ws: &Workspace,
    att: &AttemptRow,
    before: &ControlPlane,
) -> Result<Option<Tampering>, EngineError> {
    let scratch = ws
        .dir()
        .join(format!("tamper-{}-{}.index", att.item, att.attempt));
    Ok(git.tampering_since(before, &tampered_ref(&att.item, att.attempt), &scratch)?)
}

/// The user's checkout's paths among `paths` that an agent session of run `run_id` changed:
/// uncommitted changes there are not the user's work, and must never be advised to be
/// committed.
pub(super) fn tampered_paths(
    store: &Store,
    run_id: &str,
    paths: &[String],
) -> Result<Vec<String>, EngineError> {
    let mut hit = Vec::new();
    for e in store.run_events(run_id, &["control_plane_tampered"])? {
        if let EventKind::ControlPlaneTampered { paths: changed, .. } = &e.kind {
            for p in paths {
                if changed.contains(p) && !hit.contains(p) {
                    hit.push(p.clone());
                }
            }
        }
    }
    Ok(hit)
}
