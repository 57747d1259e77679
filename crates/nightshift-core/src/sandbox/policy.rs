//! The decisions around confinement, as pure functions: which network a check gets, whether a
//! run may start, whether a base check is hermetic.

use super::{Held, Network};

/// The network checks get: `[check] network` when set; unset, `none` where this machine can
/// make a network namespace (`netns_available`, from [`super::probe`]) and the host's elsewhere.
pub fn check_network(configured: Option<Network>, netns_available: bool) -> Network {
    match configured {
        Some(network) => network,
        None if netns_available => Network::None,
        None => Network::Host,
    }
}

/// Why a run may not start under `[sandbox] require = true`, given what the probes found for
/// agents and checks; `None` when it may.
pub fn refusal(require: bool, agent: &Held, check: &Held, check_net: Network) -> Option<String> {
    if !require {
        return None;
    }
    let mut missing = Vec::new();
    if !agent.landlock || !check.landlock {
        missing.push("Landlock");
    }
    if !agent.session || !check.session {
        missing.push("a process session of its own");
    }
    if check_net == Network::None && !check.netns {
        missing.push("a network namespace for checks");
    }
    if missing.is_empty() {
        return None;
    }
    let mut reasons: Vec<&str> = agent
        .reasons
        .iter()
        .chain(&check.reasons)
        .map(String::as_str)
        .collect();
    reasons.dedup();
    Some(format!(
        "`[sandbox] require = true` in nightshift.toml, but this machine cannot give {} ({}); \
         run where it can, or set `require = false` to run at the level that holds",
        missing.join(" or "),
        if reasons.is_empty() {
            "no reason was reported".into()
        } else {
            reasons.join("; ")
        }
    ))
}

/// What the base check says about the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hermetic {
    /// Green without a network (or the check has the host's anyway): nothing to say.
    Green,
    /// Red with and without the network: an ordinary red base.
    Red,
    /// Red without the network and green with it: the check reaches outside.
    NotHermetic,
}

/// Judges a base check run under `network`; `host_green` reruns it with the host network and is
/// called only when an isolated run was red.
pub fn hermetic(network: Network, green: bool, host_green: impl FnOnce() -> bool) -> Hermetic {
    match (green, network) {
        (true, _) => Hermetic::Green,
        (false, Network::Host) => Hermetic::Red,
        (false, Network::None) if host_green() => Hermetic::NotHermetic,
        (false, Network::None) => Hermetic::Red,
    }
}

/// Whether a red base check is run once more with the host network, to tell a check that
/// reaches outside from an ordinary red base: only where checks get no network *and* a
/// namespace takes it away (without one, both runs would see the same network).
pub fn probes_hermeticity(network: Network, netns: bool) -> bool {
    network == Network::None && netns
}

/// The message that refuses a start on a non-hermetic base check.
pub const NOT_HERMETIC: &str = "the base check is green with the host network and red without \
     it: it reaches outside the machine, so its green could be the network's, not the code's";

/// What to do about it.
pub const NOT_HERMETIC_HELP: &str = "make the check pass offline, or set `network = \"host\"` \
     under [check] in nightshift.toml to let checks use the network";
