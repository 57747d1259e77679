//! Errors located in a source file, carried as data so that the binary can render them (for
//! example as a miette diagnostic) without this crate doing any terminal I/O.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// One problem located in a source file (`nightshift.toml`, a Markdown plan, …).
///
/// `line` and `column` are 1-based and computed from `span.start`; the column counts
/// characters, not bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The file name as it should be shown to the user.
    pub file_name: String,
    /// The full text of the file, so that a renderer can show the offending snippet.
    pub source_text: String,
    /// Byte range of the offending text inside `source_text`.
    pub span: Range<usize>,
    /// What is wrong: a lowercase fragment that reads after "failed to …: ".
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
    /// 1-based line of `span.start`.
    pub line: usize,
    /// 1-based column of `span.start`, in characters.
    pub column: usize,
}

impl SourceError {
    /// Builds an error at `span` of `source_text`. The span is clamped to the text and to
    /// character boundaries, so a renderer can always slice with it.
    pub fn new(
        file_name: impl Into<String>,
        source_text: impl Into<String>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        let source_text = source_text.into();
        let start = floor_char_boundary(&source_text, span.start);
        let end = floor_char_boundary(&source_text, span.end.max(start));
        let (line, column) = line_column(&source_text, start);
        Self {
            file_name: file_name.into(),
            source_text,
            span: start..end,
            message: message.into(),
            help: None,
            line,
            column,
        }
    }

    /// Attaches a hint saying what to do.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file_name, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for SourceError {}

/// Why `nightshift.toml` could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but is not a valid configuration.
    #[error("{0}")]
    Invalid(Box<SourceError>),
}

impl From<SourceError> for ConfigError {
    fn from(error: SourceError) -> Self {
        Self::Invalid(Box::new(error))
    }
}

impl From<Box<SourceError>> for ConfigError {
    fn from(error: Box<SourceError>) -> Self {
        Self::Invalid(error)
    }
}

/// The largest character boundary of `text` that is `<= offset` (and `<= text.len()`).
fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// 1-based line and character column of byte `offset` in `text`. A byte order mark at the
/// start of the text is invisible in editors and not counted.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let current = &before[line_start..];
    let column = current
        .strip_prefix('\u{feff}')
        .unwrap_or(current)
        .chars()
        .count()
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_chars() {
        let text = "ab\nçé = 1\n";
        let at_eq = text.find('=').unwrap_or_default();
        let error = SourceError::new("f.toml", text, at_eq..at_eq + 1, "boom");
        assert_eq!((error.line, error.column), (2, 4));
        assert_eq!(error.to_string(), "f.toml:2:4: boom");
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, text.len()), (3, 1));
        assert_eq!(line_column("\u{feff}ab", 4), (1, 2));
    }

    #[test]
    fn spans_are_clamped_to_the_text_and_char_boundaries() {
        let text = "é";
        let error = SourceError::new("f", text, 1..10, "m");
        assert_eq!(error.span, 0..2);
        let (start, end) = (5, 3);
        let error = SourceError::new("f", text, start..end, "m");
        assert_eq!(error.span, 2..2);
        assert_eq!((error.line, error.column), (1, 2));
    }

    #[test]
    fn config_error_wraps_source_error_display() {
        let error = ConfigError::from(SourceError::new("n.toml", "x", 0..1, "bad").with_help("h"));
        assert_eq!(error.to_string(), "n.toml:1:1: bad");
        let read = ConfigError::Read {
            path: PathBuf::from("/nope/n.toml"),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(read.to_string(), "read /nope/n.toml");
    }
}
