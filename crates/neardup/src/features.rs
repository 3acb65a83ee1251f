//! Feature weights: term frequency, presence, or an IDF table learned from a corpus.
//!
//! Weights are integers (IDF in fixed point, 1/1024 units) so the vote counters are exact and
//! a fingerprint does not depend on floating-point summation order.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::text::boilerplate::IdentityHasher;
use crate::{Error, Result};

/// Fixed-point scale of IDF weights: a weight of 1.0 is stored as 1024.
pub const IDF_SCALE: f64 = 1024.0;

/// How much each shingle votes.
#[derive(Debug, Clone, Default)]
pub enum Weighting {
    /// Every occurrence votes once: a shingle repeated five times counts five times (seed 000).
    #[default]
    Tf,
    /// Each distinct shingle votes once per field, for short or repetitive records where
    /// repetition means nothing.
    Presence,
    /// Every occurrence votes with the shingle's inverse document frequency, so shingles that
    /// appear everywhere (stopword runs, legal boilerplate) weigh close to nothing.
    Idf(Arc<IdfTable>),
}

impl Weighting {
    /// A short, stable name: `tf`, `presence` or `idf`.
    pub fn name(&self) -> &'static str {
        match self {
            Weighting::Tf => "tf",
            Weighting::Presence => "presence",
            Weighting::Idf(_) => "idf",
        }
    }
}

type DfMap = HashMap<u64, u32, BuildHasherDefault<IdentityHasher>>;

/// Document frequencies of shingles over a corpus, and the IDF weights they imply.
///
/// The weight of a shingle seen in `df` of `N` documents is `ln((N + 1) / (df + 1))`, zero
/// for a shingle in every document; an unseen shingle gets the largest weight, `ln(N + 1)`.
#[derive(Debug, Clone)]
pub struct IdfTable {
    documents: u64,
    df: DfMap,
    digest: u64,
}

/// Accumulates document frequencies; see [`IdfTable::builder`].
#[derive(Debug, Default)]
pub struct IdfBuilder {
    documents: u64,
    df: DfMap,
}

impl IdfBuilder {
    /// Counts one document, given its distinct shingle hashes (duplicates are ignored).
    pub fn add_document(&mut self, shingles: impl IntoIterator<Item = u64>) {
        self.documents += 1;
        let mut seen: Vec<u64> = shingles.into_iter().collect();
        seen.sort_unstable();
        seen.dedup();
        for h in seen {
            *self.df.entry(h).or_insert(0) += 1;
        }
    }

    /// The number of documents counted so far.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// Finishes the table.
    pub fn build(self) -> IdfTable {
        IdfTable::from_parts(self.documents, self.df)
    }
}

const IDF_MAGIC: &[u8; 8] = b"NDIDF\0\0\x01";

impl IdfTable {
    /// A builder that counts documents.
    pub fn builder() -> IdfBuilder {
        IdfBuilder::default()
    }

