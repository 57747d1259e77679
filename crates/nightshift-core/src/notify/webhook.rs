//! The webhook channel: one HTTP POST per try (ureq, rustls), bounded by a timeout; 2xx is
//! delivered, anything else is retried by the outbox. Three bodies: `json` (the alert envelope),
//! `slack` (`{"text": …}`) and `ntfy` (plain text with `Title`/`Priority`/`Tags` headers).

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::config::{WebhookConfig, WebhookFormat};

use super::channel::{ChannelReport, ChannelState, redact_url};
use super::outbox::Envelope;

/// The bound on one POST: connect, send, and read the answer.
const TIMEOUT: Duration = Duration::from_secs(15);
/// The bound on the reachability probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a webhook receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

/// The body and headers of `envelope` in `format`.
pub fn payload(format: WebhookFormat, envelope: &Envelope) -> Payload {
    match format {
        WebhookFormat::Json => Payload {
            content_type: "application/json",
            headers: Vec::new(),
            body: serde_json::to_string(envelope).unwrap_or_default(),
        },
        WebhookFormat::Slack => {
            let mut text = format!(
                "*nightshift* ({}): {}",
                envelope.kind.as_str(),
                envelope.summary
            );
            if let Some(detail) = &envelope.detail {
                text.push_str(&format!("\n```\n{detail}\n```"));
            }
            Payload {
                content_type: "application/json",
                headers: Vec::new(),
                body: serde_json::json!({ "text": text }).to_string(),
            }
        }
        WebhookFormat::Ntfy => {
            let priority = match envelope.kind.urgency() {
                3 => "5",
                2 => "4",
                _ => "3",
            };
            let mut body = envelope.summary.clone();
            if let Some(detail) = &envelope.detail {
                body.push_str("\n\n");
                body.push_str(detail);
            }
            Payload {
                content_type: "text/plain; charset=utf-8",
                headers: vec![
                    (
                        "Title",
                        header_text(&format!("nightshift: {}", envelope.summary)),
                    ),
                    ("Priority", priority.into()),
                    ("Tags", format!("nightshift,{}", envelope.kind.as_str())),
                ],
                body,
            }
        }
    }
}

/// A header value: visible ASCII and spaces only (others become `?`), at most 200 characters.
fn header_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' '..='~' => c,
            '\t' | '\n' | '\r' => ' ',
            _ => '?',
        })
        .take(200)
        .collect()
}

/// One POST. `Ok("HTTP 200")` on a 2xx answer.
pub(super) fn send(hook: &WebhookConfig, envelope: &Envelope) -> Result<String, String> {
    let payload = payload(hook.format, envelope);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(TIMEOUT))
        .http_status_as_error(false)
        .user_agent(format!("nightshift/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent
        .post(&hook.url)
        .header("Content-Type", payload.content_type);
    for (name, value) in &payload.headers {
        request = request.header(*name, value);
    }
    match request.send(payload.body.as_bytes()) {
        Ok(response) => {
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                Ok(format!("HTTP {status}"))
            } else {
                Err(format!("HTTP {status}"))
            }
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Live when a TCP connection to the URL's host and port opens within 2 s.
pub(super) fn probe(hook: &WebhookConfig) -> ChannelReport {
    let Some((scheme, rest)) = hook.url.split_once("://") else {
        return ChannelReport::new(ChannelState::Inert, "the url has no scheme");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let default_port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse::<u16>() {
                Ok(port) => (host, port),
                Err(_) => (authority, default_port),
            }
        }
        _ => (authority, default_port),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let target = redact_url(&hook.url);
    let addrs = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(e) => {
            return ChannelReport::new(
                ChannelState::Inert,
                format!("unreachable: cannot resolve `{host}`: {e}"),
            );
        }
    };
    let mut last = String::from("no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) {
            Ok(_) => {
                return ChannelReport::new(
                    ChannelState::Live,
                    format!("{target} accepts connections ({addr})"),
                );
            }
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    ChannelReport::new(ChannelState::Inert, format!("unreachable: {last}"))
}
