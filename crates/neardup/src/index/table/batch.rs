//! Batches of queries: exact keys in prefetched groups or in sorted sweeps of each table,
//! and multi-index radii by sorted sweeps of each table's probes. Each is a [`Routine`]
//! built on the match step of `query.rs`.

use super::super::{sort_matches, Match, QueryStats};
use super::key::for_each_in_ball;
use super::memory::{prefetch, prefetch_run};
use super::query::{run, Query, Radii, Routine};
use super::rows::TableSet;
use super::sorted::Run;

/// A sorted batch orders its queries by at most this many top bits of their directory slot.
const SORT_BITS: u32 = 16;

/// The shortest batch answered by a sorted sweep of the tables.
const SORTED_BATCH_MIN: usize = 1 << 17;

/// The fewest tabled fingerprints for which a sorted sweep beats grouped random probes
/// (measured at k 3: 1.3x at 4M and 10M with batches of 2^18, 1.5-1.9x at 30M, 1.9-3x at
/// 100M with 2M; at 1M, where four tables stay within what the TLB maps, 0.8x).
const SORTED_TABLE_MIN: usize = 1 << 22;

#[cfg(test)]
thread_local! {
    /// Makes every exact-key batch on this thread take sorted sweeps of this many queries
    /// (tests).
    pub(crate) static FORCE_SORTED_SWEEP: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// A radius batch's probes of one table as (query, key), the same by slot, and the slots'
/// starts.
type ProbeBuffers = (Vec<(u32, u32)>, Vec<(u32, u32)>, Vec<u32>);

/// Queries a radius batch sweeps the tables for at once: their probes (8 bytes each, a few
/// hundred per query and table at radius 10 to 16) stay within a few megabytes; measured
/// as fast from 256 to 2,048 on 150,000 fingerprints at k 14.
const RADII_BATCH: usize = 1024;

/// Sorts `items` by the low `bits` bits of `key`, stably: least significant byte first, one
/// counting pass per byte. Each pass writes 256 streams, which the caches absorb, where one
/// pass over 2^16 buckets would miss on nearly every write once they outgrow L2.
fn radix_sort<T: Copy + Default>(items: &mut Vec<T>, bits: u32, key: impl Fn(&T) -> u32) {
    let mut sorted = vec![T::default(); items.len()];
    let mut counts = [0usize; 257];
    for shift in (0..bits).step_by(8) {
        counts.fill(0);
        for item in items.iter() {
            counts[((key(item) >> shift) & 0xFF) as usize + 1] += 1;
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        for item in items.iter() {
            let at = &mut counts[((key(item) >> shift) & 0xFF) as usize];
            sorted[*at] = *item;
            *at += 1;
        }
        std::mem::swap(items, &mut sorted);
    }
}

/// [`TableSet::query_radii_batch`] as a [`Routine`].
struct RadiiBatch<'a> {
    set: &'a TableSet,
    queries: &'a [u64],
    max_distance: u32,
    radii: &'a [Option<u32>],
    limit: usize,
    out: &'a mut Vec<Vec<Match>>,
}

impl Routine for RadiiBatch<'_> {
    type Output = QueryStats;
    const HAS_WIDE: bool = true;

    #[inline(always)]
    fn run<const WIDE: bool>(self) -> QueryStats {
        let RadiiBatch {
            set,
            queries,
            max_distance,
            radii,
            limit,
            out,
        } = self;
        out.resize_with(queries.len(), Vec::new);
        out.truncate(queries.len());
        out.iter_mut().for_each(Vec::clear);
        let mut stats = QueryStats::default();
        // The thread's probe buffers, kept from batch to batch (fresh ones were a megabyte
        // of new pages per batch), unless a wide radius grew them past 8 MiB each.
        thread_local! {
            static PROBES: std::cell::RefCell<ProbeBuffers> = std::cell::RefCell::default();
        }
        PROBES.with_borrow_mut(|buffers| {
            for (group, found) in queries.chunks(RADII_BATCH).zip(out.chunks_mut(RADII_BATCH)) {
                set.query_radii_group::<WIDE>(
                    group,
                    max_distance,
                    radii,
                    found,
                    buffers,
                    &mut stats,
                );
            }
            if buffers.0.capacity() > 1 << 20 {
                *buffers = ProbeBuffers::default();
            }
        });
        for (&q, found) in queries.iter().zip(out.iter_mut()) {
            set.scan_buffer(q, max_distance, found, &mut stats);
            sort_matches(found, limit);
        }
        set.count_capped(&stats);
        stats
    }
}

