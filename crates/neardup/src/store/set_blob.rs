//! Verification sets as the stores keep them: sorted 32-bit shingle ids, plain or
//! bit-packed.
//!
//! A set's ids are hashes, so its sorted ids are spread evenly over the 32-bit range and the
//! gaps between them need about 32 - log2(n) bits, not 32. Stored as the gaps, bit-packed
//! in blocks (the `bitpacking` crate: Lemire's SIMD bit packing, the format tantivy's
//! posting lists use), a set takes about a fifth less: 400 MB of sets of the 1 GB bench run
//! packed to 313 MB, which the store writes (and a batch run's commits copy through the
//! kernel) a fifth less of.
//!
//! Layout of a packed blob, little-endian: the marker `FF FF FF FF`, the number of ids
//! `n`, the first id, then the ids as gaps from the id before them (the first id's gap from
//! itself is 0): blocks of 128 (`BitPacker4x`) as long as 128 are left, then blocks of 32
//! (`BitPacker1x`), the last one padded with gaps of 0; each block is a byte, its bits per
//! gap, and the packed gaps. A set that packs no smaller (a few ids) is kept as plain ids,
//! four bytes each, as every set was before: a plain blob never starts with the marker,
//! unless it is the single id `u32::MAX` (four bytes, where a packed blob has at least 12),
//! because plain ids are strictly increasing. The SQLite store writes packed sets (its
//! schema version says so, so that older releases refuse it); the Redis store, which has
//! no version of its own, writes plain ones. Both read either.

use std::borrow::Cow;

use bitpacking::{BitPacker, BitPacker1x, BitPacker4x};

const MARKER: [u8; 4] = [0xFF; 4];
const HEADER: usize = 12;

/// The packed blob of a verification set (sorted, distinct ids), or its plain one where
/// packing saves nothing.
pub(crate) fn packed_blob(ids: &[u32]) -> Cow<'_, [u8]> {
    debug_assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted, distinct ids");
    if ids.len() >= 2 {
        if let Some(packed) = pack(ids) {
            return Cow::Owned(packed);
        }
    }
    ids_as_blob(ids)
}

/// The plain blob of a verification set: its ids as little-endian `u32`s, borrowed where
/// the machine is little-endian (a batch's sets are megabytes, each copied once more into
/// the store's pages).
pub(crate) fn ids_as_blob(ids: &[u32]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        Cow::Borrowed(bytemuck::cast_slice(ids))
    } else {
        Cow::Owned(ids.iter().flat_map(|i| i.to_le_bytes()).collect())
    }
}

/// The packed blob of `ids` (at least two), or `None` when it would be no smaller.
fn pack(ids: &[u32]) -> Option<Vec<u8>> {
    let plain_len = ids.len() * 4;
    let mut out = Vec::with_capacity(plain_len);
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(&u32::try_from(ids.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&ids[0].to_le_bytes());
    let mut initial = ids[0];
    let (wide, narrow) = (BitPacker4x::new(), BitPacker1x::new());
    let mut rest = ids;
    while rest.len() >= BitPacker4x::BLOCK_LEN {
        let (block, tail) = rest.split_at(BitPacker4x::BLOCK_LEN);
        initial = push_block(&wide, initial, block, &mut out);
        rest = tail;
        if out.len() >= plain_len {
            return None;
        }
    }
    while !rest.is_empty() {
        let take = rest.len().min(BitPacker1x::BLOCK_LEN);
        let mut block = [0u32; BitPacker1x::BLOCK_LEN];
        block[..take].copy_from_slice(&rest[..take]);
        // Padded with the last id: gaps of 0, which cost no bits of their own.
        block[take..].fill(rest[take - 1]);
        initial = push_block(&narrow, initial, &block, &mut out);
        rest = &rest[take..];
    }
    (out.len() < plain_len).then_some(out)
}

/// Appends one block (its bits per gap, then its packed gaps from `initial`); answers its
/// last id.
fn push_block<P: BitPacker>(packer: &P, initial: u32, block: &[u32], out: &mut Vec<u8>) -> u32 {
    let bits = packer.num_bits_sorted(initial, block);
    out.push(bits);
    let at = out.len();
    out.resize(at + P::compressed_block_size(bits), 0);
    packer.compress_sorted(initial, block, &mut out[at..], bits);
    block[block.len() - 1]
}

/// The ids of a blob [`packed_blob`] or [`ids_as_blob`] wrote. A blob that is neither
/// says what is wrong with it.
pub(crate) fn blob_to_ids(blob: &[u8]) -> Result<Vec<u32>, String> {
    if blob.len() <= 4 || blob[..4] != MARKER {
        if !blob.len().is_multiple_of(4) {
            return Err(format!("{} bytes are no whole number of ids", blob.len()));
        }
        return Ok(blob
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect());
    }
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(blob.get(at..at + 4)?.try_into().ok()?))
    };
    let (Some(n), Some(first)) = (word(4), word(8)) else {
        return Err(format!(
            "a packed set of {} bytes has no header",
            blob.len()
        ));
    };
    let n = n as usize;
    // A block takes at least its byte of bits per gap and holds at most 128 ids: a count
    // beyond what the blob can hold is refused before anything is allocated for it.
    if n > (blob.len() - HEADER) * BitPacker4x::BLOCK_LEN {
        return Err(format!(
            "a packed set of {} bytes claims {n} ids",
            blob.len()
        ));
    }
    let mut ids = vec![0u32; n];
    let (wide, narrow) = (BitPacker4x::new(), BitPacker1x::new());
    let (mut at, mut done, mut initial) = (HEADER, 0usize, first);
    while n - done >= BitPacker4x::BLOCK_LEN {
        let block = &mut ids[done..done + BitPacker4x::BLOCK_LEN];
        at = take_block(&wide, blob, at, initial, block)?;
        initial = block[BitPacker4x::BLOCK_LEN - 1];
        done += BitPacker4x::BLOCK_LEN;
    }
    while done < n {
        let mut block = [0u32; BitPacker1x::BLOCK_LEN];
        at = take_block(&narrow, blob, at, initial, &mut block)?;
        let take = (n - done).min(BitPacker1x::BLOCK_LEN);
        ids[done..done + take].copy_from_slice(&block[..take]);
        initial = block[BitPacker1x::BLOCK_LEN - 1];
        done += take;
    }
    if at != blob.len() {
        return Err(format!(
            "a packed set of {n} ids has {} bytes too many",
            blob.len() - at
        ));
    }
    Ok(ids)
}

