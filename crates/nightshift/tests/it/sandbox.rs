//! Confinement: the real `nightshift __exec` helper around hostile shell scripts (Linux only).
//! Every network probe stays on 127.0.0.0/8, or is made only after the script has verified, in
//! the same process, that its namespace has no route at all (so nothing can leave).

#![cfg(target_os = "linux")]

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use nightshift_core::sandbox::{Held, Network, Spec};

use crate::harness::BIN;

/// A checkout inside a repository's `.nightshift/`, a home, a data dir with a key: the layout an
/// agent session sees.
struct Layout {
    _dir: tempfile::TempDir,
    root: PathBuf,
    checkout: PathBuf,
    home: PathBuf,
    state: PathBuf,
    key_dir: PathBuf,
    status: PathBuf,
}

impl Layout {
    fn new() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let state = root.join("repo/.nightshift");
        let checkout = state.join("worktrees/item-1");
        let home = root.join("home");
        let key_dir = root.join("data/nightshift");
        for d in [&checkout, &home, &key_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(state.join("state.db"), "the store").unwrap();
        std::fs::create_dir_all(state.join("logs")).unwrap();
        std::fs::write(state.join("logs/prompt.txt"), "the prompt").unwrap();
        std::fs::write(state.join("logs/other.log"), "another session").unwrap();
        std::fs::write(key_dir.join("receipt-key"), "the signing key").unwrap();
        std::fs::write(root.join("repo/README"), "readable").unwrap();
        Layout {
            status: root.join("status.json"),
            _dir: dir,
            root,
            checkout,
            home,
            state,
            key_dir,
        }
    }

    fn spec(&self, network: Network) -> Spec {
        Spec {
            read: vec![PathBuf::from("/")],
            deny: vec![self.state.clone(), self.key_dir.clone()],
            read_also: vec![self.state.join("logs/prompt.txt")],
            write: vec![self.checkout.clone(), PathBuf::from("/dev/null")],
            make: vec![self.home.join(".claude")],
            tmp: Some(self.root.join("tmp")),
            network,
            env_keep: None,
            session_files: false,
            require: false,
            status: Some(self.status.clone()),
            // Some tests start the helper from a shell standing in for the engine: its parent
            // is then read when it starts, as for a spec that names none.
            parent: None,
        }
    }

    /// Opens the tree to every user, for the unprivileged runs.
    fn open_to_all(&self) {
        chmod_tree(&self.root);
    }

    fn held(&self) -> Held {
        serde_json::from_slice(&std::fs::read(&self.status).unwrap()).unwrap()
    }
}

fn chmod_tree(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            chmod_tree(&entry.unwrap().path());
        }
    }
}

/// Runs `script` under `spec` in `cwd` through `nightshift __exec`, as `user` (None: as we are).
fn exec(spec: &Spec, cwd: &Path, home: &Path, script: &str, user: Option<u32>) -> Output {
    exec_with(BIN, spec, cwd, home, script, user)
}

/// [`exec`] through the helper binary `bin`.
fn exec_with(
    bin: &str,
    spec: &Spec,
    cwd: &Path,
    home: &Path,
    script: &str,
    user: Option<u32>,
) -> Output {
    let json = serde_json::to_string(spec).unwrap();
    let mut argv: Vec<String> = Vec::new();
    if let Some(uid) = user {
        argv.extend([
            "setpriv".into(),
            format!("--reuid={uid}"),
            format!("--regid={uid}"),
            "--clear-groups".into(),
        ]);
    }
    argv.extend([
        bin.into(),
        "__exec".into(),
        "--spec".into(),
        json,
        "--".into(),
        "sh".into(),
        "-c".into(),
        script.into(),
    ]);
    Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .env("HOME", home)
        .stdin(Stdio::null())
        .process_group(0)
        .output()
        .unwrap()
}

fn all(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Each line `name=<rc>` where the script wrote one: the exit code of that probe.
fn probe(out: &Output, name: &str) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name}= in the output:\n{}", all(out)))
        .to_owned()
}

