//! Layout planning: for `n` fingerprints and radius `k`, every candidate layout with its
//! expected probes, candidates and memory, and the one to use.
//!
//! Expectations assume uniformly random fingerprints: a key of `p` bits then matches a
//! given fingerprint with probability `2^-p`, so an exact-key probe returns `n / 2^p`
//! candidates on average. Real fingerprints cluster; [`super::IndexStats::largest_bucket`]
//! shows by how much. Every layout listed guarantees exact recall for `k`; layouts that
//! cannot (bands with `b <= k`, permuted tables with `B <= k`) are never listed.
//!
//! The time model is deliberately simple, `probes * PROBE_NS + candidates * CANDIDATE_NS`
//! against `n * SCAN_NS` for the linear scan, with constants measured on the benchmark
//! machine (see `examples/index_bench.rs`); it ranks layouts, it does not promise latency.

use std::fmt;

use super::table::{ball_size, directory_bits, KeySpec};
use super::IndexError;

/// Cost of one table probe (a directory read and the start of a run, usually cache misses).
const PROBE_NS: f64 = 20.0;
/// Cost of verifying one candidate inside a run (streamed, popcount and compare).
const CANDIDATE_NS: f64 = 0.6;
/// Cost per fingerprint of the vectorised linear scan (memory-bound at a million: 8 MB).
const SCAN_NS: f64 = 0.4;
/// Bytes per fingerprint outside the tables: fingerprint and id per row, the id map.
const ROW_BYTES: f64 = 16.0 + 20.0;
/// Bytes per fingerprint per table entry: the fingerprint and a 32-bit row.
const ENTRY_BYTES: f64 = 12.0;
/// The implicit memory budget per fingerprint when a request gives none.
pub const DEFAULT_BYTES_PER_FINGERPRINT: u64 = 256;
/// Tables are built with 32-bit row numbers.
const MAX_ROWS: u64 = u32::MAX as u64 - 1;

/// Expected time of a probing query, in the model's nanoseconds.
pub(crate) fn probe_cost_ns(probes: f64, candidates: f64) -> f64 {
    probes * PROBE_NS + candidates * CANDIDATE_NS
}

/// Expected time of a linear scan over `n` fingerprints, in the model's nanoseconds.
pub(crate) fn scan_cost_ns(n: f64) -> f64 {
    n * SCAN_NS
}

/// `C(n, r)`, saturating.
pub(crate) fn binomial(n: u32, r: u32) -> u64 {
    if r > n {
        return 0;
    }
    let r = r.min(n - r);
    let mut c: u64 = 1;
    for i in 0..r {
        c = c.saturating_mul(u64::from(n - i)) / u64::from(i + 1);
    }
    c
}

/// The `b` contiguous bands of 64 bits, as `(lowest bit, width)`; widths differ by at most 1.
/// Bands and multi-index substrings are both cut this way.
pub(crate) fn band_ranges(bands: u32) -> Vec<(u32, u32)> {
    (0..bands)
        .map(|i| {
            let (lo, hi) = (i * 64 / bands, (i + 1) * 64 / bands);
            (lo, hi - lo)
        })
        .collect()
}

/// Per-substring radii of multi-index hashing for `max_distance`: `k + 1` units spread as
/// evenly as possible, the extra ones on the narrowest substrings (their balls are
/// smallest); a substring with no unit is not probed at all.
pub(crate) fn mih_radii(widths: &[u32], max_distance: u32) -> Vec<Option<u32>> {
    let m = widths.len() as u32;
    let units = max_distance + 1;
    let (base, extra) = (units / m, units % m);
    let mut order: Vec<usize> = (0..widths.len()).collect();
    order.sort_by_key(|&i| (widths[i], i));
    let mut radii = vec![None; widths.len()];
    for (rank, &i) in order.iter().enumerate() {
        let u = base + u32::from((rank as u32) < extra);
        radii[i] = u.checked_sub(1);
    }
    radii
}

/// Tables beyond this are refused: each costs about 12 bytes per fingerprint.
const MAX_TABLES: u64 = 4096;

