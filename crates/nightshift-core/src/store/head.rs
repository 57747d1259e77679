//! The journal chain's head, kept outside the database (issue 12): the hash chain cannot see
//! rows cut from the end of the journal, nor the file replaced by an older copy of itself or
//! by a database made without the key; a head in the chain key's directory can.
//!
//! After every append the writer replaces `<data dir>/nightshift/heads/<name>.head` (0600,
//! written under a temporary name and renamed) with the last entry's `seq`, the number of
//! entries and that entry's MAC; `<name>` is a hash of the database's canonical path, so two
//! repositories' stores never share a head. The head is written *after* the transaction
//! commits, so a crash between the two leaves the head behind the journal, never ahead: a
//! journal ahead of its head is accepted (the chain, checked from its first entry, covers the
//! entries after the head), a journal behind its head is tampering.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::chain::Tamper;

/// The directory of the heads, inside the chain key's directory.
pub const DIR: &str = "heads";

const MAGIC: &str = "nightshift journal head 1";

/// The size of a head file: one disk sector, so that an in-place rewrite is never half on disk
/// after a power cut.
const RECORD: usize = 256;

/// The last entry of the journal as the writer left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Its position (0: the journal was empty).
    pub seq: i64,
    /// The number of entries up to and including it.
    pub count: u64,
    /// Its MAC (`""` for an empty journal).
    pub mac: String,
}

impl Head {
    /// The head of an empty journal.
    pub fn empty() -> Head {
        Head {
            seq: 0,
            count: 0,
            mac: String::new(),
        }
    }

    /// The file's text: the fields, then a digest of them (a head read while it was being
    /// rewritten in place, or cut by a power loss, never passes for another one).
    pub fn encode(&self) -> String {
        let fields = format!(
            "{MAGIC}\nseq {}\ncount {}\nmac {}\n",
            self.seq, self.count, self.mac
        );
        let sum = crate::session::hex(&Sha256::digest(fields.as_bytes())[..8]);
        format!("{fields}sum {sum}\n")
    }

    /// [`Head::encode`] padded with newlines to [`RECORD`] bytes: every write of the file is
    /// then the same size at the same place (no shorter text ever leaves a longer one's tail).
    fn record(&self) -> Vec<u8> {
        let mut bytes = self.encode().into_bytes();
        if bytes.len() < RECORD {
            bytes.resize(RECORD, b'\n');
        }
        bytes
    }

    /// A head from a file's text; `None` when it is not one.
    pub fn decode(text: &str) -> Option<Head> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut field = |name: &str| {
            lines
                .next()?
                .strip_prefix(name)?
                .strip_prefix(' ')
                .map(str::to_owned)
        };
        let seq = field("seq")?.parse().ok()?;
        let count = field("count")?.parse().ok()?;
        let mac = field("mac")?;
        // A line cut short (a file cut mid-write) is no field: every field ends its line.
        if !text.contains(&format!("\nmac {mac}\n")) {
            return None;
        }
        // The digest, where there is one (heads written before it had none), must match, and
        // nothing but padding may follow.
        match lines.next() {
            Some(line) if line.starts_with("sum ") => {
                let fields = format!("{MAGIC}\nseq {seq}\ncount {count}\nmac {mac}\n");
                let sum = crate::session::hex(&Sha256::digest(fields.as_bytes())[..8]);
                if line != format!("sum {sum}") || lines.any(|l| !l.is_empty()) {
                    return None;
                }
            }
            Some(line) if !line.is_empty() => return None,
            _ => {}
        }
        if seq < 0 || (seq == 0) != (count == 0) || (count == 0) != mac.is_empty() {
            return None;
        }
        Some(Head { seq, count, mac })
    }
}

/// The journal as one read of it found it, for [`compare`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalEnd {
    /// The last entry's position and kind (`None`: the journal is empty).
    pub last: Option<(i64, String)>,
    /// Its number of entries.
    pub count: u64,
    /// The entry at the head's position, if there is one: its kind, its MAC, and the number of
    /// entries up to and including it.
    pub at_head: Option<AtHead>,
}

/// The entry a head names, as the journal holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtHead {
    pub kind: String,
    pub mac: Option<String>,
    pub count: u64,
}

