//! Gates and their modes. A gate is a check that can refuse or end something. Each has a
//! class: **safety** (prevents real damage), **product** (keeps unproven code off the target),
//! **process** (asks the agent to follow a procedure). Process gates can be `enforce`, `log`
//! (journal a `gate_warned` instead of acting) or `off`; product gates only `enforce` or `log`;
//! safety gates only `enforce`, except where logging cannot do damage a revert cannot undo.
//!
//! Modes come from `[gates]` in nightshift.toml and, for process gates only, from an optional
//! gates file re-read when it changes (a run or a person can flip a wedging process gate to
//! `log` without a restart; the file can never reach a product or safety gate).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a gate protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GateClass {
    Safety,
    Product,
    Process,
}

impl GateClass {
    pub fn as_str(self) -> &'static str {
        match self {
            GateClass::Safety => "safety",
            GateClass::Product => "product",
            GateClass::Process => "process",
        }
    }
}

/// What a gate does when it trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GateMode {
    /// Refuse, end or park, as the gate says.
    #[default]
    Enforce,
    /// Journal `gate_warned { gate, class, detail }` and go on.
    Log,
    /// Do nothing (process gates only).
    Off,
}

impl GateMode {
    pub fn as_str(self) -> &'static str {
        match self {
            GateMode::Enforce => "enforce",
            GateMode::Log => "log",
            GateMode::Off => "off",
        }
    }

    pub fn from_name(name: &str) -> Option<GateMode> {
        match name {
            "enforce" => Some(GateMode::Enforce),
            "log" => Some(GateMode::Log),
            "off" => Some(GateMode::Off),
            _ => None,
        }
    }
}

/// A known gate.
#[derive(Debug, Clone, Copy)]
pub struct GateSpec {
    pub name: &'static str,
    pub class: GateClass,
    /// The modes it may be set to.
    pub modes: &'static [GateMode],
    pub what: &'static str,
}

const ALL_MODES: &[GateMode] = &[GateMode::Enforce, GateMode::Log, GateMode::Off];
const NOT_OFF: &[GateMode] = &[GateMode::Enforce, GateMode::Log];
const ENFORCE_ONLY: &[GateMode] = &[GateMode::Enforce];

/// Every gate nightshift knows. Add a gate here before consulting its mode.
pub const REGISTRY: &[GateSpec] = &[
    GateSpec {
        name: "budget",
        class: GateClass::Process,
        modes: ALL_MODES,
        what: "a session crossing a hard budget limit is ended over_budget",
    },
    GateSpec {
        name: "stall",
        class: GateClass::Process,
        modes: ALL_MODES,
        what: "a silent session is nudged, then ended stalled",
    },
    GateSpec {
        name: "determinism",
        class: GateClass::Product,
        modes: NOT_OFF,
        what: "a check that gives different verdicts on the same tree halts the run",
    },
    GateSpec {
        name: "adequacy",
        class: GateClass::Product,
        modes: NOT_OFF,
        what: "a check that a planted mutation does not turn red halts the run",
    },
    GateSpec {
        name: "test_integrity",
        class: GateClass::Safety,
        modes: NOT_OFF,
        what: "work that removes or weakens tests is not shipped",
    },
    GateSpec {
        name: "blocked_paths",
        class: GateClass::Safety,
        modes: ENFORCE_ONLY,
        what: "work that touches a blocked path is not shipped",
    },
];

/// The spec of a known gate.
pub fn spec(name: &str) -> Option<&'static GateSpec> {
    REGISTRY.iter().find(|g| g.name == name)
}

