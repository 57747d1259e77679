//! The server over real TCP: each wire's reply shape, step order, auxiliary requests, errors
//! and stalls.

#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use model_server::{Scenario, Server, Step, Usage, Wire};
use serde_json::{Value, json};

/// One request on its own connection; returns the status line, the headers and the body.
fn post(server: &Server, path: &str, body: &Value) -> (u16, String, String) {
    let addr = server.url().trim_start_matches("http://").to_owned();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_owned(), body.to_owned())
}

fn write_then_text() -> Scenario {
    Scenario {
        steps: vec![
            Step::Write {
                path: "done/a".into(),
                content: "ok\n".into(),
            },
            Step::Text {
                text: "Done.".into(),
            },
        ],
        usage: Usage {
            input: 1200,
            cached: 200,
            output: 40,
        },
    }
}

fn claude_turn() -> Value {
    json!({"model": "m", "stream": true, "tools": [{"name": "Write"}, {"name": "Bash"}],
        "system": [{"type": "text", "text": "<env>\nPrimary working directory: /w/repo\n</env>"}],
        "messages": [{"role": "user", "content": "go"}]})
}

#[test]
fn anthropic_turns_take_steps_in_order_and_the_last_repeats() {
    let server = Server::start(write_then_text()).unwrap();
    let (status, _, body) = post(&server, "/v1/messages", &claude_turn());
    assert_eq!(status, 200);
    for event in [
        "message_start",
        "content_block_start",
        "input_json_delta",
        "message_delta",
        "message_stop",
    ] {
        assert!(body.contains(event), "no {event} in {body}");
    }
    // The Write tool gets an absolute path under the announced working directory.
    assert!(
        body.contains(r#"\"file_path\":\"/w/repo/done/a\""#),
        "{body}"
    );
    // Anthropic's input_tokens exclude cache reads.
    assert!(
        body.contains(r#""input_tokens":1000"#)
            && body.contains(r#""cache_read_input_tokens":200"#),
        "{body}"
    );
    // An auxiliary request (no tools) does not take a step.
    let (_, _, aux) = post(
        &server,
        "/v1/messages",
        &json!({"model": "small", "messages": []}),
    );
    assert!(aux.contains("scripted"), "{aux}");
    for _ in 0..2 {
        let (_, _, body) = post(&server, "/v1/messages", &claude_turn());
        assert!(
            body.contains("Done.") && !body.contains("tool_use"),
            "{body}"
        );
    }
    assert_eq!(server.turns(), 3);
    assert_eq!(
        server.usage(),
        Usage {
            input: 3600,
            cached: 600,
            output: 120
        }
    );
    let served = server.served();
    assert_eq!(served.len(), 4);
    assert!(
        !served[1].turn
            && served[1].usage
                == Some(Usage {
                    input: 0,
                    cached: 0,
                    output: 0
                })
    );
}

#[test]
fn a_subscription_limit_carries_the_unified_reset_headers() {
    let server = Server::start(Scenario::of(vec![Step::RateLimit {
        resets_in: Some(120),
    }]))
    .unwrap();
    let (status, head, body) = post(&server, "/v1/messages", &claude_turn());
    assert_eq!(status, 429);
    assert!(
        head.contains("anthropic-ratelimit-unified-status: rejected"),
        "{head}"
    );
    let reset: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("anthropic-ratelimit-unified-reset: "))
        .unwrap()
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        reset > now && reset <= now + 121,
        "reset {reset}, now {now}"
    );
    assert!(body.contains("rate_limit_error"));
    // Failures count as served requests, with no usage; aux requests do not share a rate
    // limit, but do share a bad key.
    let (status, _, _) = post(&server, "/v1/messages", &json!({"model": "small"}));
    assert_eq!(status, 200);
    server.play(Scenario::of(vec![Step::Unauthorized]));
    let (status, _, _) = post(&server, "/v1/messages", &json!({"model": "small"}));
    assert_eq!(status, 401);
    assert_eq!(
        server.usage(),
        Usage {
            input: 0,
            cached: 0,
            output: 0
        }
    );
}

#[test]
fn a_chat_completions_limit_with_a_reset_says_it_as_the_openai_api_does() {
    let server = Server::start(Scenario::of(vec![Step::RateLimit {
        resets_in: Some(3600),
    }]))
    .unwrap();
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "go"}]});
    let (status, head, body) = post(&server, "/v1/chat/completions", &chat);
    assert_eq!(status, 429);
    assert!(head.contains("retry-after: 3600"), "{head}");
    assert!(
        head.contains("x-ratelimit-reset-requests: 1h0m0s"),
        "{head}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("Please try again in 1h0m0s."), "{message}");
    // The Responses wire keeps the ChatGPT plan's limit (what Codex reads).
    let (status, _, body) = post(
        &server,
        "/v1/responses",
        &json!({"model": "m", "tools": [{"type": "function", "name": "shell"}]}),
    );
    assert_eq!(status, 429);
    assert!(body.contains("usage_limit_reached"), "{body}");
}

#[test]
fn errors_per_wire() {
    let cases = [
        (Step::ServerError, "/v1/messages", 500),
        (Step::Overloaded, "/v1/messages", 529),
        (Step::Unauthorized, "/v1/messages", 401),
        (Step::Overloaded, "/v1/responses", 503),
        (
            Step::RateLimit { resets_in: None },
            "/v1/chat/completions",
            429,
        ),
        (
            Step::Unauthorized,
            "/v1beta/models/g:streamGenerateContent",
            401,
        ),
    ];
    for (step, path, want) in cases {
        let server = Server::start(Scenario::of(vec![step.clone()])).unwrap();
        let body = json!({"model": "m", "stream": true, "tools": [{"functionDeclarations": [{"name": "write_file"}]}]});
        let (status, _, _) = post(&server, path, &body);
        assert_eq!(status, want, "{step:?} on {path}");
    }
}

