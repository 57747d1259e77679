//! The states of items and runs, typed. Each is stored as its `snake_case` name, the same text
//! as before it was typed (`items.state`, `runs.state`, `--json`): the database and every
//! output stay byte-compatible.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A name this build does not know, read from the database (a newer nightshift wrote it).
#[derive(Debug, thiserror::Error)]
#[error(
    "read the {what} `{name}`: this nightshift does not know it (a newer one wrote the database; upgrade)"
)]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
}

/// `Display`, `ToSql` and `FromSql` of an enum by its stored name (`as_str`, `parse`).
macro_rules! stored_by_name {
    ($ty:ty, $what:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl rusqlite::types::ToSql for $ty {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl rusqlite::types::FromSql for $ty {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let name = value.as_str()?;
                <$ty>::parse(name).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(Box::new(UnknownName {
                        what: $what,
                        name: name.to_owned(),
                    }))
                })
            }
        }
    };
}

/// Where an item of a run is (`items.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    /// Waiting for its next attempt.
    Queued,
    /// An attempt is open.
    Running,
    /// On the target (and pushed, when `done = "pushed"`).
    Shipped,
    /// On the local target; counts once pushed (`done = "pushed"`).
    IntegratedLocal,
    /// Out of attempts, or parked outright; tried once more per pass.
    Parked,
    /// A review escalated it: a person decides (`nightshift accept`).
    Escalated,
    /// Actions only a person can take are owed (`nightshift confirm`).
    AwaitingOperator,
}

impl ItemState {
    pub const ALL: [ItemState; 7] = [
        ItemState::Queued,
        ItemState::Running,
        ItemState::Shipped,
        ItemState::IntegratedLocal,
        ItemState::Parked,
        ItemState::Escalated,
        ItemState::AwaitingOperator,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemState::Queued => "queued",
            ItemState::Running => "running",
            ItemState::Shipped => "shipped",
            ItemState::IntegratedLocal => "integrated_local",
            ItemState::Parked => "parked",
            ItemState::Escalated => "escalated",
            ItemState::AwaitingOperator => "awaiting_operator",
        }
    }

    /// The state of a stored name; `None` for a name this build does not know.
    pub fn parse(name: &str) -> Option<ItemState> {
        ItemState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether its work is on the target (pushed or not yet).
    pub fn is_integrated(self) -> bool {
        matches!(self, ItemState::Shipped | ItemState::IntegratedLocal)
    }

    /// Whether it waits on a person (`accept` or `confirm`).
    pub fn awaits_person(self) -> bool {
        matches!(self, ItemState::Escalated | ItemState::AwaitingOperator)
    }
}

stored_by_name!(ItemState, "item state");

/// Whether a run is open (`runs.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Not finished (it may be paused, stopped or between engines: it resumes).
    Running,
    /// Halted with its `halt_reason`.
    Finished,
}

impl RunState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Finished => "finished",
        }
    }

    /// The state of a stored name; `None` for a name this build does not know.
    pub fn parse(name: &str) -> Option<RunState> {
        [RunState::Running, RunState::Finished]
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}

stored_by_name!(RunState, "run state");

/// Why a run is paused, as its `run_paused` reason begins (the reason itself stays text in the
/// journal and `runs.pause_reason`: it carries the item and the back-off for a person). The
/// prefixes are what `wait`, alerts and the engine tell pauses apart by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PauseCause {
    /// An agent CLI hit its usage limit: waited out until its reset.
    RateLimited,
    /// A transient network or API fault: retried with back-off.
    EnvTransient,
    /// A push was refused: retried with back-off.
    PushRefused,
    /// `nightshift pause`: lasts until `nightshift resume`.
    Operator,
    /// Anything else (an agent CLI logged out, the user's checkout in the way, a reason a later
    /// nightshift adds): taken as needing a person.
    Other,
}

impl PauseCause {
    /// The causes that clear without a person, each with the prefix its reasons begin with.
    const PREFIXES: [(PauseCause, &'static str); 4] = [
        (PauseCause::RateLimited, "rate_limited"),
        (PauseCause::EnvTransient, "env_fault: transient"),
        (PauseCause::PushRefused, "push refused"),
        (PauseCause::Operator, crate::control::OPERATOR_PAUSE),
    ];

    /// The cause of a `run_paused` reason.
    pub fn of(reason: &str) -> PauseCause {
        PauseCause::PREFIXES
            .into_iter()
            .find(|(_, prefix)| reason.starts_with(prefix))
            .map_or(PauseCause::Other, |(cause, _)| cause)
    }

    /// What its reasons begin with (`None` for [`PauseCause::Other`], which has no one form).
    pub fn prefix(self) -> Option<&'static str> {
        PauseCause::PREFIXES
            .into_iter()
            .find(|(cause, _)| *cause == self)
            .map(|(_, prefix)| prefix)
    }

    /// Whether the pause clears without a person (it wakes only `nightshift wait --for any`).
    pub fn clears_by_itself(self) -> bool {
        self != PauseCause::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_stored_under_their_serde_names() {
        for s in ItemState::ALL {
            assert_eq!(serde_json::to_value(s).unwrap().as_str(), Some(s.as_str()));
            assert_eq!(ItemState::parse(s.as_str()), Some(s));
        }
        for s in [RunState::Running, RunState::Finished] {
            assert_eq!(serde_json::to_value(s).unwrap().as_str(), Some(s.as_str()));
            assert_eq!(RunState::parse(s.as_str()), Some(s));
        }
        assert_eq!(ItemState::parse("later"), None);
        for cause in [
            PauseCause::RateLimited,
            PauseCause::EnvTransient,
            PauseCause::PushRefused,
            PauseCause::Operator,
        ] {
            let prefix = cause.prefix().unwrap();
            assert_eq!(PauseCause::of(&format!("{prefix}: x waits")), cause);
            assert!(cause.clears_by_itself());
        }
        let auth = "env_fault: auth: a — a person must log the agent CLI in";
        assert_eq!(PauseCause::of(auth), PauseCause::Other);
        assert!(!PauseCause::of(auth).clears_by_itself());
        assert_eq!(PauseCause::of("operator"), PauseCause::Operator);
        assert_eq!(RunState::parse("later"), None);
    }
}
