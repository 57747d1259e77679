//! The select loop of one supervised process.

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::budget::{Crossing, Guard, Scope};
use super::liveness::Liveness;
use super::{LogLimit, Outcome, ProcessEnd, SessionError, SessionEvent, SessionPacket, hex, sweep};
use crate::agent::{AgentEvent, FinishKind, Finished, RateLimitState, StreamParser};
use crate::clock::{Deadline, TICK};

/// After the process exits, how long its pipes may stay open (held by a leaked descendant)
/// before we stop reading them.
const LEAK_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest stdout line handed to a parser; longer ones are cut (and parse as malformed).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Why nightshift decided to end the process.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    Timeout,
    Stalled,
    Stopped,
    OverBudget(Crossing),
    /// The CLI printed its final result but did not exit within the grace.
    Lingered,
}

/// After a Claude `result` line the process should exit; if it lingers (a background job
/// keeps Claude Code 2.1.332 alive), it is ended after this grace, as completed.
pub(crate) const RESULT_GRACE: Duration = Duration::from_secs(5);

/// How many distinct permission denials a session reports.
const MAX_DENIALS: usize = 8;

/// `text` on one line, cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect();
    if text.chars().count() > max {
        format!("{flat}…")
    } else {
        flat
    }
}

/// The longest line written to a session log; the rest of a longer line is replaced by a note.
const MAX_LOG_LINE: usize = 256 * 1024;

struct Collector {
    log: crate::redact::LineWriter<std::fs::File>,
    hasher: Sha256,
    tail: VecDeque<u8>,
    tail_bytes: usize,
    /// Bytes of the current line written to the log so far.
    line_len: usize,
    limit: Option<LogLimit>,
    /// Output bytes written to the log as its head so far.
    head_written: u64,
    /// The head is full (and its last line finished): output goes to `cut_tail`.
    head_closed: bool,
    /// The latest output past the head, at most `limit.tail` bytes.
    cut_tail: VecDeque<u8>,
    /// Output bytes between the head and `cut_tail` that the log will not have.
    cut: u64,
}

