//! The candidate pairs: pigeonhole blocks of the fingerprints, and the pairs within `k`
//! bits in a block's group (verified in place where asked).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int32Builder, Int64Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, IntoPyArrow};
use neardup::index::linear::scan;
use neardup::index::self_join;
use neardup::verify::id_jaccard_at_least;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{
    arrow_err, batch_of, batches_of, fingerprints, ids, int32_column, int64_column,
    optional_binary, optional_bool, optional_int32,
};

/// pigeonhole_blocks(batch, *, bits, k) -> pyarrow.RecordBatch
///
/// The `k + 1` blocks each fingerprint of `batch` (columns `doc`, `fp`, `fp_hi`) is shuffled
/// under: two fingerprints within `k` bits agree exactly on at least one of `k + 1` disjoint
/// blocks (the pigeonhole principle), so grouping by (`block`, `value`) puts every such pair
/// in one group at least. Rows: `block` (int32), `value` (int64: the block's bits), `doc`,
/// `fp`, `fp_hi`, and the batch's `set` (binary), `size` (int32) and `old` (bool) where it
/// has them, so that a group can verify its pairs itself ([`block_pairs`] with
/// `min_jaccard`) or name the records verification needs ([`block_participants`]).
#[pyfunction]
#[pyo3(signature = (batch, *, bits, k))]
pub fn pigeonhole_blocks(
    py: Python<'_>,
    batch: &Bound<'_, PyAny>,
    bits: u32,
    k: u32,
) -> PyResult<Py<PyAny>> {
    let blocks = Blocks::new(bits, k)?;
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let docs = int64_column(&batch, "doc")?;
    let fps = fingerprints(&batch)?;
    let sets = optional_binary(&batch, "set")?;
    let olds = optional_bool(&batch, "old")?;
    let sizes = optional_int32(&batch, "size")?;
    let n = fps.len() * blocks.count as usize;
    let mut block = Int32Builder::with_capacity(n);
    let mut value = Int64Builder::with_capacity(n);
    let mut doc = Int64Builder::with_capacity(n);
    let mut lo = Int64Builder::with_capacity(n);
    let mut hi = Int64Builder::with_capacity(n);
    let set_bytes = sets
        .as_ref()
        .map_or(0, |s| s.value_data().len() * blocks.count as usize);
    let mut set = BinaryBuilder::with_capacity(n, set_bytes);
    let mut old = BooleanBuilder::with_capacity(n);
    let mut size = Int32Builder::with_capacity(n);
    for (i, &fp) in fps.iter().enumerate() {
        for j in 0..blocks.count {
            block.append_value(j as i32);
            value.append_value(blocks.value(fp, j) as i64);
            doc.append_value(docs.value(i));
            lo.append_value(fp as u64 as i64);
            hi.append_value((fp >> 64) as u64 as i64);
            if let Some(s) = &sets {
                set.append_option(s.is_valid(i).then(|| s.value(i)));
            }
            if let Some(o) = &olds {
                old.append_option(o.is_valid(i).then(|| o.value(i)));
            }
            if let Some(z) = &sizes {
                size.append_option(z.is_valid(i).then(|| z.value(i)));
            }
        }
    }
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("block", Arc::new(block.finish())),
        ("value", Arc::new(value.finish())),
        ("doc", Arc::new(doc.finish())),
        ("fp", Arc::new(lo.finish())),
        ("fp_hi", Arc::new(hi.finish())),
    ];
    if sets.is_some() {
        columns.push(("set", Arc::new(set.finish())));
    }
    if sizes.is_some() {
        columns.push(("size", Arc::new(size.finish())));
    }
    if olds.is_some() {
        columns.push(("old", Arc::new(old.finish())));
    }
    let out = batch_of(columns).map_err(arrow_err)?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// block_pairs(rows, *, bits, k, min_jaccard=None) -> pyarrow.RecordBatch
