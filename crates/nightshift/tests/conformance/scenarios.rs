//! The scenarios of issue 11, each against one real CLI with the default `[agent]` table.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use model_server::{Scenario, Step, Usage};
use serde_json::Value;

use crate::agents::{Agent, Auth};
use crate::case::{Case, ITEM, Row, WAIT, at};
use crate::harness::text;

pub type Body = fn(&Agent) -> Row;
pub type Applies = fn(&Agent) -> bool;

/// (name, applies to, body)
pub const ALL: &[(&str, Applies, Body)] = &[
    ("ship", any, ship),
    ("runaway", multi_turn, runaway),
    ("stall", any, stall),
    ("usage_limit", any, usage_limit),
    ("api_429", any, api_429),
    ("api_500", any, api_500),
    ("api_overloaded", any, api_overloaded),
    ("bad_key", any, bad_key),
    ("kill9_resume", any, kill9_resume),
    ("background_job", claude, background_job),
    ("tell_live", claude, tell_live),
];

fn any(_: &Agent) -> bool {
    true
}

/// aider makes one model request per session (no tool loop): nothing runs away mid-session.
fn multi_turn(a: &Agent) -> bool {
    a.kind != "aider"
}

fn claude(a: &Agent) -> bool {
    a.kind == "claude"
}

fn write_x() -> Step {
    Step::Write {
        path: format!("done/{ITEM}"),
        content: "ok\n".into(),
    }
}

fn said(text: &str) -> Step {
    Step::Text { text: text.into() }
}

/// Writes done/x, then says so.
fn solves() -> Scenario {
    Scenario {
        steps: vec![write_x(), said("Done: done/x says ok.")],
        usage: Usage {
            input: 1200,
            cached: 200,
            output: 40,
        },
    }
}

fn is_session_end(e: &Value) -> bool {
    e["kind"] == "session_ended"
}

/// Ships with the default config; usage recorded exactly as the server reported it.
fn ship(agent: &Agent) -> Row {
    let mut c = Case::new(agent, "ship", solves(), Auth::ApiKey, "");
    let out = c.run();
    c.measure();
    if let Some(out) = &out {
        c.check(
            out.status.code() == Some(10),
            format!("exit 10 (all shipped)\n{}", text(out)),
        );
    }
    c.check(c.shipped(), "x is on main");
    c.check(c.row.attempts == Some(1), "one attempt");
    c.check(c.usage_exact(), "recorded usage equals the server's");
    c.check_no_strays();
    c.done()
}

/// A tool loop that never ends: `session_tokens` ends it mid-stream; count the model requests
/// served after the trip was journaled.
fn runaway(agent: &Agent) -> Row {
    let play = Scenario {
        steps: vec![Step::Shell {
            command: "echo step".into(),
            background: false,
        }],
        usage: Usage {
            input: 30_000,
            cached: 0,
            output: 100,
        },
    };
    let mut c = Case::new(
        agent,
        "runaway",
        play,
        Auth::ApiKey,
        "session_tokens = 100000\n",
    );
    // Stopped once the item parks: the parked pass's fresh attempt would only repeat the trip
    // (and doubled the case's time under load, past its deadline).
    let follow = c.follow();
    let child = c.spawn(&["run"]);
    let parked = follow.wait(WAIT, |e| e["kind"] == "item_parked");
    c.check(
        parked.is_some(),
        "the item parked after its over-budget attempt",
    );
    let _ = c.cmd(&["stop"]).output();
    let _ = c.finish(child);
    let events = c.measure();
    // The trip, and the end of the session it tripped (later attempts are not counted).
    let trip = events.iter().find(|e| e["kind"] == "budget_tripped");
    let end = trip.and_then(|t| {
        events
            .iter()
            .find(|e| is_session_end(e) && e["seq"].as_i64() > t["seq"].as_i64())
    });
    match (trip.and_then(at), end.and_then(at)) {
        (Some(trip), Some(end)) => {
            let after = c
                .server
                .served()
                .iter()
                .filter(|s| s.turn && s.at > trip && s.at <= end)
                .count();
            c.row.after_trip = Some(after);
            c.check(
                after <= 1,
                format!("{after} model requests served after the trip"),
            );
        }
        _ => c.fail(format!(
            "no budget_tripped and session end ({} model requests served)",
            c.server.turns()
        )),
    }
    let ended = events
        .iter()
        .filter(|e| is_session_end(e))
        .map(|e| e["outcome"].clone())
        .collect::<Vec<_>>();
    c.check(
        ended.first().is_some_and(|o| o == "over_budget"),
        format!("the session ended over_budget: {ended:?}"),
    );
    c.check_no_strays();
    c.done()
}

