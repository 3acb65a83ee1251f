//! The side-by-side diff's tests: behaviour, edge cases, paging, limits, real text and
//! property tests of the round trip.

use super::*;
use proptest::prelude::*;

/// Each row's text on one side (rows without that side skipped), for round trips.
fn side_texts(diff: &SideBySide, left: bool) -> Vec<String> {
    diff.rows
        .iter()
        .filter_map(|row| if left { &row.left } else { &row.right }.as_ref())
        .map(|segments| segments.iter().map(|s| s.text.as_str()).collect())
        .collect()
}

fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The invariants every diff keeps: both sides round-trip, row shapes match kinds,
/// moved rows point at each other, counts add up.
fn check_invariants(left: &str, right: &str, diff: &SideBySide) {
    let left_paragraphs: Vec<String> = paragraphs(left).into_iter().map(String::from).collect();
    let right_paragraphs: Vec<String> = paragraphs(right).into_iter().map(String::from).collect();
    assert_eq!(side_texts(diff, true), left_paragraphs);
    assert_eq!(side_texts(diff, false), right_paragraphs);
    // Only whitespace is lost between paragraphs.
    assert_eq!(
        without_whitespace(&left_paragraphs.concat()),
        without_whitespace(left)
    );
    assert_eq!(
        without_whitespace(&right_paragraphs.concat()),
        without_whitespace(right)
    );

    for (index, row) in diff.rows.iter().enumerate() {
        let kinds = |side: &Option<Vec<Segment>>| -> Vec<SegmentKind> {
            side.iter().flatten().map(|s| s.kind).collect()
        };
        let (left_kinds, right_kinds) = (kinds(&row.left), kinds(&row.right));
        for side in [&row.left, &row.right].into_iter().flatten() {
            assert!(!side.is_empty(), "row {index} has an empty side: {row:?}");
            assert!(side.iter().all(|s| !s.text.is_empty()), "{row:?}");
            assert!(
                side.windows(2).all(|w| w[0].kind != w[1].kind),
                "not merged: {row:?}"
            );
        }
        match row.kind {
            RowKind::Same => {
                assert_eq!(left_kinds, [SegmentKind::Same]);
                assert_eq!(right_kinds, [SegmentKind::Same]);
            }
            RowKind::Changed => {
                assert!(row.left.is_some() && row.right.is_some());
                assert!(left_kinds
                    .iter()
                    .all(|k| matches!(k, SegmentKind::Same | SegmentKind::Removed)));
                assert!(right_kinds
                    .iter()
                    .all(|k| matches!(k, SegmentKind::Same | SegmentKind::Added)));
            }
            RowKind::Removed => {
                assert_eq!(left_kinds, [SegmentKind::Removed]);
                assert!(row.right.is_none());
            }
            RowKind::Added => {
                assert!(row.left.is_none());
                assert_eq!(right_kinds, [SegmentKind::Added]);
            }
            RowKind::Moved => {
                assert!(row.left.is_some() != row.right.is_some());
                let other = row.moved_to.expect("a moved row names its other copy");
                let other_row = &diff.rows[other];
                assert_eq!(other_row.kind, RowKind::Moved);
                assert_eq!(other_row.moved_to, Some(index));
                assert!(other_row.left.is_some() == row.right.is_some());
                let text = |row: &Row| {
                    let side = row.left.as_ref().or(row.right.as_ref());
                    collapse_whitespace(&side.expect("one side")[0].text)
                };
                assert_eq!(text(row), text(other_row));
            }
        }
        if row.kind != RowKind::Moved {
            assert_eq!(row.moved_to, None);
        }
    }

    assert_eq!(diff.left_words, count_words(&left_paragraphs.join("\n\n")));
    assert_eq!(
        diff.right_words,
        count_words(&right_paragraphs.join("\n\n"))
    );
    assert!(diff.same_words_left <= diff.left_words);
    assert!(diff.same_words_right <= diff.right_words);
}

