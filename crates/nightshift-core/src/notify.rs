//! Reaching a person. For now the channel that always works: `.nightshift/ATTENTION`, one line
//! per thing a human should know, appended the moment it happens (desktop, webhook and command
//! channels come with issue 6).

use std::io::Write;

use crate::clock::Clock;
use crate::workspace::Workspace;

/// Appends one line to `.nightshift/ATTENTION`. Best effort: a failure here never stops a run.
pub fn attention(ws: &Workspace, clock: &dyn Clock, line: &str) {
    let path = ws.dir().join("ATTENTION");
    let stamp = clock.wall().strftime("%Y-%m-%dT%H:%M:%SZ");
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{stamp}  {line}");
    }
}
