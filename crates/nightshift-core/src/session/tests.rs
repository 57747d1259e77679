use super::*;
use crate::clock::SystemClock;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::sync::Arc;

fn spec(dir: &std::path::Path, script: &str, timeout: Duration) -> ProcessSpec {
    ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        cwd: dir.to_owned(),
        env: vec![("GREETING".into(), "hi".into())],
        timeout,
        kill_grace: Duration::from_millis(200),
        log: dir.join("out.log"),
        tail_bytes: 8,
        env_allow: None,
        stdin: None,
        log_limit: None,
    }
}

#[test]
fn captures_exit_code_env_output_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let end = run(&spec(
        dir.path(),
        "echo $GREETING; echo oops >&2; exit 3",
        Duration::from_secs(60),
    ))
    .unwrap();
    assert_eq!(end.outcome, Outcome::Failed);
    assert_eq!(end.exit_code, Some(3));
    let log = std::fs::read_to_string(dir.path().join("out.log")).unwrap();
    assert!(
        log.contains("hi\n") && log.contains("oops\n"),
        "log: {log:?}"
    );
    assert!(end.tail.len() <= 8);
    assert_eq!(end.output_sha256, hex(&Sha256::digest(log.as_bytes())));
}

#[test]
fn a_process_past_its_deadline_is_ended_as_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Ignores SIGTERM, so only the SIGKILL after the grace can end it.
    let end = run(&spec(
        dir.path(),
        "trap '' TERM; while :; do sleep 1; done",
        Duration::from_millis(100),
    ))
    .unwrap();
    assert_eq!(end.outcome, Outcome::Timeout);
    assert_eq!(end.signal, Some(9));
}

#[test]
fn leftovers_in_the_process_group_are_swept_after_exit() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("held");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    // The reader sees EOF exactly when the last writer, the leftover process, is dead.
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_path = fifo.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let opened = std::fs::File::open(&reader_path).map(|mut f| f.read_to_end(&mut sink));
        let _ = tx.send(opened.is_ok());
    });
    // The leftover opens the FIFO (blocking until the reader is there), then the session
    // exits leaving it behind in its process group.
    // The shell opens the FIFO itself (so the leftover cannot be killed before holding it),
    // hands it to the leftover, and drops its own copy.
    let script = format!(
        "exec 3> {}; sleep 600 >&3 2>/dev/null & exec 3>&-; exit 0",
        fifo.display()
    );
    let end = run(&spec(dir.path(), &script, Duration::from_secs(60))).unwrap();
    assert_eq!(end.outcome, Outcome::Completed);
    let gone = rx.recv_timeout(Duration::from_secs(60));
    assert_eq!(
        gone,
        Ok(true),
        "the leftover process kept the FIFO open: it was not killed"
    );
}

#[test]
fn a_missing_program_is_spawn_failed_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), "", Duration::from_secs(5));
    s.argv = vec!["/nonexistent/agent-binary".into()];
    let end = run(&s).unwrap();
    assert_eq!(end.outcome, Outcome::SpawnFailed);
    assert!(
        end.spawn_error
            .unwrap()
            .contains("/nonexistent/agent-binary")
    );
}

#[test]
fn a_quiet_agent_that_keeps_writing_files_is_not_stalled() {
    let dir = tempfile::tempdir().unwrap();
    // No output at all for 1.2 s, but a file changes every 50 ms; the grace is 300 ms.
    let script = "i=0; while [ $i -lt 24 ]; do i=$((i+1)); echo $i > work.txt; sleep 0.05; done";
    let mut packet = SessionPacket {
        spec: spec(dir.path(), script, Duration::from_secs(60)),
        parser: None,
        stall_grace: Some(Duration::from_millis(300)),
        budget: Budget::default(),
        enforce_budget: true,
        log_stall: false,
        clock: Arc::new(SystemClock),
        usage_log_dir: None,
        live_input: None,
    };
    packet.spec.tail_bytes = 64;
    let end = run_session(packet, &mut |_| {}).unwrap();
    assert_eq!(end.outcome, Outcome::Completed);
}

