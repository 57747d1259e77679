//! A scripted local model server for driving the real agent CLIs in tests.
//!
//! It listens on `127.0.0.1:0` and speaks the Anthropic Messages API (SSE), the OpenAI Responses
//! API (SSE) and Chat Completions (streaming or not), and the Gemini `generateContent` /
//! `streamGenerateContent?alt=sse` API. Which step of a [`Scenario`] each request gets is in
//! [`scenario`]; every request served is recorded ([`Served`]) so a test can count the model
//! turns and tokens the server handed out and compare them with what the tool under test
//! recorded.

mod http;
pub mod scenario;
mod wire;

use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

pub use scenario::{Scenario, ScenarioError, Step, Usage};

/// Which API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    Responses,
    ChatCompletions,
    Gemini,
    /// Anything else (model lists, token counts, telemetry): answered, never a turn.
    Other,
}

/// One request the server answered (or is holding).
#[derive(Debug, Clone)]
pub struct Served {
    pub at: SystemTime,
    pub method: String,
    pub path: String,
    pub wire: Wire,
    /// The request asked the model for a turn (and took a step).
    pub turn: bool,
    /// The step it got (index into the scenario's steps), if it was a model request.
    pub step: Option<usize>,
    /// The usage the reply reported (successful model replies only; auxiliary replies report 0).
    pub usage: Option<Usage>,
    /// The names of the tools the request offered the model.
    pub tools: Vec<String>,
    /// Every string of the request's conversation (Anthropic and Chat `messages`, Responses
    /// `input`, Gemini `contents`), one per line: what a test greps for a message the tool
    /// under test gave the CLI.
    pub conversation: String,
}

#[derive(Default)]
struct State {
    scenario: Option<Scenario>,
    cursor: usize,
    /// Bumped by [`Server::play`]: stalled requests of an older generation are dropped.
    generation: u64,
    served: Vec<Served>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running server; stops when dropped.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("bind 127.0.0.1:0")]
    Bind(#[source] std::io::Error),
    #[error("read the bound address")]
    Addr(#[source] std::io::Error),
}

impl Server {
    /// Starts a server playing `scenario` on a free loopback port.
    pub fn start(scenario: Scenario) -> Result<Server, StartError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(StartError::Bind)?;
        let addr = listener.local_addr().map_err(StartError::Addr)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                scenario: Some(scenario),
                ..State::default()
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve_connection(&s, conn));
            }
        });
        Ok(Server {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Plays another scenario from its first step; requests held by a stall are dropped.
    pub fn play(&self, scenario: Scenario) {
        let mut st = self.shared.lock();
        st.scenario = Some(scenario);
        st.cursor = 0;
        st.generation += 1;
        drop(st);
        self.shared.changed.notify_all();
    }

    /// Every request so far.
    pub fn served(&self) -> Vec<Served> {
        self.shared.lock().served.clone()
    }

    /// Model turns served so far.
    pub fn turns(&self) -> usize {
        self.shared.lock().served.iter().filter(|s| s.turn).count()
    }

    /// The usage the server reported over all replies.
    pub fn usage(&self) -> Usage {
        let st = self.shared.lock();
        let mut sum = Usage {
            input: 0,
            cached: 0,
            output: 0,
        };
        for u in st.served.iter().filter_map(|s| s.usage) {
            sum.input += u.input;
            sum.cached += u.cached;
            sum.output += u.output;
        }
        sum
    }

    /// Model requests whose conversation contains `text` (see [`Served::conversation`]).
    pub fn turns_carrying(&self, text: &str) -> Vec<Served> {
        self.shared
            .lock()
            .served
            .iter()
            .filter(|s| s.wire != Wire::Other && s.conversation.contains(text))
            .cloned()
            .collect()
    }

    /// Blocks until at least `n` model turns have been served (or are being held), or
    /// `timeout` passes; returns whether they were.
    pub fn wait_turns(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if st.served.iter().filter(|s| s.turn).count() >= n {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = self
                .shared
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        let _ = TcpStream::connect(self.addr); // wake the accept loop
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// What one request gets.
pub(crate) struct Decision {
    pub step: Step,
    pub usage: Usage,
    pub generation: u64,
}

fn decide(
    shared: &Shared,
    req: &http::Request,
    wire: Wire,
    turn: bool,
    tools: Vec<String>,
    conversation: String,
) -> Option<Decision> {
    let mut st = shared.lock();
    let generation = st.generation;
    let scenario = st.scenario.clone()?;
    let last = scenario.steps.len().saturating_sub(1);
    let index = st.cursor.min(last);
    let current = scenario.steps.get(index)?.clone();
    let (step, turn) = if turn {
        st.cursor = (index + 1).min(last);
        (current, true)
    } else if current.applies_to_aux() && !(wire == Wire::Gemini && current == Step::Stall) {
        // Gemini's router request comes before the model turn (Claude's and Codex's auxiliary
        // requests run beside it): held, it would keep the CLI from ever asking for the turn, so
        // a stall falls on the turn itself, as for the other CLIs.
        (current, false)
    } else {
        (
            Step::Text {
                text: wire::AUX_TEXT.to_owned(),
            },
            false,
        )
    };
    let usage = if turn {
        scenario.usage
    } else {
        Usage {
            input: 0,
            cached: 0,
            output: 0,
        }
    };
    st.served.push(Served {
        at: SystemTime::now(),
        method: req.method.clone(),
        path: req.path.clone(),
        wire,
        turn,
        step: Some(index),
        usage: (!step.is_failure()).then_some(usage),
        tools,
        conversation,
    });
    drop(st);
    shared.changed.notify_all();
    Some(Decision {
        step,
        usage,
        generation,
    })
}

fn record_other(shared: &Shared, req: &http::Request) {
    shared.lock().served.push(Served {
        at: SystemTime::now(),
        method: req.method.clone(),
        path: req.path.clone(),
        wire: Wire::Other,
        turn: false,
        step: None,
        usage: None,
        tools: Vec::new(),
        conversation: String::new(),
    });
    shared.changed.notify_all();
}

/// Holds a stalled request until the scenario changes or the server stops.
fn hold(shared: &Shared, generation: u64) {
    let mut st = shared.lock();
    while st.generation == generation && !shared.stop.load(Ordering::SeqCst) {
        st = shared
            .changed
            .wait_timeout(st, Duration::from_secs(1))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

fn serve_connection(shared: &Shared, conn: TcpStream) {
    let Ok(read_half) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut w = conn;
    while !shared.stop.load(Ordering::SeqCst) {
        let req = match http::read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => break,
        };
        let close = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        match wire::handle(shared, &req, &mut w) {
            Ok(wire::After::KeepAlive) if !close => continue,
            Ok(wire::After::KeepAlive) => break,
            Ok(wire::After::Close) | Err(_) => break,
        }
    }
    let _ = w.shutdown(Shutdown::Both);
}