/// The server goes silent mid-session: stalled, nudged by resuming the CLI's own session (the
/// same conversation, `resumed: true`), then `stalled`; then the session's work goes to the
/// check like any other ending, and with no iteration or attempt left the item parks (decision
/// 86). The run is stopped there: the parked pass's fresh attempt repeats the cycle.
///
/// The model answers once (a shell tool call) before it goes silent, so the CLI has a
/// conversation to resume: Claude Code 2.1.197 and Gemini CLI persist a session only once the
/// model has answered. aider makes one request per session and has no session to resume: it
/// stalls on its first request and its nudge is a fresh process.
fn stall(agent: &Agent) -> Row {
    let resumable = agent.kind != "aider";
    let steps = if resumable {
        vec![
            Step::Shell {
                command: "echo step".into(),
                background: false,
            },
            Step::Stall,
        ]
    } else {
        vec![Step::Stall]
    };
    let stall_step = steps.len() - 1;
    let mut c = Case::new(
        agent,
        "stall",
        Scenario::of(steps),
        Auth::ApiKey,
        "stall_grace = \"15s\"\nstall_nudges = 1\n",
    );
    let follow = c.follow();
    let child = c.spawn(&["run"]);
    let parked = follow.wait(WAIT, |e| e["kind"] == "item_parked");
    c.check(
        parked.is_some(),
        "the item parked after its stalled attempt",
    );
    let _ = c.cmd(&["stop"]).output();
    let _ = c.finish(child);
    let events = c.measure();
    // The stall's onset: the first request the silent server held (a model turn or, for Gemini,
    // its router's call before the turn).
    let onset = c
        .server
        .served()
        .iter()
        .find(|s| s.step == Some(stall_step))
        .map(|s| s.at);
    let first: Vec<&Value> = events
        .iter()
        .filter(|e| e["attempt"] == 1 && e["item"] == ITEM)
        .filter(|e| {
            matches!(
                e["kind"].as_str(),
                Some(
                    "session_started"
                        | "session_ended"
                        | "session_nudged"
                        | "attempt_failed"
                        | "item_parked"
                )
            )
        })
        .collect();
    let kinds: Vec<String> = first
        .iter()
        .map(|e| match e["outcome"].as_str() {
            Some(o) => format!("{}({o})", e["kind"].as_str().unwrap_or("?")),
            None => e["kind"].as_str().unwrap_or("?").to_owned(),
        })
        .collect();
    let expected = [
        "session_started",
        "session_ended(stalled)",
        "session_nudged",
        "session_started",
        "session_ended(stalled)",
        "attempt_failed",
    ];
    c.check(
        kinds == expected,
        format!("attempt 1: stalled, one nudge, stalled, then the attempt failed: {kinds:?}"),
    );
    let sessions: Vec<&Value> = first
        .iter()
        .copied()
        .filter(|e| e["kind"] == "session_ended")
        .collect();
    if let [before, after] = sessions.as_slice() {
        let nudge_start = first
            .iter()
            .filter(|e| e["kind"] == "session_started")
            .nth(1);
        if resumable {
            c.check(
                nudge_start.is_some_and(|e| e["resumed"] == true)
                    && before["agent_session"].is_string()
                    && before["agent_session"] == after["agent_session"],
                format!(
                    "the nudge resumed the same CLI session: {} then {} (resumed: {})",
                    before["agent_session"],
                    after["agent_session"],
                    nudge_start.map_or(Value::Null, |e| e["resumed"].clone())
                ),
            );
        } else {
            c.check(
                nudge_start.is_some_and(|e| e["resumed"] != true),
                "aider's nudge is a fresh process (it has no session to resume)",
            );
        }
        match (onset, at(after)) {
            (Some(onset), Some(end)) => {
                c.row.stall_secs = end.duration_since(onset).ok().map(|d| d.as_secs_f64());
            }
            _ => c.fail(format!(
                "no stall onset at the server ({} requests served)",
                c.server.served().len()
            )),
        }
    }
    c.check(!c.shipped(), "nothing shipped");
    c.check_no_strays();
    c.done()
}