impl Collector {
    fn new(log: std::fs::File, tail_bytes: usize, limit: Option<LogLimit>) -> Collector {
        Collector {
            log: crate::redact::LineWriter::new(log, crate::redact::Redactor::from_env()),
            hasher: Sha256::new(),
            tail: VecDeque::new(),
            tail_bytes,
            line_len: 0,
            limit,
            head_written: 0,
            head_closed: false,
            cut_tail: VecDeque::new(),
            cut: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.tail_bytes);
        self.tail.drain(..excess);
        // The log is best effort: a full disk must not kill supervision.
        let Some(limit) = self.limit else {
            self.log_bounded(bytes);
            return;
        };
        let mut rest = bytes;
        if !self.head_closed {
            let room =
                usize::try_from(limit.head.saturating_sub(self.head_written)).unwrap_or(usize::MAX);
            // Up to the head's size, then on to the end of the line it ends in.
            let take = if rest.len() <= room {
                rest.len()
            } else {
                rest[room..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(rest.len(), |i| room + i + 1)
            };
            let (head, after) = rest.split_at(take);
            self.log_bounded(head);
            self.head_written += head.len() as u64;
            rest = after;
            if self.head_written >= limit.head && self.line_len == 0 {
                self.head_closed = true;
            }
        }
        if rest.is_empty() {
            return;
        }
        self.cut_tail.extend(rest);
        let excess = self.cut_tail.len().saturating_sub(limit.tail);
        self.cut_tail.drain(..excess);
        self.cut += excess as u64;
    }

    /// Writes what a capped log keeps of the end: the note where output was cut (if it was),
    /// then the tail from the start of a line.
    fn finish(&mut self) {
        if self.limit.is_none() || self.cut_tail.is_empty() {
            return;
        }
        let mut tail: Vec<u8> = std::mem::take(&mut self.cut_tail).into();
        if self.cut > 0 {
            let from = tail
                .iter()
                .position(|b| *b == b'\n')
                .map_or(tail.len(), |i| i + 1);
            self.cut += from as u64;
            tail.drain(..from);
            let head_end = if self.line_len > 0 { "\n" } else { "" };
            let note = format!(
                "{head_end}[nightshift: {} bytes of output cut here; the log keeps the first {} and the last {} bytes]\n",
                self.cut,
                self.head_written,
                tail.len()
            );
            let _ = self.log.write_all(note.as_bytes());
            self.line_len = 0;
        }
        self.log_bounded(&tail);
    }

    /// Writes to the log with every line cut at `MAX_LOG_LINE` bytes.
    fn log_bounded(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (line, rest, ends) = match bytes.iter().position(|b| *b == b'\n') {
                Some(i) => (&bytes[..=i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            let room = MAX_LOG_LINE.saturating_sub(self.line_len);
            if line.len() <= room {
                let _ = self.log.write_all(line);
            } else {
                let _ = self.log.write_all(&line[..room]);
                if self.line_len <= MAX_LOG_LINE {
                    let _ = self.log.write_all(b" [nightshift: line cut in this log]");
                }
                if ends {
                    let _ = self.log.write_all(b"\n");
                }
            }
            self.line_len = if ends { 0 } else { self.line_len + line.len() };
            bytes = rest;
        }
    }
}

/// What the parsed stream has told us so far.
#[derive(Default)]
struct StreamState {
    line: Vec<u8>,
    /// The parser read an event of the CLI's own from its stream (not a malformed or unknown
    /// line): the CLI is past its start-up (see `Liveness`).
    spoke: bool,
    finish: Option<Finished>,
    rejected_resets_at: Option<Option<i64>>,
    /// Tool calls the CLI refused for want of permission: `tool target`.
    denials: Vec<String>,
    /// The session id the CLI last reported.
    agent_session: Option<String>,
    /// A final result line arrived (Claude's `result`): the session is over.
    final_result: bool,
    /// Messages the CLI echoed back from its live stdin, not yet matched.
    accepted: Vec<String>,
}

pub(super) async fn supervise(
    packet: SessionPacket,
    on_event: &mut dyn FnMut(SessionEvent),
) -> Result<ProcessEnd, SessionError> {
    let SessionPacket {
        spec,
        mut parser,
        stall_grace,
        budget,
        enforce_budget,
        log_stall,
        clock,
        usage_log_dir,
        live_input,
    } = packet;
    // Never truncate an earlier log (a session re-run after a crash keeps the first one).
    let log = std::os::unix::fs::OpenOptionsExt::mode(&mut std::fs::OpenOptions::new(), 0o600)
        .append(true)
        .create(true)
        .open(&spec.log)
        .map_err(|source| SessionError::Log {
            path: spec.log.clone(),
            source,
        })?;
    let mut sink = Collector::new(log, spec.tail_bytes, spec.log_limit);
    let started = Instant::now();
    let Some((program, args)) = spec.argv.split_first() else {
        return Ok(spawn_failed(started, "empty command".into()));
    };
    let stdin = match &spec.stdin {
        _ if live_input.is_some() => Stdio::piped(),
        None => Stdio::null(),
        Some(path) => match std::fs::File::open(path) {
            Ok(file) => Stdio::from(file),
            Err(err) => {
                let why = format!("open its stdin {}: {err}", path.display());
                sink.push(format!("nightshift: could not start {program}: {why}\n").as_bytes());
                return Ok(spawn_failed(started, why));
            }
        },
    };
    let mut cmd = tokio::process::Command::new(program);
    if let Some(allow) = &spec.env_allow {
        cmd.env_clear().envs(std::env::vars_os().filter(|(k, _)| {
            k.to_str()
                .is_some_and(|k| crate::agent::adapter::env_allowed(allow, k))
        }));
    }
    cmd.args(args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // The confinement helper arms its own death signal (and checks the engine is still its
    // parent, sandbox/linux.rs): without a `pre_exec` step the spawn is a `posix_spawn`, not a
    // fork of the engine's whole address space (decision 106). Anything else gets one here.
    if crate::sandbox::helper().is_none_or(|helper| std::path::Path::new(program) != helper) {
        os::harden(&mut cmd);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            sink.push(format!("nightshift: could not start {program}: {err}\n").as_bytes());
            return Ok(spawn_failed(started, format!("{program}: {err}")));
        }
    };
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let mut live = live_input
        .zip(child.stdin.take())
        .map(|(input, pipe)| super::live::LiveStdin::start(input, pipe));
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; 64 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];

    if let Some(p) = parser.as_mut() {
        p.set_now(clock.wall().as_second());
    }
    let deadline = Deadline::after(clock.as_ref(), spec.timeout);
    let mut stall = stall_grace.map(|grace| Liveness::new(clock.as_ref(), grace));
    let mut guard = Guard::new(budget);
    // Enforced, a run-scope trip in any session sharing the run's ledger ends this one too.
    let mut run_trip = guard
        .ledger()
        .filter(|_| enforce_budget)
        .map(|l| l.watch_trip());
    let mut stream = StreamState::default();
    let mut usage_log = usage_log_dir.map(UsageLog::new);
    // When the stream's final result arrived (the session is over; the process should exit).
    let mut result_at: Option<Duration> = None;
    let mut files_seen = stall
        .as_ref()
        .map(|_| sweep::newest_mtime(&spec.cwd))
        .unwrap_or(std::time::SystemTime::UNIX_EPOCH);

    let tick = tokio::time::sleep(first_tick(&deadline, stall.as_ref(), clock.as_ref()));
    tokio::pin!(tick);
    let kill_at = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(kill_at);
    let leak_at = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(leak_at);
    let mut ending: Option<(Ending, Instant)> = None;
    let mut ended_after = None;
    let mut killed = false;
    let mut status = None;

    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        let mut decided: Option<Ending> = None;
        tokio::select! {
            n = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match n {
                Some(n) => {
                    sink.push(&out_buf[..n]);
                    if let Some(p) = parser.as_mut() {
                        decided = feed(p.as_mut(), &out_buf[..n], &mut stream, &mut guard, enforce_budget, on_event);
                        if let Some(l) = live.as_mut() {
                            l.accepted(std::mem::take(&mut stream.accepted), on_event);
                        }
                        if result_at.is_none() && stream.final_result {
                            // A live stdin is closed at the final result (the CLI then exits),
                            // unless a message is pending: a turn of its own follows.
                            if live.as_mut().is_none_or(|l| l.on_result(clock.boot())) {
                                result_at = Some(clock.boot());
                            } else {
                                stream.final_result = false;
                            }
                        }
                    }
                    // Life is the first parsed event where the CLI has a parser (aider prints
                    // warnings before a start-up that can block for long), else any output.
                    if let Some(s) = stall.as_mut() {
                        if parser.is_none() || stream.spoke {
                            s.output(clock.as_ref());
                        } else {
                            s.activity(clock.as_ref());
                        }
                    }
                }
                None => {
                    stdout = None;
                    if let Some(p) = parser.as_mut() {
                        let line = std::mem::take(&mut stream.line);
                        let mut events = if line.is_empty() { Vec::new() } else { p.feed_line(&line) };
                        events.extend(p.finish());
                        decided = absorb(p.as_ref(), events, &mut stream, &mut guard, enforce_budget, on_event);
                        if let Some(l) = live.as_mut() {
                            l.accepted(std::mem::take(&mut stream.accepted), on_event);
                        }
                    }
                }
            },
            n = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match n {
                Some(n) => {
                    sink.push(&err_buf[..n]);
                    if let Some(s) = stall.as_mut() {
                        if parser.is_none() || stream.spoke {
                            s.output(clock.as_ref());
                        } else {
                            s.activity(clock.as_ref());
                        }
                    }
                }
                None => stderr = None,
            },
            st = child.wait(), if status.is_none() => {
                status = Some(st.map_err(SessionError::Wait)?);
                ended_after = ending.map(|(_, at)| at.elapsed());
                // The process is gone; anything left in its group is a leftover. Sweep it, and
                // give pipes held by escaped descendants a bounded time to close.
                signal_group(pgid, Signal::SIGKILL);
                leak_at.as_mut().reset(tokio::time::Instant::now() + LEAK_TIMEOUT);
            },
            () = &mut tick, if status.is_none() && ending.is_none() => {
                if let Some(l) = live.as_mut() {
                    l.poll(on_event);
                    if l.gave_up(clock.boot()) {
                        stream.final_result = true;
                        result_at.get_or_insert(clock.boot());
                    }
                }
                if let (Some(log), Some(p), Some(id)) =
                    (usage_log.as_mut(), parser.as_mut(), stream.agent_session.as_deref())
                {
                    for line in log.read_new(id, clock.boot()) {
                        let events = p.live_usage(&line);
                        decided = decided.or(absorb(p.as_ref(), events, &mut stream, &mut guard, enforce_budget, on_event));
                    }
                }
                // After a freeze (the engine SIGSTOPped, a suspended machine) the timers and the
                // child's exit are ready at once, and `select!` picks at random: a child that
                // has already exited did not time out or stall. Its exit is taken here, and its
                // output is still read to the end below (issue 13).
                if let Ok(Some(st)) = child.try_wait() {
                    status = Some(st);
                    ended_after = ending.map(|(_, at)| at.elapsed());
                    signal_group(pgid, Signal::SIGKILL);
                    leak_at.as_mut().reset(tokio::time::Instant::now() + LEAK_TIMEOUT);
                } else if decided.is_some() {
                    // A budget crossed mid-turn, seen in the usage log.
                } else if crate::stop::now_requested() {
                    decided = Some(Ending::Stopped);
                } else if result_at.is_some_and(|at| clock.boot().saturating_sub(at) >= RESULT_GRACE) {
                    decided = Some(Ending::Lingered);
                } else if deadline.expired(clock.as_ref()) {
                    decided = Some(Ending::Timeout);
                } else if let Some(s) = stall.as_mut() {
                    // Busy without printing is not hung: CPU time of the process tree counts as
                    // activity, above the rate an idle CLI burns (see liveness::CPU_ACTIVE_TICKS).
                    let ticks = pgid.map(|p| sweep::tree_cpu_ticks(p.as_raw())).unwrap_or(0);
                    s.cpu(ticks, clock.as_ref());
                    // Last, the expensive signal: files changed in the worktree since we last
                    // looked (an agent writing quietly is not hung).
                    if s.stalled(clock.as_ref()) {
                        let newest = sweep::newest_mtime(&spec.cwd);
                        if newest > files_seen {
                            files_seen = newest;
                            // Both are the file system's clock, not the engine's.
                            let ago = std::time::SystemTime::now()
                                .duration_since(newest)
                                .unwrap_or_default();
                            s.files_changed(clock.as_ref(), ago);
                        }
                    }
                    if s.stalled(clock.as_ref()) {
                        on_event(SessionEvent::Stalled { silence: s.silence(clock.as_ref()) });
                        if log_stall {
                            s.rearm(clock.as_ref()); // reported; warn again after another grace
                        } else {
                            decided = Some(Ending::Stalled);
                        }
                    }
                }
                let next = next_tick(&deadline, stall.as_ref(), clock.as_ref());
                tick.as_mut().reset(tokio::time::Instant::now() + next);
            },
            crossing = run_tripped(&mut run_trip), if run_trip.is_some() && ending.is_none() && status.is_none() => {
                // Another session crossed the run's limit: this one ends now, not at its own
                // next event.
                run_trip = None;
                guard.tripped_elsewhere();
                on_event(SessionEvent::BudgetTripped(crossing));
                decided = Some(Ending::OverBudget(crossing));
            },
            () = &mut kill_at, if ending.is_some() && !killed && status.is_none() => {
                killed = true;
                signal_group(pgid, Signal::SIGKILL);
                // Also the child itself, in case it moved to another process group.
                let _ = child.start_kill();
            },
            () = &mut leak_at, if status.is_some() => {
                sink.push(b"\nnightshift: output pipes still held by a descendant after exit; stopped reading\n");
                break;
            },
        }
        if let (Some(why), None, None) = (decided, ending, status.as_ref()) {
            ending = Some((why, Instant::now()));
            signal_group(pgid, Signal::SIGTERM);
            kill_at
                .as_mut()
                .reset(tokio::time::Instant::now() + spec.kill_grace);
        }
    }
    let status = match status {
        Some(st) => st,
        None => child.wait().await.map_err(SessionError::Wait)?,
    };
    sink.finish();
    let totals = parser.as_ref().map(|p| p.totals());
    // A CLI whose stream said nothing about its ending may say it with its exit code.
    if stream.finish.is_none()
        && let (Some(p), Some(code)) = (parser.as_ref(), status.code())
        && code != 0
        && let Some(kind) = p.exit_kind(code)
    {
        stream.finish = Some(Finished {
            kind,
            cost_usd: None,
            turns: None,
            result_usage: None,
        });
    }
    let (outcome, resets_at, fault) = classify(ending.map(|(why, _)| why), &status, &stream);
    Ok(ProcessEnd {
        outcome,
        exit_code: status.code(),
        signal: status.signal(),
        duration: started.elapsed(),
        tail: sink.tail.into_iter().collect(),
        output_sha256: hex(&sink.hasher.finalize()),
        spawn_error: None,
        totals,
        finish: stream.finish,
        agent_session: stream.agent_session,
        resets_at,
        fault,
        tripped: match ending {
            Some((Ending::OverBudget(c), _)) => Some(c),
            _ => None,
        },
        ended_after,
    })
}

/// Splits a chunk into lines for the parser and acts on what they say.
fn feed(
    parser: &mut dyn StreamParser,
    chunk: &[u8],
    stream: &mut StreamState,
    guard: &mut Guard,
    enforce: bool,
    on_event: &mut dyn FnMut(SessionEvent),
) -> Option<Ending> {
    let mut decided = None;
    let mut rest = chunk;
    while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
        let events = if stream.line.is_empty() {
            parser.feed_line(&rest[..pos])
        } else {
            stream.line.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut stream.line);
            parser.feed_line(&line)
        };
        rest = &rest[pos + 1..];
        decided = decided.or(absorb(parser, events, stream, guard, enforce, on_event));
    }
    if stream.line.len() + rest.len() > MAX_LINE {
        stream
            .line
            .extend_from_slice(&rest[..MAX_LINE.saturating_sub(stream.line.len()).min(rest.len())]);
        let line = std::mem::take(&mut stream.line);
        let events = parser.feed_line(&line);
        decided = decided.or(absorb(parser, events, stream, guard, enforce, on_event));
    } else {
        stream.line.extend_from_slice(rest);
    }
    decided
}

