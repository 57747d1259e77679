//! One scenario against one CLI: a hermetic repository, a model server, `nightshift` commands
//! with the CLI pointed at the server, the journal, and the row of the table it measures.

use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use model_server::{Scenario, Server};
use serde_json::Value;

use crate::agents::{Agent, Auth, point_at_server};
use crate::harness::{Repo, project, stray_processes, text};

/// The item every scenario works: its check passes once `done/x` says `ok`.
pub const ITEM: &str = "x";

/// What one case measured, for the table (docs/conformance.md).
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub cli: String,
    pub scenario: String,
    /// Session outcomes in order, then the item's end state.
    pub outcome: String,
    /// Attempts started for the item.
    pub attempts: Option<usize>,
    /// Attempts that ended without shipping (`attempt_failed`).
    pub attempts_failed: Option<usize>,
    /// Model requests the server served after the budget trip was journaled.
    pub after_trip: Option<usize>,
    /// Seconds from the server's first stalled request to the `stalled` session end.
    pub stall_secs: Option<f64>,
    /// Recorded usage against the server's (prompt tokens incl. cache / output tokens).
    pub usage: Option<String>,
    pub secs: f64,
    pub failures: Vec<String>,
}

pub struct Case {
    pub repo: Repo,
    pub server: Server,
    env: Vec<(String, String)>,
    pub row: Row,
    started: Instant,
}

/// How long any one wait in a scenario may take before the case fails.
pub const WAIT: Duration = Duration::from_secs(300);

impl Case {
    /// A repository with one item `x`, `limits` (TOML lines under `[limits]`) and the default
    /// `[agent]` table of the CLI's kind.
    pub fn new(agent: &Agent, scenario: &str, play: Scenario, auth: Auth, limits: &str) -> Case {
        let repo = Repo::new(&project());
        let server = Server::start(play).expect("start the model server");
        let mut env = point_at_server(agent, &server.url(), &repo.home, auth);
        let path = std::env::join_paths(std::iter::once(agent.bin_dir.clone()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("PATH");
        env.push(("PATH".into(), path.to_string_lossy().into_owned()));
        let config = format!(
            "[agent]\nkind = \"{kind}\"\n\n[check]\ntimeout = \"1m\"\n\n[limits]\nmax_iterations = 1\nmax_attempts = 1\nsession_timeout = \"4m\"\nkill_grace = \"2s\"\nfault_backoff = \"1s\"\n{limits}\n[[item]]\nid = \"{ITEM}\"\nprompt = \"Make the file done/{ITEM} contain the word ok.\"\ncheck = \"sh check.sh {ITEM}\"\n",
            kind = agent.kind
        );
        repo.configure(&config);
        Case {
            repo,
            server,
            env,
            row: Row {
                cli: agent.name.clone(),
                scenario: scenario.to_owned(),
                ..Row::default()
            },
            started: Instant::now(),
        }
    }

    /// A `nightshift` command in the repository, the CLI pointed at the server.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.repo.cmd(args);
        // Confinement on, as a user runs it: the real CLIs under Landlock, in their own process
        // session, the engine's death taking their whole group (the it harness turns it off for
        // its stand-in agents).
        cmd.env_remove("NIGHTSHIFT_SANDBOX");
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null());
        cmd
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn nightshift")
    }

    /// Runs `nightshift run` to its end (at most [`WAIT`]).
    pub fn run(&mut self) -> Option<Output> {
        let child = self.spawn(&["run"]);
        self.finish(child)
    }

