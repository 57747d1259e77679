//! One integration-test binary (fast linking): every module drives the real `nightshift` binary
//! against real git repositories in temp dirs, with the scripted agent.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly on purpose"
)]

mod harness;

mod agents;
mod bad_config;
mod control;
mod crash;
mod doctor;
mod explain;
mod field;
mod fixpoint;
mod guards;
mod integrate;
mod journal_head;
mod lifecycle;
mod lock;
mod notify;
mod parallel;
mod pin;
mod pipeline;
mod pool;
mod probe;
mod reading;
mod real_projects;
mod replay;
mod report;
mod restore;
mod review;
mod sandbox;
mod sessions;
mod supervise;
mod tamper;
mod tell;
mod tui;