/// Which blocks make up the tables of a [`PermutedIndex`](super::PermutedIndex): the radius it guarantees, the
/// block count and, optionally, a second level of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PermutedLayout {
    max_distance: u32,
    blocks: u32,
    second_level_blocks: Option<u32>,
}

impl PermutedLayout {
    /// `blocks` blocks, one table per choice of `max_distance` blocks left free.
    ///
    /// # Errors
    /// [`IndexError::MaxDistanceUnsupported`] when `blocks <= max_distance`;
    /// [`IndexError::InvalidLayout`] for more than 64 blocks or 4096 tables.
    pub fn new(max_distance: u32, blocks: u32) -> Result<Self, IndexError> {
        Self::validate(PermutedLayout {
            max_distance,
            blocks,
            second_level_blocks: None,
        })
    }

    /// Like [`PermutedLayout::new`], and the bits of the free blocks are split again into
    /// `second_level_blocks` blocks of which `max_distance` are left free.
    ///
    /// # Errors
    /// As [`PermutedLayout::new`], also when `second_level_blocks <= max_distance` or the
    /// free bits are fewer than `second_level_blocks`.
    pub fn two_level(
        max_distance: u32,
        blocks: u32,
        second_level_blocks: u32,
    ) -> Result<Self, IndexError> {
        Self::validate(PermutedLayout {
            max_distance,
            blocks,
            second_level_blocks: Some(second_level_blocks),
        })
    }

    /// The layout [`choose_layout`] prefers for `fingerprints` at `max_distance`
    /// among permuted layouts only.
    ///
    /// # Errors
    /// [`IndexError::InvalidLayout`] when no permuted layout of at most 4096 tables
    /// answers `max_distance`.
    pub fn for_size(fingerprints: u64, max_distance: u32) -> Result<Self, IndexError> {
        best_permuted(fingerprints, max_distance).ok_or_else(|| {
            IndexError::InvalidLayout(format!(
                "no permuted layout of at most {MAX_TABLES} tables answers max_distance {max_distance}"
            ))
        })
    }

    fn validate(layout: Self) -> Result<Self, IndexError> {
        let k = layout.max_distance;
        if layout.blocks <= k {
            return Err(IndexError::MaxDistanceUnsupported {
                max_distance: k,
                blocks: layout.blocks,
            });
        }
        if layout.blocks > 64 {
            return Err(IndexError::InvalidLayout(format!(
                "blocks = {}: at most 64 blocks of 64 bits",
                layout.blocks
            )));
        }
        if let Some(second) = layout.second_level_blocks {
            if second <= k {
                return Err(IndexError::MaxDistanceUnsupported {
                    max_distance: k,
                    blocks: second,
                });
            }
            if second > layout.free_bits_min() {
                return Err(IndexError::InvalidLayout(format!(
                    "second_level_blocks = {second}: the free blocks hold only {} bits",
                    layout.free_bits_min()
                )));
            }
        }
        if layout.tables() > MAX_TABLES {
            return Err(IndexError::InvalidLayout(format!(
                "{} tables: at most {MAX_TABLES} (use fewer blocks or a multi-index layout)",
                layout.tables()
            )));
        }
        Ok(layout)
    }

    /// The smallest number of bits left in `k` free first-level blocks.
    fn free_bits_min(&self) -> u32 {
        (64 / self.blocks) * self.max_distance
    }

    /// The radius every query up to which is answered exactly.
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// First-level blocks.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// Second-level blocks, if any.
    pub fn second_level_blocks(&self) -> Option<u32> {
        self.second_level_blocks
    }

    /// The number of tables: `C(blocks, k)`, times `C(second_level_blocks, k)`.
    pub fn tables(&self) -> u64 {
        let first = binomial(self.blocks, self.max_distance);
        match self.second_level_blocks {
            Some(second) => first.saturating_mul(binomial(second, self.max_distance)),
            None => first,
        }
    }

    /// The prefix length (exact-match bits) of each table, in table order.
    pub fn prefix_bits(&self) -> Vec<u32> {
        self.prefixes()
            .iter()
            .map(|p| p.iter().map(|r| r.1).sum())
            .collect()
    }

