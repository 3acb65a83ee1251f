//! Reads: the match step every query shares (verify a run, skip what an earlier table
//! reported, resolve the row), the single query, the scans, and the choice of the kernel
//! each query routine is compiled for.

use super::super::linear::scan;
use super::super::{sort_matches, Match, QueryStats};
use super::key::for_each_in_ball;
use super::memory::{prefetch, prefetch_pair, prefetch_run};
use super::rows::TableSet;
use super::sorted::{is_live, Run};

/// Tables up to this many are probed in two phases by exact-key queries.
const EXACT_BATCH: usize = 24;

/// Runs up to this length are verified by a plain loop; longer ones use the vectorised scan.
const SHORT_RUN: usize = 32;

/// The key radius each table is probed with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Radii<'a> {
    /// Every table, exact key (radius 0): bands and permuted tables.
    Exact,
    /// Per table; `None` skips the table (multi-index hashing).
    PerTable(&'a [Option<u32>]),
}

impl Radii<'_> {
    #[inline(always)]
    pub(super) fn radius(self, table: usize) -> Option<u32> {
        match self {
            Radii::Exact => Some(0),
            Radii::PerTable(radii) => radii[table],
        }
    }
}

/// One query as each of its probes sees it: the fingerprint, the radius, and the key radii
/// the tables are probed with (which decide what an earlier table has reported).
#[derive(Debug, Clone, Copy)]
pub(super) struct Query<'a> {
    pub(super) fp: u64,
    pub(super) max_distance: u32,
    pub(super) radii: Radii<'a>,
}

/// A query routine (one query, or a batch), compiled once per instruction set by [`run`].
/// Its `run` is `#[inline(always)]` in every implementation, so that the
/// `#[target_feature]` functions below compile the whole routine with their features.
pub(super) trait Routine {
    /// What the routine returns.
    type Output;
    /// Whether the routine gains from AVX-512's vector popcount (it verifies runs that
    /// come from cache, so verification is the work); the others stop at AVX2.
    const HAS_WIDE: bool = false;
    /// The routine; `WIDE` verifies with AVX-512 (set only where the CPU has it).
    fn run<const WIDE: bool>(self) -> Self::Output;
}

/// Runs `routine` compiled for the best instruction set this CPU has: the default x86-64
/// target has neither hardware popcount nor AVX2, and the verification loops are most of a
/// query's instructions.
#[inline]
pub(super) fn run<R: Routine>(routine: R) -> R::Output {
    #[cfg(target_arch = "x86_64")]
    {
        if R::HAS_WIDE && super::super::linear::has_wide_popcount() {
            // SAFETY: the CPU supports the features `run_wide` is compiled for.
            return unsafe { run_wide(routine) };
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU supports the features `run_avx2` is compiled for.
            return unsafe { run_avx2(routine) };
        }
    }
    routine.run::<false>()
}

/// [`run`]'s routine with hardware popcount and AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn run_avx2<R: Routine>(routine: R) -> R::Output {
    routine.run::<false>()
}

/// [`run`]'s routine with AVX-512's vector popcount: eight candidates at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,avx512f,avx512vpopcntdq")]
unsafe fn run_wide<R: Routine>(routine: R) -> R::Output {
    routine.run::<true>()
}

/// [`TableSet::query`] as a [`Routine`].
struct Single<'a> {
    set: &'a TableSet,
    query: Query<'a>,
    limit: usize,
    out: &'a mut Vec<Match>,
}

impl Routine for Single<'_> {
    type Output = QueryStats;

    #[inline(always)]
    fn run<const WIDE: bool>(self) -> QueryStats {
        self.set
            .query_body::<WIDE>(self.query, self.limit, self.out)
    }
}

