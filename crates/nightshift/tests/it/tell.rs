//! `nightshift tell`: an operator's message, told while a session runs, is journaled with who and
//! when and reaches the item's next iteration's prompt (a `command` agent reads it from
//! $NIGHTSHIFT_PROMPT_FILE); the morning report shows it.

use std::process::Stdio;

use nightshift_core::store::EventKind;

use crate::harness::*;

#[test]
fn a_message_told_during_a_session_reaches_the_next_iterations_prompt_and_the_report() {
    let repo = Repo::new(&project());
    let HeldFirstIteration {
        ready,
        release,
        prompts: seen,
    } = repo.configure_held_first_iteration();
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
    // A `command` agent takes no input while it runs: the message went in the next prompt.
    assert_eq!(m["delivered"], "prompt", "{m}");
    assert_eq!(m["delivered_to"], "attempt 1 iteration 2", "{m}");
    let report = String::from_utf8_lossy(&repo.run(&["report"]).stdout).into_owned();
    assert!(
        report.contains("(in the prompt of attempt 1 iteration 2, started "),
        "{report}"
    );
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

/// `attach` follows an item's live session, and the next iteration's, then returns when the run
/// finishes; a finished run's sessions print at once.
#[test]
fn attach_follows_the_live_session_across_iterations() {
    use std::io::BufRead;
    let repo = Repo::new(&project());
    let ready = repo.agent_dir.join("ready");
    let release = repo.agent_dir.join("release");
    for fifo in [&ready, &release] {
        nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    let dev = repo.agent_dir.join("dev.sh");
    std::fs::write(
        &dev,
        format!(
            "echo \"hello from iteration $NIGHTSHIFT_ITERATION\"\n\
             if [ \"$NIGHTSHIFT_ITERATION\" = 1 ]; then echo started > {ready}; read line < {release}; exit 0; fi\n\
             mkdir -p done; echo ok > done/$NIGHTSHIFT_ITEM\n",
            ready = ready.display(),
            release = release.display()
        ),
    )
    .unwrap();
    repo.configure(&plan(&repo, &["a"], 2, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
            dev.display()
        ),
        1,
    ));
    let mut run = repo
        .cmd(&["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&ready).unwrap(), "started\n");
    let mut attach = repo
        .cmd(&["attach", "a"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(attach.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // The live session's line arrives while it still runs (it waits on the FIFO).
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains("hello from iteration 1") {
            break;
        }
    }
    std::fs::write(&release, "go\n").unwrap();
    // Then the next iteration's, and attach returns once the run is over.
    seen.extend(lines.map(Result::unwrap));
    assert_eq!(attach.wait().unwrap().code(), Some(0));
    assert_eq!(run.wait().unwrap().code(), Some(10));
    let all = seen.join("\n");
    assert!(all.contains("── a attempt 1 iteration 1"), "{all}");
    assert!(all.contains("── a attempt 1 iteration 2"), "{all}");
    assert!(all.contains("hello from iteration 2"), "{all}");

    // Finished: everything at once; `--raw` as written.
    let out = repo.run(&["attach", "a", "--raw"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let raw = String::from_utf8_lossy(&out.stdout);
    assert!(raw.contains("hello from iteration 1\n"), "{raw}");
}

#[test]
fn attach_renders_a_claude_stream_readably() {
    let line = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Looking."},{"type":"tool_use","name":"Edit","input":{"file_path":"src/lib.rs"}}]}}"#;
    let repo = Repo::new(&project());
    let stream = repo.agent_dir.join("stream.jsonl");
    std::fs::write(
        &stream,
        format!(
            "{line}\n{}\n",
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}"#
        ),
    )
    .unwrap();
    let config = plan(&repo, &["a"], 1, 1).replacen(
        &repo.agent_table(),
        &format!(
            "[agent]\nkind = \"command\"\nformat = \"claude-stream\"\ncommand = [\"sh\", \"-c\", \"cat {}; mkdir -p done; echo ok > done/a\"]\n",
            stream.display()
        ),
        1,
    );
    repo.configure(&config);
    assert_eq!(repo.run(&["run"]).status.code(), Some(10));
    let out = repo.run(&["attach", "a"]);
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(human.contains("  agent: Looking."), "{human}");
    assert!(human.contains("  edit Edit: src/lib.rs"), "{human}");
    assert!(human.contains("  agent: done"), "{human}");
}