///
/// The pairs within `k` bits among [`pigeonhole_blocks`] rows (a pyarrow Table or
/// RecordBatch), group by group: rows of one (`block`, `value`) are one group, and each pair
/// is emitted only by the lowest block its two fingerprints agree on, so a pair found under
/// several blocks is reported once without a global distinct. The rows may hold any number
/// of groups (a Spark partition of them), in any order. Where they carry `ta`, `tb` (int32)
/// and `side` (int8), a group too large for one task was cut into tiles: (`block`, `value`,
/// `ta`, `tb`) is the group, and where `ta` != `tb` only pairs across the two sides (0 and
/// 1) are reported. Rows: `a`, `b` (docs, `a` < `b`), `distance` (int32).
///
/// With `min_jaccard`, the rows carry each record's verification `set` and the pairs are
/// verified here, where the sets already are: only pairs whose exact Jaccard is at least
/// `min_jaccard` are returned, with a `jaccard` column (float64). Pairs whose set sizes alone
/// rule it out (J <= smaller / larger) are not even compared (a group is scanned in size
/// order, each row against the rows whose sizes it allows), and where the rows carry `old`,
/// pairs of two old records (decided by an earlier run) are skipped. The schema's metadata
/// `candidates` counts the pairs within `k` found before verification (with `min_jaccard`,
/// those the sizes allow).
///
/// A group of `join_from` rows or more (default 131,072) is searched with the library's
/// all-pairs join instead of a scan per row: at 128 bits, one join of each half at `k / 2`.
///
/// With `whole`, the rows are not block rows but tiles of the whole input, one (`block`,
/// `value`) for all of them: every tile pair holds each of its pairs once, so every pair
/// within `k` is reported, with no lowest-block rule.
#[pyfunction]
#[pyo3(signature = (rows, *, bits, k, min_jaccard=None, join_from=JOIN_FROM, whole=false))]
pub fn block_pairs(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    bits: u32,
    k: u32,
    min_jaccard: Option<f64>,
    join_from: usize,
    whole: bool,
) -> PyResult<Py<PyAny>> {
    let mut blocks = Blocks::new(bits, k)?.joined_from(join_from);
    blocks.whole = whole;
    if let Some(t) = min_jaccard {
        check_threshold(t)?;
    }
    let carried = if min_jaccard.is_some() {
        Carried::Sets
    } else {
        Carried::Nothing
    };
    let rows = BlockRows::read(rows, carried)?;
    let (pairs, candidates) = py.detach(|| rows.pairs(&blocks, min_jaccard));
    let mut a = Int64Builder::with_capacity(pairs.len());
    let mut b = Int64Builder::with_capacity(pairs.len());
    let mut d = Int32Builder::with_capacity(pairs.len());
    let mut jaccard = Float64Builder::with_capacity(pairs.len());
    for (x, y, dist, j) in pairs {
        a.append_value(x.min(y));
        b.append_value(x.max(y));
        d.append_value(dist as i32);
        jaccard.append_option(j);
    }
    let mut columns: Vec<(&str, ArrayRef)> = vec![
        ("a", Arc::new(a.finish())),
        ("b", Arc::new(b.finish())),
        ("distance", Arc::new(d.finish())),
    ];
    if min_jaccard.is_some() {
        columns.push(("jaccard", Arc::new(jaccard.finish())));
    }
    counted(py, columns, candidates)
}

