//! The side-by-side diff of two near-duplicate texts for the review page: paragraphs
//! aligned by `similar`, moved paragraphs paired up, changed paragraphs diffed word by
//! word, and the resulting rows cut into pages.
//!
//! How a diff is built, in [`side_by_side`]:
//!
//! 1. Each text is split into paragraphs: blocks of lines separated by blank lines, or,
//!    when a text has no blank line but 4 lines or more (`LINE_MODE_MIN_LINES`), its lines.
//!    A paragraph keeps its original text (indentation, inner line breaks) for display,
//!    without its trailing line break.
//! 2. The paragraphs are diffed with `similar`'s patience algorithm, compared by a key with
//!    all whitespace collapsed, so a reflowed or re-indented paragraph counts as unchanged.
//! 3. A paragraph deleted in one place whose key equals a paragraph inserted elsewhere is a
//!    move: it gives a left-only and a right-only [`RowKind::Moved`] row that name each
//!    other in [`Row::moved_to`].
//! 4. The other deleted and inserted paragraphs of one changed stretch are paired in order
//!    (first deleted with first inserted, ...) and diffed by unicode words (patience diff
//!    over UAX #29 word boundaries, so text without spaces such as Chinese diffs character
//!    by character). A pair that shares fewer than 20 % of its words (`MIN_SHARED_PERCENT`)
//!    would be mostly highlight, so it is shown as a removed row followed by an added row
//!    instead of a changed row.
//!    Unpaired paragraphs become removed (left only) or added (right only) rows.
//!    Highlights follow words, not whitespace: whitespace at the ends of a change counts as
//!    the same, and whitespace alone between two changes joins them into one highlight.
//!
//! Both diffs run under deadlines (1 s for the paragraph diff, then 1 s shared by all word
//! diffs with at most 250 ms each), so a pair of 100 KB pages with little in common cannot
//! stall the server: past a deadline `similar` falls back to a coarser diff and
//! [`SideBySide::coarse`] says so. Whatever the deadlines do, each
//! side's rows always give back all of that side's paragraphs, in order.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffTag, DiffableStr};

/// Time allowed to the paragraph-level diff before it falls back to a coarser one.
const PARAGRAPH_DIFF_TIMEOUT: Duration = Duration::from_secs(1);
/// Time allowed to all word-level diffs of one [`side_by_side`] call together.
const WORD_DIFF_BUDGET: Duration = Duration::from_secs(1);
/// Time allowed to the word-level diff of one changed paragraph pair, so that one huge
/// pair does not use up the whole `WORD_DIFF_BUDGET`.
const WORD_DIFF_PAIR_TIMEOUT: Duration = Duration::from_millis(250);
/// A paired paragraph whose shared words are under this percentage of its words (both
/// sides counted) is shown as a removed row plus an added row, not as a changed row.
const MIN_SHARED_PERCENT: usize = 20;
/// A text without blank lines is split into lines once it has at least this many lines;
/// with fewer it is one paragraph.
const LINE_MODE_MIN_LINES: usize = 4;

/// One piece of a side's text and whether it is shared, only on this side, or moved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Segment {
    /// The text, verbatim from the input (whitespace included).
    pub text: String,
    /// How this piece relates to the other side.
    pub kind: SegmentKind,
}

/// How a [`Segment`] relates to the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// Present on both sides (whitespace aside).
    Same,
    /// Only on the left.
    Removed,
    /// Only on the right.
    Added,
    /// A whole paragraph present on both sides, at another place on the other side.
    Moved,
}

/// One aligned row: a paragraph on the left and/or the right.
///
/// The shape follows the kind: `Same` and `Changed` rows have both sides, `Removed` rows
/// only `left`, `Added` rows only `right`, and `Moved` rows exactly one side.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    /// What happened to this paragraph.
    pub kind: RowKind,
    /// The left paragraph, as segments whose texts concatenate to it; `None` when the row
    /// has no left paragraph.
    pub left: Option<Vec<Segment>>,
    /// The right paragraph, as segments whose texts concatenate to it; `None` when the row
    /// has no right paragraph.
    pub right: Option<Vec<Segment>>,
    /// For a `Moved` row, the index (in [`SideBySide::rows`], not within a page) of the row
    /// holding the other copy; `None` for every other row.
    pub moved_to: Option<usize>,
}

