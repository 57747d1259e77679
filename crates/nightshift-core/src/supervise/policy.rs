//! The restart policy: what the supervisor does when the engine exits. Pure (times are readings
//! of the monotonic clock passed in), so the whole schedule is unit-tested with a `FakeClock`.
//!
//! | engine exit | decision |
//! |---|---|
//! | a halt or verdict code (0, 10–20, 30, 40) | final: the supervisor exits with it |
//! | any exit after the operator asked for a stop | final |
//! | killed by a signal, exit 50 (internal), any other code (a panic's 101) | restart, after a back-off |
//! | the `burst`-th start within `window` dies too | restart storm: alert, exit 19 |

use std::collections::VecDeque;
use std::time::Duration;

use crate::halt::ExitClass;

/// How an engine process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineExit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl EngineExit {
    /// Reads a std exit status.
    pub fn from_status(status: std::process::ExitStatus) -> EngineExit {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => EngineExit::Code(code),
            (None, Some(signal)) => EngineExit::Signal(signal),
            (None, None) => EngineExit::Code(ExitClass::Internal.code()),
        }
    }

    /// Whether this exit is a halt or a verdict (final), rather than a death (restarted).
    pub fn is_final(self) -> bool {
        match self {
            EngineExit::Code(code) => matches!(code, 0 | 10..=20 | 30 | 40),
            EngineExit::Signal(_) => false,
        }
    }
}

impl std::fmt::Display for EngineExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineExit::Code(code) => write!(f, "exit {code}"),
            EngineExit::Signal(signal) => {
                let name = nix::sys::signal::Signal::try_from(*signal)
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_else(|_| format!("signal {signal}"));
                write!(f, "killed by {name}")
            }
        }
    }
}

/// The restart policy's numbers (like systemd's `RestartSec=`, `StartLimitBurst=` and
/// `StartLimitIntervalSec=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The wait before the first restart (and after an engine that lived `healthy_after`).
    pub first_backoff: Duration,
    /// The back-off doubles after each quick death, up to this.
    pub max_backoff: Duration,
    /// An engine that lived this long resets the back-off to `first_backoff`.
    pub healthy_after: Duration,
    /// This many starts within `window` whose last one dies too is a restart storm.
    pub burst: usize,
    pub window: Duration,
}

impl Policy {
    /// The defaults: restart 1 s after the first death (so a killed engine is back within 5 s),
    /// doubling to at most 60 s; 5 starts within 10 minutes that all die is a storm.
    pub const DEFAULT: Policy = Policy {
        first_backoff: Duration::from_secs(1),
        max_backoff: Duration::from_secs(60),
        healthy_after: Duration::from_secs(60),
        burst: 5,
        window: Duration::from_secs(600),
    };
}

impl Default for Policy {
    fn default() -> Self {
        Policy::DEFAULT
    }
}

/// What to do after the engine exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Exit with this code (the engine's halt, or 0 after an operator stop).
    Finish(i32),
    /// Start the engine again after this wait.
    Restart { after: Duration },
    /// Stop restarting: alert, exit 19 (`restart_storm`).
    Storm,
}

/// The restart bookkeeping of one supervisor: start times and the current back-off.
#[derive(Debug, Clone)]
pub struct Restarts {
    policy: Policy,
    /// Start times (mono) within the window, oldest first.
    starts: VecDeque<Duration>,
    last_start: Option<Duration>,
    backoff: Duration,
    restarts: u32,
}

impl Restarts {
    pub fn new(policy: Policy) -> Restarts {
        Restarts {
            policy,
            starts: VecDeque::new(),
            last_start: None,
            backoff: policy.first_backoff,
            restarts: 0,
        }
    }

    /// An engine was started at `now` (mono).
    pub fn started(&mut self, now: Duration) {
        if self.last_start.is_some() {
            self.restarts += 1;
        }
        self.last_start = Some(now);
        self.starts.push_back(now);
    }

