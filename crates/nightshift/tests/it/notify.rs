//! Alerts reach a person (issue 6): a webhook gets the run's alert after the run has exited,
//! on the third try when the first two fail; a command gets the alert JSON on stdin;
//! `nightshift notify test` says per channel what happened; an inert desktop is named.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::*;

/// One HTTP request as the test listener saw it.
struct Request {
    head: String,
    body: String,
}

/// Reads one request (head and `Content-Length` body); `None` for a connection that sent
/// nothing (the reachability probe at run start only connects).
fn read_request(stream: &TcpStream) -> Option<Request> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        head,
        body: String::from_utf8(body).unwrap(),
    })
}

/// Accepts connections until `statuses.len()` requests were answered with those statuses, in
/// order; polls (bounded, 60 s) rather than sleeping for a fixed time.
fn serve(listener: &TcpListener, statuses: &[u16]) -> Vec<Request> {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while seen.len() < statuses.len() {
        assert!(
            Instant::now() < deadline,
            "only {} of {} requests arrived",
            seen.len(),
            statuses.len()
        );
        let (stream, _) = match listener.accept() {
            Ok(conn) => conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => panic!("accept: {e}"),
        };
        stream.set_nonblocking(false).unwrap();
        let Some(request) = read_request(&stream) else {
            continue;
        };
        let status = statuses[seen.len()];
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        seen.push(request);
    }
    seen
}

/// Polls (bounded) until `path` has content.
fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.is_empty()
        {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls (bounded) until the outbox holds no entry.
fn wait_outbox_empty(repo: &Repo) {
    let dir = repo.root.join(".nightshift/outbox");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .map(|e| e.file_name())
                    .collect()
            })
            .unwrap_or_default();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "outbox still holds {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn one_item_plan(repo: &Repo, notify: &str) -> String {
    repo.agent("one", &solves("one"));
    let mut config = plan(repo, &["one"], 1, 1);
    config.push_str(notify);
    config
}

#[test]
fn a_webhook_gets_the_run_finished_alert_on_the_third_try_after_the_run_has_exited() {
    let repo = Repo::new(&project());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    repo.configure(&one_item_plan(
        &repo,
        &format!(
            "\n[notify]\ndesktop = false\n\n[[notify.webhook]]\nurl = \"http://127.0.0.1:{port}/hook/secret-topic\"\nformat = \"json\"\n"
        ),
    ));

    // Nothing answers the webhook while the run goes: it must exit all the same.
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));

    // Only now does the listener answer: 500, 500, then 200.
    let requests = serve(&listener, &[500, 500, 200]);
    for request in &requests {
        assert!(
            request.head.starts_with("POST /hook/secret-topic HTTP/1.1"),
            "{}",
            request.head
        );
        assert!(
            request
                .head
                .to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{}",
            request.head
        );
        assert_eq!(
            request.body, requests[0].body,
            "every try sends the same alert"
        );
    }
    let mut alert: serde_json::Value = serde_json::from_str(&requests[2].body).unwrap();
    let run_id = repo.status_json()["run"]["id"].clone();
    assert_eq!(alert["run_id"], run_id);
    assert_eq!(alert["repo"], repo.root.display().to_string());
    for volatile in ["id", "raised_at", "run_id", "repo"] {
        assert!(alert[volatile].is_string(), "{volatile} missing");
        alert[volatile] = "[redacted]".into();
    }
    assert_eq!(
        alert,
        serde_json::json!({
            "version": 1,
            "id": "[redacted]",
            "kind": "run_finished",
            "summary": "run finished (queue_drained_all_shipped): 1 of 1 shipped, 0 parked",
            "detail": "shipped  one\nhalt: queue_drained_all_shipped (exit 10); `nightshift status` has the rest",
            "run_id": "[redacted]",
            "item": null,
            "raised_at": "[redacted]",
            "repo": "[redacted]",
        })
    );
    wait_outbox_empty(&repo);
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("run finished (queue_drained_all_shipped)"),
        "{attention}"
    );
    assert!(!attention.contains("gave up"), "{attention}");
}

