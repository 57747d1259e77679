//! Reset times written as text in limit messages, resolved to epoch seconds.
//!
//! Forms understood (case-insensitive, anywhere in the text):
//!
//! * `usage limit reached|1790016000` (old Claude): the epoch itself.
//! * `try again in 3 days 6 hours 57 minutes`, `retry in 32.5s`, `resets in 2h` (also after
//!   `reset in`, `reset after`): `now` + the duration.
//! * `try again at 3:28 PM`, `resets 4pm (UTC)`, `resets Jan 12, 10:59am (America/New_York)`,
//!   `try again at Jul 5th, 2026 8:19 PM`, `reset at 5pm (Europe/Berlin)`, `cycle ends on
//!   Sep 26th, 2026`: a clock time, in the zone named in parentheses or else `local` (Codex
//!   prints the machine's local time). A time without a date is the next such time (a time up to
//!   an hour ago counts as today); a date without a year is the next such date.
//!
//! Anything needing `now` (a duration, a time without a year) gives `None` without it, as does
//! an unknown zone name: the caller then falls back to a fixed back-off.

use jiff::Timestamp;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;

/// A time printed without a date that is up to this far in the past still means today.
const PAST_SLACK_S: i64 = 3600;

/// The reset time written in `text`, if any form above resolves.
pub fn reset_from_text(text: &str, now: Option<i64>, local: &TimeZone) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = lower.find("limit reached|") {
        let digits: String = lower[i + "limit reached|".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(n) = digits.parse::<i64>() {
            // Milliseconds when implausibly large for seconds.
            return Some(if n > 100_000_000_000 { n / 1000 } else { n });
        }
    }
    for key in [
        "try again in ",
        "retry in ",
        "retry after ",
        "resets in ",
        "reset in ",
        "reset after ",
    ] {
        if let Some(i) = lower.find(key)
            && let Some(secs) = parse_duration(&lower[i + key.len()..])
        {
            return now.map(|n| n.saturating_add(secs));
        }
    }
    for key in [
        "try again at ",
        "resets at ",
        "reset at ",
        "resets ",
        "ends on ",
    ] {
        if let Some(i) = lower.find(key) {
            let at = i + key.len();
            if let Some(t) = parse_when(&lower[at..], &text[at..], now, local) {
                return Some(t);
            }
        }
    }
    None
}

/// The duration written right after `key` (lowercase) in `text`, in whole seconds rounded up:
/// `duration_after("Suggested retry after 3600s.", "suggested retry after ")` is 3600.
pub(crate) fn duration_after(text: &str, key: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let i = lower.find(key)?;
    parse_duration(&lower[i + key.len()..])
}

/// `3 days 6 hours 57 minutes`, `5h 30m`, `32.5s`, `90 seconds` → whole seconds (rounded up).
fn parse_duration(s: &str) -> Option<i64> {
    let mut c = Cursor::new(s);
    let mut total = 0.0_f64;
    let mut any = false;
    loop {
        c.skip_ws();
        if any {
            c.eat_word("and");
            c.eat(",");
            c.skip_ws();
        }
        let Some(n) = c.decimal() else { break };
        c.skip_ws();
        let unit = c.word().trim_end_matches('.');
        let secs = match unit {
            "d" | "day" | "days" => 86_400.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            _ => break,
        };
        total += n * secs;
        any = true;
    }
    any.then_some(total.ceil() as i64)
}

/// A clock time with an optional date and zone. `lower` and `orig` are the same text (ASCII
/// lowercased and not), so that the zone name keeps its case.
/// A clock time is printed to the minute ("try again at 7:50 PM"): the reset falls somewhere
/// in that minute, so it resolves to the minute's end (never early, never a reset that is
/// already past while the limit still holds).
const MINUTE_S: i64 = 60;

