//! One writer per store file: an advisory lock on a file beside the store, naming its holder.
//!
//! SQLite keeps a store consistent under any number of writers, but a batch job's outputs
//! (kept, merged, rejected) describe the store as the job left it: when another process
//! writes meanwhile, records this job kept may end up merged by the other process, and its
//! outputs no longer account for its input. So the commands that write to a store file take
//! this lock first, and a second writer waits for the first (or refuses, naming it).
//!
//! The lock is the operating system's (`flock` on Unix): it is released when the holder
//! exits, however it exits, so a process killed mid-run leaves nothing to clean up. The
//! lock file stays beside the store; its content only names the last holder.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// An exclusive claim on a store file for writing, held until dropped.
///
/// # Examples
/// ```
/// use neardup::store::WriterLock;
/// let dir = tempfile::tempdir()?;
/// let store = dir.path().join("neardup.db");
/// let lock = WriterLock::try_acquire(&store, "neardup dedup")?;
/// // A second writer is refused while the first holds it, and told who holds it.
/// let err = WriterLock::try_acquire(&store, "neardup serve").unwrap_err();
/// assert!(err.to_string().contains("neardup dedup"));
/// drop(lock);
/// WriterLock::try_acquire(&store, "neardup serve")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct WriterLock {
    // Held for its lock: closing the file releases it.
    _file: File,
    path: PathBuf,
}

impl WriterLock {
    /// The lock file of the store at `store`: `STORE.lock` beside it.
    pub fn path_for(store: &Path) -> PathBuf {
        let mut name = store.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// Takes the lock of the store at `store` for `holder` (a short description such as
    /// `neardup dedup`, recorded with the process id and the time for whoever waits).
    ///
    /// # Errors
    /// [`Error::StoreBusy`] naming the holder when another process (or another lock in
    /// this one) holds it; [`Error::Io`] when the lock file cannot be created.
    pub fn try_acquire(store: &Path, holder: &str) -> Result<WriterLock> {
        let (mut file, path) = open(store)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(Error::StoreBusy {
                    path: store.to_owned(),
                    holder: read_holder(&mut file),
                })
            }
            Err(TryLockError::Error(source)) => return Err(Error::Io { path, source }),
        }
        claim(file, path, holder)
    }

    /// Takes the lock, waiting for the holder to release it. `waiting` is called once,
    /// with the holder's description, if the lock is held when this is called.
    ///
    /// # Errors
    /// [`Error::Io`] when the lock file cannot be created or locked.
    pub fn acquire(store: &Path, holder: &str, waiting: impl FnOnce(&str)) -> Result<WriterLock> {
        match Self::try_acquire(store, holder) {
            Err(Error::StoreBusy { holder: other, .. }) => {
                waiting(&other);
                let (file, path) = open(store)?;
                file.lock().map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                claim(file, path, holder)
            }
            other => other,
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn open(store: &Path) -> Result<(File, PathBuf)> {
    let path = WriterLock::path_for(store);
    // Not truncated on open: until this process holds the lock, its content names the
    // holder.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    Ok((file, path))
}

/// Records this process as the holder of a lock it holds.
fn claim(mut file: File, path: PathBuf, holder: &str) -> Result<WriterLock> {
    let since = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let text = format!("{holder} (pid {}, since {since})\n", std::process::id());
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(WriterLock { _file: file, path })
}

fn read_holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let text = text.trim();
    if text.is_empty() {
        // Taken a moment ago: the holder has not written its name yet.
        "another process".to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_and_told_who_holds_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        let first = WriterLock::try_acquire(&store, "neardup dedup").unwrap();
        assert_eq!(first.path(), dir.path().join("s.db.lock"));
        match WriterLock::try_acquire(&store, "neardup serve") {
            Err(Error::StoreBusy { path, holder }) => {
                assert_eq!(path, store);
                assert!(holder.starts_with("neardup dedup (pid "), "{holder}");
                assert!(holder.contains(&std::process::id().to_string()), "{holder}");
            }
            other => panic!("expected StoreBusy, got {other:?}"),
        }
        drop(first);
        let second = WriterLock::try_acquire(&store, "neardup serve").unwrap();
        drop(second);
    }

    #[test]
    fn a_waiting_writer_gets_the_lock_once_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        let first = WriterLock::try_acquire(&store, "first").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let store = store.clone();
            std::thread::spawn(move || {
                WriterLock::acquire(&store, "second", |holder| {
                    tx.send(holder.to_owned()).unwrap()
                })
                .map(|_| ())
            })
        };
        let told = rx.recv().unwrap();
        assert!(told.starts_with("first (pid"), "{told}");
        drop(first);
        waiter.join().unwrap().unwrap();
        // Free again, with the last holder's name left behind.
        let text = std::fs::read_to_string(WriterLock::path_for(&store)).unwrap();
        assert!(text.starts_with("second (pid"), "{text}");
        WriterLock::try_acquire(&store, "third").unwrap();
    }
}