/// block_participants(rows, *, bits, k, min_jaccard) -> pyarrow.RecordBatch
///
/// The first of two rounds that verify [`block_pairs`] with a fraction of the sets moved:
/// over block rows that carry each record's set length (`size`, int32) instead of its set
/// (and `old` where it matters), the records that verification in a group would need. Rows:
/// `block`, `value`, `doc`, once each: every record with a candidate in the group
/// (`block`, `value`) whose lowest agreeing block is `block`, whose set sizes allow
/// `min_jaccard` and that is not a pair of two old records. Block rows of just these
/// records, with their sets, give [`block_pairs`] with `min_jaccard` the same pairs as
/// every record's rows would: each pair it verifies has both records here. The schema's
/// metadata `candidates` counts the pairs within `k` the sizes allow, and `join_from` is,
/// as [`block_pairs`]'s with `min_jaccard`.
#[pyfunction]
#[pyo3(signature = (rows, *, bits, k, min_jaccard, join_from=JOIN_FROM))]
pub fn block_participants(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    bits: u32,
    k: u32,
    min_jaccard: f64,
    join_from: usize,
) -> PyResult<Py<PyAny>> {
    let blocks = Blocks::new(bits, k)?.joined_from(join_from);
    check_threshold(min_jaccard)?;
    let rows = BlockRows::read(rows, Carried::Sizes)?;
    let (found, candidates) = py.detach(|| rows.participants(&blocks, min_jaccard));
    let mut block = Int32Builder::with_capacity(found.len());
    let mut value = Int64Builder::with_capacity(found.len());
    let mut doc = Int64Builder::with_capacity(found.len());
    for (b, v, d) in found {
        block.append_value(b);
        value.append_value(v);
        doc.append_value(d);
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("block", Arc::new(block.finish())),
        ("value", Arc::new(value.finish())),
        ("doc", Arc::new(doc.finish())),
    ];
    counted(py, columns, candidates)
}

fn check_threshold(t: f64) -> PyResult<()> {
    if (0.0..=1.0).contains(&t) {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "min_jaccard {t}: a Jaccard threshold is between 0 and 1"
        )))
    }
}

/// `columns` as a pyarrow RecordBatch whose schema's metadata `candidates` is `candidates`.
fn counted(
    py: Python<'_>,
    columns: Vec<(&str, ArrayRef)>,
    candidates: usize,
) -> PyResult<Py<PyAny>> {
    let out = batch_of(columns).map_err(arrow_err)?;
    let metadata = HashMap::from([("candidates".to_owned(), candidates.to_string())]);
    let schema = Arc::new(out.schema().as_ref().clone().with_metadata(metadata));
    let out = out
        .with_schema(schema)
        .map_err(|e| arrow_err(e.to_string()))?;
    Ok(out.into_pyarrow(py)?.unbind())
}

/// What block rows carry beside their fingerprints.
#[derive(Clone, Copy)]
enum Carried {
    /// Nothing: pairs are found, not verified.
    Nothing,
    /// Each record's set length in ids (`size`, int32), and `old` where the rows have it:
    /// enough to leave out the pairs verification would skip unscored.
    Sizes,
    /// Each record's verification `set`, and `old` where the rows have it.
    Sets,
}

/// [`pigeonhole_blocks`] rows read for [`block_pairs`], column by column.
struct BlockRows {
    docs: Vec<i64>,
    fps: Vec<u128>,
    /// (block, value, ta, tb) of each row: its group.
    keys: Vec<(i32, i64, i32, i32)>,
    sides: Vec<i8>,
    /// Each batch's `set` column, and each row's (batch, position) in them.
    set_columns: Vec<arrow_array::BinaryArray>,
    set_at: Vec<(u32, u32)>,
    /// Each row's set length in ids (with [`Carried::Sizes`] and [`Carried::Sets`]).
    sizes: Vec<u32>,
    olds: Vec<bool>,
}

/// A verified pair: (doc, doc, distance, Jaccard when verified).
type Found = (i64, i64, u32, Option<f64>);

