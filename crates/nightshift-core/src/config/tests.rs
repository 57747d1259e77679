use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const FULL: &str = r#"plan = "TODO.md"
[agent]
kind = "command"
command = ["sh", "agent.sh"]
[check]
command = "sh check.sh"
timeout = "90m"
[limits]
max_iterations = 5
max_attempts = 4
[integrate]
target = "main"
[[item]]
id = "add-greeting"
prompt = "Add a greet() function that …"
check = "sh check.sh greet"
"#;

/// A valid prefix: agent and check, no items.
const HEAD: &str =
    "[agent]\ncommand = [\"sh\", \"agent.sh\"]\n[check]\ncommand = \"sh check.sh\"\n";

fn error(source: &str) -> SourceError {
    match parse(source, "nightshift.toml") {
        Ok(config) => panic!("expected an error, got {config:?}"),
        Err(ConfigError::Invalid(error)) => *error,
        Err(other) => panic!("expected Invalid, got {other:?}"),
    }
}

/// Asserts the error's position, the text its span covers, and that message and help contain
/// the given fragments.
#[track_caller]
fn assert_error(source: &str, at: (usize, usize), span_text: &str, message: &str, help: &str) {
    let error = error(source);
    assert_eq!((error.line, error.column), at, "{error:?}");
    assert_eq!(
        &error.source_text[error.span.clone()],
        span_text,
        "{error:?}"
    );
    assert!(
        error.message.contains(message),
        "message: {:?}",
        error.message
    );
    let actual_help = error.help.clone().unwrap_or_default();
    assert!(actual_help.contains(help), "help: {actual_help:?}");
    assert_eq!(error.file_name, "nightshift.toml");
    assert_eq!(error.source_text, source);
    assert_eq!(
        error.to_string(),
        format!("nightshift.toml:{}:{}: {}", at.0, at.1, error.message)
    );
}

#[test]
fn full_example_parses_with_its_values() -> TestResult {
    let config = parse(FULL, FILE_NAME)?;
    assert_eq!(
        config,
        Config {
            agent: AgentConfig {
                kind: AgentKind::Command,
                command: vec!["sh".into(), "agent.sh".into()],
                binary: None,
                model: None,
                args: Vec::new(),
                format: OutputFormat::Text,
                policy: Default::default(),
            },
            check: CheckConfig {
                command: Some("sh check.sh".into()),
                timeout: Duration::from_secs(90 * 60),
                format: crate::check::results::FormatChoice::Auto,
                results: None,
                no_progress_after: crate::config::DEFAULT_NO_PROGRESS_AFTER,
                network: None,
            },
            limits: Limits {
                max_iterations: 5,
                max_attempts: 4,
            },
            session: SessionLimits::default(),
            budget: BudgetLimits::default(),
            gates: crate::gate::Gates::default(),
            seed: Vec::new(),
            worktree_env: Vec::new(),
            integrate: IntegrateConfig {
                target: Some("main".into()),
                ..IntegrateConfig::default()
            },
            guards: crate::config::GuardConfig::default(),
            run: RunConfig::default(),
            plan: Some(PathBuf::from("TODO.md")),
            items: vec![ItemConfig {
                id: "add-greeting".into(),
                prompt: "Add a greet() function that …".into(),
                check: Some("sh check.sh greet".into()),
                paths: Vec::new(),
                span: config.items[0].span.clone(),
            }],
            notify: NotifyConfig::default(),
            alert: AlertConfig::default(),
            review: Default::default(),
            sandbox: Default::default(),
        }
    );
    let span = &config.items[0].span;
    assert_eq!(
        &FULL[span.clone()],
        "[[item]]\nid = \"add-greeting\"\nprompt = \"Add a greet() function that …\"\ncheck = \"sh check.sh greet\""
    );
    assert_eq!(
        config.check_command(config.items[0].check.as_deref()),
        Some("sh check.sh greet")
    );
    assert_eq!(config.check_command(None), Some("sh check.sh"));
    Ok(())
}

#[test]
fn defaults_apply_to_a_minimal_file() -> TestResult {
    let source = "[agent]\ncommand = [\"agent\"]\n[check]\ncommand = \"true\"\n[[item]]\nid = \"a\"\nprompt = \"do a\"\n";
    let config = parse(source, FILE_NAME)?;
    assert_eq!(config.agent.kind, AgentKind::Command);
    assert_eq!(config.check.timeout, Duration::from_secs(600));
    assert_eq!(
        config.limits,
        Limits {
            max_iterations: 3,
            max_attempts: 2
        }
    );
    assert_eq!(config.integrate.target, None);
    assert_eq!(config.plan, None);
    assert_eq!(config.items.len(), 1);
    assert_eq!(config.items[0].check, None);
    Ok(())
}

#[test]
fn items_keep_file_order_and_trim_prompts() -> TestResult {
    let source = format!(
        "{HEAD}[[item]]\nid = \"b\"\nprompt = \"\"\"\n  do b\n\"\"\"\n[[item]]\nid = \"a\"\nprompt = \"do a\"\n"
    );
    let config = parse(&source, FILE_NAME)?;
    let ids: Vec<_> = config.items.iter().map(|item| item.id.as_str()).collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(config.items[0].prompt, "do b");
    Ok(())
}

