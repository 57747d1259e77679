//! One engine per repository: a second `run` exits 30 at once and names the holder.

use std::io::{Read, Write};

use crate::harness::*;

#[test]
fn a_second_run_while_one_holds_the_lock_exits_30_and_names_the_holder() {
    let repo = Repo::new(&project());
    let ready = repo.agent_dir.join("ready");
    let release = repo.agent_dir.join("release");
    for fifo in [&ready, &release] {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    // The agent says "I am running" through one FIFO and waits for "go on" on the other:
    // an explicit handshake, no sleeps.
    let agent = format!(
        "echo started > {ready}; read line < {release}; mkdir -p done; echo ok > done/held",
        ready = ready.display(),
        release = release.display()
    );
    let config = plan(&repo, &["held"], 1, 1).replacen(
        &repo.agent_table(),
        &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
        1,
    );
    repo.configure(&config);
    let mut first = repo
        .cmd(&["run"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();

    let mut line = String::new();
    std::fs::File::open(&ready)
        .unwrap()
        .read_to_string(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");

    let second = repo.run(&["run"]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(30), "{}", text(&second));
    assert!(stderr.contains("run_locked"), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", first.id())),
        "names the holder: {stderr}"
    );

    std::fs::OpenOptions::new()
        .write(true)
        .open(&release)
        .unwrap()
        .write_all(b"go\n")
        .unwrap();
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(10));
    assert_eq!(repo.shipped_items(), ["held"]);
}
