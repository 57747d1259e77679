//! One commit nightshift's own git just wrote, read from its loose object file instead of
//! asking a git process (`rev-parse <commit>^{tree}`, `cat-file commit`): a millisecond per
//! question, twice an attempt (decision 106).
//!
//! Only a loose object is read, and only what this module can account for byte by byte: the
//! `commit <size>\0` header with the size of what follows, then `tree`, `parent`, `author`,
//! `committer` and any other header (noted, not read), a blank line and the message. Anything
//! else — a packed object, a file too large, a header out of order, bytes that do not inflate
//! — is `None`, and the caller asks git as before. Nothing here can be made to panic by the
//! bytes it reads (fuzzed below).

use std::io::Read;
use std::path::Path;

/// The most bytes an object file may hold, compressed or inflated: a commit nightshift writes
/// has a message of at most 64 KiB (`message::MAX_MESSAGE_BYTES`).
const MAX_OBJECT_BYTES: u64 = 256 * 1024;

/// What a commit object says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitObject {
    pub tree: String,
    pub parents: Vec<String>,
    /// The `author` line's value (`name <email> seconds zone`).
    pub author: String,
    /// The `committer` line's value.
    pub committer: String,
    /// Whether any other header is present (`encoding`, `gpgsig`, `mergetag`, …).
    pub other_headers: bool,
    pub message: String,
}