#[test]
fn inline_item_tables_are_accepted() -> TestResult {
    let source = format!("item = [{{ id = \"a\", prompt = \"do a\" }}]\n{HEAD}");
    let config = parse(&source, FILE_NAME)?;
    assert_eq!(config.items[0].id, "a");
    assert_eq!(
        &source[config.items[0].span.clone()],
        "{ id = \"a\", prompt = \"do a\" }"
    );
    Ok(())
}

#[test]
fn per_item_checks_replace_the_global_check() -> TestResult {
    let source = "[agent]\ncommand = [\"agent\"]\n[[item]]\nid = \"a\"\nprompt = \"p\"\ncheck = \"sh a.sh\"\n";
    let config = parse(source, FILE_NAME)?;
    assert_eq!(config.check.command, None);
    assert_eq!(config.items[0].check.as_deref(), Some("sh a.sh"));
    Ok(())
}

#[test]
fn a_plan_alone_is_enough_work() -> TestResult {
    let source = format!("plan = \"docs/TODO.md\"\n{HEAD}");
    let config = parse(&source, FILE_NAME)?;
    assert_eq!(config.plan, Some(PathBuf::from("docs/TODO.md")));
    assert!(config.items.is_empty());
    Ok(())
}

#[test]
fn template_parses() -> TestResult {
    let config = parse(template(), FILE_NAME)?;
    assert_eq!(config.agent.kind, AgentKind::Command);
    assert_eq!(config.agent.command[0], "sh");
    assert!(config.check.command.is_some());
    assert_eq!(config.check.timeout, DEFAULT_CHECK_TIMEOUT);
    assert_eq!(
        config.limits,
        Limits {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_attempts: DEFAULT_MAX_ATTEMPTS
        }
    );
    assert_eq!(config.items.len(), 1);
    assert_eq!(config.plan, None);
    Ok(())
}

#[test]
fn template_explains_every_key() {
    for key in [
        "plan = ",
        "[agent]",
        "kind = ",
        "command = ",
        "[check]",
        "timeout = ",
        "[limits]",
        "max_iterations = ",
        "max_attempts = ",
        "[integrate]",
        "target = ",
        "[[item]]",
        "id = ",
        "prompt = ",
        "check = ",
    ] {
        assert!(template().contains(key), "template lacks {key:?}");
    }
}

#[test]
fn template_with_its_commented_keys_enabled_still_parses() -> TestResult {
    let enabled = template()
        .replace("# plan = \"TODO.md\"", "plan = \"TODO.md\"")
        .replace("# target = \"main\"", "target = \"main\"")
        .replace(
            "# check = \"sh check.sh example\"",
            "check = \"sh check.sh example\"",
        )
        .replace("# when = ", "when = ")
        .replace("# risky_paths = ", "risky_paths = ")
        .replace("# max_review_cycles = ", "max_review_cycles = ")
        .replace("# on_timeout = ", "on_timeout = ")
        .replace("# mechanical = ", "mechanical = ")
        .replace("# false_positive = ", "false_positive = ")
        .replace("# real_doubt = ", "real_doubt = ");
    let config = parse(&enabled, FILE_NAME)?;
    assert_eq!(config.review.review.when, ReviewWhen::Always);
    assert_eq!(config.review.triage, TriageConfig::default());
    assert_eq!(config.plan, Some(PathBuf::from("TODO.md")));
    assert_eq!(config.integrate.target.as_deref(), Some("main"));
    assert_eq!(
        config.items[0].check.as_deref(),
        Some("sh check.sh example")
    );
    Ok(())
}