const WRITES: &str = r#"
try() { name=$1; shift; if ( "$@" ) >/dev/null 2>err; then echo "$name=ok"; else echo "$name=$(cat err)"; fi; }
try inside sh -c 'echo work > done.txt'
try home sh -c 'echo x > "$HOME/x"'
try up sh -c 'echo x > ../../x'
try tmp sh -c "echo x > $OUTSIDE"
try store cat ../../state.db
try key cat "$KEY"
try readme cat ../../../README
try prompt cat ../../logs/prompt.txt
try otherlog cat ../../logs/other.log
try state sh -c 'echo s > "$HOME/.claude/state"'
try tmpdir sh -c 'echo t > "$TMPDIR/t"'
"#;

fn assert_writes_confined(layout: &Layout, out: &Output, outside: &Path) {
    let denied = |name: &str| {
        let got = probe(out, name);
        assert!(
            got.contains("Permission denied"),
            "{name}: expected EACCES, got {got:?}\n{}",
            all(out)
        );
    };
    assert_eq!(probe(out, "inside"), "ok", "{}", all(out));
    assert_eq!(
        std::fs::read_to_string(layout.checkout.join("done.txt")).unwrap(),
        "work\n"
    );
    for name in ["home", "up", "tmp", "store", "key", "otherlog"] {
        denied(name);
    }
    assert!(!layout.home.join("x").exists());
    assert!(!layout.state.join("x").exists());
    assert!(!outside.exists());
    assert_eq!(probe(out, "readme"), "ok", "the repository stays readable");
    assert_eq!(
        probe(out, "prompt"),
        "ok",
        "the session's own prompt file is readable"
    );
    assert_eq!(
        probe(out, "state"),
        "ok",
        "the CLI's own state dir is writable"
    );
    assert_eq!(probe(out, "tmpdir"), "ok", "the temp dir is writable");
    let held = layout.held();
    assert!(held.landlock, "{held:?}");
    assert!(held.session, "{held:?}");
}

fn writes_script(layout: &Layout, outside: &Path) -> String {
    format!(
        "OUTSIDE={}\nKEY={}\n{WRITES}",
        outside.display(),
        layout.key_dir.join("receipt-key").display()
    )
}

fn outside_file(tag: &str) -> PathBuf {
    PathBuf::from(format!(
        "/tmp/nightshift-sandbox-{tag}-{}",
        std::process::id()
    ))
}

#[test]
fn an_agent_writes_only_its_checkout_and_reads_neither_store_nor_key() {
    let layout = Layout::new();
    let outside = outside_file("agent");
    let script = writes_script(&layout, &outside);
    let out = exec(
        &layout.spec(Network::Host),
        &layout.checkout,
        &layout.home,
        &script,
        None,
    );
    assert!(out.status.success(), "{}", all(&out));
    assert_writes_confined(&layout, &out, &outside);
    assert_eq!(layout.held().level(), "landlock");
}

#[test]
fn the_small_helper_binary_confines_alike_and_starts_nothing_once_its_engine_is_gone() {
    // Decision 106: `nightshift-exec` is the helper `nightshift` uses when it sits beside it.
    let small = env!("CARGO_BIN_EXE_nightshift-exec");
    let layout = Layout::new();
    let outside = outside_file("small");
    let script = writes_script(&layout, &outside);
    let spec = Spec {
        parent: Some(std::process::id()),
        ..layout.spec(Network::Host)
    };
    let out = exec_with(small, &spec, &layout.checkout, &layout.home, &script, None);
    assert!(out.status.success(), "{}", all(&out));
    assert_writes_confined(&layout, &out, &outside);
    assert_eq!(layout.held().level(), "landlock");

    // The engine the spec names is not the helper's parent (it died, and the helper was
    // adopted): the target never starts. A finished child's pid names no live parent of ours.
    let gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let marker = layout.checkout.join("started.txt");
    for bin in [small, BIN] {
        let orphaned = Spec {
            parent: Some(gone_pid),
            ..spec.clone()
        };
        let out = exec_with(
            bin,
            &orphaned,
            &layout.checkout,
            &layout.home,
            "echo started > started.txt",
            None,
        );
        assert_eq!(out.status.code(), Some(125), "{bin}: {}", all(&out));
        assert!(!marker.exists(), "{bin}: the target started");
    }
}

