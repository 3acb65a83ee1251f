//! Clusters: whether a record links to a cluster's members (complete linkage, with bounds
//! through the survivor to spare comparisons), and fusing the clusters a record bridges.

use super::analyze::Prepared;
use super::candidates::cannot_reach;
use super::{Deduper, FastMap, Linkage, MergeRule, ShortText};
use crate::record::Timestamp;
use crate::store::{Batch, Features, MergeLogEntry, Store};
use crate::verify::{id_jaccard, Scores};
use crate::Result;

/// An upper bound on a record's Jaccard distance (1 - Jaccard of the shingle sets) to the
/// survivor `of`; it says nothing once the record's survivor is another (an erasure, a
/// re-evaluation or a survivor displaced by an earlier record may change it).
///
/// Jaccard distance is a metric, so a record `x` whose distance to a survivor `s` is
/// `d(x, s)` is within `d(x, s) + b` of every member bound by `b`: complete linkage compares
/// `x` with a member only when that sum exceeds what the threshold allows. Near copies sit
/// a few hundredths from their survivor, so joining a cluster of thousands of them costs a
/// comparison or two, not one per member (it was quadratic in the cluster's size).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bound {
    of: u64,
    pub(super) distance: f32,
}

impl Bound {
    pub(super) const NONE: Bound = Bound {
        of: u64::MAX,
        distance: 1.0,
    };

    /// A bound of at least `distance` (rounded up to `f32`, so that it stays a bound).
    pub(super) fn new(of: u64, distance: f64) -> Bound {
        let d = distance.clamp(0.0, 1.0) as f32;
        let distance = if f64::from(d) < distance {
            d.next_up()
        } else {
            d
        };
        Bound { of, distance }
    }
}

/// What a record must have with a cluster's members to join it: Jaccard at least `floor`
/// with every one, and at least `verify` with a `quorum` share of them (copies counted).
/// A quorum of 0 is complete linkage at `floor`; `verify` then plays no part.
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    floor: f64,
    verify: f64,
    quorum: f64,
}

impl Link {
    /// Single linkage: any verified match links (see [`Linkage::Single`]).
    const SINGLE: Link = Link {
        floor: 0.0,
        verify: 0.0,
        quorum: 0.0,
    };

    /// Whether every record links, so nothing need be measured.
    fn is_single(self) -> bool {
        self.floor <= 0.0 && self.quorum <= 0.0
    }

    /// The largest Jaccard distance to any member, and the largest that counts toward the
    /// quorum.
    fn distances(self) -> (f64, f64) {
        let floor = 1.0 - self.floor;
        if self.quorum > 0.0 {
            (floor, 1.0 - self.verify.max(self.floor))
        } else {
            (floor, floor)
        }
    }

    /// Of `total` members (copies counted), how many must verify.
    fn needed(self, total: usize) -> usize {
        // A hair under the product, so that 0.8 of 5 asks 4 despite rounding.
        ((self.quorum * total as f64) - 1e-9).ceil().max(0.0) as usize
    }
}

/// Tallies a record's links to a cluster's members as they are measured.
struct Tally {
    link: Link,
    /// Distances within which a member is at the floor, and verified.
    floor_d: f64,
    verify_d: f64,
    /// Members counted (copies included), and of them verified and not.
    total: usize,
    verified: usize,
    unverified: usize,
}

impl Tally {
    fn new(link: Link, total: usize) -> Tally {
        let (floor_d, verify_d) = link.distances();
        Tally {
            link,
            floor_d,
            verify_d,
            total,
            verified: 0,
            unverified: 0,
        }
    }

    /// Counts `copies` members at Jaccard distance `d`; false when the record can no longer
    /// link.
    fn add(&mut self, d: f64, copies: usize) -> bool {
        if d > self.floor_d {
            return false;
        }
        if d <= self.verify_d {
            self.verified += copies;
        } else {
            self.unverified += copies;
        }
        self.unverified + self.link.needed(self.total) <= self.total
    }

    /// Leaves out `copies` members that cannot be measured (their sets are gone).
    fn skip(&mut self, copies: usize) {
        self.total -= copies;
    }

    /// Whether members within `bound` of the record verify without measurement (a little
    /// less than the threshold, so that rounding in a sum of bounds never admits a pair
    /// below it).
    fn verifies(&self, bound: f64) -> bool {
        bound <= self.verify_d - 1e-9
    }

    /// Files a text (a member and its copies) within `bound` of the record: counted as
    /// verified when the bound shows it, else to be measured, in `soft` when it certainly
    /// reaches the floor (measured only while the quorum is short), in `hard` otherwise.
    fn file(
        &mut self,
        bound: f64,
        text: (u64, usize),
        soft: &mut Vec<(u64, usize)>,
        hard: &mut Vec<(u64, usize)>,
    ) {
        if self.verifies(bound) {
            self.verified += text.1;
        } else if bound <= self.floor_d - 1e-9 {
            soft.push(text);
        } else {
            hard.push(text);
        }
    }