#[test]
fn load_reads_the_file_and_names_it_in_errors() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, FULL)?;
    assert_eq!(load(&path)?.items[0].id, "add-greeting");

    std::fs::write(&path, "[agent]\ncomand = []\n")?;
    match load(&path) {
        Err(ConfigError::Invalid(error)) => {
            assert_eq!(error.file_name, path.display().to_string());
            assert_eq!((error.line, error.column), (2, 1));
        }
        other => panic!("{other:?}"),
    }

    let missing = dir.path().join("missing.toml");
    match load(&missing) {
        Err(error @ ConfigError::Read { .. }) => {
            assert_eq!(error.to_string(), format!("read {}", missing.display()));
            assert!(std::error::Error::source(&error).is_some());
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

// ---- unknown keys, one per table ----

#[test]
fn unknown_top_level_key() {
    let source = format!("plan = \"TODO.md\"\nitems = 1\n{HEAD}");
    assert_error(
        &source,
        (2, 1),
        "items",
        // The list of valid keys grows with the schema; its start is enough to pin the shape.
        "unknown field `items`, expected one of `plan`, `agent`, `check`, `limits`, ",
        "see `nightshift init` for a commented example",
    );
}

#[test]
fn unknown_agent_key() {
    assert_error(
        "[agent]\ncommand = [\"a\"]\nargz = []\n",
        (3, 1),
        "argz",
        "unknown field `argz`, expected one of `kind`, `command`, `binary`, `model`, `args`, `format`",
        "nightshift init",
    );
}

#[test]
fn unknown_check_key() {
    let source = "[agent]\ncommand = [\"a\"]\n[check]\ncommand = \"true\"\ntimout = \"5m\"\n";
    let error = error(source);
    assert_eq!((error.line, error.column), (5, 1));
    assert!(
        error
            .message
            .starts_with("unknown field `timout`, expected one of `command`, `timeout`"),
        "{}",
        error.message
    );
    assert!(
        !error.message.contains("line"),
        "toml's rendering is stripped"
    );
    assert_eq!(
        error.help.as_deref(),
        Some("see `nightshift init` for a commented example")
    );
}

#[test]
fn unknown_limits_key() {
    assert_error(
        &format!("{HEAD}[limits]\n  max_iteration = 2\n"),
        (6, 3),
        "max_iteration",
        "unknown field `max_iteration`, expected one of `max_iterations`, `max_attempts`, `session_timeout`, `stall_grace`, `stall_nudges`, `kill_grace`, `fault_backoff`, `session_tokens`, `session_turns`, `session_usd`, `item_tokens`, `run_tokens`, `run_usd`, `budget_mode`, `budget_soft`, `cache_read_weight`, `rate_limit_max_wait`",
        "nightshift init",
    );
}

#[test]
fn unknown_integrate_key() {
    assert_error(
        &format!("{HEAD}[integrate]\nbranch = \"main\"\n"),
        (6, 1),
        "branch",
        "unknown field `branch`, expected one of `target`, `strategy`, `push`, `remote`, `done`, `pr_command`",
        "nightshift init",
    );
}

#[test]
fn unknown_item_key() {
    assert_error(
        &format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"p\"\ntimeout = \"5m\"\n"),
        (8, 1),
        "timeout",
        "unknown field `timeout`, expected one of `id`, `prompt`, `check`",
        "nightshift init",
    );
}

#[test]
fn unknown_key_in_a_dotted_subtable() {
    assert_error(
        "[agent.env]\nX = \"1\"\n",
        (1, 8),
        "env",
        "unknown field `env`",
        "nightshift init",
    );
}

#[test]
fn plan_below_a_table_gets_a_specific_hint() {
    assert_error(
        &format!("{HEAD}plan = \"TODO.md\"\n"),
        (5, 1),
        "plan",
        "unknown field `plan`, expected one of `command`, `timeout`",
        "`plan` is a top-level key: move it above the first [table]",
    );
}

// ---- syntax and type errors from toml ----

#[test]
fn syntax_error_is_located() {
    assert_error(
        "[agent\ncommand = [\"a\"]\n",
        (1, 7),
        "",
        "unclosed table, expected `]`",
        "",
    );
}

#[test]
fn duplicate_key_is_located() {
    assert_error(
        "[agent]\ncommand = [\"a\"]\ncommand = [\"b\"]\n",
        (3, 1),
        "command",
        "duplicate key",
        "",
    );
}

#[test]
fn wrong_value_type_is_located() {
    assert_error(
        &format!("{HEAD}[limits]\nmax_attempts = -1\n"),
        (6, 16),
        "-1",
        "invalid value: integer `-1`, expected u32",
        "",
    );
    assert_error(
        "[agent]\ncommand = [\"a\"]\n[check]\ntimeout = 600\n",
        (4, 11),
        "600",
        "invalid type: integer `600`, expected a string",
        "",
    );
    assert_error(
        "[agent]\ncommand = \"sh agent.sh\"\n",
        (2, 11),
        "\"sh agent.sh\"",
        "expected a sequence",
        "",
    );
}

#[test]
fn single_bracket_item_gets_a_hint() {
    let source = format!("{HEAD}[item]\nid = \"a\"\n");
    let error = error(&source);
    assert!(error.message.contains("expected a sequence"), "{error:?}");
    assert_eq!(
        error.help.as_deref(),
        Some("items are written `[[item]]`, with double brackets"),
        "{error:?}"
    );
}

// ---- validation errors ----

#[test]
fn bad_duration_points_at_the_value() {
    let source = "[agent]\ncommand = [\"a\"]\n[check]\ncommand = \"true\"\ntimeout = \"10\"\n";
    assert_error(
        source,
        (5, 11),
        "\"10\"",
        "invalid `timeout` in [check]: `10` has no unit after `10`; expected a duration like `90s`, `10m`, `1h30m`",
        "",
    );
    let source = source.replace("\"10\"", "\"0s\"");
    assert_error(&source, (5, 11), "\"0s\"", "is zero", "");
}

#[test]
fn remote_timeout_is_read_and_a_bad_one_points_at_the_value() -> TestResult {
    let config = parse(
        &FULL.replace(
            "target = \"main\"\n",
            "target = \"main\"\nremote_timeout = \"90s\"\n",
        ),
        "nightshift.toml",
    )?;
    assert_eq!(config.integrate.remote_timeout, Duration::from_secs(90));
    assert_eq!(
        parse(FULL, "nightshift.toml")?.integrate.remote_timeout,
        DEFAULT_REMOTE_TIMEOUT
    );
    assert_error(
        &format!("{HEAD}[integrate]\nremote_timeout = \"never\"\n"),
        (6, 18),
        "\"never\"",
        "invalid `remote_timeout` in [integrate]: `never` is not a duration",
        "",
    );
    assert_error(
        &format!("{HEAD}[integrate]\nremote_timeout = \"0s\"\n"),
        (6, 18),
        "\"0s\"",
        "is zero",
        "",
    );
    Ok(())
}

#[test]
fn missing_check_points_at_the_first_unchecked_item() {
    let source = "[agent]\ncommand = [\"a\"]\n\n[[item]]\nid = \"a\"\nprompt = \"p\"\ncheck = \"true\"\n\n[[item]]\nid = \"b\"\nprompt = \"p\"\n";
    assert_error(
        source,
        (9, 1),
        "[[item]]",
        "no check for item `b`",
        "add `command = \"…\"` under [check], or a `check` to this item",
    );
}

#[test]
fn missing_check_with_a_markdown_plan_points_at_plan() {
    let source = "plan = \"TODO.md\"\n[agent]\ncommand = [\"a\"]\n";
    assert_error(
        source,
        (1, 8),
        "\"TODO.md\"",
        "no check for the items of `plan`",
        "add `command = \"…\"` under [check]",
    );
}

#[test]
fn empty_check_commands_are_rejected() {
    assert_error(
        "[agent]\ncommand = [\"a\"]\n[check]\ncommand = \"  \"\n",
        (4, 11),
        "\"  \"",
        "`command` in [check] is empty",
        "shell command line",
    );
    assert_error(
        &format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"p\"\ncheck = \"\"\n"),
        (8, 9),
        "\"\"",
        "`check` of item `a` is empty",
        "shell command line",
    );
}

