//! The command line end to end: `run_cli_in` against temporary directories, and the built binary.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn run(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Run {
    let vars: BTreeMap<String, OsString> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = fake_agent::run_cli_in(
        args.iter().copied(),
        cwd,
        |key| vars.get(key).cloned(),
        &mut out,
        &mut err,
    );
    Run {
        code,
        out: String::from_utf8_lossy(&out).into_owned(),
        err: String::from_utf8_lossy(&err).into_owned(),
    }
}

#[test]
fn script_dir_picks_the_item_script_then_the_default() -> TestResult {
    let scripts = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    fs::write(
        scripts.path().join("item-1.fake"),
        "write done.txt \"item one\\n\"\nprint \"ran item-1\"\n",
    )?;
    fs::write(
        scripts.path().join("default.fake"),
        "print \"ran default\"\nexit 4\n",
    )?;
    let dir = scripts.path().to_string_lossy().into_owned();

    let r = run(
        &["--script-dir", &dir],
        work.path(),
        &[("NIGHTSHIFT_ITEM", "item-1")],
    );
    assert_eq!(
        (r.code, r.out.as_str(), r.err.as_str()),
        (0, "ran item-1\n", "")
    );
    assert_eq!(
        fs::read_to_string(work.path().join("done.txt"))?,
        "item one\n"
    );

    let r = run(
        &["--script-dir", &dir],
        work.path(),
        &[("NIGHTSHIFT_ITEM", "item-2")],
    );
    assert_eq!((r.code, r.out.as_str()), (4, "ran default\n"));
    let r = run(&["--script-dir", &dir], work.path(), &[]);
    assert_eq!((r.code, r.out.as_str()), (4, "ran default\n"));
    Ok(())
}

#[test]
fn missing_scripts_name_both_paths() -> TestResult {
    let scripts = tempfile::tempdir()?;
    let dir = scripts.path().to_string_lossy().into_owned();
    let r = run(
        &["--script-dir", &dir],
        scripts.path(),
        &[("NIGHTSHIFT_ITEM", "it-7")],
    );
    assert_eq!(r.code, 2);
    assert!(r.err.starts_with("fake-agent: "), "{}", r.err);
    assert!(
        r.err
            .contains(&scripts.path().join("it-7.fake").display().to_string()),
        "{}",
        r.err
    );
    assert!(
        r.err
            .contains(&scripts.path().join("default.fake").display().to_string()),
        "{}",
        r.err
    );
    Ok(())
}

#[test]
fn a_syntax_error_runs_nothing() -> TestResult {
    let work = tempfile::tempdir()?;
    fs::write(
        work.path().join("s.fake"),
        "write created.txt \"x\"\nprint \"hi\"\nbogus step\n",
    )?;
    // A relative script path resolves against the given cwd.
    let r = run(&["--script", "s.fake"], work.path(), &[]);
    assert_eq!(r.code, 2);
    assert_eq!(r.out, "");
    let expected = format!(
        "fake-agent: {}:3: unknown command `bogus`",
        work.path().join("s.fake").display()
    );
    assert!(r.err.starts_with(&expected), "{}", r.err);
    assert!(!work.path().join("created.txt").exists());
    Ok(())
}

#[test]
fn escaping_paths_are_rejected_before_anything_runs() -> TestResult {
    let work = tempfile::tempdir()?;
    let inner = work.path().join("tree");
    fs::create_dir(&inner)?;
    fs::write(
        inner.join("s.fake"),
        "write ok.txt \"x\"\nwrite ../outside.txt \"x\"\n",
    )?;
    let r = run(&["--script", "s.fake"], &inner, &[]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains(":2: path `../outside.txt`"), "{}", r.err);
    assert!(!inner.join("ok.txt").exists());
    assert!(!work.path().join("outside.txt").exists());
    Ok(())
}

