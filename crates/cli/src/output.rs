//! Output files written past the page cache: [`UncachedFile`].
//!
//! A dedup run's largest output, kept.jsonl, is about as large as its input (569 MB of a
//! 1 GB bench run) and is written in the run's last, single-threaded stage. Through the
//! page cache every page of it is a page the kernel must find, and on a virtual machine
//! whose host takes back the memory its guest frees (free page reporting), a page that was
//! free a few seconds costs the host's fault as well: writing 1 GiB of a fresh file took
//! 2.8 s of system time there, against 0.2 s written with `O_DIRECT` (0.5 s of wall
//! time for the disk). No crate we found writes a buffered stream with `O_DIRECT` and
//! falls back where the file system refuses it, hence this small writer.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Block alignment of direct writes: their buffer address, file offset and length are
/// multiples of it. 4 KiB covers the logical block size of every disk and file system
/// Linux has (512 B or 4 KiB).
const ALIGN: usize = 4096;

/// A file created (truncated) and written in large aligned blocks with `O_DIRECT` where the
/// file system takes it, else through the page cache as any file. It buffers itself, so
/// wrapping it in a `BufWriter` only adds a copy.
///
/// [`flush`](Write::flush) writes everything, its last partial block too: padded to a
/// whole block, then the file is cut to its length, and the next full block rewrites it.
/// Dropping it without a flush loses what is buffered, as with a `BufWriter` whose flush
/// failed; call `flush` and check it.
pub struct UncachedFile {
    file: File,
    path: PathBuf,
    /// Whether `file` was opened with `O_DIRECT` (and writes have not been refused).
    direct: bool,
    /// `ALIGN` bytes more than the block buffer, which starts at `start`.
    buf: Vec<u8>,
    start: usize,
    /// Bytes of the block buffer in use.
    len: usize,
    /// The file offset of the block buffer's first byte: everything before it is written.
    offset: u64,
}

impl UncachedFile {
    /// Creates (or truncates) `path` for writing with a block buffer of `capacity` bytes
    /// (rounded up to 4 KiB).
    pub fn create(path: &Path, capacity: usize) -> io::Result<UncachedFile> {
        let (file, direct) = match open(path, true) {
            Ok(file) => (file, true),
            // EINVAL: the file system takes no direct I/O (tmpfs before Linux 6.6, some
            // FUSE file systems).
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(path, false)?, false),
            Err(e) => return Err(e),
        };
        let capacity = capacity.max(1).div_ceil(ALIGN) * ALIGN;
        let buf = vec![0u8; capacity + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        Ok(UncachedFile {
            file,
            path: path.to_owned(),
            direct,
            buf,
            start,
            len: 0,
            offset: 0,
        })
    }

    /// Whether its writes bypass the page cache.
    #[cfg(test)]
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    fn capacity(&self) -> usize {
        self.buf.len() - ALIGN
    }

    /// Writes the first `len` bytes of the block buffer (a multiple of `ALIGN`, or all of
    /// it padded with zeros beyond `self.len`) at `self.offset`.
    fn write_block(&mut self, len: usize) -> io::Result<()> {
        let block = &self.buf[self.start..self.start + len];
        match self.file.write_all_at(block, self.offset) {
            Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => {
                // The device wants a larger alignment than ours: go on through the page
                // cache, from the same offset (a refused write wrote nothing).
                self.file = open_existing(&self.path)?;
                self.direct = false;
                self.file.write_all_at(block, self.offset)
            }
            other => other,
        }
    }

    /// Writes the whole buffer and starts it anew after it.
    fn write_full(&mut self) -> io::Result<()> {
        let len = self.capacity();
        self.write_block(len)?;
        self.offset += len as u64;
        self.len = 0;
        Ok(())
    }
}

impl Write for UncachedFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = self.capacity() - self.len;
        let n = data.len().min(room);
        let at = self.start + self.len;
        self.buf[at..at + n].copy_from_slice(&data[..n]);
        self.len += n;
        if self.len == self.capacity() {
            self.write_full()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        // The last partial block, padded to a whole one for a direct write: the padding is
        // cut off, and the block is written again, whole, when the buffer next fills.
        let padded = self.len.div_ceil(ALIGN) * ALIGN;
        self.buf[self.start + self.len..self.start + padded].fill(0);
        self.write_block(if self.direct { padded } else { self.len })?;
        self.file.set_len(self.offset + self.len as u64)
    }
}

fn open(path: &Path, direct: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path)
}

fn open_existing(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Writes `pieces` with a flush after the pieces `flush_after` names, then a final
    /// flush, and reads the file back.
    fn written(dir: &Path, capacity: usize, pieces: &[Vec<u8>], flush_after: &[bool]) -> Vec<u8> {
        let path = dir.join("out");
        let mut w = UncachedFile::create(&path, capacity).expect("create");
        for (piece, flush) in pieces
            .iter()
            .zip(flush_after.iter().chain(std::iter::repeat(&false)))
        {
            w.write_all(piece).expect("write");
            if *flush {
                w.flush().expect("flush");
            }
        }
        w.flush().expect("flush");
        drop(w);
        std::fs::read(&path).expect("read back")
    }

    /// A directory on the source tree's file system (a disk, where a tmpfs /tmp may take
    /// no direct I/O).
    fn disk_dir() -> tempfile::TempDir {
        tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir")
    }

    #[test]
    fn writes_past_the_page_cache_where_the_file_system_takes_it() {
        let dir = disk_dir();
        let takes_it = open(&dir.path().join("probe"), true).is_ok();
        let mut w = UncachedFile::create(&dir.path().join("out"), 1 << 16).expect("create");
        assert_eq!(w.is_direct(), takes_it);
        // A whole block and a partial one: the direct writes were not refused.
        w.write_all(&[b'a'; ALIGN + 10]).expect("write");
        w.flush().expect("flush");
        assert_eq!(w.is_direct(), takes_it);
        assert_eq!(
            std::fs::read(dir.path().join("out")).expect("read"),
            vec![b'a'; ALIGN + 10]
        );
    }

    #[test]
    fn an_unaligned_stream_with_flushes_between_comes_back_whole() {
        let dir = disk_dir();
        let pieces: Vec<Vec<u8>> = (0..300u32)
            .map(|i| {
                format!(
                    "{{\"line\":{i},\"pad\":\"{}\"}}\n",
                    "x".repeat((i * 37 % 500) as usize)
                )
                .into_bytes()
            })
            .collect();
        let flushes: Vec<bool> = (0..300).map(|i| i % 41 == 7).collect();
        let got = written(dir.path(), 8192, &pieces, &flushes);
        assert_eq!(got, pieces.concat());
    }

    #[test]
    fn an_empty_file_stays_empty_and_an_existing_one_is_truncated() {
        let dir = disk_dir();
        let path = dir.path().join("out");
        std::fs::write(&path, vec![b'z'; 100_000]).expect("seed");
        let mut w = UncachedFile::create(&path, 4096).expect("create");
        w.flush().expect("flush");
        drop(w);
        assert_eq!(std::fs::read(&path).expect("read").len(), 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn prop_what_is_written_is_the_file(
            pieces in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..9000), 0..24),
            flushes in proptest::collection::vec(any::<bool>(), 0..24),
            blocks in 1usize..4,
        ) {
            let dir = disk_dir();
            let got = written(dir.path(), blocks * ALIGN, &pieces, &flushes);
            prop_assert_eq!(got, pieces.concat());
        }
    }
}
