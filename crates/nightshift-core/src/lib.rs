//! nightshift-core: everything that decides and does. No terminal I/O lives here; the binary
//! parses, calls into this crate, and renders.
//!
//! Rooms (see DESIGN.md §3): [`config`] reads `nightshift.toml`, [`plan`] turns plan sources into
//! items, [`store`] is the journal and the state it folds into, [`engine`] schedules items through
//! the pipeline, [`session`] supervises one process, [`git`] wraps the git CLI and worktrees,
//! [`check`] runs the oracle, [`workspace`] knows where things live on disk, [`halt`] is the
//! loop contract (halt reasons and exit classes).

pub mod accept;
pub mod agent;
pub mod bounded;
pub mod check;
pub mod clean;
pub mod clock;
pub mod config;
pub mod control;
pub mod control_plane;
pub mod doctor;
pub mod engine;
pub mod failpoint;
pub mod gate;
pub mod git;
pub mod guard;
pub mod halt;
pub mod notify;
pub mod plan;
pub mod receipt;
pub mod redact;
pub mod report;
pub mod sandbox;
pub mod session;
pub mod stop;
pub mod store;
pub mod supervise;
pub mod verdict;
pub mod wake;
pub mod workspace;
