//! Boilerplate exclusion: shingles that are site furniture (navigation, footers, disclaimers).
//!
//! A shingle found on a large share of one host's pages votes identically in every page of
//! that host and makes unrelated pages look alike (seed 000). The set is learned per host by
//! the pipeline; here it is only a set of shingle hashes to leave out.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::text::sort::{sort_hashes, SortBuffers};

/// Shingle hashes are already uniformly distributed, so the set needs no second hash.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; fold anything else defensively.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A set of shingle hashes keyed without rehashing.
pub(crate) type ShingleSet = HashSet<u64, BuildHasherDefault<IdentityHasher>>;

/// Shingles to exclude before fingerprinting and before Jaccard verification.
#[derive(Debug, Clone, Default)]
pub struct Boilerplate {
    shingles: ShingleSet,
    /// One bit per value of a shingle's top bits, set where a boilerplate shingle has them:
    /// most shingles of a record are not boilerplate, and the bit (the filter fits in the
    /// first-level cache) answers for them without a probe of the set.
    filter: Vec<u64>,
    /// How far a shingle is shifted right to index `filter`.
    shift: u32,
}

impl Boilerplate {
    /// An empty set: nothing is excluded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the set from shingle hashes (as returned by
    /// [`SimHasher::shingle_set`](crate::SimHasher::shingle_set)).
    pub fn from_hashes(hashes: impl IntoIterator<Item = u64>) -> Self {
        let shingles: ShingleSet = hashes.into_iter().collect();
        // About 16 filter bits per shingle (a 6% chance that a bit set by one answers for
        // another shingle), 512 bytes to 4 MiB.
        let bits = (shingles.len() * 16)
            .next_power_of_two()
            .clamp(1 << 12, 1 << 25);
        let shift = 64 - bits.trailing_zeros();
        let mut filter = vec![0u64; bits / 64];
        for &h in &shingles {
            let b = (h >> shift) as usize;
            filter[b / 64] |= 1 << (b % 64);
        }
        Boilerplate {
            shingles,
            filter,
            shift,
        }
    }

    /// Whether `shingle` is boilerplate.
    #[inline]
    pub fn contains(&self, shingle: u64) -> bool {
        let Some(&word) = self.filter.get((shingle >> self.shift) as usize / 64) else {
            return false; // the empty set
        };
        word & (1 << ((shingle >> self.shift) % 64)) != 0 && self.shingles.contains(&shingle)
    }

    /// The number of boilerplate shingles.
    pub fn len(&self) -> usize {
        self.shingles.len()
    }

    /// Whether nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }

    /// Iterates over the excluded shingle hashes, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.shingles.iter().copied()
    }

    /// Removes the boilerplate shingles from `shingles`, keeping the order of the rest.
    pub fn retain_content(&self, shingles: &mut Vec<u64>) {
        if !self.shingles.is_empty() {
            shingles.retain(|&h| !self.contains(h));
        }
    }
}

/// Default minimum number of pages a boilerplate shingle is on.
pub const DEFAULT_MIN_COUNT: u64 = 10;

/// Learns per-host boilerplate from a sample of each host's pages (seed 000): a shingle on
/// more than `max_share` of a host's pages is furniture.
///
/// Only the first `sample_pages` pages of each host are counted, so memory stays bounded on
/// large crawls; a shingle on more than 5% of pages shows up in such a sample all the same.
#[derive(Debug)]
pub struct BoilerplateLearner {
    max_share: f64,
    min_pages: u64,
    min_count: u64,
    sample_pages: u64,
    hosts: std::collections::HashMap<String, HostSample>,
}

#[derive(Debug, Default)]
struct HostSample {
    pages: u64,
    sampled: u64,
    /// Pages whose shingles were counted.
    counted: u64,
    /// The distinct shingles (sorted) of each page counted in the current bucket, each
    /// page's own vector: counted into `df` when the bucket ends. Holding the pages' vectors
    /// instead of copying them into one growing vector saves a copy of every shingle and the
    /// growth's reallocations (each a fresh stretch of memory the kernel zeroes).
    bucket: Vec<Arc<[u64]>>,
    /// The tracked shingles, sorted by hash.
    df: Vec<(u64, Count)>,
}