/// How a journal stands against its head: `Ok(n)` when the head holds (the journal has `n`
/// entries after it: the appends whose head write a crash, or a concurrent writer, cut off),
/// the tampering otherwise.
pub fn compare(head: &Head, journal: &JournalEnd) -> Result<u64, Tamper> {
    if head.count == 0 {
        return Ok(journal.count);
    }
    let says = format!(
        "its head outside the database says it ends at entry {} ({} entries)",
        head.seq, head.count
    );
    let last_seq = journal.last.as_ref().map_or(0, |(seq, _)| *seq);
    if last_seq < head.seq || journal.count < head.count {
        let ends = match &journal.last {
            None => "the journal is empty".to_owned(),
            Some((seq, kind)) => format!(
                "the journal ends at entry {seq} ({kind}, {} entries)",
                journal.count
            ),
        };
        return Err(Tamper::Head(format!(
            "{ends} but {says}: entries were deleted from its end, or the database was replaced by an older copy"
        )));
    }
    let Some(at) = &journal.at_head else {
        return Err(Tamper::Head(format!(
            "the journal has no entry {} but {says}: entries were removed, or the database was replaced",
            head.seq
        )));
    };
    if at.mac.as_deref() != Some(head.mac.as_str()) {
        return Err(Tamper::Head(format!(
            "journal entry {} ({}) is not the entry its head outside the database names: the database was replaced (by another journal, or one made without the key)",
            head.seq, at.kind
        )));
    }
    if at.count != head.count {
        return Err(Tamper::Head(format!(
            "the journal holds {} entries up to entry {} but {says}: entries were removed, or the database was replaced",
            at.count, head.seq
        )));
    }
    Ok(journal.count - at.count)
}

/// Whether an entry may be appended after `last` (the journal's last entry now, its position
/// and kind), the journal holding `at` (the kind and MAC of the entry at the head's position,
/// if there is one): not when the journal is behind `head`. Counts are not compared (an append
/// does not read the whole journal); [`compare`] does at open and after every session.
pub fn check_append(
    head: &Head,
    last: Option<(i64, String)>,
    at: Option<(String, Option<String>)>,
) -> Result<(), Tamper> {
    let journal = JournalEnd {
        last,
        count: head.count,
        at_head: at.map(|(kind, mac)| AtHead {
            kind,
            mac,
            count: head.count,
        }),
    };
    compare(head, &journal).map(|_| ())
}

/// Where the head of the database at `db` lives (`None` without a data directory, or when the
/// database's directory cannot be resolved). Unit tests keep heads beside their databases.
pub fn path_for(db: &Path) -> Option<PathBuf> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let canonical = dir.canonicalize().ok()?.join(db.file_name()?);
    let digest = Sha256::digest(canonical.as_os_str().as_bytes());
    let name = format!("{}.head", crate::session::hex(&digest[..16]));
    let base = if cfg!(test) {
        dir.join(".nightshift-heads")
    } else {
        crate::receipt::key::data_dir()
            .ok()?
            .join("nightshift")
            .join(DIR)
    };
    Some(base.join(name))
}

/// What a head file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Head(Head),
    /// There is none.
    Missing,
    /// It is not a head (cut short by a power loss, or written by something else).
    Unreadable,
}

/// Reads the head at `path`. A head that does not decode is read again, a few times: the writer
/// rewrites it in place, and a read in the same instant can see half of each.
pub fn read(path: &Path) -> Read {
    let mut found = Read::Unreadable;
    for _ in 0..3 {
        found = match std::fs::read_to_string(path) {
            Ok(text) => Head::decode(&text).map_or(Read::Unreadable, Read::Head),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Read::Missing,
            Err(_) => Read::Unreadable,
        };
        if found != Read::Unreadable {
            break;
        }
    }
    found
}

/// Replaces the head at `path`: rewritten in place, one [`RECORD`]-sized write at its start,
/// where it is already a plain file of the writer's (no new file per journal entry: creating
/// one cost a quarter of a millisecond, a dozen times per item, issue 14); else (its directory
/// created 0700, the file 0600) written under a temporary name and renamed over. A reader that
/// meets a rewrite half done sees a digest that does not match and reads again ([`read`]). Not
/// synced: the journal is durable before this runs, and a head lost to a power cut reads as
/// behind it.
pub fn write(path: &Path, head: &Head) -> std::io::Result<()> {
    if rewrite_in_place(path, head).is_ok() {
        return Ok(());
    }
    replace(path, head)
}

