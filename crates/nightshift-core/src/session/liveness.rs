//! Whether a supervised CLI is alive: the rules that turn what it does (output, CPU time, file
//! changes) into "silent past the grace". Pure bookkeeping on the [`Clock`] seam; the select
//! loop feeds it readings and asks it when to look again.

use std::time::Duration;

use crate::clock::Clock;

/// CPU time counts as activity only at this rate or above: `CPU_ACTIVE_TICKS` clock ticks
/// (10 ms each at the usual 100 Hz) within `CPU_WINDOW`, i.e. 5% of one core. Measured on the
/// real CLIs (2026-12, waiting on a model server that never answers, load 5–8 on 2 cores):
/// Claude Code 2.1.332 and 2.1.197 burn about one tick a second with bursts of ten (the most in
/// any 10 s window after start-up: 28); Codex 0.171.0 at most 5 per window. A CLI thinking
/// locally, or a build or test suite it runs, burns tens to hundreds per second even when it
/// gets only a tenth of a core. 20 per window (the old figure) was within reach of an idle
/// Claude's bursts, so a hung API call was read as work for up to a minute.
pub(crate) const CPU_ACTIVE_TICKS: u64 = 50;
/// The window CPU time is measured over.
pub(crate) const CPU_WINDOW: Duration = Duration::from_secs(10);
/// Until a CLI shows life (the first event its parser reads from its stream; for a process with
/// no parser, its first output) it is starting, not silent: the silence it
/// is allowed is the grace plus three graces more, at most this much more. Starting a CLI on a
/// loaded machine takes long (Claude Code burns 3–6 s of CPU before its first line, spread over
/// tens of seconds of wall time at load 25, which can stay under the CPU threshold); a CLI that
/// never starts is still ended, by the usual stall path, that long after it was spawned.
pub(crate) const STARTUP_EXTRA: Duration = Duration::from_secs(120);
/// How many graces of extra silence start-up gets (before [`STARTUP_EXTRA`] caps it).
const STARTUP_GRACES: u32 = 3;

/// The liveness of one process tree: silence since its last activity, against the grace.
#[derive(Debug, Clone)]
pub(crate) struct Liveness {
    grace: Duration,
    /// Monotonic time of the last activity (or of the spawn, before any).
    last_activity: Duration,
    /// The CLI showed life: start-up is over, the grace alone applies.
    alive: bool,
    cpu: CpuWindow,
}

impl Liveness {
    /// Armed at the spawn: `grace` of silence once the CLI has shown life, and before that
    /// `grace + min(3 × grace, STARTUP_EXTRA)`.
    pub(crate) fn new(clock: &dyn Clock, grace: Duration) -> Liveness {
        Liveness {
            grace,
            last_activity: clock.mono(),
            alive: false,
            cpu: CpuWindow::new(clock.mono()),
        }
    }

    /// A sign of life (the first event of the CLI's stream, or any output of a process without
    /// a parser), and activity.
    pub(crate) fn output(&mut self, clock: &dyn Clock) {
        self.alive = true;
        self.touch(clock);
    }

    /// Output that is not yet a sign of life (a CLI's warnings while it starts): activity only;
    /// start-up goes on.
    pub(crate) fn activity(&mut self, clock: &dyn Clock) {
        self.touch(clock);
    }

    /// A reading of the tree's CPU time (clock ticks, cumulative): activity only at or above
    /// [`CPU_ACTIVE_TICKS`] per [`CPU_WINDOW`]. Returns whether it counted.
    pub(crate) fn cpu(&mut self, ticks: u64, clock: &dyn Clock) -> bool {
        let active = self.cpu.active(ticks, clock.mono());
        if active {
            self.touch(clock);
        }
        active
    }

    /// Files in the worktree changed since the last look, the newest `ago` before now:
    /// activity *then*, not at the look. (Looking only once the allowance is up, a file a CLI
    /// writes as it starts would otherwise buy it a second full allowance: aider, stuck on its
    /// first request, was ended after 126 s instead of 60.)
    pub(crate) fn files_changed(&mut self, clock: &dyn Clock, ago: Duration) {
        self.last_activity = self.last_activity.max(clock.mono().saturating_sub(ago));
    }