/// The diff with time limits no test machine reaches, for tests that expect exact rows.
fn exact_diff(left: &str, right: &str) -> SideBySide {
    let minute = Duration::from_secs(60);
    let limits = Limits {
        paragraph_diff: minute,
        word_diff_budget: minute,
        word_diff_pair: minute,
    };
    side_by_side_within(left, right, limits)
}

fn row_kinds(diff: &SideBySide) -> Vec<RowKind> {
    diff.rows.iter().map(|row| row.kind).collect()
}

fn seg(text: &str, kind: SegmentKind) -> Segment {
    segment(text, kind)
}

#[test]
fn identical_texts_give_only_same_rows() {
    let text = "First paragraph here.\n\nSecond one, a bit longer.\n\nThird.\n";
    let diff = side_by_side(text, text);
    check_invariants(text, text, &diff);
    assert_eq!(row_kinds(&diff), [RowKind::Same; 3]);
    assert_eq!(diff.left_words, 9);
    assert_eq!(diff.same_words_left, 9);
    assert_eq!(diff.same_words_right, 9);
    assert!(!diff.coarse);
}

#[test]
fn reflowed_paragraph_is_same_and_keeps_each_sides_text() {
    let left = "The quick brown fox\njumps over the lazy dog.";
    let right = "  The quick brown\nfox jumps   over the\nlazy dog.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(row_kinds(&diff), [RowKind::Same]);
    assert_eq!(
        diff.rows[0].right,
        Some(vec![seg(right, SegmentKind::Same)])
    );
}

#[test]
fn one_changed_word_is_marked_inside_a_changed_row() {
    let left = "Intro stays.\n\nThe cat sat on the mat today.\n\nOutro stays.";
    let right = "Intro stays.\n\nThe cat sat on the rug today.\n\nOutro stays.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        row_kinds(&diff),
        [RowKind::Same, RowKind::Changed, RowKind::Same]
    );
    let row = &diff.rows[1];
    assert_eq!(
        row.left,
        Some(vec![
            seg("The cat sat on the ", SegmentKind::Same),
            seg("mat", SegmentKind::Removed),
            seg(" today.", SegmentKind::Same),
        ])
    );
    assert_eq!(
        row.right,
        Some(vec![
            seg("The cat sat on the ", SegmentKind::Same),
            seg("rug", SegmentKind::Added),
            seg(" today.", SegmentKind::Same),
        ])
    );
    assert_eq!(diff.left_words, 11);
    assert_eq!(diff.same_words_left, 10);
    assert_eq!(diff.same_words_right, 10);
}

#[test]
fn whitespace_only_edits_inside_a_changed_row_stay_same() {
    let left = "The cat sat  on the\n      mat.";
    let right = "The cat sat on the rug.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        diff.rows[0].left,
        Some(vec![
            seg("The cat sat  on the\n      ", SegmentKind::Same),
            seg("mat", SegmentKind::Removed),
            seg(".", SegmentKind::Same),
        ])
    );
}

#[test]
fn whitespace_between_changed_words_joins_one_highlight() {
    let left = "keep one two three keep keep";
    let right = "keep uno dos tres keep keep";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        diff.rows[0].left,
        Some(vec![
            seg("keep ", SegmentKind::Same),
            seg("one two three", SegmentKind::Removed),
            seg(" keep keep", SegmentKind::Same),
        ])
    );
}

#[test]
fn paragraph_moved_from_top_to_bottom_gives_two_moved_rows() {
    let left = "Moving paragraph goes here.\n\nAlpha stays.\n\nBeta stays.\n\nGamma stays.";
    let right = "Alpha stays.\n\nBeta stays.\n\nGamma stays.\n\nMoving paragraph\ngoes here.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        row_kinds(&diff),
        [
            RowKind::Moved,
            RowKind::Same,
            RowKind::Same,
            RowKind::Same,
            RowKind::Moved
        ]
    );
    assert_eq!(diff.rows[0].moved_to, Some(4));
    assert_eq!(diff.rows[4].moved_to, Some(0));
    assert!(diff.rows[0].right.is_none() && diff.rows[4].left.is_none());
    assert_eq!(diff.same_words_left, diff.left_words);
    assert_eq!(diff.same_words_right, diff.right_words);
}