/// Records what parsed events say and holds the totals against the budget.
fn absorb(
    parser: &dyn StreamParser,
    events: Vec<AgentEvent>,
    stream: &mut StreamState,
    guard: &mut Guard,
    enforce: bool,
    on_event: &mut dyn FnMut(SessionEvent),
) -> Option<Ending> {
    let mut spent = false;
    for event in events {
        stream.spoke |= !matches!(
            event,
            AgentEvent::Malformed { .. } | AgentEvent::Unknown { .. }
        );
        match event {
            AgentEvent::Usage(_) => spent = true,
            AgentEvent::InputAccepted { text } => stream.accepted.push(text),
            AgentEvent::Finished(f) => {
                spent = true;
                stream.final_result |= parser.ends_on_finish();
                stream.finish = Some(f);
            }
            AgentEvent::SessionStarted { session_id, .. }
                if !session_id.is_empty()
                    && stream.agent_session.as_deref() != Some(session_id.as_str()) =>
            {
                stream.agent_session = Some(session_id.clone());
                on_event(SessionEvent::AgentSession { id: session_id });
            }
            AgentEvent::PermissionDenied { tool, target } => {
                let what = match target {
                    Some(t) => format!("{tool} {}", one_line(&t, 200)),
                    None => tool,
                };
                if stream.denials.len() < MAX_DENIALS && !stream.denials.contains(&what) {
                    stream.denials.push(what);
                }
            }
            AgentEvent::RateLimit {
                state: RateLimitState::Rejected,
                resets_at,
                ..
            } => {
                stream.rejected_resets_at = Some(resets_at);
                on_event(SessionEvent::RateLimited { resets_at });
            }
            _ => {}
        }
    }
    if !spent || guard.is_empty() {
        return None;
    }
    let verdict = guard.look(&parser.totals());
    for crossing in verdict.warned {
        on_event(SessionEvent::BudgetWarned(crossing));
    }
    let tripped = verdict.tripped?;
    on_event(SessionEvent::BudgetTripped(tripped));
    if !enforce {
        return None;
    }
    if tripped.scope == Scope::Run
        && let Some(ledger) = guard.ledger()
    {
        ledger.trip(tripped);
    }
    Some(Ending::OverBudget(tripped))
}

