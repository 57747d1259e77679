//! Inputs met in the field that used to wedge a run (issue 13): a prompt past the argument
//! limit, nested repositories, a user branch named like nightshift's namespace.

use crate::harness::*;

#[test]
fn a_prompt_past_the_argument_limit_ships_and_its_trailers_survive() {
    let repo = Repo::new(&project());
    repo.agent("big", &solves("big"));
    // 200 KiB of prompt: as `git commit -m <prompt>` it failed with E2BIG on every try.
    let filler = "Make done/big say ok. ".repeat(10_000);
    let mut config = repo.agent_table();
    config.push_str(&format!(
        "\n[check]\ntimeout = \"1m\"\n\n[[item]]\nid = \"big\"\nprompt = \"{filler}\"\ncheck = \"sh check.sh big\"\n"
    ));
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["big"]);
    let message = repo.git(&["log", "-1", "--format=%B", "main"]);
    assert!(message.len() < 70 * 1024, "bounded: {}", message.len());
    assert!(message.contains("bytes cut"), "the cut is noted");
    repo.assert_clean_end();
}