#[test]
fn cjk_without_spaces_diffs_by_character_words() {
    let left = "我喜欢吃苹果和香蕉";
    let right = "我喜欢吃橙子和香蕉";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(row_kinds(&diff), [RowKind::Changed]);
    assert_eq!(
        diff.rows[0].left,
        Some(vec![
            seg("我喜欢吃", SegmentKind::Same),
            seg("苹果", SegmentKind::Removed),
            seg("和香蕉", SegmentKind::Same),
        ])
    );
    assert_eq!(
        diff.rows[0].right,
        Some(vec![
            seg("我喜欢吃", SegmentKind::Same),
            seg("橙子", SegmentKind::Added),
            seg("和香蕉", SegmentKind::Same),
        ])
    );
    assert_eq!((diff.left_words, diff.same_words_left), (9, 7));
}

#[test]
fn empty_left_gives_only_added_rows() {
    let right = "One.\n\nTwo words.";
    let diff = exact_diff("", right);
    check_invariants("", right, &diff);
    assert_eq!(row_kinds(&diff), [RowKind::Added, RowKind::Added]);
    assert_eq!(
        (diff.left_words, diff.right_words, diff.same_words_right),
        (0, 3, 0)
    );
}

#[test]
fn empty_right_gives_only_removed_rows() {
    let left = "One.\n\n\n  \nTwo words.\n";
    let diff = exact_diff(left, "  \n");
    check_invariants(left, "  \n", &diff);
    assert_eq!(row_kinds(&diff), [RowKind::Removed, RowKind::Removed]);
}

#[test]
fn both_empty_give_no_rows_and_no_pages() {
    let diff = exact_diff("", "");
    assert!(diff.rows.is_empty());
    let page = diff.page(0, 10);
    assert_eq!((page.rows.len(), page.pages, page.total_rows), (0, 0, 0));
}

#[test]
fn very_different_pair_becomes_removed_then_added_rows() {
    let left = "Same start.\n\nApples are red and crunchy in autumn.\n\nSame end.";
    let right = "Same start.\n\nTrains leave hourly from platform nine.\n\nSame end.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        row_kinds(&diff),
        [
            RowKind::Same,
            RowKind::Removed,
            RowKind::Added,
            RowKind::Same
        ]
    );
}

#[test]
fn unpaired_paragraphs_of_a_change_become_removed_rows() {
    let left = "Keep.\n\nFirst old line one.\n\nSecond old thing.\n\nThird old thing.\n\nKeep too.";
    let right = "Keep.\n\nFirst new line one.\n\nKeep too.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        row_kinds(&diff),
        [
            RowKind::Same,
            RowKind::Changed,
            RowKind::Removed,
            RowKind::Removed,
            RowKind::Same
        ]
    );
}

#[test]
fn moved_paragraph_inside_a_change_keeps_both_orders() {
    let left = "Moved paragraph text.\n\nOld words here now.\n\nAnchor.";
    let right = "Anchor.\n\nNew words here now.\n\nMoved paragraph text.";
    let diff = exact_diff(left, right);
    check_invariants(left, right, &diff);
    assert_eq!(
        row_kinds(&diff)
            .iter()
            .filter(|k| **k == RowKind::Moved)
            .count(),
        2,
        "{diff:?}"
    );
}

