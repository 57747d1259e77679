//! The commented `nightshift.toml` that `nightshift init` writes.

/// The commented `nightshift.toml` that `nightshift init` writes: every key explained, an
/// example `[[item]]`, and placeholder agent and check commands that fail loudly until they are
/// replaced. It parses with [`super::parse`].
pub fn template() -> &'static str {
    include_str!("template.toml")
}