    /// The prefix of every table as bit ranges `(lowest bit, width)`.
    fn prefixes(&self) -> Vec<Vec<(u32, u32)>> {
        let k = self.max_distance as usize;
        let blocks = band_ranges(self.blocks);
        let mut prefixes = Vec::new();
        for free in combinations(blocks.len(), k) {
            let fixed: Vec<(u32, u32)> = (0..blocks.len())
                .filter(|i| !free.contains(i))
                .map(|i| blocks[i])
                .collect();
            match self.second_level_blocks {
                None => prefixes.push(coalesce(fixed)),
                Some(second) => {
                    let free_ranges: Vec<(u32, u32)> = free.iter().map(|&i| blocks[i]).collect();
                    let sub_blocks = split_ranges(&free_ranges, second);
                    for free2 in combinations(sub_blocks.len(), k) {
                        let mut prefix = fixed.clone();
                        for (j, sub) in sub_blocks.iter().enumerate() {
                            if !free2.contains(&j) {
                                prefix.extend_from_slice(sub);
                            }
                        }
                        prefixes.push(coalesce(prefix));
                    }
                }
            }
        }
        prefixes
    }

    pub(crate) fn keys(&self) -> Result<Vec<KeySpec>, IndexError> {
        self.prefixes().iter().map(|p| KeySpec::new(p)).collect()
    }
}

impl std::fmt::Display for PermutedLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bits = self.prefix_bits();
        let (lo, hi) = (
            bits.iter().copied().min().unwrap_or(0),
            bits.iter().copied().max().unwrap_or(0),
        );
        write!(f, "permuted: {} blocks", self.blocks)?;
        if let Some(second) = self.second_level_blocks {
            write!(f, " x {second}")?;
        }
        write!(f, ", {} tables, prefix {lo}", self.tables())?;
        if hi != lo {
            write!(f, "-{hi}")?;
        }
        write!(f, " bits, k <= {}", self.max_distance)
    }
}

/// Every `r`-subset of `0..n`, in lexicographic order.
pub(crate) fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    if r > n {
        return out;
    }
    let mut pick: Vec<usize> = (0..r).collect();
    loop {
        out.push(pick.clone());
        let Some(i) = (0..r).rev().find(|&i| pick[i] != i + n - r) else {
            return out;
        };
        pick[i] += 1;
        for j in i + 1..r {
            pick[j] = pick[j - 1] + 1;
        }
    }
}

/// Splits the bits of `ranges` (taken in order) into `parts` pieces whose sizes differ by
/// at most one; a piece may span several ranges.
fn split_ranges(ranges: &[(u32, u32)], parts: u32) -> Vec<Vec<(u32, u32)>> {
    let total: u32 = ranges.iter().map(|r| r.1).sum();
    (0..parts)
        .map(|p| {
            let (from, to) = (p * total / parts, (p + 1) * total / parts);
            let mut piece = Vec::new();
            let mut offset = 0;
            for &(lo, width) in ranges {
                let (a, b) = (from.max(offset), to.min(offset + width));
                if a < b {
                    piece.push((lo + a - offset, b - a));
                }
                offset += width;
            }
            piece
        })
        .collect()
}

/// Sorts ranges from the top bit down and joins neighbours, so a key extracts fewer
/// pieces (its bit order does not matter for correctness).
fn coalesce(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
    for (lo, width) in ranges {
        match out.last_mut() {
            Some(last) if lo + width == last.0 => {
                last.0 = lo;
                last.1 += width;
            }
            _ => out.push((lo, width)),
        }
    }
    out
}

/// Which index a plan describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutKind {
    /// Scan every fingerprint.
    Linear,
    /// Pigeonhole bands (answers `k < bands`).
    Bands {
        /// The number of bands.
        bands: u32,
    },
    /// Manku's permuted tables.
    Permuted(PermutedLayout),
    /// Multi-index hashing.
    Mih {
        /// The number of substrings.
        substrings: u32,
    },
}

