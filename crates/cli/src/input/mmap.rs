//! Plain input files mapped into memory, and their pages handed back once read.

use std::fs::File;
use std::path::Path;

use super::open::{compression, Compression};

/// A plain (uncompressed) regular file mapped into memory, or `None` when it is not one or
/// cannot be mapped (it is then read as a stream, which reports any error).
///
/// Mapping spares copying every byte from the page cache into a buffer and zeroing fresh
/// buffers for it: on a 1 GB JSONL input that was a tenth of the CPU time of a dedup run, which
/// reads its input twice. As with any mapped file (ripgrep maps files too), the input must not
/// be truncated while it is read: `--no-mmap` reads it as a stream instead.
pub(super) fn map_plain_file(path: &Path) -> Option<memmap2::Mmap> {
    if path == Path::new("-") || compression(path) != Compression::Plain {
        return None;
    }
    let file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    // SAFETY: the map is only read, and only while the file is not truncated (documented
    // above and at --no-mmap); lines are handed out as shared borrows of it.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let _ = map.advise(memmap2::Advice::Sequential);
    Some(map)
}

/// Unmaps the pages of `map` that lie wholly inside `range` (they stay in the page cache,
/// and come back from the file, unchanged, if read again). The caller holds no borrow of
/// those bytes.
pub fn release_pages(map: &memmap2::Mmap, range: std::ops::Range<usize>) {
    let page = page_size();
    let start = range.start.div_ceil(page) * page;
    let end = if range.end >= map.len() {
        map.len()
    } else {
        range.end / page * page
    };
    if start < end {
        // SAFETY: no borrow of these bytes is alive (the caller's contract), and pages of a
        // file mapping read after MADV_DONTNEED are read from the file again.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }
}

fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}