/// What happened to the paragraph(s) of a [`Row`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    /// The same paragraph on both sides (whitespace aside): one `Same` segment each.
    Same,
    /// A paragraph edited: `Same`/`Removed` segments on the left, `Same`/`Added` on the right.
    Changed,
    /// A paragraph only on the left: one `Removed` segment.
    Removed,
    /// A paragraph only on the right: one `Added` segment.
    Added,
    /// One copy of a paragraph that sits elsewhere on the other side: one `Moved` segment.
    Moved,
}

/// The whole side-by-side diff of two texts, as built by [`side_by_side`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SideBySide {
    /// The aligned rows, top to bottom.
    pub rows: Vec<Row>,
    /// Words in the left text (unicode words: runs of letters or digits, and each CJK
    /// ideograph on its own).
    pub left_words: usize,
    /// Words in the right text.
    pub right_words: usize,
    /// Words of the left text in `Same` or `Moved` segments.
    pub same_words_left: usize,
    /// Words of the right text in `Same` or `Moved` segments.
    pub same_words_right: usize,
    /// True when the paragraph diff or a word diff hit its time limit somewhere and fell
    /// back to a coarser diff (set conservatively: a diff that finished just at its limit
    /// counts too).
    pub coarse: bool,
}

/// One page of a [`SideBySide`]'s rows, as returned by [`SideBySide::page`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Page {
    /// The rows of this page; empty for a page past the end.
    pub rows: Vec<Row>,
    /// This page's number, counted from 0.
    pub page: usize,
    /// The number of pages (0 when there are no rows).
    pub pages: usize,
    /// The number of rows on all pages together.
    pub total_rows: usize,
}

impl SideBySide {
    /// The rows of page `page` (counted from 0), `rows_per_page` rows to a page; the last
    /// page may be short. A page past the end has no rows but the same `pages` and
    /// `total_rows`. A `rows_per_page` of 0 is taken as 1.
    ///
    /// [`Row::moved_to`] keeps indexing all rows: the other copy is on page
    /// `moved_to / rows_per_page`.
    pub fn page(&self, page: usize, rows_per_page: usize) -> Page {
        let rows_per_page = rows_per_page.max(1);
        let total_rows = self.rows.len();
        let start = page.saturating_mul(rows_per_page);
        let rows = self
            .rows
            .get(start..)
            .map(|rest| rest.iter().take(rows_per_page).cloned().collect())
            .unwrap_or_default();
        Page {
            rows,
            page,
            pages: total_rows.div_ceil(rows_per_page),
            total_rows,
        }
    }
}

/// The side-by-side diff of `left` and `right`; see the module docs for how it is built.
///
/// Any input is accepted (empty, without spaces, with `\r\n` line ends). The diffs stop
/// refining after about 2 s in all (then [`SideBySide::coarse`] is set); the rest is
/// linear in the input. On 100 KB texts a release build takes a few milliseconds when
/// they are near duplicates. CPU-bound: call it from `spawn_blocking` in async code.
pub fn side_by_side(left: &str, right: &str) -> SideBySide {
    side_by_side_within(left, right, Limits::DEFAULT)
}

/// The time limits of one [`side_by_side`] call; tests shrink them to reach the fallback.
#[derive(Debug, Clone, Copy)]
struct Limits {
    paragraph_diff: Duration,
    word_diff_budget: Duration,
    word_diff_pair: Duration,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        paragraph_diff: PARAGRAPH_DIFF_TIMEOUT,
        word_diff_budget: WORD_DIFF_BUDGET,
        word_diff_pair: WORD_DIFF_PAIR_TIMEOUT,
    };
}

