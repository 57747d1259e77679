//! One engine per repository: a second `run` exits 30 at once and names the holder.

use crate::harness::*;

#[test]
fn a_second_run_while_one_holds_the_lock_exits_30_and_names_the_holder() {
    let repo = Repo::new(&project());
    let agent = HeldAgent::configure(&repo, "held");
    let mut first = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    agent.wait_started();

    let second = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(30), "{}", text(&second));
    assert!(stderr.contains("run_locked"), "{stderr}");
    // The holder is the first run's engine: the child of its supervisor.
    let holder: u32 = stderr
        .split("pid ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("names the holder: {stderr}"));
    let stat = std::fs::read_to_string(format!("/proc/{holder}/stat")).unwrap();
    let ppid: u32 = stat
        .rsplit(") ")
        .next()
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap();
    assert_eq!(ppid, first.id(), "names the holder: {stderr}");
    // The refused supervisor left the live run's health alone.
    let health: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.root.join(".nightshift/health.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(health["supervisor_pid"], first.id());

    agent.release();
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(10));
    assert_eq!(repo.shipped_items(), ["held"]);
}