/// Resolves with the run's crossing once a session sharing the ledger tripped it; never
/// without a ledger to watch.
async fn run_tripped(
    watch: &mut Option<tokio::sync::watch::Receiver<Option<Crossing>>>,
) -> Crossing {
    if let Some(rx) = watch.as_mut()
        && let Ok(crossing) = rx.wait_for(Option::is_some).await
        && let Some(crossing) = *crossing
    {
        return crossing;
    }
    // The sender lives in the ledger this session holds: it cannot close while it runs.
    std::future::pending().await
}

/// The outcome, from several signals: our own decision first, then a signal we did not send,
/// then the CLI's structured account, then the exit code.
fn classify(
    ending: Option<Ending>,
    status: &std::process::ExitStatus,
    stream: &StreamState,
) -> (Outcome, Option<i64>, Option<String>) {
    match ending {
        Some(Ending::Timeout) => return (Outcome::Timeout, None, None),
        Some(Ending::Stalled) => return (Outcome::Stalled, None, None),
        Some(Ending::Stopped) => return (Outcome::Stopped, None, None),
        Some(Ending::OverBudget(_)) => return (Outcome::OverBudget, None, None),
        // Ended by us after its result: judged by that result, as if it had exited then.
        Some(Ending::Lingered) => {
            let (outcome, resets_at, fault) = classify_stream(stream, true);
            return (outcome, resets_at, fault);
        }
        None => {}
    }
    if status.signal().is_some() {
        return (Outcome::Crashed, None, None);
    }
    classify_stream(stream, status.success())
}