    /// Whether enough members verified that the rest need only reach the floor.
    fn quorate(&self) -> bool {
        self.verified >= self.link.needed(self.total)
    }
}

/// What complete linkage found out about a record and a cluster.
#[derive(Debug, Default)]
pub(super) struct Linked {
    /// Whether the record links to the cluster (see [`Link`]).
    pub(super) linked: bool,
    /// An upper bound on the record's distance to the survivor.
    pub(super) to_survivor: Option<f64>,
    /// Members' distances to the survivor measured on the way (exact), to keep.
    pub(super) learned: Vec<(u64, f64)>,
    /// The record's exact distances to the members it was compared with, by handle.
    pub(super) compared: Vec<(u64, f64)>,
}

/// What a decided record leaves for [`Deduper::fuse_clusters`]: its verified matches in
/// clusters other than the one it joined, best first, and the linkage it joined under.
pub(super) struct Fusable {
    pub(super) matches: Vec<(u64, Scores)>,
    pub(super) link: Link,
    pub(super) features: Features,
    pub(super) rule: MergeRule,
}

/// The most member pairs [`Deduper::fuse_clusters`] compares for one record, over all the
/// clusters it tries to fuse: clusters that would need more (dozens of distinct texts
/// each) stay apart, so a record costs at most this many comparisons more.
const MAX_FUSE_PAIRS: usize = 2048;

impl<S: Store> Deduper<S> {
    /// Whether the analysed record links to the cluster of `survivor` (see [`Link`]).
    /// Members with the same text are measured once and counted with their copies; members
    /// in `scored` (the record's verified candidates, usually most of the cluster) are not
    /// compared again, nor are members whose [`Bound`] to the survivor settles them. A
    /// member with no bound yet is measured against the survivor first (it is then bound for
    /// every later record). Members whose bound shows only that they reach the floor are
    /// measured only while the quorum is short.
    pub(super) fn links_to_all(
        &self,
        p: &Prepared,
        survivor: u64,
        link: Link,
        scored: &[(u64, Scores)],
    ) -> Result<Linked> {
        debug_assert!(
            scored.is_sorted_by_key(|&(h, _)| h),
            "scores sorted by handle"
        );
        let mut linkage = Linked::default();
        let scored_distance = |m: u64| -> Option<f64> {
            let at = scored.binary_search_by_key(&m, |&(h, _)| h).ok()?;
            Some(1.0 - scored[at].1.jaccard)
        };
        let Some(members) = self.members.get(&survivor) else {
            linkage.linked = true;
            return Ok(linkage);
        };
        if link.is_single() {
            // Nothing to measure: the verified match links (no bound on the survivor
            // unless verification measured it).
            linkage.linked = true;
            linkage.to_survivor = scored_distance(survivor);
            return Ok(linkage);
        }

        // The cluster's texts with the record's features, the survivor's first, with the
        // number of members carrying each.
        let with_survivor = self.meta[&survivor].features == p.features;
        let texts = self.texts_of(
            std::iter::once(survivor).filter(|_| with_survivor).chain(
                members
                    .iter()
                    .copied()
                    .filter(|&m| m != survivor && self.meta[&m].features == p.features),
            ),
        );
        let mut tally = Tally::new(link, texts.iter().map(|&(_, n)| n).sum());
        let mut rest = &texts[..];

        // The record's distance to the survivor, the pivot of every bound.
        if with_survivor {
            let d_ps = match scored_distance(survivor) {
                Some(d) => Some(d),
                None => self.distance_to(&p.shingles, survivor)?,
            };
            linkage.to_survivor = d_ps;
            if d_ps.is_none() {
                tally.skip(texts[0].1);
            }
            if let Some(d_ps) = d_ps {
                if !tally.add(d_ps, texts[0].1) {
                    return Ok(linkage);
                }
                // The whole cluster settled through the survivor.
                if let Some(&r) = self.radius.get(&survivor) {
                    if tally.verifies(d_ps + f64::from(r)) {
                        linkage.linked = true;
                        return Ok(linkage);
                    }
                }
            }
            rest = &texts[1..];
        }

        // Members to measure, and members known to reach the floor that count toward the
        // quorum only once measured.
        let mut hard: Vec<(u64, usize)> = Vec::new();
        let mut soft: Vec<(u64, usize)> = Vec::new();
        let mut unbound = Vec::new();
        for &(m, n) in rest {
            if let Some(d) = scored_distance(m) {
                if !tally.add(d, n) {
                    return Ok(linkage);
                }
                linkage.compared.push((m, d));
                continue;
            }
            let meta = &self.meta[&m];
            match linkage.to_survivor {
                Some(d_ps) if meta.bound.of == survivor => {
                    tally.file(
                        d_ps + f64::from(meta.bound.distance),
                        (m, n),
                        &mut soft,
                        &mut hard,
                    );
                }
                Some(_) => unbound.push((m, n)),
                None => hard.push((m, n)),
            }
        }
        // Unbound members: measured against the survivor first.
        if let (Some(d_ps), false) = (linkage.to_survivor, unbound.is_empty()) {
            let handles: Vec<u64> = unbound.iter().map(|&(m, _)| m).collect();
            match &self.shingle_sets(&[survivor])?[0] {
                Some(pivot) => {
                    for (&(m, n), theirs) in unbound.iter().zip(self.shingle_sets(&handles)?) {
                        let Some(theirs) = theirs else {
                            hard.push((m, n));
                            continue;
                        };
                        let d = 1.0 - id_jaccard(pivot, &theirs);
                        linkage.learned.push((m, d));
                        tally.file(d_ps + d, (m, n), &mut soft, &mut hard);
                    }
                }
                None => hard.extend(unbound),
            }
        }
        // Members that must be measured, then as many of the others as the quorum needs (a
        // few sets at a time: most often the first ones settle it).
        let floor = link.floor;
        let chunks = std::iter::once((&hard[..], true))
            .filter(|(group, _)| !group.is_empty())
            .chain(soft.chunks(8).map(|c| (c, false)));
        for (group, all) in chunks {
            if !all && tally.quorate() {
                break;
            }
            let handles: Vec<u64> = group.iter().map(|&(m, _)| m).collect();
            for (&(m, n), theirs) in group.iter().zip(self.shingle_sets(&handles)?) {
                let Some(theirs) = theirs else {
                    tally.skip(n);
                    continue;
                };
                if cannot_reach(p.shingles.len(), theirs.len(), floor) {
                    return Ok(linkage);
                }
                let d = 1.0 - id_jaccard(&p.shingles, &theirs);
                if !tally.add(d, n) {
                    return Ok(linkage);
                }
                linkage.compared.push((m, d));
            }
        }
        linkage.compared.sort_unstable_by_key(|&(m, _)| m);
        linkage.linked = tally.quorate();
        Ok(linkage)
    }