/// A subscription usage limit with a reset: the run pauses to the reset (a faked wall clock
/// moved past it), the rerun ships, and no attempt is spent.
fn usage_limit(agent: &Agent) -> Row {
    let play = Scenario::of(vec![Step::RateLimit {
        resets_in: Some(3600),
    }]);
    let mut c = Case::new(
        agent,
        "usage_limit",
        play,
        Auth::Subscription,
        "rate_limit_max_wait = \"6h\"\n",
    );
    let now = c.repo.home.join("fake-now");
    std::fs::write(&now, jiff::Timestamp::now().to_string()).expect("write the fake clock");
    let follow = c.follow();
    let child = c
        .cmd(&["run"])
        .env("NIGHTSHIFT_FAKE_NOW_FILE", &now)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn run");
    let ended = follow.wait(WAIT, is_session_end);
    let paused = follow.wait(Duration::from_secs(30), |e| e["kind"] == "run_paused");
    match (&ended, &paused) {
        (Some(end), Some(p)) => {
            c.check(
                end["outcome"] == "rate_limited",
                format!("the session ended rate_limited: {end}"),
            );
            let until = p["until"].as_i64().unwrap_or(0);
            let reset = jiff::Timestamp::now().as_second() + 3000;
            c.check(
                until >= reset,
                format!("paused to the reset (until {until}), not a guess"),
            );
            c.server.play(solves());
            let past = jiff::Timestamp::from_second(until + 1)
                .map(|t| t.to_string())
                .unwrap_or_default();
            std::fs::write(&now, past).expect("move the fake clock");
        }
        _ => c.fail(format!(
            "no rate-limited session end and pause: {ended:?} {paused:?}"
        )),
    }
    let out = c.finish(child);
    c.measure();
    if let Some(out) = &out {
        c.check(
            out.status.code() == Some(10),
            format!("exit 10\n{}", text(out)),
        );
    }
    c.check(c.shipped(), "x ships after the reset");
    c.check(
        c.row.attempts == Some(1) && c.row.attempts_failed == Some(0),
        "no attempt spent",
    );
    c.check_no_strays();
    c.done()
}

/// An API error the CLI retries, then surfaces: not the item's fault (no attempt spent); once
/// the server is healthy the same attempt ships.
fn api_error(agent: &Agent, name: &str, step: Step) -> Row {
    let mut c = Case::new(agent, name, Scenario::of(vec![step]), Auth::ApiKey, "");
    let follow = c.follow();
    let child = c.spawn(&["run"]);
    match follow.wait(WAIT, is_session_end) {
        Some(end) => {
            let o = end["outcome"].as_str().unwrap_or("");
            c.check(
                o == "env_fault" || o == "rate_limited",
                format!("an environmental outcome: {end}"),
            );
        }
        None => c.fail("no session end"),
    }
    c.server.play(solves());
    let out = c.finish(child);
    c.measure();
    if let Some(out) = &out {
        c.check(
            out.status.code() == Some(10),
            format!("exit 10\n{}", text(out)),
        );
    }
    c.check(c.shipped(), "x ships once the server is healthy");
    c.check(
        c.row.attempts == Some(1) && c.row.attempts_failed == Some(0),
        "no attempt spent",
    );
    c.check_no_strays();
    c.done()
}

fn api_429(agent: &Agent) -> Row {
    api_error(agent, "api_429", Step::RateLimit { resets_in: None })
}

fn api_500(agent: &Agent) -> Row {
    api_error(agent, "api_500", Step::ServerError)
}

fn api_overloaded(agent: &Agent) -> Row {
    api_error(agent, "api_overloaded", Step::Overloaded)
}

/// A bad key: `env_fault(auth)`, no attempt spent; the run waits for a person (stopped here).
fn bad_key(agent: &Agent) -> Row {
    let mut c = Case::new(
        agent,
        "bad_key",
        Scenario::of(vec![Step::Unauthorized]),
        Auth::ApiKey,
        "",
    );
    let follow = c.follow();
    let child = c.spawn(&["run"]);
    match follow.wait(WAIT, is_session_end) {
        Some(end) => c.check(
            end["outcome"] == "env_fault" && end["fault"] == "auth",
            format!("env_fault(auth): {end}"),
        ),
        None => c.fail("no session end"),
    }
    let _ = c.cmd(&["stop"]).output();
    let _ = c.finish(child);
    c.measure();
    c.check(c.row.attempts_failed == Some(0), "no attempt spent");
    c.check(!c.shipped(), "nothing shipped");
    c.check_no_strays();
    c.done()
}