    fn from_parts(documents: u64, df: DfMap) -> IdfTable {
        let mut entries: Vec<(u64, u32)> = df.iter().map(|(&h, &c)| (h, c)).collect();
        entries.sort_unstable();
        let mut bytes = Vec::with_capacity(entries.len() * 12 + 8);
        bytes.extend_from_slice(&documents.to_le_bytes());
        for (h, c) in &entries {
            bytes.extend_from_slice(&h.to_le_bytes());
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        let digest = xxhash_rust::xxh3::xxh3_64(&bytes);
        IdfTable {
            documents,
            df,
            digest,
        }
    }

    /// The number of documents the table was built from.
    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// The number of distinct shingles counted.
    pub fn len(&self) -> usize {
        self.df.len()
    }

    /// Whether no shingle was counted.
    pub fn is_empty(&self) -> bool {
        self.df.is_empty()
    }

    /// A hash of the table's contents; part of the fingerprint profile, so fingerprints made
    /// with different tables are never compared.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// The document frequency of a shingle.
    pub fn document_frequency(&self, shingle: u64) -> u32 {
        self.df.get(&shingle).copied().unwrap_or(0)
    }

    /// The fixed-point weight of a shingle (`IDF_SCALE` = 1.0).
    #[inline]
    pub fn weight(&self, shingle: u64) -> i64 {
        let n = self.documents as f64 + 1.0;
        let df = f64::from(self.document_frequency(shingle)) + 1.0;
        ((n / df).ln() * IDF_SCALE).round() as i64
    }

    /// Writes the table to `path` in a small versioned binary format.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut w = BufWriter::new(file);
        let mut entries: Vec<(u64, u32)> = self.df.iter().map(|(&h, &c)| (h, c)).collect();
        entries.sort_unstable();
        w.write_all(IDF_MAGIC).map_err(io)?;
        w.write_all(&self.documents.to_le_bytes()).map_err(io)?;
        w.write_all(&(entries.len() as u64).to_le_bytes())
            .map_err(io)?;
        for (h, c) in entries {
            w.write_all(&h.to_le_bytes()).map_err(io)?;
            w.write_all(&c.to_le_bytes()).map_err(io)?;
        }
        w.flush().map_err(io)
    }

    /// Reads a table written by [`save`](Self::save).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read, [`Error::Format`] when it is not an IDF
    /// table of this version or is truncated.
    pub fn load(path: &Path) -> Result<IdfTable> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let format = |reason: &str| Error::Format {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let mut r = BufReader::new(std::fs::File::open(path).map_err(io)?);
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)
            .map_err(|_| format("not an IDF table (file too short)"))?;
        if &magic != IDF_MAGIC {
            return Err(format(
                "not an IDF table of format version 1 (rebuild it with `neardup idf`)",
            ));
        }
        let mut u64buf = [0u8; 8];
        let mut read_u64 = |r: &mut BufReader<std::fs::File>| -> Result<u64> {
            r.read_exact(&mut u64buf)
                .map_err(|_| format("truncated IDF table"))?;
            Ok(u64::from_le_bytes(u64buf))
        };
        let documents = read_u64(&mut r)?;
        let count = read_u64(&mut r)?;
        let mut df = DfMap::default();
        let mut entry = [0u8; 12];
        for _ in 0..count {
            r.read_exact(&mut entry)
                .map_err(|_| format("truncated IDF table"))?;
            let h = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
            let c = u32::from_le_bytes(entry[8..].try_into().expect("4 bytes"));
            df.insert(h, c);
        }
        Ok(IdfTable::from_parts(documents, df))
    }
}

/// Words that count as one (seed 002, section 5.2): each group's words are replaced by its
/// first word before shingling, in the fingerprint and in the verification set alike, so
/// "car" and "automobile" in one group make the same shingles.
///
/// Read from a text file, one group a line, words separated by white space or commas;
/// blank lines and lines starting with `#` are skipped. A word is one token as the default
/// profile reads it (normalised: "Car" is "car"); a word in two groups is an error.
///
/// ```
/// use neardup::features::Synonyms;
/// let s = Synonyms::parse("car, automobile, auto\n# comment\nbig large", "synonyms.txt").unwrap();
/// assert_eq!(s.len(), 3);
/// assert!(Synonyms::parse("car auto\nauto vehicle", "s.txt").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Synonyms {
    /// Token hash of a word to the token hash of its group's first word.
    map: HashMap<u64, u64, BuildHasherDefault<IdentityHasher>>,
    digest: u64,
}