impl BlockRows {
    fn read(rows: &Bound<'_, PyAny>, carried: Carried) -> PyResult<BlockRows> {
        let mut out = BlockRows {
            docs: Vec::new(),
            fps: Vec::new(),
            keys: Vec::new(),
            sides: Vec::new(),
            set_columns: Vec::new(),
            set_at: Vec::new(),
            sizes: Vec::new(),
            olds: Vec::new(),
        };
        for (b, batch) in batches_of(rows)?.into_iter().enumerate() {
            let n = batch.num_rows();
            out.docs
                .extend(int64_column(&batch, "doc")?.values().iter().copied());
            out.fps.extend(fingerprints(&batch)?);
            let block = int32_column(&batch, "block")?;
            let value = int64_column(&batch, "value")?;
            let tiles = match (optional_int32(&batch, "ta")?, optional_int32(&batch, "tb")?) {
                (Some(ta), Some(tb)) => {
                    let side = batch
                        .column_by_name("side")
                        .and_then(|c| c.as_primitive_opt::<Int8Type>().cloned())
                        .ok_or_else(|| {
                            PyValueError::new_err(
                                "tiled rows (ta, tb) need an int8 column \"side\"",
                            )
                        })?;
                    out.sides.extend(side.values().iter().copied());
                    Some((ta, tb))
                }
                (None, None) => {
                    out.sides.extend(std::iter::repeat_n(-1, n));
                    None
                }
                _ => {
                    return Err(PyValueError::new_err(
                        "columns \"ta\" and \"tb\" go together",
                    ))
                }
            };
            for i in 0..n {
                let (ta, tb) = tiles
                    .as_ref()
                    .map_or((0, 0), |(ta, tb)| (ta.value(i), tb.value(i)));
                out.keys.push((block.value(i), value.value(i), ta, tb));
            }
            match carried {
                Carried::Nothing => continue,
                Carried::Sets => {
                    let s = optional_binary(&batch, "set")?.ok_or_else(|| {
                        PyValueError::new_err(
                            "min_jaccard needs the verification sets: a binary column \"set\"",
                        )
                    })?;
                    if s.null_count() > 0 {
                        return Err(PyValueError::new_err("column \"set\" has nulls"));
                    }
                    out.set_at.extend((0..n).map(|i| (b as u32, i as u32)));
                    out.sizes
                        .extend((0..n).map(|i| (s.value_length(i) / 4) as u32));
                    out.set_columns.push(s);
                }
                Carried::Sizes => {
                    let s = int32_column(&batch, "size")?;
                    if s.null_count() > 0 || s.values().iter().any(|&v| v < 0) {
                        return Err(PyValueError::new_err(
                            "column \"size\" (a set's length in ids) has nulls or negatives",
                        ));
                    }
                    out.sizes.extend(s.values().iter().map(|&v| v as u32));
                }
            }
            match optional_bool(&batch, "old")? {
                Some(o) => out.olds.extend((0..n).map(|i| o.is_valid(i) && o.value(i))),
                None => out.olds.extend(std::iter::repeat_n(false, n)),
            }
        }
        Ok(out)
    }

