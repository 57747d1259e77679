//! `nightshift tell`: an operator's message, told while a session runs, is journaled with who and
//! when and reaches the item's next iteration's prompt (a `command` agent reads it from
//! $NIGHTSHIFT_PROMPT_FILE); the morning report shows it.

use std::process::Stdio;

use nightshift_core::store::EventKind;

use crate::harness::*;

#[test]
fn a_message_told_during_a_session_reaches_the_next_iterations_prompt_and_the_report() {
    let repo = Repo::new(&project());
    let ready = repo.agent_dir.join("ready");
    let release = repo.agent_dir.join("release");
    for fifo in [&ready, &release] {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    let seen = repo.agent_dir.join("prompts");
    // Iteration 1 holds until released and solves nothing; iteration 2 keeps its prompt, solves.
    let dev = repo.agent_dir.join("dev.sh");
    std::fs::write(
        &dev,
        format!(
            "cat \"$NIGHTSHIFT_PROMPT_FILE\" >> {seen}\necho ---- >> {seen}\n\
             if [ \"$NIGHTSHIFT_ITERATION\" = 1 ]; then echo started > {ready}; read line < {release}; exit 0; fi\n\
             mkdir -p done; echo ok > done/$NIGHTSHIFT_ITEM\n",
            seen = seen.display(),
            ready = ready.display(),
            release = release.display()
        ),
    )
    .unwrap();
    let config = plan(&repo, &["a"], 2, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
            dev.display()
        ),
        1,
    );
    repo.configure(&config);
    let mut run = repo
        .cmd(&["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = std::fs::read_to_string(&ready).unwrap();
    assert_eq!(line, "started\n");

    let out = repo.run(&[
        "tell",
        "a",
        "use the blue one, not the red one",
        "--from",
        "alice",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("told a"),
        "{}",
        text(&out)
    );
    std::fs::write(&release, "go\n").unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(10));

    let prompts = std::fs::read_to_string(&seen).unwrap();
    let parts: Vec<&str> = prompts.split("----\n").collect();
    assert_eq!(parts.len(), 3, "two sessions: {prompts}");
    assert!(!parts[0].contains("From the operator"), "{}", parts[0]);
    assert!(parts[1].contains("## From the operator"), "{}", parts[1]);
    assert!(
        parts[1].contains("alice at ") && parts[1].contains(": use the blue one, not the red one"),
        "{}",
        parts[1]
    );

    let told: Vec<(String, String)> = repo
        .store()
        .events_after(0, 10_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::OperatorMessage { item, who, .. } => Some((item, who)),
            _ => None,
        })
        .collect();
    assert_eq!(told, [("a".to_owned(), "alice".to_owned())]);

    let v: serde_json::Value =
        serde_json::from_slice(&repo.run(&["report", "--json"]).stdout).unwrap();
    let m = &v["report"]["items"][0]["messages"][0];
    assert_eq!(m["who"], "alice");
    assert_eq!(m["text"], "use the blue one, not the red one");
    repo.assert_clean_end();
}

#[test]
fn tell_refuses_an_unknown_item_and_an_empty_message() {
    let repo = Repo::new(&project());
    repo.agent("a", &solves("a"));
    repo.configure(&plan(&repo, &["a"], 1, 1));
    let out = repo.run(&["tell", "a", "hi"]);
    assert_eq!(out.status.code(), Some(20), "no run yet: {}", text(&out));
    assert_eq!(repo.run(&["run"]).status.code(), Some(10));
    let out = repo.run(&["tell", "zzz", "hi"]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no such item"),
        "{}",
        text(&out)
    );
    let out = repo.run(&["tell", "a", "  "]);
    assert_eq!(out.status.code(), Some(20), "{}", text(&out));
}
