use super::*;

fn items(source: &str) -> Vec<Item> {
    match parse_markdown(source, "TODO.md") {
        Ok(items) => items,
        Err(error) => panic!("{error}"),
    }
}

fn ids(source: &str) -> Vec<String> {
    items(source).into_iter().map(|item| item.id).collect()
}

fn error(source: &str) -> SourceError {
    match parse_markdown(source, "TODO.md") {
        Ok(items) => panic!("expected an error, got {items:?}"),
        Err(PlanError::Invalid(error)) => *error,
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn unchecked_items_become_items_and_checked_ones_are_skipped() {
    let source = "# Plan\n\nSome intro.\n\n- [ ] Add a greet() function\n- [x] Set up CI\n* [ ] Write the README\n- [X] Done thing\n+ [ ] Fix the parser\n- plain bullet\n1. [ ] Numbered task\n2) [ ] Other numbered\n";
    let items = items(source);
    let summary: Vec<_> = items
        .iter()
        .map(|item| (item.id.as_str(), item.prompt.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("add-a-greet-function", "Add a greet() function"),
            ("write-the-readme", "Write the README"),
            ("fix-the-parser", "Fix the parser"),
            ("numbered-task", "Numbered task"),
            ("other-numbered", "Other numbered"),
        ]
    );
    assert_eq!(
        items[0].source,
        ItemSource::Markdown {
            path: PathBuf::from("TODO.md"),
            line: 5
        }
    );
    assert_eq!(
        items[2].source,
        ItemSource::Markdown {
            path: PathBuf::from("TODO.md"),
            line: 9
        }
    );
    assert!(items.iter().all(|item| item.check.is_none()));
}

#[test]
fn things_that_are_not_task_lines() {
    let source = "-[ ] no space\n- [ ]no space after box\n- [y] other state\n- [] empty box\n[ ] no bullet\n- [ ]\tTab after box ok\n";
    assert_eq!(ids(source), ["tab-after-box-ok"]);
}

#[test]
fn indented_task_lines_are_items_too() {
    let source = "- [ ] Parent\n    - [ ] Child task\n\t- [ ] Tabbed child\n";
    assert_eq!(ids(source), ["parent", "child-task", "tabbed-child"]);
    assert_eq!(items(source)[0].prompt, "Parent");
}

#[test]
fn continuation_lines_are_appended_to_the_prompt() {
    let source = "\
- [ ] Add a greet() function
  It takes a name and returns `Hello, <name>!`.

  - handle the empty name
    - by greeting the world
  ```rust
  - [ ] not a task, inside code
  ```

- [ ] Next item
not indented: ends nothing since no block
  - [x] checked, with detail
    that is skipped
- [ ] Last
   trailing detail   \r
";
    let items = items(source);
    assert_eq!(items.len(), 3, "{items:#?}");
    assert_eq!(
        items[0].prompt,
        "Add a greet() function\nIt takes a name and returns `Hello, <name>!`.\n\n- handle the empty name\n  - by greeting the world\n```rust\n- [ ] not a task, inside code\n```"
    );
    assert_eq!(items[1].prompt, "Next item");
    assert_eq!(items[2].prompt, "Last\ntrailing detail");
}

#[test]
fn a_less_indented_line_ends_the_item() {
    let source = "  - [ ] Item\n  same indent is not detail\n    deeper after the break is not detail either\n";
    assert_eq!(items(source)[0].prompt, "Item");
}

#[test]
fn checked_items_swallow_their_detail() {
    // docs/config.md: checked lines are skipped with everything under them, sub-tasks included.
    let source = "- [x] Done\n  detail of done\n  - [ ] sub task of a done item is done with it\n    detail\n  still under the done item\n- [ ] Open\n";
    assert_eq!(ids(source), ["open"]);
    assert_eq!(items(source)[0].prompt, "Open");
}

#[test]
fn fenced_code_and_comments_at_top_level_produce_no_items() {
    let source = "```md\n- [ ] example in a fence\n```\n<!--\n- [ ] commented out\n-->\n~~~\n- [ ] tilde fence\n~~~\n<!-- - [ ] inline comment -->\n- [ ] Real\n";
    assert_eq!(ids(source), ["real"]);
}

#[test]
fn all_checked_is_an_empty_plan() {
    assert!(items("- [x] a\n- [X] b\n").is_empty());
    assert!(items("").is_empty());
    assert!(items("# nothing here\n").is_empty());
}

#[test]
fn explicit_ids() {
    let source = "- [ ] Add a greet() function {#greet}\n- [ ] Same words {#v2.fix_1}\n- [ ] Braces {not an id}\n- [ ] Set {#a} and {b}\n";
    let items = items(source);
    assert_eq!(items[0].id, "greet");
    assert_eq!(items[0].prompt, "Add a greet() function");
    assert_eq!(items[1].id, "v2.fix_1");
    assert_eq!(items[2].id, "braces-not-an-id");
    assert_eq!(items[2].prompt, "Braces {not an id}");
    assert_eq!(items[3].id, "set-a-and-b");
    assert_eq!(items[3].prompt, "Set {#a} and {b}");
}

#[test]
fn invalid_explicit_id_is_located() {
    let error = error("# Plan\n- [ ] Fix it {#Fix It}\n");
    assert_eq!((error.line, error.column), (2, 14));
    assert_eq!(&error.source_text[error.span.clone()], "{#Fix It}");
    assert_eq!(
        error.message,
        "invalid item id `Fix It`: it must start with a lowercase letter or a digit"
    );
    assert!(error.help.unwrap_or_default().contains("an item id is"));
    let error = self::error("- [ ] Fix it {#}\n");
    assert_eq!(error.message, "invalid item id ``: it is empty");
}

#[test]
fn duplicate_explicit_ids_point_at_the_second() {
    let error = error("- [ ] One {#x}\n- [ ] Two\n  - [ ] Three {#x}\n");
    assert_eq!((error.line, error.column), (3, 15));
    assert_eq!(
        error.message,
        "duplicate item id `x` (first used on line 1)"
    );
    assert!(error.help.unwrap_or_default().contains("{#my-id}"));
}

#[test]
fn empty_items_are_errors() {
    for (source, at) in [
        ("# Plan\n\n- [ ]\n", (3, 1)),
        ("- [ ] ok\n   * [ ]   \n", (2, 4)),
        ("- [ ] ok\n\t- [ ] {#only-an-id}\n", (2, 2)),
    ] {
        let error = error(source);
        assert_eq!((error.line, error.column), at, "{source:?}");
        assert_eq!(error.message, "empty checklist item");
        assert_eq!(error.file_name, "TODO.md");
        assert_eq!(
            error.to_string(),
            format!("TODO.md:{}:{}: empty checklist item", at.0, at.1)
        );
    }
}

#[test]
fn colliding_slugs_get_a_hash_suffix() {
    let source = "- [ ] Fix the bug!\n- [ ] Fix the bug?\n- [ ] fix THE bug\n";
    let ids = ids(source);
    assert_eq!(ids[0], "fix-the-bug");
    assert_eq!(
        ids[1],
        format!("fix-the-bug-{}", short_hash("Fix the bug?"))
    );
    assert_eq!(ids[2], format!("fix-the-bug-{}", short_hash("fix THE bug")));
    assert_ne!(ids[1], ids[2]);
    for id in &ids {
        assert_eq!(validate_id(id), Ok(()));
    }
}

#[test]
fn a_slug_never_takes_an_explicit_id_even_when_it_comes_first() {
    let ids = ids("- [ ] Greet\n- [ ] Something else {#greet}\n");
    assert_eq!(
        ids,
        [format!("greet-{}", short_hash("Greet")), "greet".to_owned()]
    );
}

#[test]
fn ids_are_stable_when_items_are_reordered_or_inserted() {
    let before = ids("- [ ] Add greeting\n- [ ] Fix parser\n- [ ] Write docs {#docs}\n");
    let after = ids(
        "- [ ] Write docs {#docs}\n- [ ] New thing\n- [ ] Fix parser\n- [x] Add greeting\n- [ ] Add greeting\n",
    );
    assert_eq!(before, ["add-greeting", "fix-parser", "docs"]);
    assert_eq!(after, ["docs", "new-thing", "fix-parser", "add-greeting"]);
}

#[test]
fn identical_items_are_an_error_at_the_duplicate() {
    let error = error("- [ ] Fix the bug\n- [ ] Other\n  - [ ] Fix the bug\n");
    assert_eq!((error.line, error.column), (3, 9));
    assert_eq!(&error.source_text[error.span.clone()], "Fix the bug");
    assert_eq!(
        error.message,
        "duplicate checklist item (same text as line 1)"
    );
    assert!(error.help.unwrap_or_default().contains("explicit id"));
}

#[test]
fn same_first_line_with_different_detail_is_not_a_duplicate() {
    let items = items("- [ ] Fix the bug\n  in the parser\n- [ ] Fix the bug\n  in the lexer\n");
    assert_eq!(items[0].id, "fix-the-bug");
    assert_eq!(
        items[1].id,
        format!("fix-the-bug-{}", short_hash("Fix the bug\nin the lexer"))
    );
}

#[test]
fn a_byte_order_mark_is_ignored() {
    assert_eq!(ids("\u{feff}- [ ] First\n"), ["first"]);
    let error = error("\u{feff}- [ ]\n");
    assert_eq!((error.line, error.column), (1, 1));
    assert_eq!(&error.source_text[error.span.clone()], "- [ ]");
}

#[test]
fn crlf_line_endings() {
    let items = items("- [ ] One\r\n  detail\r\n- [x] Two\r\n- [ ] Three {#three}\r\n");
    assert_eq!(items[0].prompt, "One\ndetail");
    assert_eq!(items[1].id, "three");
}

#[test]
fn a_plan_with_a_nul_is_refused_at_the_nul() {
    let e = error("- [ ] one\n- [ ] t\0wo\n");
    assert_eq!((e.line, e.column), (2, 8), "{e:?}");
    assert!(e.message.contains("NUL"), "{}", e.message);
}

#[test]
fn task_lines_under_a_checked_item_are_skipped_with_it() {
    let source = "- [x] Done parent\n  - [ ] open child\n    - [ ] grandchild\n  - [x] done child\n    detail\n- [ ] Next\n  - [ ] nested open\n";
    assert_eq!(ids(source), ["next", "nested-open"]);
}