    /// Row `r`'s verification set: read in place where its bytes are aligned for `u32`
    /// (Arrow buffers are, and every set is a multiple of 4 bytes), copied otherwise.
    fn set(&self, r: usize) -> std::borrow::Cow<'_, [u32]> {
        let (b, i) = self.set_at[r];
        let bytes = self.set_columns[b as usize].value(i as usize);
        match bytemuck::try_cast_slice::<u8, u32>(bytes) {
            Ok(ids) if cfg!(target_endian = "little") => std::borrow::Cow::Borrowed(ids),
            _ => std::borrow::Cow::Owned(ids(bytes)),
        }
    }

    /// Every group's candidates: `each(group, row, row, distance)` for each pair within
    /// `k` bits whose lowest agreeing block is the group's (and, with `min_jaccard`, whose
    /// set sizes allow it: other pairs are not even compared), groups in key order.
    /// Returns the number of candidates.
    fn candidates(
        &self,
        blocks: &Blocks,
        min_jaccard: Option<f64>,
        mut each: impl FnMut((i32, i64, i32, i32), usize, usize, u32),
    ) -> usize {
        let mut groups: HashMap<(i32, i64, i32, i32), Vec<usize>> = HashMap::new();
        for (i, key) in self.keys.iter().enumerate() {
            groups.entry(*key).or_default().push(i);
        }
        let mut keys: Vec<_> = groups.keys().copied().collect();
        keys.sort_unstable();
        let mut candidates = 0;
        for key in keys {
            let rows = &groups[&key];
            let (block, _, ta, tb) = key;
            let fps: Vec<u128> = rows.iter().map(|&r| self.fps[r]).collect();
            let sides: Vec<i8> = rows.iter().map(|&r| self.sides[r]).collect();
            let sizes: Vec<u32> = match min_jaccard {
                Some(_) => rows.iter().map(|&r| self.sizes[r]).collect(),
                None => Vec::new(),
            };
            let window = min_jaccard.map(|t| Window { sizes: &sizes, t });
            let pairs = group_pairs(
                blocks,
                block as u32,
                &fps,
                (ta != tb).then_some(&sides),
                window,
            );
            candidates += pairs.len();
            for (i, j, distance) in pairs {
                each(key, rows[i], rows[j], distance);
            }
        }
        candidates
    }

    /// Every group's pairs (verified with `min_jaccard`), and the candidates found.
    fn pairs(&self, blocks: &Blocks, min_jaccard: Option<f64>) -> (Vec<Found>, usize) {
        let mut found = Vec::new();
        let candidates = self.candidates(blocks, min_jaccard, |_, x, y, distance| {
            let (dx, dy) = (self.docs[x], self.docs[y]);
            match min_jaccard {
                None => found.push((dx, dy, distance, None)),
                Some(t) => {
                    if self.olds[x] && self.olds[y] {
                        return;
                    }
                    // Failed pairs are dropped, not logged: the merge stops once `t` is
                    // out of reach.
                    if let Some(j) = id_jaccard_at_least(&self.set(x), &self.set(y), t) {
                        found.push((dx, dy, distance, Some(j)));
                    }
                }
            }
        });
        (found, candidates)
    }

    /// (block, value, doc) of every record with a candidate that verification would score
    /// (sizes allowing `min_jaccard`, not two old records) in its lowest agreeing block's
    /// group, once each, sorted; and the candidates found.
    fn participants(&self, blocks: &Blocks, min_jaccard: f64) -> (Vec<(i32, i64, i64)>, usize) {
        // A row is one record in one group (tile), so marking rows names each participant
        // once per tile; only the marked rows are sorted, not one entry per candidate.
        let mut marked = vec![false; self.docs.len()];
        let candidates = self.candidates(blocks, Some(min_jaccard), |_, x, y, _| {
            if !(self.olds[x] && self.olds[y]) {
                marked[x] = true;
                marked[y] = true;
            }
        });
        let mut out: Vec<(i32, i64, i64)> = marked
            .iter()
            .enumerate()
            .filter(|&(_, &m)| m)
            .map(|(r, _)| (self.keys[r].0, self.keys[r].1, self.docs[r]))
            .collect();
        out.sort_unstable();
        // A record in several tiles of a group is one participant.
        out.dedup();
        (out, candidates)
    }
}

/// Whether two sets of these sizes can reach Jaccard `t`: |A & B| / |A | B| is at most
/// min / max, so a pair under `t` by sizes alone is no near-duplicate and is not scored.
/// The margin keeps a pair at exactly `t` from being cut by rounding.
fn sizes_allow(a: usize, b: usize, t: f64) -> bool {
    let (small, large) = (a.min(b), a.max(b));
    large == 0 || small as f64 >= t * large as f64 * (1.0 - 1e-9)
}

/// Groups this large or larger (one side) go through the library's all-pairs join; smaller
/// ones are scanned row by row with the library's vectorised XOR-popcount scan, which is
/// faster below it. Measured at k 16 on 60k real records (groups up to 11.8k rows):
/// scanning every group 1.1 s, the join from 4,096 rows 5.3 s. The join's cost grows with
/// its output, the scan's with the square of the group, so the join stays for the groups
/// of millions a raised `max_bucket` makes.
const JOIN_FROM: usize = 1 << 17;