#[test]
fn item_without_prompt_points_at_the_item() {
    assert_error(
        &format!("{HEAD}\n[[item]]\nid = \"a\"\n"),
        (6, 1),
        "[[item]]",
        "item `a` has no `prompt`",
        "prompt = ",
    );
}

#[test]
fn item_with_blank_prompt_points_at_the_item() {
    assert_error(
        &format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"\"\"\n   \n\"\"\"\n"),
        (5, 1),
        "[[item]]",
        "item `a` has an empty `prompt`",
        "prompt = ",
    );
}

#[test]
fn item_without_id_points_at_the_item() {
    assert_error(
        &format!("{HEAD}[[item]]\nprompt = \"p\"\n"),
        (5, 1),
        "[[item]]",
        "missing `id` in [[item]]",
        "an item id is 1-64 characters",
    );
}

#[test]
fn invalid_ids_point_at_the_value() {
    for (id, reason) in [
        (
            "Add Greeting",
            "it must start with a lowercase letter or a digit",
        ),
        ("add greeting", "it may only contain"),
        ("a..b", "it must not contain `..`"),
        ("main.lock", "it must not end in `.lock`"),
        ("", "it is empty"),
    ] {
        assert_error(
            &format!("{HEAD}[[item]]\nid   =  \"{id}\"\nprompt = \"p\"\n"),
            (6, 9),
            &format!("\"{id}\""),
            &format!("invalid item id `{id}`: {reason}"),
            "it becomes a git branch and a directory name",
        );
    }
}

#[test]
fn duplicate_ids_point_at_the_second_and_name_the_first_line() {
    let source = format!(
        "{HEAD}[[item]]\nid = \"a\"\nprompt = \"p\"\n[[item]]\nid = \"b\"\nprompt = \"p\"\n[[item]]\nid = \"a\"\nprompt = \"q\"\n"
    );
    assert_error(
        &source,
        (12, 6),
        "\"a\"",
        "duplicate item id `a` (first used on line 6)",
        "unique",
    );
}

#[test]
fn zero_limits_point_at_the_value() {
    assert_error(
        &format!("{HEAD}[limits]\nmax_iterations = 0\n"),
        (6, 18),
        "0",
        "`max_iterations` in [limits] must be at least 1",
        "the default is 3",
    );
    assert_error(
        &format!("{HEAD}[limits]\nmax_iterations = 1\nmax_attempts = 0\n"),
        (7, 16),
        "0",
        "`max_attempts` in [limits] must be at least 1",
        "the default is 2",
    );
}

#[test]
fn no_work_points_at_the_start_of_the_file() {
    assert_error(
        HEAD,
        (1, 1),
        "",
        "no work to do: there is no [[item]] and no `plan`",
        "add an [[item]] with an `id` and a `prompt`, or a Markdown checklist with `plan = \"TODO.md\"`",
    );
}

#[test]
fn empty_plan_path_is_rejected() {
    assert_error(
        &format!("plan = \"\"\n{HEAD}"),
        (1, 8),
        "\"\"",
        "`plan` is empty",
        "TODO.md",
    );
}

#[test]
fn agent_problems() {
    assert_error(
        "[check]\ncommand = \"true\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n",
        (1, 1),
        "",
        "missing [agent] table",
        "kind = \"command\"",
    );
    assert_error(
        "[check]\ncommand = \"true\"\n[agent]\nkind = \"command\"\n",
        (3, 1),
        "[agent]",
        "missing `command` in [agent]",
        "argv",
    );
    assert_error(
        "[agent]\ncommand = []\n",
        (2, 11),
        "[]",
        "`command` in [agent] is empty",
        "command = [\"program\"",
    );
    assert_error(
        "[agent]\ncommand = [\"\", \"x\"]\n",
        (2, 11),
        "[\"\", \"x\"]",
        "`command` in [agent] has an empty program name",
        "argv",
    );
}