impl Synonyms {
    /// Reads the groups of `text`; `name` (a path) names it in errors.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the line: a word that is not one token, or a word
    /// already in another group.
    pub fn parse(text: &str, name: &str) -> Result<Synonyms> {
        let mut map = HashMap::default();
        let mut first_line: HashMap<String, usize> = HashMap::new();
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason: String| Error::InvalidInput {
                field: "synonyms",
                value: format!("{name} line {}", n + 1),
                reason,
            };
            let mut words = Vec::new();
            for raw in line.split(|c: char| c == ',' || c.is_whitespace()) {
                if raw.is_empty() {
                    continue;
                }
                let tokens = crate::text::tokens(raw, crate::text::TokenRule::Unicode);
                let [word] = &tokens[..] else {
                    return Err(bad(format!(
                        "{raw:?} is {} words as text is read; a synonym is one word",
                        tokens.len()
                    )));
                };
                if let Some(earlier) = first_line.insert(word.clone(), n + 1) {
                    if earlier != n + 1 {
                        return Err(bad(format!(
                            "{word:?} is already in the group of line {earlier}"
                        )));
                    }
                    continue;
                }
                words.push(word.clone());
            }
            let Some(canonical) = words.first().cloned() else {
                continue;
            };
            let to = crate::text::shingle::token_hash(canonical.as_bytes());
            for word in words.into_iter().skip(1) {
                map.insert(crate::text::shingle::token_hash(word.as_bytes()), to);
                pairs.push((word, canonical.clone()));
            }
        }
        pairs.sort();
        let mut bytes = Vec::new();
        for (word, canonical) in &pairs {
            bytes.extend_from_slice(word.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(canonical.as_bytes());
            bytes.push(b'\n');
        }
        Ok(Synonyms {
            map,
            digest: xxhash_rust::xxh3::xxh3_64(&bytes),
        })
    }

    /// [`parse`](Self::parse) of the file at `path`.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read, and `parse`'s.
    pub fn load(path: &Path) -> Result<Synonyms> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Synonyms::parse(&text, &path.display().to_string())
    }

    /// How many words are replaced (every word of a group but its first).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no word is replaced.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// A digest of the groups, for the profile: two files with the same groups have the
    /// same digest, whatever their order or layout.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// Replaces every token hash of a word of a group by its group's first word's.
    pub(crate) fn apply(&self, tokens: &mut [u64]) {
        for t in tokens {
            if let Some(&to) = self.map.get(t) {
                *t = to;
            }
        }
    }
}

/// Which features a record's stored fingerprint and verification set were made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Features {
    /// Word shingles under the store's profile: the record is in the main index.
    Words,
    /// Character n-grams (short-text mode): the record is in the short-text index.
    Chars,
    /// None: the record takes part in the exact tier only.
    ExactOnly,
}

impl Features {
    /// The stable lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Features::Words => "words",
            Features::Chars => "chars",
            Features::ExactOnly => "exact_only",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    pub fn parse(s: &str) -> Option<Features> {
        Some(match s {
            "words" => Features::Words,
            "chars" => Features::Chars,
            "exact_only" => Features::ExactOnly,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ubiquitous_shingles_weigh_nothing_and_rare_ones_most() {
        let mut b = IdfTable::builder();
        for i in 0..10u64 {
            b.add_document([1, 2, 100 + i, 100 + i]);
        }
        let t = b.build();
        assert_eq!(t.documents(), 10);
        assert_eq!(t.document_frequency(100), 1);
        assert_eq!(t.weight(1), 0);
        assert!(t.weight(100) > 0);
        assert!(t.weight(999) > t.weight(100));
    }

    #[test]
    fn save_load_round_trip_and_bad_files() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path();
        let mut b = IdfTable::builder();
        b.add_document([1, 2, 3]);
        b.add_document([2, 3]);
        let t = b.build();
        let path = dir.join("t.idf");
        t.save(&path).expect("save");
        let u = IdfTable::load(&path).expect("load");
        assert_eq!(u.digest(), t.digest());
        assert_eq!(u.weight(2), t.weight(2));
        std::fs::write(&path, b"garbage!").expect("write");
        let err = IdfTable::load(&path).expect_err("garbage is refused");
        assert!(err.to_string().contains("not an IDF table"), "{err}");
    }
}