/// [`write`] over the existing file: a regular file (no link followed), this user's, at most a
/// few records long.
fn rewrite_in_place(path: &Path, head: &Head) -> std::io::Result<()> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > 4096 || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(std::io::Error::other("not a head file of this user's"));
    }
    let record = head.record();
    file.write_all_at(&record, 0)?;
    if meta.len() > record.len() as u64 {
        file.set_len(record.len() as u64)?;
    }
    Ok(())
}

/// [`write`] by a new file renamed over the old one.
fn replace(path: &Path, head: &Head) -> std::io::Result<()> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a head path without a directory"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&head.record())?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: i64, count: u64, mac: &str) -> Head {
        Head {
            seq,
            count,
            mac: mac.into(),
        }
    }

    fn journal(last: i64, count: u64, at_head: Option<(&str, Option<&str>, u64)>) -> JournalEnd {
        JournalEnd {
            last: (last > 0).then(|| (last, "run_finished".to_owned())),
            count,
            at_head: at_head.map(|(kind, mac, count)| AtHead {
                kind: kind.into(),
                mac: mac.map(str::to_owned),
                count,
            }),
        }
    }

    fn what(r: Result<u64, Tamper>) -> String {
        match r {
            Err(t) => t.to_string(),
            Ok(n) => panic!("held, {n} ahead"),
        }
    }

    #[test]
    fn a_journal_at_or_ahead_of_its_head_holds() {
        let h = head(7, 7, "ab");
        assert_eq!(
            compare(&h, &journal(7, 7, Some(("x", Some("ab"), 7)))),
            Ok(0)
        );
        // A crash between the commit and the head write: the journal is one ahead.
        assert_eq!(
            compare(&h, &journal(8, 8, Some(("x", Some("ab"), 7)))),
            Ok(1)
        );
        // An empty head (a fresh database) holds for any journal.
        assert_eq!(compare(&Head::empty(), &journal(3, 3, None)), Ok(3));
        assert_eq!(compare(&Head::empty(), &journal(0, 0, None)), Ok(0));
    }

    #[test]
    fn a_journal_cut_at_its_end_is_named() {
        let h = head(9, 9, "ab");
        let w = what(compare(&h, &journal(6, 6, None)));
        assert!(
            w.contains("the journal ends at entry 6 (run_finished, 6 entries)")
                && w.contains("its head outside the database says it ends at entry 9 (9 entries)")
                && w.contains(
                    "deleted from its end, or the database was replaced by an older copy"
                ),
            "{w}"
        );
        let w = what(compare(&h, &journal(0, 0, None)));
        assert!(w.starts_with("the journal is empty but"), "{w}");
    }

    #[test]
    fn a_replaced_or_thinned_journal_is_named() {
        let h = head(9, 9, "ab");
        // Another journal, as long or longer: the entry at the head's position differs.
        let w = what(compare(
            &h,
            &journal(12, 12, Some(("check_started", Some("cd"), 9))),
        ));
        assert!(
            w.contains("journal entry 9 (check_started) is not the entry its head"),
            "{w}"
        );
        // One without MACs (made without the key).
        let w = what(compare(
            &h,
            &journal(12, 12, Some(("check_started", None, 9))),
        ));
        assert!(w.contains("the database was replaced"), "{w}");
        // The head's entry is gone, later ones are there.
        let w = what(compare(&h, &journal(12, 11, None)));
        assert!(w.contains("the journal has no entry 9"), "{w}");
        // Fewer entries up to the head's than it counted.
        let w = what(compare(&h, &journal(12, 11, Some(("x", Some("ab"), 8)))));
        assert!(w.contains("holds 8 entries up to entry 9"), "{w}");
        // Fewer entries than the head counts, with the last beyond it.
        let w = what(compare(&h, &journal(12, 8, Some(("x", Some("ab"), 7)))));
        assert!(w.contains("ends at entry 12"), "{w}");
    }

    #[test]
    fn an_append_on_a_journal_behind_its_head_is_refused() {
        let h = head(9, 9, "ab");
        let last = |seq| Some((seq, "session_started".to_owned()));
        let at = |mac: &str| Some(("session_started".to_owned(), Some(mac.to_owned())));
        assert_eq!(check_append(&h, last(9), at("ab")), Ok(()));
        assert_eq!(check_append(&h, last(11), at("ab")), Ok(()));
        assert_eq!(check_append(&Head::empty(), None, None), Ok(()));
        // Entries 8 and 9 deleted during a session: the next append would chain onto 7.
        let w = what(check_append(&h, last(7), None).map(|()| 0));
        assert!(w.contains("the journal ends at entry 7"), "{w}");
        let w = what(check_append(&h, last(12), at("cd")).map(|()| 0));
        assert!(w.contains("the database was replaced"), "{w}");
        let w = what(check_append(&h, last(12), None).map(|()| 0));
        assert!(w.contains("has no entry 9"), "{w}");
    }

    #[test]
    fn a_head_survives_its_file_and_garbage_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heads").join("x.head");
        assert_eq!(read(&path), Read::Missing);
        let h = head(42, 40, "00ff");
        write(&path, &h).unwrap();
        assert_eq!(read(&path), Read::Head(h.clone()));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        write(&path, &Head::empty()).unwrap();
        assert_eq!(read(&path), Read::Head(Head::empty()));
        for junk in ["", "seq 1\n", &h.encode().replace("count 40", "count x")] {
            std::fs::write(&path, junk).unwrap();
            assert_eq!(read(&path), Read::Unreadable, "{junk:?}");
        }
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file is left"
        );
    }

    #[test]
    fn a_head_is_rewritten_in_place_and_a_half_rewritten_one_never_passes() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("heads").join("x.head");
        write(&path, &head(1, 1, "aa")).unwrap();
        let inode = std::fs::metadata(&path).unwrap().ino();
        let later = head(1200, 1199, &"b".repeat(64));
        write(&path, &later).unwrap();
        assert_eq!(read(&path), Read::Head(later.clone()));
        assert_eq!(
            std::fs::metadata(&path).unwrap().ino(),
            inode,
            "the same file, no new one per entry"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), RECORD as u64);
        // Half of a rewrite from seq 1199 to 1200: digits of both decode, the digest does not.
        let older = head(1199, 1198, &"b".repeat(64)).encode();
        let newer = later.encode();
        let torn = format!("{}{}", &newer[..newer.len() / 2], &older[newer.len() / 2..]);
        assert!(Head::decode(&torn).is_none(), "{torn:?}");
        // A head written before the digest existed still reads; one with a wrong digest does not.
        let legacy = "nightshift journal head 1\nseq 3\ncount 3\nmac cc\n";
        assert_eq!(Head::decode(legacy), Some(head(3, 3, "cc")));
        let forged = later.encode().replace("count 1199", "count 1198");
        assert!(Head::decode(&forged).is_none());
        // A link in the head's place is replaced, never written through.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        write(&path, &later).unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep");
        assert_eq!(read(&path), Read::Head(later));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Whatever a head file holds (bytes anyone with the data directory could write, a
        /// power cut's half), reading it never panics; a head read back is one written.
        #[test]
        fn decoding_any_bytes_never_panics_and_a_written_head_reads_back(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            seq in 1i64..i64::MAX,
            count in 1u64..u64::MAX,
            mac in "[0-9a-f]{1,64}",
            cut in 0usize..300,
        ) {
            let _ = Head::decode(&String::from_utf8_lossy(&bytes));
            let h = Head { seq, count, mac };
            let record = h.record();
            proptest::prop_assert_eq!(record.len(), RECORD);
            let text = String::from_utf8_lossy(&record).into_owned();
            proptest::prop_assert_eq!(Head::decode(&text), Some(h.clone()));
            // Any prefix of it is that head or none (a cut record never reads as another).
            let prefix = &text[..cut.min(text.len())];
            let got = Head::decode(prefix);
            proptest::prop_assert!(got.is_none() || got == Some(h));
        }
    }

    #[test]
    fn two_databases_get_two_heads_and_one_path_one() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let name = |p: &str| {
            path_for(&dir.path().join(p).join("state.db"))
                .and_then(|h| h.file_name().map(ToOwned::to_owned))
                .unwrap()
        };
        assert_ne!(name("a"), name("b"));
        assert_eq!(name("a"), name("b/../a"));
    }
}
