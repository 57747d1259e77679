use super::*;
use crate::clock::SystemClock;
use sha2::{Digest, Sha256};
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
            spec: spec(dir.path(), "sleep 600", Duration::from_secs(60)),
            parser: None,
            stall_grace: Some(Duration::from_millis(200)),
            budget: Budget::default(),
            enforce_budget: true,
            log_stall: false,
            clock: Arc::new(SystemClock),
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
