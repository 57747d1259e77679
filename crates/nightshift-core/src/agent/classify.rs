//! Text patterns and status codes shared by the finish classifiers. Structured fields are read by
//! each parser first; these are the last resort.

use super::FinishKind;

/// What an error text or status says about an ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Quota,
    Auth,
    ContextOverflow,
    Transient,
    MaxTurns,
}

const CONTEXT: &[&str] = &[
    "prompt is too long",
    "context_length_exceeded",
    "context window",
    "maximum context length",
    "input is too long",
    "token count exceeds",
    "too many input tokens",
];

const AUTH: &[&str] = &[
    "invalid api key",
    "invalid x-api-key",
    "authentication_error",
    "authentication_failed",
    "authentication failed",
    "unauthorized",
    "/login",
    "oauth token",
    "not logged in",
    "please log in",
    "token_expired",
    "refresh token",
    "credit balance is too low",
    "billing_error",
    "permission_error",
    "api error: 401",
    "api error: 403",
    "api key not valid",
    "unauthenticated",
    "incorrect api key",
    "invalid_api_key",
    "missing environment variable",
];

const QUOTA: &[&str] = &[
    "usage limit",
    "hit your limit",
    "session limit",
    "weekly limit",
    "out of extra usage",
    "usage_limit_reached",
    "quota",
    "resource_exhausted",
    "resource has been exhausted",
    "out of credits",
    "spend cap",
    "limit · resets",
];

const TRANSIENT: &[&str] = &[
    "overloaded",
    "rate_limit_exceeded",
    "rate limit exceeded",
    "too many requests",
    "internal server error",
    "service unavailable",
    "bad gateway",
    "gateway timeout",
    "timed out",
    "timeout",
    "stream disconnected",
    "connection error",
    "connection reset",
    "econnreset",
    "socket hang up",
    "high demand",
    "api error: 5",
    "reconnecting",
];

const MAX_TURNS: &[&str] = &[
    "maximum number of turns",
    "max turns",
    "max_turns",
    "turn limit",
    "maxsessionturns",
    "max session turns",
];

/// The first signal found in `texts`, strongest class first (a context overflow mentions
/// tokens, an auth failure may mention limits).
pub(crate) fn signal_from_text<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<Signal> {
    let hay: String = texts
        .into_iter()
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join("\n");
    let has = |pats: &[&str]| pats.iter().any(|p| hay.contains(p));
    if has(CONTEXT) {
        Some(Signal::ContextOverflow)
    } else if has(AUTH) {
        Some(Signal::Auth)
    } else if has(QUOTA) {
        Some(Signal::Quota)
    } else if has(MAX_TURNS) {
        Some(Signal::MaxTurns)
    } else if has(TRANSIENT) {
        Some(Signal::Transient)
    } else {
        None
    }
}

/// What an HTTP status says, where it says something on its own (429 is left to the caller:
/// a subscription quota for Claude, a retryable rate limit for API keys).
pub(crate) fn signal_from_status(status: i64) -> Option<Signal> {
    match status {
        401 | 403 => Some(Signal::Auth),
        413 => Some(Signal::ContextOverflow),
        408 | 409 | 500..=599 => Some(Signal::Transient),
        _ => None,
    }
}

/// The finish kind for a signal; `quota` builds the quota ending (it knows where to look for the
/// reset time).
pub(crate) fn finish_kind(signal: Signal, quota: impl FnOnce() -> FinishKind) -> FinishKind {
    match signal {
        Signal::Quota => quota(),
        Signal::Auth => FinishKind::Auth,
        Signal::ContextOverflow => FinishKind::ContextOverflow,
        Signal::Transient => FinishKind::Transient,
        Signal::MaxTurns => FinishKind::MaxTurns,
    }
}