/// Unpacks the block at `at` into `block`; answers where the next one starts.
fn take_block<P: BitPacker>(
    packer: &P,
    blob: &[u8],
    at: usize,
    initial: u32,
    block: &mut [u32],
) -> Result<usize, String> {
    let Some(&bits) = blob.get(at) else {
        return Err(format!(
            "a packed set ends at byte {at}, before its last block"
        ));
    };
    if bits > 32 {
        return Err(format!(
            "a packed block at byte {at} has {bits} bits per id"
        ));
    }
    let len = P::compressed_block_size(bits);
    let Some(packed) = blob.get(at + 1..at + 1 + len) else {
        return Err(format!("a packed block at byte {at} is cut short"));
    };
    packer.decompress_sorted(initial, packed, block, bits);
    Ok(at + 1 + len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn large_sets_pack_to_about_a_fifth_less_and_small_ones_stay_plain() {
        // 1,000 ids spread like hashes: the gaps need about 22 bits, plus a block's spread.
        let mut s = 7u64;
        let ids = sorted(
            (0..1000)
                .map(|_| {
                    s = crate::text::shingle::fmix64(s.wrapping_add(0x9e37_79b9_7f4a_7c15));
                    (s >> 32) as u32
                })
                .collect(),
        );
        let blob = packed_blob(&ids);
        assert_eq!(blob[..4], MARKER);
        let ratio = blob.len() as f64 / (ids.len() * 4) as f64;
        assert!((0.7..0.85).contains(&ratio), "{ratio}");
        assert_eq!(blob_to_ids(&blob).unwrap(), ids);
        // Three spread-out ids pack no smaller: plain.
        let few = [5, 1 << 20, u32::MAX];
        assert_eq!(packed_blob(&few).as_ref(), ids_as_blob(&few).as_ref());
        assert_eq!(blob_to_ids(&packed_blob(&few)).unwrap(), few);
    }

    #[test]
    fn plain_blobs_of_earlier_releases_still_read() {
        let ids = [1u32, 0x0102_0304, u32::MAX];
        let blob = [1, 0, 0, 0, 4, 3, 2, 1, 255, 255, 255, 255];
        assert_eq!(blob_to_ids(&blob).unwrap(), ids);
        assert_eq!(blob_to_ids(&[255; 4]).unwrap(), [u32::MAX]);
        assert!(blob_to_ids(&[]).unwrap().is_empty());
    }

    #[test]
    fn damaged_blobs_are_refused_not_misread() {
        let ids: Vec<u32> = (0..300u32).map(|i| i * 1000 + 7).collect();
        let blob = packed_blob(&ids).into_owned();
        assert_eq!(blob[..4], MARKER);
        for cut in [5, 11, 12, 13, blob.len() - 1] {
            assert!(blob_to_ids(&blob[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = blob.clone();
        longer.push(0);
        assert!(blob_to_ids(&longer).is_err());
        let mut bad_bits = blob.clone();
        bad_bits[HEADER] = 33;
        assert!(blob_to_ids(&bad_bits).is_err());
        let mut huge = blob;
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(blob_to_ids(&huge).is_err());
        assert!(blob_to_ids(&[1, 2, 3]).is_err());
    }

    proptest! {
        #[test]
        fn prop_sets_read_back_as_written(
            v in prop::collection::vec(any::<u32>(), 0..700),
            dense in prop::collection::vec(0u32..5000, 0..700),
            base in any::<u32>(),
        ) {
            // Spread-out ids, dense runs (small gaps), and runs near the top of the range.
            for ids in [
                sorted(v.clone()),
                sorted(dense.iter().map(|d| base.saturating_add(*d)).collect()),
                sorted(dense.iter().map(|d| u32::MAX - d).collect()),
            ] {
                let blob = packed_blob(&ids);
                prop_assert!(blob.len() <= ids.len() * 4);
                prop_assert_eq!(blob_to_ids(&blob).unwrap(), ids);
            }
        }
    }
}
