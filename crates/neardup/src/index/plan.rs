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

use super::mih::mih_radii;
use super::permuted::PermutedLayout;
use super::table::{ball_size, directory_bits};
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
    super::bands::band_ranges(parts)
        .iter()
        .map(|r| r.1)
        .collect()
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
mod tests {
    use super::*;

    fn permuted(plans: &[LayoutPlan], blocks: u32, second: Option<u32>) -> &LayoutPlan {
        plans
            .iter()
            .find(|p| {
                matches!(p.kind, LayoutKind::Permuted(l)
                    if l.blocks() == blocks && l.second_level_blocks() == second)
            })
            .expect("layout listed")
    }

    /// Manku et al., Example 3.1: f = 64, k = 3, 2^34 (8B) fingerprints.
    #[test]
    fn manku_example_3_1() {
        let plans = plan_layouts(&PlanRequest::new(1 << 34, 3));
        // 20 tables: 6 blocks of 11,11,11,11,10,10 bits, p = 31..33, at most 2^(34-31) = 8.
        let twenty = permuted(&plans, 6, None);
        assert_eq!(twenty.tables, 20);
        assert_eq!(twenty.max_candidates_per_probe, 8.0);
        assert_eq!(twenty.min_candidates_per_probe, 2.0);
        // 16 tables: 4 blocks choose 1, the other 48 bits in 4 blocks choose 1, p = 28.
        let sixteen = permuted(&plans, 4, Some(4));
        assert_eq!(sixteen.tables, 16);
        assert_eq!(sixteen.max_candidates_per_probe, 64.0);
        // 10 tables: 5 blocks of 13,13,13,13,12 bits, p = 25 or 26: 256 to 512.
        let ten = permuted(&plans, 5, None);
        assert_eq!(ten.tables, 10);
        assert_eq!(ten.min_candidates_per_probe, 256.0);
        assert_eq!(ten.max_candidates_per_probe, 512.0);
        // 4 tables: 4 blocks of 16 bits, p = 16: 2^18 = 256K.
        let four = permuted(&plans, 4, None);
        assert_eq!(four.tables, 4);
        assert_eq!(four.max_candidates_per_probe, 262_144.0);
        // And 8B rows exceed what this crate builds.
        assert!(!ten.buildable);
    }

    #[test]
    fn every_listed_layout_guarantees_the_radius() {
        for k in 0..=16 {
            for plan in plan_layouts(&PlanRequest::new(1_000_000, k)) {
                assert!(plan.max_supported_distance >= k, "{plan}");
                if let LayoutKind::Bands { bands } = plan.kind {
                    assert!(bands > k);
                }
            }
        }
    }

    #[test]
    fn budget_excludes_large_layouts_and_can_refuse() {
        let request = PlanRequest::new(100_000_000, 3).memory_budget(24 << 30);
        let chosen = choose_layout(&request).expect("something fits 24 GiB");
        assert!(chosen.total_bytes <= 24 << 30);
        let roomy =
            choose_layout(&PlanRequest::new(100_000_000, 3).memory_budget(1 << 40)).expect("plan");
        assert!(roomy.tables >= chosen.tables);
        let tiny = PlanRequest::new(1_000_000_000, 3).memory_budget(1 << 20);
        assert!(matches!(
            choose_layout(&tiny),
            Err(IndexError::OverBudget { .. })
        ));
        let text = format_plans(&plan_layouts(&request));
        assert!(text.contains('*'));
    }

    #[test]
    fn larger_radii_pick_multi_index_hashing() {
        let chosen = choose_layout(&PlanRequest::new(1_000_000, 10)).expect("plan");
        assert!(matches!(chosen.kind, LayoutKind::Mih { .. }), "{chosen}");
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial(64, 3), 41_664);
        assert_eq!(binomial(5, 2), 10);
        assert_eq!(binomial(3, 5), 0);
    }
}