/// The engine is SIGKILLed mid-session (the model request in flight); `run` resumes and ships
/// with no attempt spent.
fn kill9_resume(agent: &Agent) -> Row {
    let mut c = Case::new(
        agent,
        "kill9_resume",
        Scenario::of(vec![Step::Stall]),
        Auth::ApiKey,
        "",
    );
    // The engine alone (`run` would restart it).
    let mut engine = c.spawn(&["engine"]);
    if !c.server.wait_turns(1, WAIT) {
        c.fail("the CLI never asked the model");
    }
    let _ = engine.kill();
    let status = engine.wait().ok();
    c.check(
        status.and_then(|s| s.signal()) == Some(9),
        "the engine died of SIGKILL",
    );
    // The held request stays held (the orphaned CLI must be swept, not answered).
    c.server.play(solves());
    let out = c.run();
    c.measure();
    if let Some(out) = &out {
        c.check(
            out.status.code() == Some(10),
            format!("exit 10\n{}", text(out)),
        );
    }
    c.check(c.shipped(), "x ships after the resume");
    c.check(
        c.row.attempts == Some(1) && c.row.attempts_failed == Some(0),
        "no attempt spent",
    );
    c.check_no_strays();
    c.done()
}

/// A background job outlives the CLI's `result` line: the session still ends at the result
/// (not the timeout), ships, and the job is swept.
fn background_job(agent: &Agent) -> Row {
    let play = Scenario {
        steps: vec![
            Step::Shell {
                command: "sleep 600".into(),
                background: true,
            },
            write_x(),
            said("Done; a job runs in the background."),
        ],
        usage: Usage::default(),
    };
    let mut c = Case::new(agent, "background_job", play, Auth::ApiKey, "");
    let out = c.run();
    let events = c.measure();
    let ended: Vec<&Value> = events.iter().filter(|e| is_session_end(e)).collect();
    c.check(
        ended.first().is_some_and(|e| e["outcome"] == "completed"),
        format!("the session completed at its result: {ended:?}"),
    );
    if let Some(out) = &out {
        c.check(
            out.status.code() == Some(10),
            format!("exit 10\n{}", text(out)),
        );
    }
    c.check(c.shipped(), "x ships");
    c.check_no_strays();
    c.done()
}

/// `nightshift tell` while a Claude session works: the message is written to the live session's
/// stdin (`operator_message_written`), the CLI takes it (`operator_message_delivered`, with who
/// and the CLI session), and a model request after it carries its text; the item ships in one
/// session, and the message is not told again in a prompt.
fn tell_live(agent: &Agent) -> Row {
    const SAID: &str = "TELL-LIVE-7f3a: the file must say ok";
    let mut c = Case::new(
        agent,
        "tell_live",
        Scenario::of(vec![Step::Stall]),
        Auth::ApiKey,
        "",
    );
    let follow = c.follow();
    let child = c.spawn(&["run"]);
    // The first model request is held: the session is live, mid-turn.
    if !c.server.wait_turns(1, WAIT) {
        c.fail("the CLI never asked the model");
    }
    let told = c
        .cmd(&["tell", "--from", "night-owl", ITEM, SAID])
        .output()
        .expect("nightshift tell");
    c.check(
        told.status.success(),
        format!("tell exits 0\n{}", text(&told)),
    );
    let written = follow.wait(WAIT, |e| e["kind"] == "operator_message_written");
    c.check(
        written.is_some(),
        "the message was written to the live session's stdin",
    );
    let before = c.server.served().len();
    // Release the held request; the CLI goes on with the message queued.
    c.server.play(solves());
    let delivered = follow.wait(WAIT, |e| e["kind"] == "operator_message_delivered");
    let out = c.finish(child);
    let events = c.measure();
    match &delivered {
        Some(d) => {
            c.check(d["who"] == "night-owl", format!("delivered with who: {d}"));
            let session = events
                .iter()
                .find(|e| is_session_end(e))
                .and_then(|e| e["agent_session"].as_str().map(str::to_owned));
            c.check(
                d["agent_session"].as_str().is_some()
                    && d["agent_session"].as_str() == session.as_deref(),
                format!("delivered to the session that ran: {d} vs {session:?}"),
            );
        }
        None => c.fail("no operator_message_delivered"),
    }
    let carrying = c.server.served()[before..]
        .iter()
        .filter(|s| s.turn && s.conversation.contains(SAID))
        .count();
    c.check(
        carrying > 0,
        format!("a model request after the tell carries its text ({carrying} did)"),
    );
    if let Some(out) = &out {
        c.check(
            out.status.code() == Some(10),
            format!("exit 10\n{}", text(out)),
        );
    }
    c.check(c.shipped(), "x ships");
    let sessions = events
        .iter()
        .filter(|e| e["kind"] == "session_started")
        .count();
    c.check(sessions == 1, format!("one session ({sessions})"));
    c.check(
        events
            .iter()
            .find(|e| is_session_end(e))
            .is_some_and(|e| e["outcome"] == "completed"),
        "the session completed at its result (stdin closed, the CLI exited)",
    );
    c.check_no_strays();
    c.done()
}
