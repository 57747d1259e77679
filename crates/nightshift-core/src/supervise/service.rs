//! `nightshift service install`: a per-user service that resumes a live run after a reboot
//! (`nightshift run --resume-only`: it starts nothing new). A systemd user unit on Linux, a
//! launchd agent on macOS. Pure: this module says what to write; the binary writes it.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Which service manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    /// The one this platform uses.
    pub fn native() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        }
    }
}

/// What to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceFile {
    pub manager: Manager,
    /// The unit or agent name (`nightshift-<hash>`).
    pub name: String,
    pub path: PathBuf,
    pub content: String,
    /// The commands that make it start at boot or login, in order.
    pub enable: Vec<Vec<String>>,
}

/// A short stable name for the repository at `root`.
pub fn repo_hash(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The service for the repository at `root`, running `exe`, for the user whose home is `home`.
pub fn service_file(manager: Manager, home: &Path, exe: &Path, root: &Path) -> ServiceFile {
    let name = format!("nightshift-{}", repo_hash(root));
    match manager {
        Manager::Systemd => {
            let path = home
                .join(".config/systemd/user")
                .join(format!("{name}.service"));
            let exec = [
                exe.display().to_string(),
                "run".into(),
                "-C".into(),
                root.display().to_string(),
                "--resume-only".into(),
            ]
            .iter()
            .map(|a| systemd_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
            let content = format!(
                "# Written by `nightshift service install`: resumes a live nightshift run in\n\
                 # {root} after a reboot (it never starts a new one).\n\
                 [Unit]\n\
                 Description=nightshift: resume the live run in {root}\n\
                 After=network-online.target\n\
                 \n\
                 [Service]\n\
                 Type=simple\n\
                 WorkingDirectory={wd}\n\
                 ExecStart={exec}\n\
                 # The supervisor restarts its engine itself; systemd restarts only a supervisor\n\
                 # that died. A halt (exit 10-20, 30, 40) is final.\n\
                 Restart=on-failure\n\
                 RestartSec=30\n\
                 RestartPreventExitStatus=10 11 12 13 14 15 16 17 18 19 20 30 40\n\
                 \n\
                 [Install]\n\
                 WantedBy=default.target\n",
                root = root.display(),
                wd = systemd_quote(&root.display().to_string()),
            );
            let unit = format!("{name}.service");
            ServiceFile {
                manager,
                name,
                path,
                content,
                enable: vec![
                    vec!["systemctl".into(), "--user".into(), "daemon-reload".into()],
                    vec!["systemctl".into(), "--user".into(), "enable".into(), unit],
                ],
            }
        }
        Manager::Launchd => {
            let label = format!("dev.nightshift.{}", repo_hash(root));
            let path = home
                .join("Library/LaunchAgents")
                .join(format!("{label}.plist"));
            let args = [
                exe.display().to_string(),
                "run".into(),
                "-C".into(),
                root.display().to_string(),
                "--resume-only".into(),
            ]
            .iter()
            .map(|a| format!("    <string>{}</string>\n", xml_escape(a)))
            .collect::<String>();
            let content = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
                 <!-- Written by `nightshift service install`: resumes a live nightshift run after login. -->\n\
                 <plist version=\"1.0\">\n<dict>\n\
                 \x20 <key>Label</key>\n  <string>{label}</string>\n\
                 \x20 <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n\
                 \x20 <key>WorkingDirectory</key>\n  <string>{wd}</string>\n\
                 \x20 <key>RunAtLoad</key>\n  <true/>\n\
                 </dict>\n</plist>\n",
                wd = xml_escape(&root.display().to_string()),
            );
            ServiceFile {
                manager,
                name: label,
                path: path.clone(),
                content,
                enable: vec![vec![
                    "launchctl".into(),
                    "load".into(),
                    "-w".into(),
                    path.display().to_string(),
                ]],
            }
        }
    }
}

/// Quotes one word for a systemd command line (double quotes when it has spaces or quotes).
fn systemd_quote(word: &str) -> String {
    if !word.is_empty()
        && !word
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | '%' | '$'))
    {
        return word.to_owned();
    }
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_unit_resumes_the_repository_and_never_restarts_a_halt() {
        let f = service_file(
            Manager::Systemd,
            Path::new("/home/u"),
            Path::new("/usr/bin/nightshift"),
            Path::new("/src/my repo"),
        );
        assert!(f.path.starts_with("/home/u/.config/systemd/user"));
        assert!(f.name.starts_with("nightshift-"));
        assert!(
            f.content
                .contains("ExecStart=/usr/bin/nightshift run -C \"/src/my repo\" --resume-only\n")
        );
        assert!(f.content.contains("Restart=on-failure\n"));
        assert!(
            f.content
                .contains("RestartPreventExitStatus=10 11 12 13 14 15 16 17 18 19 20 30 40\n")
        );
        assert_eq!(f.enable[1][2], "enable");
        assert_eq!(repo_hash(Path::new("/a")), repo_hash(Path::new("/a")));
        assert_ne!(repo_hash(Path::new("/a")), repo_hash(Path::new("/b")));
        assert_eq!(systemd_quote("50%$"), "\"50%%$$\"");
    }

    #[test]
    fn launchd_agent_runs_at_login() {
        let f = service_file(
            Manager::Launchd,
            Path::new("/Users/u"),
            Path::new("/opt/nightshift"),
            Path::new("/src/a&b"),
        );
        assert!(f.path.starts_with("/Users/u/Library/LaunchAgents"));
        assert!(f.content.contains("<string>/src/a&amp;b</string>"));
        assert!(f.content.contains("<string>--resume-only</string>"));
        assert!(f.content.contains("<key>RunAtLoad</key>"));
    }
}
