//! Windows: a toast through PowerShell (`Windows.UI.Notifications`). The text is passed in
//! environment variables and XML-escaped by the script, never spliced into it. Inert when
//! neither `powershell.exe` nor `pwsh.exe` is on PATH.

use std::process::Command;
use std::time::Duration;

use super::super::channel::{ChannelReport, ChannelState};
use super::super::command::{on_path, run_bounded};

const SCRIPT: &str = r#"
[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] | Out-Null
[Windows.Data.Xml.Dom.XmlDocument, Windows.Data.Xml.Dom.XmlDocument, ContentType = WindowsRuntime] | Out-Null
$t = [Security.SecurityElement]::Escape($env:NIGHTSHIFT_TITLE)
$b = [Security.SecurityElement]::Escape($env:NIGHTSHIFT_BODY)
$xml = New-Object Windows.Data.Xml.Dom.XmlDocument
$xml.LoadXml("<toast><visual><binding template='ToastGeneric'><text>$t</text><text>$b</text></binding></visual></toast>")
$app = '{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\WindowsPowerShell\v1.0\powershell.exe'
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier($app).Show([Windows.UI.Notifications.ToastNotification]::new($xml))
"#;

fn shell() -> Option<&'static str> {
    ["powershell.exe", "pwsh.exe"]
        .into_iter()
        .find(|exe| on_path(exe).is_some())
}

pub(super) fn check() -> ChannelReport {
    match shell() {
        Some(exe) => ChannelReport::new(ChannelState::Live, format!("a toast via {exe}")),
        None => ChannelReport::new(
            ChannelState::Inert,
            "neither `powershell.exe` nor `pwsh.exe` is on PATH",
        ),
    }
}

pub(super) fn send(
    title: &str,
    body: &str,
    _urgency: u8,
    timeout: Duration,
) -> Result<String, String> {
    let Some(exe) = shell() else {
        return Err("neither `powershell.exe` nor `pwsh.exe` is on PATH".into());
    };
    let mut cmd = Command::new(exe);
    cmd.args(["-NoProfile", "-NonInteractive", "-Command", SCRIPT])
        .env("NIGHTSHIFT_TITLE", title)
        .env("NIGHTSHIFT_BODY", body);
    run_bounded(cmd, None, timeout)
        .map(|()| format!("{exe} toast"))
        .map_err(|e| format!("{exe} {e}"))
}