    /// A stall was reported but the session goes on (the stall gate in `log` mode): the next
    /// report comes after another full allowance.
    pub(crate) fn rearm(&mut self, clock: &dyn Clock) {
        self.touch(clock);
    }

    fn touch(&mut self, clock: &dyn Clock) {
        self.last_activity = self.last_activity.max(clock.mono());
    }

    /// Whether the CLI has printed anything yet.
    #[cfg(test)]
    pub(crate) fn alive(&self) -> bool {
        self.alive
    }

    /// The silence allowed now.
    pub(crate) fn allowance(&self) -> Duration {
        if self.alive {
            self.grace
        } else {
            self.grace + (self.grace * STARTUP_GRACES).min(STARTUP_EXTRA)
        }
    }

    /// Monotonic time since the last activity (or since the spawn).
    pub(crate) fn silence(&self, clock: &dyn Clock) -> Duration {
        clock.mono().saturating_sub(self.last_activity)
    }

    /// Whether the silence has reached the allowance.
    pub(crate) fn stalled(&self, clock: &dyn Clock) -> bool {
        self.silence(clock) >= self.allowance()
    }

    /// Monotonic time left before a stall; zero once stalled.
    pub(crate) fn remaining(&self, clock: &dyn Clock) -> Duration {
        self.allowance().saturating_sub(self.silence(clock))
    }
}

/// CPU time of the tree, judged per window against [`CPU_ACTIVE_TICKS`].
#[derive(Debug, Clone)]
struct CpuWindow {
    start: Duration,
    ticks_at_start: Option<u64>,
}

impl CpuWindow {
    fn new(now: Duration) -> CpuWindow {
        CpuWindow {
            start: now,
            ticks_at_start: None,
        }
    }

