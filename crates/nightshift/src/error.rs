//! One error type for every command: a kind that maps to an exit code, a message, hints as data,
//! and config/plan problems rendered as miette diagnostics with file:line:col.

use nightshift_core::config::{ConfigError, SourceError};
use nightshift_core::engine::EngineError;
use nightshift_core::halt::ExitClass;
use nightshift_core::plan::PlanError;
use nightshift_core::store::LockError;

/// A failed command.
#[derive(Debug)]
pub struct CommandError {
    pub class: ExitClass,
    pub message: String,
    pub hint: Option<String>,
    pub source: Option<Box<SourceError>>,
}

impl CommandError {
    pub fn new(class: ExitClass, message: impl Into<String>) -> Self {
        CommandError {
            class,
            message: message.into(),
            hint: None,
            source: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Prints the error to stderr and returns the exit code.
    pub fn report(self) -> i32 {
        let code = self.class.code();
        match self.source {
            Some(src) => {
                let diag = Located(*src);
                eoutln!("{:?}", miette::Report::new(diag));
            }
            None => {
                eoutln!("error: failed to {}", self.message);
                if let Some(hint) = self.hint {
                    eoutln!("  help: {hint}");
                }
            }
        }
        code
    }
}

/// A problem in a file, as a miette diagnostic.
#[derive(Debug)]
struct Located(SourceError);

impl std::fmt::Display for Located {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.0.file_name, self.0.line, self.0.column, self.0.message
        )
    }
}

impl std::error::Error for Located {}

impl miette::Diagnostic for Located {
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.0
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.0.source_text)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = self.0.span.clone();
        let len = span.end.saturating_sub(span.start);
        Some(Box::new(std::iter::once(miette::LabeledSpan::new(
            Some("here".into()),
            span.start,
            len,
        ))))
    }
}

impl From<ConfigError> for CommandError {
    fn from(err: ConfigError) -> Self {
        match err {
            ConfigError::Invalid(src) => CommandError {
                class: ExitClass::Invariant,
                message: src.message.clone(),
                hint: src.help.clone(),
                source: Some(src),
            },
            other => CommandError::new(ExitClass::Invariant, chain(&other))
                .hint("create one with `nightshift init`"),
        }
    }
}

impl From<PlanError> for CommandError {
    fn from(err: PlanError) -> Self {
        match err {
            PlanError::Invalid(src) => CommandError {
                class: ExitClass::Invariant,
                message: src.message.clone(),
                hint: src.help.clone(),
                source: Some(src),
            },
            other => CommandError::new(ExitClass::Invariant, chain(&other)),
        }
    }
}

impl From<EngineError> for CommandError {
    fn from(err: EngineError) -> Self {
        match err {
            EngineError::Locked(LockError::Held { holder, path }) => CommandError::new(
                ExitClass::Workspace,
                format!("start: run_locked: another nightshift is running here ({holder})"),
            )
            .hint(format!(
                "watch it with `nightshift status` or `nightshift log -f`; the lock is {}",
                path.display()
            )),
            EngineError::Workspace { what, help } => {
                let mut e =
                    CommandError::new(ExitClass::Workspace, format!("use the workspace: {what}"));
                e.hint = help;
                e
            }
            EngineError::Execution { what, help } => {
                let mut e = CommandError::new(ExitClass::Execution, format!("start {what}"));
                e.hint = help;
                e
            }
            EngineError::Store(nightshift_core::store::StoreError::Tampered(t)) => tampered(&t),
            // A state database that the next start would meet again (corrupt, read-only,
            // deleted under the engine): one line, exit 30, never a restart (issue 13).
            EngineError::Store(e) if e.unusable().is_some() => CommandError::new(
                ExitClass::Workspace,
                e.remedy(".nightshift/state.db")
                    .unwrap_or_else(|| chain(&e)),
            ),
            other => CommandError::new(ExitClass::Internal, chain(&other))
                .hint("the run is resumable: fix the cause and run `nightshift run` again"),
        }
    }
}

impl From<nightshift_core::store::StoreError> for CommandError {
    fn from(err: nightshift_core::store::StoreError) -> Self {
        if let nightshift_core::store::StoreError::Tampered(t) = &err {
            return tampered(t);
        }
        match err.remedy(".nightshift/state.db") {
            Some(line) => CommandError::new(ExitClass::Workspace, line),
            None => CommandError::new(ExitClass::Internal, chain(&err)),
        }
    }
}

/// The journal's hash chain does not hold (issue 12): exit 13, one line, what to do.
fn tampered(t: &nightshift_core::store::chain::Tamper) -> CommandError {
    CommandError::new(
        ExitClass::Integrity,
        format!("trust the state database .nightshift/state.db: store_tampered: {t}"),
    )
    .hint("something (an agent?) edited the journal, so nothing it says can be trusted; keep it as evidence and start afresh: `mv .nightshift/state.db .nightshift/state.db.tampered`, then `nightshift run` (what shipped is rebuilt from the target's Nightshift-Item trailers)")
}

/// An error and its sources, joined with ": ".
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