/// A shingle's page count in lossy counting: `pages` counted since it was (last) added, and
/// `missed`, the most pages it can have been on before that (Manku and Motwani's delta).
#[derive(Debug, Clone, Copy)]
struct Count {
    pages: u32,
    missed: u32,
}

impl HostSample {
    /// Counts one page's distinct shingles (in any order: the bucket is sorted as a whole),
    /// lossy counting with buckets of `width`
    /// pages: at the end of each bucket, shingles that cannot be on more than one page per
    /// bucket so far are dropped. So about `width` pages' shingles plus the frequent ones
    /// are tracked instead of every shingle of every sampled page, a shingle on more than
    /// `1 / width` of the pages is never dropped, and counts are exact until the first
    /// bucket ends.
    ///
    /// A bucket's pages are counted together when it ends, by sorting their shingles and
    /// merging them into the sorted counts: sequential passes over memory, where a hash
    /// table of a bucket's shingles (a few MiB) took a cache miss per shingle.
    fn count_page(&mut self, shingles: Arc<[u64]>, width: u64) {
        self.counted += 1;
        self.bucket.push(shingles);
        if self.counted.is_multiple_of(width) {
            self.end_bucket(width, true);
        }
    }

    /// Counts the current bucket's pages into `df`; `prune` at the end of a full bucket.
    fn end_bucket(&mut self, width: u64, prune: bool) {
        BUCKET_SCRATCH.with_borrow_mut(|scratch| {
            self.merge_bucket(scratch, width, prune);
            scratch.release_if_large();
        });
    }

    fn merge_bucket(&mut self, scratch: &mut BucketScratch, width: u64, prune: bool) {
        let bucket = self.counted.div_ceil(width).min(u64::from(u32::MAX)) as u32;
        let keys = &mut scratch.keys;
        keys.clear();
        for page in self.bucket.drain(..) {
            keys.extend_from_slice(&page);
        }
        sort_hashes(keys, &mut scratch.sort);
        let df = &mut scratch.df;
        df.clear();
        let mut old = self.df.iter().copied().peekable();
        let mut new = keys.iter().copied().peekable();
        let mut push = |h: u64, c: Count| {
            if !prune || c.pages + c.missed > bucket {
                df.push((h, c));
            }
        };
        while let Some(&h) = new.peek() {
            let mut pages = 0u32;
            while new.next_if_eq(&h).is_some() {
                pages += 1;
            }
            while let Some((k, c)) = old.next_if(|&(k, _)| k < h) {
                push(k, c);
            }
            let count = match old.next_if(|&(k, _)| k == h) {
                Some((_, c)) => Count {
                    pages: c.pages + pages,
                    missed: c.missed,
                },
                None => Count {
                    pages,
                    missed: bucket - 1,
                },
            };
            push(h, count);
        }
        for (k, c) in old {
            push(k, c);
        }
        // Copied back into the host's own vector, which keeps its allocation from bucket
        // to bucket; the scratch vectors are reused by the next host this thread counts.
        self.df.clear();
        self.df.extend_from_slice(df);
    }

    /// The shingles on at least `least` pages counted (lower bounds past the first
    /// bucket), ascending, once the last bucket is counted.
    fn learned(&mut self, width: u64, least: u32) -> Vec<u64> {
        if !self.df.is_empty() {
            self.end_bucket(width, false);
            return self
                .df
                .iter()
                .filter(|(_, c)| c.pages >= least)
                .map(|&(h, _)| h)
                .collect();
        }
        // Nothing tracked from earlier buckets (most hosts have only one): the last
        // bucket's counts are all there is.
        BUCKET_SCRATCH.with_borrow_mut(|scratch| {
            let set = self.frequent_in_bucket(scratch, least);
            scratch.release_if_large();
            set
        })
    }