/// [`TableSet::query_batch_exact`] as a [`Routine`]: `queries` (the first at position
/// `base`) in prefetched groups, or by a sorted sweep of each table.
struct ExactBatch<'a> {
    set: &'a TableSet,
    queries: &'a [u64],
    base: usize,
    max_distance: u32,
    sweep: bool,
    out: &'a mut Vec<(usize, Match)>,
}

impl Routine for ExactBatch<'_> {
    type Output = QueryStats;

    #[inline(always)]
    fn run<const WIDE: bool>(self) -> QueryStats {
        if self.sweep {
            self.sorted::<WIDE>()
        } else {
            self.grouped::<WIDE>()
        }
    }
}

impl ExactBatch<'_> {
    /// Exact-key queries of a large batch, table by table in key order: each table is
    /// swept once from its start to its end instead of being probed at random, so the
    /// batch's lookups share pages (and TLB entries) and the hardware prefetchers follow
    /// them. A table many times larger than what the TLB maps costs a page walk per random
    /// probe, which bounds the grouped path below at about 20 million probes a second on
    /// this kind of machine; the sweep does not pay it. Appends to `out` what
    /// [`TableSet::query_batch_exact`] fills it with, positions counted
    /// from `base`.
    #[inline(always)]
    fn sorted<const WIDE: bool>(self) -> QueryStats {
        /// Probes issued ahead of the one being verified (directory line, then run).
        const AHEAD: usize = 16;
        let (set, out) = (self.set, self.out);
        let mut total = QueryStats::default();
        // The batch in the table's key order: (query, its key, position, its slot), so that
        // the sweep extracts no key twice.
        let mut order: Vec<(u64, u64, u32, u32)> = Vec::with_capacity(self.queries.len());
        // A hit: (query, row, distance).
        let mut hits: Vec<(u32, u32, u32)> = Vec::new();
        let batch_bits = usize::BITS - self.queries.len().leading_zeros();
        for (t, table) in set.tables.iter().enumerate() {
            if table.fps.is_empty() {
                continue;
            }
            // Sorted by their slot's top bits: buckets of a few queries each are fine enough
            // for locality.
            let bits = table.dir_bits.min(batch_bits).min(SORT_BITS);
            let shift = table.dir_bits - bits;
            order.clear();
            order.extend(self.queries.iter().enumerate().map(|(qi, &q)| {
                let key = table.key.extract(q);
                (q, key, qi as u32, table.slot(key) as u32)
            }));
            radix_sort(&mut order, bits, |o| o.3 >> shift);
            for &(.., slot) in order.iter().take(AHEAD) {
                prefetch(&table.dir, slot as usize);
            }
            for (i, &(q, key, qi, slot)) in order.iter().enumerate() {
                if let Some(&(.., ahead)) = order.get(i + AHEAD) {
                    prefetch(&table.dir, ahead as usize);
                }
                if let Some(&(.., near)) = order.get(i + AHEAD / 2) {
                    prefetch(&table.fps, table.dir[near as usize] as usize);
                }
                let run = table.locate(slot as usize, key);
                let query = exact(q, self.max_distance);
                set.verify_run::<WIDE, _>(&query, t, run, q, &mut total, |at, distance| {
                    hits.push((qi, table.rows[at], distance))
                });
            }
        }
        // Ids in row order (a sweep of the row store, not a miss per hit), then grouped by
        // query (a counting sort again) and reported in (distance, id) order per query, with
        // the insert buffer's.
        let high_row = hits.iter().map(|h| h.1).max().unwrap_or(0);
        radix_sort(&mut hits, u32::BITS - high_row.leading_zeros(), |h| h.1);
        let mut counts = vec![0u32; self.queries.len() + 1];
        for &(qi, row, _) in &hits {
            if set.row_is_live(row) {
                counts[qi as usize + 1] += 1;
            }
        }
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        let mut grouped = vec![Match { distance: 0, id: 0 }; counts[self.queries.len()] as usize];
        for &(qi, row, distance) in &hits {
            if set.row_is_live(row) {
                let at = &mut counts[qi as usize];
                grouped[*at as usize] = Match {
                    distance,
                    id: set.row_ids[row as usize],
                };
                *at += 1;
            }
        }
        drop(hits);
        let mut one = Vec::new();
        let mut start = 0;
        for (qi, &q) in self.queries.iter().enumerate() {
            let end = counts[qi] as usize;
            let first = out.len();
            out.extend(grouped[start..end].iter().map(|&m| (self.base + qi, m)));
            start = end;
            set.finish_batch_query(
                q,
                self.base + qi,
                first,
                self.max_distance,
                out,
                &mut one,
                &mut total,
            );
        }
        set.count_capped(&total);
        total
    }

    /// Exact-key queries in groups of `GROUP`, each in stages (see below). Appends to
    /// `out` what [`TableSet::query_batch_exact`] fills it with, positions
    /// counted from `base`.
    #[inline(always)]
    fn grouped<const WIDE: bool>(self) -> QueryStats {
        let (set, out) = (self.set, self.out);
        // Large enough that a stage's misses (GROUP * tables directory lines, then two to
        // three run lines each) keep the memory system busy, small enough that the lines
        // prefetched in one stage are still in L1/L2 when the next stage reads them.
        const GROUP: usize = 32;
        let tables = set.tables.len();
        let mut total = QueryStats::default();
        let mut slots = vec![0usize; GROUP * tables];
        let mut runs = vec![Run::default(); GROUP * tables];
        // A verified hit waiting for its id: (query in group, table, position, distance).
        let mut pending: Vec<(u32, u32, u32, u32)> = Vec::new();
        let mut rows: Vec<u32> = Vec::new();
        let mut one = Vec::new();
        for (group_no, group) in self.queries.chunks(GROUP).enumerate() {
            // Five stages over the whole group, each issuing the memory accesses the next
            // one needs: directory lines, run lines, row numbers of the hits, their ids.
            // A query's accesses are a chain of dependent misses; across the group they
            // are independent, so every stage pays one memory latency for all of them.
            for (qi, &q) in group.iter().enumerate() {
                for (t, table) in set.tables.iter().enumerate() {
                    let slot = table.slot(table.key.extract(q));
                    prefetch(&table.dir, slot);
                    slots[qi * tables + t] = slot;
                }
            }
            for (qi, &q) in group.iter().enumerate() {
                for (t, table) in set.tables.iter().enumerate() {
                    let run = table.locate(slots[qi * tables + t], table.key.extract(q));
                    prefetch_run(&table.fps, run.start, run.end);
                    runs[qi * tables + t] = run;
                }
            }
            pending.clear();
            for (qi, &q) in group.iter().enumerate() {
                let query = exact(q, self.max_distance);
                for (t, table) in set.tables.iter().enumerate() {
                    let run = runs[qi * tables + t];
                    set.verify_run::<WIDE, _>(&query, t, run, q, &mut total, |at, distance| {
                        prefetch(&table.rows, at);
                        pending.push((qi as u32, t as u32, at as u32, distance));
                    });
                }
            }
            rows.clear();
            for &(_, t, at, _) in &pending {
                let row = set.tables[t as usize].rows[at as usize];
                prefetch(&set.row_ids, row as usize);
                rows.push(row);
            }
            let mut next = pending.iter().zip(&rows).peekable();
            for (qi, &q) in group.iter().enumerate() {
                let at = self.base + group_no * GROUP + qi;
                let first = out.len();
                while let Some((&(_, _, _, distance), &row)) =
                    next.next_if(|((pqi, ..), _)| *pqi as usize == qi)
                {
                    if set.row_is_live(row) {
                        let id = set.row_ids[row as usize];
                        out.push((at, Match { distance, id }));
                    }
                }
                set.finish_batch_query(q, at, first, self.max_distance, out, &mut one, &mut total);
            }
        }
        set.count_capped(&total);
        total
    }
}

