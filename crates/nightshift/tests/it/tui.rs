//! `nightshift tui`: frames drawn into ratatui's test backend (`--print-frame`), pinned with
//! insta — the morning review queue of a night with every outcome, and a live run's items.

use std::process::Stdio;

use crate::harness::*;
use crate::report::night;

fn frame(out: &std::process::Output, run_id: &str) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(out));
    let text = String::from_utf8_lossy(&out.stdout).replace(run_id, "<RUN>");
    text.lines()
        .map(|l| l.trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_morning_frame_shows_the_review_queue_with_its_commands() {
    let n = night();
    let out = n.run(&["tui", "--print-frame", "110x32"]);
    let f = frame(&out, &n.run_id());
    assert!(f.contains("morning review"), "{f}");
    assert!(f.contains("nightshift confirm op"), "{f}");
    insta::assert_snapshot!("tui_morning", f);
}

#[test]
fn the_live_frame_shows_items_phases_and_never_takes_the_lock() {
    let repo = Repo::new(&project());
    let ready = repo.agent_dir.join("ready");
    let release = repo.agent_dir.join("release");
    for fifo in [&ready, &release] {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    let agent = format!(
        "echo started > {}; read line < {}; mkdir -p done; echo ok > done/a",
        ready.display(),
        release.display()
    );
    // No desktop channel: whether it is inert depends on the machine, and it would say so.
    repo.configure(&format!(
        "{}\n[notify]\ndesktop = false\n",
        plan(&repo, &["a"], 1, 1).replacen(
            &repo.agent_table(),
            &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
            1,
        )
    ));
    let mut run = repo
        .cmd(&["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&ready).unwrap(), "started\n");
    let out = repo.run(&["tui", "--print-frame", "100x20"]);
    let run_id = repo.status_json()["run"]["id"].as_str().unwrap().to_owned();
    let f = frame(&out, &run_id);
    std::fs::write(&release, "go\n").unwrap();
    assert_eq!(
        run.wait().unwrap().code(),
        Some(10),
        "the run was not disturbed"
    );
    assert!(f.contains("running"), "{f}");
    insta::assert_snapshot!("tui_live", f);
}