/// `<bin> __exec --spec <json> -- sh -c 'echo started > started.txt'` in `cwd`, the spec as
/// given (not a [`Spec`]: it may hold what this build does not know).
fn exec_raw(bin: &Path, json: &str, cwd: &Path) -> Output {
    Command::new(bin)
        .args([
            "__exec",
            "--spec",
            json,
            "--",
            "sh",
            "-c",
            "echo started > started.txt",
        ])
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// A spec with a rule the helper does not know (a `nightshift-exec` older than the
/// `nightshift` beside it) is never run without that rule: the full binary refuses it, and the
/// small helper hands it, arguments unchanged, to the `nightshift` beside it, once.
#[test]
fn a_spec_the_helper_cannot_read_is_refused_or_handed_to_the_full_binary_never_dropped() {
    let layout = Layout::new();
    let mut json = serde_json::to_value(layout.spec(Network::Host)).unwrap();
    json["a_rule_from_a_newer_engine"] = serde_json::json!(["/secret"]);
    let json = json.to_string();
    let marker = layout.checkout.join("started.txt");
    let out = exec_raw(Path::new(BIN), &json, &layout.checkout);
    assert_eq!(out.status.code(), Some(125), "{}", all(&out));
    assert!(
        all(&out).contains("unknown field `a_rule_from_a_newer_engine`"),
        "{}",
        all(&out)
    );
    assert!(!marker.exists(), "the target started without the rule");

    // The small helper, beside a `nightshift` that records how it was called.
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("nightshift-exec");
    std::fs::copy(env!("CARGO_BIN_EXE_nightshift-exec"), &small).unwrap();
    let called = dir.path().join("called.txt");
    let full = dir.path().join("nightshift");
    std::fs::write(
        &full,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> {}; done\nexit 7\n",
            called.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = exec_raw(&small, &json, &layout.checkout);
    assert_eq!(
        out.status.code(),
        Some(7),
        "the full binary's exit: {}",
        all(&out)
    );
    assert!(!marker.exists(), "the target started without the rule");
    assert_eq!(
        std::fs::read_to_string(&called).unwrap(),
        format!("__exec\n--deferred\n--spec\n{json}\n--\nsh\n-c\necho started > started.txt\n")
    );

    // Handed on once: a `nightshift` that is itself the small helper refuses, not loops.
    std::fs::copy(&small, &full).unwrap();
    let out = Command::new(&small)
        .args(["__exec", "--spec", &json, "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", all(&out));
    assert!(all(&out).contains("unknown field"), "{}", all(&out));
}

#[test]
fn an_unprivileged_agent_is_confined_the_same_way() {
    if !nix::unistd::getuid().is_root() {
        // Already unprivileged: the test above covers this path.
        return;
    }
    let layout = Layout::new();
    layout.open_to_all();
    let outside = outside_file("nobody");
    let script = writes_script(&layout, &outside);
    let out = exec(
        &layout.spec(Network::None),
        &layout.checkout,
        &layout.home,
        &script,
        Some(65534),
    );
    assert!(out.status.success(), "{}", all(&out));
    assert_writes_confined(&layout, &out, &outside);
    // Without root, the network namespace needs a user namespace: it held.
    assert_eq!(
        layout.held().level(),
        "landlock+netns",
        "{:?}",
        layout.held()
    );
}

/// Connects to 127.0.0.1:$PORT, then — only once the script has seen that its namespace has no
/// route but loopback — to a documentation address (192.0.2.1, TEST-NET-1), which must fail at
/// the route lookup (ENETUNREACH), before any packet exists.
const NETWORK: &str = r#"
if bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>err; then echo "host=connected"; else echo "host=$(cat err)"; fi
routes=$(awk 'NR > 1' /proc/net/route | wc -l)
echo "routes=$routes"
if [ "$routes" -eq 0 ]; then
  if bash -c 'exec 3<>/dev/tcp/192.0.2.1/9' 2>err; then echo "out=connected"; else echo "out=$(cat err)"; fi
else
  echo "out=not tried: a route exists"
fi
bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' 2>err; echo "lo=$(cat err)"
"#;

fn check_network(user: Option<u32>) {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: the network probe needs bash (/dev/tcp)");
        return;
    }
    let layout = Layout::new();
    if user.is_some() {
        layout.open_to_all();
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("PORT={port}\n{NETWORK}");
    let out = exec(
        &layout.spec(Network::None),
        &layout.checkout,
        &layout.home,
        &script,
        user,
    );
    assert!(out.status.success(), "{}", all(&out));
    assert!(
        probe(&out, "host").contains("Connection refused"),
        "the host's listener must be out of reach: {}",
        all(&out)
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host listener was reached: {other:?}"),
    }
    assert_eq!(probe(&out, "routes"), "0", "{}", all(&out));
    assert!(
        probe(&out, "out").contains("Network is unreachable"),
        "{}",
        all(&out)
    );
    // Loopback inside the namespace is up (refused, not unreachable).
    assert!(
        probe(&out, "lo").contains("Connection refused"),
        "{}",
        all(&out)
    );
    let held = layout.held();
    assert_eq!(held.level(), "landlock+netns", "{held:?}");
}

#[test]
fn a_check_in_the_network_namespace_reaches_nothing_outside() {
    check_network(None);
}

#[test]
fn an_unprivileged_check_gets_the_namespace_through_a_user_namespace() {
    if !nix::unistd::getuid().is_root() {
        return;
    }
    check_network(Some(65534));
}

#[test]
fn the_agent_runs_in_its_own_session_and_cannot_signal_outside() {
    let layout = Layout::new();
    // A process in a group of its own, standing in for the engine's and the supervisor's group.
    let mut sentinel = Command::new("sleep")
        .arg("600")
        .process_group(0)
        .spawn()
        .unwrap();
    let group = sentinel.id();
    let script = format!(
        r#"
echo "sid=$(cut -d' ' -f6 /proc/$$/stat)"
echo "pgid=$(cut -d' ' -f5 /proc/$$/stat)"
echo "pid=$$"
if kill -KILL -{group} 2>err; then echo "group=killed"; else echo "group=$(cat err)"; fi
if kill -KILL $PPID 2>err; then echo "parent=killed"; else echo "parent=$(cat err)"; fi
"#
    );
    let out = exec(
        &layout.spec(Network::Host),
        &layout.checkout,
        &layout.home,
        &script,
        None,
    );
    let alive = sentinel.try_wait().unwrap().is_none();
    let _ = sentinel.kill();
    let _ = sentinel.wait();
    assert!(out.status.success(), "{}", all(&out));
    assert!(alive, "the agent killed a group outside its sandbox");
    assert!(
        probe(&out, "group").contains("not permitted"),
        "{}",
        all(&out)
    );
    assert!(
        probe(&out, "parent").contains("not permitted"),
        "{}",
        all(&out)
    );
    let pid = probe(&out, "pid");
    assert_eq!(probe(&out, "sid"), pid, "the agent leads its own session");
    assert_eq!(probe(&out, "pgid"), pid, "and its own process group");
    let ours = nix::unistd::getsid(None).unwrap().as_raw().to_string();
    assert_ne!(probe(&out, "sid"), ours);
}

#[test]
fn the_helper_relays_the_exit_and_stops_the_target_on_sigterm() {
    let layout = Layout::new();
    let out = exec(
        &layout.spec(Network::Host),
        &layout.checkout,
        &layout.home,
        "exit 7",
        None,
    );
    assert_eq!(out.status.code(), Some(7), "{}", all(&out));
    // SIGTERM to the helper's group (what the session does) reaches the target in its session.
    let ready = layout.checkout.join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut child = Command::new(BIN)
        .args(["__exec", "--spec"])
        .arg(serde_json::to_string(&layout.spec(Network::Host)).unwrap())
        .args([
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 3' TERM; echo up > ready; while :; do sleep 1; done",
        ])
        .current_dir(&layout.checkout)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // The handshake: the target has its trap set once it writes to the FIFO.
    assert_eq!(std::fs::read_to_string(&ready).unwrap(), "up\n");
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut text).unwrap();
    assert_eq!(status.code(), Some(3), "{text}");
    assert!(text.contains("got-term"), "{text}");
}

/// The engine dying (`kill -9`) takes the whole process group of each session with it, not
/// only the CLI it started: a CLI's wrapper (Codex's and Gemini's npm scripts, a shell) starts
/// the real program as a child, which, orphaned, went on asking the model and writing.
#[test]
fn the_helper_ends_the_targets_whole_group_when_its_parent_dies() {
    let layout = Layout::new();
    let ready = layout.checkout.join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let spec = serde_json::to_string(&layout.spec(Network::Host)).unwrap();
    // The stand-in for the engine: a shell that starts the helper and waits. Every process
    // below it holds the write end of its stdout, so EOF there means all of them are gone.
    let mut parent = Command::new("sh")
        .args([
            "-c",
            "\"$0\" __exec --spec \"$1\" -- sh -c 'sleep 600 & echo $! > ready; wait' & wait",
        ])
        .arg(BIN)
        .arg(&spec)
        .current_dir(&layout.checkout)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let grandchild: i32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Path::new(&format!("/proc/{grandchild}")).exists());
    parent.kill().unwrap();
    parent.wait().unwrap();
    let mut out = parent.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut sink);
        let _ = tx.send(());
    });
    // EOF: every holder of the pipe closed it, which the sleep does only as it exits (its
    // /proc entry may still read "R" for a moment while it does).
    let gone = rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok();
    if !gone {
        let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(grandchild),
            nix::sys::signal::Signal::SIGKILL,
        );
        panic!("the target's child outlived the helper's parent: {stat}");
    }
}