impl TableSet {
    /// Answers many queries that probe the tables with radii (multi-index hashing) at once:
    /// `out[i]` gets what [`query`](Self::query) puts in its `out` for `queries[i]`.
    ///
    /// A query at radius 10 to 16 probes a few hundred runs of each table, each a cache
    /// miss of its own when queries come one by one. Here each table's probes of all the
    /// queries are ordered by directory slot and verified in that order: the table is read
    /// in one forward sweep, and a run that several queries probe is read once.
    pub(crate) fn query_radii_batch(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        limit: usize,
        out: &mut Vec<Vec<Match>>,
    ) -> QueryStats {
        run(RadiiBatch {
            set: self,
            queries,
            max_distance,
            radii,
            limit,
            out,
        })
    }

    /// The table matches of a group of [`query_radii_batch`](Self::query_radii_batch)'s
    /// queries into `out` (one per query, unsorted), with buffers for the probes.
    #[inline(always)]
    fn query_radii_group<const WIDE: bool>(
        &self,
        queries: &[u64],
        max_distance: u32,
        radii: &[Option<u32>],
        out: &mut [Vec<Match>],
        (probes, sorted, starts): &mut ProbeBuffers,
        stats: &mut QueryStats,
    ) {
        for (t, table) in self.tables.iter().enumerate() {
            let Some(radius) = radii[t] else {
                continue;
            };
            // Keys of multi-index tables of two or more substrings fit in 32 bits (the
            // caller asks one query at a time of a single table).
            debug_assert!(table.key.bits() <= 32);
            probes.clear();
            for (qi, &q) in queries.iter().enumerate() {
                for_each_in_ball(table.key.extract(q), table.key.bits(), radius, &mut |key| {
                    probes.push((qi as u32, key as u32));
                });
            }
            // A counting sort by the slot's top bits (a few probes per bucket are in
            // order enough): a count, then a scatter.
            let bits = table.dir_bits.min(SORT_BITS);
            let shift = table.key.bits() - bits;
            starts.clear();
            starts.resize((1 << bits) + 1, 0);
            for &(_, key) in probes.iter() {
                starts[(key >> shift) as usize + 1] += 1;
            }
            for b in 1..starts.len() {
                starts[b] += starts[b - 1];
            }
            sorted.clear();
            sorted.resize(probes.len(), (0, 0));
            for &probe in probes.iter() {
                let at = &mut starts[(probe.1 >> shift) as usize];
                sorted[*at as usize] = probe;
                *at += 1;
            }
            for &(qi, key) in sorted.iter() {
                let key = u64::from(key);
                let query = Query {
                    fp: queries[qi as usize],
                    max_distance,
                    radii: Radii::PerTable(radii),
                };
                let run = table.locate(table.slot(key), key);
                let probe = table.key.fingerprint_of(key);
                let found = &mut out[qi as usize];
                self.verify_run::<WIDE, _>(&query, t, run, probe, stats, |at, distance| {
                    self.push_match(table.rows[at], distance, found);
                });
            }
        }
    }