/// The outcome from the CLI's structured account, then from whether it exited 0.
fn classify_stream(stream: &StreamState, success: bool) -> (Outcome, Option<i64>, Option<String>) {
    match stream.finish.as_ref().map(|f| &f.kind) {
        Some(FinishKind::QuotaExhausted { resets_at }) => {
            let at = resets_at.or(stream.rejected_resets_at.flatten());
            return (Outcome::RateLimited, at, None);
        }
        Some(FinishKind::Transient) => return (Outcome::EnvFault, None, Some("transient".into())),
        Some(FinishKind::Auth) => return (Outcome::EnvFault, None, Some("auth".into())),
        Some(FinishKind::ResumeUnavailable) => {
            return (
                Outcome::EnvFault,
                None,
                Some(crate::agent::RESUME_UNAVAILABLE.into()),
            );
        }
        _ => {}
    }
    if let (Some(resets_at), false) = (stream.rejected_resets_at, success) {
        return (Outcome::RateLimited, resets_at, None);
    }
    let finished_ok = matches!(
        stream.finish.as_ref().map(|f| &f.kind),
        None | Some(FinishKind::Ok)
    );
    if !stream.denials.is_empty() && finished_ok {
        // The CLI says "success", but it was refused what it tried: the user must see why.
        return (
            Outcome::PermissionDenied,
            None,
            Some(stream.denials.join("; ")),
        );
    }
    if success {
        (Outcome::Completed, None, None)
    } else {
        (Outcome::Failed, None, None)
    }
}