#[test]
fn bad_command_lines_and_environment() -> TestResult {
    let work = tempfile::tempdir()?;
    let r = run(&[], work.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("missing `--script FILE`"), "{}", r.err);
    let r = run(&["--frobnicate"], work.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("unknown argument `--frobnicate`"),
        "{}",
        r.err
    );
    let r = run(&["--script", "nope.fake"], work.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("cannot read script"), "{}", r.err);

    fs::write(work.path().join("s.fake"), "print \"x\"\n")?;
    let r = run(
        &["--script", "s.fake"],
        work.path(),
        &[("NIGHTSHIFT_ATTEMPT", "zero")],
    );
    assert_eq!((r.code, r.out.as_str()), (2, ""));
    assert!(r.err.contains("NIGHTSHIFT_ATTEMPT"), "{}", r.err);
    Ok(())
}

#[test]
fn help_goes_to_stdout() {
    let r = run(&["--help"], Path::new("/"), &[]);
    assert_eq!(r.code, 0);
    assert_eq!(r.out, fake_agent::USAGE);
    assert!(r.out.contains("--script-dir"));
    assert_eq!(r.err, "");
}

#[test]
fn conditions_see_the_environment() -> TestResult {
    let work = tempfile::tempdir()?;
    fs::write(
        work.path().join("s.fake"),
        "when iteration == 1\nexit 5\nwhen attempt > 1\nprint \"retry\"\nalways\nprint \"iterated\"\n",
    )?;
    let args = ["--script", "s.fake"];
    assert_eq!(run(&args, work.path(), &[]).code, 5);
    let r = run(&args, work.path(), &[("NIGHTSHIFT_ITERATION", "2")]);
    assert_eq!((r.code, r.out.as_str()), (0, "iterated\n"));
    let r = run(
        &args,
        work.path(),
        &[("NIGHTSHIFT_ITERATION", "2"), ("NIGHTSHIFT_ATTEMPT", "3")],
    );
    assert_eq!((r.code, r.out.as_str()), (0, "retry\niterated\n"));
    Ok(())
}

/// The real binary, as nightshift would spawn it: cwd, environment, pipes, exit code.
#[test]
fn the_binary_end_to_end() -> TestResult {
    let work = tempfile::tempdir()?;
    let scripts = tempfile::tempdir()?;
    let log = scripts.path().join("calls.jsonl");
    fs::write(
        scripts.path().join("item-1.fake"),
        format!(
            "write src/greet.sh <<EOF\ngreet() {{ echo \"hello, $1\"; }}\nEOF\n\
             replace src/greet.sh \"hello\" \"Hello\"\n\
             record {}\n\
             stderr \"working\"\n\
             emit claude text=\"Done.\" turns=3 input=1000 output=301 cache_read=15000 cache_write=2000 cost=0.05\n\
             exit 3\n",
            log.display()
        ),
    )?;
    let output = Command::new(env!("CARGO_BIN_EXE_fake-agent"))
        .arg("--script-dir")
        .arg(scripts.path())
        .current_dir(work.path())
        .env("NIGHTSHIFT_ITEM", "item-1")
        .env("NIGHTSHIFT_ATTEMPT", "2")
        .env_remove("NIGHTSHIFT_ITERATION")
        .env_remove("NIGHTSHIFT_PROMPT_FILE")
        .env_remove("NIGHTSHIFT_FEEDBACK_FILE")
        .output()?;
    let stderr = String::from_utf8(output.stderr)?;
    assert_eq!(output.status.code(), Some(3), "stderr: {stderr}");
    assert_eq!(stderr, "working\n");
    assert_eq!(
        fs::read_to_string(work.path().join("src/greet.sh"))?,
        "greet() { echo \"Hello, $1\"; }\n"
    );

    let stdout = String::from_utf8(output.stdout)?;
    let lines = stdout
        .lines()
        .map(serde_json::from_str::<Value>)
        .collect::<Result<Vec<_>, _>>()?;
    let types: Vec<_> = lines.iter().map(|l| l["type"].as_str()).collect();
    assert_eq!(
        types,
        [
            Some("system"),
            Some("assistant"),
            Some("assistant"),
            Some("assistant"),
            Some("result")
        ]
    );
    let cwd = fs::canonicalize(work.path())?;
    let reported_cwd = lines[0]["cwd"].as_str().ok_or("init has no cwd")?;
    assert_eq!(fs::canonicalize(reported_cwd)?, cwd);
    let mut ids = BTreeSet::new();
    let mut output_tokens = 0;
    for line in &lines[1..4] {
        if ids.insert(line["message"]["id"].to_string()) {
            output_tokens += line["message"]["usage"]["output_tokens"]
                .as_u64()
                .ok_or("no output_tokens")?;
        }
    }
    assert_eq!(
        Some(output_tokens),
        lines[4]["usage"]["output_tokens"].as_u64()
    );
    assert_eq!(output_tokens, 301);
    assert_eq!(lines[4]["result"], "Done.");
    assert_eq!(lines[4]["num_turns"], 3);

    let record: Value = serde_json::from_str(fs::read_to_string(&log)?.trim_end())?;
    assert_eq!(record["item"], "item-1");
    assert_eq!(record["attempt"], 2);
    assert_eq!(record["iteration"], 1);
    Ok(())
}