#[test]
fn splits_on_blank_lines_or_on_lines_without_them() {
    assert_eq!(
        paragraphs("a b\nc\n\n \t\nd\r\n\r\ne\n"),
        ["a b\nc", "d", "e"]
    );
    assert_eq!(paragraphs("one\ntwo\nthree"), ["one\ntwo\nthree"]);
    assert_eq!(paragraphs("1\n2\n3\n4\n"), ["1", "2", "3", "4"]);
    assert_eq!(
        paragraphs("  indented\r\n  more\r\n"),
        ["  indented\r\n  more"]
    );
    assert!(paragraphs("").is_empty());
    assert!(paragraphs("\n \n\t\n").is_empty());
}

#[test]
fn paging_splits_rows_and_the_last_page_is_short() {
    let text: String = (0..7)
        .map(|i| format!("Paragraph number {i}.\n\n"))
        .collect();
    let diff = exact_diff(&text, &text);
    assert_eq!(diff.rows.len(), 7);
    let first = diff.page(0, 3);
    assert_eq!(
        (first.rows.len(), first.page, first.pages, first.total_rows),
        (3, 0, 3, 7)
    );
    assert_eq!(first.rows, diff.rows[0..3]);
    let second = diff.page(1, 3);
    assert_eq!(second.rows, diff.rows[3..6]);
    let last = diff.page(2, 3);
    assert_eq!(last.rows, diff.rows[6..7]);
    assert_eq!(last.pages, 3);
}

#[test]
fn page_past_the_end_is_empty_with_same_totals() {
    let text = "a.\n\nb.\n\nc.";
    let diff = exact_diff(text, text);
    for page in [3, 4, usize::MAX] {
        let past = diff.page(page, 1);
        assert!(past.rows.is_empty());
        assert_eq!((past.page, past.pages, past.total_rows), (page, 3, 3));
    }
    let zero = diff.page(1, 0);
    assert_eq!((zero.rows.len(), zero.pages), (1, 3));
    assert_eq!(zero.rows[0], diff.rows[1]);
    let huge = diff.page(usize::MAX, usize::MAX);
    assert!(huge.rows.is_empty());
    assert_eq!(huge.pages, 1);
}

#[test]
fn serializes_kinds_in_snake_case() {
    let left = "Moved here.\n\nAnchor one.\n\nAnchor two.\n\nx y z";
    let right = "Anchor one.\n\nAnchor two.\n\nx y w\n\nMoved here.";
    let diff = exact_diff(left, right);
    let json = serde_json::to_value(diff.page(0, 10)).expect("serializes");
    let rows = json["rows"].as_array().expect("rows");
    let kinds: Vec<&str> = rows.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["moved", "same", "same", "changed", "moved"]);
    assert_eq!(rows[0]["left"][0]["kind"], "moved");
    assert_eq!(rows[0]["right"], serde_json::Value::Null);
    assert_eq!(rows[0]["moved_to"], 4);
    assert_eq!(rows[1]["moved_to"], serde_json::Value::Null);
    assert_eq!(rows[3]["left"][1]["kind"], "removed");
    assert_eq!(rows[3]["right"][1]["kind"], "added");
    assert_eq!(rows[3]["right"][1]["text"], "w");
    assert_eq!(json["total_rows"], 5);
    assert_eq!(json["pages"], 1);
}

#[test]
fn expired_deadlines_set_coarse_and_still_round_trip() {
    let left = "alpha beta gamma delta\n\nshared paragraph\n\nepsilon zeta eta theta";
    let right = "alpha beta GAMMA delta\n\nshared paragraph\n\nepsilon ZETA eta theta\n\nnew";
    let zero = Limits {
        paragraph_diff: Duration::ZERO,
        word_diff_budget: Duration::ZERO,
        word_diff_pair: Duration::ZERO,
    };
    let diff = side_by_side_within(left, right, zero);
    check_invariants(left, right, &diff);
    assert!(diff.coarse);
    // Identical texts are never coarse, even with no time at all.
    assert!(!side_by_side_within(left, left, zero).coarse);
}

