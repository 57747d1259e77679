//! A hermetic test repository and a fluent way to run the binary in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_nightshift");

/// A scratch repository with its own HOME, git config and scripted agent.
pub struct Repo {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
}

impl Repo {
    /// A repository on `main` with one commit holding `files`.
    pub fn new(files: &[(&str, &str)]) -> Repo {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("repo");
        let agent_dir = tmp.path().join("agent");
        let home = tmp.path().join("home");
        for d in [&root, &agent_dir, &home] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let repo = Repo {
            _tmp: tmp,
            root,
            agent_dir,
            home,
        };
        for (path, content) in files {
            repo.write(path, content);
        }
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo.git(&["add", "--all"]);
        repo.git(&["commit", "--quiet", "-m", "initial"]);
        repo
    }

    pub fn write(&self, path: &str, content: &str) {
        let file = self.root.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(file, content).expect("write");
    }

    /// Writes the scripted agent's behaviour for one item (`default` for all others).
    pub fn agent(&self, item: &str, script: &str) {
        std::fs::write(self.agent_dir.join(format!("{item}.fake")), script).expect("write script");
    }

    /// The `[agent]` table that runs the scripted agent from this test's scripts.
    pub fn agent_table(&self) -> String {
        format!(
            "[agent]\nkind = \"command\"\ncommand = [\"{BIN}\", \"__fake-agent\", \"--script-dir\", \"{}\"]\n",
            self.agent_dir.display()
        )
    }

    fn env(&self, cmd: &mut Command) {
        cmd.current_dir(&self.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            // The receipt signing key: per test, never the user's.
            .env("NIGHTSHIFT_DATA_DIR", self.home.join("data"))
            // Fixtures use the agent as a stand-in for a person (it edits the user's checkout)
            // or a crash (`kill -9 $PPID`): confinement would refuse both. tests/it/sandbox.rs
            // runs with it on.
            .env("NIGHTSHIFT_SANDBOX", "off")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test User")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test User")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("TZ", "UTC")
            .env("LC_ALL", "C");
    }

    /// A `nightshift` command in this repository.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        self.env(&mut cmd);
        cmd.args(args);
        cmd
    }

    /// Runs `nightshift` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run nightshift")
    }

    /// Runs git in the repository; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        self.env(&mut cmd);
        let out = cmd.args(args).output().expect("run git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn status_json(&self) -> serde_json::Value {
        let out = self.run(&["status", "--json"]);
        assert!(out.status.success(), "status failed: {}", text(&out));
        serde_json::from_slice(&out.stdout).expect("status --json is JSON")
    }

    /// The state of one item in `status --json`.
    pub fn item_state(&self, id: &str) -> String {
        let status = self.status_json();
        status["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["id"] == id))
            .and_then(|i| i["state"].as_str())
            .unwrap_or("missing")
            .to_owned()
    }

    /// Item ids of the commits on `main` since the initial one, oldest first (from the
    /// `Nightshift-Item` trailer).
    pub fn shipped_items(&self) -> Vec<String> {
        self.git(&[
            "log",
            "--reverse",
            "--format=%(trailers:key=Nightshift-Item,valueonly)",
            "main",
        ])
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
    }

    /// Worktrees other than the main checkout.
    pub fn extra_worktrees(&self) -> Vec<String> {
        self.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .filter(|p| {
                Path::new(p) != self.root.canonicalize().unwrap_or(self.root.clone())
                    && Path::new(p) != self.root
            })
            .map(str::to_owned)
            .collect()
    }

    pub fn store(&self) -> nightshift_core::store::Store {
        nightshift_core::store::Store::open_read_only(&self.root.join(".nightshift/state.db"))
            .expect("open store")
    }
}

/// stdout and stderr of a finished command, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A shell project whose check for item X passes once `done/X` holds `ok`.
pub fn project() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "a project\n"),
        (
            "check.sh",
            "#!/bin/sh\n[ \"$(cat done/$1 2>/dev/null)\" = ok ] || { echo \"FAIL: done/$1 is not ok\"; exit 1; }\n",
        ),
    ]
}