fn side_by_side_within(left: &str, right: &str, limits: Limits) -> SideBySide {
    let left = paragraphs(left);
    let right = paragraphs(right);

    // Compare paragraphs by interned whitespace-collapsed keys: cheap to hash and compare
    // in the diff, and the same ids find moved paragraphs afterwards.
    let mut interner = HashMap::<String, u32>::new();
    let mut intern = |paragraph: &str| -> u32 {
        let next = u32::try_from(interner.len()).unwrap_or(u32::MAX);
        *interner
            .entry(collapse_whitespace(paragraph))
            .or_insert(next)
    };
    let left_keys: Vec<u32> = left.iter().map(|p| intern(p)).collect();
    let right_keys: Vec<u32> = right.iter().map(|p| intern(p)).collect();

    let deadline = Instant::now().checked_add(limits.paragraph_diff);
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Patience,
        &left_keys,
        &right_keys,
        deadline,
    );
    let (ops, exact) = aligned_ops(&ops, left.len(), right.len());
    let mut coarse = !exact || (passed(deadline) && ops.iter().any(|op| !op.equal));
    // Neighbouring non-equal ops form one changed stretch, whatever mix of deletes,
    // inserts and replaces `similar` reports for it.
    let stretches = merge_neighbours(ops);

    // Moves: a deleted paragraph whose key is also inserted elsewhere, matched in order.
    let mut left_partner: Vec<Option<usize>> = vec![None; left.len()];
    let mut right_partner: Vec<Option<usize>> = vec![None; right.len()];
    let mut inserted = HashMap::<u32, VecDeque<usize>>::new();
    for stretch in stretches.iter().filter(|s| !s.equal) {
        for j in stretch.new_range.clone() {
            inserted.entry(right_keys[j]).or_default().push_back(j);
        }
    }
    for stretch in stretches.iter().filter(|s| !s.equal) {
        for i in stretch.old_range.clone() {
            if let Some(j) = inserted.get_mut(&left_keys[i]).and_then(|q| q.pop_front()) {
                left_partner[i] = Some(j);
                right_partner[j] = Some(i);
            }
        }
    }

    let word_deadline = Instant::now().checked_add(limits.word_diff_budget);
    let mut builder = Builder {
        left: &left,
        right: &right,
        left_partner: &left_partner,
        right_partner: &right_partner,
        left_row: vec![None; left.len()],
        right_row: vec![None; right.len()],
        rows: Vec::new(),
        counts: Counts::default(),
        coarse: false,
        word_deadline,
        word_diff_pair: limits.word_diff_pair,
    };
    for stretch in &stretches {
        if stretch.equal {
            for (i, j) in stretch.old_range.clone().zip(stretch.new_range.clone()) {
                builder.push_same(i, j);
            }
        } else {
            builder.push_stretch(stretch.old_range.clone(), stretch.new_range.clone());
        }
    }
    coarse |= builder.coarse;

    let Builder {
        mut rows,
        left_row,
        right_row,
        counts,
        ..
    } = builder;
    for (i, partner) in left_partner.iter().enumerate() {
        if let (Some(j), Some(row)) = (partner, left_row[i]) {
            let other = right_row[*j];
            if let Some(row) = rows.get_mut(row) {
                row.moved_to = other;
            }
            if let Some(other) = other.and_then(|other| rows.get_mut(other)) {
                other.moved_to = Some(row);
            }
        }
    }

    SideBySide {
        rows,
        left_words: counts.left_words,
        right_words: counts.right_words,
        same_words_left: counts.same_words_left,
        same_words_right: counts.same_words_right,
        coarse,
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    left_words: usize,
    right_words: usize,
    same_words_left: usize,
    same_words_right: usize,
}