impl TableSet {
    /// Looks up every table with the given per-table key radius (`None`: skip the table),
    /// scans the buffer, and fills `out` with the first `limit` matches by (distance, id),
    /// sorted.
    ///
    /// A fingerprint found in table `t` is reported there only if no earlier probed table
    /// `j` also reaches it (its key is then within `radius[j]` of the query's key in `j`,
    /// so `j` reported it): every id is reported once, with no hash set.
    pub(crate) fn query(
        &self,
        q: u64,
        max_distance: u32,
        radii: Radii<'_>,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        let query = Query {
            fp: q,
            max_distance,
            radii,
        };
        run(Single {
            set: self,
            query,
            limit,
            out,
        })
    }

    #[inline(always)]
    fn query_body<const WIDE: bool>(
        &self,
        query: Query<'_>,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        out.clear();
        let q = query.fp;
        let mut stats = QueryStats::default();
        let mut push = |t: usize, at: usize, distance: u32| {
            self.push_match(self.tables[t].rows[at], distance, out);
        };
        match query.radii {
            Radii::Exact if self.tables.len() <= EXACT_BATCH => {
                // Exact-key lookups are independent, so they go in three passes over the
                // tables (directory prefetch, directory read and run prefetch, verify):
                // the cache and TLB misses of all tables overlap instead of queueing.
                let mut slots = [0usize; EXACT_BATCH];
                for (slot, table) in slots.iter_mut().zip(self.tables.iter()) {
                    *slot = table.slot(table.key.extract(q));
                    prefetch(&table.dir, *slot);
                }
                let mut runs = [Run::default(); EXACT_BATCH];
                for ((run, table), &slot) in runs.iter_mut().zip(self.tables.iter()).zip(&slots) {
                    *run = table.locate(slot, table.key.extract(q));
                    prefetch_run(&table.fps, run.start, run.end);
                }
                for (t, &run) in runs[..self.tables.len()].iter().enumerate() {
                    self.verify_run::<WIDE, _>(&query, t, run, q, &mut stats, |at, d| {
                        push(t, at, d)
                    });
                }
            }
            _ => {
                let mut runs: Vec<(Run, u64)> = Vec::new();
                for (t, table) in self.tables.iter().enumerate() {
                    let Some(radius) = query.radii.radius(t) else {
                        continue;
                    };
                    let center = table.key.extract(q);
                    if radius == 0 {
                        let run = table.locate(table.slot(center), center);
                        self.verify_run::<WIDE, _>(&query, t, run, q, &mut stats, |at, d| {
                            push(t, at, d)
                        });
                        continue;
                    }
                    // Only multi-index tables are probed with a radius; their keys are
                    // single ranges, so a key maps back to a fingerprint by a shift.
                    // The directory (small, cached) is read for the whole ball first;
                    // then each run is prefetched AHEAD probes before it is verified,
                    // so the cache misses of successive probes overlap.
                    const AHEAD: usize = 16;
                    runs.clear();
                    for_each_in_ball(center, table.key.bits(), radius, &mut |key| {
                        let run = table.locate(table.slot(key), key);
                        runs.push((run, table.key.fingerprint_of(key)));
                    });
                    for (run, _) in runs.iter().take(AHEAD) {
                        prefetch_pair(&table.fps, run.start);
                    }
                    for (i, &(run, probe)) in runs.iter().enumerate() {
                        if let Some((ahead, _)) = runs.get(i + AHEAD) {
                            prefetch_pair(&table.fps, ahead.start);
                        }
                        self.verify_run::<WIDE, _>(&query, t, run, probe, &mut stats, |at, d| {
                            push(t, at, d)
                        });
                    }
                }
            }
        }
        self.scan_buffer(q, query.max_distance, out, &mut stats);
        self.finish(out, stats, limit)
    }

    /// The match step of every query path: verifies `run` of table `t` (one probe, whose
    /// key `probe` has) and calls `found(position, distance)` for its new hits. Entries
    /// with another key (`(fp ^ probe) & run.check != 0`) are skipped, and so are hits an
    /// earlier table also reaches (it reported them). The caller resolves a hit's row and
    /// id, at once ([`push_match`](Self::push_match)) or after a prefetch.
    #[inline(always)]
    pub(super) fn verify_run<const WIDE: bool, F: FnMut(usize, u32)>(
        &self,
        query: &Query<'_>,
        t: usize,
        Run {
            start,
            mut end,
            check,
        }: Run,
        probe: u64,
        stats: &mut QueryStats,
        mut found: F,
    ) {
        let (q, max_distance) = (query.fp, query.max_distance);
        let table = &self.tables[t];
        stats.probes += 1;
        if let Some(cap) = self.candidate_cap {
            if end - start > cap {
                end = start + cap;
                stats.capped_probes += 1;
            }
        }
        stats.candidates += (end - start) as u64;
        let mut hit = |at: usize, distance: u32| {
            let fp = table.fps[start + at];
            if (fp ^ probe) & check != 0 {
                return; // shares the directory slot, not the key
            }
            let diff = fp ^ q;
            let seen = match query.radii {
                Radii::Exact => self.tables[..t]
                    .iter()
                    .any(|other| diff & other.key.mask() == 0),
                Radii::PerTable(radii) => self.tables[..t].iter().zip(radii).any(|(other, r)| {
                    r.is_some_and(|r| (diff & other.key.mask()).count_ones() <= r)
                }),
            };
            if !seen {
                found(start + at, distance);
            }
        };
        let run = &table.fps[start..end];
        #[cfg(target_arch = "x86_64")]
        if WIDE {
            // SAFETY: `WIDE` is set only where the CPU has AVX-512's vector popcount.
            unsafe { super::super::linear::scan_wide(run, q, max_distance, &mut hit) };
            return;
        }
        if run.len() <= SHORT_RUN {
            for (at, &fp) in run.iter().enumerate() {
                let distance = (fp ^ q).count_ones();
                if distance <= max_distance {
                    hit(at, distance);
                }
            }
        } else {
            scan(run, q, max_distance, hit);
        }
    }

    /// Appends the match of a table hit in `row` unless the row was removed.
    #[inline(always)]
    pub(super) fn push_match(&self, row: u32, distance: u32, out: &mut Vec<Match>) {
        if self.row_is_live(row) {
            out.push(Match {
                distance,
                id: self.row_ids[row as usize],
            });
        }
    }

    /// Answers by scanning every row (used when probing would cost more than a scan).
    pub(crate) fn query_by_scan(
        &self,
        q: u64,
        max_distance: u32,
        limit: usize,
        out: &mut Vec<Match>,
    ) -> QueryStats {
        out.clear();
        let mut stats = QueryStats::default();
        // The row store holds removed rows too (zeroed): the bitmap, not the tombstone
        // count, says which are live.
        self.scan_into(&self.row_fps, q, max_distance, out, &mut stats, |row| {
            is_live(&self.live, row as u32).then_some(row as u32)
        });
        self.finish(out, stats, limit)
    }

    /// Scans the buffer and a frozen buffer being merged.
    #[inline(always)]
    pub(super) fn scan_buffer(
        &self,
        q: u64,
        max_distance: u32,
        out: &mut Vec<Match>,
        stats: &mut QueryStats,
    ) {
        let buffers = self.pending.iter().map(|p| (&p.fps, &p.rows));
        for (fps, rows) in buffers.chain([(&self.buffer_fps, &self.buffer_rows)]) {
            // Removal takes a row out of the buffers at once: every buffered row is live.
            self.scan_into(fps, q, max_distance, out, stats, |at| Some(rows[at]));
        }
    }

    /// Scans `fps` and appends the match of each hit at position `at` whose row is
    /// `row_of(at)` (`None`: removed).
    #[inline(always)]
    fn scan_into(
        &self,
        fps: &[u64],
        q: u64,
        max_distance: u32,
        out: &mut Vec<Match>,
        stats: &mut QueryStats,
        row_of: impl Fn(usize) -> Option<u32>,
    ) {
        if fps.is_empty() {
            return;
        }
        stats.candidates += fps.len() as u64;
        scan(fps, q, max_distance, |at, distance| {
            if let Some(row) = row_of(at) {
                out.push(Match {
                    distance,
                    id: self.row_ids[row as usize],
                });
            }
        });
    }

    /// Counts the capped probes and puts `out` in (distance, id) order, keeping `limit`.
    #[inline(always)]
    pub(super) fn finish(
        &self,
        out: &mut Vec<Match>,
        stats: QueryStats,
        limit: usize,
    ) -> QueryStats {
        self.count_capped(&stats);
        sort_matches(out, limit);
        stats
    }
}