    /// Waits for a spawned command; past [`WAIT`] the run is stopped and the case fails.
    pub fn finish(&mut self, mut child: Child) -> Option<Output> {
        let deadline = Instant::now() + WAIT;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return child.wait_with_output().ok(),
                Ok(None) if Instant::now() < deadline => {
                    // Reaping a child, not synchronizing: the run ends when it ends.
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => {
                    let _ = self.cmd(&["stop"]).output();
                    let _ = child.kill();
                    let out = child.wait_with_output().ok();
                    self.fail(format!(
                        "the run did not end within {}s{}",
                        WAIT.as_secs(),
                        out.as_ref()
                            .map(|o| format!("\n{}", text(o)))
                            .unwrap_or_default()
                    ));
                    return None;
                }
            }
        }
    }

    /// The journal so far.
    pub fn events(&self) -> Vec<Value> {
        let out = self
            .cmd(&["log", "--json"])
            .output()
            .expect("nightshift log");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Follows the journal live (`nightshift log --json -f`): a handshake with the engine.
    /// A follower that ends early (it started while the store was being created, or the run
    /// finished) is started again; events are delivered once each, in journal order.
    pub fn follow(&self) -> Follower {
        let mut cmd = self.cmd(&["log", "--json", "-f"]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        let (tx, rx) = mpsc::channel();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let child: std::sync::Arc<std::sync::Mutex<Option<Child>>> = Default::default();
        let (stop2, child2) = (stop.clone(), child.clone());
        std::thread::spawn(move || {
            let mut last_seq = 0;
            while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok(mut c) = cmd.spawn() else { break };
                let Some(stdout) = c.stdout.take() else { break };
                *child2
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(c);
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let Ok(v) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    let seq = v["seq"].as_i64().unwrap_or(0);
                    if seq <= last_seq {
                        continue;
                    }
                    last_seq = seq;
                    if tx.send(v).is_err() {
                        return;
                    }
                }
                if let Some(mut c) = child2
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                {
                    let _ = c.wait();
                }
                // `log -f` ended (no store yet, or the run finished): look again shortly.
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Follower { child, stop, rx }
    }

    pub fn fail(&mut self, why: impl Into<String>) {
        self.row.failures.push(why.into());
    }

    pub fn check(&mut self, ok: bool, why: impl Into<String>) {
        if !ok {
            self.fail(why);
        }
    }

    /// Fills the columns every scenario reports from the journal and the server.
    pub fn measure(&mut self) -> Vec<Value> {
        let events = self.events();
        let kind =
            |e: &Value, k: &str| e["kind"] == k && e["item"].as_str().is_none_or(|i| i == ITEM);
        let mut outcome: Vec<String> = events
            .iter()
            .filter(|e| kind(e, "session_ended"))
            .map(|e| {
                let o = e["outcome"].as_str().unwrap_or("?").to_owned();
                match e["fault"].as_str() {
                    Some(f) => format!("{o}({f})"),
                    None => o,
                }
            })
            .collect();
        let nudges = events.iter().filter(|e| kind(e, "session_nudged")).count();
        if nudges > 0 {
            outcome.push(format!("{nudges} nudge(s)"));
        }
        let state = self.repo.item_state(ITEM);
        outcome.push(state);
        self.row.outcome = outcome.join(" → ");
        self.row.attempts = Some(events.iter().filter(|e| kind(e, "attempt_started")).count());
        self.row.attempts_failed =
            Some(events.iter().filter(|e| kind(e, "attempt_failed")).count());
        let (mut prompt, mut output) = (0u64, 0u64);
        let mut any = false;
        for e in events.iter().filter(|e| kind(e, "session_ended")) {
            let s = &e["spend"];
            if s.is_object() {
                any = true;
                prompt += s["input"].as_u64().unwrap_or(0)
                    + s["cache_read"].as_u64().unwrap_or(0)
                    + s["cache_write"].as_u64().unwrap_or(0);
                output += s["output"].as_u64().unwrap_or(0);
            }
        }
        let served = self.server.usage();
        self.row.usage = Some(if any {
            format!("{prompt}/{output} vs {}/{}", served.input, served.output)
        } else {
            format!("none vs {}/{}", served.input, served.output)
        });
        events
    }

    /// Whether the recorded usage equals the server's.
    pub fn usage_exact(&self) -> bool {
        self.row
            .usage
            .as_deref()
            .and_then(|u| u.split_once(" vs "))
            .is_some_and(|(a, b)| a == b)
    }

    /// No process of the run is left in its worktrees.
    pub fn check_no_strays(&mut self) {
        let strays = stray_processes(&self.repo.root.join(".nightshift/worktrees"));
        self.check(
            strays.is_empty(),
            format!("processes left in worktrees: {strays:?}"),
        );
    }

    pub fn done(mut self) -> Row {
        self.row.secs = self.started.elapsed().as_secs_f64();
        let _ = self.cmd(&["stop"]).output();
        self.keep();
        self.row
    }

    /// With `NIGHTSHIFT_CONFORMANCE_KEEP=DIR`: the case's `.nightshift` (session logs, prompts,
    /// the store), its journal and the requests the server saw, copied to
    /// `DIR/<cli>-<scenario>-<n>` before the scratch repository goes.
    fn keep(&self) {
        let Some(dir) = std::env::var_os("NIGHTSHIFT_CONFORMANCE_KEEP") else {
            return;
        };
        let base = std::path::Path::new(&dir);
        let dest = (1..)
            .map(|n| base.join(format!("{}-{}-{n}", self.row.cli, self.row.scenario)))
            .find(|d| !d.exists())
            .expect("a free name");
        if std::fs::create_dir_all(&dest).is_err() {
            return;
        }
        let _ = Command::new("cp")
            .arg("-a")
            .arg(self.repo.root.join(".nightshift"))
            .arg(&dest)
            .status();
        let journal: String = self.events().iter().map(|e| format!("{e}\n")).collect();
        let _ = std::fs::write(dest.join("journal.jsonl"), journal);
        let served: String = self
            .server
            .served()
            .iter()
            .map(|s| {
                let at =
                    s.at.duration_since(SystemTime::UNIX_EPOCH)
                        .map(|d| d.as_secs_f64())
                        .unwrap_or(0.0);
                format!(
                    "{at:.3} {} {} turn={} step={:?} usage={:?}\n",
                    s.method, s.path, s.turn, s.step, s.usage
                )
            })
            .collect();
        let _ = std::fs::write(dest.join("served.txt"), served);
        let _ = std::fs::write(dest.join("row.txt"), format!("{:#?}\n", self.row));
    }

    pub fn shipped(&self) -> bool {
        self.repo.shipped_items() == [ITEM]
    }
}

/// `nightshift log --json -f`, read on a thread.
pub struct Follower {
    child: std::sync::Arc<std::sync::Mutex<Option<Child>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    rx: mpsc::Receiver<Value>,
}

impl Follower {
    /// The next event matching `pred`, within `timeout`.
    pub fn wait(&self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.rx.recv_timeout(left) {
                Ok(e) if pred(&e) => return Some(e),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(mut c) = self
            .child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An event's time.
pub fn at(e: &Value) -> Option<SystemTime> {
    let t: jiff::Timestamp = e["at"].as_str()?.parse().ok()?;
    let nanos = u64::try_from(t.as_nanosecond()).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos))
}