/// Emits rows in order and remembers where each moved paragraph landed.
struct Builder<'a> {
    left: &'a [&'a str],
    right: &'a [&'a str],
    left_partner: &'a [Option<usize>],
    right_partner: &'a [Option<usize>],
    left_row: Vec<Option<usize>>,
    right_row: Vec<Option<usize>>,
    rows: Vec<Row>,
    counts: Counts,
    coarse: bool,
    word_deadline: Option<Instant>,
    word_diff_pair: Duration,
}

impl Builder<'_> {
    fn push_same(&mut self, i: usize, j: usize) {
        let (left, right) = (self.left[i], self.right[j]);
        let (left_words, right_words) = (count_words(left), count_words(right));
        self.counts.left_words += left_words;
        self.counts.same_words_left += left_words;
        self.counts.right_words += right_words;
        self.counts.same_words_right += right_words;
        self.rows.push(Row {
            kind: RowKind::Same,
            left: Some(vec![segment(left, SegmentKind::Same)]),
            right: Some(vec![segment(right, SegmentKind::Same)]),
            moved_to: None,
        });
    }

    /// One changed stretch: left paragraphs `old`, right paragraphs `new`. Walks both in
    /// order so that each side's rows keep its paragraph order; every step emits at least
    /// one paragraph, so none is lost whatever the pairing decides.
    fn push_stretch(&mut self, old: Range<usize>, new: Range<usize>) {
        let free_left = old
            .clone()
            .filter(|&i| self.left_partner[i].is_none())
            .count();
        let free_right = new
            .clone()
            .filter(|&j| self.right_partner[j].is_none())
            .count();
        let pairs = free_left.min(free_right);
        let (mut i, mut j) = (old.start, new.start);
        // Free (unmoved) paragraphs consumed so far on each side.
        let (mut taken_left, mut taken_right) = (0, 0);
        loop {
            if i < old.end && self.left_partner[i].is_some() {
                self.left_row[i] = Some(self.rows.len());
                self.push_moved(self.left[i], Side::Left);
                i += 1;
                continue;
            }
            if j < new.end && self.right_partner[j].is_some() {
                self.right_row[j] = Some(self.rows.len());
                self.push_moved(self.right[j], Side::Right);
                j += 1;
                continue;
            }
            let next_left = (i < old.end).then_some(i);
            let next_right = (j < new.end).then_some(j);
            match (next_left, next_right) {
                (None, None) => break,
                (Some(a), Some(b)) if taken_left < pairs && taken_right < pairs => {
                    self.push_pair(self.left[a], self.right[b]);
                    (i, j) = (i + 1, j + 1);
                    (taken_left, taken_right) = (taken_left + 1, taken_right + 1);
                }
                (Some(a), None) => {
                    self.push_one_sided(self.left[a], Side::Left);
                    (i, taken_left) = (i + 1, taken_left + 1);
                }
                (Some(a), Some(_)) if taken_left >= pairs => {
                    self.push_one_sided(self.left[a], Side::Left);
                    (i, taken_left) = (i + 1, taken_left + 1);
                }
                (_, Some(b)) => {
                    self.push_one_sided(self.right[b], Side::Right);
                    (j, taken_right) = (j + 1, taken_right + 1);
                }
            }
        }
    }

    fn push_moved(&mut self, text: &str, side: Side) {
        let words = count_words(text);
        let segments = Some(vec![segment(text, SegmentKind::Moved)]);
        let (left, right) = match side {
            Side::Left => {
                self.counts.left_words += words;
                self.counts.same_words_left += words;
                (segments, None)
            }
            Side::Right => {
                self.counts.right_words += words;
                self.counts.same_words_right += words;
                (None, segments)
            }
        };
        self.rows.push(Row {
            kind: RowKind::Moved,
            left,
            right,
            // Filled in once the other copy's row exists.
            moved_to: None,
        });
    }

    fn push_one_sided(&mut self, text: &str, side: Side) {
        let words = count_words(text);
        let row = match side {
            Side::Left => {
                self.counts.left_words += words;
                Row {
                    kind: RowKind::Removed,
                    left: Some(vec![segment(text, SegmentKind::Removed)]),
                    right: None,
                    moved_to: None,
                }
            }
            Side::Right => {
                self.counts.right_words += words;
                Row {
                    kind: RowKind::Added,
                    left: None,
                    right: Some(vec![segment(text, SegmentKind::Added)]),
                    moved_to: None,
                }
            }
        };
        self.rows.push(row);
    }

    /// A changed row from a word diff of `left` and `right`, or a removed row plus an added
    /// row when they share too little (see `MIN_SHARED_PERCENT`).
    fn push_pair(&mut self, left: &str, right: &str) {
        let now = Instant::now();
        let deadline = match (now.checked_add(self.word_diff_pair), self.word_deadline) {
            (Some(pair), Some(budget)) => Some(pair.min(budget)),
            (pair, budget) => pair.or(budget),
        };
        let (old, new, ops) = word_diff(left, right, deadline);
        let (ops, exact) = aligned_ops(&ops, old.len(), new.len());
        // The pair's keys differ, so the diff always has changes: a passed deadline means
        // it may have been cut short.
        self.coarse |= !exact || passed(deadline);
        let ops = tidy_word_ops(ops, &old, &new);

        let mut left_segments = Vec::new();
        let mut right_segments = Vec::new();
        let mut counts = Counts::default();
        for (k, op) in ops.iter().enumerate() {
            let old_tokens = &old[op.old_range.clone()];
            let new_tokens = &new[op.new_range.clone()];
            let old_words = old_tokens.iter().filter(|t| is_word(t)).count();
            let new_words = new_tokens.iter().filter(|t| is_word(t)).count();
            counts.left_words += old_words;
            counts.right_words += new_words;
            let (left_kind, right_kind) = if op.equal {
                counts.same_words_left += old_words;
                counts.same_words_right += new_words;
                // Whitespace alone between two changes of one side joins them there: "one
                // two" replaced by "uno dos" is one highlight per side, not two with a gap.
                let between = |side: fn(&Op) -> &Range<usize>| {
                    let prev = k.checked_sub(1).and_then(|k| ops.get(k));
                    let next = ops.get(k + 1);
                    // Ops alternate, so the neighbours of an equal op are changes.
                    prev.zip(next)
                        .is_some_and(|(p, n)| !side(p).is_empty() && !side(n).is_empty())
                };
                let blank = old_tokens.iter().chain(new_tokens).all(|t| is_blank(t));
                let left_joined = blank && between(|op| &op.old_range);
                let right_joined = blank && between(|op| &op.new_range);
                (
                    if left_joined {
                        SegmentKind::Removed
                    } else {
                        SegmentKind::Same
                    },
                    if right_joined {
                        SegmentKind::Added
                    } else {
                        SegmentKind::Same
                    },
                )
            } else {
                (SegmentKind::Removed, SegmentKind::Added)
            };
            push_segment(&mut left_segments, old_tokens, left_kind);
            push_segment(&mut right_segments, new_tokens, right_kind);
        }

        let shared = counts.same_words_left + counts.same_words_right;
        let total = counts.left_words + counts.right_words;
        if total > 0 && shared * 100 < total * MIN_SHARED_PERCENT {
            self.push_one_sided(left, Side::Left);
            self.push_one_sided(right, Side::Right);
            return;
        }
        self.counts.left_words += counts.left_words;
        self.counts.right_words += counts.right_words;
        self.counts.same_words_left += counts.same_words_left;
        self.counts.same_words_right += counts.same_words_right;
        self.rows.push(Row {
            kind: RowKind::Changed,
            left: Some(left_segments),
            right: Some(right_segments),
            moved_to: None,
        });
    }
}

