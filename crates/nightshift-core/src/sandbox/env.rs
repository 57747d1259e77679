//! The environment a confined process keeps: an allowlist, never the whole user environment.

use crate::config::AgentKind;

/// What every agent and check needs to run a shell and a toolchain.
const BASE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "NIGHTSHIFT_*",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOCACHE",
    "GOMODCACHE",
    "VIRTUAL_ENV",
    "NODE_PATH",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_NOSYSTEM",
];

/// The names (a trailing `*` matches a prefix) an agent of `kind` keeps, plus `extra`
/// (`[agent] env_pass`). A check keeps [`BASE`] plus `extra` (pass `None`).
pub fn env_allowlist(kind: Option<AgentKind>, extra: &[String]) -> Vec<String> {
    let cli: &[&str] = match kind {
        Some(AgentKind::Claude) => &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "CLAUDE_CODE_*",
            "CLAUDE_CONFIG_DIR",
        ],
        Some(AgentKind::Codex) => &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"],
        Some(AgentKind::Gemini) => &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_GENAI_USE_VERTEXAI",
        ],
        Some(AgentKind::Aider) => &[
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "AIDER_*",
        ],
        Some(AgentKind::Command) | None => &[],
    };
    BASE.iter()
        .chain(cli)
        .map(|s| (*s).to_owned())
        .chain(extra.iter().cloned())
        .collect()
}

/// Never passed, whatever the allowlist says: where the receipt signing key lives, test hooks.
const NEVER: &[&str] = &["NIGHTSHIFT_DATA_DIR", "NIGHTSHIFT_FAILPOINT"];

/// Whether `name` is kept by `allow`.
pub fn keep_env(allow: &[String], name: &str) -> bool {
    !NEVER.contains(&name)
        && allow.iter().any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        })
}

/// The names, present in this environment, that an agent of `kind` will get (for doctor).
pub fn agent_env_names(kind: AgentKind, extra: &[String]) -> Vec<String> {
    let allow = env_allowlist(Some(kind), extra);
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| keep_env(&allow, k))
        .collect();
    names.sort();
    names
}