/// A deterministic pseudo-random stream (no RNG crate needed for a fixture).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

const WORDS: &[&str] = &[
    "the",
    "index",
    "stores",
    "every",
    "fingerprint",
    "within",
    "distance",
    "of",
    "a",
    "query",
    "and",
    "returns",
    "candidates",
    "which",
    "are",
    "verified",
    "by",
    "exact",
    "jaccard",
    "over",
    "shingles",
    "before",
    "merging",
    "records",
    "with",
    "their",
    "urls",
];

fn sentence(rng: &mut Lcg) -> String {
    let len = 6 + rng.below(12);
    let mut words: Vec<&str> = (0..len).map(|_| WORDS[rng.below(WORDS.len())]).collect();
    words.push("end.");
    words.join(" ")
}

/// About 100 KB of paragraphs, and a copy with words changed, paragraphs deleted,
/// inserted and moved.
fn large_pair(separator: &str) -> (String, String) {
    let mut rng = Lcg(7);
    let mut paragraphs: Vec<String> = Vec::new();
    let mut size = 0;
    while size < 100_000 {
        let count = 2 + rng.below(5);
        let paragraph: Vec<String> = (0..count).map(|_| sentence(&mut rng)).collect();
        let paragraph = paragraph.join(" ");
        size += paragraph.len() + separator.len();
        paragraphs.push(paragraph);
    }
    let mut edited = paragraphs.clone();
    for _ in 0..40 {
        let i = rng.below(edited.len());
        let mut words: Vec<String> = edited[i].split(' ').map(String::from).collect();
        let w = rng.below(words.len());
        words[w] = "CHANGED".to_owned();
        edited[i] = words.join(" ");
    }
    for _ in 0..5 {
        let i = rng.below(edited.len());
        edited.remove(i);
        let j = rng.below(edited.len());
        edited.insert(j, sentence(&mut rng));
        let from = rng.below(edited.len());
        let moved = edited.remove(from);
        let to = rng.below(edited.len());
        edited.insert(to, moved);
    }
    (paragraphs.join(separator), edited.join(separator))
}

#[test]
fn hundred_kb_pair_completes_and_round_trips() {
    let (left, right) = large_pair("\n\n");
    assert!(left.len() >= 100_000);
    let diff = exact_diff(&left, &right);
    check_invariants(&left, &right, &diff);
    assert!(diff.rows.iter().any(|row| row.kind == RowKind::Changed));
    assert!(diff.rows.iter().any(|row| row.kind == RowKind::Moved));
    assert!(
        diff.same_words_left * 10 > diff.left_words * 9,
        "mostly the same"
    );
}

#[test]
fn hundred_kb_single_paragraph_pair_completes_and_round_trips() {
    // No blank lines and one line: one paragraph per side, a single huge word diff.
    let (left, right) = large_pair(" ");
    let diff = side_by_side(&left, &right);
    check_invariants(&left, &right, &diff);
    // Past its time limit (a slow debug build) the pair may fall back to removed + added.
    if !diff.coarse {
        assert_eq!(row_kinds(&diff), [RowKind::Changed]);
    }
}

/// Paragraphs from the Apache License 2.0 (/usr/share/common-licenses/Apache-2.0).
const LICENCE: &str = r#"      "License" shall mean the terms and conditions for use, reproduction,
      and distribution as defined by Sections 1 through 9 of this document.

      "Licensor" shall mean the copyright owner or entity authorized by
      the copyright owner that is granting the License.

      "You" (or "Your") shall mean an individual or Legal Entity
      exercising permissions granted by this License.

      "Legal Entity" shall mean the union of the acting entity and all
      other entities that control, are controlled by, or are under common
      control with that entity. For the purposes of this definition,
      "control" means (i) the power, direct or indirect, to cause the
      direction or management of such entity, whether by contract or
      otherwise, or (ii) ownership of fifty percent (50%) or more of the
      outstanding shares, or (iii) beneficial ownership of such entity.

      "Source" form shall mean the preferred form for making modifications,
      including but not limited to software source code, documentation
      source, and configuration files.

      "Object" form shall mean any form resulting from mechanical
      transformation or translation of a Source form, including but
      not limited to compiled object code, generated documentation,
      and conversions to other media types.