/// A CLI's usage log, tailed: found by the session id in its name, then read from where the
/// last read stopped (whole lines only, at most 1 MiB per read).
struct UsageLog {
    dir: std::path::PathBuf,
    file: Option<(std::path::PathBuf, u64)>,
    looked: Option<Duration>,
    partial: Vec<u8>,
}

impl UsageLog {
    const MAX_READ: u64 = 1024 * 1024;

    fn new(dir: std::path::PathBuf) -> UsageLog {
        UsageLog {
            dir,
            file: None,
            looked: None,
            partial: Vec::new(),
        }
    }

    /// Complete lines appended since the last call.
    fn read_new(&mut self, session: &str, now: Duration) -> Vec<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        if self.file.is_none() {
            // Looking costs a directory walk: at most once a second.
            if self
                .looked
                .is_some_and(|at| now.saturating_sub(at) < Duration::from_secs(1))
            {
                return Vec::new();
            }
            self.looked = Some(now);
            self.file = find_usage_log(&self.dir, session).map(|f| (f, 0));
        }
        let Some((path, offset)) = self.file.as_mut() else {
            return Vec::new();
        };
        let Ok(mut f) = std::fs::File::open(&*path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(*offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let n = f.take(Self::MAX_READ).read_to_end(&mut buf).unwrap_or(0);
        *offset += n as u64;
        self.partial.extend_from_slice(&buf[..n.min(buf.len())]);
        let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') else {
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
            }
            return Vec::new();
        };
        let rest = self.partial.split_off(end + 1);
        let lines = std::mem::replace(&mut self.partial, rest);
        lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    }
}

