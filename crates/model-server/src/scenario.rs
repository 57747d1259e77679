//! What the server plays: a list of steps, one per model turn; the last one repeats forever.

use serde::Deserialize;

/// A scripted scenario. Every request that asks the model for a turn (it offers tools, or it is
/// a chat completion) takes the next step; the last step repeats, so `[tool, tool]` loops tool
/// calls forever and `[error]` fails every request. While the current step is a bad key or a
/// stall, auxiliary requests (title generation) get it too, except Gemini's router under a stall
/// (held, the CLI would never ask for its turn); other errors hit model turns only (a CLI
/// retrying a failed router call would only slow the suite down).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub steps: Vec<Step>,
    /// The usage reported for every successful turn.
    #[serde(default)]
    pub usage: Usage,
}

/// Token figures reported per successful turn (cache reads are part of `input` for the OpenAI
/// and Gemini wires, separate for Anthropic's, as each API does).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Usage {
    pub input: u64,
    pub cached: u64,
    pub output: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input: 1000,
            cached: 0,
            output: 50,
        }
    }
}

/// One model turn.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Plain text; the turn ends.
    Text { text: String },
    /// Writes `path` (relative to the CLI's working directory) through the CLI's file tool
    /// (aider: a whole-file edit block).
    Write { path: String, content: String },
    /// Runs a shell command through the CLI's shell tool; `background` asks Claude to run it as
    /// a background job.
    Shell {
        command: String,
        #[serde(default)]
        background: bool,
    },
    /// A rate limit: HTTP 429. `resets_in` seconds ahead (a subscription/usage limit with a
    /// reset) or none (an API-key rate limit with `retry-after`).
    RateLimit {
        #[serde(default)]
        resets_in: Option<u64>,
    },
    /// HTTP 500.
    ServerError,
    /// Overloaded: 529 on Anthropic's wire, 503 elsewhere.
    Overloaded,
    /// HTTP 401, a bad key.
    Unauthorized,
    /// Accepts the request and never answers (nor closes).
    Stall,
}

impl Step {
    /// A bad key and a silent server apply to auxiliary requests as well while current.
    pub fn applies_to_aux(&self) -> bool {
        matches!(self, Step::Unauthorized | Step::Stall)
    }

    /// Not a reply of the model: an error or a stall.
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            Step::Text { .. } | Step::Write { .. } | Step::Shell { .. }
        )
    }
}

impl Scenario {
    /// A scenario from its JSON text.
    pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = serde_json::from_str(text).map_err(ScenarioError::Parse)?;
        if s.steps.is_empty() {
            return Err(ScenarioError::Empty);
        }
        Ok(s)
    }

    /// The scenario of plain steps with the default usage.
    pub fn of(steps: Vec<Step>) -> Scenario {
        Scenario {
            steps,
            usage: Usage::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("parse the scenario")]
    Parse(#[source] serde_json::Error),
    #[error("read a scenario with no steps (give at least one)")]
    Empty,
}
