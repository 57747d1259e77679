//! The command line of one agent session, per adapter (`[agent] kind`).

use crate::config::{AgentConfig, AgentKind, OutputFormat};

/// What the command line is built from.
pub(super) struct Launch<'a> {
    pub agent: &'a AgentConfig,
    /// The full prompt text (for CLIs that take it as an argument).
    pub prompt: &'a str,
    /// The prompt file (for CLIs that read one).
    pub prompt_file: &'a str,
    /// The CLI session id to use (Claude: chosen up front and journaled before launch).
    pub session_id: &'a str,
    /// Resume this CLI session instead of starting one (a nudge).
    pub resume: Option<&'a str>,
}

/// The argv for a session.
pub(super) fn argv(l: &Launch<'_>) -> Vec<String> {
    let a = l.agent;
    let bin = |default: &str| a.binary.clone().unwrap_or_else(|| default.to_owned());
    let mut argv: Vec<String> = match a.kind {
        AgentKind::Command => a.command.clone(),
        AgentKind::Claude => {
            let mut v = vec![bin("claude"), "-p".into(), l.prompt.into()];
            match l.resume {
                Some(id) => v.extend(["--resume".into(), id.into()]),
                None => v.extend(["--session-id".into(), l.session_id.into()]),
            }
            v.extend([
                "--output-format".into(),
                "stream-json".into(),
                "--verbose".into(),
            ]);
            v
        }
        AgentKind::Codex => {
            let mut v = vec![
                bin("codex"),
                "exec".into(),
                "--json".into(),
                "--skip-git-repo-check".into(),
            ];
            if let Some(thread) = l.resume {
                v.extend(["resume".into(), thread.into()]);
            }
            v
        }
        AgentKind::Gemini => vec![
            bin("gemini"),
            "-p".into(),
            l.prompt.into(),
            "--output-format".into(),
            "stream-json".into(),
            "--yolo".into(),
        ],
        AgentKind::Aider => vec![
            bin("aider"),
            "--message-file".into(),
            l.prompt_file.into(),
            "--yes-always".into(),
            "--no-auto-commits".into(),
        ],
    };
    if let Some(model) = &a.model {
        let flag = match a.kind {
            AgentKind::Codex | AgentKind::Gemini => "-m",
            _ => "--model",
        };
        if a.kind != AgentKind::Command {
            argv.extend([flag.to_owned(), model.clone()]);
        }
    }
    argv.extend(a.args.iter().cloned());
    if a.kind == AgentKind::Codex {
        argv.push(l.prompt.into()); // the prompt is codex's last positional argument
    }
    argv
}

/// Which stream parser reads this agent's stdout, if any.
pub(super) fn parser_name(agent: &AgentConfig) -> Option<&'static str> {
    match (agent.kind, agent.format) {
        (AgentKind::Claude, _) | (AgentKind::Command, OutputFormat::ClaudeStream) => Some("claude"),
        (AgentKind::Codex, _) => Some("codex"),
        (AgentKind::Gemini, _) => Some("gemini"),
        (AgentKind::Aider, _) => Some("aider"),
        (AgentKind::Command, OutputFormat::Text) => None,
    }
}

/// The program the preflight looks for on PATH.
pub(crate) fn program(agent: &AgentConfig) -> Option<String> {
    argv(&Launch {
        agent,
        prompt: "",
        prompt_file: "",
        session_id: "",
        resume: None,
    })
    .into_iter()
    .next()
}

/// A deterministic UUID-shaped session id for one session (so it can be journaled before launch).
pub(super) fn session_uuid(
    run: &str,
    item: &str,
    attempt: u32,
    iteration: u32,
    nudge: u32,
) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{run}/{item}/{attempt}/{iteration}/{nudge}").as_bytes());
    let h = crate::session::hex(&digest[..16]);
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(kind: AgentKind) -> AgentConfig {
        AgentConfig {
            kind,
            command: if kind == AgentKind::Command {
                vec!["sh".into(), "a.sh".into()]
            } else {
                vec![]
            },
            binary: None,
            model: Some("m1".into()),
            args: vec!["--extra".into()],
            format: OutputFormat::Text,
        }
    }

    fn launch(a: &AgentConfig, resume: Option<&str>) -> Vec<String> {
        argv(&Launch {
            agent: a,
            prompt: "do it",
            prompt_file: "/p.md",
            session_id: "sid",
            resume,
        })
    }

    #[test]
    fn each_adapter_builds_its_cli_command_line() {
        assert_eq!(
            launch(&agent(AgentKind::Claude), None),
            [
                "claude",
                "-p",
                "do it",
                "--session-id",
                "sid",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "m1",
                "--extra"
            ]
        );
        assert_eq!(
            launch(&agent(AgentKind::Claude), Some("old")),
            [
                "claude",
                "-p",
                "do it",
                "--resume",
                "old",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "m1",
                "--extra"
            ]
        );
        assert_eq!(
            launch(&agent(AgentKind::Codex), None),
            [
                "codex",
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-m",
                "m1",
                "--extra",
                "do it"
            ]
        );
        assert_eq!(
            launch(&agent(AgentKind::Gemini), None),
            [
                "gemini",
                "-p",
                "do it",
                "--output-format",
                "stream-json",
                "--yolo",
                "-m",
                "m1",
                "--extra"
            ]
        );
        assert_eq!(
            launch(&agent(AgentKind::Aider), None),
            [
                "aider",
                "--message-file",
                "/p.md",
                "--yes-always",
                "--no-auto-commits",
                "--model",
                "m1",
                "--extra"
            ]
        );
        assert_eq!(
            launch(&agent(AgentKind::Command), None),
            ["sh", "a.sh", "--extra"]
        );
        let mut custom = agent(AgentKind::Claude);
        custom.binary = Some("/opt/claude".into());
        assert_eq!(program(&custom).as_deref(), Some("/opt/claude"));
    }

    #[test]
    fn session_ids_are_uuid_shaped_and_distinct() {
        let a = session_uuid("r", "i", 1, 1, 0);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert_ne!(a, session_uuid("r", "i", 1, 2, 0));
        assert_eq!(a, session_uuid("r", "i", 1, 1, 0));
    }
}