impl fmt::Display for LayoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutKind::Linear => write!(f, "linear scan"),
            LayoutKind::Bands { bands } => write!(f, "bands: {bands}"),
            LayoutKind::Permuted(layout) => {
                let bits = layout.prefix_bits();
                let (lo, hi) = (
                    bits.iter().copied().min().unwrap_or(0),
                    bits.iter().copied().max().unwrap_or(0),
                );
                write!(f, "permuted: {} blocks", layout.blocks())?;
                if let Some(second) = layout.second_level_blocks() {
                    write!(f, " x {second}")?;
                }
                if lo == hi {
                    write!(f, ", prefix {lo}")
                } else {
                    write!(f, ", prefix {lo}-{hi}")
                }
            }
            LayoutKind::Mih { substrings } => write!(f, "multi-index: {substrings} substrings"),
        }
    }
}

/// One candidate layout for a [`PlanRequest`], with its expected costs.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutPlan {
    /// The layout.
    pub kind: LayoutKind,
    /// The planned number of fingerprints.
    pub fingerprints: u64,
    /// The radius planned for (bits).
    pub max_distance: u32,
    /// The largest radius the layout answers exactly.
    pub max_supported_distance: u32,
    /// Lookup tables.
    pub tables: u64,
    /// Expected table probes per query.
    pub probes_per_query: f64,
    /// Expected candidates per probe for the table with the longest key.
    pub min_candidates_per_probe: f64,
    /// Expected candidates per probe for the table with the shortest key.
    pub max_candidates_per_probe: f64,
    /// Expected candidates verified per query.
    pub candidates_per_query: f64,
    /// Expected heap bytes per fingerprint.
    pub bytes_per_fingerprint: f64,
    /// Expected heap bytes in all.
    pub total_bytes: u64,
    /// Modelled query time in nanoseconds (for ranking layouts, not a latency promise).
    pub cost_ns_per_query: f64,
    /// Whether `total_bytes` is within the request's memory budget.
    pub fits_budget: bool,
    /// Whether this crate can build it (tables address at most 2^32 - 1 rows).
    pub buildable: bool,
}

impl fmt::Display for LayoutPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} tables, {:.0} probes/query, {} candidates/probe, {:.1} candidates/query, {:.1} B/fp, {}",
            self.kind,
            self.tables,
            self.probes_per_query,
            candidates_range(self.min_candidates_per_probe, self.max_candidates_per_probe),
            self.candidates_per_query,
            self.bytes_per_fingerprint,
            human_bytes(self.total_bytes),
        )
    }
}

fn candidates_range(lo: f64, hi: f64) -> String {
    if (hi - lo).abs() < 1e-9 * hi.max(1.0) {
        format!("{}", Sig(lo))
    } else {
        format!("{}-{}", Sig(lo), Sig(hi))
    }
}

/// Three significant digits without scientific notation for ordinary sizes.
struct Sig(f64);

impl fmt::Display for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v >= 1e6 {
            write!(f, "{v:.3e}")
        } else if v >= 100.0 || v == v.trunc() {
            write!(f, "{v:.0}")
        } else if v >= 1.0 {
            write!(f, "{v:.1}")
        } else {
            write!(f, "{v:.3}")
        }
    }
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// What to plan for: the number of fingerprints, the radius, an optional memory budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanRequest {
    fingerprints: u64,
    max_distance: u32,
    memory_budget: Option<u64>,
}

impl PlanRequest {
    /// A plan for `fingerprints` fingerprints queried at `max_distance` bits.
    pub fn new(fingerprints: u64, max_distance: u32) -> Self {
        PlanRequest {
            fingerprints,
            max_distance,
            memory_budget: None,
        }
    }

    /// Only layouts within `bytes` of heap qualify. Without a budget the limit is
    /// [`DEFAULT_BYTES_PER_FINGERPRINT`] per fingerprint, so that a layout of hundreds of
    /// tables is never picked just because its model query is a little faster.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = Some(bytes);
        self
    }

    fn effective_budget(&self) -> u64 {
        self.memory_budget.unwrap_or_else(|| {
            self.fingerprints
                .saturating_mul(DEFAULT_BYTES_PER_FINGERPRINT)
                .max(1 << 20)
        })
    }
}

