//! The adequacy canary's mutations: which tracked files are source (not tests, docs or config),
//! which of them the tests most likely exercise, and a textual mutation that must change
//! behaviour (flip every comparison, else every boolean, else bump every integer literal, else
//! empty the file). Language-agnostic on purpose: it is a floor, not mutation testing.

use std::path::Path;

/// Extensions taken as source code.
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "java", "kt", "kts", "scala", "c",
    "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "fs", "rb", "php", "swift", "m", "mm", "sh",
    "bash", "zsh", "lua", "ex", "exs", "erl", "hs", "ml", "clj", "dart", "r", "pl", "pm", "zig",
    "nim", "vue", "svelte", "groovy", "jl",
];

/// Directory names whose files are tests, docs, examples or someone else's code.
const NON_SOURCE_DIRS: &[&str] = &[
    "test",
    "tests",
    "spec",
    "specs",
    "__tests__",
    "__mocks__",
    "testdata",
    "test_data",
    "fixtures",
    "docs",
    "doc",
    "examples",
    "example",
    "benches",
    "bench",
    "benchmarks",
    "vendor",
    "third_party",
    "node_modules",
    ".github",
    "e2e",
    "it",
];

/// File names that are build or test configuration, not product code.
const NON_SOURCE_FILES: &[&str] = &[
    "build.rs",
    "setup.py",
    "conftest.py",
    "noxfile.py",
    "manage.py",
    "jest.config.js",
    "jest.config.ts",
    "vite.config.ts",
    "vite.config.js",
    "webpack.config.js",
    "babel.config.js",
    "eslint.config.js",
    "rollup.config.js",
    "gulpfile.js",
    "Gruntfile.js",
];

/// Whether a tracked path looks like a test (its name or a directory says so).
pub fn is_test_path(path: &str) -> bool {
    let p = Path::new(path);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("").to_owned();
    let dir_says = p.parent().is_some_and(|parent| {
        parent.components().any(|c| {
            let c = c.as_os_str().to_string_lossy().to_lowercase();
            NON_SOURCE_DIRS.contains(&c.as_str())
        })
    });
    dir_says
        || stem.starts_with("test_")
        || stem.starts_with("test-")
        || stem == "test"
        || stem == "tests"
        || stem.ends_with("_test")
        || stem.ends_with("-test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name == "conftest.py"
}

/// Whether a tracked path is product source: a source extension, not a test, not build or
/// test configuration, and not a file the check command itself names.
pub fn is_source(path: &str, check_command: &str) -> bool {
    let p = Path::new(path);
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = p
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if !SOURCE_EXTENSIONS.contains(&ext.as_str()) || name.starts_with('.') {
        return false;
    }
    if is_test_path(path) || NON_SOURCE_FILES.contains(&name.as_str()) {
        return false;
    }
    // The check's own script (`sh check.sh`, `./run-tests.sh`) is the oracle, not the product.
    !check_command
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ';' | '&' | '|'))
        .map(|w| w.trim_start_matches("./"))
        .any(|w| !w.is_empty() && (w == path || w == name))
}

/// Up to `max` source files, most likely exercised first: ranked by how often their stem is
/// named in the tracked test files and the check command (`lib.sh` is named by `check.sh`),
/// then by path.
pub fn candidates(tree: &Path, tracked: &[String], check_command: &str, max: usize) -> Vec<String> {
    let sources: Vec<&String> = tracked
        .iter()
        .filter(|p| is_source(p, check_command))
        .collect();
    // What the tests (and the check's own files) say, to rank by.
    let mut corpus = check_command.to_owned();
    let mut read = 0_usize;
    for path in tracked {
        let p = Path::new(path);
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let named_by_check = check_command.contains(&name) && !name.is_empty();
        if (is_test_path(path) || named_by_check)
            && read < 4 * 1024 * 1024
            && let Ok(text) = std::fs::read_to_string(tree.join(p))
        {
            read += text.len();
            corpus.push('\n');
            corpus.push_str(&text);
        }
    }
    let mut ranked: Vec<(usize, &String)> = sources
        .into_iter()
        .map(|p| {
            let stem = Path::new(p)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let score = if stem.len() < 2 || stem == "mod" || stem == "index" {
                corpus.matches(p.as_str()).count()
            } else {
                corpus.matches(stem.as_str()).count()
            };
            (score, p)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    ranked
        .into_iter()
        .take(max)
        .map(|(_, p)| p.clone())
        .collect()
}

/// A planted mutation: the new text and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    pub text: String,
    pub description: String,
}

/// Comparison flips, longest first so `===` is not read as `==`.
const COMPARISONS: &[(&str, &str)] = &[
    ("===", "!=="),
    ("!==", "==="),
    ("==", "!="),
    ("!=", "=="),
    ("<=", ">"),
    (">=", "<"),
    ("-eq", "-ne"),
    ("-ne", "-eq"),
    ("-lt", "-ge"),
    ("-ge", "-lt"),
    ("-gt", "-le"),
    ("-le", "-gt"),
];

const BOOLEANS: &[(&str, &str)] = &[
    ("true", "false"),
    ("false", "true"),
    ("True", "False"),
    ("False", "True"),
];

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('#') || t.starts_with("//") || t.starts_with("/*") || t.starts_with('*')
}