/// A leaked grandchild as it described itself (`pid sid start`, from its `/proc/self/stat`).
struct Leak {
    pid: i32,
    start: String,
}

impl Leak {
    /// Parses the line, checking that the grandchild leads a session of its own (so the
    /// target's group, which `killpg` reaches, does not hold it).
    fn read(line: &str) -> Leak {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [pid, sid, start] = fields[..] else {
            panic!("not `pid sid start`: {line:?}");
        };
        assert_eq!(pid, sid, "the grandchild leads a session of its own");
        Leak {
            pid: pid.parse().unwrap(),
            start: start.into(),
        }
    }

    /// Still running: the same process (its start time), not a zombie.
    fn alive(&self) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
        // After the command: state is the first field, the start time the 20th.
        fields.first().is_some_and(|s| *s != "Z") && fields.get(19) == Some(&self.start.as_str())
    }

    fn kill(&self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// What a leaking grandchild writes about itself.
const DESCRIBE: &str = "echo $$ $(cut -d\" \" -f6,22 /proc/$$/stat)";

/// A target that leaks a `setsid` grandchild (a daemon a test suite starts) and exits: the
/// helper, the subreaper of the target's subtree, ends it before it exits itself, so nothing of
/// the session is left for the engine to find (issue 14).
#[test]
fn the_helper_ends_a_setsid_grandchild_when_the_target_exits() {
    let layout = Layout::new();
    // The grandchild names itself only once it has its own session; the target waits for that.
    let out = exec(
        &layout.spec(Network::Host),
        &layout.checkout,
        &layout.home,
        &format!(
            "setsid sh -c '{DESCRIBE} > leak.tmp; mv leak.tmp leak; exec sleep 300' \
             </dev/null >/dev/null 2>&1 &\nwhile [ ! -s leak ]; do sleep 0.01; done\necho leaked"
        ),
        None,
    );
    let leak = Leak::read(&std::fs::read_to_string(layout.checkout.join("leak")).unwrap());
    let alive = leak.alive();
    if alive {
        leak.kill();
    }
    assert!(out.status.success(), "{}", all(&out));
    assert!(all(&out).contains("leaked"), "{}", all(&out));
    assert!(
        !alive,
        "the setsid grandchild outlived its session's helper"
    );
}

/// The engine dying takes a target's `setsid` grandchild too, not only the target's group.
#[test]
fn the_helper_ends_a_setsid_grandchild_when_its_parent_dies() {
    let layout = Layout::new();
    let ready = layout.checkout.join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let spec = serde_json::to_string(&layout.spec(Network::Host)).unwrap();
    // The grandchild keeps the stand-in engine's stdout: EOF there means it is gone.
    let target = format!("setsid sh -c '{DESCRIBE} > ready; exec sleep 600' </dev/null & wait");
    let mut parent = Command::new("sh")
        .args(["-c", "\"$0\" __exec --spec \"$1\" -- sh -c \"$2\" & wait"])
        .arg(BIN)
        .arg(&spec)
        .arg(&target)
        .current_dir(&layout.checkout)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let grandchild = Leak::read(&std::fs::read_to_string(&ready).unwrap());
    assert!(grandchild.alive());
    parent.kill().unwrap();
    parent.wait().unwrap();
    let mut out = parent.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut sink);
        let _ = tx.send(());
    });
    let gone = rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok();
    if !gone {
        let alive = grandchild.alive();
        grandchild.kill();
        panic!("the setsid grandchild outlived the helper's parent (alive: {alive})");
    }
}