fn parse_when(lower: &str, orig: &str, now: Option<i64>, local: &TimeZone) -> Option<i64> {
    let mut c = Cursor::new(lower);
    c.skip_ws();
    // An optional weekday ("Fri 4:00 PM", "Friday, ...").
    let save = c.pos;
    if weekday(c.word()).is_none() {
        c.pos = save;
    } else {
        c.eat(",");
        c.skip_ws();
    }
    let mut month_day = None;
    let mut year = None;
    let save = c.pos;
    if let Some(m) = month(c.word()) {
        c.skip_ws();
        let day = c.integer()?;
        for suffix in ["st", "nd", "rd", "th"] {
            if c.eat(suffix) {
                break;
            }
        }
        c.eat(",");
        c.skip_ws();
        let save_year = c.pos;
        match c.integer() {
            Some(y) if (1000..=9999).contains(&y) && !c.peek_is(b':') => {
                year = Some(y);
                c.eat(",");
                c.skip_ws();
            }
            _ => c.pos = save_year,
        }
        month_day = Some((m, day));
    } else {
        c.pos = save;
    }

    let save = c.pos;
    let mut hour = 0;
    let mut minute = 0;
    let mut has_time = false;
    if let Some(h) = c.integer() {
        let has_minute = c.eat(":");
        if has_minute {
            minute = c.integer()?;
        }
        c.skip_ws();
        let meridiem = if c.eat("am") || c.eat("a.m.") {
            Some(false)
        } else if c.eat("pm") || c.eat("p.m.") {
            Some(true)
        } else {
            None
        };
        match meridiem {
            Some(pm) if (1..=12).contains(&h) => {
                hour = h % 12 + if pm { 12 } else { 0 };
                has_time = true;
            }
            None if has_minute && h < 24 => {
                hour = h;
                has_time = true;
            }
            _ => c.pos = save,
        }
    }
    if !has_time && month_day.is_none() {
        return None;
    }
    if minute > 59 {
        return None;
    }

    c.skip_ws();
    let tz = if c.eat("(") {
        let start = c.pos;
        let end = lower[start..].find(')')? + start;
        zone(orig.get(start..end)?.trim())?
    } else {
        local.clone()
    };

    let hour = i8::try_from(hour).ok()?;
    let minute = i8::try_from(minute).ok()?;
    let time = Time::new(hour, minute, 0, 0).ok()?;
    let at = |date: Date| -> Option<i64> {
        let dt = DateTime::from_parts(date, time);
        dt.to_zoned_datetime(tz.clone())
            .ok()
            .map(|z| z.timestamp().as_second())
    };
    let round = if has_time { MINUTE_S } else { 0 };
    let start = match (month_day, year) {
        (Some((m, d)), Some(y)) => {
            at(Date::new(i16::try_from(y).ok()?, m, i8::try_from(d).ok()?).ok()?)
        }
        (Some((m, d)), None) => {
            let now = now?;
            let today = Timestamp::from_second(now)
                .ok()?
                .to_zoned_datetime(tz.clone())
                .date();
            let d = i8::try_from(d).ok()?;
            let this_year = at(Date::new(today.year(), m, d).ok()?)?;
            if this_year >= now - 86_400 {
                Some(this_year)
            } else {
                at(Date::new(today.year().checked_add(1)?, m, d).ok()?)
            }
        }
        (None, _) => {
            let now = now?;
            let today = Timestamp::from_second(now)
                .ok()?
                .to_zoned_datetime(tz.clone())
                .date();
            let t = at(today)?;
            if t >= now - PAST_SLACK_S {
                Some(t)
            } else {
                at(today.tomorrow().ok()?)
            }
        }
    };
    start.map(|t| t + round)
}

fn zone(name: &str) -> Option<TimeZone> {
    match name.to_ascii_uppercase().as_str() {
        "UTC" | "GMT" | "Z" => Some(TimeZone::UTC),
        _ => TimeZone::get(name).ok(),
    }
}

fn month(w: &str) -> Option<i8> {
    const NAMES: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let w = w.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    let n = NAMES.iter().position(|m| w.starts_with(m))?;
    // "sept" and full names are fine; "mayday" is not a month.
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ][n];
    (full.starts_with(w) || w == "sept").then(|| (n + 1) as i8)
}

fn weekday(w: &str) -> Option<()> {
    let w = w.trim_end_matches('.');
    let days = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    (w.len() >= 3 && days.iter().any(|d| d.starts_with(w))).then_some(())
}

/// A byte cursor over ASCII-lowercased text.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor { s, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.rest().starts_with(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let save = self.pos;
        if self.word() == w {
            true
        } else {
            self.pos = save;
            false
        }
    }

    fn peek_is(&self, b: u8) -> bool {
        self.rest().as_bytes().first() == Some(&b)
    }

    /// Letters (and dots, for "a.m.", "sept.").
    fn word(&mut self) -> &'a str {
        let rest = self.rest();
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphabetic() || *b == b'.')
            .count();
        self.pos += n;
        &rest[..n]
    }

    fn integer(&mut self) -> Option<u32> {
        let rest = self.rest();
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 || n > 9 {
            return None;
        }
        self.pos += n;
        rest[..n].parse().ok()
    }

    fn decimal(&mut self) -> Option<f64> {
        let rest = self.rest();
        let int = rest.bytes().take_while(u8::is_ascii_digit).count();
        if int == 0 {
            return None;
        }
        let mut n = int;
        if rest.as_bytes().get(n) == Some(&b'.') {
            let frac = rest[n + 1..].bytes().take_while(u8::is_ascii_digit).count();
            if frac > 0 {
                n += 1 + frac;
            }
        }
        self.pos += n;
        rest[..n].parse().ok()
    }
}

/// The wall-clock context a parser resolves reset texts against.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResetClock {
    pub now: Option<i64>,
    /// The zone of clock times printed without one; the system zone when unset.
    pub tz: Option<TimeZone>,
}

impl ResetClock {
    /// The first reset time found in any of `texts`.
    pub fn resolve<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> Option<i64> {
        let mut system = None;
        for text in texts {
            let tz = match &self.tz {
                Some(tz) => tz,
                None => system.get_or_insert_with(TimeZone::system),
            };
            if let Some(t) = reset_from_text(text, self.now, tz) {
                return Some(t);
            }
        }
        None
    }
}