/// Misbehaviours that only a real process can show: signals, crashes, leaked processes.
mod processes {
    use std::fs;
    use std::os::unix::process::ExitStatusExt as _;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;

    use super::TestResult;

    /// Long enough for a loaded CI machine, short enough to fail a hung test.
    const HANDSHAKE: Duration = Duration::from_secs(20);

    /// The binary running `script` in `work`, stdout piped, stdin and stderr as given.
    fn start(
        work: &Path,
        script: &str,
        stderr: Stdio,
    ) -> Result<Child, Box<dyn std::error::Error>> {
        let file = work.join("agent.fake");
        fs::write(&file, script)?;
        Ok(Command::new(env!("CARGO_BIN_EXE_fake-agent"))
            .arg("--script")
            .arg(&file)
            .current_dir(work)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()?)
    }

    /// Makes a FIFO at `path`: a `touch` or an append to it blocks until we read, so reading it
    /// is a handshake with no polling.
    fn fifo(path: &Path) -> TestResult {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU)?;
        Ok(())
    }

    /// Reads the FIFO `path` round after round (each writer's open…close is one round) until
    /// `rounds` rounds happened or `HANDSHAKE` passed; returns everything read.
    fn read_rounds(path: &Path, rounds: usize) -> Option<String> {
        let (send, receive) = mpsc::channel();
        let path: PathBuf = path.to_path_buf();
        std::thread::spawn(move || {
            let mut text = String::new();
            for _ in 0..rounds {
                // Blocks until a writer opens the FIFO; returns at EOF, when it closes it.
                match fs::read_to_string(&path) {
                    Ok(round) => text.push_str(&round),
                    Err(_) => return,
                }
            }
            let _ = send.send(text);
        });
        receive.recv_timeout(HANDSHAKE).ok()
    }

    fn pid_of(child: &Child) -> Result<Pid, Box<dyn std::error::Error>> {
        Ok(Pid::from_raw(i32::try_from(child.id())?))
    }

    /// The state letter of `pid` (`S`, `R`, `Z`…) from `/proc/<pid>/stat`.
    fn state(pid: Pid) -> Result<char, Box<dyn std::error::Error>> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
        let after_name = &stat[stat.rfind(')').ok_or("no ) in stat")? + 1..];
        Ok(after_name.trim_start().chars().next().ok_or("empty stat")?)
    }

    /// The session (field 6) of `pid`.
    fn session(pid: Pid) -> Result<i32, Box<dyn std::error::Error>> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
        let after_name = &stat[stat.rfind(')').ok_or("no ) in stat")? + 1..];
        let field = after_name.split_whitespace().nth(3).ok_or("short stat")?;
        Ok(field.parse()?)
    }

    /// Starts `script` (which must `touch ready` and then hang), waits for `ready`, sends
    /// SIGTERM and then SIGKILL. Returns the signal that ended the process and whether it was
    /// still running (not a zombie) after SIGTERM. A fatal SIGTERM fixes the exit status at
    /// once, so a later SIGKILL cannot overwrite it: signal 9 proves SIGTERM was survived.
    fn term_then_kill(script: &str) -> Result<(Option<i32>, bool), Box<dyn std::error::Error>> {
        let work = tempfile::tempdir()?;
        fifo(&work.path().join("ready"))?;
        let mut child = start(work.path(), script, Stdio::null())?;
        let pid = pid_of(&child)?;
        if read_rounds(&work.path().join("ready"), 1).is_none() {
            child.kill()?;
            child.wait()?;
            return Err("the agent never touched `ready`".into());
        }
        kill(pid, Signal::SIGTERM)?;
        let alive = state(pid).is_ok_and(|state| state != 'Z' && state != 'X');
        // Even if SIGTERM killed it, its unreaped zombie keeps the pid: this cannot hit ESRCH.
        kill(pid, Signal::SIGKILL)?;
        let status = child.wait()?;
        Ok((status.signal(), alive))
    }

    #[test]
    fn ignore_sigterm_survives_sigterm_and_dies_by_sigkill() -> TestResult {
        let (signal, alive) = term_then_kill("ignore-sigterm\ntouch ready\ngo-silent forever\n")?;
        assert_eq!(signal, Some(9), "the agent must survive SIGTERM");
        assert!(alive, "still running after SIGTERM");
        Ok(())
    }

    /// The control for the test above: without `ignore-sigterm`, SIGTERM ends a silent agent.
    #[test]
    fn a_silent_agent_dies_by_sigterm() -> TestResult {
        let (signal, _) = term_then_kill("touch ready\ngo-silent forever\n")?;
        assert_eq!(signal, Some(15));
        Ok(())
    }

    #[test]
    fn crash_dies_by_sigabrt_without_a_core_file() -> TestResult {
        let work = tempfile::tempdir()?;
        let child = start(
            work.path(),
            "print \"before\"\ncrash\nprint \"after\"\n",
            Stdio::piped(),
        )?;
        let output = child.wait_with_output()?;
        assert_eq!(output.status.signal(), Some(6), "{:?}", output.status);
        assert_eq!(output.status.code(), None);
        assert_eq!(String::from_utf8(output.stdout)?, "before\n");
        let mut entries: Vec<String> = fs::read_dir(work.path())?
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        assert_eq!(
            entries,
            ["agent.fake"],
            "a crash leaves no core file behind"
        );
        Ok(())
    }

    /// The supervisor's hard case: the agent exits, its stdout closes, and a grandchild in
    /// another session goes on writing into the work tree.
    #[test]
    fn an_orphan_outlives_the_agent() -> TestResult {
        let work = tempfile::tempdir()?;
        fs::create_dir(work.path().join(".pytest_cache"))?;
        let target = work.path().join(".pytest_cache/README.md");
        fifo(&target)?;
        let child = start(
            work.path(),
            "spawn-orphan .pytest_cache/README.md interval=10ms\nprint \"done\"\nexit 0\n",
            Stdio::piped(),
        )?;
        // Waits for the agent's exit and its pipes' EOF: the orphan holds neither.
        let output = child.wait_with_output()?;
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(String::from_utf8(output.stdout)?, "done\n");
        let stderr = String::from_utf8(output.stderr)?;
        let pid: i32 = stderr
            .trim_end()
            .strip_prefix("fake-agent: orphan pid ")
            .ok_or_else(|| format!("no orphan pid on stderr: {stderr:?}"))?
            .parse()?;
        let orphan = Pid::from_raw(pid);
        let written = read_rounds(&target, 2);
        let orphan_session = session(orphan);
        // The group exists only if the orphan did call setsid; the pid in any case.
        let _ = killpg(orphan, Signal::SIGKILL);
        kill(orphan, Signal::SIGKILL)?;

        let written = written.ok_or("the orphan did not keep writing after the agent exited")?;
        assert!(written.lines().count() >= 2, "{written:?}");
        assert_eq!(orphan_session?, pid);
        assert_ne!(pid, nix::unistd::getsid(None)?.as_raw());
        Ok(())
    }
}
