//! Deterministic, real-looking edits of a text: word edits, moved blocks, bylines and
//! dates, truncation, cosmetic changes.

use std::collections::HashSet;

use crate::rng::Rng;

/// Words with their trailing whitespace: "word " pieces, so edits keep the layout.
pub(crate) fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_ws = false;
    for c in text.chars() {
        let ws = c.is_whitespace();
        if !ws && in_ws {
            out.push(std::mem::take(&mut cur));
        }
        in_ws = ws;
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

pub(crate) fn split_ws(piece: &str) -> (&str, &str) {
    let end = piece
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or(piece.len(), |(i, _)| i);
    piece.split_at(end)
}

/// `k` random word substitutions, insertions and deletions (2:1:1), with words of the corpus.
pub(crate) fn word_edits(text: &str, k: usize, rng: &mut Rng, vocab: &[String]) -> String {
    let mut p = pieces(text);
    for _ in 0..k {
        if p.len() < 2 {
            break;
        }
        let i = rng.below(p.len());
        let word = &vocab[rng.below(vocab.len())];
        match rng.below(4) {
            0 | 1 => {
                let (_, ws) = split_ws(&p[i]);
                let ws = if ws.is_empty() { "" } else { ws };
                p[i] = format!("{word}{ws}");
            }
            2 => p.insert(i, format!("{word} ")),
            _ => {
                let (_, ws) = split_ws(&p[i]);
                let ws = ws.to_owned();
                p.remove(i);
                if i > 0 && ws.contains('\n') {
                    let (w, _) = split_ws(&p[i - 1]);
                    let w = w.to_owned();
                    p[i - 1] = w + &ws;
                }
            }
        }
    }
    p.concat()
}

/// Moves one paragraph (or, with fewer than three, one sentence) elsewhere.
pub(crate) fn move_block(text: &str, rng: &mut Rng) -> String {
    let mut paras: Vec<&str> = text.split("\n\n").collect();
    if paras.len() >= 3 {
        let from = rng.below(paras.len());
        let p = paras.remove(from);
        let mut to = rng.below(paras.len() + 1);
        if to == from {
            to = (to + 1) % (paras.len() + 1);
        }
        paras.insert(to, p);
        return paras.join("\n\n");
    }
    let mut sents: Vec<&str> = text.split_inclusive(". ").collect();
    if sents.len() >= 3 {
        let from = rng.below(sents.len());
        let s = sents.remove(from);
        let to = rng.below(sents.len() + 1);
        sents.insert(to, s);
        return sents.concat();
    }
    text.to_owned()
}

pub(crate) const NAMES: [&str; 12] = [
    "Maria Garcia",
    "John Smith",
    "Wei Zhang",
    "Olga Petrova",
    "Ahmed Hassan",
    "Laura Rossi",
    "Kenji Sato",
    "Fatima Diallo",
    "Peter Novak",
    "Ana Silva",
    "David Cohen",
    "Ingrid Larsen",
];
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

pub(crate) fn date(rng: &mut Rng) -> String {
    format!(
        "{} {}, {}",
        MONTHS[rng.below(12)],
        1 + rng.below(28),
        2003 + rng.below(22)
    )
}

/// A byline or date on top, a trailer at the bottom, or changed years.
pub(crate) fn byline(text: &str, rng: &mut Rng) -> String {
    let name = NAMES[rng.below(NAMES.len())];
    match rng.below(3) {
        0 => format!("By {name}\n{}\n\n{text}", date(rng)),
        1 => format!(
            "{}\n\n--\nPosted by {name} on {}. Last updated {}.\n",
            text.trim_end(),
            date(rng),
            date(rng)
        ),
        _ => {
            // Change every year-looking token (copyright years, release dates).
            let mut out = String::with_capacity(text.len());
            let mut changed = false;
            for p in pieces(text) {
                let (w, ws) = split_ws(&p);
                let digits: String = w.chars().filter(|c| c.is_ascii_digit()).collect();
                if digits.len() == 4
                    && (digits.starts_with("19") || digits.starts_with("20"))
                    && w.contains(digits.as_str())
                {
                    let y = 1990 + rng.below(35);
                    out.push_str(&w.replace(digits.as_str(), &y.to_string()));
                    out.push_str(ws);
                    changed = true;
                } else {
                    out.push_str(&p);
                }
            }
            if changed {
                out
            } else {
                format!("{}\n\nRevised {}.\n", text.trim_end(), date(rng))
            }
        }
    }
}

/// Cuts the last 5-15%, at a word boundary.
pub(crate) fn truncate(text: &str, rng: &mut Rng) -> String {
    let keep = (text.len() as f64 * (1.0 - rng.range(0.05, 0.15))) as usize;
    let mut cut = keep.min(text.len());
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind(char::is_whitespace).unwrap_or(cut);
    text[..cut].to_owned()
}

/// The same words with changed whitespace, case and punctuation.
pub(crate) fn cosmetic(text: &str, rng: &mut Rng) -> String {
    let mode = rng.below(3);
    let mut out = String::with_capacity(text.len() + 64);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            // Reflow: join some lines, double some breaks.
            out.push_str(match (mode, rng.below(4)) {
                (0, 0) | (0, 1) => " ",
                (_, 0) => "\n\n",
                _ => "\n",
            });
        }
        let line = if mode == 1 && rng.chance(0.3) {
            line.to_uppercase()
        } else if mode == 2 {
            line.replace(", ", " ; ").replace(". ", "!  ")
        } else {
            line.trim_start().to_owned()
        };
        out.push_str(&line);
    }
    out
}

pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// One edited version of `text`; returns (kind label, text).
pub(crate) fn edit(text: &str, rng: &mut Rng, vocab: &[String]) -> (String, String) {
    let kind = rng.below(100);
    let one = |kind: usize, text: &str, rng: &mut Rng| -> (String, String) {
        match kind {
            0..=44 => {
                let n = word_count(text).max(1);
                let k = if rng.chance(0.2) {
                    1 + rng.below(3)
                } else {
                    let f = (rng.range((0.002f64).ln(), (0.12f64).ln())).exp();
                    ((f * n as f64).round() as usize).max(1)
                };
                (format!("words{k}"), word_edits(text, k, rng, vocab))
            }
            45..=54 => ("move".into(), move_block(text, rng)),
            55..=66 => ("byline".into(), byline(text, rng)),
            67..=78 => ("truncate".into(), truncate(text, rng)),
            _ => ("cosmetic".into(), cosmetic(text, rng)),
        }
    };
    if kind < 90 {
        one(kind, text, rng)
    } else {
        let (a, t) = one(rng.below(89), text, rng);
        let (b, t) = one(rng.below(89), &t, rng);
        (format!("{a}+{b}"), t)
    }
}

pub(crate) fn vocabulary(docs: &[(String, String)]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut v = Vec::new();
    for (_, t) in docs {
        for w in t.split_whitespace() {
            if (3..=12).contains(&w.len())
                && w.chars().all(|c| c.is_ascii_alphabetic())
                && seen.insert(w.to_ascii_lowercase())
            {
                v.push(w.to_ascii_lowercase());
            }
        }
    }
    v.sort();
    v
}
