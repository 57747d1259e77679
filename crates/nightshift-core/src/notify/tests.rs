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
    assert_eq!(channel::redact_url("http://127.0.0.1:9/"), "http://127.0.0.1:9");
    assert_eq!(
        channel::redact_url("https://user:pw@ntfy.sh/topic"),
        "https://ntfy.sh/…"
    );
}