/// Whether `id` is a full object name (SHA-1 or SHA-256, lowercase hex).
fn full_id(id: &str) -> bool {
    (id.len() == 40 || id.len() == 64) && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The inflated loose object `id` under `objects` (a repository's object directory): its
/// header's kind and its body, `None` where there is no such file, it is too large, does not
/// inflate, or its header does not give the body's length.
fn read_loose(objects: &Path, id: &str) -> Option<(String, Vec<u8>)> {
    if !full_id(id) {
        return None;
    }
    let file = std::fs::File::open(objects.join(&id[..2]).join(&id[2..])).ok()?;
    if file.metadata().ok()?.len() > MAX_OBJECT_BYTES {
        return None;
    }
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(file.take(MAX_OBJECT_BYTES))
        .take(MAX_OBJECT_BYTES + 1)
        .read_to_end(&mut inflated)
        .ok()?;
    split_object(&inflated).map(|(kind, body)| (kind.to_owned(), body.to_vec()))
}

/// `<kind> <size>\0<body>` into its kind and body, `size` being the body's length.
fn split_object(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let nul = bytes.iter().position(|b| *b == 0)?;
    let header = std::str::from_utf8(&bytes[..nul]).ok()?;
    let (kind, size) = header.split_once(' ')?;
    let size: usize = size.parse().ok()?;
    let body = &bytes[nul + 1..];
    (body.len() == size).then_some((kind, body))
}

/// The commit `id` from the loose object under `objects` (a repository's object directory),
/// `None` where there is none or it is not a commit this module reads.
pub fn read_loose_commit(objects: &Path, id: &str) -> Option<CommitObject> {
    let (kind, body) = read_loose(objects, id)?;
    (kind == "commit")
        .then(|| parse_commit_body(&body))
        .flatten()
}

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// As the tree spells it (`100644`, `40000`, `160000`, …).
    pub mode: String,
    pub name: Vec<u8>,
    /// The entry's object name, hex, as long as the tree's own.
    pub id: String,
}

/// The entries of the tree `id` from its loose object under `objects`, `None` where there is
/// none or it does not parse whole.
pub fn read_loose_tree(objects: &Path, id: &str) -> Option<Vec<TreeEntry>> {
    let (kind, body) = read_loose(objects, id)?;
    if kind != "tree" {
        return None;
    }
    parse_tree_body(&body, id.len() / 2)
}

/// A tree's body: `<mode> <name>\0<raw object name of oid_len bytes>`, repeated.
pub fn parse_tree_body(mut body: &[u8], oid_len: usize) -> Option<Vec<TreeEntry>> {
    if oid_len == 0 {
        return None;
    }
    let mut entries = Vec::new();
    while !body.is_empty() {
        let space = body.iter().position(|b| *b == b' ')?;
        let mode = std::str::from_utf8(&body[..space]).ok()?;
        if mode.is_empty() || !mode.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let rest = &body[space + 1..];
        let nul = rest.iter().position(|b| *b == 0)?;
        let name = &rest[..nul];
        let oid = rest.get(nul + 1..nul + 1 + oid_len)?;
        if name.is_empty() {
            return None;
        }
        entries.push(TreeEntry {
            mode: mode.to_owned(),
            name: name.to_vec(),
            id: oid.iter().map(|b| format!("{b:02x}")).collect(),
        });
        body = &rest[nul + 1 + oid_len..];
    }
    Some(entries)
}

/// Parses an inflated object: `commit <size>\0<body>`, `size` being the body's length.
pub fn parse_commit_object(bytes: &[u8]) -> Option<CommitObject> {
    match split_object(bytes)? {
        ("commit", body) => parse_commit_body(body),
        _ => None,
    }
}

/// A commit object's body: its headers, a blank line, its message.
fn parse_commit_body(body: &[u8]) -> Option<CommitObject> {
    let body = std::str::from_utf8(body).ok()?;
    let (headers, message) = body.split_once("\n\n")?;
    let mut lines = headers.split('\n');
    let tree = lines.next()?.strip_prefix("tree ")?;
    if !full_id(tree) {
        return None;
    }
    let mut parents = Vec::new();
    let mut author = None;
    let mut committer = None;
    let mut other_headers = false;
    for line in lines {
        if let Some(parent) = line.strip_prefix("parent ") {
            // Parents come right after the tree, before anything else.
            if author.is_some() || !full_id(parent) {
                return None;
            }
            parents.push(parent.to_owned());
        } else if let Some(a) = line.strip_prefix("author ") {
            if author.is_some() {
                return None;
            }
            author = Some(a.to_owned());
        } else if let Some(c) = line.strip_prefix("committer ") {
            if author.is_none() || committer.is_some() {
                return None;
            }
            committer = Some(c.to_owned());
        } else {
            // Another header, or a continuation line of one (a signature): not read.
            other_headers = true;
        }
    }
    Some(CommitObject {
        tree: tree.to_owned(),
        parents,
        author: author?,
        committer: committer?,
        other_headers,
        message: message.to_owned(),
    })
}

/// `message` as `git commit` stores it by default when no editor runs (`--cleanup=whitespace`):
/// trailing whitespace off every line, leading and trailing blank lines dropped, runs of blank
/// lines made one, each line ended by a newline.
pub fn stripspace(message: &str) -> String {
    let mut out = String::with_capacity(message.len() + 1);
    let mut blank_run = false;
    for line in message.split('\n') {
        let line = line.trim_end_matches([' ', '\t', '\r']);
        if line.is_empty() {
            blank_run = !out.is_empty();
            continue;
        }
        if blank_run {
            out.push('\n');
            blank_run = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The time (seconds since the epoch) of an `author`/`committer` value
/// (`name <email> seconds zone`).
pub fn ident_time(value: &str) -> Option<i64> {
    let (_, date) = value.rsplit_once("> ")?;
    let (seconds, zone) = date.split_once(' ')?;
    let zone_ok = zone.len() == 5
        && zone.starts_with(['+', '-'])
        && zone[1..].bytes().all(|b| b.is_ascii_digit());
    zone_ok.then(|| seconds.parse().ok()).flatten()
}

/// Whether an `author`/`committer` value names `name <email>` (whatever its date).
pub fn ident_is(value: &str, name: &str, email: &str) -> bool {
    value
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(" <"))
        .and_then(|rest| rest.strip_prefix(email))
        .and_then(|rest| rest.strip_prefix("> "))
        .is_some_and(|date| !date.contains(['<', '>', '\n']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str], input: Option<&str>) -> String {
        use std::io::Write;
        let mut child = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "nightshift")
            .env("GIT_AUTHOR_EMAIL", "nightshift@localhost")
            .env("GIT_COMMITTER_NAME", "nightshift")
            .env("GIT_COMMITTER_EMAIL", "nightshift@localhost")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.unwrap_or("").as_bytes()).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    #[test]
    fn a_commit_git_wrote_reads_as_git_says_and_its_message_as_stripspace_makes_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "--quiet"], None);
        std::fs::write(d.join("a.txt"), "ü\n").unwrap();
        git(d, &["add", "--all"], None);
        let message = "\n\nitem: Fix the “parser”  \n\n\n\nbody\t\n\nNightshift-Run: r\n\n";
        git(
            d,
            &["commit", "--quiet", "--no-verify", "-F", "-"],
            Some(message),
        );
        let head = git(d, &["rev-parse", "HEAD"], None);
        let objects = d.join(".git/objects");
        let root = read_loose_commit(&objects, &head).unwrap();
        assert_eq!(root.tree, git(d, &["rev-parse", "HEAD^{tree}"], None));
        assert!(root.parents.is_empty());
        assert!(ident_is(&root.author, "nightshift", "nightshift@localhost"));
        assert!(ident_is(
            &root.committer,
            "nightshift",
            "nightshift@localhost"
        ));
        assert!(!root.other_headers);
        assert_eq!(root.message, stripspace(message));
        assert_eq!(
            root.message,
            format!("{}\n", git(d, &["log", "-1", "--format=%B"], None))
        );
        // A second commit has its parent; a commit-tree one has its message as given.
        let tree = root.tree.clone();
        let child = git(
            d,
            &["commit-tree", &tree, "-p", &head, "-F", "-"],
            Some("as given  "),
        );
        let read = read_loose_commit(&objects, &child).unwrap();
        assert_eq!(read.parents, vec![head.clone()]);
        assert_eq!(read.message, "as given  ");
        // Its tree's entries are `ls-tree`'s.
        std::fs::create_dir_all(d.join("dir")).unwrap();
        std::fs::write(d.join("dir/b"), "b").unwrap();
        git(d, &["add", "--all"], None);
        git(d, &["commit", "--quiet", "-m", "two"], None);
        let two = git(d, &["rev-parse", "HEAD"], None);
        let tree = read_loose_commit(&objects, &two).unwrap().tree;
        let entries = read_loose_tree(&objects, &tree).unwrap();
        let listed: Vec<String> = entries
            .iter()
            .map(|e| format!("{} {}\t{}", e.mode, e.id, String::from_utf8_lossy(&e.name)))
            .collect();
        let ls: Vec<String> = git(d, &["ls-tree", &tree], None)
            .lines()
            .map(|l| {
                let (meta, name) = l.split_once('\t').unwrap();
                let mut f = meta.split(' ');
                let mode = f.next().unwrap().trim_start_matches('0');
                format!("{mode} {}\t{name}", f.nth(1).unwrap())
            })
            .collect();
        assert_eq!(listed, ls);
        assert_eq!(
            read_loose_tree(&objects, &two),
            None,
            "a commit is not a tree"
        );
        assert_eq!(
            read_loose_commit(&objects, &tree),
            None,
            "a tree is not a commit"
        );
        // Packed, it is not read (the caller asks git).
        git(d, &["gc", "--quiet", "--prune=now"], None);
        assert_eq!(read_loose_commit(&objects, &head), None);
        // Nor is a name that is not a full object name.
        assert_eq!(read_loose_commit(&objects, "HEAD"), None);
        assert_eq!(read_loose_commit(&objects, "../../../etc/passwd"), None);
    }

    #[test]
    fn a_signed_or_odd_commit_is_noted_or_refused() {
        let id = "a".repeat(40);
        let body = format!(
            "tree {id}\nparent {id}\nauthor n <e> 1 +0000\ncommitter n <e> 1 +0000\ngpgsig -----BEGIN\n x\n\nmsg\n"
        );
        let object = format!("commit {}\0{body}", body.len());
        let read = parse_commit_object(object.as_bytes()).unwrap();
        assert!(read.other_headers);
        assert_eq!(read.message, "msg\n");
        // A wrong size, a parent after the author, a missing committer: not read.
        let wrong = format!("commit {}\0{body}", body.len() + 1);
        assert_eq!(parse_commit_object(wrong.as_bytes()), None);
        let late =
            format!("tree {id}\nauthor n <e> 1 +0000\nparent {id}\ncommitter n <e> 1 +0000\n\nm");
        assert_eq!(
            parse_commit_object(format!("commit {}\0{late}", late.len()).as_bytes()),
            None
        );
        let bare = format!("tree {id}\nauthor n <e> 1 +0000\n\nm");
        assert_eq!(
            parse_commit_object(format!("commit {}\0{bare}", bare.len()).as_bytes()),
            None
        );
        assert_eq!(ident_time("n <e> 1700000000 +0100"), Some(1_700_000_000));
        assert_eq!(ident_time("n <e> 1700000000"), None);
        assert_eq!(ident_time("n <e> soon +0100"), None);
        assert!(!ident_is(
            "nightshift <nightshift@localhost>",
            "nightshift",
            "nightshift@localhost"
        ));
        assert!(!ident_is(
            "nightshift <nightshift@localhost> 1 +0000 <x>",
            "nightshift",
            "nightshift@localhost"
        ));
    }

    proptest::proptest! {
        #[test]
        fn no_bytes_make_the_commit_reader_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = parse_commit_object(&bytes);
            let mut framed = format!("commit {}\0", bytes.len()).into_bytes();
            framed.extend_from_slice(&bytes);
            let _ = parse_commit_object(&framed);
            let _ = ident_time(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn no_bytes_make_the_tree_reader_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), len in 0usize..40) {
            let _ = parse_tree_body(&bytes, len);
        }

        #[test]
        fn no_file_makes_the_loose_reader_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let dir = tempfile::tempdir().unwrap();
            let id = "ab".repeat(20);
            std::fs::create_dir_all(dir.path().join("ab")).unwrap();
            std::fs::write(dir.path().join("ab").join(&id[2..]), &bytes).unwrap();
            let _ = read_loose_commit(dir.path(), &id);
            let _ = read_loose_tree(dir.path(), &id);
            // The same bytes as an object that inflates.
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut z, &bytes).unwrap();
            std::fs::write(dir.path().join("ab").join(&id[2..]), z.finish().unwrap()).unwrap();
            let _ = read_loose_commit(dir.path(), &id);
            let _ = read_loose_tree(dir.path(), &id);
        }

        #[test]
        fn stripspace_is_idempotent_and_never_leaves_a_blank_edge(text in "[ a\t\n]{0,40}") {
            let once = stripspace(&text);
            proptest::prop_assert_eq!(stripspace(&once), once.clone());
            proptest::prop_assert!(!once.starts_with('\n') && !once.ends_with("\n\n"));
        }
    }
}