    /// The shingles on at least `least` pages of the current bucket, ascending (the
    /// bucket is emptied): when nothing is tracked from earlier buckets, the learned set
    /// without counting every shingle.
    ///
    /// Learning finishes with this for nearly every host (most have fewer pages than a
    /// bucket), and sorting all their shingles to count them was a twentieth of a dedup
    /// run's CPU. Here each shingle bumps a saturating one-byte counter in a table of
    /// about two slots per shingle, indexed by a multiplicative hash of the shingle; a
    /// counter is at least the number of pages of every shingle in its slot, so the
    /// shingles whose counter reaches `least` hold every answer. Only those (the
    /// template's shingles and the few that share a slot with one) are sorted and counted
    /// exactly.
    fn frequent_in_bucket(&mut self, scratch: &mut BucketScratch, least: u32) -> Vec<u64> {
        let keys: usize = self.bucket.iter().map(|page| page.len()).sum();
        let slots = (keys * 2).next_power_of_two().max(64);
        let shift = 64 - slots.trailing_zeros();
        let slot = |h: u64| (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize;
        let counters = &mut scratch.counters;
        counters.clear();
        counters.resize(slots, 0);
        for page in &self.bucket {
            for &h in page.iter() {
                let c = &mut counters[slot(h)];
                *c = c.saturating_add(1);
            }
        }
        let bar = u8::try_from(least).unwrap_or(u8::MAX);
        let candidates = &mut scratch.keys;
        candidates.clear();
        for page in self.bucket.drain(..) {
            candidates.extend(page.iter().filter(|&&h| counters[slot(h)] >= bar));
        }
        sort_hashes(candidates, &mut scratch.sort);
        candidates
            .chunk_by(|a, b| a == b)
            .filter(|run| run.len() >= least as usize)
            .map(|run| run[0])
            .collect()
    }
}

/// Per-thread buffers for ending buckets: a bucket's shingles gathered for sorting and the
/// merged counts. Reused from host to host, so that counting does not allocate (and fault
/// in) fresh memory for every bucket.
#[derive(Default)]
struct BucketScratch {
    keys: Vec<u64>,
    sort: SortBuffers,
    df: Vec<(u64, Count)>,
    /// [`HostSample::frequent_in_bucket`]'s counters.
    counters: Vec<u8>,
}

impl BucketScratch {
    /// Buffers above this many bytes are freed after use rather than kept for the
    /// thread's lifetime (a bucket of very long pages): a bucket of 200 pages of 10,000
    /// distinct shingles each still fits.
    const KEEP_BYTES: usize = 16 << 20;

    fn release_if_large(&mut self) {
        if self.keys.capacity() * std::mem::size_of::<u64>() > Self::KEEP_BYTES {
            self.keys = Vec::new();
            self.sort = SortBuffers::default();
        }
        if self.df.capacity() * std::mem::size_of::<(u64, Count)>() > Self::KEEP_BYTES {
            self.df = Vec::new();
        }
        if self.counters.capacity() > Self::KEEP_BYTES {
            self.counters = Vec::new();
        }
    }
}

thread_local! {
    static BUCKET_SCRATCH: std::cell::RefCell<BucketScratch> =
        std::cell::RefCell::new(BucketScratch::default());
}

impl BoilerplateLearner {
    /// A learner for shingles above `max_share` (0..1) of the pages of hosts with at least
    /// `min_pages` pages, counting at most `sample_pages` pages per host.
    pub fn new(max_share: f64, min_pages: u64, sample_pages: u64) -> Self {
        BoilerplateLearner {
            max_share,
            min_pages,
            min_count: DEFAULT_MIN_COUNT,
            sample_pages: sample_pages.max(1),
            hosts: Default::default(),
        }
    }

    /// A shingle must also be on at least this many sampled pages (default 10): on a host of
    /// 40 pages, 5% is two pages, and three near-duplicate copies of one article would
    /// otherwise erase each other's content as "boilerplate".
    pub fn with_min_count(mut self, pages: u64) -> Self {
        self.min_count = pages.max(1);
        self
    }

    /// Counts a page of `host` and says whether it is sampled: when it is, the caller passes
    /// its shingles to [`sample_page`](Self::sample_page); when not, nothing more is needed,
    /// so callers can skip shingling pages beyond the sample.
    pub fn begin_page(&mut self, host: &str) -> bool {
        let sample = self.hosts.entry(host.to_owned()).or_default();
        sample.pages += 1;
        if sample.sampled >= self.sample_pages {
            return false;
        }
        sample.sampled += 1;
        true
    }