/// The set sizes a group's pairs must allow a Jaccard threshold with: `sizes[i]` is row
/// i's set length.
#[derive(Clone, Copy)]
struct Window<'a> {
    sizes: &'a [u32],
    t: f64,
}

impl Window<'_> {
    fn allows(&self, i: usize, j: usize) -> bool {
        sizes_allow(self.sizes[i] as usize, self.sizes[j] as usize, self.t)
    }

    /// `rows` in ascending set size.
    fn sorted(&self, mut rows: Vec<usize>) -> Vec<usize> {
        rows.sort_unstable_by_key(|&i| self.sizes[i]);
        rows
    }
}

/// The pairs of one group within `k` bits whose lowest agreeing block is `block` (and whose
/// sizes the `window` allows): (row i, row j, distance).
///
/// With a window, rows are scanned in size order and each only against the rows whose
/// sizes it allows: on 60k real records at k 16 (groups of up to 11,855 rows), 2.8e8
/// comparisons instead of 2.57e9, since most of a group's rows differ too much in length
/// to reach the threshold.
fn group_pairs(
    blocks: &Blocks,
    block: u32,
    fps: &[u128],
    sides: Option<&Vec<i8>>,
    window: Option<Window<'_>>,
) -> Vec<(usize, usize, u32)> {
    let k = blocks.k;
    // Two fingerprints within k bits are within k on their low 64 bits: the library's
    // vectorised scan over the low halves finds every such pair (all of them at 64 bits),
    // and the full distance decides at 128.
    let lows: Vec<u64> = fps.iter().map(|&f| f as u64).collect();
    let mut out = Vec::new();
    let mut keep = |i: usize, j: usize| {
        let distance = (fps[i] ^ fps[j]).count_ones();
        if distance <= k
            && window.is_none_or(|w| w.allows(i, j))
            && (blocks.whole || blocks.lowest_agreeing(fps[i], fps[j]) == Some(block))
        {
            out.push((i, j, distance));
        }
    };
    let all: Vec<usize> = (0..fps.len()).collect();
    match (sides, window) {
        (Some(sides), window) => {
            let (left, right): (Vec<usize>, Vec<usize>) =
                all.into_iter().partition(|&i| sides[i] == 0);
            let right = match window {
                Some(w) => w.sorted(right),
                None => right,
            };
            let right_lows: Vec<u64> = right.iter().map(|&j| lows[j]).collect();
            for &i in &left {
                // The right rows whose sizes `i` allows: a band of the sorted ones.
                let (from, to) = match window {
                    None => (0, right.len()),
                    Some(w) => {
                        let s = w.sizes[i];
                        let below = |&j: &usize| w.sizes[j] < s && !w.allows(i, j);
                        let within = |&j: &usize| w.sizes[j] < s || w.allows(i, j);
                        (right.partition_point(below), right.partition_point(within))
                    }
                };
                scan(&right_lows[from..to], lows[i], k, |at, _| {
                    keep(i, right[from + at]);
                });
            }
        }
        (None, _) if fps.len() >= blocks.join_from => match joined(blocks, fps, &lows) {
            Some(pairs) => {
                for (i, j) in pairs {
                    keep(i, j);
                }
            }
            None => scan_all(&lows, k, keep),
        },
        (None, None) => scan_all(&lows, k, keep),
        (None, Some(w)) => {
            let order = w.sorted(all);
            let sorted_lows: Vec<u64> = order.iter().map(|&i| lows[i]).collect();
            let mut to = 0;
            for (at, &i) in order.iter().enumerate() {
                // Sizes ascend, so the last row `i` allows only moves on.
                to = to.max(at + 1);
                while to < order.len() && w.allows(i, order[to]) {
                    to += 1;
                }
                scan(&sorted_lows[at + 1..to], lows[i], k, |found, _| {
                    keep(i, order[at + 1 + found]);
                });
            }
        }
    }
    out
}