fn doctor_finding(repo: &crate::harness::Repo, name: &str) -> serde_json::Value {
    let out = repo
        .cmd(&["doctor", "--quick", "--json"])
        .env("SOME_SERVICE_TOKEN", "hunter2")
        .env_remove("NIGHTSHIFT_SANDBOX")
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", crate::harness::text(&out)));
    json["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no finding {name} in {json}"))
}

#[test]
fn doctor_prints_the_level_that_holds_and_the_agents_env_names() {
    let repo = crate::harness::Repo::new(&crate::harness::project());
    let item = "\n[[item]]\nid = \"a\"\nprompt = \"p\"\ncheck = \"sh check.sh a\"\n";
    repo.configure(&format!("{}{item}", repo.agent_table()));
    let confinement = doctor_finding(&repo, "confinement");
    assert_eq!(confinement["status"], "ok", "{confinement}");
    assert_eq!(
        confinement["detail"],
        "agents: landlock; checks: landlock+netns (network = none)"
    );
    let env = doctor_finding(&repo, "agent_env");
    let detail = env["detail"].as_str().unwrap();
    assert!(detail.starts_with("the agent gets: "), "{detail}");
    assert!(detail.contains("PATH"), "{detail}");
    // A command agent inherits the environment (the adapter's choice): names, never values.
    assert!(detail.contains("SOME_SERVICE_TOKEN"), "{detail}");
    assert!(!detail.contains("hunter2"), "{detail}");
    // A claude agent gets the adapter's allowlist: not the unrelated token.
    repo.configure(&format!(
        "[agent]\nkind = \"claude\"\n[check]\ncommand = \"true\"\n{item}"
    ));
    let env = doctor_finding(&repo, "agent_env");
    let detail = env["detail"].as_str().unwrap();
    assert!(detail.contains("PATH"), "{detail}");
    assert!(!detail.contains("SOME_SERVICE_TOKEN"), "{detail}");

    // `network = "host"` opts checks out of the namespace, and doctor says so.
    repo.configure(&format!(
        "{}\n[check]\nnetwork = \"host\"\n{item}",
        repo.agent_table()
    ));
    let confinement = doctor_finding(&repo, "confinement");
    assert_eq!(
        confinement["detail"],
        "agents: landlock; checks: landlock (network = host)"
    );
}