    /// Engines started after the first one.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Decides what follows the engine's `exit` at `now` (mono). `stop_requested`: an operator
    /// asked the run to stop, so nothing is restarted.
    pub fn decide(&mut self, exit: EngineExit, stop_requested: bool, now: Duration) -> Decision {
        if exit.is_final() || stop_requested {
            return Decision::Finish(match exit {
                EngineExit::Code(code) if exit.is_final() => code,
                _ => ExitClass::Ok.code(),
            });
        }
        let lived = self
            .last_start
            .map_or(Duration::ZERO, |s| now.saturating_sub(s));
        if lived >= self.policy.healthy_after {
            self.backoff = self.policy.first_backoff;
        }
        while self
            .starts
            .front()
            .is_some_and(|s| now.saturating_sub(*s) > self.policy.window)
        {
            self.starts.pop_front();
        }
        if self.starts.len() >= self.policy.burst {
            return Decision::Storm;
        }
        let after = self.backoff;
        self.backoff = (self.backoff * 2).min(self.policy.max_backoff);
        Decision::Restart { after }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, FakeClock};

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn halts_and_verdicts_are_final_deaths_are_not() {
        for code in [0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 30, 40] {
            assert!(EngineExit::Code(code).is_final(), "{code}");
        }
        for exit in [
            EngineExit::Code(50),
            EngineExit::Code(101),
            EngineExit::Code(1),
            EngineExit::Signal(9),
            EngineExit::Signal(15),
        ] {
            assert!(!exit.is_final(), "{exit}");
        }
        assert_eq!(EngineExit::Signal(9).to_string(), "killed by SIGKILL");
    }

    #[test]
    fn a_final_exit_is_the_supervisors_exit() {
        let clock = FakeClock::default();
        let mut r = Restarts::new(Policy::DEFAULT);
        r.started(clock.mono());
        assert_eq!(
            r.decide(EngineExit::Code(11), false, clock.mono()),
            Decision::Finish(11)
        );
        assert_eq!(
            r.decide(EngineExit::Signal(9), true, clock.mono()),
            Decision::Finish(0),
            "after an operator stop nothing is restarted"
        );
    }

    /// Five engines that die at once: back-off 1, 2, 4, 8 s between them, then a storm.
    #[test]
    fn quick_deaths_back_off_doubling_then_storm_on_the_fifth() {
        let clock = FakeClock::default();
        let mut r = Restarts::new(Policy::DEFAULT);
        let mut waits = Vec::new();
        loop {
            r.started(clock.mono());
            clock.advance(Duration::from_millis(20));
            match r.decide(EngineExit::Signal(9), false, clock.mono()) {
                Decision::Restart { after } => {
                    waits.push(after);
                    clock.advance(after);
                }
                Decision::Storm => break,
                Decision::Finish(code) => panic!("finished with {code}"),
            }
            assert!(waits.len() < 10, "never a loop");
        }
        assert_eq!(waits, [S, 2 * S, 4 * S, 8 * S]);
        assert_eq!(r.restarts(), 4);
    }

    #[test]
    fn backoff_is_capped() {
        let policy = Policy {
            burst: 100,
            window: Duration::from_secs(1),
            ..Policy::DEFAULT
        };
        let clock = FakeClock::default();
        let mut r = Restarts::new(policy);
        let mut last = Duration::ZERO;
        for _ in 0..12 {
            r.started(clock.mono());
            if let Decision::Restart { after } = r.decide(EngineExit::Code(50), false, clock.mono())
            {
                last = after;
                clock.advance(after);
            }
        }
        assert_eq!(last, Policy::DEFAULT.max_backoff);
    }

    /// An engine that lived long enough resets the back-off; starts spread wider than the window
    /// never make a storm.
    #[test]
    fn a_healthy_engine_resets_the_backoff_and_old_starts_leave_the_window() {
        let clock = FakeClock::default();
        let mut r = Restarts::new(Policy::DEFAULT);
        for _ in 0..20 {
            r.started(clock.mono());
            clock.advance(Duration::from_secs(300));
            assert_eq!(
                r.decide(EngineExit::Signal(9), false, clock.mono()),
                Decision::Restart { after: S }
            );
            clock.advance(S);
        }
        assert_eq!(r.restarts(), 19);
    }

    /// Mono time only: a night of suspend does not count as the engine having been healthy.
    #[test]
    fn suspend_does_not_count_as_lifetime() {
        let clock = FakeClock::default();
        let mut r = Restarts::new(Policy::DEFAULT);
        r.started(clock.mono());
        assert_eq!(
            r.decide(EngineExit::Signal(9), false, clock.mono()),
            Decision::Restart { after: S }
        );
        r.started(clock.mono());
        clock.suspend(Duration::from_secs(8 * 3600));
        assert_eq!(
            r.decide(EngineExit::Signal(9), false, clock.mono()),
            Decision::Restart { after: 2 * S }
        );
    }
}