#[test]
fn cli_agent_kinds_take_binary_model_and_args_not_command() -> TestResult {
    for kind in ["claude", "codex", "gemini", "aider"] {
        let source = format!(
            "[agent]\nkind = \"{kind}\"\nbinary = \"/opt/{kind}\"\nmodel = \"m\"\nargs = [\"--x\"]\n[check]\ncommand = \"true\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n"
        );
        let config = parse(&source, FILE_NAME)?;
        assert_eq!(config.agent.kind.as_str(), kind);
        assert_eq!(
            config.agent.binary.as_deref(),
            Some(format!("/opt/{kind}").as_str())
        );
        assert_eq!(config.agent.model.as_deref(), Some("m"));
        assert_eq!(config.agent.args, ["--x"]);
        assert!(config.agent.command.is_empty());
        assert_error(
            &format!("[agent]\nkind = \"{kind}\"\ncommand = [\"a\"]\n"),
            (3, 11),
            "[\"a\"]",
            &format!("`command` is for `kind = \"command\"`, not `{kind}`"),
            "binary = ",
        );
    }
    Ok(())
}

#[test]
fn session_and_budget_limits_parse_and_are_checked() -> TestResult {
    let source = format!(
        "{HEAD}[limits]\nsession_timeout = \"45m\"\nstall_grace = \"2m\"\nstall_nudges = 1\nkill_grace = \"3s\"\nsession_tokens = 1000\nsession_turns = 20\nsession_usd = 1.5\nitem_tokens = 5000\nrun_tokens = 90000\nrun_usd = 12.0\nbudget_mode = \"warn\"\nbudget_soft = 0.5\ncache_read_weight = 0.2\n[[item]]\nid = \"a\"\nprompt = \"p\"\n"
    );
    let config = parse(&source, FILE_NAME)?;
    assert_eq!(config.session.timeout, Duration::from_secs(45 * 60));
    assert_eq!(config.session.stall_grace, Duration::from_secs(120));
    assert_eq!(config.session.stall_nudges, 1);
    assert_eq!(config.session.kill_grace, Duration::from_secs(3));
    assert_eq!(config.budget.session_tokens, Some(1000));
    assert_eq!(config.budget.session_turns, Some(20));
    assert_eq!(config.budget.session_usd, Some(1.5));
    assert_eq!(config.budget.item_tokens, Some(5000));
    assert_eq!(config.budget.run_tokens, Some(90000));
    assert_eq!(config.budget.run_usd, Some(12.0));
    assert_eq!(config.budget.mode, BudgetMode::Warn);
    assert_eq!(config.budget.soft, 0.5);
    assert_eq!(config.budget.cache_read_weight, 0.2);
    let defaults = parse(
        &format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"p\"\n"),
        FILE_NAME,
    )?;
    assert_eq!(defaults.session, SessionLimits::default());
    assert_eq!(defaults.budget, BudgetLimits::default());
    assert_eq!(defaults.budget.mode, BudgetMode::Enforce);
    assert_error(
        &format!("{HEAD}[limits]\nsession_tokens = 0\n"),
        (6, 18),
        "0",
        "`session_tokens` in [limits] must be more than 0",
        "no limit",
    );
    assert_error(
        &format!("{HEAD}[limits]\nrun_usd = -1.0\n"),
        (6, 11),
        "-1.0",
        "`run_usd` in [limits] must be a positive number",
        "no limit",
    );
    assert_error(
        &format!("{HEAD}[limits]\nbudget_mode = \"maybe\"\n"),
        (6, 15),
        "\"maybe\"",
        "unknown `budget_mode` `maybe` in [limits]",
        "enforce",
    );
    assert_error(
        &format!("{HEAD}[limits]\nstall_grace = \"soon\"\n"),
        (6, 15),
        "\"soon\"",
        "invalid `stall_grace` in [limits]",
        "",
    );
    Ok(())
}

#[test]
fn unknown_agent_kind_lists_the_valid_ones() {
    assert_error(
        "[agent]\nkind = \"robot\"\ncommand = [\"a\"]\n",
        (2, 8),
        "\"robot\"",
        "unknown agent kind `robot`, expected one of `command`, `claude`, `codex`, `gemini`, `aider`",
        "valid kinds: `command`, `claude`, `codex`, `gemini`, `aider`",
    );
}