fn files_named(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_named(&path, suffix, out);
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
}

#[test]
fn a_run_confines_its_agent_and_check_and_redacts_the_logs() {
    use std::os::unix::fs::PermissionsExt;
    let repo = crate::harness::Repo::new(&crate::harness::project());
    let root = repo.root.display().to_string();
    // A hostile agent: edits the user's checkout, reads the store, then does the work.
    let agent = format!(
        "echo hacked >> {root}/README.md; cat {root}/.nightshift/state.db >/dev/null && echo READ-STORE; \
         echo token=[$SOME_SERVICE_TOKEN]; mkdir -p done; echo ok > done/w"
    );
    let config = format!(
        "[agent]\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"{agent}\"]\n\
         [check]\ntimeout = \"1m\"\n\
         [[item]]\nid = \"w\"\nprompt = \"p\"\ncheck = \"echo check-token=$SOME_SERVICE_TOKEN; sh check.sh w\"\n"
    );
    repo.configure(&config);
    let out = repo
        .cmd(&["run"])
        .env_remove("NIGHTSHIFT_SANDBOX")
        .env("SOME_SERVICE_TOKEN", "hunter2-secret-value")
        .output()
        .unwrap();
    assert_eq!(
        repo.shipped_items(),
        ["w"],
        "{}",
        crate::harness::text(&out)
    );
    // The user's checkout is untouched.
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README.md")).unwrap(),
        "a project\n"
    );
    let logs = repo.root.join(".nightshift/logs");
    assert_eq!(
        std::fs::metadata(&logs).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let mut agent_logs = Vec::new();
    files_named(&logs, ".agent.log", &mut agent_logs);
    let agent_log = std::fs::read_to_string(&agent_logs[0]).unwrap();
    assert!(agent_log.contains("Permission denied"), "{agent_log}");
    assert!(!agent_log.contains("READ-STORE"), "{agent_log}");
    // A command agent inherits the environment (the adapter's choice), but its log never
    // holds the secret's value.
    assert!(!agent_log.contains("hunter2-secret-value"), "{agent_log}");
    assert_eq!(
        std::fs::metadata(&agent_logs[0])
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    // The check got it (checks keep the environment), and its log has it redacted.
    let mut check_logs = Vec::new();
    files_named(&logs, ".log", &mut check_logs);
    let check_text: String = check_logs
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(
        check_text.contains("check-token=[REDACTED:SOME_SERVICE_TOKEN]"),
        "{check_text}"
    );
    assert!(!check_text.contains("hunter2-secret-value"), "{check_text}");
    // The levels that held, as the helper recorded them for the receipt.
    let mut levels = Vec::new();
    files_named(&logs, ".confinement.json", &mut levels);
    let held: Vec<Held> = levels
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    assert!(held.iter().any(|h| h.level() == "landlock"), "{held:?}");
    assert!(
        held.iter().any(|h| h.level() == "landlock+netns"),
        "{held:?}"
    );
    // And the receipt says so, per session and per check.
    let mut receipts = Vec::new();
    files_named(
        &repo.root.join(".nightshift/receipts"),
        ".json",
        &mut receipts,
    );
    let receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&receipts[0]).unwrap()).unwrap();
    assert_eq!(
        std::fs::metadata(&receipts[0])
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let iteration = &receipt["receipt"]["iterations"][0];
    assert_eq!(
        iteration["sessions"][0]["confinement"], "landlock",
        "{receipt}"
    );
    assert_eq!(
        iteration["checks"][0]["confinement"], "landlock+netns",
        "{receipt}"
    );
}