/// [`project`] with enough tracked files (`vendor/NN.txt`) for its attempts' clones to be
/// pooled and reused (`git::pool::POOL_MIN_FILES`): below that, each attempt gets a fresh clone.
pub fn pooled_project() -> Vec<(&'static str, &'static str)> {
    let mut files = project();
    // Leaked: a test's few dozen names, for the `&'static str` every file list holds.
    files.extend((0..64).map(|i| -> (&'static str, &'static str) {
        (
            Box::leak(format!("vendor/{i:02}.txt").into_boxed_str()),
            "vendored\n",
        )
    }));
    files
}

/// A fake-agent script that solves item `id` of [`project`].
pub fn solves(id: &str) -> String {
    format!(
        "emit claude text=\"done\" turns=1 input=100 output=10\nwrite done/{id} <<EOF\nok\nEOF\n"
    )
}

/// A fake-agent script that writes something, but never what the check wants.
pub const NEVER_SOLVES: &str =
    "write done/wrong <<EOF\nnope\nEOF\nappend notes.txt <<EOF\ntried\nEOF\n";

/// nightshift.toml with the scripted agent, `check.sh <id>` per item, and the given limits.
pub fn plan(repo: &Repo, items: &[&str], max_iterations: u32, max_attempts: u32) -> String {
    let mut text = repo.agent_table();
    text.push_str(&format!(
        "\n[check]\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = {max_iterations}\nmax_attempts = {max_attempts}\n"
    ));
    for id in items {
        text.push_str(&format!(
            "\n[[item]]\nid = \"{id}\"\nprompt = \"Make done/{id} say ok.\"\ncheck = \"sh check.sh {id}\"\n"
        ));
    }
    text
}

impl Repo {
    /// Writes nightshift.toml and commits everything, so the user's checkout starts clean.
    pub fn configure(&self, config: &str) {
        self.write("nightshift.toml", config);
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "-m", "plan"]);
    }

    /// Asserts the invariants every run must leave behind, whatever happened on the way.
    pub fn assert_clean_end(&self) {
        assert_eq!(
            self.extra_worktrees(),
            Vec::<String>::new(),
            "leftover worktrees"
        );
        let leftovers: Vec<_> = std::fs::read_dir(self.root.join(".nightshift/worktrees"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.file_name())).collect())
            .unwrap_or_default();
        assert!(
            leftovers.is_empty(),
            "leftover worktree directories: {leftovers:?}"
        );
        assert_eq!(
            self.git(&["status", "--porcelain"]),
            "",
            "the user's checkout is not clean"
        );
        assert_eq!(
            self.git(&["rev-parse", "HEAD"]),
            self.git(&["rev-parse", "refs/heads/main"]),
            "the user's checkout is not at the tip of main"
        );
        let store = self.store();
        assert!(
            store.refold_matches().expect("refold"),
            "state is not the fold of the journal"
        );
        let strays = stray_processes(&self.root.join(".nightshift/worktrees"));
        assert!(strays.is_empty(), "processes left in worktrees: {strays:?}");
    }
}

/// Processes whose working directory is inside `dir`.
pub fn stray_processes(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                .map(|cwd| cwd.starts_with(dir))
                .unwrap_or(false)
        })
        .collect()
}

/// An agent that says "started" and then waits to be let go: an explicit handshake over two
/// FIFOs, so a test can act while a session is running without sleeping.
pub struct HeldAgent {
    ready: PathBuf,
    release: PathBuf,
}

