//! The raw shape of `nightshift.toml` as serde reads it, and its validation into [`Config`].

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::{
    AgentConfig, AgentKind, BudgetLimits, BudgetMode, CheckConfig, Config, DEFAULT_CHECK_TIMEOUT,
    DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_REVIEW_CYCLES,
    DEFAULT_NO_PROGRESS_AFTER, Done, GuardConfig, IntegrateConfig, ItemConfig, Limits, OnTimeout,
    OutputFormat, ReviewConfig, ReviewSetup, ReviewWhen, SessionLimits, SourceError, Strategy,
    TriageAction, TriageConfig, parse_duration,
};
use super::{
    AlertConfig, CommandChannelConfig, DEFAULT_COMMAND_TIMEOUT, DEFAULT_NO_SHIP_HOURS,
    NotifyConfig, WebhookConfig, WebhookFormat,
};
use crate::check::results::{Format, FormatChoice};
use crate::plan::{ID_HELP, validate_id};

const EXAMPLE_HELP: &str = "see `nightshift init` for a commented example";
const AGENT_COMMAND_HELP: &str = "set `command = [\"program\", \"arg\", …]` under [agent]: \
     the argv run in the attempt's worktree";
const PLAN_HELP: &str = "give the path of a Markdown checklist relative to the repository root, \
     e.g. `plan = \"TODO.md\"`";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    plan: Option<Spanned<String>>,
    agent: Option<Spanned<RawAgent>>,
    check: Option<RawCheck>,
    limits: Option<RawLimits>,
    integrate: Option<RawIntegrate>,
    worktree: Option<RawWorktree>,
    guards: Option<RawGuards>,
    gates: Option<std::collections::BTreeMap<Spanned<String>, Spanned<String>>>,
    run: Option<RawRun>,
    review: Option<RawReview>,
    triage: Option<RawTriage>,
    item: Option<Vec<Spanned<RawItem>>>,
    notify: Option<RawNotify>,
    alert: Option<RawAlert>,
    sandbox: Option<RawSandbox>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    require: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotify {
    desktop: Option<bool>,
    webhook: Option<Vec<Spanned<RawWebhook>>>,
    command: Option<Vec<Spanned<RawNotifyCommand>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebhook {
    url: Option<Spanned<String>>,
    format: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotifyCommand {
    argv: Option<Spanned<Vec<String>>>,
    timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlert {
    no_ship_hours: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    prevent_sleep: Option<bool>,
    max_parallel: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    when: Option<Spanned<String>>,
    risky_paths: Option<Vec<Spanned<String>>>,
    risky_lines: Option<Spanned<u32>>,
    max_review_cycles: Option<Spanned<u32>>,
    on_timeout: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTriage {
    mechanical: Option<Spanned<String>>,
    false_positive: Option<Spanned<String>>,
    real_doubt: Option<Spanned<String>>,
    no_safe_path: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorktree {
    seed: Option<Vec<Spanned<String>>>,
    env: Option<std::collections::BTreeMap<Spanned<String>, Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    kind: Option<Spanned<String>>,
    command: Option<Spanned<Vec<String>>>,
    binary: Option<Spanned<String>>,
    model: Option<Spanned<String>>,
    args: Option<Spanned<Vec<String>>>,
    format: Option<Spanned<String>>,
    permission_mode: Option<Spanned<String>>,
    allowed_tools: Option<Spanned<Vec<String>>>,
    is_sandbox: Option<Spanned<bool>>,
    env_pass: Option<Spanned<Vec<String>>>,
    /// `[agent.review]`: the reviewer's own agent settings.
    review: Option<Box<Spanned<RawAgent>>>,
    /// `[agent.second_opinion]`: the reviewer asked when a review leaves real doubt.
    second_opinion: Option<Box<Spanned<RawAgent>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    command: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    format: Option<Spanned<String>>,
    results: Option<Spanned<String>>,
    no_progress_after: Option<Spanned<u32>>,
    network: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuards {
    blocked_paths: Option<Vec<Spanned<String>>>,
    test_paths: Option<Vec<Spanned<String>>>,
    protect_tests: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_iterations: Option<Spanned<u32>>,
    max_attempts: Option<Spanned<u32>>,
    session_timeout: Option<Spanned<String>>,
    stall_grace: Option<Spanned<String>>,
    stall_nudges: Option<Spanned<u32>>,
    kill_grace: Option<Spanned<String>>,
    fault_backoff: Option<Spanned<String>>,
    session_tokens: Option<Spanned<u64>>,
    session_turns: Option<Spanned<u32>>,
    session_usd: Option<Spanned<f64>>,
    item_tokens: Option<Spanned<u64>>,
    run_tokens: Option<Spanned<u64>>,
    run_usd: Option<Spanned<f64>>,
    budget_mode: Option<Spanned<String>>,
    budget_soft: Option<Spanned<f64>>,
    cache_read_weight: Option<Spanned<f64>>,
    rate_limit_max_wait: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIntegrate {
    target: Option<Spanned<String>>,
    strategy: Option<Spanned<String>>,
    push: Option<bool>,
    remote: Option<Spanned<String>>,
    done: Option<Spanned<String>>,
    pr_command: Option<Spanned<Vec<String>>>,
    remote_timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawItem {
    id: Option<Spanned<String>>,
    prompt: Option<Spanned<String>>,
    check: Option<Spanned<String>>,
    paths: Option<Spanned<Vec<Spanned<String>>>>,
}

/// Parses and validates; the first problem found is returned.
pub(super) fn parse(
    source: &str,
    file_name: &str,
    root: Option<&Path>,
) -> Result<Config, Box<SourceError>> {
    let ctx = Ctx {
        file_name,
        source,
        root,
    };
    let raw: RawConfig = toml::from_str(source).map_err(|error| ctx.toml_error(&error))?;
    ctx.validate(raw)
}

struct Ctx<'a> {
    file_name: &'a str,
    source: &'a str,
    /// The repository root, when the config is read from it: paths are then also checked
    /// against its symlinks.
    root: Option<&'a Path>,
}

impl Ctx<'_> {
    fn error(&self, span: Range<usize>, message: impl Into<String>) -> SourceError {
        SourceError::new(self.file_name, self.source, span, message)
    }

    /// A path the config names (`what`, e.g. "`results` in [check]"): relative, without `..`,
    /// and, when the repository is known, not leaving it through a symlink.
    fn inside_path(
        &self,
        raw: Spanned<String>,
        what: &str,
        example: &str,
    ) -> Result<PathBuf, Box<SourceError>> {
        let help = format!(
            "give a path relative to the repository root, e.g. \"{example}\"; not absolute, \
             not through `..` or a symlink that leads out of the repository"
        );
        let path = PathBuf::from(raw.get_ref());
        let reason = match super::lexically_inside(&path) {
            Err(reason) => Some(reason.to_owned()),
            Ok(()) => self.root.and_then(|root| {
                super::resolve_inside(root, &path)
                    .err()
                    .map(|escape| escape.to_string())
            }),
        };
        if let Some(reason) = reason {
            return Err(self
                .error(
                    raw.span(),
                    format!(
                        "{what} must stay inside the repository: `{}` {reason}",
                        raw.get_ref()
                    ),
                )
                .with_help(help)
                .into());
        }
        Ok(path)
    }

    /// A syntax or schema error from the toml crate: keep its message line and span, drop its
    /// own rendering of the location and snippet.
    fn toml_error(&self, error: &toml::de::Error) -> SourceError {
        let span = error.span().unwrap_or(0..0);
        let message = error.message().trim();
        let error = self.error(span.clone(), message);
        if let Some(rest) = message.strip_prefix("unknown field `") {
            let field = rest.split('`').next().unwrap_or_default();
            if field == "plan" {
                return error.with_help(
                    "`plan` is a top-level key: move it above the first [table] of the file",
                );
            }
            return error.with_help(EXAMPLE_HELP);
        }
        let spanned_key = self
            .source
            .get(span)
            .map(|text| text.trim_matches(['[', ']', ' ']));
        if spanned_key == Some("item") && message.contains("expected a sequence") {
            return error.with_help("items are written `[[item]]`, with double brackets");
        }
        error
    }

    fn validate(&self, mut raw: RawConfig) -> Result<Config, Box<SourceError>> {
        let review = self.review_setup(&mut raw)?;
        let agent = self.agent(raw.agent)?;
        let check = self.check(raw.check)?;
        let budget_mode_span = raw
            .limits
            .as_ref()
            .and_then(|l| l.budget_mode.as_ref())
            .map(Spanned::span);
        let (limits, session, mut budget) = self.limits(raw.limits)?;
        let gates = self.gates(raw.gates, &mut budget, budget_mode_span)?;
        let integrate = self.integrate(raw.integrate)?;
        let worktree_env = self.worktree_env(raw.worktree.as_ref().and_then(|w| w.env.clone()))?;
        let seed = self.seed(raw.worktree)?;
        let guards = self.guards(raw.guards)?;
        let notify = self.notify(raw.notify)?;
        let alert = AlertConfig {
            no_ship_hours: raw
                .alert
                .and_then(|a| a.no_ship_hours)
                .map_or(DEFAULT_NO_SHIP_HOURS, Spanned::into_inner),
        };
        let plan = match raw.plan {
            Some(plan) if plan.get_ref().trim().is_empty() => {
                let error = self.error(plan.span(), "`plan` is empty");
                return Err(error.with_help(PLAN_HELP).into());
            }
            Some(plan) => {
                let span = plan.span();
                Some((self.inside_path(plan, "`plan`", "TODO.md")?, span))
            }
            None => None,
        };
        let raw_items = raw.item.unwrap_or_default();
        let items = self.items(&raw_items)?;

        if items.is_empty() && plan.is_none() {
            return Err(self
                .error(0..0, "no work to do: there is no [[item]] and no `plan`")
                .with_help(
                    "add an [[item]] with an `id` and a `prompt`, or a Markdown checklist with \
                     `plan = \"TODO.md\"` at the top of the file",
                )
                .into());
        }
        if check.command.is_none() {
            let unchecked = raw_items
                .iter()
                .zip(&items)
                .find(|(_, item)| item.check.is_none());
            if let Some((raw_item, item)) = unchecked {
                let message = format!(
                    "no check for item `{}`: [check] has no `command` and the item has no `check`",
                    item.id
                );
                let help = "add `command = \"…\"` under [check], or a `check` to this item";
                return Err(self.error(raw_item.span(), message).with_help(help).into());
            }
            if let Some((_, span)) = &plan {
                return Err(self
                    .error(
                        span.clone(),
                        "no check for the items of `plan`: [check] has no `command`",
                    )
                    .with_help(
                        "add `command = \"…\"` under [check]; Markdown checklist items use it",
                    )
                    .into());
            }
        }

        Ok(Config {
            agent,
            check,
            limits,
            session,
            budget,
            gates,
            seed,
            worktree_env,
            integrate,
            guards,
            run: self.run(raw.run)?,
            plan: plan.map(|(path, _)| path),
            items,
            notify,
            alert,
            review,
            sandbox: super::SandboxConfig {
                require: raw.sandbox.and_then(|s| s.require).unwrap_or(false),
            },
        })
    }

    fn agent(&self, raw: Option<Spanned<RawAgent>>) -> Result<AgentConfig, Box<SourceError>> {
        let Some(raw) = raw else {
            let help = format!(
                "add `[agent]` with `kind = \"command\"` and \
                 `command = [\"program\", \"arg\", …]`; {EXAMPLE_HELP}"
            );
            return Err(self
                .error(0..0, "missing [agent] table")
                .with_help(help)
                .into());
        };
        let header = raw.span();
        let raw = raw.into_inner();
        let kind = match &raw.kind {
            None => AgentKind::Command,
            Some(kind) => self.agent_kind(kind)?,
        };
        let policy = self.agent_policy(kind, &raw)?;
        let command = match (kind, raw.command) {
            (AgentKind::Command, None) => {
                return Err(self
                    .error(header, "missing `command` in [agent]")
                    .with_help(AGENT_COMMAND_HELP)
                    .into());
            }
            (AgentKind::Command, Some(command)) => {
                let span = command.span();
                let command = command.into_inner();
                match command.first() {
                    None => {
                        return Err(self
                            .error(span, "`command` in [agent] is empty")
                            .with_help(AGENT_COMMAND_HELP)
                            .into());
                    }
                    Some(program) if program.trim().is_empty() => {
                        return Err(self
                            .error(span, "`command` in [agent] has an empty program name")
                            .with_help(AGENT_COMMAND_HELP)
                            .into());
                    }
                    Some(_) => command,
                }
            }
            (other, Some(command)) => {
                return Err(self
                    .error(
                        command.span(),
                        format!("`command` is for `kind = \"command\"`, not `{other}`"),
                    )
                    .with_help(format!(
                        "nightshift builds the {other} command line itself: use `binary = \"…\"` \
                         for another executable and `args = [\"…\"]` for extra arguments"
                    ))
                    .into());
            }
            (_, None) => Vec::new(),
        };
        let binary = match raw.binary {
            Some(b) if b.get_ref().trim().is_empty() => {
                return Err(self.error(b.span(), "`binary` in [agent] is empty").into());
            }
            Some(b) if kind == AgentKind::Command => {
                return Err(self
                    .error(
                        b.span(),
                        "`binary` is for the CLI kinds, not `kind = \"command\"`",
                    )
                    .with_help("put the program first in `command = [\"program\", …]`")
                    .into());
            }
            other => other.map(Spanned::into_inner),
        };
        let model = raw.model.map(Spanned::into_inner);
        let args = raw.args.map(Spanned::into_inner).unwrap_or_default();
        let format = match raw.format {
            None => OutputFormat::Text,
            Some(f) => {
                match (kind, f.get_ref().as_str()) {
                    (AgentKind::Command, "text") => OutputFormat::Text,
                    (AgentKind::Command, "claude-stream") => OutputFormat::ClaudeStream,
                    (AgentKind::Command, other) => {
                        return Err(self
                            .error(f.span(), format!("unknown `format` `{other}` in [agent]"))
                            .with_help("expected `\"text\"` or `\"claude-stream\"`")
                            .into());
                    }
                    (other, _) => {
                        return Err(self
                        .error(f.span(), format!("`format` is for `kind = \"command\"`; {other}'s format is known"))
                        .into());
                    }
                }
            }
        };
        Ok(AgentConfig {
            kind,
            command,
            binary,
            model,
            args,
            format,
            policy,
        })
    }

    /// `permission_mode`, `allowed_tools`, `is_sandbox` and `env_pass`, checked against the kind.
    fn agent_policy(
        &self,
        kind: AgentKind,
        raw: &RawAgent,
    ) -> Result<super::AgentPolicy, Box<SourceError>> {
        let permission_mode = match &raw.permission_mode {
            None => None,
            Some(m) => {
                let allowed: &[&str] = match kind {
                    AgentKind::Claude => &[
                        "default",
                        "acceptEdits",
                        "plan",
                        "auto",
                        "dontAsk",
                        "bypassPermissions",
                    ],
                    AgentKind::Codex => &["read-only", "workspace-write", "danger-full-access"],
                    AgentKind::Gemini => &["default", "auto_edit", "yolo", "plan"],
                    AgentKind::Aider | AgentKind::Command => &[],
                };
                if allowed.is_empty() {
                    return Err(self
                        .error(
                            m.span(),
                            format!("`permission_mode` is not known for `kind = \"{kind}\"`"),
                        )
                        .with_help("it is for claude, codex and gemini; see docs/agents.md")
                        .into());
                }
                if !allowed.contains(&m.get_ref().as_str()) {
                    return Err(self
                        .error(
                            m.span(),
                            format!("unknown `permission_mode` `{}` for {kind}", m.get_ref()),
                        )
                        .with_help(format!("expected one of: {}", allowed.join(", ")))
                        .into());
                }
                Some(m.get_ref().clone())
            }
        };
        let allowed_tools = match &raw.allowed_tools {
            Some(t) if kind != AgentKind::Claude => {
                return Err(self
                    .error(t.span(), "`allowed_tools` is for `kind = \"claude\"`")
                    .into());
            }
            other => other.as_ref().map(|t| t.get_ref().clone()),
        };
        let is_sandbox = match &raw.is_sandbox {
            Some(b) if kind != AgentKind::Claude => {
                return Err(self
                    .error(b.span(), "`is_sandbox` is for `kind = \"claude\"`")
                    .into());
            }
            other => other.as_ref().is_some_and(|b| *b.get_ref()),
        };
        let env_pass = match &raw.env_pass {
            None => Vec::new(),
            Some(list) => {
                if let Some(bad) = list.get_ref().iter().find(|n| {
                    let name = n.strip_suffix('*').unwrap_or(n);
                    name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                }) {
                    return Err(self
                        .error(
                            list.span(),
                            format!("`env_pass` names an invalid variable `{bad}`"),
                        )
                        .with_help(
                            "give variable names (letters, digits, `_`), optionally ending in `*` for a prefix",
                        )
                        .into());
                }
                list.get_ref().clone()
            }
        };
        Ok(super::AgentPolicy {
            permission_mode,
            allowed_tools,
            is_sandbox,
            env_pass,
        })
    }

    fn agent_kind(&self, kind: &Spanned<String>) -> Result<AgentKind, Box<SourceError>> {
        let name = kind.get_ref().as_str();
        if let Some(known) = AgentKind::ALL.iter().find(|known| known.as_str() == name) {
            return Ok(*known);
        }
        let valid = AgentKind::ALL
            .iter()
            .map(|kind| format!("`{kind}`"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(self
            .error(
                kind.span(),
                format!("unknown agent kind `{name}`, expected one of {valid}"),
            )
            .with_help(format!("valid kinds: {valid}"))
            .into())
    }

    fn check(&self, raw: Option<RawCheck>) -> Result<CheckConfig, Box<SourceError>> {
        let Some(raw) = raw else {
            return Ok(CheckConfig {
                command: None,
                timeout: DEFAULT_CHECK_TIMEOUT,
                format: FormatChoice::Auto,
                results: None,
                no_progress_after: DEFAULT_NO_PROGRESS_AFTER,
                network: None,
            });
        };
        let command = match raw.command {
            None => None,
            Some(command) => Some(self.command_line(command, "`command` in [check] is empty")?),
        };
        let timeout = match raw.timeout {
            None => DEFAULT_CHECK_TIMEOUT,
            Some(timeout) => parse_duration(timeout.get_ref()).map_err(|reason| {
                self.error(
                    timeout.span(),
                    format!("invalid `timeout` in [check]: {reason}"),
                )
            })?,
        };
        let format = match raw.format {
            None => FormatChoice::Auto,
            Some(format) => Format::from_config(format.get_ref()).map_err(|e| {
                self.error(format.span(), format!("invalid `format` in [check]: {e}"))
                    .with_help(
                        "name the runner whose output the check prints, or `auto` to detect it, \
                         or `exit-code` to judge by the exit status alone",
                    )
            })?,
        };
        let results = match raw.results {
            None => None,
            Some(path) if path.get_ref().trim().is_empty() => {
                return Err(self
                    .error(path.span(), "`results` in [check] must be a relative path")
                    .with_help("the file the check writes, relative to the worktree, e.g. \"target/junit.xml\"")
                    .into());
            }
            Some(path) => {
                Some(self.inside_path(path, "`results` in [check]", "target/junit.xml")?)
            }
        };
        let no_progress_after = match raw.no_progress_after {
            None => DEFAULT_NO_PROGRESS_AFTER,
            Some(v) if *v.get_ref() == 0 => {
                return Err(self
                    .error(v.span(), "`no_progress_after` in [check] must be at least 1")
                    .with_help(format!(
                        "iterations without a smaller failing set before an attempt ends; the default is {DEFAULT_NO_PROGRESS_AFTER}"
                    ))
                    .into());
            }
            Some(v) => v.into_inner(),
        };
        let network = match raw.network {
            None => None,
            Some(n) => match n.get_ref().as_str() {
                "none" => Some(crate::sandbox::Network::None),
                "host" => Some(crate::sandbox::Network::Host),
                other => {
                    return Err(self
                        .error(n.span(), format!("invalid `network` in [check]: `{other}`"))
                        .with_help(
                            "`network = \"none\"` (the default where the kernel allows: no route \
                             out) or `network = \"host\"` (the check may use the network)",
                        )
                        .into());
                }
            },
        };
        Ok(CheckConfig {
            command,
            timeout,
            format,
            results,
            no_progress_after,
            network,
        })
    }

    fn guards(&self, raw: Option<RawGuards>) -> Result<GuardConfig, Box<SourceError>> {
        let mut guards = GuardConfig::default();
        let Some(raw) = raw else {
            return Ok(guards);
        };
        let globs = |list: Option<Vec<Spanned<String>>>,
                     key: &str|
         -> Result<Option<Vec<String>>, Box<SourceError>> {
            let Some(list) = list else { return Ok(None) };
            let mut out = Vec::new();
            for glob in list {
                if let Err(e) = crate::guard::paths::compile(glob.get_ref()) {
                    return Err(self
                        .error(glob.span(), format!("invalid glob in `{key}` of [guards]: {e}"))
                        .with_help("globs are relative to the repository root: `tests/**`, `**/*_test.go`, `.github/**`")
                        .into());
                }
                out.push(glob.into_inner());
            }
            Ok(Some(out))
        };
        // Each glob was checked above; the sets as wholes compile too (checked here so the
        // engine never meets a guard it cannot build).
        if let Some(list) = globs(raw.blocked_paths, "blocked_paths")? {
            guards.blocked_paths = list;
        }
        if let Some(list) = globs(raw.test_paths, "test_paths")? {
            guards.test_paths = list;
        }
        if let Some(p) = raw.protect_tests {
            guards.protect_tests = p;
        }
        Ok(guards)
    }

    /// A non-blank shell command line.
    fn command_line(&self, raw: Spanned<String>, empty: &str) -> Result<String, Box<SourceError>> {
        if raw.get_ref().trim().is_empty() {
            let help = "give a shell command line (run with `sh -c`; exit 0 means green), \
                 or remove the key";
            return Err(self.error(raw.span(), empty).with_help(help).into());
        }
        Ok(raw.into_inner())
    }

    fn limits(
        &self,
        raw: Option<RawLimits>,
    ) -> Result<(Limits, SessionLimits, BudgetLimits), Box<SourceError>> {
        let Some(raw) = raw else {
            return Ok((
                Limits {
                    max_iterations: DEFAULT_MAX_ITERATIONS,
                    max_attempts: DEFAULT_MAX_ATTEMPTS,
                },
                SessionLimits::default(),
                BudgetLimits::default(),
            ));
        };
        let limits = Limits {
            max_iterations: self.at_least_one(
                raw.max_iterations,
                "max_iterations",
                DEFAULT_MAX_ITERATIONS,
            )?,
            max_attempts: self.at_least_one(
                raw.max_attempts,
                "max_attempts",
                DEFAULT_MAX_ATTEMPTS,
            )?,
        };
        let defaults = SessionLimits::default();
        let session = SessionLimits {
            timeout: self.duration(raw.session_timeout, "session_timeout", defaults.timeout)?,
            stall_grace: self.duration(raw.stall_grace, "stall_grace", defaults.stall_grace)?,
            stall_nudges: raw
                .stall_nudges
                .map_or(defaults.stall_nudges, Spanned::into_inner),
            kill_grace: self.duration(raw.kill_grace, "kill_grace", defaults.kill_grace)?,
            fault_backoff: self.duration(
                raw.fault_backoff,
                "fault_backoff",
                defaults.fault_backoff,
            )?,
        };
        let d = BudgetLimits::default();
        let budget = BudgetLimits {
            session_tokens: self.positive(raw.session_tokens, "session_tokens")?,
            session_turns: self.positive(raw.session_turns, "session_turns")?,
            session_usd: self.positive_f64(raw.session_usd, "session_usd")?,
            item_tokens: self.positive(raw.item_tokens, "item_tokens")?,
            run_tokens: self.positive(raw.run_tokens, "run_tokens")?,
            run_usd: self.positive_f64(raw.run_usd, "run_usd")?,
            mode: match raw.budget_mode {
                None => d.mode,
                Some(m) => match m.get_ref().as_str() {
                    "enforce" => BudgetMode::Enforce,
                    "warn" => BudgetMode::Warn,
                    other => {
                        return Err(self
                            .error(m.span(), format!("unknown `budget_mode` `{other}` in [limits]"))
                            .with_help("expected `\"enforce\"` (end the session) or `\"warn\"` (journal and alert only)")
                            .into());
                    }
                },
            },
            soft: match raw.budget_soft {
                None => d.soft,
                Some(v) if *v.get_ref() > 0.0 && *v.get_ref() < 1.0 => v.into_inner(),
                Some(v) => {
                    return Err(self
                        .error(
                            v.span(),
                            "`budget_soft` in [limits] must be between 0 and 1",
                        )
                        .with_help(
                            "the share of a hard limit at which a wrap-up is asked, e.g. 0.8",
                        )
                        .into());
                }
            },
            cache_read_weight: match raw.cache_read_weight {
                None => d.cache_read_weight,
                Some(v) if (0.0..=1.0).contains(v.get_ref()) => v.into_inner(),
                Some(v) => {
                    return Err(self
                        .error(
                            v.span(),
                            "`cache_read_weight` in [limits] must be between 0 and 1",
                        )
                        .into());
                }
            },
            rate_limit_max_wait: self.duration(
                raw.rate_limit_max_wait,
                "rate_limit_max_wait",
                d.rate_limit_max_wait,
            )?,
        };
        Ok((limits, session, budget))
    }

    fn duration(
        &self,
        raw: Option<Spanned<String>>,
        key: &str,
        default: std::time::Duration,
    ) -> Result<std::time::Duration, Box<SourceError>> {
        self.duration_in(raw, "limits", key, default)
    }

    /// A duration key of `[section]`.
    fn duration_in(
        &self,
        raw: Option<Spanned<String>>,
        section: &str,
        key: &str,
        default: std::time::Duration,
    ) -> Result<std::time::Duration, Box<SourceError>> {
        match raw {
            None => Ok(default),
            Some(value) => parse_duration(value.get_ref()).map_err(|reason| {
                self.error(
                    value.span(),
                    format!("invalid `{key}` in [{section}]: {reason}"),
                )
                .into()
            }),
        }
    }

    fn positive<T: PartialEq + Default>(
        &self,
        raw: Option<Spanned<T>>,
        key: &str,
    ) -> Result<Option<T>, Box<SourceError>> {
        match raw {
            Some(v) if *v.get_ref() == T::default() => Err(self
                .error(v.span(), format!("`{key}` in [limits] must be more than 0"))
                .with_help("remove the key for no limit")
                .into()),
            other => Ok(other.map(Spanned::into_inner)),
        }
    }

    fn positive_f64(
        &self,
        raw: Option<Spanned<f64>>,
        key: &str,
    ) -> Result<Option<f64>, Box<SourceError>> {
        match raw {
            Some(v) if !(*v.get_ref() > 0.0 && v.get_ref().is_finite()) => Err(self
                .error(
                    v.span(),
                    format!("`{key}` in [limits] must be a positive number"),
                )
                .with_help("remove the key for no limit")
                .into()),
            other => Ok(other.map(Spanned::into_inner)),
        }
    }

    fn run(&self, raw: Option<RawRun>) -> Result<super::RunConfig, Box<SourceError>> {
        let defaults = super::RunConfig::default();
        let Some(raw) = raw else {
            return Ok(defaults);
        };
        let max_parallel = match raw.max_parallel {
            None => defaults.max_parallel,
            Some(value) if *value.get_ref() == 0 => {
                return Err(self
                    .error(value.span(), "`max_parallel` in [run] must be at least 1")
                    .with_help("the default is 1: one item's session at a time")
                    .into());
            }
            Some(value) if *value.get_ref() > super::MAX_PARALLEL => {
                return Err(self
                    .error(
                        value.span(),
                        format!(
                            "`max_parallel` in [run] is {}, more than the {} nightshift runs at once",
                            value.get_ref(),
                            super::MAX_PARALLEL
                        ),
                    )
                    .with_help(format!("set it between 1 and {}", super::MAX_PARALLEL))
                    .into());
            }
            Some(value) => value.into_inner(),
        };
        Ok(super::RunConfig {
            prevent_sleep: raw.prevent_sleep.unwrap_or(defaults.prevent_sleep),
            max_parallel,
        })
    }

    /// An item's `paths`: repository-relative globs, each one that compiles.
    fn item_paths(
        &self,
        id: &str,
        raw: &Spanned<Vec<Spanned<String>>>,
    ) -> Result<Vec<String>, Box<SourceError>> {
        if raw.get_ref().is_empty() {
            return Err(self
                .error(raw.span(), format!("`paths` of item `{id}` is empty"))
                .with_help(
                    "list the paths the item works on (`paths = [\"src/api/**\"]`), or remove \
                     `paths`: an item without it runs alone",
                )
                .into());
        }
        let mut paths = Vec::with_capacity(raw.get_ref().len());
        for pattern in raw.get_ref() {
            let text = pattern.get_ref().trim();
            let problem = if text.is_empty() {
                Some("is empty".to_owned())
            } else if text.starts_with('/') || text.split('/').any(|part| part == "..") {
                Some("is not inside the repository (write it relative to its root)".to_owned())
            } else {
                globset::Glob::new(text)
                    .err()
                    .map(|e| format!("is not a glob: {}", e.kind()))
            };
            if let Some(problem) = problem {
                return Err(self
                    .error(
                        pattern.span(),
                        format!("the path `{text}` of item `{id}` {problem}"),
                    )
                    .with_help("write a glob relative to the repository's root, e.g. `src/api/**`")
                    .into());
            }
            paths.push(text.to_owned());
        }
        Ok(paths)
    }

    fn at_least_one(
        &self,
        raw: Option<Spanned<u32>>,
        key: &str,
        default: u32,
    ) -> Result<u32, Box<SourceError>> {
        match raw {
            None => Ok(default),
            Some(value) if *value.get_ref() == 0 => Err(self
                .error(
                    value.span(),
                    format!("`{key}` in [limits] must be at least 1"),
                )
                .with_help(format!("the default is {default}"))
                .into()),
            Some(value) => Ok(value.into_inner()),
        }
    }

    fn integrate(&self, raw: Option<RawIntegrate>) -> Result<IntegrateConfig, Box<SourceError>> {
        let Some(raw) = raw else {
            return Ok(IntegrateConfig::default());
        };
        let strategy = match raw.strategy {
            None => Strategy::Squash,
            Some(v) => match v.get_ref().as_str() {
                "squash" => Strategy::Squash,
                "merge" => Strategy::Merge,
                "rebase" => Strategy::Rebase,
                other => {
                    return Err(self
                        .error(v.span(), format!("unknown `strategy` `{other}` in [integrate]"))
                        .with_help("expected `\"squash\"` (one commit per item), `\"merge\"` or `\"rebase\"`")
                        .into());
                }
            },
        };
        let push = raw.push.unwrap_or(false);
        let remote = match raw.remote {
            Some(r) if r.get_ref().trim().is_empty() => {
                return Err(self
                    .error(r.span(), "`remote` in [integrate] is empty")
                    .into());
            }
            Some(r) => r.into_inner(),
            None => "origin".to_owned(),
        };
        let done = match raw.done {
            None => Done::Local,
            Some(d) => match d.get_ref().as_str() {
                "local" => Done::Local,
                "pushed" if push => Done::Pushed,
                "pushed" => {
                    return Err(self
                        .error(
                            d.span(),
                            "`done = \"pushed\"` needs `push = true` in [integrate]",
                        )
                        .into());
                }
                other => {
                    return Err(self
                        .error(d.span(), format!("unknown `done` `{other}` in [integrate]"))
                        .with_help("expected `\"local\"` (shipped when on the local target) or `\"pushed\"` (shipped when on the remote)")
                        .into());
                }
            },
        };
        let pr_command = match raw.pr_command {
            Some(c) if c.get_ref().first().is_none_or(|p| p.trim().is_empty()) => {
                return Err(self
                    .error(c.span(), "`pr_command` in [integrate] is empty")
                    .with_help("an argv such as [\"gh\", \"pr\", \"create\", \"--head\", \"{branch}\"]; placeholders: {item}, {commit}, {target}, {remote}, {branch}, {body_file}")
                    .into());
            }
            Some(c) if !push => {
                return Err(self
                    .error(c.span(), "`pr_command` needs `push = true` in [integrate]")
                    .into());
            }
            other => other.map(Spanned::into_inner).unwrap_or_default(),
        };
        let remote_timeout = self.duration_in(
            raw.remote_timeout,
            "integrate",
            "remote_timeout",
            crate::config::DEFAULT_REMOTE_TIMEOUT,
        )?;
        let target = match raw.target {
            None => None,
            Some(target) if target.get_ref().trim().is_empty() => {
                return Err(self
                    .error(target.span(), "`target` in [integrate] is empty")
                    .with_help(
                        "name a branch, e.g. `target = \"main\"`, or remove the key to use the \
                         branch checked out when the run starts",
                    )
                    .into());
            }
            Some(target) => Some(target.into_inner()),
        };
        Ok(IntegrateConfig {
            target,
            strategy,
            push,
            remote,
            done,
            pr_command,
            remote_timeout,
        })
    }

    /// `[gates]`: `gate = "enforce" | "log" | "off"` per known gate, and `file = "…"` (a gates
    /// file for process gates, re-read when it changes). `[limits] budget_mode` is an alias of
    /// `budget`: `warn` is `log`.
    fn gates(
        &self,
        raw: Option<std::collections::BTreeMap<Spanned<String>, Spanned<String>>>,
        budget: &mut BudgetLimits,
        budget_mode_span: Option<Range<usize>>,
    ) -> Result<crate::gate::Gates, Box<SourceError>> {
        use crate::gate::GateMode;
        let mut modes = std::collections::BTreeMap::new();
        if budget.mode == BudgetMode::Warn {
            modes.insert("budget".to_owned(), GateMode::Log);
        }
        let mut file = None;
        for (key, value) in raw.unwrap_or_default() {
            if key.get_ref() == "file" {
                if value.get_ref().trim().is_empty() {
                    return Err(self
                        .error(value.span(), "`file` in [gates] is empty")
                        .into());
                }
                file =
                    Some(self.inside_path(value, "`file` in [gates]", ".nightshift/gates.toml")?);
                continue;
            }
            let mode = crate::gate::check_mode(key.get_ref(), value.get_ref(), false).map_err(
                |message| {
                    let span = if crate::gate::spec(key.get_ref()).is_none() {
                        key.span()
                    } else {
                        value.span()
                    };
                    self.error(span, format!("{message} (in [gates])"))
                        .with_help("see the [gates] section of docs/config.md")
                },
            )?;
            if key.get_ref() == "budget"
                && let Some(span) = &budget_mode_span
            {
                let alias = if budget.mode == BudgetMode::Warn {
                    GateMode::Log
                } else {
                    GateMode::Enforce
                };
                if alias != mode {
                    return Err(self
                        .error(
                            span.clone(),
                            "`budget_mode` in [limits] disagrees with `budget` in [gates]",
                        )
                        .with_help("`budget_mode` is an older name of the budget gate: keep one")
                        .into());
                }
            }
            modes.insert(key.into_inner(), mode);
        }
        if let Some(mode) = modes.get("budget") {
            budget.mode = if *mode == GateMode::Enforce {
                BudgetMode::Enforce
            } else {
                BudgetMode::Warn
            };
        }
        Ok(crate::gate::Gates::new(modes, file))
    }

    /// `[worktree] env`: variables for every agent session and check of an attempt (a shared
    /// build cache: `CARGO_TARGET_DIR = "{repo}/.nightshift/cargo-target"`). Names are
    /// environment names, never nightshift's own `NIGHTSHIFT_*`.
    fn worktree_env(
        &self,
        raw: Option<std::collections::BTreeMap<Spanned<String>, Spanned<String>>>,
    ) -> Result<Vec<(String, String)>, Box<SourceError>> {
        let mut env = Vec::new();
        for (name, value) in raw.unwrap_or_default() {
            let n = name.get_ref();
            let valid = !n.is_empty()
                && !n.starts_with(|c: char| c.is_ascii_digit())
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(self
                    .error(
                        name.span(),
                        format!("`{n}` in [worktree] env is not a variable name"),
                    )
                    .with_help(
                        "letters, digits and `_`, not starting with a digit: `CARGO_TARGET_DIR`",
                    )
                    .into());
            }
            if n.starts_with("NIGHTSHIFT_") {
                return Err(self
                    .error(
                        name.span(),
                        format!("`{n}` in [worktree] env is nightshift's own variable"),
                    )
                    .with_help("nightshift sets the NIGHTSHIFT_* variables itself; remove it")
                    .into());
            }
            if value.get_ref().contains('\0') {
                return Err(self
                    .error(
                        value.span(),
                        format!("the value of `{n}` in [worktree] env contains a NUL byte"),
                    )
                    .into());
            }
            env.push((name.into_inner(), value.into_inner()));
        }
        Ok(env)
    }

    /// `[worktree] seed`: relative paths inside the repository, never the root itself.
    fn seed(&self, raw: Option<RawWorktree>) -> Result<Vec<PathBuf>, Box<SourceError>> {
        let mut seeds = Vec::new();
        for path in raw.and_then(|w| w.seed).unwrap_or_default() {
            let p = std::path::Path::new(path.get_ref().as_str());
            let inside = !p.as_os_str().is_empty()
                && p.is_relative()
                && p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                return Err(self
                    .error(path.span(), format!("seed `{}` is not a path inside the repository", path.get_ref()))
                    .with_help("give paths relative to the repository root, like \".mcp.json\" or \".claude/\"; not the root, not `..`, not absolute")
                    .into());
            }
            let seed = path.get_ref().trim_end_matches('/').to_owned();
            let span = path.span();
            seeds.push(self.inside_path(
                Spanned::new(span, seed),
                "seed in [worktree]",
                ".mcp.json",
            )?);
        }
        Ok(seeds)
    }

    fn items(&self, raw_items: &[Spanned<RawItem>]) -> Result<Vec<ItemConfig>, Box<SourceError>> {
        let mut items = Vec::with_capacity(raw_items.len());
        // id → line of its first use
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for raw in raw_items {
            let header = raw.span();
            let fields = raw.get_ref();
            let Some(id) = &fields.id else {
                return Err(self
                    .error(header, "missing `id` in [[item]]")
                    .with_help(format!("add `id = \"short-name\"`; {ID_HELP}"))
                    .into());
            };
            if let Err(reason) = validate_id(id.get_ref()) {
                return Err(self
                    .error(
                        id.span(),
                        format!("invalid item id `{}`: {reason}", id.get_ref()),
                    )
                    .with_help(ID_HELP)
                    .into());
            }
            if let Some(first_line) = seen.get(id.get_ref().as_str()) {
                return Err(self
                    .error(
                        id.span(),
                        format!(
                            "duplicate item id `{}` (first used on line {first_line})",
                            id.get_ref()
                        ),
                    )
                    .with_help("item ids must be unique; rename one of them")
                    .into());
            }
            let line = super::error::line_column(self.source, id.span().start).0;
            seen.insert(id.get_ref(), line);
            if let Some(prompt) = &fields.prompt
                && prompt.get_ref().contains('\0')
            {
                // Only an escape can put a NUL in a TOML string: point at it.
                let span = prompt.span();
                let literal = self.source.get(span.clone()).unwrap_or("");
                let at = ["\\u0000", "\\U00000000"]
                    .iter()
                    .filter_map(|escape| literal.find(escape).map(|i| (i, escape.len())))
                    .min()
                    .map_or(span.clone(), |(i, len)| {
                        span.start + i..span.start + i + len
                    });
                return Err(self
                    .error(
                        at,
                        format!(
                            "the `prompt` of item `{}` holds a NUL character",
                            id.get_ref()
                        ),
                    )
                    .with_help("remove the `\\u0000`: a prompt is text, and git cannot carry a NUL")
                    .into());
            }
            let prompt = match &fields.prompt {
                Some(prompt) if !prompt.get_ref().trim().is_empty() => {
                    prompt.get_ref().trim().to_owned()
                }
                Some(_) => {
                    return Err(self
                        .error(
                            header,
                            format!("item `{}` has an empty `prompt`", id.get_ref()),
                        )
                        .with_help("say what the agent should do in `prompt = \"…\"`")
                        .into());
                }
                None => {
                    return Err(self
                        .error(header, format!("item `{}` has no `prompt`", id.get_ref()))
                        .with_help("add `prompt = \"…\"` saying what the agent should do")
                        .into());
                }
            };
            let check = match &fields.check {
                None => None,
                Some(check) => Some(self.command_line(
                    check.clone(),
                    &format!("`check` of item `{}` is empty", id.get_ref()),
                )?),
            };
            let paths = match &fields.paths {
                None => Vec::new(),
                Some(paths) => self.item_paths(id.get_ref(), paths)?,
            };
            let end = [&fields.id, &fields.prompt, &fields.check]
                .into_iter()
                .flatten()
                .map(|value| value.span().end)
                .chain(fields.paths.as_ref().map(|p| p.span().end))
                .fold(header.end, usize::max);
            items.push(ItemConfig {
                id: id.get_ref().clone(),
                prompt,
                check,
                paths,
                span: header.start..end,
            });
        }
        Ok(items)
    }
}

const WEBHOOK_HELP: &str = "write `[[notify.webhook]]` with `url = \"https://…\"` and, optionally, \
     `format = \"json\"` (or \"slack\", \"ntfy\")";
const NOTIFY_COMMAND_HELP: &str = "write `[[notify.command]]` with `argv = [\"program\", \"arg\", …]`: \
     the program gets each alert as JSON on stdin";

impl Ctx<'_> {
    fn notify(&self, raw: Option<RawNotify>) -> Result<NotifyConfig, Box<SourceError>> {
        let Some(raw) = raw else {
            return Ok(NotifyConfig::default());
        };
        let mut webhooks = Vec::new();
        for table in raw.webhook.unwrap_or_default() {
            let span = table.span();
            let table = table.into_inner();
            let Some(url) = table.url else {
                return Err(self
                    .error(span, "missing `url` in [[notify.webhook]]")
                    .with_help(WEBHOOK_HELP)
                    .into());
            };
            if let Err(reason) = check_url(url.get_ref()) {
                return Err(self
                    .error(
                        url.span(),
                        format!("invalid `url` in [[notify.webhook]]: {reason}"),
                    )
                    .with_help("give a full URL, e.g. `url = \"https://ntfy.sh/my-topic\"`")
                    .into());
            }
            let format = match table.format {
                None => WebhookFormat::Json,
                Some(format) => {
                    let name = format.get_ref().as_str();
                    match WebhookFormat::ALL.iter().find(|(known, _)| *known == name) {
                        Some((_, known)) => *known,
                        None => {
                            return Err(self
                                .error(
                                    format.span(),
                                    format!("unknown `format` `{name}` in [[notify.webhook]]"),
                                )
                                .with_help(
                                    "expected `\"json\"` (the alert as JSON), `\"slack\"` \
                                     (`{\"text\": …}`) or `\"ntfy\"` (plain text, ntfy headers)",
                                )
                                .into());
                        }
                    }
                }
            };
            webhooks.push(WebhookConfig {
                url: url.into_inner(),
                format,
            });
        }
        let mut commands = Vec::new();
        for table in raw.command.unwrap_or_default() {
            let span = table.span();
            let table = table.into_inner();
            let Some(argv) = table.argv else {
                return Err(self
                    .error(span, "missing `argv` in [[notify.command]]")
                    .with_help(NOTIFY_COMMAND_HELP)
                    .into());
            };
            if argv.get_ref().first().is_none_or(|p| p.trim().is_empty()) {
                return Err(self
                    .error(
                        argv.span(),
                        "`argv` in [[notify.command]] has no program name",
                    )
                    .with_help(NOTIFY_COMMAND_HELP)
                    .into());
            }
            let timeout = match table.timeout {
                None => DEFAULT_COMMAND_TIMEOUT,
                Some(timeout) => parse_duration(timeout.get_ref()).map_err(|reason| {
                    self.error(
                        timeout.span(),
                        format!("invalid `timeout` in [[notify.command]]: {reason}"),
                    )
                })?,
            };
            commands.push(CommandChannelConfig {
                argv: argv.into_inner(),
                timeout,
            });
        }
        Ok(NotifyConfig {
            desktop: raw.desktop.unwrap_or(true),
            webhooks,
            commands,
        })
    }
}

/// An `http://` or `https://` URL with a host.
fn check_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("it has no scheme (expected `https://` or `http://`)".into());
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(format!(
            "scheme `{scheme}` is not supported (expected `https` or `http`)"
        ));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || url.chars().any(char::is_whitespace) {
        return Err("it has no host, or contains whitespace".into());
    }
    Ok(())
}

impl Ctx<'_> {
    /// `[review]`, `[triage]`, and the review agents nested under `[agent]` (taken out of it).
    fn review_setup(&self, raw: &mut RawConfig) -> Result<ReviewSetup, Box<SourceError>> {
        let (review_agent, second) = match raw.agent.as_mut() {
            Some(agent) => {
                let agent = agent.get_mut();
                (agent.review.take(), agent.second_opinion.take())
            }
            None => (None, None),
        };
        let sub = |table: Option<Box<Spanned<RawAgent>>>, name: &str| {
            let Some(table) = table else {
                return Ok(None);
            };
            let inner = table.get_ref();
            if inner.review.is_some() || inner.second_opinion.is_some() {
                return Err(Box::new(self.error(
                    table.span(),
                    format!("[agent.{name}] cannot nest another reviewer"),
                )));
            }
            self.agent(Some(*table)).map(Some)
        };
        let agent = sub(review_agent, "review")?;
        let second_opinion = sub(second, "second_opinion")?;
        let review = self.review(raw.review.take())?;
        let triage = self.triage(raw.triage.take())?;
        Ok(ReviewSetup {
            review,
            triage,
            agent,
            second_opinion,
        })
    }

    fn review(&self, raw: Option<RawReview>) -> Result<ReviewConfig, Box<SourceError>> {
        let Some(raw) = raw else {
            return Ok(ReviewConfig::default());
        };
        let mut review = ReviewConfig::default();
        if let Some(when) = raw.when {
            review.when = match when.get_ref().as_str() {
                "always" => ReviewWhen::Always,
                "never" => ReviewWhen::Never,
                "risky" => ReviewWhen::Risky,
                other => {
                    return Err(self
                        .error(when.span(), format!("unknown `when` `{other}` in [review]"))
                        .with_help("expected `\"always\"`, `\"never\"` or `\"risky\"` (paths matching `risky_paths`, or a diff above `risky_lines`)")
                        .into());
                }
            };
        }
        if let Some(on) = raw.on_timeout {
            review.on_timeout = match on.get_ref().as_str() {
                "retry" => OnTimeout::Retry,
                "salvage-if-done" => OnTimeout::SalvageIfDone,
                "defer" => OnTimeout::Defer,
                other => {
                    return Err(self
                        .error(
                            on.span(),
                            format!("unknown `on_timeout` `{other}` in [review]"),
                        )
                        .with_help("expected `\"retry\"`, `\"salvage-if-done\"` or `\"defer\"`")
                        .into());
                }
            };
        }
        for pattern in raw.risky_paths.unwrap_or_default() {
            if pattern.get_ref().trim().is_empty() {
                return Err(self
                    .error(
                        pattern.span(),
                        "an empty pattern in `risky_paths` of [review]",
                    )
                    .with_help("give glob patterns over repository paths, like \"auth/**\"")
                    .into());
            }
            review.risky_paths.push(pattern.into_inner());
        }
        if let Some(lines) = raw.risky_lines {
            review.risky_lines = lines.into_inner();
        }
        if let Some(cycles) = raw.max_review_cycles {
            if *cycles.get_ref() == 0 {
                return Err(self
                    .error(
                        cycles.span(),
                        "`max_review_cycles` in [review] must be at least 1",
                    )
                    .with_help(format!("the default is {DEFAULT_MAX_REVIEW_CYCLES}"))
                    .into());
            }
            review.max_review_cycles = cycles.into_inner();
        }
        if let Some(timeout) = raw.timeout {
            review.timeout = Some(parse_duration(timeout.get_ref()).map_err(|reason| {
                self.error(
                    timeout.span(),
                    format!("invalid `timeout` in [review]: {reason}"),
                )
            })?);
        }
        Ok(review)
    }

    fn triage(&self, raw: Option<RawTriage>) -> Result<TriageConfig, Box<SourceError>> {
        let mut triage = TriageConfig::default();
        let Some(raw) = raw else {
            return Ok(triage);
        };
        let action = |value: Spanned<String>, key: &str| {
            TriageAction::parse(value.get_ref()).ok_or_else(|| {
                Box::new(
                    self.error(value.span(), format!("unknown action `{}` for `{key}` in [triage]", value.get_ref()))
                        .with_help("expected `\"fix\"`, `\"ship_with_debt\"`, `\"second_opinion\"` or `\"escalate\"`"),
                )
            })
        };
        if let Some(v) = raw.mechanical {
            triage.mechanical = action(v, "mechanical")?;
        }
        if let Some(v) = raw.false_positive {
            triage.false_positive = action(v, "false_positive")?;
        }
        if let Some(v) = raw.real_doubt {
            triage.real_doubt = action(v, "real_doubt")?;
        }
        if let Some(v) = raw.no_safe_path
            && v.get_ref() != "escalate"
        {
            return Err(self
                .error(
                    v.span(),
                    "`no_safe_path` in [triage] can only be `\"escalate\"`",
                )
                .with_help("a problem with no safe path always parks the item and wakes a person")
                .into());
        }
        Ok(triage)
    }
}
