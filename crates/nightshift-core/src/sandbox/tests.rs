use std::path::PathBuf;

use super::*;

#[test]
fn the_read_allowlist_walks_around_a_denied_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["repo/.nightshift/worktrees/w", "repo/src", "other"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("repo/README"), "r").unwrap();
    // A link into the denied tree must not allow it.
    std::os::unix::fs::symlink(root.join("repo/.nightshift"), root.join("repo/link")).unwrap();
    let rules = read_rules(
        std::slice::from_ref(&root),
        &[root.join("repo/.nightshift")],
    );
    assert_eq!(
        rules,
        vec![
            root.join("other"),
            root.join("repo/README"),
            root.join("repo/src"),
        ]
    );
}

#[test]
fn a_read_tree_without_denials_is_one_rule_and_a_denied_root_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        read_rules(
            std::slice::from_ref(&root),
            &[PathBuf::from("/nonexistent/x")]
        ),
        vec![root.clone()]
    );
    assert!(read_rules(&[root.join("a")], std::slice::from_ref(&root)).is_empty());
}

#[test]
fn the_level_names_what_held() {
    let mut held = Held::default();
    assert_eq!(held.level(), "none");
    held.landlock = true;
    assert_eq!(held.level(), "landlock");
    held.netns = true;
    assert_eq!(held.level(), "landlock+netns");
    held.landlock = false;
    held.reasons.push("landlock is not in this kernel".into());
    assert_eq!(held.to_string(), "netns (landlock is not in this kernel)");
}

#[test]
fn full_confinement_needs_the_network_only_when_asked() {
    let held = Held {
        landlock: true,
        session: true,
        ..Held::default()
    };
    let mut spec = Spec::default();
    assert!(held.is_full_for(&spec));
    spec.network = Network::None;
    assert!(!held.is_full_for(&spec));
}

#[test]
fn the_env_allowlist_keeps_the_clis_key_and_drops_other_secrets() {
    let allow = env_allowlist(Some(crate::config::AgentKind::Claude), &["MY_VAR".into()]);
    assert!(keep_env(&allow, "ANTHROPIC_API_KEY"));
    assert!(keep_env(&allow, "LC_ALL"));
    assert!(keep_env(&allow, "MY_VAR"));
    assert!(!keep_env(&allow, "OPENAI_API_KEY"));
    assert!(!keep_env(&allow, "AWS_SECRET_ACCESS_KEY"));
    assert!(!keep_env(&allow, "NIGHTSHIFT_DATA_DIR"));
    assert!(keep_env(&allow, "NIGHTSHIFT_PROMPT_FILE"));
    let check = env_allowlist(None, &[]);
    assert!(!keep_env(&check, "ANTHROPIC_API_KEY"));
}

#[test]
fn an_agent_confinement_denies_the_store_and_the_key_dir() {
    let c = Confinement::agent(
        std::path::Path::new("/r/.nightshift/worktrees/w"),
        std::path::Path::new("/r/.nightshift"),
        PathBuf::from("/r/.nightshift/tmp/s"),
        vec![PathBuf::from("/h/.claude")],
    );
    assert!(c.spec.deny.contains(&PathBuf::from("/r/.nightshift")));
    if let Ok(key) = crate::receipt::key::key_path() {
        assert!(c.spec.deny.contains(&key.parent().unwrap().to_path_buf()));
    }
    assert!(
        c.spec
            .write
            .contains(&PathBuf::from("/r/.nightshift/worktrees/w"))
    );
    assert_eq!(c.spec.make, vec![PathBuf::from("/h/.claude")]);
    assert_eq!(c.spec.network, Network::Host);
}

#[test]
fn wrapping_without_a_helper_leaves_the_argv_and_says_none() {
    // Library tests register no helper (only the binary does).
    let c = Confinement::default().status(PathBuf::from("/nonexistent/status.json"));
    let argv = vec!["sh".to_owned(), "-c".to_owned(), "true".to_owned()];
    assert_eq!(c.wrap(argv.clone()), argv);
    let held = c.held();
    assert_eq!(held.level(), "none");
    assert!(
        held.reasons[0].contains("no confinement helper"),
        "{held:?}"
    );
}

#[test]
fn a_worktrees_git_write_dirs_leave_config_and_hooks_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let common = root.join("repo/.git");
    let gitdir = common.join("worktrees/w");
    std::fs::create_dir_all(&gitdir).unwrap();
    std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    let checkout = root.join("w");
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::write(
        checkout.join(".git"),
        format!("gitdir: {}\n", gitdir.display()),
    )
    .unwrap();
    let dirs = git_write_dirs(&checkout);
    assert_eq!(dirs[0], gitdir);
    let names: Vec<String> = dirs[1..]
        .iter()
        .map(|d| {
            d.strip_prefix(gitdir.join("../.."))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["objects", "refs/heads", "logs"]);
}

