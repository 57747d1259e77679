//! A progress meter for long work (doctor's and probe's check runs) on stderr: a bar with an
//! ETA redrawn in place on a terminal, plain lines now and then otherwise. The core reports
//! where it is through a callback; timing and drawing happen here.

use std::io::Write;
use std::time::{Duration, Instant};

/// How often a plain (non-terminal) meter writes a line at most, unless a step is the last.
const PLAIN_EVERY: Duration = Duration::from_secs(30);
const BAR_WIDTH: usize = 24;

pub struct Meter {
    /// Names the work in plain lines: `doctor`, `probe`.
    who: &'static str,
    tty: bool,
    started: Option<Instant>,
    last_plain: Option<Instant>,
    drawn: bool,
}

impl Meter {
    pub fn new(who: &'static str, tty: bool) -> Meter {
        Meter {
            who,
            tty,
            started: None,
            last_plain: None,
            drawn: false,
        }
    }

    /// `done` of `total` steps are finished; `now` says what runs next (may be empty).
    pub fn update(&mut self, done: u64, total: u64, now: &str) {
        let at = Instant::now();
        let started = *self.started.get_or_insert(at);
        let line = line(done, total, now, eta(at - started, done, total));
        let mut err = std::io::stderr().lock();
        if self.tty {
            let bar = bar(done, total);
            let _ = write!(err, "\r\x1b[2K{bar} {line}");
            let _ = err.flush();
            self.drawn = true;
        } else if done == 0
            || done >= total
            || self.last_plain.is_none_or(|last| at - last >= PLAIN_EVERY)
        {
            let _ = writeln!(err, "{}: {line}", self.who);
            self.last_plain = Some(at);
        }
    }

    /// Erases the bar (on a terminal) so that other output starts on a clean line.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The time left, from the pace so far; `None` before the first step is done.
pub fn eta(elapsed: Duration, done: u64, total: u64) -> Option<Duration> {
    if done == 0 || done >= total {
        return None;
    }
    let per_step = elapsed.as_secs_f64() / done as f64;
    Some(Duration::from_secs_f64(per_step * (total - done) as f64))
}

/// `[##########..............]`
pub fn bar(done: u64, total: u64) -> String {
    let filled = if total == 0 {
        BAR_WIDTH
    } else {
        ((done.min(total) as f64 / total as f64) * BAR_WIDTH as f64).round() as usize
    };
    format!("[{}{}]", "#".repeat(filled), ".".repeat(BAR_WIDTH - filled))
}

/// `3/10 runs done · mutant 1 of 3 (src/lib.rs) · about 1m20s left`
pub fn line(done: u64, total: u64, now: &str, eta: Option<Duration>) -> String {
    let mut line = format!("{done}/{total} check runs done");
    if !now.is_empty() {
        line.push_str(" · ");
        line.push_str(now);
    }
    match eta {
        Some(left) => {
            line.push_str(" · about ");
            line.push_str(&human(left));
            line.push_str(" left");
        }
        None if done == 0 && total > 0 => line.push_str(" · ETA after the first run"),
        None => {}
    }
    line
}

/// `45s`, `3m10s`, `1h05m`.
fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        format!("{}s", secs.max(1))
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_follows_the_pace_so_far() {
        assert_eq!(eta(Duration::from_secs(30), 0, 10), None);
        assert_eq!(
            eta(Duration::from_secs(30), 3, 9),
            Some(Duration::from_secs(60))
        );
        assert_eq!(eta(Duration::from_secs(30), 9, 9), None);
    }

    #[test]
    fn lines_and_bars() {
        assert_eq!(bar(0, 4), format!("[{}]", ".".repeat(BAR_WIDTH)));
        assert_eq!(bar(2, 4), format!("[{}{}]", "#".repeat(12), ".".repeat(12)));
        assert_eq!(bar(5, 4), format!("[{}]", "#".repeat(BAR_WIDTH)));
        assert_eq!(
            line(
                3,
                9,
                "mutant 1 of 3 (src/lib.rs)",
                Some(Duration::from_secs(80))
            ),
            "3/9 check runs done · mutant 1 of 3 (src/lib.rs) · about 1m20s left"
        );
        assert_eq!(
            line(0, 6, "the check at HEAD", None),
            "0/6 check runs done · the check at HEAD · ETA after the first run"
        );
        assert_eq!(human(Duration::from_secs(3900)), "1h05m");
    }
}
