use super::*;

fn spec(dir: &std::path::Path, script: &str, timeout: Duration) -> ProcessSpec {
    ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), script.into()],
        cwd: dir.to_owned(),
        env: vec![("GREETING".into(), "hi".into())],
        timeout,
        kill_grace: Duration::from_millis(200),
        log: dir.join("out.log"),
        tail_bytes: 8,
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
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("bg.pid");
    let script = format!(
        "sleep 600 >/dev/null 2>&1 & echo $! > {}; exit 0",
        pidfile.display()
    );
    let end = run(&spec(dir.path(), &script, Duration::from_secs(60))).unwrap();
    assert_eq!(end.outcome, Outcome::Completed);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // killpg(SIGKILL) was sent before `run` returned; the zombie is reaped by init or us, so
    // the process must no longer be running (a zombie has state Z).
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or("gone");
    assert!(
        state == "gone" || state == "Z" || state == "X",
        "background child still alive: {stat}"
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
