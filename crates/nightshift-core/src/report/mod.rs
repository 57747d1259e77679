//! Readers of the store: what happened, told to a person (DESIGN.md §3 `report`). Nothing here
//! writes; every function takes a read-only [`crate::store::Store`].

pub mod explain;
pub mod morning;
