//! Session deadlines and stall (silence) timers, evaluated over a [`Clock`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jiff::Timestamp;

use super::Clock;

/// How often a caller should re-evaluate a [`Deadline`] (and a [`StallTimer`]).
///
/// A timer armed on the monotonic clock (a `tokio::time::sleep` included) does not see time that
/// passed while the host was suspended, so a loop that slept for the whole `remaining()` could
/// overshoot a deadline by the length of the suspend. Sleeping at most one tick
/// ([`Deadline::next_check`]) bounds the lateness after resume to one tick. One second is far
/// below any session or stall budget and costs nothing to evaluate.
pub const TICK: Duration = Duration::from_secs(1);

/// A time budget that started at [`Deadline::after`].
///
/// Elapsed time is the largest of:
/// - the **boot** clock's elapsed time: suspended time counts, so a laptop closed for the night
///   does not hand a session a fresh 90 minutes on resume;
/// - the **wall** clock's elapsed time, clamped at zero: the wall clock can only bring the end
///   closer (it sees a suspend even where the boot clock cannot), and a backward step is
///   ignored;
/// - the **mono** clock's elapsed time, which can never legitimately exceed boot's; it is there
///   so a broken boot clock cannot make a deadline last forever.
///
/// And it is latched: the largest elapsed time ever observed is remembered, so
/// [`Deadline::remaining`] never grows between calls and a deadline that has expired stays
/// expired, whatever the wall clock does afterwards. `elapsed >= budget` means expired.
///
/// Nothing here wakes anyone: evaluate on a short tick ([`TICK`]).
#[derive(Debug)]
pub struct Deadline {
    budget: Duration,
    start_mono: Duration,
    start_boot: Duration,
    start_wall: Timestamp,
    /// High-water mark of elapsed time seen so far, in nanoseconds (saturating).
    seen_nanos: AtomicU64,
}

impl Deadline {
    /// A deadline `budget` from now, recording the start on all three clocks.
    pub fn after(clock: &dyn Clock, budget: Duration) -> Self {
        Self {
            budget,
            start_mono: clock.mono(),
            start_boot: clock.boot(),
            start_wall: clock.wall(),
            seen_nanos: AtomicU64::new(0),
        }
    }

    /// The budget this deadline was created with.
    pub fn budget(&self) -> Duration {
        self.budget
    }

    /// The wall-clock time at which the deadline started (for the journal).
    pub fn started_at(&self) -> Timestamp {
        self.start_wall
    }

    /// Time spent against the budget so far (see the type docs); never decreases between calls.
    pub fn elapsed(&self, clock: &dyn Clock) -> Duration {
        let boot = clock.boot().saturating_sub(self.start_boot);
        let mono = clock.mono().saturating_sub(self.start_mono);
        // A negative wall difference (a backward step) fails the conversion: it counts as zero.
        let wall =
            Duration::try_from(clock.wall().duration_since(self.start_wall)).unwrap_or_default();
        let now = to_nanos(boot.max(mono).max(wall));
        let seen = self.seen_nanos.fetch_max(now, Ordering::Relaxed).max(now);
        Duration::from_nanos(seen)
    }

    /// Time left before the deadline; zero once expired. Never grows between calls.
    pub fn remaining(&self, clock: &dyn Clock) -> Duration {
        self.budget.saturating_sub(self.elapsed(clock))
    }

    /// Whether the budget is spent. Once true, always true.
    pub fn expired(&self, clock: &dyn Clock) -> bool {
        self.elapsed(clock) >= self.budget
    }

    /// How long the caller may wait before evaluating again: the remaining time, capped at
    /// [`TICK`] (zero once expired).
    pub fn next_check(&self, clock: &dyn Clock) -> Duration {
        self.remaining(clock).min(TICK)
    }
}

fn to_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Silence detection: stalled once no activity has been seen for `grace`.
///
/// Measured on the **mono** clock, which stops while the host is suspended. A session produces
/// nothing while the machine sleeps because nothing runs, not because the agent hung; on the boot
/// (or wall) clock every session alive at suspend would be "stalled" the moment the host woke up
/// and be nudged or ended for the operator's closed lid. Suspend still counts toward the
/// session's [`Deadline`], which uses the boot clock.
///
/// What counts as activity (output bytes, parsed events, worktree changes, CPU time) is the
/// caller's decision: call [`StallTimer::touch`] for each.
#[derive(Debug, Clone, Copy)]
pub struct StallTimer {
    grace: Duration,
    last_activity: Duration,
}

impl StallTimer {
    /// A timer armed now: it reports a stall after `grace` of monotonic silence.
    pub fn new(clock: &dyn Clock, grace: Duration) -> Self {
        Self {
            grace,
            last_activity: clock.mono(),
        }
    }

    /// The grace this timer was armed with.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Record activity now: the silence starts over.
    pub fn touch(&mut self, clock: &dyn Clock) {
        self.last_activity = self.last_activity.max(clock.mono());
    }

    /// Monotonic time since the last activity (or since arming).
    pub fn silence(&self, clock: &dyn Clock) -> Duration {
        clock.mono().saturating_sub(self.last_activity)
    }

    /// Whether the silence has reached the grace.
    pub fn stalled(&self, clock: &dyn Clock) -> bool {
        self.silence(clock) >= self.grace
    }

    /// Monotonic time left before a stall; zero once stalled.
    pub fn remaining(&self, clock: &dyn Clock) -> Duration {
        self.grace.saturating_sub(self.silence(clock))
    }
}

#[cfg(test)]
mod tests {
    use super::super::FakeClock;
    use super::*;