    /// What a record of `features` must have with a cluster's members to join it, under the
    /// rule's linkage (see [`Link`]).
    pub(super) fn link_for(&self, features: Features) -> Link {
        match (features, self.rule.short_text) {
            _ if self.rule.linkage == Linkage::Single => Link {
                floor: self.rule.chain_floor,
                ..Link::SINGLE
            },
            (Features::Chars, ShortText::CharNgrams { min_jaccard, .. }) => Link {
                floor: min_jaccard,
                verify: min_jaccard,
                quorum: 0.0,
            },
            _ => Link {
                floor: self.rule.min_cluster_jaccard,
                verify: self.rule.min_jaccard,
                quorum: self.rule.cluster_quorum,
            },
        }
    }

    /// Fuses with the cluster of the record `id` just joined each cluster it also verified
    /// against (`fusable`, best match first) whose members all link to all of its own (same
    /// features, Jaccard at least the linkage threshold): the record bridges them, and
    /// every pair of the fused cluster still verifies, as complete linkage promises. Without
    /// this a record joins only its best match's cluster and its pairs with the other stay
    /// apart (on the quality bench, a third of the pairs missed). The earlier first seen
    /// survivor survives; the other's entry in the merge log names the bridging match.
    pub(super) fn fuse_clusters(
        &mut self,
        id: &str,
        fusable: Fusable,
        now: Timestamp,
        batch: &mut Batch,
    ) -> Result<Vec<MergeLogEntry>> {
        let handle = self.by_id[id];
        let mut entries = Vec::new();
        let mut budget = MAX_FUSE_PAIRS;
        for (h, scores) in fusable.matches {
            let (Some(ours), Some(theirs)) = (self.meta.get(&handle), self.meta.get(&h)) else {
                continue;
            };
            let (a, b) = (ours.survivor, theirs.survivor);
            if a == b || !self.clusters_link(a, b, fusable.features, fusable.link, &mut budget)? {
                continue;
            }
            // The earlier first seen survives (ties: the smaller id); the other is merged,
            // matched by the record of the surviving cluster the bridge runs through.
            let (ma, mb) = (&self.meta[&a], &self.meta[&b]);
            let (winner, loser, matched) = if (ma.first_seen, &*ma.id) <= (mb.first_seen, &*mb.id) {
                (a, b, handle)
            } else {
                (b, a, h)
            };
            let entry =
                self.merge_entry(winner, loser, matched, fusable.rule.as_str(), scores, now);
            let moved = self.members.remove(&loser).unwrap_or_default();
            for &m in &moved {
                self.meta.get_mut(&m).expect("member is stored").survivor = winner;
                batch.survivor_updates.push((m, winner));
            }
            self.members.entry(winner).or_default().extend(moved);
            self.radius.remove(&winner);
            self.radius.remove(&loser);
            batch.merges.push(entry.clone());
            entries.push(entry);
        }
        Ok(entries)
    }