#[test]
fn empty_integrate_target_is_rejected() {
    assert_error(
        &format!("{HEAD}[integrate]\ntarget = \"\"\n"),
        (6, 10),
        "\"\"",
        "`target` in [integrate] is empty",
        "target = \"main\"",
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    let source = format!("item = [{{ prompt = \"ééé\", id = \"Bad\" }}]\n{HEAD}");
    // `"Bad"` starts at byte 34, after 31 characters: column 32
    assert_eq!(source.find("\"Bad\""), Some(34));
    assert_error(&source, (1, 32), "\"Bad\"", "invalid item id `Bad`", "");
}

#[test]
fn worktree_seeds_are_paths_inside_the_repository() -> TestResult {
    let config = parse(
        &format!(
            "{HEAD}[worktree]\nseed = [\".mcp.json\", \".claude/\", \"config/.env.local\"]\n[[item]]\nid = \"a\"\nprompt = \"p\"\n"
        ),
        FILE_NAME,
    )?;
    assert_eq!(
        config.seed,
        [
            PathBuf::from(".mcp.json"),
            PathBuf::from(".claude"),
            PathBuf::from("config/.env.local")
        ]
    );
    for bad in ["/etc/passwd", "../x", ".", ""] {
        let err = error(&format!("{HEAD}[worktree]\nseed = [\"{bad}\"]\n"));
        assert_eq!((err.line, err.column), (6, 9), "{bad}: {err:?}");
        assert!(
            err.message.contains("not a path inside the repository"),
            "{err:?}"
        );
    }
    Ok(())
}

const ITEM: &str = "[[item]]\nid = \"a\"\nprompt = \"p\"\n";

#[test]
fn gates_take_modes_and_budget_mode_is_an_alias() -> TestResult {
    use crate::gate::GateMode;
    let config = parse(
        &format!(
            "{HEAD}[gates]\nstall = \"off\"\nadequacy = \"log\"\nfile = \"gates.toml\"\n{ITEM}"
        ),
        FILE_NAME,
    )?;
    assert_eq!(config.gates.mode("stall"), GateMode::Off);
    assert_eq!(config.gates.mode("adequacy"), GateMode::Log);
    assert_eq!(config.gates.mode("budget"), GateMode::Enforce);
    assert_eq!(
        config.gates.file(),
        Some(std::path::Path::new("gates.toml"))
    );
    let config = parse(
        &format!("{HEAD}[limits]\nbudget_mode = \"warn\"\n{ITEM}"),
        FILE_NAME,
    )?;
    assert_eq!(config.gates.mode("budget"), GateMode::Log);
    let config = parse(
        &format!("{HEAD}[gates]\nbudget = \"off\"\n{ITEM}"),
        FILE_NAME,
    )?;
    assert_eq!(config.budget.mode, BudgetMode::Warn);
    Ok(())
}

/// `HEAD`, one item, then `tail`.
fn with_notify(tail: &str) -> String {
    format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"p\"\n{tail}")
}

#[test]
fn notify_and_alert_parse_with_their_defaults() -> TestResult {
    let config = parse(&with_notify(""), FILE_NAME)?;
    assert_eq!(config.notify, NotifyConfig::default());
    assert!(config.notify.desktop, "desktop is on by default");
    assert_eq!(config.alert.no_ship_hours, 6);

    let config = parse(
        &with_notify(
            "[notify]\ndesktop = false\n[[notify.webhook]]\nurl = \"https://ntfy.sh/t\"\nformat = \"ntfy\"\n\
             [[notify.webhook]]\nurl = \"http://127.0.0.1:9/h\"\n\
             [[notify.command]]\nargv = [\"notify.sh\", \"-q\"]\ntimeout = \"5s\"\n[alert]\nno_ship_hours = 0\n",
        ),
        FILE_NAME,
    )?;
    assert_eq!(
        config.notify,
        NotifyConfig {
            desktop: false,
            webhooks: vec![
                WebhookConfig {
                    url: "https://ntfy.sh/t".into(),
                    format: WebhookFormat::Ntfy
                },
                WebhookConfig {
                    url: "http://127.0.0.1:9/h".into(),
                    format: WebhookFormat::Json
                },
            ],
            commands: vec![CommandChannelConfig {
                argv: vec!["notify.sh".into(), "-q".into()],
                timeout: Duration::from_secs(5),
            }],
        }
    );
    assert_eq!(config.alert.no_ship_hours, 0);
    Ok(())
}

// ---- [review], [triage], [agent.review], [agent.second_opinion] ----

#[test]
fn review_tables_parse_with_their_values() -> TestResult {
    let source = format!(
        "{HEAD}[agent.review]\nkind = \"command\"\ncommand = [\"sh\", \"review.sh\"]\n\
         [agent.second_opinion]\ncommand = [\"sh\", \"second.sh\"]\n\
         [review]\nwhen = \"risky\"\nrisky_paths = [\"auth/**\"]\nrisky_lines = 50\n\
         max_review_cycles = 2\non_timeout = \"salvage-if-done\"\ntimeout = \"5m\"\n\
         [triage]\nfalse_positive = \"escalate\"\nno_safe_path = \"escalate\"\n\
         [[item]]\nid = \"a\"\nprompt = \"do a\"\n"
    );
    let config = parse(&source, FILE_NAME)?;
    let r = &config.review;
    assert_eq!(r.review.when, ReviewWhen::Risky);
    assert_eq!(r.review.risky_paths, vec!["auth/**".to_string()]);
    assert_eq!(r.review.risky_lines, 50);
    assert_eq!(r.review.max_review_cycles, 2);
    assert_eq!(r.review.on_timeout, OnTimeout::SalvageIfDone);
    assert_eq!(r.review.timeout, Some(Duration::from_secs(300)));
    assert_eq!(r.triage.false_positive, TriageAction::Escalate);
    assert_eq!(r.triage.mechanical, TriageAction::Fix);
    assert_eq!(
        r.agent.as_ref().map(|a| a.command.clone()),
        Some(vec!["sh".to_string(), "review.sh".to_string()])
    );
    assert!(r.second_opinion.is_some());
    assert_eq!(config.agent.command, vec!["sh", "agent.sh"]);
    Ok(())
}

#[test]
fn review_defaults_review_nothing() -> TestResult {
    let config = parse(
        &format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"do a\"\n"),
        FILE_NAME,
    )?;
    assert_eq!(config.review, ReviewSetup::default());
    assert_eq!(config.review.review.when, ReviewWhen::Never);
    assert_eq!(config.review.review.max_review_cycles, 3);
    Ok(())
}

