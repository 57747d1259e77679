//! The real agent CLIs under test: where they are, and the environment and CLI-home files that
//! point each at the scripted model server (nothing else: the `[agent]` table stays the default).

use std::path::{Path, PathBuf};

/// One CLI under test.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The row name: `claude-2.1.332`, `codex-0.171.0`, …
    pub name: String,
    /// `[agent] kind`.
    pub kind: &'static str,
    /// The directory holding the executable under its usual name (put first on PATH).
    pub bin_dir: PathBuf,
    /// What `--version` printed.
    pub version: String,
}

/// The pinned versions `.ci/install-agents` installs: (row name, kind, executable).
pub const PINS: &[(&str, &str, &str)] = &[
    ("claude-2.1.332", "claude", "claude"),
    ("claude-2.1.197", "claude", "claude"),
    ("codex-0.171.0", "codex", "codex"),
    ("gemini-0.61.0", "gemini", "gemini"),
    ("aider-0.86.2", "aider", "aider"),
];

fn version_of(exe: &Path) -> Option<String> {
    let out = std::process::Command::new(exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .to_owned()
    })
}

fn on_path(exe: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

/// The CLIs found (in `NIGHTSHIFT_AGENTS_DIR`, else on PATH), and the pinned ones missing.
pub fn discover() -> (Vec<Agent>, Vec<String>) {
    let dir = std::env::var_os("NIGHTSHIFT_AGENTS_DIR").map(PathBuf::from);
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let mut path_kinds = Vec::new();
    for (name, kind, exe) in PINS {
        let in_dir = dir
            .as_ref()
            .map(|d| d.join(name).join("bin"))
            .filter(|b| b.join(exe).is_file());
        let (bin_dir, row) = match in_dir {
            Some(b) => (b, (*name).to_owned()),
            None if dir.is_none() && !path_kinds.contains(kind) => {
                // Without an install dir: whatever version of the CLI is on PATH, once per kind.
                match on_path(exe).and_then(|p| p.parent().map(Path::to_path_buf)) {
                    Some(b) => {
                        path_kinds.push(*kind);
                        (b, format!("{kind} (PATH)"))
                    }
                    None => {
                        missing.push((*name).to_owned());
                        continue;
                    }
                }
            }
            None => {
                if !path_kinds.contains(kind) {
                    missing.push((*name).to_owned());
                }
                continue;
            }
        };
        match version_of(&bin_dir.join(exe)) {
            Some(version) => found.push(Agent {
                name: row,
                kind,
                bin_dir,
                version,
            }),
            None => missing.push(format!(
                "{name} (found in {} but --version failed)",
                bin_dir.display()
            )),
        }
    }
    (found, missing)
}

/// How the scenario wants the CLI to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// An API key (what most CI and most users have).
    ApiKey,
    /// A subscription login (Claude: an OAuth token) where the CLI has one; else an API key.
    Subscription,
}

/// Writes the CLI-home files under `home` and returns the environment that points the CLI at
/// `url`. The `[agent]` table is never touched.
pub fn point_at_server(agent: &Agent, url: &str, home: &Path, auth: Auth) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |k: &str, v: &str| env.push((k.to_owned(), v.to_owned()));
    match agent.kind {
        "claude" => {
            set("ANTHROPIC_BASE_URL", url);
            match auth {
                Auth::ApiKey => set("ANTHROPIC_API_KEY", "sk-ant-conformance"),
                Auth::Subscription => set("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-conformance"),
            }
            // No telemetry or update checks against the real network; one retry of a failed
            // request, not ten (a 401 or 5xx otherwise takes ~3 minutes to surface).
            set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
            set("CLAUDE_CODE_MAX_RETRIES", "1");
            set("DISABLE_AUTOUPDATER", "1");
        }
        "codex" => {
            let codex_home = home.join(".codex");
            let _ = std::fs::create_dir_all(&codex_home);
            // A custom provider; the CLI's own retries kept short so failures surface fast.
            let config = format!(
                "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{url}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 1\nstream_max_retries = 1\nstream_idle_timeout_ms = 600000\n"
            );
            let _ = std::fs::write(codex_home.join("config.toml"), config);
            set("CODEX_HOME", &codex_home.display().to_string());
            set("OPENAI_API_KEY", "sk-conformance");
        }
        "gemini" => {
            let dir = home.join(".gemini");
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(
                dir.join("settings.json"),
                // Two attempts per request, not ten (a 5xx otherwise takes ~5 minutes to surface).
                r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"maxAttempts":2}}"#,
            );
            set("GOOGLE_GEMINI_BASE_URL", url);
            set("GEMINI_API_KEY", "conformance-key");
        }
        "aider" => {
            // aider reads ~/.aider.conf.yml; the key comes from the environment.
            let _ = std::fs::write(
                home.join(".aider.conf.yml"),
                format!(
                    "model: openai/mock-model\nopenai-api-base: {url}/v1\nshow-model-warnings: false\n"
                ),
            );
            set("OPENAI_API_KEY", "sk-conformance");
        }
        _ => {}
    }
    env
}