/// Replaces every site of one operator family on non-comment lines; returns the count.
fn replace_family(text: &str, family: &[(&str, &str)], words: bool) -> (String, usize) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut count = 0;
    for line in text.split_inclusive('\n') {
        if is_comment(line) {
            out.push_str(line);
            continue;
        }
        let mut i = 0;
        'scan: while i < line.len() {
            if !line.is_char_boundary(i) {
                i += 1;
                continue;
            }
            for (from, to) in family {
                if line[i..].starts_with(from) {
                    let before = line[..i].chars().next_back();
                    let after = line[i + from.len()..].chars().next();
                    let bounded = if words || from.starts_with('-') {
                        !before.is_some_and(|c| is_ident(c) || c == '-')
                            && !after.is_some_and(is_ident)
                    } else {
                        // `==` inside `===`, `<=` inside `<=>`, `!=` inside `!==` are not ours.
                        !before.is_some_and(|c| matches!(c, '=' | '!' | '<' | '>'))
                            && !after.is_some_and(|c| matches!(c, '=' | '>'))
                    };
                    if bounded {
                        out.push_str(to);
                        i += from.len();
                        count += 1;
                        continue 'scan;
                    }
                }
            }
            let ch_len = line[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&line[i..i + ch_len]);
            i += ch_len;
        }
    }
    (out, count)
}

/// Bumps every standalone integer literal by one on non-comment lines.
fn bump_numbers(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len() + 16);
    let mut count = 0;
    for line in text.split_inclusive('\n') {
        if is_comment(line) {
            out.push_str(line);
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let before = i.checked_sub(1).map(|j| chars[j]);
            if c.is_ascii_digit()
                && !before.is_some_and(|b| is_ident(b) || b == '$' || b == '.' || b == '#')
            {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                let after = chars.get(i).copied();
                let digits: String = chars[start..i].iter().collect();
                match digits.parse::<u64>() {
                    Ok(n) if !after.is_some_and(|a| is_ident(a) || a == '.') => {
                        out.push_str(&(n.saturating_add(1)).to_string());
                        count += 1;
                    }
                    _ => out.push_str(&digits),
                }
                continue;
            }
            out.push(c);
            i += 1;
        }
    }
    (out, count)
}

/// The mutation planted in `text`: the first family with any site, every site of it; an empty
/// file when there is none.
pub fn mutate(text: &str) -> Mutant {
    let (t, n) = replace_family(text, COMPARISONS, false);
    if n > 0 {
        return Mutant {
            text: t,
            description: format!("flipped {n} comparison(s)"),
        };
    }
    let (t, n) = replace_family(text, BOOLEANS, true);
    if n > 0 {
        return Mutant {
            text: t,
            description: format!("flipped {n} boolean(s)"),
        };
    }
    let (t, n) = bump_numbers(text);
    if n > 0 {
        return Mutant {
            text: t,
            description: format!("changed {n} number(s)"),
        };
    }
    Mutant {
        text: String::new(),
        description: "emptied the file".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_docs_and_the_check_script_are_not_source() {
        assert!(is_source("src/lib.rs", "cargo test"));
        assert!(is_source("lib.sh", "sh check.sh"));
        assert!(!is_source("check.sh", "sh check.sh greet"));
        assert!(!is_source("tests/cli.rs", "cargo test"));
        assert!(!is_source("pkg/foo_test.go", "go test ./..."));
        assert!(!is_source("test_app.py", "pytest"));
        assert!(!is_source("src/app.test.ts", "npm test"));
        assert!(!is_source("README.md", "true"));
        assert!(!is_source("nightshift.toml", "true"));
        assert!(!is_source("build.rs", "cargo test"));
    }

    #[test]
    fn candidates_rank_what_the_tests_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("check.sh"),
            ". ./math.sh\n[ $(add 1 2) = 3 ]\n",
        )
        .unwrap();
        let tracked: Vec<String> = ["aaa.sh", "check.sh", "math.sh", "README.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = candidates(dir.path(), &tracked, "sh check.sh", 3);
        assert_eq!(c, ["math.sh", "aaa.sh"]);
    }

    #[test]
    fn mutations_flip_comparisons_then_booleans_then_numbers_else_empty() {
        let m = mutate("if a == b && c >= 3 {\n// x == y\n}\n");
        assert_eq!(m.text, "if a != b && c < 3 {\n// x == y\n}\n");
        assert_eq!(m.description, "flipped 2 comparison(s)");
        assert_eq!(mutate("x === y").text, "x !== y");
        assert_eq!(mutate("[ $a -eq 1 ]").text, "[ $a -ne 1 ]");
        assert_eq!(mutate("return true;").text, "return false;");
        assert_eq!(mutate("let istrue = 1;").text, "let istrue = 2;");
        assert_eq!(mutate("echo $(( $1 + 10 ))").text, "echo $(( $1 + 11 ))");
        assert_eq!(mutate("x = 1.5 + y").text, "");
        let m = mutate("greet() { echo \"hello $1\"; }\n");
        assert_eq!(m.text, "");
        assert_eq!(m.description, "emptied the file");
    }
}