/// The library's all-pairs join over a group: every pair within `k` bits among it (and
/// some further apart, which the caller's distance test drops), or None where the join
/// cannot answer the radius. At 64 bits, one join at `k`. At 128, two fingerprints within
/// `k` are within `k / 2` on one of their halves (the pigeonhole principle over two
/// halves), so a join of the low halves and one of the high halves at `k / 2`: at k 28,
/// halves at 14, where a scan of the low halves at 28 would compare every pair.
fn joined(blocks: &Blocks, fps: &[u128], lows: &[u64]) -> Option<Vec<(usize, usize)>> {
    let pairs = |halves: &[u64], k: u32| -> Option<Vec<(usize, usize)>> {
        let found = self_join(halves, k).ok()?;
        Some(found.iter().map(|p| (p.a as usize, p.b as usize)).collect())
    };
    if blocks.bits == 64 {
        return pairs(lows, blocks.k);
    }
    let highs: Vec<u64> = fps.iter().map(|&f| (f >> 64) as u64).collect();
    let mut found = pairs(lows, blocks.k / 2)?;
    found.extend(pairs(&highs, blocks.k / 2)?);
    found.sort_unstable();
    found.dedup();
    Some(found)
}

/// Every pair (i, j), i < j, of `lows` within `k` bits, by one scan per row.
fn scan_all(lows: &[u64], k: u32, mut keep: impl FnMut(usize, usize)) {
    for i in 0..lows.len() {
        let rest = &lows[i + 1..];
        scan(rest, lows[i], k, |at, _| keep(i, i + 1 + at));
    }
}

/// `k + 1` disjoint blocks over a fingerprint's `bits` bits, as even as they can be.
struct Blocks {
    bits: u32,
    k: u32,
    count: u32,
    /// Groups of this many rows or more are searched by [`joined`].
    join_from: usize,
    /// Rows are tiles of the whole input, not block groups: every pair within `k` counts.
    whole: bool,
}

impl Blocks {
    fn new(bits: u32, k: u32) -> PyResult<Blocks> {
        if bits != 64 && bits != 128 {
            return Err(PyValueError::new_err(format!(
                "bits {bits}: fingerprints have 64 or 128 bits"
            )));
        }
        if k >= bits {
            return Err(PyValueError::new_err(format!(
                "k {k}: a radius under {bits} bits is needed for {} pigeonhole blocks",
                k + 1
            )));
        }
        Ok(Blocks {
            bits,
            k,
            count: k + 1,
            join_from: JOIN_FROM,
            whole: false,
        })
    }

    /// These blocks, with groups of `rows` or more searched by [`joined`].
    fn joined_from(self, rows: usize) -> Blocks {
        Blocks {
            join_from: rows,
            ..self
        }
    }

    /// The mask of block `j`.
    fn mask(&self, j: u32) -> u128 {
        let start = j * self.bits / self.count;
        let end = (j + 1) * self.bits / self.count;
        let width = end - start;
        let ones = if width >= 128 {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        ones << start
    }

    /// Block `j`'s bits as one 64-bit value (folded when the block is wider, as with k = 0
    /// over 128 bits: equal blocks stay equal, and a collision only adds a candidate that
    /// fails the distance test).
    fn value(&self, fp: u128, j: u32) -> u64 {
        let start = j * self.bits / self.count;
        let v = (fp & self.mask(j)) >> start;
        if v >> 64 == 0 {
            v as u64
        } else {
            fold(v)
        }
    }

    /// The lowest block on which `a` and `b` agree, if any.
    fn lowest_agreeing(&self, a: u128, b: u128) -> Option<u32> {
        let diff = a ^ b;
        (0..self.count).find(|&j| diff & self.mask(j) == 0)
    }
}

fn fold(v: u128) -> u64 {
    let lo = v as u64;
    let hi = (v >> 64) as u64;
    lo ^ hi.rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}
