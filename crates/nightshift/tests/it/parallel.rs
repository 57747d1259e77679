//! Parallel items (issue 14): `[run] max_parallel`, admission by declared paths, the merge
//! queue, and sessions that do not reach each other's processes.

use nightshift_core::store::EventKind;

use crate::harness::*;

/// A shell agent: `script` runs in the attempt's checkout with the item's environment.
fn shell_agent(repo: &Repo, script: &str) -> String {
    let path = repo.agent_dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
        path.display()
    )
}

/// nightshift.toml: the shell agent, `check.sh <id>` per item, each item's declared paths.
fn parallel_plan(
    repo: &Repo,
    agent: &str,
    max_parallel: u32,
    items: &[(&str, &[&str])],
    max_iterations: u32,
) -> String {
    let mut text = agent.to_owned();
    text.push_str(&format!(
        "\n[check]\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = {max_iterations}\nmax_attempts = 1\n\n[run]\nmax_parallel = {max_parallel}\n"
    ));
    for (id, paths) in items {
        text.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"sh check.sh {id}\"\n"
        ));
        if !paths.is_empty() {
            let list: Vec<String> = paths.iter().map(|p| format!("\"{p}\"")).collect();
            text.push_str(&format!("paths = [{}]\n", list.join(", ")));
        }
    }
    let _ = repo;
    text
}

/// Each item's sessions as (started seq, ended seq), from the journal.
fn session_spans(repo: &Repo) -> Vec<(String, i64, i64)> {
    let events = repo.store().events_after(0, 100_000).unwrap();
    let mut open: Vec<(String, i64)> = Vec::new();
    let mut spans = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::SessionStarted { item, .. } => open.push((item.clone(), e.seq)),
            EventKind::SessionEnded { item, .. } => {
                if let Some(i) = open.iter().position(|(o, _)| o == item) {
                    let (item, start) = open.remove(i);
                    spans.push((item, start, e.seq));
                }
            }
            _ => {}
        }
    }
    spans
}