/// A repository whose `check.sh` needs a server on the host's loopback: green with the host
/// network, red in the check's namespace (whose loopback has no server). The kernel completes
/// the handshakes from the backlog; nothing needs to accept. Keep the listener alive for the
/// test. `None` (skipped, said) without bash (the probe is its `/dev/tcp`).
fn host_only_check() -> Option<(TcpListener, crate::harness::Repo)> {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: the network probe needs bash (/dev/tcp)");
        return None;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let repo = crate::harness::Repo::new(&[(
        "check.sh",
        &*format!("#!/bin/sh\nbash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' || exit 1\n"),
    )]);
    Some((listener, repo))
}

#[test]
fn doctor_refuses_a_check_that_is_green_only_with_the_host_network() {
    let Some((listener, repo)) = host_only_check() else {
        return;
    };
    let item = "\n[[item]]\nid = \"a\"\nprompt = \"p\"\n";
    let doctor = |network: &str| {
        repo.configure(&format!(
            "{}\n[check]\ncommand = \"sh check.sh\"\n{network}{item}",
            repo.agent_table()
        ));
        let out = repo
            .cmd(&["doctor", "--json", "--runs", "1"])
            .env_remove("NIGHTSHIFT_SANDBOX")
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", crate::harness::text(&out)));
        (out.status.code(), json)
    };
    let (code, json) = doctor("");
    let findings = json["findings"].as_array().unwrap();
    let runs = findings.iter().find(|f| f["name"] == "check_runs").unwrap();
    assert_eq!(runs["status"], "ok", "green with the host network: {json}");
    let hermetic = findings
        .iter()
        .find(|f| f["name"] == "hermetic")
        .unwrap_or_else(|| panic!("no hermetic finding: {json}"));
    assert_eq!(hermetic["status"], "fail", "{hermetic}");
    assert_eq!(hermetic["halt"], "check_not_hermetic", "{hermetic}");
    assert!(
        hermetic["detail"]
            .as_str()
            .unwrap()
            .contains("green with the host network and red without it"),
        "{hermetic}"
    );
    assert!(
        hermetic["action"]
            .as_str()
            .unwrap()
            .contains("network = \"host\""),
        "{hermetic}"
    );
    assert_eq!(json["halt_reason"], "check_not_hermetic", "{json}");
    assert_ne!(code, Some(0));
    // Opting out with the key the message names: no hermeticity finding, no refusal from it.
    let (_, json) = doctor("network = \"host\"\n");
    let findings = json["findings"].as_array().unwrap();
    assert!(findings.iter().all(|f| f["name"] != "hermetic"), "{json}");
    assert_ne!(json["halt_reason"], "check_not_hermetic", "{json}");
    drop(listener);
}

