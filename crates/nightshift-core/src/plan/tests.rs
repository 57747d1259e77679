use super::*;
use crate::config;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const CONFIG: &str = r#"plan = "docs/TODO.md"
[agent]
command = ["sh", "agent.sh"]
[check]
command = "sh check.sh"
[[item]]
id = "first"
prompt = "Do the first thing"
check = "sh check.sh first"
[[item]]
id = "second"
prompt = "Do the second thing"
"#;

fn setup(
    config_source: &str,
    markdown: Option<&str>,
) -> Result<(tempfile::TempDir, Config), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let config = config::parse(config_source, config::FILE_NAME)?;
    if let Some(markdown) = markdown {
        std::fs::create_dir_all(dir.path().join("docs"))?;
        std::fs::write(dir.path().join("docs/TODO.md"), markdown)?;
    }
    Ok((dir, config))
}

#[test]
fn config_items_come_first_then_the_checklist() -> TestResult {
    let (dir, config) = setup(
        CONFIG,
        Some("# TODO\n- [x] Old\n- [ ] Add greeting\n  say hello\n- [ ] Fix parser {#parser}\n"),
    )?;
    let plan = load(&config, dir.path())?;
    let summary: Vec<_> = plan
        .items
        .iter()
        .map(|item| {
            (
                item.id.as_str(),
                item.prompt.as_str(),
                item.check.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("first", "Do the first thing", Some("sh check.sh first")),
            ("second", "Do the second thing", None),
            ("add-greeting", "Add greeting\nsay hello", None),
            ("parser", "Fix parser", None),
        ]
    );
    assert_eq!(plan.items[0].source, ItemSource::Config);
    assert_eq!(
        plan.items[3].source,
        ItemSource::Markdown {
            path: PathBuf::from("docs/TODO.md"),
            line: 5
        }
    );
    assert_eq!(
        plan.get("parser").map(|item| item.prompt.as_str()),
        Some("Fix parser")
    );
    assert_eq!(plan.get("nope"), None);
    Ok(())
}

#[test]
fn without_a_plan_only_config_items() -> TestResult {
    let source = CONFIG.replace("plan = \"docs/TODO.md\"\n", "");
    let (dir, config) = setup(&source, None)?;
    let plan = load(&config, dir.path())?;
    assert_eq!(plan.items.len(), 2);
    Ok(())
}

#[test]
fn an_all_checked_checklist_adds_nothing() -> TestResult {
    let (dir, config) = setup(CONFIG, Some("- [x] done\n"))?;
    assert_eq!(load(&config, dir.path())?.items.len(), 2);
    Ok(())
}

#[test]
fn a_missing_checklist_is_a_read_error() -> TestResult {
    let (dir, config) = setup(CONFIG, None)?;
    match load(&config, dir.path()) {
        Err(error @ PlanError::Read { .. }) => {
            let expected = dir.path().join("docs/TODO.md");
            assert_eq!(error.to_string(), format!("read {}", expected.display()));
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn checklist_errors_name_the_checklist() -> TestResult {
    let (dir, config) = setup(CONFIG, Some("- [ ] ok\n- [ ]\n"))?;
    match load(&config, dir.path()) {
        Err(PlanError::Invalid(error)) => {
            assert_eq!(error.to_string(), "docs/TODO.md:2:1: empty checklist item");
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn a_checklist_id_colliding_with_a_config_item_is_an_error() -> TestResult {
    for (markdown, at, span_text) in [
        ("- [ ] Something\n- [ ] Second\n", (2, 7), "Second"),
        (
            "- [ ] Something\n  - [ ] Other {#first}\n",
            (2, 15),
            "{#first}",
        ),
    ] {
        let (dir, config) = setup(CONFIG, Some(markdown))?;
        match load(&config, dir.path()) {
            Err(PlanError::Invalid(error)) => {
                assert_eq!((error.line, error.column), at, "{markdown:?}");
                assert_eq!(&error.source_text[error.span.clone()], span_text);
                assert_eq!(error.file_name, "docs/TODO.md");
                assert!(
                    error
                        .message
                        .contains("is already used by an [[item]] in nightshift.toml"),
                    "{error:?}"
                );
                assert!(
                    error
                        .help
                        .clone()
                        .unwrap_or_default()
                        .contains("{#other-id}")
                );
            }
            other => panic!("{other:?}"),
        }
    }
    Ok(())
}