    const MIN: Duration = Duration::from_secs(60);
    const HOUR: Duration = Duration::from_secs(3600);
    const SESSION: Duration = Duration::from_secs(90 * 60);

    /// Acceptance 3a: the boot clock passes the deadline while mono is frozen; the first
    /// evaluation after that (i.e. within one tick) says expired.
    #[test]
    fn boot_passing_deadline_while_mono_frozen_expires() {
        let clock = FakeClock::default();
        let d = Deadline::after(&clock, SESSION);
        clock.advance(30 * MIN);
        assert!(!d.expired(&clock));
        let mono = clock.mono();
        let wall = clock.wall();

        // Suspended, and the wall clock did not see it: only boot moves.
        clock.advance_boot(60 * MIN - Duration::from_nanos(1));
        assert!(!d.expired(&clock), "one nanosecond short is not expired");
        assert_eq!(d.remaining(&clock), Duration::from_nanos(1));
        assert!(d.next_check(&clock) <= TICK);

        clock.advance_boot(Duration::from_nanos(1));
        assert_eq!(clock.mono(), mono, "mono stayed frozen");
        assert_eq!(clock.wall(), wall, "wall did not move");
        assert!(d.expired(&clock));
        assert_eq!(d.remaining(&clock), Duration::ZERO);
        assert_eq!(d.next_check(&clock), Duration::ZERO);
    }

    /// The same through a full suspend (boot and wall move, mono frozen), as it happens on Linux.
    #[test]
    fn suspend_past_the_budget_expires_on_the_next_evaluation() {
        let clock = FakeClock::default();
        let d = Deadline::after(&clock, SESSION);
        clock.advance(10 * MIN);
        clock.suspend(8 * HOUR);
        assert!(d.expired(&clock));
    }

    /// Acceptance 3b: a backward wall step never extends a deadline.
    #[test]
    fn backward_wall_step_never_extends_a_deadline() {
        let clock = FakeClock::default();
        let d = Deadline::after(&clock, SESSION);
        clock.advance(30 * MIN);
        let before = d.remaining(&clock);
        assert_eq!(before, 60 * MIN);

        clock.set_wall(clock.wall() - jiff::SignedDuration::from_hours(1));
        assert!(
            d.remaining(&clock) <= before,
            "remaining grew after a backward step"
        );
        assert_eq!(d.remaining(&clock), 60 * MIN, "boot time still counts");

        // Stepped back to before the start: wall elapsed is clamped at zero, boot still counts.
        clock.set_wall(d.started_at() - jiff::SignedDuration::from_hours(5));
        assert_eq!(d.remaining(&clock), 60 * MIN);

        clock.advance(60 * MIN);
        assert!(d.expired(&clock));
        clock.set_wall(clock.wall() - jiff::SignedDuration::from_hours(1));
        assert!(d.expired(&clock), "an expired deadline stays expired");
    }

    #[test]
    fn wall_jump_forward_past_the_budget_expires() {
        let clock = FakeClock::default();
        let d = Deadline::after(&clock, SESSION);
        clock.advance(MIN);

        // A forward jump short of the budget only brings the end closer.
        clock.set_wall(d.started_at() + jiff::SignedDuration::from_mins(60));
        assert!(!d.expired(&clock));
        assert_eq!(d.remaining(&clock), 30 * MIN);

        clock.set_wall(d.started_at() + jiff::SignedDuration::from_mins(90));
        assert_eq!(clock.boot(), MIN, "boot alone would not have expired it");
        assert!(d.expired(&clock));
    }

    /// Once the wall clock has expired a deadline, stepping it back does not revive it.
    #[test]
    fn wall_expiry_is_latched() {
        let clock = FakeClock::default();
        let d = Deadline::after(&clock, SESSION);
        clock.set_wall(d.started_at() + jiff::SignedDuration::from_hours(2));
        assert!(d.expired(&clock));
        clock.set_wall(d.started_at());
        assert!(d.expired(&clock));
        assert_eq!(d.remaining(&clock), Duration::ZERO);
    }

    #[test]
    fn suspend_counts_toward_deadline_but_not_toward_stall() {
        let clock = FakeClock::default();
        let d = Deadline::after(&clock, SESSION);
        let mut stall = StallTimer::new(&clock, 10 * MIN);
        clock.advance(5 * MIN);
        assert!(!stall.stalled(&clock));

        clock.suspend(2 * HOUR);
        assert!(d.expired(&clock), "suspend counts toward the deadline");
        assert!(
            !stall.stalled(&clock),
            "suspend does not count toward a stall"
        );
        assert_eq!(stall.silence(&clock), 5 * MIN);

        // Running time after resume does count.
        clock.advance(5 * MIN);
        assert!(stall.stalled(&clock));

        stall.touch(&clock);
        assert!(!stall.stalled(&clock));
        assert_eq!(stall.remaining(&clock), 10 * MIN);
    }

    #[test]
    fn stall_fires_at_the_grace_not_before() {
        let clock = FakeClock::default();
        let stall = StallTimer::new(&clock, 10 * MIN);
        clock.advance_mono(10 * MIN - Duration::from_nanos(1));
        assert!(!stall.stalled(&clock));
        clock.advance_mono(Duration::from_nanos(1));
        assert!(stall.stalled(&clock));
        assert_eq!(stall.remaining(&clock), Duration::ZERO);
    }

    #[test]
    fn zero_budget_is_expired_at_once() {
        let clock = FakeClock::default();
        assert!(Deadline::after(&clock, Duration::ZERO).expired(&clock));
    }
}
