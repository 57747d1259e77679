//! UTC wall-clock arithmetic and the few time shapes the CLIs print, without a time-zone
//! database: the fake agent always speaks UTC.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_epoch_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// A UTC calendar date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// Year, e.g. 2026.
    pub year: u64,
    /// Month, 1–12.
    pub month: u64,
    /// Day of the month, 1–31.
    pub day: u64,
    /// Hour, 0–23.
    pub hour: u64,
    /// Minute, 0–59.
    pub minute: u64,
    /// Second, 0–59.
    pub second: u64,
}

impl Civil {
    /// The UTC date and time of `epoch` seconds (Howard Hinnant's `civil_from_days`).
    pub fn from_epoch(epoch: u64) -> Self {
        let days = epoch / 86_400;
        let secs = epoch % 86_400;
        // Shift the epoch to 0000-03-01 so leap days fall at the end of a year; the epoch is
        // unsigned, so every quantity below stays non-negative.
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        Self {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs % 3600 / 60,
            second: secs % 60,
        }
    }

    /// `Jan` … `Dec`.
    pub fn month_abbrev(&self) -> &'static str {
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        usize::try_from(self.month)
            .ok()
            .and_then(|m| m.checked_sub(1))
            .and_then(|m| MONTHS.get(m))
            .copied()
            .unwrap_or("Jan")
    }

    /// The hour on a 12-hour clock (1–12) and whether it is PM.
    fn twelve_hour(&self) -> (u64, bool) {
        let hour = match self.hour % 12 {
            0 => 12,
            h => h,
        };
        (hour, self.hour >= 12)
    }

    /// Claude's compact clock: `4pm`, `4:05pm`, `12am`.
    pub fn claude_clock(&self) -> String {
        let (hour, pm) = self.twelve_hour();
        let suffix = if pm { "pm" } else { "am" };
        if self.minute == 0 {
            format!("{hour}{suffix}")
        } else {
            format!("{hour}:{:02}{suffix}", self.minute)
        }
    }

    /// Codex's clock: `3:28 PM`.
    pub fn codex_clock(&self) -> String {
        let (hour, pm) = self.twelve_hour();
        format!("{hour}:{:02} {}", self.minute, if pm { "PM" } else { "AM" })
    }

    /// The day with its English ordinal suffix: `1st`, `2nd`, `11th`, `23rd`.
    pub fn ordinal_day(&self) -> String {
        let suffix = match (self.day % 10, self.day % 100) {
            (_, 11..=13) => "th",
            (1, _) => "st",
            (2, _) => "nd",
            (3, _) => "rd",
            _ => "th",
        };
        format!("{}{suffix}", self.day)
    }
}

/// RFC 3339 UTC with milliseconds, as Gemini's `timestamp`: `2026-01-19T21:26:44.030Z`.
pub fn rfc3339_ms(epoch_ms: u64) -> String {
    let c = Civil::from_epoch(epoch_ms / 1000);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        epoch_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        let c = Civil::from_epoch(0);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (1970, 1, 1, 0, 0, 0)
        );
        // 2026-01-19T21:26:44Z
        let c = Civil::from_epoch(1_768_858_004);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (2026, 1, 19, 21, 26, 44)
        );
        // A leap day: 2024-02-29T12:00:00Z, and the day after.
        let c = Civil::from_epoch(1_709_208_000);
        assert_eq!((c.year, c.month, c.day, c.hour), (2024, 2, 29, 12));
        let c = Civil::from_epoch(1_709_208_000 + 86_400);
        assert_eq!((c.month, c.day), (3, 1));
        // The end of a year.
        let c = Civil::from_epoch(1_767_225_599);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (2025, 12, 31, 23, 59, 59)
        );
        assert_eq!(c.month_abbrev(), "Dec");
    }

    #[test]
    fn clocks_and_ordinals() {
        let at = |hour, minute, day| Civil {
            year: 2026,
            month: 7,
            day,
            hour,
            minute,
            second: 0,
        };
        assert_eq!(at(16, 0, 1).claude_clock(), "4pm");
        assert_eq!(at(16, 5, 1).claude_clock(), "4:05pm");
        assert_eq!(at(0, 0, 1).claude_clock(), "12am");
        assert_eq!(at(12, 30, 1).claude_clock(), "12:30pm");
        assert_eq!(at(15, 28, 1).codex_clock(), "3:28 PM");
        assert_eq!(at(0, 7, 1).codex_clock(), "12:07 AM");
        assert_eq!(at(11, 59, 1).codex_clock(), "11:59 AM");
        let ordinals: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31]
            .into_iter()
            .map(|day| at(0, 0, day).ordinal_day())
            .collect();
        assert_eq!(
            ordinals,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"
            ]
        );
        assert_eq!(at(0, 0, 5).month_abbrev(), "Jul");
    }

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_ms(1_768_858_004_030), "2026-01-19T21:26:44.030Z");
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    }
}