#[test]
fn gate_errors_are_located() {
    assert_error(
        &format!("{HEAD}[gates]\nstal = \"log\"\n{ITEM}"),
        (6, 1),
        "stal",
        "unknown gate `stal`",
        "[gates]",
    );
    assert_error(
        &format!("{HEAD}[gates]\nadequacy = \"off\"\n{ITEM}"),
        (6, 12),
        "\"off\"",
        "product gate and can only be \"enforce\" or \"log\"",
        "[gates]",
    );
    assert_error(
        &format!("{HEAD}[gates]\nblocked_paths = \"log\"\n{ITEM}"),
        (6, 17),
        "\"log\"",
        "safety gate and can only be \"enforce\"",
        "[gates]",
    );
    assert_error(
        &format!("{HEAD}[limits]\nbudget_mode = \"warn\"\n[gates]\nbudget = \"enforce\"\n{ITEM}"),
        (6, 15),
        "\"warn\"",
        "disagrees",
        "older name",
    );
}

#[test]
fn bad_notify_values_are_located() {
    assert_error(
        &with_notify("[[notify.webhook]]\nurl = \"ftp://example.com/x\"\n"),
        (9, 7),
        "\"ftp://example.com/x\"",
        "invalid `url` in [[notify.webhook]]: scheme `ftp` is not supported",
        "give a full URL",
    );
    assert_error(
        &with_notify("[[notify.webhook]]\nurl = \"example.com/x\"\n"),
        (9, 7),
        "\"example.com/x\"",
        "it has no scheme",
        "https://",
    );
    assert_error(
        &with_notify("[[notify.webhook]]\nurl = \"https://x.io/\"\nformat = \"xml\"\n"),
        (10, 10),
        "\"xml\"",
        "unknown `format` `xml` in [[notify.webhook]]",
        "\"ntfy\"",
    );
    assert_error(
        &with_notify("[[notify.webhook]]\nformat = \"json\"\n"),
        (8, 1),
        "[[notify.webhook]]",
        "missing `url` in [[notify.webhook]]",
        "url = ",
    );
    assert_error(
        &with_notify("[[notify.command]]\nargv = []\n"),
        (9, 8),
        "[]",
        "`argv` in [[notify.command]] has no program name",
        "JSON on stdin",
    );
    assert_error(
        &with_notify("[notify]\nsound = true\n"),
        (9, 1),
        "sound",
        "unknown field `sound`",
        "nightshift init",
    );
    assert_error(
        &with_notify("[alert]\nno_ship_hours = -1\n"),
        (9, 17),
        "-1",
        "",
        "",
    );
}

#[test]
fn bad_review_values_point_at_the_value() {
    let tail = "[[item]]\nid = \"a\"\nprompt = \"do a\"\n";
    let e = error(&format!("{HEAD}[review]\nwhen = \"sometimes\"\n{tail}"));
    assert!(
        e.message.contains("unknown `when` `sometimes` in [review]"),
        "{e:?}"
    );
    assert_eq!(e.line, 6);
    let e = error(&format!("{HEAD}[review]\non_timeout = \"salvage\"\n{tail}"));
    assert!(e.message.contains("unknown `on_timeout`"), "{e:?}");
    let e = error(&format!("{HEAD}[review]\nmax_review_cycles = 0\n{tail}"));
    assert!(e.message.contains("at least 1"), "{e:?}");
    let e = error(&format!(
        "{HEAD}[triage]\nno_safe_path = \"ship_with_debt\"\n{tail}"
    ));
    assert!(e.message.contains("can only be"), "{e:?}");
    let e = error(&format!("{HEAD}[triage]\nreal_doubt = \"shrug\"\n{tail}"));
    assert!(e.message.contains("unknown action `shrug`"), "{e:?}");
    let e = error(&format!(
        "{HEAD}[agent.review]\ncommand = [\"x\"]\n[agent.review.review]\ncommand = [\"y\"]\n{tail}"
    ));
    assert!(e.message.contains("cannot nest"), "{e:?}");
}

#[test]
fn a_prompt_with_a_nul_is_refused_where_the_escape_is() {
    let source = format!("{HEAD}[[item]]\nid = \"a\"\nprompt = \"fine\\u0000not\"\n");
    assert_error(
        &source,
        (7, 15),
        "\\u0000",
        "the `prompt` of item `a` holds a NUL character",
        "remove the `\\u0000`",
    );
}

#[test]
fn every_config_path_stays_inside_the_repository() {
    let item = "[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    for (source, at, span_text) in [
        (
            format!("{HEAD}results = \"../../../../victim.txt\"\n{item}"),
            (5, 11),
            "\"../../../../victim.txt\"",
        ),
        (
            format!("plan = \"/etc/hostname\"\n{HEAD}{item}"),
            (1, 8),
            "\"/etc/hostname\"",
        ),
        (
            format!("{HEAD}[gates]\nfile = \"../gates.toml\"\n{item}"),
            (6, 8),
            "\"../gates.toml\"",
        ),
        (
            format!("{HEAD}results = \"target/../../junit.xml\"\n{item}"),
            (5, 11),
            "\"target/../../junit.xml\"",
        ),
    ] {
        assert_error(
            &source,
            at,
            span_text,
            "must stay inside the repository",
            "relative",
        );
    }
}

