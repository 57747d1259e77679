//! One channel: what it is, whether it can deliver here, and one try at delivering.

use std::path::Path;

use crate::config::{CommandChannelConfig, NotifyConfig, WebhookConfig};

use super::outbox::Envelope;
use super::{command, desktop, webhook};

/// A configured channel, as the outbox stores it (so a deliverer needs no config file).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Channel {
    Desktop,
    Webhook(WebhookConfig),
    Command(CommandChannelConfig),
}

/// Whether a channel can deliver on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelState {
    /// Everything it needs is here.
    Live,
    /// It cannot deliver here; `reason` says why.
    Inert,
    /// Nothing cheap can tell; `reason` says what was not checked.
    Unchecked,
}

/// One channel as `inspect` (doctor, run start) sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChannelReport {
    /// `desktop`, `webhook https://host/…`, `command notify.sh`.
    pub name: String,
    pub state: ChannelState,
    pub reason: Option<String>,
}

/// One channel's result in `nightshift notify test`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    pub name: String,
    pub result: TestResult,
}

/// Delivered (with what answered), inert (why), or failed (why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestResult {
    Delivered(String),
    Inert(String),
    Failed(String),
}

impl ChannelReport {
    pub(super) fn new(state: ChannelState, reason: impl Into<String>) -> ChannelReport {
        ChannelReport {
            name: String::new(),
            state,
            reason: Some(reason.into()),
        }
    }
}

impl Channel {
    /// Every configured channel, desktop first.
    pub fn all(notify: &NotifyConfig) -> Vec<Channel> {
        let mut all = Vec::new();
        if notify.desktop {
            all.push(Channel::Desktop);
        }
        all.extend(notify.webhooks.iter().cloned().map(Channel::Webhook));
        all.extend(notify.commands.iter().cloned().map(Channel::Command));
        all
    }

    /// A name for reports. A webhook's path is left out: it is often the secret (a Slack hook,
    /// an ntfy topic).
    pub fn name(&self) -> String {
        match self {
            Channel::Desktop => "desktop".into(),
            Channel::Webhook(hook) => format!("webhook {}", redact_url(&hook.url)),
            Channel::Command(cmd) => format!(
                "command {}",
                cmd.argv.first().map(String::as_str).unwrap_or_default()
            ),
        }
    }

    /// Local checks only (no network): what `raise` uses to skip inert channels.
    pub fn quick_check(&self) -> ChannelReport {
        match self {
            Channel::Desktop => desktop::check(),
            Channel::Webhook(_) => ChannelReport::new(
                ChannelState::Unchecked,
                "reachability is not probed here; failures are retried and written to ATTENTION",
            ),
            Channel::Command(cmd) => command::check(cmd),
        }
    }

    /// [`Channel::quick_check`], and for a webhook a TCP connect to its host (2 s bound).
    pub fn inspect(&self) -> ChannelReport {
        match self {
            Channel::Webhook(hook) => webhook::probe(hook),
            other => other.quick_check(),
        }
    }

    /// One try. `Ok` says what answered; `Err` why it did not deliver.
    pub fn send(&self, envelope: &Envelope, root: &Path) -> Result<String, String> {
        match self {
            Channel::Desktop => desktop::send(envelope),
            Channel::Webhook(hook) => webhook::send(hook, envelope),
            Channel::Command(cmd) => command::send(cmd, envelope, root),
        }
    }

    /// How many tries before a delivery is given up (and written to ATTENTION).
    pub fn max_tries(&self) -> u32 {
        match self {
            Channel::Webhook(_) => 8,
            Channel::Command(_) => 3,
            Channel::Desktop => 2,
        }
    }
}

/// `https://host:port/…` without the path.
pub(super) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(invalid url)".into();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = rest[..end].rsplit('@').next().unwrap_or_default();
    let tail = if end < rest.len() && rest.len() > end + 1 {
        "/…"
    } else {
        ""
    };
    format!("{scheme}://{host}{tail}")
}
