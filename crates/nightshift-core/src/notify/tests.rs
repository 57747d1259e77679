use std::path::Path;

use super::*;

#[test]
fn backoff_doubles_from_one_second_and_is_capped() {
    let secs: Vec<u64> = (1..=9).map(|t| outbox::backoff(t).as_secs()).collect();
    assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
}

#[test]
fn webhook_names_leave_the_secret_path_out() {
    assert_eq!(
        channel::redact_url("https://hooks.slack.com/services/T0/B0/XYZ"),
        "https://hooks.slack.com/…"
    );
    assert_eq!(
        channel::redact_url("http://127.0.0.1:9/"),
        "http://127.0.0.1:9"
    );
    assert_eq!(
        channel::redact_url("https://user:pw@ntfy.sh/topic"),
        "https://ntfy.sh/…"
    );
}

fn envelope(kind: AlertKind, detail: Option<&str>) -> outbox::Envelope {
    let alert = Alert {
        kind,
        summary: "paused until 03:10: rate_limited — ü".into(),
        detail: detail.map(str::to_owned),
        run_id: Some("r1".into()),
        item: Some("one".into()),
    };
    outbox::Envelope::new(
        &alert,
        "2026-01-01T00:00:00Z".into(),
        "id1".into(),
        Path::new("/repo"),
    )
}

#[test]
fn the_three_webhook_payloads_are_pinned() {
    use crate::config::WebhookFormat;
    let env = envelope(AlertKind::Paused, Some("line 1\nline 2"));
    let json = payload(WebhookFormat::Json, &env);
    assert_eq!(json.content_type, "application/json");
    let value: serde_json::Value = serde_json::from_str(&json.body).unwrap_or_default();
    assert_eq!(
        value,
        serde_json::json!({
            "version": 1, "id": "id1", "kind": "paused",
            "summary": "paused until 03:10: rate_limited — ü", "detail": "line 1\nline 2",
            "run_id": "r1", "item": "one", "raised_at": "2026-01-01T00:00:00Z", "repo": "/repo",
        })
    );
    let slack = payload(WebhookFormat::Slack, &env);
    assert_eq!(
        slack.body,
        r#"{"text":"*nightshift* (paused): paused until 03:10: rate_limited — ü\n```\nline 1\nline 2\n```"}"#
    );
    let ntfy = payload(WebhookFormat::Ntfy, &env);
    assert_eq!(ntfy.content_type, "text/plain; charset=utf-8");
    assert_eq!(
        ntfy.body,
        "paused until 03:10: rate_limited — ü\n\nline 1\nline 2"
    );
    assert_eq!(
        ntfy.headers,
        vec![
            (
                "Title",
                "nightshift: paused until 03:10: rate_limited ? ?".to_owned()
            ),
            ("Priority", "4".to_owned()),
            ("Tags", "nightshift,paused".to_owned()),
        ]
    );
    let urgent = payload(
        WebhookFormat::Ntfy,
        &envelope(AlertKind::HumanRequired, None),
    );
    assert_eq!(urgent.headers[1], ("Priority", "5".to_owned()));
    assert_eq!(urgent.body, "paused until 03:10: rate_limited — ü");
}

#[test]
fn a_raised_alert_waits_in_the_outbox_until_a_deliverer_sends_it()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path());
    std::fs::create_dir_all(ws.dir())?;
    let got = dir.path().join("got.json");
    let notify = NotifyConfig {
        desktop: false,
        webhooks: Vec::new(),
        commands: vec![
            crate::config::CommandChannelConfig {
                argv: vec!["sh".into(), "-c".into(), format!("cat > {}", got.display())],
                timeout: std::time::Duration::from_secs(30),
            },
            // Not on PATH: inert, so never queued.
            crate::config::CommandChannelConfig {
                argv: vec!["no-such-notifier-xyz".into()],
                timeout: std::time::Duration::from_secs(30),
            },
        ],
    };
    let clock = crate::clock::SystemClock;
    // No launcher is registered in unit tests: the entry stays in the outbox.
    raise(
        &ws,
        &clock,
        &notify,
        &Alert::new(AlertKind::NoShip, "nothing shipped for 6h"),
    );
    let attention_text = std::fs::read_to_string(ws.dir().join("ATTENTION"))?;
    assert!(
        attention_text.ends_with("  nothing shipped for 6h\n"),
        "{attention_text}"
    );
    let entries: Vec<_> = std::fs::read_dir(outbox_dir(&ws))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(entries.len(), 1);
    let entry: Entry = serde_json::from_slice(&std::fs::read(entries[0].path())?)?;
    assert_eq!(entry.deliveries.len(), 1, "the inert command is not queued");
    assert!(!got.exists());

    let report = deliver(&ws)?;
    assert_eq!(
        report,
        DeliverReport {
            delivered: 1,
            failed: 0,
            tries: 1
        }
    );
    let alert: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&got)?)?;
    assert_eq!(alert["kind"], "no_ship");
    assert_eq!(alert["version"], 1);
    assert!(!entries[0].path().exists(), "a delivered entry is deleted");
    Ok(())
}

#[test]
fn inspect_names_each_channel_and_an_inert_command() {
    let notify = NotifyConfig {
        desktop: false,
        webhooks: vec![crate::config::WebhookConfig {
            url: "http://127.0.0.1:1/secret".into(),
            format: crate::config::WebhookFormat::Json,
        }],
        commands: vec![crate::config::CommandChannelConfig {
            argv: vec!["no-such-notifier-xyz".into()],
            timeout: std::time::Duration::from_secs(1),
        }],
    };
    let reports = inspect(&notify);
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0].name, "webhook http://127.0.0.1:1/…");
    assert_eq!(reports[0].state, ChannelState::Inert, "{reports:?}");
    assert!(
        reports[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("unreachable")
    );
    assert_eq!(reports[1].name, "command no-such-notifier-xyz");
    assert_eq!(reports[1].state, ChannelState::Inert);
    assert_eq!(
        reports[1].reason.as_deref(),
        Some("`no-such-notifier-xyz` is not on PATH")
    );
}