/// The most sessions that were open at once.
fn most_at_once(spans: &[(String, i64, i64)]) -> usize {
    spans
        .iter()
        .map(|(_, start, _)| {
            spans
                .iter()
                .filter(|(_, s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn overlap(spans: &[(String, i64, i64)], a: &str, b: &str) -> bool {
    spans.iter().filter(|s| s.0 == a).any(|(_, sa, ea)| {
        spans
            .iter()
            .filter(|s| s.0 == b)
            .any(|(_, sb, eb)| sa < eb && sb < ea)
    })
}

/// A barrier of `n` sessions in the directory `dir`: each agent announces itself, then waits
/// (bounded) until `n` have; alone, it gives up after 60 s and solves nothing.
fn barrier_agent(dir: &std::path::Path, n: &str, then: &str) -> String {
    format!(
        "mkdir -p {dir}\n: > {dir}/$NIGHTSHIFT_ITEM\n\
         i=0\nwhile [ \"$(ls {dir} | wc -l)\" -lt {n} ]; do\n  i=$((i+1)); [ $i -gt 1200 ] && exit 0\n  sleep 0.05\ndone\n{then}\n",
        dir = dir.display()
    )
}

#[test]
fn four_sessions_run_at_once_and_every_item_ships_once() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("barrier");
    // Items 1–4 meet when four have started; items 5–8 when all eight have.
    let agent = shell_agent(
        &repo,
        &barrier_agent(
            &barrier,
            "$(( $(echo $NIGHTSHIFT_ITEM | tr -dc 0-9) <= 4 ? 4 : 8 ))",
            "mkdir -p done/$NIGHTSHIFT_ITEM && echo ok > done/$NIGHTSHIFT_ITEM/x",
        ),
    );
    let ids: Vec<String> = (1..=8).map(|i| format!("item-{i}")).collect();
    let dirs: Vec<String> = ids.iter().map(|id| format!("done/{id}/**")).collect();
    let items: Vec<(&str, Vec<&str>)> = ids
        .iter()
        .zip(&dirs)
        .map(|(id, d)| (id.as_str(), vec![d.as_str()]))
        .collect();
    let items: Vec<(&str, &[&str])> = items.iter().map(|(i, p)| (*i, p.as_slice())).collect();
    let mut config = parallel_plan(&repo, &agent, 4, &items, 1);
    // The check wants done/<id>/x.
    for id in &ids {
        config = config.replace(
            &format!("check = \"sh check.sh {id}\""),
            &format!("check = \"test \\\"$(cat done/{id}/x)\\\" = ok\""),
        );
    }
    repo.configure(&config);
    let started = std::time::Instant::now();
    let out = repo.run(&["run"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let mut shipped = repo.shipped_items();
    shipped.sort();
    assert_eq!(shipped, ids, "every item on the target exactly once");
    let spans = session_spans(&repo);
    assert_eq!(spans.len(), 8, "one session per item: {spans:?}");
    assert_eq!(
        most_at_once(&spans),
        4,
        "four sessions at once, never more: {spans:?}"
    );
    repo.assert_clean_end();
    eprintln!("8 items at max_parallel = 4 (barrier agents): {took:?}");
}

#[test]
fn items_declaring_the_same_path_never_run_at_once() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("barrier");
    // `a` and `c` (disjoint paths) meet at a barrier of two, so they must run together; `b`
    // shares `a`'s path, so it may start only once `a` is done, and never meets anyone.
    let agent = shell_agent(
        &repo,
        &format!(
            "if [ \"$NIGHTSHIFT_ITEM\" = b ]; then ls {dir} > {seen}; mkdir -p done; echo ok > done/b; exit 0; fi\n{}",
            barrier_agent(
                &barrier,
                "2",
                "mkdir -p done && echo ok > done/$NIGHTSHIFT_ITEM"
            ),
            dir = barrier.display(),
            seen = repo.agent_dir.join("seen-by-b").display(),
        ),
    );
    repo.configure(&parallel_plan(
        &repo,
        &agent,
        4,
        &[
            ("a", &["src/**"]),
            ("c", &["docs/**"]),
            ("b", &["src/api/*.rs"]),
        ],
        1,
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let mut shipped = repo.shipped_items();
    shipped.sort();
    assert_eq!(shipped, ["a", "b", "c"]);
    let spans = session_spans(&repo);
    let kinds: Vec<String> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| {
            format!("{} {:?}", e.seq, e.kind)
                .chars()
                .take(160)
                .collect()
        })
        .collect();
    assert!(
        overlap(&spans, "a", "c"),
        "a and c ran together: {spans:?}\n{}",
        kinds.join("\n")
    );
    assert!(
        !overlap(&spans, "a", "b"),
        "a and b declare overlapping paths and never run at once: {spans:?}"
    );
    repo.assert_clean_end();
}

#[test]
fn a_conflict_between_parallel_items_ships_one_and_repairs_the_other() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("barrier");
    // Both write shared.txt (their declared paths do not say so): whichever merges second
    // conflicts with the first. Its repair iteration resolves the conflict by keeping both.
    let agent = shell_agent(
        &repo,
        &format!(
            "if [ \"$NIGHTSHIFT_ITERATION\" -ge 2 ]; then printf 'a\\nb\\n' > shared.txt; mkdir -p done; echo ok > done/$NIGHTSHIFT_ITEM; exit 0; fi\n{}",
            barrier_agent(
                &barrier,
                "2",
                "echo $NIGHTSHIFT_ITEM > shared.txt && mkdir -p done && echo ok > done/$NIGHTSHIFT_ITEM"
            ),
        ),
    );
    repo.configure(&parallel_plan(
        &repo,
        &agent,
        2,
        &[("a", &["a/**"]), ("b", &["b/**"])],
        2,
    ));
    let out = repo.run(&["run"]);
    let events = repo.store().events_after(0, 100_000).unwrap();
    let conflicts = events
        .iter()
        .filter(|e| e.kind.name() == "conflict_found")
        .count();
    assert_eq!(conflicts, 1, "the second merge conflicts\n{}", text(&out));
    assert!(
        overlap(&session_spans(&repo), "a", "b"),
        "the two ran together"
    );
    let shipped = repo.shipped_items();
    match out.status.code() {
        // The repair resolved it: both shipped, the second on top of the first.
        Some(10) => {
            assert_eq!(shipped.len(), 2, "{shipped:?}");
            assert_eq!(repo.git(&["show", "main:shared.txt"]), "a\nb\n");
        }
        // Or the repaired one parked, with its branch kept.
        Some(11) => {
            assert_eq!(shipped.len(), 1, "{shipped:?}");
            let other = if shipped[0] == "a" { "b" } else { "a" };
            assert_eq!(repo.item_state(other), "parked");
            assert!(
                !repo
                    .git(&["branch", "--list", &format!("nightshift/{other}/*")])
                    .is_empty()
            );
        }
        other => panic!("exit {other:?}\n{}", text(&out)),
    }
    repo.assert_clean_end();
}

#[test]
fn a_session_that_leaks_a_setsid_grandchild_does_not_lose_a_siblings_agent() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("barrier");
    let leaked = repo.agent_dir.join("leaked.pid");
    let sibling_gone = repo.agent_dir.join("b-went-on");
    // `a` waits for `b` to run, leaks a setsid'd sleeper (in its checkout) and ends; `b` goes
    // on until it sees the sleeper gone (a's sweep), then solves. A sweep that reached beyond
    // `a`'s own processes would kill `b`'s agent too.
    let agent = shell_agent(
        &repo,
        &format!(
            "ready={ready}; leaked={leaked}
             if [ \"$NIGHTSHIFT_ITEM\" = a ]; then
             \x20 i=0; while [ ! -e $ready ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 0; sleep 0.05; done
             \x20 setsid sh -c 'echo $$ > '$leaked'.tmp; mv '$leaked'.tmp '$leaked'; exec sleep 300' < /dev/null > /dev/null 2>&1 &
             \x20 while [ ! -s $leaked ]; do sleep 0.05; done
             \x20 mkdir -p done; echo ok > done/a; exit 0
             fi
             : > $ready
             i=0; while [ ! -s $leaked ] || kill -0 \"$(cat $leaked)\" 2>/dev/null; do i=$((i+1)); [ $i -gt 1200 ] && exit 0; sleep 0.05; done
             echo went-on > {gone}; mkdir -p done; echo ok > done/b\n",
            ready = barrier.with_extension("b").display(),
            leaked = leaked.display(),
            gone = sibling_gone.display(),
        ),
    );
    repo.configure(&parallel_plan(
        &repo,
        &agent,
        2,
        &[("a", &["a/**"]), ("b", &["b/**"])],
        1,
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let mut shipped = repo.shipped_items();
    shipped.sort();
    assert_eq!(shipped, ["a", "b"], "{}", text(&out));
    assert!(
        std::fs::read_to_string(&sibling_gone).is_ok_and(|s| s == "went-on\n"),
        "b's agent lived past a's sweep"
    );
    let pid: i32 = std::fs::read_to_string(&leaked)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err(),
        "a's leaked grandchild {pid} was ended"
    );
    repo.assert_clean_end();
}

#[test]
fn two_parallel_sessions_each_worth_60_percent_stop_together_at_the_run_budget() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("barrier");
    // Each session alone would spend 600 of the run's 1000 tokens (its session limit): both at
    // once, each judged by what the run had spent when it started, would spend 1200.
    for id in ["a", "b"] {
        repo.agent(id, "busy forever usage-per-turn=100 interval=200ms\n");
    }
    let agent = shell_agent(
        &repo,
        &barrier_agent(
            &barrier,
            "2",
            &format!(
                "exec {BIN} __fake-agent --script-dir {}",
                repo.agent_dir.display()
            ),
        ),
    );
    let mut config = parallel_plan(&repo, &agent, 2, &[("a", &["a/**"]), ("b", &["b/**"])], 1)
        .replacen("command = [", "format = \"claude-stream\"\ncommand = [", 1);
    config = config.replacen(
        "[limits]\n",
        "[limits]\nsession_tokens = 600\nrun_tokens = 1000\nkill_grace = \"200ms\"\n",
        1,
    );
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert!(
        overlap(&session_spans(&repo), "a", "b"),
        "the two ran together\n{}",
        text(&out)
    );
    let store = repo.store();
    let run = store.latest_run().unwrap().unwrap();
    assert!(
        (1000.0..=1100.0).contains(&run.spent_tokens),
        "together at most one event (100) past the run's 1000: {}\n{}",
        run.spent_tokens,
        text(&out)
    );
    let tripped_run = store
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::BudgetTripped { scope, .. }
                if *scope == nightshift_core::session::Scope::Run)
        })
        .count();
    assert!(tripped_run >= 1, "the run budget tripped\n{}", text(&out));
    assert_eq!(
        out.status.code(),
        Some(18),
        "budget_exceeded\n{}",
        text(&out)
    );
}

#[test]
fn nightshift_shipping_one_item_is_not_taken_for_a_running_siblings_tampering() {
    let repo = Repo::new(&project());
    let root = repo.root.display().to_string();
    // `a` holds until `b` runs; `b` holds until `a` has shipped (the target moved, `a`'s refs written and its clone
    // removed, the user's checkout brought along), then solves: what nightshift did meanwhile
    // is not `b`'s doing.
    let agent = shell_agent(
        &repo,
        &format!(
            "if [ \"$NIGHTSHIFT_ITEM\" = a ]; then\n\
             \x20 i=0; while [ ! -e {marker} ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 0; sleep 0.05; done\n\
             fi\n\
             if [ \"$NIGHTSHIFT_ITEM\" = b ]; then\n\
             \x20 : > {marker}\n\
             \x20 i=0; while ! git -C {root} log --format=%B main 2>/dev/null | grep -q 'Nightshift-Item: a'; do i=$((i+1)); [ $i -gt 1200 ] && exit 0; sleep 0.05; done\n\
             fi\n\
             mkdir -p done; echo ok > done/$NIGHTSHIFT_ITEM\n",
            marker = repo.agent_dir.join("b-running").display(),
        ),
    );
    repo.configure(&parallel_plan(
        &repo,
        &agent,
        2,
        &[("a", &["a/**"]), ("b", &["b/**"])],
        1,
    ));
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    assert_eq!(repo.shipped_items(), ["a", "b"]);
    let events = repo.store().events_after(0, 100_000).unwrap();
    assert!(
        !events
            .iter()
            .any(|e| e.kind.name() == "control_plane_tampered"),
        "no tampering reported\n{}",
        text(&out)
    );
    // `a` integrated while `b`'s session ran.
    let seq_of =
        |pred: &dyn Fn(&EventKind) -> bool| events.iter().find(|e| pred(&e.kind)).map(|e| e.seq);
    let a_integrated =
        seq_of(&|k| matches!(k, EventKind::Integrated { item, .. } if item == "a")).unwrap();
    let b_ended =
        seq_of(&|k| matches!(k, EventKind::SessionEnded { item, .. } if item == "b")).unwrap();
    let b_started =
        seq_of(&|k| matches!(k, EventKind::SessionStarted { item, .. } if item == "b")).unwrap();
    assert!(b_started < a_integrated && a_integrated < b_ended);
    repo.assert_clean_end();
}

#[test]
fn a_usage_limit_hit_by_two_parallel_sessions_is_one_pause_and_spends_no_attempt() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("barrier");
    for id in ["a", "b"] {
        let marker = repo.agent_dir.join(format!("limited-{id}"));
        repo.agent(
            id,
            &format!(
                "when file-missing {m}\ntouch {m}\nusage-limit in=1s\nalways\nwrite done/{id} <<EOF\nok\nEOF\n",
                m = marker.display()
            ),
        );
    }
    let agent = shell_agent(
        &repo,
        &barrier_agent(
            &barrier,
            "2",
            &format!(
                "exec {BIN} __fake-agent --script-dir {}",
                repo.agent_dir.display()
            ),
        ),
    );
    let config = parallel_plan(&repo, &agent, 2, &[("a", &["a/**"]), ("b", &["b/**"])], 1)
        .replacen("command = [", "format = \"claude-stream\"\ncommand = [", 1);
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let mut shipped = repo.shipped_items();
    shipped.sort();
    assert_eq!(shipped, ["a", "b"]);
    let events = repo.store().events_after(0, 100_000).unwrap();
    let limited: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SessionEnded { item, outcome, .. }
                if *outcome == nightshift_core::session::Outcome::RateLimited =>
            {
                Some(item.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(limited.len(), 2, "both sessions hit the limit: {limited:?}");
    assert!(
        !events.iter().any(|e| e.kind.name() == "attempt_failed"),
        "no attempt spent"
    );
    let attention = std::fs::read_to_string(repo.root.join(".nightshift/ATTENTION")).unwrap();
    assert_eq!(
        attention.matches("rate_limited").count(),
        1,
        "one pause alerted for both: {attention}"
    );
    assert!(
        overlap(&session_spans(&repo), "a", "b"),
        "the two ran together"
    );
}

/// One item's check runs on a task of its own, so it does not hold the dispatcher: the other
/// items' sessions are heard, committed and checked while it runs. The three work checks meet
/// at a barrier of three (alone, a check gives up after 60 s and is red), so with checks run on
/// the loop's thread the first would wait alone and its item would park. Green together, they
/// still merge one at a time: an item's second check (its merged result's) takes a second, and
/// no item is merged while another's merged result is being checked.
#[test]
fn three_items_checks_run_at_once_and_neither_holds_the_loop() {
    let repo = Repo::new(&project());
    let barrier = repo.agent_dir.join("checks");
    let agent = shell_agent(
        &repo,
        "mkdir -p done/$NIGHTSHIFT_ITEM && echo ok > done/$NIGHTSHIFT_ITEM/x\n",
    );
    let check = repo.agent_dir.join("check.sh");
    // The base has no done/<id>/x: its check (the baseline) is red at once, before the barrier.
    // An item already at the barrier is having its merged result checked: a second.
    std::fs::write(
        &check,
        format!(
            "[ -f done/$NIGHTSHIFT_ITEM/x ] || exit 1\n\
             if [ -e {}/$NIGHTSHIFT_ITEM ]; then sleep 1; exit 0; fi\n",
            barrier.display()
        ) + &barrier_agent(
            &barrier,
            "3",
            "test \"$(cat done/$NIGHTSHIFT_ITEM/x)\" = ok || exit 1",
        )
        .replace("i -gt 1200 ] && exit 0", "i -gt 1200 ] && exit 1"),
    )
    .unwrap();
    let mut config = parallel_plan(
        &repo,
        &agent,
        3,
        &[
            ("a", &["done/a/**"]),
            ("b", &["done/b/**"]),
            ("c", &["done/c/**"]),
        ],
        1,
    );
    for id in ["a", "b", "c"] {
        config = config.replace(
            &format!("check = \"sh check.sh {id}\""),
            &format!("check = \"sh {}\"", check.display()),
        );
    }
    repo.configure(&config);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let mut shipped = repo.shipped_items();
    shipped.sort();
    assert_eq!(shipped, ["a", "b", "c"], "every check was green");
    // The work checks' spans, from the journal: they overlap.
    let mut open = Vec::new();
    let mut spans = Vec::new();
    for e in repo.store().events_after(0, 100_000).unwrap() {
        match e.kind {
            EventKind::CheckStarted {
                item,
                stage: nightshift_core::store::CheckStage::Work,
                ..
            } => {
                open.push((item, e.seq));
            }
            EventKind::CheckEnded {
                item,
                stage: nightshift_core::store::CheckStage::Work,
                ..
            } => {
                if let Some(i) = open.iter().position(|(o, _)| *o == item) {
                    let (item, start) = open.remove(i);
                    spans.push((item, start, e.seq));
                }
            }
            _ => {}
        }
    }
    assert_eq!(spans.len(), 3, "{spans:?}");
    assert!(
        overlap(&spans, "a", "b") && overlap(&spans, "b", "c"),
        "the checks ran together: {spans:?}"
    );
    // Each is merged onto the target as the item before it left it, never onto a target about
    // to move (a merged result that goes stale is checked in vain and made again).
    let prepared: Vec<String> = repo
        .store()
        .events_after(0, 100_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::MergePrepared { item, .. } => Some(item),
            _ => None,
        })
        .collect();
    let mut sorted = prepared.clone();
    sorted.sort();
    assert_eq!(sorted, ["a", "b", "c"], "one merge each: {prepared:?}");
    repo.assert_clean_end();
}