#[test]
fn a_command_channel_gets_the_alert_as_json_on_stdin() {
    let repo = Repo::new(&project());
    let got = repo.home.join("got.json");
    repo.configure(&one_item_plan(
        &repo,
        &format!(
            "\n[notify]\ndesktop = false\n\n[[notify.command]]\nargv = [\"sh\", \"-c\", \"cat > {}.tmp && mv {}.tmp {}\"]\n",
            got.display(),
            got.display(),
            got.display()
        ),
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let alert: serde_json::Value = serde_json::from_str(&wait_for_file(&got)).unwrap();
    assert_eq!(alert["version"], 1);
    assert_eq!(alert["kind"], "run_finished");
    assert_eq!(
        alert["summary"],
        "run finished (queue_drained_all_shipped): 1 of 1 shipped, 0 parked"
    );
    wait_outbox_empty(&repo);
}

#[test]
fn notify_test_says_per_channel_delivered_inert_or_failed() {
    let repo = Repo::new(&project());
    // A port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let got = repo.home.join("test.json");
    repo.configure(&one_item_plan(
        &repo,
        &format!(
            "\n[notify]\ndesktop = true\n\n[[notify.webhook]]\nurl = \"http://127.0.0.1:{closed}/x\"\nformat = \"slack\"\n\n[[notify.command]]\nargv = [\"sh\", \"-c\", \"cat > {}\"]\n",
            got.display()
        ),
    ));
    // The harness clears the environment: no DBUS_SESSION_BUS_ADDRESS, no XDG_RUNTIME_DIR.
    let out = repo.run(&["notify", "test"]);
    assert_eq!(out.status.code(), Some(40), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{stdout}"))
            .to_owned()
    };
    assert!(line("attention").contains("delivered"), "{stdout}");
    let desktop = line("desktop");
    assert!(desktop.contains("inert"), "{stdout}");
    assert!(desktop.contains("no D-Bus session"), "{stdout}");
    let webhook = line(&format!("webhook http://127.0.0.1:{closed}/…"));
    assert!(webhook.contains("failed"), "{stdout}");
    assert!(line("command sh").contains("delivered"), "{stdout}");
    let alert: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&got).unwrap()).unwrap();
    assert_eq!(alert["kind"], "test");
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(attention.contains("nightshift notify test"), "{attention}");
}