"#;

/// The same, reworded: re-indented throughout, "License" reflowed, one word changed in
/// "Licensor", "You" moved from before "Legal Entity" to the end, "Object" replaced by a
/// new paragraph.
const LICENCE_REWORDED: &str = r#"  "License" shall mean the terms and conditions for use,
  reproduction, and distribution as defined by Sections 1 through 9 of
  this document.

  "Licensor" shall mean the copyright holder or entity authorized by
  the copyright owner that is granting the License.

  "Legal Entity" shall mean the union of the acting entity and all
  other entities that control, are controlled by, or are under common
  control with that entity. For the purposes of this definition,
  "control" means (i) the power, direct or indirect, to cause the
  direction or management of such entity, whether by contract or
  otherwise, or (ii) ownership of fifty percent (50%) or more of the
  outstanding shares, or (iii) beneficial ownership of such entity.

  "Source" form shall mean the preferred form for making modifications,
  including but not limited to software source code, documentation
  source, and configuration files.

  "Mirror" means a copy of these terms served from another host.

  "You" (or "Your") shall mean an individual or Legal Entity
  exercising permissions granted by this License.
"#;

#[test]
fn licence_text_reworded() {
    let diff = exact_diff(LICENCE, LICENCE_REWORDED);
    check_invariants(LICENCE, LICENCE_REWORDED, &diff);
    assert_eq!(
        row_kinds(&diff),
        [
            RowKind::Same,
            RowKind::Changed,
            RowKind::Moved,
            RowKind::Same,
            RowKind::Same,
            RowKind::Removed,
            RowKind::Added,
            RowKind::Moved,
        ]
    );
    let changed = &diff.rows[1];
    let texts = |side: &Option<Vec<Segment>>, kind: SegmentKind| -> Vec<String> {
        let segments = side.iter().flatten();
        segments
            .filter(|s| s.kind == kind)
            .map(|s| s.text.clone())
            .collect()
    };
    assert_eq!(texts(&changed.left, SegmentKind::Removed), ["owner"]);
    assert_eq!(texts(&changed.right, SegmentKind::Added), ["holder"]);
    // The re-indentation is not highlighted.
    assert_eq!(
        texts(&changed.left, SegmentKind::Same)[0],
        "      \"Licensor\" shall mean the copyright "
    );
    assert_eq!(
        diff.rows[2].left.as_ref().map(|s| s[0].kind),
        Some(SegmentKind::Moved)
    );
    assert_eq!(
        (diff.rows[2].moved_to, diff.rows[7].moved_to),
        (Some(7), Some(2))
    );
    assert!(diff.rows[5]
        .left
        .as_ref()
        .is_some_and(|s| s[0].text.contains("\"Object\"")));
    assert!(!diff.coarse);
}

/// Texts from a small vocabulary (so paragraphs repeat and move), with varied
/// whitespace, line ends and CJK.
fn text() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "alpha", "beta", "gamma", "delta", "x", "y", "的", "文本", "naïve", "42", "-", "(a)",
    ]);
    let space = prop::sample::select(vec![" ", "  ", "\n", "\t", " \r\n"]);
    let paragraph = prop::collection::vec((word, space), 1..8).prop_map(|words| {
        words
            .into_iter()
            .flat_map(|(w, s)| [w, s])
            .collect::<String>()
    });
    let gap = prop::sample::select(vec!["\n\n", "\n \n", "\r\n\r\n", "\n\n\n", "\n"]);
    prop::collection::vec((paragraph, gap), 0..10).prop_map(|ps| {
        ps.into_iter()
            .flat_map(|(p, g)| [p, g.to_owned()])
            .collect()
    })
}