impl HeldAgent {
    /// Configures `repo` with one item `id` whose agent holds until released, then solves it.
    pub fn configure(repo: &Repo, id: &str) -> HeldAgent {
        let ready = repo.agent_dir.join("ready");
        let release = repo.agent_dir.join("release");
        for fifo in [&ready, &release] {
            nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        }
        let agent = format!(
            "echo started > {}; read line < {}; mkdir -p done; echo ok > done/{id}",
            ready.display(),
            release.display()
        );
        let config = plan(repo, &[id], 1, 1).replacen(
            &repo.agent_table(),
            &format!("[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n"),
            1,
        );
        repo.configure(&config);
        HeldAgent { ready, release }
    }

    /// Blocks until the agent is running.
    pub fn wait_started(&self) {
        use std::io::Read;
        let mut line = String::new();
        std::fs::File::open(&self.ready)
            .and_then(|mut f| f.read_to_string(&mut line))
            .expect("read the ready FIFO");
        assert_eq!(line, "started\n");
    }

    /// Lets the agent finish.
    pub fn release(&self) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.release)
            .and_then(|mut f| f.write_all(b"go\n"))
            .expect("write the release FIFO");
    }
}

impl Repo {
    /// `check`, preceded by a person doing `act` (a shell line, run in the user's checkout)
    /// once per attempt of `item`, on its first check after the agent wrote `done/<item>`:
    /// someone working in the repository while the run goes on. An agent session cannot stand
    /// in for that person: what changes around a session is the session's doing
    /// (`control_plane_tampered`), so the person acts while the check runs.
    pub fn check_after_person(&self, item: &str, act: &str, check: &str) -> String {
        let script = self.agent_dir.join(format!("person-{item}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n[ \"$NIGHTSHIFT_ITEM\" = {item} ] && [ -f done/{item} ] || exit 0\n\
                 m={dir}/person-{item}-$NIGHTSHIFT_ATTEMPT.done\n[ -e \"$m\" ] && exit 0\n: > \"$m\"\n\
                 cd {root} && {act}\n",
                dir = self.agent_dir.display(),
                root = self.root.display()
            ),
        )
        .expect("write the person's script");
        format!("sh {} >/dev/null 2>&1; {check}", script.display())
    }
}

/// The FIFOs and prompt log of [`Repo::configure_held_first_iteration`] (a [`HeldAgent`]
/// whose first iteration gives up instead of solving, so a second iteration runs).
pub struct HeldFirstIteration {
    /// Iteration 1 writes `started` here once it runs.
    pub ready: PathBuf,
    /// Iteration 1 holds until a line is written here.
    pub release: PathBuf,
    /// Every iteration's prompt, each followed by `----`.
    pub prompts: PathBuf,
}

impl Repo {
    /// Item `a` of [`plan`] (2 iterations, 1 attempt) with a `command` agent whose iteration 1
    /// announces itself on `ready`, holds until `release` and solves nothing; iteration 2
    /// solves. Every iteration appends its prompt to `prompts`.
    pub fn configure_held_first_iteration(&self) -> HeldFirstIteration {
        let held = HeldFirstIteration {
            ready: self.agent_dir.join("ready"),
            release: self.agent_dir.join("release"),
            prompts: self.agent_dir.join("prompts"),
        };
        for fifo in [&held.ready, &held.release] {
            nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        }
        let dev = self.agent_dir.join("dev.sh");
        std::fs::write(
            &dev,
            format!(
                "cat \"$NIGHTSHIFT_PROMPT_FILE\" >> {seen}\necho ---- >> {seen}\n\
                 if [ \"$NIGHTSHIFT_ITERATION\" = 1 ]; then echo started > {ready}; read line < {release}; exit 0; fi\n\
                 mkdir -p done; echo ok > done/$NIGHTSHIFT_ITEM\n",
                seen = held.prompts.display(),
                ready = held.ready.display(),
                release = held.release.display()
            ),
        )
        .expect("write the agent");
        let config = plan(self, &["a"], 2, 1).replacen(
            &self.agent_table(),
            &format!(
                "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"{}\"]\n",
                dev.display()
            ),
            1,
        );
        self.configure(&config);
        held
    }
}
