//! The pool of reused clones (git/pool.rs): a finished attempt's clone goes to
//! `.nightshift/pool/` and the next attempt takes it, reset to its base. The previous agent is an
//! adversary: nothing it planted in the clone (files, git directory, objects) may reach the
//! next attempt, and a `kill -9` anywhere in pooling or reuse loses no work and leaves no clone
//! used as it was.

use std::os::unix::process::ExitStatusExt;

use crate::harness::{Repo, pooled_project, text};
use nightshift_core::failpoint;

/// What the probe of every attempt looks for in its fresh-looking checkout: each is something
/// the planting agent left, and any of them turns its check red (the probe writes
/// `contaminated: …` where the check wants `ok`).
const PROBE: &str = r#"
bad=""
[ -e build/ignored.out ] && bad="$bad ignored"
[ -e stray.txt ] && bad="$bad untracked"
[ -e .gitattributes ] && bad="$bad attributes"
[ -e build/nested/.git ] && bad="$bad nested"
[ -e .git/hooks ] && bad="$bad hooks"
[ -e .git/info ] && bad="$bad info"
[ -e .git/shallow ] && bad="$bad shallow"
[ -e .git/packed-refs ] && bad="$bad packed-refs"
grep -q evil .git/config && bad="$bad config"
[ -n "$(git for-each-ref refs/replace)" ] && bad="$bad replace"
[ "$(git for-each-ref --format='%(refname)' | grep -vc "^$(git symbolic-ref HEAD)$")" = 0 ] || bad="$bad refs"
git cat-file -e "$(printf 'planted\n' | git hash-object --stdin)" 2>/dev/null && bad="$bad object"
[ "$(cat data.txt)" = original ] || bad="$bad content"
[ "$(git log --format=%s -1)" = evil ] && bad="$bad replaced"
[ -e HOOKRAN ] && bad="$bad hook-ran"
stat -c %i check.sh >> "$log.inodes"
echo "$NIGHTSHIFT_ITEM:$bad" >> "$log"
if [ -n "$bad" ]; then mkdir -p done; echo "contaminated:$bad" > "done/$NIGHTSHIFT_ITEM"; exit 0; fi
"#;

/// Everything the agent of item `bad*` plants in its clone before it fails its check.
const PLANT: &str = r#"
mkdir -p build && echo x > build/ignored.out && echo x > stray.txt
printf 'data.txt filter=evil\n' > .gitattributes
git init -q build/nested
mkdir -p .git/hooks .git/info
printf '#!/bin/sh\ntouch HOOKRAN\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit
printf '* filter=evil\n' > .git/info/attributes
printf '[filter "evil"]\n\tsmudge = sed s/original/EVILEVIL/\n\tclean = cat\n' >> .git/config
printf 'planted\n' | git hash-object -w --stdin > /dev/null
fake=$(git commit-tree -m evil "$(git rev-parse HEAD^{tree})")
git replace "$(git rev-parse HEAD)" "$fake"
git update-ref refs/heads/evil "$fake"
git pack-refs --all
git rev-parse HEAD > .git/shallow
# A same-size edit of a tracked file, its mtime put back (only its ctime tells).
t=$(stat -c %y data.txt); printf 'EVILEVIL\n' > data.txt; touch -d "$t" data.txt
mkdir -p done && echo nope > "done/$NIGHTSHIFT_ITEM"
exit 0
"#;

/// A repository whose items run the probe, then: `bad*` items plant and fail, others solve.
fn pool_repo(items: &[&str]) -> Repo {
    let mut files = pooled_project();
    files.push((".gitignore", "build/\n"));
    files.push(("data.txt", "original\n"));
    let repo = Repo::new(&files);
    repo.configure(&pool_config(&repo, items));
    repo
}

fn pool_config(repo: &Repo, items: &[&str]) -> String {
    let log = repo.agent_dir.join("log");
    let script = format!(
        "#!/bin/sh\nset -u\nlog={}\n{PROBE}\ncase $NIGHTSHIFT_ITEM in bad*) {PLANT} ;; esac\nmkdir -p done && echo ok > done/$NIGHTSHIFT_ITEM\n",
        log.display()
    );
    let path = repo.agent_dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    let mut config = format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n\n[check]\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\n",
        path.display()
    );
    for id in items {
        config.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"sh check.sh {id}\"\n"
        ));
    }
    config
}