/// `rollout-*<session>.jsonl` under `dir` (Codex: `sessions/YYYY/MM/DD/`), newest day first, at
/// most three levels down and the last few days.
fn find_usage_log(dir: &std::path::Path, session: &str) -> Option<std::path::PathBuf> {
    fn sorted_dirs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v.reverse();
        v
    }
    let suffix = format!("{session}.jsonl");
    let matches = |p: &std::path::Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
    };
    let mut days = 0;
    for year in sorted_dirs(dir).into_iter().filter(|p| p.is_dir()).take(2) {
        for month in sorted_dirs(&year)
            .into_iter()
            .filter(|p| p.is_dir())
            .take(2)
        {
            for day in sorted_dirs(&month).into_iter().filter(|p| p.is_dir()) {
                if let Some(f) = sorted_dirs(&day).into_iter().find(|p| matches(p)) {
                    return Some(f);
                }
                days += 1;
                if days >= 3 {
                    return None;
                }
            }
        }
    }
    None
}

fn first_tick(
    deadline: &Deadline,
    stall: Option<&Liveness>,
    clock: &dyn crate::clock::Clock,
) -> Duration {
    next_tick(deadline, stall, clock)
}

/// The next time anything could expire: the deadline (re-checked at least every TICK, so a
/// suspend is noticed within one tick of waking) or the stall grace.
fn next_tick(
    deadline: &Deadline,
    stall: Option<&Liveness>,
    clock: &dyn crate::clock::Clock,
) -> Duration {
    // At most every 200 ms: an operator's stop is read on the tick.
    let mut next = deadline.next_check(clock).min(Duration::from_millis(200));
    if let Some(s) = stall {
        next = next
            .min(s.remaining(clock).max(Duration::from_millis(10)))
            .min(TICK);
    }
    next.max(Duration::from_millis(1))
}

async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    let pipe = pipe.as_mut()?;
    match pipe.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

fn signal_group(pgid: Option<Pid>, signal: Signal) {
    if let Some(pgid) = pgid {
        // ESRCH (the group is already empty) is the expected, good case.
        let _ = killpg(pgid, signal);
    }
}

fn spawn_failed(started: Instant, error: String) -> ProcessEnd {
    ProcessEnd {
        outcome: Outcome::SpawnFailed,
        exit_code: None,
        signal: None,
        duration: started.elapsed(),
        tail: Vec::new(),
        output_sha256: hex(&Sha256::digest(b"")),
        spawn_error: Some(error),
        totals: None,
        finish: None,
        agent_session: None,
        resets_at: None,
        fault: None,
        tripped: None,
        ended_after: None,
    }
}

#[cfg(target_os = "linux")]
mod os {
    /// Kill the child if the engine dies (PR_SET_PDEATHSIG), so a `kill -9` of the engine does
    /// not leave an agent running unsupervised.
    pub(super) fn harden(cmd: &mut tokio::process::Command) {
        // SAFETY: the closure only calls prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            });
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub(super) fn harden(_cmd: &mut tokio::process::Command) {}
}