#[test]
fn a_silent_idle_agent_is_stalled_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = Vec::new();
    let end = run_session(
        SessionPacket {
            spec: spec(
                dir.path(),
                "echo started; sleep 600",
                Duration::from_secs(60),
            ),
            parser: None,
            stall_grace: Some(Duration::from_millis(200)),
            budget: Budget::default(),
            enforce_budget: true,
            log_stall: false,
            clock: Arc::new(SystemClock),
            usage_log_dir: None,
            live_input: None,
        },
        &mut |e| events.push(e),
    )
    .unwrap();
    assert_eq!(end.outcome, Outcome::Stalled);
    assert!(
        matches!(events.as_slice(), [SessionEvent::Stalled { .. }]),
        "{events:?}"
    );
}

#[test]
fn a_cli_silent_while_it_starts_is_not_stalled_before_its_first_output() {
    let dir = tempfile::tempdir().unwrap();
    // Silent (and idle) for longer than the grace before its first line, as a CLI starting on a
    // loaded machine is; it then works and exits. Before the first output the allowance is four
    // graces (4 s).
    let end = run_session(
        SessionPacket {
            spec: spec(
                dir.path(),
                "sleep 1.5; echo started; exit 0",
                Duration::from_secs(60),
            ),
            parser: None,
            stall_grace: Some(Duration::from_secs(1)),
            budget: Budget::default(),
            enforce_budget: true,
            log_stall: false,
            clock: Arc::new(SystemClock),
            usage_log_dir: None,
            live_input: None,
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(end.outcome, Outcome::Completed);
}

#[test]
fn session_logs_cut_very_long_lines_but_the_hash_covers_everything() {
    let dir = tempfile::tempdir().unwrap();
    // One 600 KB line, then a short one.
    let script = "head -c 600000 /dev/zero | tr '\\0' 'x'; echo; echo after";
    let end = run(&spec(dir.path(), script, Duration::from_secs(60))).unwrap();
    let log = std::fs::read(dir.path().join("out.log")).unwrap();
    assert!(
        log.len() < 300 * 1024,
        "the log line was not cut: {} bytes",
        log.len()
    );
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("[nightshift: line cut in this log]"));
    assert!(
        text.ends_with("after\n"),
        "lines after the long one are kept"
    );
    let mut full = vec![b'x'; 600_000];
    full.extend_from_slice(b"\nafter\n");
    assert_eq!(end.output_sha256, hex(&Sha256::digest(&full)));
}

/// A real capture (vendored under tests/fixtures/agent-streams/real-2026-12).
fn real(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent-streams/real-2026-12")
        .join(name)
}

fn replay(dir: &std::path::Path, capture: &str, exit: i32, parser: &str) -> ProcessEnd {
    let script = format!("cat '{}'; exit {exit}", real(capture).display());
    run_session(
        SessionPacket {
            spec: spec(dir, &script, Duration::from_secs(60)),
            parser: crate::agent::parser_for(parser),
            stall_grace: None,
            budget: Budget::default(),
            enforce_budget: true,
            log_stall: false,
            clock: Arc::new(SystemClock),
            usage_log_dir: None,
            live_input: None,
        },
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn a_success_with_permission_denials_is_permission_denied_with_tool_and_path() {
    let dir = tempfile::tempdir().unwrap();
    // Claude 2.1.332 with no permission flag: exit 0, `subtype: "success"`, Write denied.
    let end = replay(
        dir.path(),
        "claude-2.1.332_write_denied_default.jsonl",
        0,
        "claude",
    );
    assert_eq!(end.outcome, Outcome::PermissionDenied);
    assert_eq!(
        end.fault.as_deref(),
        Some("Write /tmp/scratch/direct/srv/repo/f_1.txt")
    );
    let end = replay(
        dir.path(),
        "claude-2.1.332_hello_bash_denied_default.jsonl",
        0,
        "claude",
    );
    assert_eq!(end.outcome, Outcome::PermissionDenied);
    assert_eq!(end.fault.as_deref(), Some("Bash printf ok > f.txt"));
    // With acceptEdits nothing is denied: completed.
    let end = replay(
        dir.path(),
        "claude-2.1.332_write_acceptEdits.jsonl",
        0,
        "claude",
    );
    assert_eq!(end.outcome, Outcome::Completed);
    // Codex's default read-only sandbox refusing the write.
    let end = replay(
        dir.path(),
        "codex_exec_ship_readonly_sandbox.jsonl",
        0,
        "codex",
    );
    assert_eq!(end.outcome, Outcome::PermissionDenied);
    assert_eq!(
        end.fault.as_deref(),
        Some("command_execution /bin/bash -lc 'printf ok > f_1.txt'")
    );
    assert_eq!(
        replay(dir.path(), "codex_exec_ship.jsonl", 0, "codex").outcome,
        Outcome::Completed
    );
}

#[test]
fn an_allowlisted_environment_hides_the_rest_and_stdin_carries_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("prompt.md");
    std::fs::write(&prompt, "the prompt\n").unwrap();
    let mut s = spec(dir.path(), "cat; env", Duration::from_secs(60));
    s.tail_bytes = 64 * 1024;
    s.env_allow = Some(vec!["HOME".into(), "PATH".into()]);
    s.stdin = Some(prompt);
    let end = run(&s).unwrap();
    let tail = String::from_utf8_lossy(&end.tail).into_owned();
    let (first, env) = tail.split_once('\n').unwrap();
    assert_eq!(first, "the prompt");
    let names: BTreeSet<&str> = env
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    assert!(
        names.contains("GREETING") && names.contains("PATH"),
        "{names:?}"
    );
    // The test runner's environment holds many more (CARGO_*, …); only the allowed ones,
    // the explicit ones and the shell's own are there.
    let shell_own = ["PWD", "OLDPWD", "SHLVL", "_"];
    let extra: Vec<&&str> = names
        .iter()
        .filter(|n| !["HOME", "PATH", "GREETING"].contains(n) && !shell_own.contains(n))
        .collect();
    assert!(extra.is_empty(), "not allowed but passed: {extra:?}");
}

#[test]
fn a_capped_log_keeps_whole_lines_of_the_head_and_the_tail_and_says_what_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 lines of 10 bytes: `line 0000\n` … `line 0999\n`.
    let mut s = spec(
        dir.path(),
        "i=0; while [ $i -lt 1000 ]; do printf 'line %04d\\n' $i; i=$((i+1)); done",
        Duration::from_secs(60),
    );
    s.log_limit = Some(LogLimit { head: 95, tail: 55 });
    let end = run(&s).unwrap();
    assert_eq!(end.outcome, Outcome::Completed);
    let log = std::fs::read_to_string(dir.path().join("out.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    // The head: whole lines to the end of the one the 95th byte is in.
    let head: Vec<String> = (0..10).map(|i| format!("line {i:04}")).collect();
    assert_eq!(lines[..10], head[..], "{log}");
    assert!(
        lines[10].starts_with("[nightshift: ") && lines[10].contains("bytes of output cut here"),
        "{log}"
    );
    // The tail: whole lines only (the partial first one dropped), up to the last.
    let tail: Vec<String> = (995..1000).map(|i| format!("line {i:04}")).collect();
    assert_eq!(lines[11..], tail[..], "{log}");
    // The note's figures add up, and the fingerprint is of all the output.
    assert!(lines[10].contains("9850 bytes"), "{}", lines[10]);
    let full: String = (0..1000).map(|i| format!("line {i:04}\n")).collect();
    assert_eq!(end.output_sha256, hex(&Sha256::digest(full.as_bytes())));
}

#[test]
fn output_that_fits_the_cap_is_logged_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(dir.path(), "printf 'a\\nb\\nc\\n'", Duration::from_secs(60));
    s.log_limit = Some(LogLimit { head: 2, tail: 4 });
    run(&s).unwrap();
    let log = std::fs::read_to_string(dir.path().join("out.log")).unwrap();
    assert_eq!(log, "a\nb\nc\n");
}

#[test]
fn a_gemini_exit_code_without_a_stream_ending_is_classified() {
    let dir = tempfile::tempdir().unwrap();
    // Gemini 0.61.0 with no credentials: a line on stderr, exit 41, no stream.
    let script = format!(
        "cat '{}' >&2; exit 41",
        real("gemini_no_credentials_exit41.stderr.txt").display()
    );
    let packet = |script: &str| SessionPacket {
        spec: spec(dir.path(), script, Duration::from_secs(60)),
        parser: crate::agent::parser_for("gemini"),
        stall_grace: None,
        budget: Budget::default(),
        enforce_budget: true,
        log_stall: false,
        clock: Arc::new(SystemClock),
        usage_log_dir: None,
        live_input: None,
    };
    let end = run_session(packet(&script), &mut |_| {}).unwrap();
    assert_eq!(end.outcome, Outcome::EnvFault);
    assert_eq!(end.fault.as_deref(), Some("auth"));
    // An exit code the table does not know stays a failure.
    let end = run_session(packet("exit 3"), &mut |_| {}).unwrap();
    assert_eq!(end.outcome, Outcome::Failed);
}

#[test]
fn a_resume_the_cli_cannot_find_is_an_environmental_rerun_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    // Claude 2.1.332 resumed after an engine kill -9: the killed process had not written its
    // transcript yet, so the CLI exits 1 with "No conversation found with session ID …".
    let end = replay(
        dir.path(),
        "claude-2.1.332_ns_resume_after_engine_kill_no_conversation.agent.jsonl",
        1,
        "claude",
    );
    assert_eq!(end.outcome, Outcome::EnvFault);
    assert_eq!(end.fault.as_deref(), Some(crate::agent::RESUME_UNAVAILABLE));
    assert!(end.outcome.reruns_iteration(), "no attempt is spent on it");
}

/// A live stdin: the opening message is written at spawn, an operator's message when it
/// comes, the CLI's echo of it is reported delivered, and stdin is closed after the final
/// result so the CLI exits by itself (not ended after the grace).
#[test]
fn a_live_session_gets_its_messages_on_stdin_and_stdin_closes_after_the_result() {
    struct Feed {
        sent: bool,
    }
    impl LiveInput for Feed {
        fn opening(&mut self) -> Vec<u8> {
            b"OPENING\n".to_vec()
        }
        fn poll(&mut self) -> Vec<LiveMessage> {
            if std::mem::replace(&mut self.sent, true) {
                return Vec::new();
            }
            vec![LiveMessage {
                id: 7,
                text: "hello there".into(),
                bytes: b"TELL hello there\n".to_vec(),
            }]
        }
    }
    let dir = tempfile::tempdir().unwrap();
    // A CLI in miniature: it needs the opening line, then the told one (each read blocks
    // until it is written), echoes the message as Claude does, prints its result, and exits
    // only when its stdin ends.
    let script = r#"read first; [ "$first" = OPENING ] || exit 3
read told; [ "$told" = "TELL hello there" ] || exit 4
echo '{"type":"user","isReplay":true,"message":{"role":"user","content":"hello there"}}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}'
while read more; do :; done
exit 0"#;
    let mut events = Vec::new();
    let end = run_session(
        SessionPacket {
            spec: spec(dir.path(), script, Duration::from_secs(60)),
            parser: Some(Box::new(crate::agent::claude::ClaudeParser::new())),
            stall_grace: None,
            budget: Budget::default(),
            enforce_budget: true,
            log_stall: false,
            clock: Arc::new(SystemClock),
            usage_log_dir: None,
            live_input: Some(Box::new(Feed { sent: false })),
        },
        &mut |e| events.push(e),
    )
    .unwrap();
    assert_eq!(end.outcome, Outcome::Completed);
    assert_eq!(
        (end.exit_code, end.signal),
        (Some(0), None),
        "it exited at the end of its stdin, not ended by a signal"
    );
    assert_eq!(
        events,
        [
            SessionEvent::InputWritten { id: 7 },
            SessionEvent::InputDelivered { id: 7 }
        ]
    );
}

/// Two sessions run side by side on one run ledger, each able to spend 60% of the run's token
/// limit. The test hands out their usage events one at a time (each agent prints its next one
/// when the test writes a line to its FIFO) in several orders, and waits for each to be
/// accounted before the next: the run's limit ends both, the one that did not cross it while
/// it waits for its next event, and the run spends no more than its limit plus one event.
#[test]
fn parallel_sessions_on_one_ledger_stop_at_the_run_limit_together() {
    const LIMIT: f64 = 1000.0;
    const EVENT: f64 = 100.0;
    const WAIT: Duration = Duration::from_secs(10);
    // Which session gets the next event; 6 each is 60% of the limit each.
    let orders: [&[usize]; 3] = [
        &[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
        &[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1],
        &[1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0],
    ];
    for order in orders {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Arc::new(RunLedger::new(RunSpend::default()));
        let mut go = Vec::new();
        let mut sessions = Vec::new();
        for n in 0..2 {
            let home = dir.path().join(format!("s{n}"));
            std::fs::create_dir(&home).unwrap();
            let fifo = home.join("go");
            nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
            // Read and write: opening never waits for the agent, and a line written before it
            // reads stays in the pipe.
            go.push(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&fifo)
                    .unwrap(),
            );
            let script = r#"exec 3<'FIFO'
i=0
while read t <&3; do
  i=$((i+1))
  printf '{"type":"assistant","message":{"id":"m%d","role":"assistant","content":[],"usage":{"input_tokens":100,"output_tokens":0}},"session_id":"s"}\n' $i
done"#
                .replace("FIFO", &fifo.display().to_string());
            let seat = ledger.seat();
            let key = seat.key;
            let thread = std::thread::spawn(move || {
                let mut events = Vec::new();
                let end = run_session(
                    SessionPacket {
                        spec: spec(&home, &script, Duration::from_secs(30)),
                        parser: crate::agent::parser_for("claude"),
                        stall_grace: None,
                        budget: Budget {
                            limits: vec![Limit {
                                scope: Scope::Run,
                                metric: Metric::Tokens,
                                hard: LIMIT,
                                baseline: 0.0,
                            }],
                            soft: 0.8,
                            cache_read_weight: 0.1,
                            ledger: Some(seat),
                        },
                        enforce_budget: true,
                        log_stall: false,
                        clock: Arc::new(SystemClock),
                        usage_log_dir: None,
                        live_input: None,
                    },
                    &mut |e| events.push(e),
                )
                .unwrap();
                (end, events)
            });
            sessions.push((key, thread));
        }
        // Whether the sessions judge the run's total: a run at its limit that has not tripped
        // within `WAIT` says they do not, and the events go on (to show what they then spend).
        let mut judged = true;
        for &n in order {
            if ledger.tripped().is_some() {
                break;
            }
            let before = ledger.run_total().tokens;
            std::io::Write::write_all(&mut go[n], b"go\n").unwrap();
            // Accounted; and once the run is at its limit, tripped.
            judged &= ledger.wait_until(WAIT, |total, tripped| {
                total.tokens > before && (total.tokens < LIMIT || tripped.is_some() || !judged)
            });
        }
        let tripped = ledger.tripped();
        if tripped.is_none() {
            // Nothing will end the sessions: their agents end at the end of their input.
            go.clear();
        }
        // Otherwise the input stays open: only the trip can end the session still waiting.
        let mut committed = RunSpend::default();
        let mut ends = Vec::new();
        for (key, thread) in sessions {
            let (end, events) = thread.join().unwrap();
            let spent = end.totals.as_ref().unwrap().usage.weighted(0.1);
            committed.tokens += spent;
            ledger.settle(key, committed);
            ends.push((end, events, spent));
        }
        drop(go);
        let total = ledger.run_total().tokens;
        let what = format!("order {order:?}: run total {total}, tripped {tripped:?}");
        assert!(
            (LIMIT..=LIMIT + EVENT).contains(&total),
            "{what}: the run spent past its limit by more than one event"
        );
        assert_eq!(ledger.live_sessions(), 0);
        assert_eq!(total, ends.iter().map(|(.., s)| s).sum::<f64>(), "{what}");
        for (end, events, spent) in &ends {
            assert_eq!(end.outcome, Outcome::OverBudget, "{what}: spent {spent}");
            let run = end.tripped.map(|c| (c.scope, c.metric, c.limit));
            assert_eq!(run, Some((Scope::Run, Metric::Tokens, LIMIT)), "{what}");
            let trips = events
                .iter()
                .filter(|e| matches!(e, SessionEvent::BudgetTripped(_)))
                .count();
            assert_eq!(trips, 1, "{what}: {events:?}");
        }
        // The soft share (800) is of the run's live total: neither session alone reaches it.
        let warned = ends
            .iter()
            .flat_map(|(_, events, _)| events)
            .any(|e| matches!(e, SessionEvent::BudgetWarned(c) if c.scope == Scope::Run && c.used >= 800.0 && c.used < LIMIT));
        assert!(
            warned,
            "{what}: no session was warned at the run's soft share"
        );
    }
}