/// The unicode-word tokens (UAX #29 word boundaries, whitespace and punctuation included,
/// so they concatenate back to the text) of `left` and `right`, and `similar`'s patience
/// diff of them under `deadline`. Patience anchors on words found once on each side, which
/// keeps long reflowed paragraphs aligned where a minimal (Myers) diff may match a common
/// word far away; between anchors it runs Myers anyway.
///
/// Every whitespace token compares equal to every other: a line break against a space or
/// two spaces against one must not decide the alignment, or reflowed text would show the
/// same word removed on one side and added on the other.
fn word_diff<'a>(
    left: &'a str,
    right: &'a str,
    deadline: Option<Instant>,
) -> (Vec<&'a str>, Vec<&'a str>, Vec<similar::DiffOp>) {
    let old = left.tokenize_unicode_words();
    let new = right.tokenize_unicode_words();
    // Interned to u32 so that the diff compares integers, not strings.
    let mut ids = HashMap::<&str, u32>::new();
    let mut id = |token: &&'a str| -> u32 {
        let token: &str = if is_blank(token) { " " } else { token };
        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        *ids.entry(token).or_insert(next)
    };
    let old_ids: Vec<u32> = old.iter().map(&mut id).collect();
    let new_ids: Vec<u32> = new.iter().map(&mut id).collect();
    let ops =
        similar::capture_diff_slices_deadline(Algorithm::Patience, &old_ids, &new_ids, deadline);
    (old, new, ops)
}

