//! `[notify]` and `[alert]`: the channels that reach a person, and when an alert is raised.

use std::time::Duration;

/// Default for `[alert].no_ship_hours`.
pub const DEFAULT_NO_SHIP_HOURS: u32 = 6;
/// Default for `[[notify.command]] timeout`.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// `[notify]`: where alerts go besides `.nightshift/ATTENTION` (which is always written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// A desktop notification (Linux: D-Bus, macOS: `osascript`, Windows: a PowerShell toast).
    pub desktop: bool,
    /// `[[notify.webhook]]`, in file order.
    pub webhooks: Vec<WebhookConfig>,
    /// `[[notify.command]]`, in file order.
    pub commands: Vec<CommandChannelConfig>,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            desktop: true,
            webhooks: Vec::new(),
            commands: Vec::new(),
        }
    }
}

/// One `[[notify.webhook]]`: an HTTP POST per alert.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WebhookConfig {
    /// `http://` or `https://`.
    pub url: String,
    pub format: WebhookFormat,
}

/// The body a webhook receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookFormat {
    /// The alert as a JSON object with a `version` field.
    Json,
    /// `{"text": "…"}` (Slack, Mattermost, Discord's Slack-compatible endpoint, …).
    Slack,
    /// A plain-text body with `Title`, `Priority` and `Tags` headers (ntfy.sh).
    Ntfy,
}

impl WebhookFormat {
    /// Every format, as written in `nightshift.toml`.
    pub const ALL: &'static [(&'static str, WebhookFormat)] = &[
        ("json", WebhookFormat::Json),
        ("slack", WebhookFormat::Slack),
        ("ntfy", WebhookFormat::Ntfy),
    ];

    /// The name used in `nightshift.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookFormat::Json => "json",
            WebhookFormat::Slack => "slack",
            WebhookFormat::Ntfy => "ntfy",
        }
    }
}

/// One `[[notify.command]]`: a program that gets the alert as JSON on stdin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandChannelConfig {
    /// The argv; run from the repository root.
    pub argv: Vec<String>,
    /// Ended (SIGKILL) past this; counts as a failed delivery.
    pub timeout: Duration,
}

/// `[alert]`: when alerts are raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertConfig {
    /// Alert when nothing has shipped for this many hours of a run (0: never).
    pub no_ship_hours: u32,
}

impl Default for AlertConfig {
    fn default() -> Self {
        AlertConfig {
            no_ship_hours: DEFAULT_NO_SHIP_HOURS,
        }
    }
}
