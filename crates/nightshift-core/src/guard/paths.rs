//! Path globs for `[guards]`: gitignore-like, relative to the repository root, `/` separated.
//! `**` crosses directories, `*` and `?` do not, `{a,b}` alternates.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Compiles one glob; the error says what is wrong with it.
pub fn compile(pattern: &str) -> Result<Glob, String> {
    if pattern.trim().is_empty() {
        return Err("the glob is empty".into());
    }
    if pattern.starts_with('/') {
        return Err(format!(
            "`{pattern}` is absolute; globs are relative to the repository root"
        ));
    }
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// A set of globs that answers "does this path match any of them".
#[derive(Debug, Clone)]
pub struct PathSet {
    set: GlobSet,
    patterns: Vec<String>,
}

impl PathSet {
    /// Compiles `patterns`; a directory pattern `dir/` is read as `dir/**`.
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Result<PathSet, String> {
        let mut builder = GlobSetBuilder::new();
        let mut kept = Vec::new();
        for pattern in patterns {
            let pattern = match pattern.strip_suffix('/') {
                Some(dir) => format!("{dir}/**"),
                None => pattern.to_owned(),
            };
            builder.add(compile(&pattern)?);
            kept.push(pattern);
        }
        let set = builder.build().map_err(|e| e.to_string())?;
        Ok(PathSet {
            set,
            patterns: kept,
        })
    }

    /// The set that matches nothing.
    pub fn empty() -> PathSet {
        PathSet {
            set: GlobSet::empty(),
            patterns: Vec::new(),
        }
    }

    /// The first pattern `path` matches, if any.
    pub fn matching(&self, path: &str) -> Option<&str> {
        self.set
            .matches(path)
            .first()
            .and_then(|i| self.patterns.get(*i))
            .map(String::as_str)
    }

    /// Whether `path` matches any pattern.
    pub fn is_match(&self, path: &str) -> bool {
        self.set.is_match(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_star_crosses_directories_and_single_star_does_not() -> Result<(), String> {
        let set = PathSet::new(["tests/**", ".github/", "*.lock", "**/*_test.go"])?;
        assert_eq!(set.matching("tests/a/b.rs"), Some("tests/**"));
        assert_eq!(set.matching(".github/workflows/ci.yml"), Some(".github/**"));
        assert!(set.is_match("Cargo.lock"));
        assert!(!set.is_match("sub/Cargo.lock"), "`*` stops at `/`");
        assert!(set.is_match("pkg/x/y_test.go"));
        assert!(set.is_match("y_test.go"));
        assert!(!set.is_match("src/lib.rs"));
        assert!(!set.is_match("src/tests.rs"));
        Ok(())
    }

    #[test]
    fn bad_globs_say_why() {
        assert!(compile("").is_err());
        assert!(compile("/etc/**").is_err());
        assert!(compile("src/{a,b").is_err());
        assert!(compile("src/[").is_err());
    }
}