    /// Exact-key queries in groups: the directory reads and run prefetches of a whole
    /// group go out before any run is verified, so up to `GROUP * tables` cache misses
    /// overlap. Fills `out` with `(query position, match)`.
    pub(crate) fn query_batch_exact(
        &self,
        queries: &[u64],
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
    ) -> QueryStats {
        out.clear();
        let Some(sweep) = self.sorted_sweep(queries.len()) else {
            return run(ExactBatch {
                set: self,
                queries,
                base: 0,
                max_distance,
                sweep: false,
                out,
            });
        };
        let mut total = QueryStats::default();
        for (n, part) in queries.chunks(sweep).enumerate() {
            total.add(run(ExactBatch {
                set: self,
                queries: part,
                base: n * sweep,
                max_distance,
                sweep: true,
                out,
            }));
        }
        total
    }

    /// How many queries of a batch of `len` each sorted sweep answers, when the batch is
    /// answered by sorted sweeps ([`ExactBatch`]): when it is long enough to sweep
    /// the tables densely and the tables are too large for random probes to stay within
    /// what the TLB maps. Sweeps hold about one query per 32 table entries: denser gains
    /// little, and the sweep's own arrays then outgrow the caches.
    fn sorted_sweep(&self, len: usize) -> Option<usize> {
        #[cfg(test)]
        if let Some(sweep) = FORCE_SORTED_SWEEP.with(std::cell::Cell::get) {
            return Some(sweep);
        }
        // Positions are kept as u32.
        ((SORTED_BATCH_MIN..=u32::MAX as usize).contains(&len)
            && self.tabled_rows as usize >= SORTED_TABLE_MIN)
            .then(|| SORTED_BATCH_MIN.max(self.tabled_rows as usize / 32))
    }

    /// Ends query `q` (at position `at`) of a batch whose table matches are `out[first..]`:
    /// adds the insert buffer's matches and puts them all in (distance, id) order.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn finish_batch_query(
        &self,
        q: u64,
        at: usize,
        first: usize,
        max_distance: u32,
        out: &mut Vec<(usize, Match)>,
        scratch: &mut Vec<Match>,
        stats: &mut QueryStats,
    ) {
        if self.buffered() > 0 {
            scratch.clear();
            self.scan_buffer(q, max_distance, scratch, stats);
            out.extend(scratch.iter().map(|&m| (at, m)));
        }
        if out.len() - first > 1 {
            out[first..].sort_unstable_by_key(|&(_, m)| m);
        }
    }
}

/// An exact-key query (every table probed at its key).
#[inline(always)]
fn exact(fp: u64, max_distance: u32) -> Query<'static> {
    Query {
        fp,
        max_distance,
        radii: Radii::Exact,
    }
}