#[test]
fn responses_chat_and_gemini_reply_in_their_shapes() {
    let server = Server::start(write_then_text()).unwrap();
    let codex = json!({"model": "m", "stream": true, "tools": [{"type": "function", "name": "exec_command"}]});
    let (_, _, body) = post(&server, "/v1/responses", &codex);
    assert!(
        body.contains("response.output_item.done") && body.contains(r#""name":"exec_command""#),
        "{body}"
    );
    assert!(
        body.contains("response.completed") && body.contains(r#""cached_tokens":200"#),
        "{body}"
    );

    let server = Server::start(write_then_text()).unwrap();
    let aider = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
    let (_, _, body) = post(&server, "/v1/chat/completions", &aider);
    assert!(body.contains("done/a\\n```\\nok\\n```"), "{body}");
    assert!(
        body.contains(r#""prompt_tokens":1200"#) && body.ends_with("data: [DONE]\n\n"),
        "{body}"
    );

    let server = Server::start(write_then_text()).unwrap();
    let gemini =
        json!({"contents": [], "tools": [{"functionDeclarations": [{"name": "write_file"}]}]});
    let (_, _, body) = post(
        &server,
        "/v1beta/models/g-pro:streamGenerateContent",
        &gemini,
    );
    assert!(
        body.starts_with("data: ") && body.contains(r#""functionCall""#),
        "{body}"
    );
    assert!(body.contains(r#""promptTokenCount":1200"#), "{body}");
    let (_, _, routed) = post(
        &server,
        "/v1beta/models/g-lite:generateContent",
        &json!({"contents": []}),
    );
    assert!(routed.contains("model_choice"), "{routed}");
    assert_eq!(
        server.served().iter().map(|s| s.wire).collect::<Vec<_>>(),
        [Wire::Gemini, Wire::Gemini]
    );
}

#[test]
fn a_stall_holds_the_request_until_another_scenario_plays() {
    let server = Server::start(Scenario::of(vec![Step::Stall])).unwrap();
    std::thread::scope(|scope| {
        let held = scope.spawn(|| post_raw_until_close(&server));
        assert!(server.wait_turns(1, Duration::from_secs(30)));
        server.play(write_then_text());
        // The held connection is dropped without a reply.
        assert_eq!(held.join().unwrap(), "");
    });
    let (status, _, _) = post(&server, "/v1/messages", &claude_turn());
    assert_eq!(status, 200);
}

fn post_raw_until_close(server: &Server) -> String {
    let addr = server.url().trim_start_matches("http://").to_owned();
    let mut s = TcpStream::connect(addr).unwrap();
    let body = claude_turn().to_string();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn scenarios_parse_from_json() {
    let s = Scenario::from_json(
        r#"{"steps":[{"do":"shell","command":"sleep 300","background":true},{"do":"rate_limit","resets_in":5}],"usage":{"input":10}}"#,
    )
    .unwrap();
    assert_eq!(s.steps[1], Step::RateLimit { resets_in: Some(5) });
    assert_eq!(
        s.usage,
        Usage {
            input: 10,
            cached: 0,
            output: 50
        }
    );
    assert!(Scenario::from_json(r#"{"steps":[]}"#).is_err());
    assert!(Scenario::from_json(r#"{"steps":[{"do":"dance"}]}"#).is_err());
}

#[test]
fn gemini_router_is_answered_under_a_stall_so_the_turn_is_the_held_request() {
    let server = Server::start(Scenario::of(vec![Step::Stall])).unwrap();
    // The router's request (no tools) comes first; held, the CLI would never ask for a turn.
    let (status, _, body) = post(
        &server,
        "/v1beta/models/flash-lite:generateContent",
        &json!({"contents": []}),
    );
    assert_eq!(status, 200);
    assert!(body.contains("scripted"), "{body}");
    assert_eq!(server.turns(), 0);
}

#[test]
fn gemini_429s_are_what_google_sends_for_a_rate_limit_and_for_a_quota() {
    let turn = json!({"tools": [{"functionDeclarations": [{"name": "write_file"}]}]});
    let path = "/v1beta/models/g:streamGenerateContent";
    // An API key's per-minute limit: a per-minute quota id and a short RetryInfo (the CLI
    // retries it itself).
    let server = Server::start(Scenario::of(vec![Step::RateLimit { resets_in: None }])).unwrap();
    let (status, _, body) = post(&server, path, &turn);
    assert_eq!(status, 429);
    let v: Value = serde_json::from_str(&body).unwrap();
    let details = v["error"]["details"].to_string();
    assert!(details.contains("PerMinute") && details.contains(r#""retryDelay":"1s""#));
    // A quota with a reset: RetryInfo carries it, beyond the CLI's own 300 s, and no per-day
    // id (which would make the CLI drop the delay).
    let server = Server::start(Scenario::of(vec![Step::RateLimit {
        resets_in: Some(3600),
    }]))
    .unwrap();
    let (status, _, body) = post(&server, path, &turn);
    assert_eq!(status, 429);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED");
    let details = v["error"]["details"].to_string();
    assert!(details.contains("QuotaFailure") && details.contains(r#""retryDelay":"3600s""#));
    assert!(!details.contains("PerDay") && !details.contains("PerMinute"));
}