#[test]
fn a_config_path_through_a_symlink_out_of_the_repository_is_refused() -> TestResult {
    let outside = tempfile::tempdir()?;
    let repo = tempfile::tempdir()?;
    std::os::unix::fs::symlink(outside.path(), repo.path().join("out"))?;
    std::fs::create_dir(repo.path().join("reports"))?;
    std::os::unix::fs::symlink(repo.path().join("reports"), repo.path().join("inside-link"))?;
    let file = repo.path().join(FILE_NAME);
    let item = "[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    std::fs::write(&file, format!("{HEAD}results = \"out/junit.xml\"\n{item}"))?;
    let Err(ConfigError::Invalid(error)) = load(&file) else {
        panic!("a results path through a symlink out of the repository was accepted");
    };
    assert_eq!((error.line, error.column), (5, 11), "{error:?}");
    assert!(error.message.contains("symlink"), "{error:?}");
    // A symlink that stays inside is fine, and so is a path that does not exist yet.
    std::fs::write(
        &file,
        format!("{HEAD}results = \"inside-link/new/junit.xml\"\n{item}"),
    )?;
    assert!(load(&file)?.check.results.is_some());
    Ok(())
}

#[test]
fn worktree_env_is_read_with_repo_expanded_and_bad_names_are_located() -> TestResult {
    let item = "[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    let config = parse(
        &format!(
            "{HEAD}[worktree]\nenv = {{ CARGO_TARGET_DIR = \"{{repo}}/.nightshift/cargo-target\", RUSTFLAGS = \"\" }}\n{item}"
        ),
        "nightshift.toml",
    )?;
    assert_eq!(
        config.worktree_env(Path::new("/src/app")),
        [
            (
                "CARGO_TARGET_DIR".to_owned(),
                "/src/app/.nightshift/cargo-target".to_owned()
            ),
            ("RUSTFLAGS".to_owned(), String::new()),
        ]
    );
    assert_error(
        &format!("{HEAD}[worktree]\nenv = {{ \"A-B\" = \"x\" }}\n{item}"),
        (6, 9),
        "\"A-B\"",
        "is not a variable name",
        "letters, digits",
    );
    assert_error(
        &format!("{HEAD}[worktree]\nenv = {{ NIGHTSHIFT_ITEM = \"x\" }}\n{item}"),
        (6, 9),
        "NIGHTSHIFT_ITEM",
        "nightshift's own variable",
        "remove it",
    );
    Ok(())
}

#[test]
fn agent_policy_keys_parse_and_are_checked_against_the_kind() -> TestResult {
    let source = "[agent]\nkind = \"claude\"\npermission_mode = \"bypassPermissions\"\n\
                  allowed_tools = [\"Read\"]\nis_sandbox = true\nenv_pass = [\"MY_TOKEN\", \"CORP_*\"]\n\
                  [check]\ncommand = \"true\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    let config = parse(source, FILE_NAME)?;
    assert_eq!(
        config.agent.policy,
        crate::config::AgentPolicy {
            permission_mode: Some("bypassPermissions".into()),
            allowed_tools: Some(vec!["Read".into()]),
            is_sandbox: true,
            env_pass: vec!["MY_TOKEN".into(), "CORP_*".into()],
        }
    );
    let tail = "[check]\ncommand = \"true\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    assert_error(
        &format!("[agent]\nkind = \"codex\"\npermission_mode = \"acceptEdits\"\n{tail}"),
        (3, 19),
        "\"acceptEdits\"",
        "unknown `permission_mode` `acceptEdits` for codex",
        "workspace-write",
    );
    assert_error(
        &format!("[agent]\nkind = \"aider\"\npermission_mode = \"yolo\"\n{tail}"),
        (3, 19),
        "\"yolo\"",
        "`permission_mode` is not known for `kind = \"aider\"`",
        "docs/agents.md",
    );
    assert_error(
        &format!("[agent]\nkind = \"gemini\"\nallowed_tools = [\"x\"]\n{tail}"),
        (3, 17),
        "[\"x\"]",
        "`allowed_tools` is for `kind = \"claude\"`",
        "",
    );
    assert_error(
        &format!("[agent]\nkind = \"claude\"\nenv_pass = [\"A B\"]\n{tail}"),
        (3, 12),
        "[\"A B\"]",
        "`env_pass` names an invalid variable `A B`",
        "letters, digits",
    );
    Ok(())
}

#[test]
fn check_network_and_sandbox_require_parse() -> TestResult {
    let item = "[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    let config = parse(&format!("{HEAD}{item}"), FILE_NAME)?;
    assert_eq!(config.check.network, None);
    assert!(!config.sandbox.require);
    let source = format!(
        "[agent]\ncommand = [\"sh\"]\n[check]\ncommand = \"c\"\nnetwork = \"host\"\n\
         [sandbox]\nrequire = true\n{item}"
    );
    let config = parse(&source, FILE_NAME)?;
    assert_eq!(config.check.network, Some(crate::sandbox::Network::Host));
    assert!(config.sandbox.require);
    let source = format!("{HEAD}network = \"none\"\n{item}");
    assert_eq!(
        parse(&source, FILE_NAME)?.check.network,
        Some(crate::sandbox::Network::None)
    );
    Ok(())
}

#[test]
fn an_unknown_check_network_is_refused_at_its_value() {
    let source = format!("{HEAD}network = \"vpn\"\n[[item]]\nid = \"a\"\nprompt = \"p\"\n");
    assert_error(
        &source,
        (5, 11),
        "\"vpn\"",
        "invalid `network` in [check]: `vpn`",
        "network = \"host\"",
    );
}