#[test]
fn a_run_refuses_to_start_on_a_check_that_is_green_only_with_the_host_network() {
    use nightshift_core::store::EventKind;
    let Some((listener, repo)) = host_only_check() else {
        return;
    };
    repo.agent("a", &crate::harness::solves("a"));
    let run = |network: &str| {
        repo.configure(&format!(
            "{}\n[check]\ncommand = \"sh check.sh\"\ntimeout = \"1m\"\n{network}\n[[item]]\nid = \"a\"\nprompt = \"p\"\n",
            repo.agent_table()
        ));
        repo.cmd(&["run"])
            .env_remove("NIGHTSHIFT_SANDBOX")
            .output()
            .unwrap()
    };
    let sessions = || {
        repo.store()
            .events_after(0, 100_000)
            .unwrap()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::SessionStarted { .. }))
            .count()
    };
    // Whatever the format: `exit-code` keeps no results, but the base is still judged.
    for (runs, format) in [(1, ""), (2, "format = \"exit-code\"\n")] {
        let out = run(format);
        let said = crate::harness::text(&out);
        assert_eq!(
            out.status.code(),
            Some(
                nightshift_core::halt::HaltReason::CheckNotHermetic
                    .class()
                    .code()
            ),
            "{format}{said}"
        );
        assert_eq!(sessions(), 0, "no agent session before the refusal: {said}");
        let status = repo.status_json();
        assert_eq!(
            status["run"]["halt_reason"], "check_not_hermetic",
            "{status}"
        );
        let failed: Vec<_> = repo
            .store()
            .events_after(0, 100_000)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::AttemptFailed { reason, halt, .. } => Some((reason, halt)),
                _ => None,
            })
            .collect();
        assert_eq!(
            failed.len(),
            runs,
            "one refused attempt per run: {failed:?}"
        );
        let (reason, halt) = &failed[runs - 1];
        assert_eq!(
            *halt,
            Some(nightshift_core::halt::HaltReason::CheckNotHermetic)
        );
        for says in [
            "green with the host network and red without it",
            "network = \"host\"",
            "[check]",
        ] {
            assert!(reason.contains(says), "{says} missing: {reason}");
            assert!(
                said.contains(says),
                "{says} missing from the run's output: {said}"
            );
        }
        assert!(repo.shipped_items().is_empty());
        repo.assert_clean_end();
    }

    // Opting out with the key the message names: the same check starts the work and ships it.
    let out = run("network = \"host\"\n");
    let said = crate::harness::text(&out);
    assert_eq!(out.status.code(), Some(10), "{said}");
    assert_eq!(sessions(), 1, "{said}");
    assert_eq!(repo.shipped_items(), vec!["a".to_owned()], "{said}");
    drop(listener);
}