/// Why a mode cannot be set (a message; the caller adds where).
pub fn check_mode(name: &str, mode: &str, from_file: bool) -> Result<GateMode, String> {
    let Some(gate) = spec(name) else {
        let known: Vec<&str> = REGISTRY.iter().map(|g| g.name).collect();
        return Err(format!(
            "unknown gate `{name}`; known gates: {}",
            known.join(", ")
        ));
    };
    let Some(parsed) = GateMode::from_name(mode) else {
        return Err(format!(
            "unknown mode `{mode}` for gate `{name}`; expected \"enforce\", \"log\" or \"off\""
        ));
    };
    if from_file && gate.class != GateClass::Process {
        return Err(format!(
            "gate `{name}` is a {} gate: only nightshift.toml can set its mode, not the gates file",
            gate.class.as_str()
        ));
    }
    if !gate.modes.contains(&parsed) {
        let allowed: Vec<&str> = gate.modes.iter().map(|m| m.as_str()).collect();
        return Err(format!(
            "gate `{name}` is a {} gate and can only be {}",
            gate.class.as_str(),
            allowed
                .iter()
                .map(|m| format!("\"{m}\""))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    Ok(parsed)
}

/// The gate modes in force: nightshift.toml's `[gates]`, overlaid for process gates by the
/// gates file when there is one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gates {
    configured: BTreeMap<String, GateMode>,
    file: Option<PathBuf>,
    from_file: BTreeMap<String, GateMode>,
    file_stamp: Option<SystemTime>,
}

impl Gates {
    /// Modes from nightshift.toml (already validated) and the gates file's path, if any.
    pub fn new(configured: BTreeMap<String, GateMode>, file: Option<PathBuf>) -> Gates {
        Gates {
            configured,
            file,
            ..Gates::default()
        }
    }

    /// The mode of gate `name`. A gate nobody set is `enforce`.
    pub fn mode(&self, name: &str) -> GateMode {
        self.from_file
            .get(name)
            .or_else(|| self.configured.get(name))
            .copied()
            .unwrap_or_default()
    }

    /// The class of gate `name` (`process` for an unknown name, so a warning is never lost).
    pub fn class(name: &str) -> GateClass {
        spec(name).map_or(GateClass::Process, |g| g.class)
    }

    /// The gates file, relative paths resolved against `root`.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Re-reads the gates file when it changed since the last read (a safe point calls this).
    /// `Some(Err)` names what is wrong with it; the modes in force then stay as they were.
    /// `Some(Ok(changes))` lists the gates whose mode changed.
    pub fn reload_if_changed(&mut self, root: &Path) -> Option<Result<Vec<String>, String>> {
        let file = root.join(self.file.as_ref()?);
        let stamp = std::fs::metadata(&file).and_then(|m| m.modified()).ok();
        if stamp == self.file_stamp {
            return None;
        }
        self.file_stamp = stamp;
        if stamp.is_none() {
            // Removed: back to nightshift.toml's modes.
            let changed: Vec<String> = self.from_file.keys().cloned().collect();
            self.from_file.clear();
            return Some(Ok(changed));
        }
        let read = crate::bounded::read_to_string(&file, crate::bounded::CONFIG_BYTES)
            .map_err(|e| format!("read the gates file {}: {e}", file.display()))
            .and_then(|text| parse_file(&text).map_err(|e| format!("{}: {e}", file.display())));
        Some(read.map(|modes| {
            let changed = REGISTRY
                .iter()
                .filter(|g| modes.get(g.name) != self.from_file.get(g.name))
                .map(|g| g.name.to_owned())
                .collect();
            self.from_file = modes;
            changed
        }))
    }
}

/// A gates file: a flat TOML table `gate = "mode"`, process gates only.
pub fn parse_file(text: &str) -> Result<BTreeMap<String, GateMode>, String> {
    let table: BTreeMap<String, String> =
        toml::from_str(text).map_err(|e| e.message().trim().to_owned())?;
    let mut modes = BTreeMap::new();
    for (name, mode) in table {
        let parsed = check_mode(&name, &mode, true)?;
        modes.insert(name, parsed);
    }
    Ok(modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_limit_modes() {
        assert_eq!(check_mode("stall", "off", false), Ok(GateMode::Off));
        assert_eq!(check_mode("budget", "off", true), Ok(GateMode::Off));
        assert_eq!(check_mode("adequacy", "log", false), Ok(GateMode::Log));
        assert!(
            check_mode("adequacy", "off", false)
                .is_err_and(|e| e.contains("product gate and can only be \"enforce\" or \"log\""))
        );
        assert!(check_mode("blocked_paths", "log", false).is_err());
        assert_eq!(
            check_mode("test_integrity", "log", false),
            Ok(GateMode::Log)
        );
        assert!(check_mode("test_integrity", "log", true).is_err_and(|e| e.contains("gates file")));
        assert!(check_mode("nope", "log", false).is_err_and(|e| e.contains("unknown gate")));
        assert!(check_mode("stall", "loud", false).is_err_and(|e| e.contains("unknown mode")));
    }

    #[test]
    fn the_file_overrides_process_gates_and_is_reloaded() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let mut configured = BTreeMap::new();
        configured.insert("budget".to_owned(), GateMode::Log);
        let mut gates = Gates::new(configured, Some(PathBuf::from("gates.toml")));
        assert_eq!(gates.reload_if_changed(tmp.path()), None, "no file yet");
        assert_eq!(gates.mode("budget"), GateMode::Log);
        assert_eq!(gates.mode("stall"), GateMode::Enforce);
        let file = tmp.path().join("gates.toml");
        std::fs::write(&file, "stall = \"off\"\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            gates.reload_if_changed(tmp.path()),
            Some(Ok(vec!["stall".to_owned()]))
        );
        assert_eq!(gates.mode("stall"), GateMode::Off);
        assert_eq!(gates.reload_if_changed(tmp.path()), None, "unchanged");
        std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(gates.reload_if_changed(tmp.path()).is_some());
        assert_eq!(gates.mode("stall"), GateMode::Enforce);
        assert!(parse_file("adequacy = \"log\"").is_err());
    }
}
