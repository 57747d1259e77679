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
    assert!(
        stderr.contains(&format!("pid {}", first.id())),
        "names the holder: {stderr}"
    );

    agent.release();
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(10));
    assert_eq!(repo.shipped_items(), ["held"]);
}
