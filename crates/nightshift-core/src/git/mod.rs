//! The git CLI wrapper (never a library): `LC_ALL=C`, no prompts, hooks off for nightshift's own
//! commits, a timeout on every call. Worktree lifecycle and preservation live in `worktree`;
//! bringing work onto a target (for the engine and `accept` alike) in `integrate`; a
//! checkout for a while (`accept`, debt reviews, `replay`, `probe`, `doctor`) in `scratch`.

mod clone;
mod cmd;
mod integrate;
pub mod message;
pub mod object;
pub mod pool;
pub mod scratch;
mod seed;
mod tamper;
mod worktree;

pub use clone::is_clone;
pub use cmd::{Git, GitError};
pub use integrate::{Integrator, Landing, Prepared};
pub use pool::ClonePool;
pub use scratch::{Scratch, ScratchError};
pub use seed::{missing_seeds, seed_worktree};
pub use tamper::{ControlPlane, Tampering};
pub use worktree::{MergeOutcome, WorktreeInfo};

#[cfg(test)]
mod tests;