/// A stretch of a diff: equal on both sides, or changed (deleted, inserted or replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Op {
    equal: bool,
    old_range: Range<usize>,
    new_range: Range<usize>,
}

/// `similar`'s ops with their ranges laid end to end, and whether they covered both
/// sequences exactly.
///
/// `similar` 2.x can report an empty range (the old side of an insert, the new side of a
/// delete) at a stale position after compacting, so only the range lengths are trusted
/// here. Should the non-empty ranges not tile both sequences in order, the diff is replaced
/// by one change over everything (and reported as not exact), which still round-trips.
fn aligned_ops(ops: &[similar::DiffOp], old_len: usize, new_len: usize) -> (Vec<Op>, bool) {
    let (mut old_at, mut new_at) = (0, 0);
    let mut aligned = Vec::with_capacity(ops.len());
    for op in ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        let in_order = (old_range.is_empty() || old_range.start == old_at)
            && (new_range.is_empty() || new_range.start == new_at);
        if !in_order {
            break;
        }
        aligned.push(Op {
            equal: tag == DiffTag::Equal,
            old_range: old_at..old_at + old_range.len(),
            new_range: new_at..new_at + new_range.len(),
        });
        old_at += old_range.len();
        new_at += new_range.len();
    }
    if old_at == old_len && new_at == new_len && aligned.len() == ops.len() {
        return (aligned, true);
    }
    let everything = Op {
        equal: false,
        old_range: 0..old_len,
        new_range: 0..new_len,
    };
    (merge_neighbours([everything]), false)
}

/// Drops empty ops and merges neighbours of the same kind, so that equal and changed ops
/// alternate. The ops must tile both sequences in order.
fn merge_neighbours(ops: impl IntoIterator<Item = Op>) -> Vec<Op> {
    let mut merged: Vec<Op> = Vec::new();
    for op in ops {
        if op.old_range.is_empty() && op.new_range.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some(last) if last.equal == op.equal => {
                last.old_range.end = op.old_range.end;
                last.new_range.end = op.new_range.end;
            }
            _ => merged.push(op),
        }
    }
    merged
}