/// A text and an edited copy: paragraphs kept, dropped, duplicated or swapped with a
/// fresh one, then shuffled a little.
fn edited_pair() -> impl Strategy<Value = (String, String)> {
    (text(), text(), prop::collection::vec(0u8..5, 0..12)).prop_map(|(left, other, edits)| {
        let mut right: Vec<&str> = paragraphs(&left);
        let fresh = paragraphs(&other);
        for (k, edit) in edits.into_iter().enumerate() {
            if right.is_empty() {
                break;
            }
            let i = k * 7 % right.len();
            match edit {
                0 => {
                    right.remove(i);
                }
                1 => {
                    let last = right.len() - 1;
                    right.swap(i, last);
                }
                2 => right.insert(i, fresh.get(k).copied().unwrap_or("fresh")),
                3 => right[i] = fresh.get(k).copied().unwrap_or("other"),
                _ => {}
            }
        }
        let right = right.join("\n\n");
        (left, right)
    })
}

proptest! {
    /// `aligned_ops` trusts `similar` to tile both sides in order (empty ranges aside);
    /// if it ever stopped, every diff would silently turn coarse.
    #[test]
    fn prop_similar_ops_tile_both_sides(
        old in prop::collection::vec(0u8..4, 0..40),
        new in prop::collection::vec(0u8..4, 0..40),
        left in text(),
        right in text(),
    ) {
        for algorithm in [Algorithm::Patience, Algorithm::Myers] {
            let ops = similar::capture_diff_slices(algorithm, &old, &new);
            prop_assert!(aligned_ops(&ops, old.len(), new.len()).1);
        }
        let (old_tokens, new_tokens, ops) = word_diff(&left, &right, None);
        let (ops, exact) = aligned_ops(&ops, old_tokens.len(), new_tokens.len());
        prop_assert!(exact);
        for op in tidy_word_ops(ops, &old_tokens, &new_tokens) {
            if op.equal {
                let collapse = |tokens: &[&str]| collapse_whitespace(&tokens.concat());
                let (old_text, new_text) =
                    (collapse(&old_tokens[op.old_range]), collapse(&new_tokens[op.new_range]));
                prop_assert_eq!(old_text, new_text);
            }
        }
    }

    #[test]
    fn prop_sides_round_trip_on_edited_texts((left, right) in edited_pair()) {
        let diff = side_by_side(&left, &right);
        check_invariants(&left, &right, &diff);
    }

    #[test]
    fn prop_sides_round_trip_on_unrelated_texts(left in text(), right in text()) {
        let diff = side_by_side(&left, &right);
        check_invariants(&left, &right, &diff);
    }

    #[test]
    fn prop_any_input_round_trips(
        left in "\\PC*(\n\n?\\PC*){0,6}",
        right in ".*(\r?\n\\PC*){0,6}",
    ) {
        let diff = side_by_side(&left, &right);
        check_invariants(&left, &right, &diff);
    }

    #[test]
    fn prop_identical_texts_are_all_same(text in text()) {
        let diff = side_by_side(&text, &text);
        prop_assert!(diff.rows.iter().all(|row| row.kind == RowKind::Same));
        prop_assert_eq!(diff.same_words_left, diff.left_words);
    }

    #[test]
    fn prop_pages_cover_all_rows_once(
        (left, right) in edited_pair(),
        per_page in 0usize..6,
    ) {
        let diff = side_by_side(&left, &right);
        let first = diff.page(0, per_page);
        let rows: Vec<Row> = (0..first.pages.max(1))
            .flat_map(|page| diff.page(page, per_page).rows)
            .collect();
        prop_assert_eq!(rows, diff.rows.clone());
        prop_assert!(diff.page(first.pages, per_page).rows.is_empty());
    }
}
