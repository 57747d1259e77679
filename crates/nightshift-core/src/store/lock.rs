//! The run lock: an `flock` on `.nightshift/lock` guarantees one engine per repository. The
//! kernel releases it when the holder dies, `kill -9` included. The file also names the holder,
//! so a second `nightshift run` can say who has it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A held run lock; released on drop (or by the kernel when the process dies).
#[derive(Debug)]
pub struct RunLock {
    file: File,
    path: PathBuf,
}

/// Errors from taking the run lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("take the run lock: another nightshift holds it ({holder})")]
    Held { holder: String, path: PathBuf },
    #[error("take the run lock {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RunLock {
    /// Takes the lock without waiting, and writes `holder` (a short description) into the file.
    pub fn acquire(path: &Path, holder: &str) -> Result<RunLock, LockError> {
        let io = |source| LockError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = text.trim();
                return Err(LockError::Held {
                    holder: if holder.is_empty() {
                        "holder unknown".to_owned()
                    } else {
                        holder.to_owned()
                    },
                    path: path.to_owned(),
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(holder.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(RunLock {
            file,
            path: path.to_owned(),
        })
    }

    /// Where the lock lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the holder description (e.g. once the run id is known).
    pub fn describe(&mut self, holder: &str) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(holder.as_bytes())?;
        self.file.flush()
    }
}

/// Reads who holds (or last held) the lock at `path`, if anyone wrote it.
pub fn read_holder(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}
