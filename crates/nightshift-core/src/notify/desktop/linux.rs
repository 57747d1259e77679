//! Linux (and other Unix with a freedesktop session): the `org.freedesktop.Notifications`
//! service on the session bus, through `notify-send` (libnotify) or else `gdbus` (GLib). Inert
//! when there is no session bus to reach, or neither tool is installed.

use std::process::Command;
use std::time::Duration;

use super::super::channel::{ChannelReport, ChannelState};
use super::super::command::{on_path, run_bounded};

pub(super) fn check() -> ChannelReport {
    let address = match session_bus_address() {
        Ok(address) => address,
        Err(reason) => return ChannelReport::new(ChannelState::Inert, reason),
    };
    let reached = match reach(&address) {
        Reach::Connected => format!("D-Bus session at {address}"),
        Reach::Unchecked(why) => {
            return ChannelReport::new(ChannelState::Unchecked, why);
        }
        Reach::Failed(why) => {
            return ChannelReport::new(
                ChannelState::Inert,
                format!("the D-Bus session bus {address} cannot be reached: {why}"),
            );
        }
    };
    match tool() {
        Some(tool) => ChannelReport::new(ChannelState::Live, format!("{reached}, via {tool}")),
        None => ChannelReport::new(
            ChannelState::Inert,
            "neither `notify-send` (libnotify) nor `gdbus` (GLib) is on PATH",
        ),
    }
}

pub(super) fn send(
    title: &str,
    body: &str,
    urgency: u8,
    timeout: Duration,
) -> Result<String, String> {
    match tool() {
        Some("notify-send") => {
            let mut cmd = Command::new("notify-send");
            let level = match urgency {
                3 => "critical",
                2 => "normal",
                _ => "low",
            };
            cmd.args([
                "--app-name=nightshift",
                &format!("--urgency={level}"),
                "--",
                title,
                body,
            ]);
            run_bounded(cmd, None, timeout)
                .map(|()| "notify-send".to_owned())
                .map_err(|e| format!("notify-send {e}"))
        }
        Some(_) => {
            // Notify(app_name, replaces_id, icon, summary, body, actions, hints, timeout)
            let mut cmd = Command::new("gdbus");
            cmd.args([
                "call",
                "--session",
                "--dest=org.freedesktop.Notifications",
                "--object-path=/org/freedesktop/Notifications",
                "--method=org.freedesktop.Notifications.Notify",
                "nightshift",
                "0",
                "",
                &gvariant_string(title),
                &gvariant_string(body),
                "[]",
                &format!("{{'urgency': <byte {}>}}", urgency.saturating_sub(1).min(2)),
                "-1",
            ]);
            run_bounded(cmd, None, timeout)
                .map(|()| "gdbus".to_owned())
                .map_err(|e| format!("gdbus {e}"))
        }
        None => Err("neither `notify-send` nor `gdbus` is on PATH".into()),
    }
}

fn tool() -> Option<&'static str> {
    ["notify-send", "gdbus"]
        .into_iter()
        .find(|tool| on_path(tool).is_some())
}

/// A GVariant text-format string literal.
fn gvariant_string(text: &str) -> String {
    let mut out = String::from("'");
    for c in text.chars() {
        match c {
            '\'' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` (where libdbus and sd-bus look).
fn session_bus_address() -> Result<String, String> {
    if let Some(address) = std::env::var_os("DBUS_SESSION_BUS_ADDRESS")
        && !address.is_empty()
    {
        return Ok(address.to_string_lossy().into_owned());
    }
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR") {
        let bus = std::path::Path::new(&runtime).join("bus");
        if bus.exists() {
            return Ok(format!("unix:path={}", bus.display()));
        }
    }
    Err(
        "no D-Bus session: DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus \
         (a service, cron job or SSH login has no desktop session to notify)"
            .into(),
    )
}

enum Reach {
    Connected,
    Unchecked(String),
    Failed(String),
}

/// Tries each address in turn (`;`-separated), connecting to `unix:path=` and `unix:abstract=`.
fn reach(address: &str) -> Reach {
    let mut last = Reach::Unchecked(format!("no address in `{address}` that can be checked"));
    for one in address.split(';').filter(|a| !a.is_empty()) {
        let Some((transport, params)) = one.split_once(':') else {
            continue;
        };
        let param = |key: &str| {
            params
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == key)
                .map(|(_, v)| unescape(v))
        };
        if transport != "unix" {
            last = Reach::Unchecked(format!(
                "the D-Bus session uses the `{transport}` transport, which is not checked"
            ));
            continue;
        }
        let result = if let Some(path) = param("path") {
            std::os::unix::net::UnixStream::connect(&path).map(drop)
        } else if let Some(name) = param("abstract") {
            connect_abstract(&name)
        } else {
            continue;
        };
        match result {
            Ok(()) => return Reach::Connected,
            Err(e) => last = Reach::Failed(e.to_string()),
        }
    }
    last
}

#[cfg(target_os = "linux")]
fn connect_abstract(name: &str) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    std::os::unix::net::UnixStream::connect_addr(&addr).map(drop)
}

#[cfg(not(target_os = "linux"))]
fn connect_abstract(_name: &str) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "abstract sockets exist only on Linux",
    ))
}

/// D-Bus address values escape bytes as `%xx`.
fn unescape(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = value.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gvariant_strings_are_quoted_and_escaped() {
        assert_eq!(gvariant_string("it's a\\b\nc"), "'it\\'s a\\\\b\\nc'");
    }

    #[test]
    fn a_dead_socket_path_is_a_failure_and_a_live_one_connects() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("bus");
        assert!(matches!(
            reach(&format!("unix:path={}", path.display())),
            Reach::Failed(_)
        ));
        let _listener = std::os::unix::net::UnixListener::bind(&path)?;
        assert!(matches!(
            reach(&format!("unix:path={},guid=abc", path.display())),
            Reach::Connected
        ));
        assert!(matches!(
            reach("tcp:host=localhost,port=1"),
            Reach::Unchecked(_)
        ));
        assert_eq!(unescape("a%2fb"), "a/b");
        Ok(())
    }
}