/// Every layout that answers the request's radius exactly, cheapest modelled query first.
///
/// ```
/// use neardup::index::{plan_layouts, PlanRequest};
/// let plans = plan_layouts(&PlanRequest::new(1 << 30, 3));
/// assert!(plans.iter().all(|p| p.max_supported_distance >= 3));
/// println!("{}", neardup::index::format_plans(&plans));
/// ```
pub fn plan_layouts(request: &PlanRequest) -> Vec<LayoutPlan> {
    let (n, k) = (request.fingerprints, request.max_distance);
    let mut plans = vec![linear_plan(n, k)];
    for bands in k + 1..=(k + 4).min(64) {
        plans.push(table_plan(
            request,
            LayoutKind::Bands { bands },
            &uniform_widths(bands),
            &vec![Some(0); bands as usize],
            bands - 1,
        ));
    }
    for layout in permuted_layouts(k) {
        let bits = layout.prefix_bits();
        plans.push(table_plan(
            request,
            LayoutKind::Permuted(layout),
            &bits,
            &vec![Some(0); bits.len()],
            k,
        ));
    }
    for substrings in 1..=(k + 1).min(64) {
        let widths = uniform_widths(substrings);
        let radii = mih_radii(&widths, k);
        if radii
            .iter()
            .zip(&widths)
            .map(|(r, &w)| r.map_or(0.0, |r| ball_size(w, r)))
            .sum::<f64>()
            > 1e9
        {
            continue;
        }
        plans.push(table_plan(
            request,
            LayoutKind::Mih { substrings },
            &widths,
            &radii,
            64,
        ));
    }
    let budget = request.effective_budget();
    for plan in &mut plans {
        plan.fits_budget = plan.total_bytes <= budget;
    }
    plans.sort_by(|a, b| a.cost_ns_per_query.total_cmp(&b.cost_ns_per_query));
    plans
}

/// The cheapest buildable layout within the budget.
///
/// # Errors
/// [`IndexError::OverBudget`] when no layout fits the memory budget.
pub fn choose_layout(request: &PlanRequest) -> Result<LayoutPlan, IndexError> {
    plan_layouts(request)
        .into_iter()
        .find(|p| p.fits_budget && p.buildable)
        .ok_or(IndexError::OverBudget {
            max_distance: request.max_distance,
            fingerprints: request.fingerprints,
            budget_bytes: request.effective_budget(),
        })
}

/// The plans as an aligned text table, the chosen (first fitting) one marked with `*`.
pub fn format_plans(plans: &[LayoutPlan]) -> String {
    let chosen = plans.iter().position(|p| p.fits_budget && p.buildable);
    let header = [
        "",
        "layout",
        "tables",
        "probes/q",
        "cand/probe",
        "cand/q",
        "B/fp",
        "memory",
        "model ns/q",
    ];
    let mut rows: Vec<[String; 9]> = vec![header.map(str::to_owned)];
    for (i, p) in plans.iter().enumerate() {
        let mark = if Some(i) == chosen {
            "*"
        } else if !p.fits_budget {
            "-"
        } else {
            ""
        };
        rows.push([
            mark.to_owned(),
            p.kind.to_string(),
            p.tables.to_string(),
            Sig(p.probes_per_query).to_string(),
            candidates_range(p.min_candidates_per_probe, p.max_candidates_per_probe),
            Sig(p.candidates_per_query).to_string(),
            format!("{:.1}", p.bytes_per_fingerprint),
            human_bytes(p.total_bytes),
            Sig(p.cost_ns_per_query).to_string(),
        ]);
    }
    let mut widths = [0usize; 9];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 1 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str("* chosen, - over the memory budget; expectations assume uniform fingerprints\n");
    out
}

/// The widths of `parts` contiguous pieces of 64 bits.
fn uniform_widths(parts: u32) -> Vec<u32> {
    band_ranges(parts).iter().map(|r| r.1).collect()
}