/// Makes the highlights of a word diff hug the words: whitespace at either end of a change
/// is moved into the neighbouring equal ops, so that re-indented or reflowed text does not
/// highlight invisible characters. Equal and changed ops still alternate.
///
/// Equal ops may then differ in whitespace between the sides; every token stays in exactly
/// one op, in order, so the sides still round-trip.
fn tidy_word_ops(ops: Vec<Op>, old: &[&str], new: &[&str]) -> Vec<Op> {
    let mut split = Vec::with_capacity(ops.len() * 3);
    for op in ops {
        if op.equal {
            split.push(op);
            continue;
        }
        let Op {
            old_range,
            new_range,
            ..
        } = op;
        let old_lead = old_range.start + blank_run(old[old_range.clone()].iter());
        let new_lead = new_range.start + blank_run(new[new_range.clone()].iter());
        let old_trail = old_range.end - blank_run(old[old_lead..old_range.end].iter().rev());
        let new_trail = new_range.end - blank_run(new[new_lead..new_range.end].iter().rev());
        split.push(Op {
            equal: true,
            old_range: old_range.start..old_lead,
            new_range: new_range.start..new_lead,
        });
        split.push(Op {
            equal: false,
            old_range: old_lead..old_trail,
            new_range: new_lead..new_trail,
        });
        split.push(Op {
            equal: true,
            old_range: old_trail..old_range.end,
            new_range: new_trail..new_range.end,
        });
    }
    merge_neighbours(split)
}

/// The number of leading whitespace-only tokens.
fn blank_run<'a>(tokens: impl Iterator<Item = &'a &'a str>) -> usize {
    tokens.take_while(|t| is_blank(t)).count()
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Left,
    Right,
}

fn segment(text: &str, kind: SegmentKind) -> Segment {
    Segment {
        text: text.to_owned(),
        kind,
    }
}

/// Appends `tokens` as a segment of `kind`, extending the last segment when it has the
/// same kind so that rows stay compact.
fn push_segment(segments: &mut Vec<Segment>, tokens: &[&str], kind: SegmentKind) {
    if tokens.is_empty() {
        return;
    }
    match segments.last_mut() {
        Some(last) if last.kind == kind => tokens.iter().for_each(|t| last.text.push_str(t)),
        _ => segments.push(Segment {
            text: tokens.concat(),
            kind,
        }),
    }
}

fn is_blank(token: &str) -> bool {
    token.trim().is_empty()
}

fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|deadline| Instant::now() >= deadline)
}

/// A word token from UAX #29 word boundaries: one with a letter or digit in it (so not
/// whitespace or punctuation).
fn is_word(token: &str) -> bool {
    token.chars().any(char::is_alphanumeric)
}

fn count_words(text: &str) -> usize {
    text.tokenize_unicode_words()
        .into_iter()
        .filter(|t| is_word(t))
        .count()
}

/// The paragraph's comparison key: its words separated by single spaces.
fn collapse_whitespace(text: &str) -> String {
    let mut key = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(word);
    }
    key
}

/// Splits `text` into paragraphs: blocks of lines between blank (whitespace-only) lines,
/// or each line when there is no blank line and at least `LINE_MODE_MIN_LINES` lines.
/// A paragraph runs from the start of its first line to the end of its last line, line
/// break excluded, so only whitespace is dropped between paragraphs.
fn paragraphs(text: &str) -> Vec<&str> {
    // (start, end) byte offsets of each line's content, without "\n" or "\r\n". The offsets
    // sit next to '\n' or '\r' or at the ends of `text`, so they are char boundaries.
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        lines.push((offset, offset + content.len()));
        offset += line.len();
    }
    let is_blank = |&(start, end): &(usize, usize)| text[start..end].trim().is_empty();

    if lines.len() >= LINE_MODE_MIN_LINES && !lines.iter().any(is_blank) {
        return lines
            .iter()
            .map(|&(start, end)| &text[start..end])
            .collect();
    }
    let mut paragraphs = Vec::new();
    let mut block: Option<(usize, usize)> = None;
    for line in &lines {
        if is_blank(line) {
            if let Some((start, end)) = block.take() {
                paragraphs.push(&text[start..end]);
            }
        } else {
            let start = block.map_or(line.0, |(start, _)| start);
            block = Some((start, line.1));
        }
    }
    if let Some((start, end)) = block {
        paragraphs.push(&text[start..end]);
    }
    paragraphs
}

#[cfg(test)]
mod tests;
