//! Reading a file that someone names — a receipt, a key, the config, a plan, a results file —
//! with a cap: `/dev/zero`, an endless pipe or a runaway report must never grow memory without
//! bound. A file over its cap is an error that says so (`it is larger than 4 MiB`), never a
//! silent truncation. Running a short-lived child with a deadline is [`process`]'s.

pub mod process;

use std::io::Read;
use std::path::Path;

/// `nightshift.toml`, a Markdown plan, the gates file, a public key.
pub const CONFIG_BYTES: u64 = 4 << 20;
/// A receipt (a signed JSON record of one attempt).
pub const RECEIPT_BYTES: u64 = 16 << 20;
/// A results file a check writes (JUnit XML, JSON): read whole, so capped generously.
pub const RESULTS_BYTES: u64 = 256 << 20;

/// Reads at most `limit` bytes of `path`; more is an [`std::io::ErrorKind::FileTooLarge`]
/// error whose text reads after "read <path>: ".
pub fn read(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "it is larger than {} (nightshift reads at most that much of it)",
                size(limit)
            ),
        ));
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, limit)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// `4 MiB`, `512 KiB`, `100 bytes`.
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_after_the_cap_not_read_to_its_end() {
        let error = read(Path::new("/dev/zero"), 1 << 20).expect_err("/dev/zero has no end");
        assert_eq!(error.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(error.to_string().contains("larger than 1 MiB"), "{error}");
    }

    #[test]
    fn a_file_up_to_the_cap_is_read_whole() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("f");
        std::fs::write(&path, "12345")?;
        assert_eq!(read_to_string(&path, 5)?, "12345");
        assert!(read(&path, 4).is_err());
        std::fs::write(&path, [0xff, 0xfe])?;
        assert!(read_to_string(&path, 5).is_err());
        Ok(())
    }
}