mod policies {
    use super::super::policy::*;
    use super::super::{Held, Network};

    fn full(netns: bool) -> Held {
        Held {
            landlock: true,
            session: true,
            netns,
            ..Held::default()
        }
    }

    #[test]
    fn checks_get_no_network_by_default_only_where_the_kernel_allows() {
        assert_eq!(check_network(None, true), Network::None);
        assert_eq!(check_network(None, false), Network::Host);
        assert_eq!(check_network(Some(Network::Host), true), Network::Host);
        assert_eq!(check_network(Some(Network::None), false), Network::None);
    }

    #[test]
    fn require_refuses_a_missing_layer_and_names_the_key_and_the_reason() {
        let agent = full(false);
        let mut check = full(false);
        assert_eq!(refusal(false, &agent, &check, Network::None), None);
        assert_eq!(refusal(true, &agent, &check, Network::Host), None);
        check.reasons.push("user namespace refused (EPERM)".into());
        let msg = refusal(true, &agent, &check, Network::None).unwrap();
        assert!(msg.contains("`[sandbox] require = true`"), "{msg}");
        assert!(msg.contains("a network namespace for checks"), "{msg}");
        assert!(msg.contains("user namespace refused"), "{msg}");
        assert_eq!(refusal(true, &agent, &full(true), Network::None), None);
        let none = Held::default();
        let msg = refusal(true, &none, &full(true), Network::None).unwrap();
        assert!(msg.contains("Landlock"), "{msg}");
    }

    #[test]
    fn a_base_check_green_only_with_the_host_network_is_not_hermetic() {
        let never = || panic!("the host rerun is only for a red isolated run");
        assert_eq!(hermetic(Network::None, true, never), Hermetic::Green);
        assert_eq!(hermetic(Network::Host, false, never), Hermetic::Red);
        assert_eq!(
            hermetic(Network::None, false, || true),
            Hermetic::NotHermetic
        );
        assert_eq!(hermetic(Network::None, false, || false), Hermetic::Red);
        assert!(NOT_HERMETIC_HELP.contains("network = \"host\""));
    }

    #[test]
    fn only_checks_a_namespace_takes_the_network_from_are_probed_for_hermeticity() {
        assert!(probes_hermeticity(Network::None, true));
        // `network = "host"`: the user opted out.
        assert!(!probes_hermeticity(Network::Host, true));
        assert!(!probes_hermeticity(Network::Host, false));
        // `none` asked for where no namespace can be had: both runs would see the host's.
        assert!(!probes_hermeticity(Network::None, false));
    }
}

#[test]
fn a_spawn_sites_one_call_derives_the_state_root_tmp_and_status_from_its_paths() {
    let checkout = std::path::Path::new("/r/.nightshift/worktrees/a-1");
    let log = std::path::Path::new("/r/.nightshift/logs/run/a-1-1.agent.log");
    let prompt = std::path::Path::new("/r/.nightshift/logs/run/a-1-1.prompt.md");
    let c = for_agent(crate::config::AgentKind::Claude, checkout, log, prompt);
    assert!(c.spec.deny.contains(&PathBuf::from("/r/.nightshift")));
    assert_eq!(c.spec.read_also, vec![prompt.to_path_buf()]);
    assert_eq!(
        c.spec.status,
        Some(PathBuf::from(
            "/r/.nightshift/logs/run/a-1-1.agent.log.confinement.json"
        ))
    );
    assert_eq!(
        c.spec.tmp,
        Some(PathBuf::from("/r/.nightshift/logs/run/a-1-1.agent.log.tmp"))
    );
    assert!(c.spec.session_files);
    assert!(c.spec.env_keep.is_none(), "the adapter's env_allow applies");
    let check = for_check(
        checkout,
        std::path::Path::new("/r/.nightshift/logs/run/c.log"),
    );
    assert!(check.spec.deny.contains(&PathBuf::from("/r/.nightshift")));
    assert!(check.spec.env_keep.is_none());
}

#[test]
fn private_files_and_dirs_are_their_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join(".nightshift/logs");
    create_private_dir(&logs).unwrap();
    let file = logs.join("r.json");
    write_private(&file, b"{}").unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&logs), 0o700);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(std::fs::read(&file).unwrap(), b"{}");
}
