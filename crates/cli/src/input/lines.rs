//! Input cut into lines: blocks read (or mapped) and the lines handed out as slices of them.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use super::mmap::{map_plain_file, release_pages};
use super::{Item, Origin, Reject};

/// How much of an input is read at a time; lines are handed out as slices of these blocks.
pub(super) const BLOCK_BYTES: usize = 1 << 20;

/// The bytes a run of lines is handed out from: a block read into memory, or a range of a
/// mapped file (which hands its pages back when the last of its lines is dropped).
#[derive(Debug)]
pub(super) enum Block {
    Read(Vec<u8>),
    Mapped {
        map: Arc<memmap2::Mmap>,
        range: std::ops::Range<usize>,
    },
}

impl std::ops::Deref for Block {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Block::Read(bytes) => bytes,
            Block::Mapped { map, range } => &map[range.clone()],
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // Unmap the pages that lie wholly inside this block, so the process does not keep
        // the whole input resident (they stay in the page cache). Pages shared with the next
        // or the last block stay mapped: one of them may still be in use. No borrow of these
        // bytes outlives the block: every line handed out from it holds the block.
        if let Block::Mapped { map, range } = self {
            release_pages(map, range.clone());
        }
    }
}

/// One line's bytes (without its line end), shared with the block it was read from: lines
/// are handed on without a copy or an allocation of their own.
#[derive(Debug, Clone)]
pub struct LineBytes {
    pub(super) block: Arc<Block>,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl LineBytes {
    /// For a line of a mapped file, the map and the line's byte range in it.
    pub fn mapped(&self) -> Option<(&Arc<memmap2::Mmap>, std::ops::Range<usize>)> {
        match &*self.block {
            Block::Mapped { map, range } => {
                Some((map, range.start + self.start..range.start + self.end))
            }
            Block::Read(_) => None,
        }
    }

    /// The same line in a block of its own, so that holding it does not hold the (much
    /// larger) block it was read from: a copy of a line read into memory; for a mapped
    /// file, a block of the line's range alone (no copy: when the larger block is dropped
    /// its pages are released, and read again from the page cache if this line is).
    pub fn detached(&self) -> LineBytes {
        let block = match self.mapped() {
            Some((map, range)) => Block::Mapped {
                map: map.clone(),
                range,
            },
            None => Block::Read(self.to_vec()),
        };
        LineBytes {
            block: Arc::new(block),
            start: 0,
            end: self.len(),
        }
    }

    /// The same line without leading and trailing ASCII whitespace.
    pub fn trimmed(mut self) -> LineBytes {
        let bytes: &[u8] = &self.block;
        while self.start < self.end && bytes[self.start].is_ascii_whitespace() {
            self.start += 1;
        }
        while self.end > self.start && bytes[self.end - 1].is_ascii_whitespace() {
            self.end -= 1;
        }
        self
    }
}

impl std::ops::Deref for LineBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.block[self.start..self.end]
    }
}

/// Hands every non-blank line of `block` (from `first_line` on) to `f`; returns the number
/// of lines it held.
fn emit_lines(
    block: Block,
    file: &Arc<str>,
    first_line: u64,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let block = Arc::new(block);
    let bytes = &block[..];
    let mut line_no = first_line;
    let mut start = 0;
    while start < bytes.len() {
        let next = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i + 1);
        let mut end = next;
        while end > start && matches!(bytes[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        line_no += 1;
        // A blank line is no record.
        if !bytes[start..end].iter().all(u8::is_ascii_whitespace) {
            f(Item::Line {
                file: file.clone(),
                line: line_no,
                bytes: LineBytes {
                    block: block.clone(),
                    start,
                    end,
                },
            })?;
        }
        start = next;
    }
    Ok(line_no - first_line)
}

/// Calls `f` with every non-blank line of the file at `path`, mapped (or read in blocks
/// like the inputs); for files this program wrote itself, so a read error ends the walk
/// with an error.
///
/// # Errors
/// A read error, or what `f` returns.
pub fn for_each_line(
    path: &Path,
    mut f: impl FnMut(LineBytes) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let mut f = |item| match item {
        Item::Line { bytes, .. } => f(bytes),
        Item::Done(Err(reject)) => anyhow::bail!("{reject}"),
        Item::Done(Ok(record)) => anyhow::bail!("{}: not a line", record.origin),
        Item::Document { origin, .. } => anyhow::bail!("{origin}: not a line"),
    };
    match map_plain_file(path) {
        Some(map) => emit_mapped_lines(map, &name, BLOCK_BYTES, &mut f),
        None => {
            let file = File::open(path).with_context(|| format!("opening {name}"))?;
            read_lines_in_blocks(file, &name, BLOCK_BYTES, &mut f)
        }
    }
}

/// Hands on the lines of a mapped file, `block_bytes` (more for a longer line) at a time.
pub(super) fn emit_mapped_lines(
    map: memmap2::Mmap,
    name: &str,
    block_bytes: usize,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let file: Arc<str> = Arc::from(name);
    let map = Arc::new(map);
    let mut line_no = 0u64;
    let mut start = 0;
    while start < map.len() {
        let want = (start + block_bytes.max(1)).min(map.len());
        // Blocks end after a line end (or at the end of the file).
        let end = match memchr::memchr(b'\n', &map[want - 1..]) {
            Some(i) => want + i,
            None => map.len(),
        };
        let block = Block::Mapped {
            map: map.clone(),
            range: start..end,
        };
        line_no += emit_lines(block, &file, line_no, f)?;
        start = end;
    }
    Ok(())
}

/// Reads `block_bytes` at a time (more for a longer line) and hands on each block's lines.
pub(super) fn read_lines_in_blocks(
    mut reader: impl Read,
    name: &str,
    block_bytes: usize,
    f: &mut impl FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let file: Arc<str> = Arc::from(name);
    let mut line_no = 0u64;
    // The tail of the last block after its last line end: the start of the next block.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut block = Vec::with_capacity((carry.len() * 2).max(block_bytes));
        block.append(&mut carry);
        let want = (block.capacity() - block.len()) as u64;
        // read_to_end on a Take reads until the block is full or the input ends, without
        // zeroing the block first; what it read before an error is in the block.
        let eof = match (&mut reader).take(want).read_to_end(&mut block) {
            Ok(n) => (n as u64) < want,
            Err(e) => {
                // What was read whole is still used; the rest is one reject.
                let complete = memchr::memrchr(b'\n', &block).map_or(0, |i| i + 1);
                block.truncate(complete);
                line_no += emit_lines(Block::Read(block), &file, line_no, f)?;
                return f(Item::Done(Err(Reject {
                    origin: Origin {
                        file: file.to_string(),
                        line: Some(line_no + 1),
                    },
                    id: None,
                    reason: format!("cannot read: {e}"),
                })));
            }
        };
        if !eof {
            match memchr::memrchr(b'\n', &block) {
                Some(i) => carry.extend_from_slice(&block[i + 1..]),
                // A line longer than the block: read on into a larger one.
                None => {
                    carry = block;
                    continue;
                }
            }
            block.truncate(block.len() - carry.len());
        }
        line_no += emit_lines(Block::Read(block), &file, line_no, f)?;
        if eof {
            return Ok(());
        }
    }
}