    /// The pages of `host` counted so far by [`begin_page`](Self::begin_page).
    pub fn pages(&self, host: &str) -> u64 {
        self.hosts.get(host).map_or(0, |s| s.pages)
    }

    /// Counts the shingles (duplicates ignored) of a page [`begin_page`](Self::begin_page)
    /// sampled.
    pub fn sample_page(&mut self, host: &str, shingles: &[u64]) {
        let width = self.bucket_width();
        let sample = self.hosts.entry(host.to_owned()).or_default();
        let mut distinct = shingles.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        sample.count_page(distinct.into(), width);
    }

    /// [`sample_page`](Self::sample_page) for many pages at once, hosts counted in parallel
    /// (each host's pages in the order given). Each page's shingles must be distinct, in
    /// any order (as [`SimHasher::distinct_shingles_with`](crate::SimHasher::distinct_shingles_with)
    /// makes them).
    pub fn sample_pages(&mut self, pages: Vec<(String, Arc<[u64]>)>) {
        use rayon::prelude::*;
        let width = self.bucket_width();
        let mut by_host: std::collections::HashMap<String, Vec<Arc<[u64]>>> = Default::default();
        for (host, shingles) in pages {
            by_host.entry(host).or_default().push(shingles);
        }
        type Work = (String, HostSample, Vec<Arc<[u64]>>);
        let mut work: Vec<Work> = by_host
            .into_iter()
            .map(|(host, sets)| {
                let sample = self.hosts.remove(&host).unwrap_or_default();
                (host, sample, sets)
            })
            .collect();
        work.par_iter_mut().for_each(|(_, sample, sets)| {
            for set in sets.drain(..) {
                sample.count_page(set, width);
            }
        });
        for (host, sample, _) in work {
            self.hosts.insert(host, sample);
        }
    }

    /// Lossy counting's bucket width: a tenth of the share, so a shingle may miss at most
    /// a tenth of the share of its pages (on 5%, half a percent), and only on hosts sampled
    /// beyond one bucket (200 pages at 5%).
    fn bucket_width(&self) -> u64 {
        ((10.0 / self.max_share).ceil() as u64).clamp(1, 1_000_000)
    }

    /// Counts one page of `host` with its shingle hashes (duplicates are ignored).
    pub fn add_page(&mut self, host: &str, shingles: &[u64]) {
        if self.begin_page(host) {
            self.sample_page(host, shingles);
        }
    }

