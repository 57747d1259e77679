//! Operator control that must survive a restart: the pause request (a file the engine reads at
//! each safe point, so a paused run stays paused across engine restarts) and the `--until`
//! deadline (parsed here, journaled by the engine as `deadline_set`).

use std::path::PathBuf;

use jiff::civil::Time;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

use crate::workspace::Workspace;

/// The `run_paused` reason of an operator pause.
pub const OPERATOR_PAUSE: &str = "operator";

/// The `until` journaled for an operator pause: it lasts until `nightshift resume`.
pub const UNTIL_RESUMED: i64 = i64::MAX;

/// `.nightshift/control/pause`: present while an operator pause is asked for.
pub fn pause_file(ws: &Workspace) -> PathBuf {
    ws.dir().join("control").join("pause")
}

/// Whether an operator pause is asked for.
pub fn pause_requested(ws: &Workspace) -> bool {
    pause_file(ws).exists()
}

/// Asks for an operator pause (`note` says who and when). Returns whether it was new.
pub fn request_pause(ws: &Workspace, note: &str) -> std::io::Result<bool> {
    let file = pause_file(ws);
    if file.exists() {
        return Ok(false);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&file, format!("{note}\n"))?;
    Ok(true)
}

/// Withdraws the operator pause. Returns whether there was one.
pub fn clear_pause(ws: &Workspace) -> std::io::Result<bool> {
    match std::fs::remove_file(pause_file(ws)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Parses a `--until` deadline: `HH:MM` (or `HH:MM:SS`) local time — the next time the clock
/// in `tz` shows it, after `now` — or an RFC 3339 timestamp.
pub fn parse_until(text: &str, now: Timestamp, tz: &TimeZone) -> Result<Timestamp, String> {
    let text = text.trim();
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    let time: Time = text.parse().map_err(|_| {
        format!("`{text}` is neither a local time like 07:00 nor an RFC 3339 timestamp")
    })?;
    let today = now.to_zoned_datetime(tz.clone()).date();
    for days in 0..2 {
        let date = today
            .checked_add(days.days())
            .map_err(|e| format!("compute the date of `{text}`: {e}"))?;
        let at = date
            .to_datetime(time)
            .to_zoned_datetime(tz.clone())
            .map_err(|e| format!("place `{text}` in the local time zone: {e}"))?
            .timestamp();
        if at > now {
            return Ok(at);
        }
    }
    Err(format!("`{text}` does not fall within the next day"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_is_the_next_local_occurrence() {
        let tz = TimeZone::fixed(jiff::tz::offset(2));
        let now: Timestamp = "2026-01-01T03:30:00Z".parse().unwrap_or_default(); // 05:30 local
        let at = parse_until("07:00", now, &tz).map(|t| t.to_string());
        assert_eq!(at.as_deref(), Ok("2026-01-01T05:00:00Z"));
        let at = parse_until("05:00", now, &tz).map(|t| t.to_string());
        assert_eq!(at.as_deref(), Ok("2026-01-02T03:00:00Z"), "tomorrow");
        let at = parse_until("2026-03-01T07:00:00+01:00", now, &tz).map(|t| t.to_string());
        assert_eq!(at.as_deref(), Ok("2026-03-01T06:00:00Z"));
        assert!(parse_until("seven", now, &tz).is_err());
    }

    #[test]
    fn pause_file_round_trip() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let ws = Workspace::new(tmp.path());
        assert!(!pause_requested(&ws));
        assert!(matches!(request_pause(&ws, "test"), Ok(true)));
        assert!(matches!(request_pause(&ws, "test"), Ok(false)));
        assert!(pause_requested(&ws));
        assert!(matches!(clear_pause(&ws), Ok(true)));
        assert!(matches!(clear_pause(&ws), Ok(false)));
    }
}
