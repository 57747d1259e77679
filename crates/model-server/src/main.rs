//! `model-server SCENARIO.json`: serves the scenario, prints its URL, then one line per request.

use std::time::Duration;

fn main() -> std::process::ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: model-server SCENARIO.json");
        return std::process::ExitCode::from(2);
    };
    let scenario = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| model_server::Scenario::from_json(&t).map_err(|e| format!("{e}: {:?}", e)))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("failed to read {path}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match model_server::Server::start(scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("failed to {e}");
            return std::process::ExitCode::from(1);
        }
    };
    println!("{}", server.url());
    let mut seen = 0;
    loop {
        let served = server.served();
        for s in &served[seen..] {
            println!(
                "{} {} {:?} turn={} step={:?} usage={:?} tools={:?}",
                s.method, s.path, s.wire, s.turn, s.step, s.usage, s.tools
            );
            if std::env::var_os("MODEL_SERVER_SHOW_CONVERSATION").is_some() {
                println!("  conversation: {}", s.conversation.replace('\n', "\n  | "));
            }
        }
        seen = served.len();
        std::thread::sleep(Duration::from_millis(200));
    }
}