    /// The learned sets of hosts with enough pages: (host, pages seen, sorted shingles).
    pub fn finish(self) -> Vec<(String, u64, Vec<u64>)> {
        use rayon::prelude::*;
        let width = self.bucket_width();
        // Hosts are finished in parallel: each flushes and sorts its last bucket.
        let mut out: Vec<(String, u64, Vec<u64>)> = self
            .hosts
            .into_par_iter()
            .filter(|(_, s)| s.pages >= self.min_pages)
            .map(|(host, mut s)| {
                // Counted pages, not sampled ones: a sampled page that failed to parse
                // has no shingles. Counts are lower bounds (exact below one bucket), so a
                // shingle is never called boilerplate on fewer pages than it is on. The
                // fewest pages that make a shingle boilerplate: more than the share, and
                // at least the minimum count.
                let cut = self.max_share * s.counted as f64;
                let least = (cut.max(0.0).floor() as u64 + 1).max(self.min_count);
                let least = u32::try_from(least).unwrap_or(u32::MAX);
                let set = s.learned(width, least);
                (host, s.pages, set)
            })
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learner_keeps_shingles_above_the_share_for_hosts_with_enough_pages() {
        let mut l = BoilerplateLearner::new(0.05, 20, 1000).with_min_count(2);
        for i in 0..40u64 {
            // Shingle 1 on every page, 2 on 1 page in 40 (2.5%), 3 on 4 in 40 (10%).
            let mut s = vec![1, 100 + i];
            if i == 0 {
                s.push(2);
            }
            if i % 10 == 0 {
                s.push(3);
            }
            l.add_page("big.example", &s);
        }
        for _ in 0..5 {
            l.add_page("small.example", &[1]);
        }
        let learned = l.finish();
        assert_eq!(learned.len(), 1, "small hosts learn nothing");
        assert_eq!(learned[0], ("big.example".to_owned(), 40, vec![1, 3]));
    }

    #[test]
    fn a_few_copies_of_one_article_are_not_boilerplate() {
        // 40 pages; the template on all of them, one article copied onto 4 of them (10%).
        let mut l = BoilerplateLearner::new(0.05, 20, 1000);
        for i in 0..40u64 {
            let mut s = vec![1, 100 + i];
            if i < 4 {
                s.push(7);
            }
            l.add_page("news.example", &s);
        }
        assert_eq!(l.finish()[0].2, vec![1]);
    }

    /// 1,000 pages of one host: a template shingle on every page, one on every 10th (10%),
    /// one on every 25th (4%, under the share) and 50 unique shingles per page.
    fn big_host_pages() -> Vec<Vec<u64>> {
        (0..1000u64)
            .map(|i| {
                let mut s: Vec<u64> = (0..50).map(|j| 1_000_000 + i * 100 + j).collect();
                s.push(1);
                if i % 10 == 0 {
                    s.push(2);
                }
                if i % 25 == 0 {
                    s.push(3);
                }
                s.sort_unstable();
                s
            })
            .collect()
    }

    #[test]
    fn lossy_counting_keeps_frequent_shingles_and_forgets_rare_ones() {
        let mut l = BoilerplateLearner::new(0.05, 20, 1000);
        for s in big_host_pages() {
            l.add_page("big.example", &s);
        }
        let tracked = l.hosts["big.example"].df.len();
        // Exact counting would hold all 50,000 unique shingles; buckets of 200 pages hold
        // at most one bucket's worth.
        assert!(tracked <= 200 * 50 + 3, "{tracked} shingles tracked");
        assert_eq!(l.finish()[0].2, vec![1, 2]);
    }

    proptest::proptest! {
        /// The last bucket's frequent shingles, found through the counters, are exactly
        /// those counting every shingle finds: with thresholds past a counter's 255, and
        /// keys that are not hashes (small integers: one slot for all).
        #[test]
        fn frequent_shingles_of_a_bucket_are_those_an_exact_count_finds(
            pages in proptest::collection::vec(
                proptest::collection::btree_set(0u64..400, 0..60), 0..300),
            spread in proptest::bool::ANY,
            least in proptest::sample::select(vec![1u32, 2, 3, 10, 40, 255, 256, 400]),
        ) {
            let key = |k: u64| if spread { k.wrapping_mul(0xd6e8_feb8_6659_fd93) } else { k };
            let mut sample = HostSample::default();
            let mut counts = std::collections::BTreeMap::new();
            for page in &pages {
                let set: Vec<u64> = page.iter().map(|&k| key(k)).collect();
                for &h in &set {
                    *counts.entry(h).or_insert(0u32) += 1;
                }
                sample.bucket.push(set.into());
            }
            let want: Vec<u64> =
                counts.into_iter().filter(|&(_, c)| c >= least).map(|(h, _)| h).collect();
            let got = sample.frequent_in_bucket(&mut BucketScratch::default(), least);
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert!(sample.bucket.is_empty());
        }
    }

    #[test]
    fn sampling_many_pages_in_parallel_counts_as_one_by_one() {
        let pages = big_host_pages();
        let mut one = BoilerplateLearner::new(0.05, 20, 1000).with_min_count(2);
        let mut many = BoilerplateLearner::new(0.05, 20, 1000).with_min_count(2);
        let mut batch = Vec::new();
        for (i, s) in pages.iter().enumerate() {
            let host = if i % 3 == 0 { "a.example" } else { "b.example" };
            one.add_page(host, s);
            assert!(many.begin_page(host));
            // Distinct shingles in any order will do: here, backwards.
            let backwards: Vec<u64> = s.iter().rev().copied().collect();
            batch.push((host.to_owned(), backwards.into()));
            if batch.len() == 97 {
                many.sample_pages(std::mem::take(&mut batch));
            }
        }
        many.sample_pages(batch);
        let (one, many) = (one.finish(), many.finish());
        assert_eq!(one.len(), 2);
        assert_eq!(one, many);
    }
}
