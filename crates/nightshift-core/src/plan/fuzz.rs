//! Property tests over the plan parsers: no Markdown checklist and no `nightshift.toml`, built
//! from their own vocabulary or arbitrary, makes a parser panic; every item a checklist gives
//! has a valid id. Bounded for `cargo test` (`PROPTEST_CASES` raises it).

use proptest::prelude::*;

use super::markdown::parse_markdown;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Fragments the checklist parser and the config parser look for, and some that break
/// assumptions (non-ASCII, NUL, CR, deep indentation).
const VOCABULARY: &[&str] = &[
    "- [ ] ",
    "- [x] ",
    "- [X] ",
    "* [ ] ",
    "+ [ ] ",
    "1. [ ] ",
    "2) [ ] ",
    "{#an-id}",
    "{#}",
    "{#ÿ名}",
    "```",
    "~~~",
    "<!--",
    "-->",
    "  ",
    "    ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\0",
    "Add a greet() function",
    "ÿ",
    "名前",
    "[[item]]\n",
    "id = \"a\"\n",
    "prompt = \"do it\"\n",
    "prompt = \"\"\"\n",
    "\"\"\"\n",
    "[check]\ncommand = \"true\"\n",
    "plan = \"PLAN.md\"\n",
    "check = \"\"\n",
    "\\u0000",
    "=",
    "\"",
];

fn source() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => proptest::sample::select(VOCABULARY).prop_map(str::to_owned),
        2 => any::<char>().prop_map(|c| c.to_string()),
        1 => any::<String>(),
    ];
    proptest::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_checklist_parses_or_is_refused_and_every_item_has_a_valid_id(text in source()) {
        if let Ok(items) = parse_markdown(&text, "PLAN.md") {
            for item in items {
                prop_assert!(super::id::validate_id(&item.id).is_ok(), "{:?}", item.id);
            }
        }
    }

    #[test]
    fn any_config_parses_or_is_refused(text in source(), raw in any::<String>()) {
        let _ = crate::config::parse(&text, "nightshift.toml");
        let _ = crate::config::parse(&raw, "nightshift.toml");
        let _ = parse_markdown(&raw, "PLAN.md");
    }
}