    /// Whether the tree burned at least the threshold since the window began; a new window
    /// begins when it did, or when the window is over. A reading below the window's base (a
    /// member exited and took its ticks along) starts the window again from it.
    fn active(&mut self, ticks: u64, now: Duration) -> bool {
        let base = *self.ticks_at_start.get_or_insert(ticks);
        if ticks < base {
            self.start = now;
            self.ticks_at_start = Some(ticks);
            return false;
        }
        let burned = ticks - base;
        let over = now.saturating_sub(self.start) >= CPU_WINDOW;
        let active = burned >= CPU_ACTIVE_TICKS;
        if active || over {
            self.start = now;
            self.ticks_at_start = Some(ticks);
        }
        active
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    const GRACE: Duration = Duration::from_secs(15);

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_cli_that_has_not_printed_yet_is_starting_not_silent() {
        let clock = FakeClock::default();
        let mut l = Liveness::new(&clock, GRACE);
        // Three graces, no output yet: still starting.
        clock.advance(s(45));
        assert!(!l.stalled(&clock), "start-up is not silence");
        assert_eq!(l.remaining(&clock), s(15));
        // A warning on stderr is activity, but start-up goes on.
        l.activity(&clock);
        assert!(!l.alive());
        clock.advance(s(45));
        assert!(!l.stalled(&clock), "still starting");
        // Its first line: the grace alone applies from here.
        l.output(&clock);
        assert!(l.alive());
        clock.advance(GRACE - s(1));
        assert!(!l.stalled(&clock));
        clock.advance(s(1));
        assert!(
            l.stalled(&clock),
            "silent for the grace after its first output"
        );
    }

    #[test]
    fn a_cli_that_never_starts_is_still_stalled_after_the_startup_allowance() {
        let clock = FakeClock::default();
        let l = Liveness::new(&clock, GRACE);
        clock.advance(4 * GRACE - s(1));
        assert!(!l.stalled(&clock));
        clock.advance(s(1));
        assert!(
            l.stalled(&clock),
            "never printed, idle: ended, not held forever"
        );
    }

    #[test]
    fn a_long_grace_gets_at_most_the_capped_startup_extra() {
        let clock = FakeClock::default();
        let l = Liveness::new(&clock, s(600));
        clock.advance(s(600) + STARTUP_EXTRA - s(1));
        assert!(!l.stalled(&clock));
        clock.advance(s(1));
        assert!(l.stalled(&clock));
    }

    #[test]
    fn a_file_written_while_starting_counts_from_when_it_was_written() {
        let clock = FakeClock::default();
        let mut l = Liveness::new(&clock, GRACE);
        // Written 5 s in; first looked at when the start-up allowance (60 s) is up.
        clock.advance(4 * GRACE);
        assert!(l.stalled(&clock));
        l.files_changed(&clock, 4 * GRACE - s(5));
        assert!(
            !l.stalled(&clock),
            "a write 55 s ago is within the allowance"
        );
        assert_eq!(l.remaining(&clock), s(5));
        clock.advance(s(5));
        assert!(
            l.stalled(&clock),
            "silent for the allowance since the write, not since the look"
        );
        // A write just now is activity now.
        l.files_changed(&clock, Duration::ZERO);
        assert_eq!(l.remaining(&clock), 4 * GRACE);
    }

    #[test]
    fn an_idle_claude_waiting_on_the_api_is_silent_despite_its_cpu_bursts() {
        // The measured pattern of Claude Code 2.1.332 waiting on a silent server: a tick a
        // second, and a burst of ten every few seconds: 28 in the first window, which the old
        // threshold (20) read as work.
        let clock = FakeClock::default();
        let mut l = Liveness::new(&clock, GRACE);
        l.output(&clock); // system/init, then "requesting"
        let mut ticks = 113;
        let mut counted = false;
        for sec in 1..=15u64 {
            clock.advance(s(1));
            ticks += if sec % 5 == 0 { 10 } else { 1 };
            counted |= l.cpu(ticks, &clock);
        }
        assert!(!counted, "idle bursts are not work");
        assert!(
            l.stalled(&clock),
            "a hung API call is stalled after the grace"
        );
    }

    #[test]
    fn cpu_above_the_threshold_is_activity() {
        let clock = FakeClock::default();
        let mut l = Liveness::new(&clock, GRACE);
        l.output(&clock);
        assert!(!l.cpu(1000, &clock), "the first reading is the base");
        // A tool running a build: 20 ticks a second (a fifth of a core, a loaded machine).
        let mut ticks = 1000;
        for _ in 0..40 {
            clock.advance(s(1));
            ticks += 20;
            l.cpu(ticks, &clock);
        }
        assert!(!l.stalled(&clock), "busy without printing is not hung");
        assert!(l.silence(&clock) < CPU_WINDOW);
    }

    #[test]
    fn cpu_counts_as_activity_only_at_the_threshold_within_a_window() {
        let mut w = CpuWindow::new(s(0));
        assert!(!w.active(100, s(0)), "the first reading is the base");
        assert!(!w.active(100 + CPU_ACTIVE_TICKS - 1, s(9)));
        // The window rolled over at 10 s (base 149); the threshold within the next one is work.
        assert!(!w.active(149, s(10)));
        assert!(w.active(149 + CPU_ACTIVE_TICKS, s(12)));
        assert!(
            !w.active(149 + CPU_ACTIVE_TICKS + 1, s(13)),
            "a new window after activity"
        );
    }

    #[test]
    fn a_member_exiting_with_its_ticks_restarts_the_window_without_counting() {
        let mut w = CpuWindow::new(s(0));
        assert!(!w.active(500, s(0)));
        // A child that burned 400 ticks exits: the tree's sum drops.
        assert!(!w.active(120, s(1)));
        assert!(!w.active(120 + CPU_ACTIVE_TICKS - 1, s(2)));
        assert!(w.active(120 + CPU_ACTIVE_TICKS, s(3)));
    }
}