/// Every permuted layout worth considering for radius `k` (at most 4096 tables).
pub(crate) fn permuted_layouts(k: u32) -> Vec<PermutedLayout> {
    let mut out = Vec::new();
    for blocks in k + 1..=(k + 8).min(64) {
        if let Ok(layout) = PermutedLayout::new(k, blocks) {
            out.push(layout);
        }
    }
    if k > 0 {
        for blocks in k + 1..=(k + 3).min(64) {
            for second in k + 1..=(k + 4).min(64) {
                if let Ok(layout) = PermutedLayout::two_level(k, blocks, second) {
                    out.push(layout);
                }
            }
        }
    }
    out
}

fn linear_plan(n: u64, k: u32) -> LayoutPlan {
    let bytes = ROW_BYTES;
    LayoutPlan {
        kind: LayoutKind::Linear,
        fingerprints: n,
        max_distance: k,
        max_supported_distance: 64,
        tables: 0,
        probes_per_query: 0.0,
        min_candidates_per_probe: n as f64,
        max_candidates_per_probe: n as f64,
        candidates_per_query: n as f64,
        bytes_per_fingerprint: bytes,
        total_bytes: (bytes * n as f64) as u64,
        cost_ns_per_query: scan_cost_ns(n as f64),
        fits_budget: true,
        buildable: true,
    }
}

/// A table layout whose table `i` has a key of `key_bits[i]` bits probed within
/// `radii[i]` (`None`: not probed).
fn table_plan(
    request: &PlanRequest,
    kind: LayoutKind,
    key_bits: &[u32],
    radii: &[Option<u32>],
    max_supported_distance: u32,
) -> LayoutPlan {
    let n = request.fingerprints;
    let nf = n as f64;
    let mut probes = 0.0;
    let mut candidates = 0.0;
    let mut per_probe_min = f64::INFINITY;
    let mut per_probe_max: f64 = 0.0;
    let mut bytes = ROW_BYTES;
    for (&bits, radius) in key_bits.iter().zip(radii) {
        let per_probe = nf / 2f64.powi(bits as i32);
        if let Some(r) = *radius {
            let balls = ball_size(bits, r);
            probes += balls;
            candidates += balls * per_probe;
            per_probe_min = per_probe_min.min(per_probe);
            per_probe_max = per_probe_max.max(per_probe);
        }
        let d = directory_bits(bits, usize::try_from(n).unwrap_or(usize::MAX));
        bytes += ENTRY_BYTES + 4.0 * 2f64.powi(d as i32) / nf.max(1.0);
    }
    LayoutPlan {
        kind,
        fingerprints: n,
        max_distance: request.max_distance,
        max_supported_distance,
        tables: key_bits.len() as u64,
        probes_per_query: probes,
        min_candidates_per_probe: if per_probe_min.is_finite() {
            per_probe_min
        } else {
            0.0
        },
        max_candidates_per_probe: per_probe_max,
        candidates_per_query: candidates,
        bytes_per_fingerprint: bytes,
        total_bytes: (bytes * nf) as u64,
        cost_ns_per_query: probe_cost_ns(probes, candidates),
        fits_budget: true,
        buildable: n <= MAX_ROWS,
    }
}

/// The cheapest permuted layout for `n` fingerprints at radius `k`.
pub(crate) fn best_permuted(n: u64, k: u32) -> Option<PermutedLayout> {
    plan_layouts(&PlanRequest::new(n, k))
        .into_iter()
        .find_map(|p| match p.kind {
            LayoutKind::Permuted(layout) => Some(layout),
            _ => None,
        })
}

/// The cheapest substring count for `n` fingerprints at radius `k`.
pub(crate) fn best_mih_substrings(n: u64, k: u32) -> u32 {
    plan_layouts(&PlanRequest::new(n, k))
        .into_iter()
        .find_map(|p| match p.kind {
            LayoutKind::Mih { substrings } => Some(substrings),
            _ => None,
        })
        .unwrap_or(4)
}

#[cfg(test)]
mod tests;