    /// Whether clusters `a` and `b` (all of `features`) link as one (see [`Link`]): every
    /// member of one at the floor with every member of the other, and the quorum of those
    /// pairs (copies counted) verified, within `budget` comparisons, which it spends (members
    /// of one text are compared once).
    fn clusters_link(
        &self,
        a: u64,
        b: u64,
        features: Features,
        link: Link,
        budget: &mut usize,
    ) -> Result<bool> {
        if link.is_single() {
            // Connected components: a verified pair across links the clusters. (Of the same
            // features only: a short record's character n-gram cluster and a long one's
            // word cluster stay apart as they are decided apart.)
            let same = |survivor: u64| {
                let members = self.members.get(&survivor).map_or(&[][..], Vec::as_slice);
                members.iter().all(|m| self.meta[m].features == features)
            };
            return Ok(same(a) && same(b));
        }
        let texts = |survivor: u64| -> Option<Vec<(u64, usize)>> {
            let members = self.members.get(&survivor).map_or(&[][..], Vec::as_slice);
            members
                .iter()
                .all(|m| self.meta[m].features == features)
                .then(|| self.texts_of(members.iter().copied()))
        };
        let (Some(ta), Some(tb)) = (texts(a), texts(b)) else {
            return Ok(false);
        };
        if ta.is_empty() || tb.is_empty() || ta.len() * tb.len() > *budget {
            return Ok(false);
        }
        let handles = |t: &[(u64, usize)]| t.iter().map(|&(m, _)| m).collect::<Vec<_>>();
        let (sa, sb) = (
            self.shingle_sets(&handles(&ta))?,
            self.shingle_sets(&handles(&tb))?,
        );
        let copies = |t: &[(u64, usize)]| t.iter().map(|&(_, n)| n).sum::<usize>();
        let mut tally = Tally::new(link, copies(&ta) * copies(&tb));
        for (x, &(_, nx)) in sa.iter().zip(&ta) {
            let Some(x) = x else { return Ok(false) };
            for (y, &(_, ny)) in sb.iter().zip(&tb) {
                let Some(y) = y else { return Ok(false) };
                *budget -= 1;
                if cannot_reach(x.len(), y.len(), link.floor)
                    || !tally.add(1.0 - id_jaccard(x, y), nx * ny)
                {
                    return Ok(false);
                }
            }
        }
        Ok(tally.quorate())
    }

    /// The distinct texts of `members`, each as its first member and how many carry it.
    pub(super) fn texts_of(&self, members: impl Iterator<Item = u64>) -> Vec<(u64, usize)> {
        let mut at: FastMap<u128, usize> = Default::default();
        let mut texts: Vec<(u64, usize)> = Vec::new();
        for m in members {
            let i = *at.entry(self.meta[&m].content_hash).or_insert_with(|| {
                texts.push((m, 0));
                texts.len() - 1
            });
            texts[i].1 += 1;
        }
        texts
    }

    /// Keeps the members' distances to `survivor` that complete linkage measured.
    pub(super) fn learn_bounds(&mut self, survivor: u64, learned: &[(u64, f64)]) {
        for &(m, d) in learned {
            if let Some(meta) = self.meta.get_mut(&m) {
                if meta.survivor == survivor {
                    meta.bound = Bound::new(survivor, d);
                }
            }
        }
    }

    /// The distance of an exact copy of `h` to `h`'s survivor: measured, since the same
    /// text on another host loses other boilerplate and may have another shingle set.
    pub(super) fn exact_copy_distance(&self, p: &Prepared, h: u64) -> Result<Option<f64>> {
        let survivor = self.meta[&h].survivor;
        if self.meta[&survivor].features != p.features {
            return Ok(None);
        }
        self.distance_to(&p.shingles, survivor)
    }

    /// The Jaccard distance of `shingles` to the stored record `h`, when its set is found.
    fn distance_to(&self, shingles: &[u32], h: u64) -> Result<Option<f64>> {
        Ok(self.shingle_sets(&[h])?[0]
            .as_ref()
            .map(|theirs| 1.0 - id_jaccard(shingles, theirs)))
    }

    /// A bound on a member's distance to its survivor, when one holds.
    pub(super) fn bound_to_survivor(&self, m: u64) -> Option<f64> {
        let meta = &self.meta[&m];
        if meta.survivor == m {
            Some(0.0)
        } else if meta.bound.of == meta.survivor {
            Some(f64::from(meta.bound.distance))
        } else {
            None
        }
    }
}