/// The probe's findings, one `item:findings` line per session.
fn probes(repo: &Repo) -> Vec<String> {
    std::fs::read_to_string(repo.agent_dir.join("log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The inode of `check.sh` each session saw, in order.
fn inodes(repo: &Repo) -> Vec<String> {
    std::fs::read_to_string(repo.agent_dir.join("log.inodes"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn pooled(repo: &Repo) -> Vec<String> {
    std::fs::read_dir(repo.root.join(".nightshift/pool"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("c-") && !n.ends_with(".index"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_reused_clone_carries_nothing_of_the_previous_hostile_agent() {
    let repo = pool_repo(&["bad", "good", "bad2", "good2"]);
    let out = repo.run(&["run"]);
    let said = text(&out);
    assert_eq!(repo.shipped_items(), ["good", "good2"], "{said}");
    assert_eq!(repo.item_state("bad"), "parked", "{said}");
    // Every session, the planting ones included, found its checkout as a fresh clone.
    // (The parked pass gives `bad` and `bad2` a second attempt, which plants again.)
    assert_eq!(
        probes(&repo),
        ["bad:", "good:", "bad2:", "good2:", "bad:", "bad2:"],
        "{said}"
    );
    // And the clone was reused: a file no agent touched kept its inode from attempt to attempt.
    let seen = inodes(&repo);
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "each attempt took the previous one's clone: {seen:?}"
    );
    // The planted work is kept (the preserve ref), and the pool holds the clone for later.
    repo.git(&["rev-parse", "--verify", "refs/nightshift/preserve/bad/1"]);
    assert_eq!(
        repo.git(&["show", "refs/nightshift/preserve/bad/1:data.txt"]),
        "EVILEVIL\n"
    );
    assert_eq!(pooled(&repo).len(), 1, "{:?}", pooled(&repo));
    repo.assert_clean_end();

    // `nightshift clean` removes the pool.
    let out = repo.run(&["clean"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !repo.root.join(".nightshift/pool").exists(),
        "{}",
        text(&out)
    );
}

#[test]
fn a_pooled_clone_whose_git_dir_is_a_link_is_never_used() {
    let repo = pool_repo(&["good"]);
    let out = repo.run(&["run"]);
    assert_eq!(out.status.code(), Some(10), "{}", text(&out));
    let pooled_now = pooled(&repo);
    assert_eq!(pooled_now.len(), 1, "{pooled_now:?}");
    // Someone replaces the pooled clone's .git with a link to the user's repository.
    let entry = repo.root.join(".nightshift/pool").join(&pooled_now[0]);
    std::fs::remove_dir_all(entry.join(".git")).unwrap();
    std::os::unix::fs::symlink(repo.root.join(".git"), entry.join(".git")).unwrap();
    repo.configure(&pool_config(&repo, &["good2"]));
    let config = std::fs::read(repo.root.join(".git/config")).unwrap();
    let out = repo.run(&["run"]);
    let said = text(&out);
    assert_eq!(repo.shipped_items(), ["good", "good2"], "{said}");
    assert_eq!(probes(&repo), ["good:", "good2:"], "{said}");
    let seen = inodes(&repo);
    assert_ne!(
        seen[0], seen[1],
        "the linked clone was not reused: {seen:?}"
    );
    assert_eq!(
        std::fs::read(repo.root.join(".git/config")).unwrap(),
        config
    );
    repo.assert_clean_end();
}

/// The points a `kill -9` can hit while a clone moves into or out of the pool or is reset.
const POOL_POINTS: &[&str] = &[
    "pool_index_pooled",
    "pool_clone_pooled",
    "pool_taken",
    "pool_index_taken",
    "pool_reset_cleaned",
    "pool_reset_checked_out",
];

#[test]
fn sigkill_while_pooling_or_reusing_a_clone_loses_nothing_and_reuses_nothing_as_it_was() {
    for point in POOL_POINTS {
        for nth in [1, 2] {
            let context = format!("{point}@{nth}");
            let repo = pool_repo(&["bad", "good", "bad2", "good2"]);
            let out = repo
                .cmd(&["engine"])
                .env(failpoint::ENV, &context)
                .output()
                .unwrap();
            assert_eq!(
                out.status.signal(),
                Some(9),
                "{context}: the failpoint was never reached\n{}",
                text(&out)
            );
            let out = repo.run(&["run"]);
            let said = text(&out);
            assert_eq!(out.status.code(), Some(11), "{context}: resume\n{said}");
            assert_eq!(
                repo.shipped_items(),
                ["good", "good2"],
                "{context}: each good item once\n{said}"
            );
            for bad in ["bad", "bad2"] {
                assert_eq!(repo.item_state(bad), "parked", "{context}: {said}");
                assert_eq!(
                    repo.git(&[
                        "show",
                        &format!("refs/nightshift/preserve/{bad}/1:data.txt")
                    ]),
                    "EVILEVIL\n",
                    "{context}: the planting attempt's work is kept"
                );
            }
            // No session, before or after the kill, saw anything of another.
            for line in probes(&repo) {
                assert!(line.ends_with(':'), "{context}: {line}\n{said}");
            }
            assert!(pooled(&repo).len() <= 3, "{context}: {:?}", pooled(&repo));
            repo.assert_clean_end();
        }
    }
}