#[test]
fn notify_test_exits_0_when_every_channel_delivers() {
    let repo = Repo::new(&project());
    repo.configure(&one_item_plan(
        &repo,
        "\n[notify]\ndesktop = false\n\n[[notify.command]]\nargv = [\"sh\", \"-c\", \"cat >/dev/null\"]\n",
    ));
    let out = repo.run(&["notify", "test"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn run_start_names_an_inert_desktop_channel_on_stderr_and_in_attention() {
    let repo = Repo::new(&project());
    repo.configure(&one_item_plan(&repo, ""));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: notify: channel desktop is inert")
            && stderr.contains("no D-Bus session"),
        "{stderr}"
    );
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert!(
        attention.contains("channel desktop is inert"),
        "{attention}"
    );
    // With every channel inert, nothing is queued: the outbox stays empty.
    wait_outbox_empty(&repo);
}

#[test]
fn an_alert_a_killed_deliverer_left_in_the_outbox_is_sent_when_the_next_run_starts() {
    let repo = Repo::new(&project());
    let got = repo.home.join("left.json");
    repo.configure(&one_item_plan(&repo, "\n[notify]\ndesktop = false\n"));
    // What `raise` wrote before its deliverer was killed: one pending command delivery, one
    // try already spent.
    let outbox = repo.root.join(".nightshift/outbox");
    std::fs::create_dir_all(&outbox).unwrap();
    let entry = serde_json::json!({
        "envelope": {
            "version": 1, "id": "left-1", "kind": "paused", "summary": "left behind",
            "detail": null, "run_id": null, "item": null,
            "raised_at": "2026-01-01T00:00:00Z", "repo": repo.root.display().to_string(),
        },
        "deliveries": [{
            "channel": {
                "type": "command",
                "argv": ["sh", "-c", format!("cat > {0}.tmp && mv {0}.tmp {0}", got.display())],
                "timeout": { "secs": 30, "nanos": 0 },
            },
            "tries": 1, "next_at_ms": 0, "state": "pending", "last_error": "exited 1",
        }],
    });
    std::fs::write(outbox.join("left-1.json"), entry.to_string()).unwrap();

    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let alert: serde_json::Value = serde_json::from_str(&wait_for_file(&got)).unwrap();
    assert_eq!(alert["summary"], "left behind");
    wait_outbox_empty(&repo);
}

#[test]
fn an_engine_stopped_by_an_agent_that_cannot_start_rings_human_required() {
    let repo = Repo::new(&project());
    let got = repo.home.join("stopped.json");
    let config = format!(
        "[agent]\nkind = \"command\"\ncommand = [\"./no-such-agent\"]\n\n[check]\ncommand = \"sh check.sh one\"\n\n\
         [notify]\ndesktop = false\n\n[[notify.command]]\nargv = [\"sh\", \"-c\", \"cat > {0}.tmp && mv {0}.tmp {0}\"]\n\n\
         [[item]]\nid = \"one\"\nprompt = \"p\"\n",
        got.display()
    );
    repo.configure(&config);
    // The quick doctor at `run` start finds `./no-such-agent` at the repository root (so the
    // run starts); the attempt's worktree, where it is run, has no such file (untracked): the
    // engine meets the failure mid-run.
    repo.write("no-such-agent", "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(
        repo.root.join("no-such-agent"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(40), "{}", text(&out));
    let alert: serde_json::Value = serde_json::from_str(&wait_for_file(&got)).unwrap();
    assert_eq!(alert["kind"], "human_required");
    let summary = alert["summary"].as_str().unwrap();
    assert!(
        summary
            .starts_with("run stopped, resumable with `nightshift run`: failed to start the agent"),
        "{summary}"
    );
    wait_outbox_empty(&repo);
}

#[test]
fn a_usage_limit_pause_rings_paused_once_and_the_end_rings_run_finished() {
    let repo = Repo::new(&project());
    let marker = repo.agent_dir.join("limited-once");
    repo.agent(
        "one",
        &format!(
            "when file-missing {m}\ntouch {m}\nusage-limit in=1s\nalways\nwrite done/one <<EOF\nok\nEOF\n",
            m = marker.display()
        ),
    );
    let log = repo.home.join("alerts.jsonl");
    let config = plan(&repo, &["one"], 1, 1)
        .replace("command = [", "format = \"claude-stream\"\ncommand = [")
        + &format!(
            "\n[notify]\ndesktop = false\n\n[[notify.command]]\nargv = [\"sh\", \"-c\", \"(cat; echo) >> {}\"]\n",
            log.display()
        );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    wait_outbox_empty(&repo);
    let mut kinds: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["paused", "run_finished"]);
}

#[test]
fn eighty_percent_of_the_run_budget_rings_budget() {
    let repo = Repo::new(&project());
    let log = repo.home.join("alerts.jsonl");
    // The agent spends 110 weighted tokens of a run limit of 130: past 80 %, under the limit.
    let config = one_item_plan(
        &repo,
        &format!(
            "\n[notify]\ndesktop = false\n\n[[notify.command]]\nargv = [\"sh\", \"-c\", \"(cat; echo) >> {}\"]\n",
            log.display()
        ),
    )
    .replace("[limits]\n", "[limits]\nrun_tokens = 130\n")
    .replace("command = [", "format = \"claude-stream\"\ncommand = [");
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    wait_outbox_empty(&repo);
    let alerts: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let budget: Vec<_> = alerts.iter().filter(|a| a["kind"] == "budget").collect();
    assert_eq!(budget.len(), 1, "{alerts:?}");
    let summary = budget[0]["summary"].as_str().unwrap();
    assert!(summary.starts_with("run budget 85% spent"), "{summary}");
    assert_eq!(budget[0]["item"], "one");
}
