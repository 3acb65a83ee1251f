//! SimHash fingerprints: [`SimHasher`] turns text into a [`Fingerprint`].
//!
//! Each shingle's 64-bit hash votes on every bit of the fingerprint with its weight; the sign
//! of each bit's total gives the bit (Charikar's hyperplane rounding), so documents that share
//! most shingles differ in few bits.

mod builder;
mod field;
mod pre;
mod profile;
pub(crate) mod vote;

use std::fmt;
use std::sync::Arc;

use blake2::digest::consts::U8;
use blake2::{Blake2b, Digest};

pub use builder::SimHasherBuilder;
pub use field::Field;
pub use pre::PreAnalysis;
pub use profile::{FingerprintBits, HashAlgo, Profile, WeightingTag, FORMAT_VERSION};

use crate::exact::{ContentHash, FIELD_SEPARATOR};
use crate::features::{Synonyms, Weighting};
use crate::text::normalize::{normalize_non_ascii_into, normalize_python_into};
use crate::text::shingle::{fmix64, shingle_hashes, text_token_hashes, token_hash};
use crate::text::sort::sort_distinct;
use crate::text::tokenize::{for_each_token, TokenRule};
use crate::text::Boilerplate;
use crate::{Error, Result};
use vote::{count_ones, BitCounts, WeightedVote};

/// Derives the upper 64 bits of a 128-bit feature from its 64-bit hash (a bijective
/// avalanche of a different input, so the halves vote independently).
const HIGH_HALF_KEY: u64 = 0x5851_f42d_4c95_7f2d;

/// The Hamming distance between two 64-bit fingerprint values.
///
/// ```
/// assert_eq!(neardup::hamming(0b1011, 0b0001), 2);
/// ```
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// A SimHash fingerprint and the profile it was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    value: u128,
    profile: Profile,
}

impl Fingerprint {
    /// Wraps a raw value made under `profile` (bits above the profile's width must be zero).
    ///
    /// # Errors
    /// [`Error::InvalidFingerprint`] when `value` has bits set above the profile's width.
    pub fn from_raw(value: u128, profile: Profile) -> Result<Fingerprint> {
        if profile.bits == FingerprintBits::Bits64 && value >> 64 != 0 {
            return Err(Error::InvalidFingerprint {
                text: format!("{value:x}"),
                reason: "more than 64 bits for a 64-bit profile",
            });
        }
        Ok(Fingerprint { value, profile })
    }

    /// Parses 16 (64-bit profile) or 32 (128-bit profile) hex digits.
    ///
    /// # Errors
    /// [`Error::InvalidFingerprint`] on the wrong length or a non-hex digit.
    pub fn from_hex(text: &str, profile: Profile) -> Result<Fingerprint> {
        let want = (profile.bits.count() / 4) as usize;
        if text.len() != want {
            return Err(Error::InvalidFingerprint {
                text: text.to_owned(),
                reason: if want == 16 {
                    "expected 16 hex digits"
                } else {
                    "expected 32 hex digits"
                },
            });
        }
        let value = u128::from_str_radix(text, 16).map_err(|_| Error::InvalidFingerprint {
            text: text.to_owned(),
            reason: "not hexadecimal",
        })?;
        Ok(Fingerprint { value, profile })
    }

    /// The raw bits (the upper 64 are zero for a 64-bit profile).
    pub fn value(&self) -> u128 {
        self.value
    }

    /// The low 64 bits: the whole fingerprint under a 64-bit profile.
    pub fn as_u64(&self) -> u64 {
        self.value as u64
    }

    /// The profile it was made with.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The Hamming distance to `other`.
    ///
    /// # Errors
    /// [`Error::ProfileMismatch`] when the two were made with different profiles: their
    /// distance would be meaningless.
    ///
    /// ```
    /// let hasher = neardup::SimHasher::builder().build()?;
    /// let a = hasher.fingerprint("the quick brown fox jumps over the lazy dog")?;
    /// assert_eq!(a.distance(&a)?, 0);
    /// # Ok::<(), neardup::Error>(())
    /// ```
    pub fn distance(&self, other: &Fingerprint) -> Result<u32> {
        if self.profile != other.profile {
            return Err(Error::ProfileMismatch {
                left: self.profile.to_string(),
                right: other.profile.to_string(),
            });
        }
        Ok((self.value ^ other.value).count_ones())
    }

    /// Lowercase hex: 16 digits for 64 bits, 32 for 128.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.profile.bits {
            FingerprintBits::Bits64 => write!(f, "{:016x}", self.value as u64),
            FingerprintBits::Bits128 => write!(f, "{:032x}", self.value),
        }
    }
}

/// Reusable buffers for [`SimHasher::analyze`], so a loop over records does not allocate.
#[derive(Debug, Default)]
pub struct Scratch {
    normalized: String,
    joined: String,
    tokens: Vec<u64>,
    all_tokens: Vec<u64>,
    field: Vec<u64>,
    high: Vec<u64>,
    all_shingles: Vec<u64>,
    bytes: Vec<u8>,
    strs: Vec<(usize, usize)>,
    sort: crate::text::sort::SortBuffers,
    sort_ids: crate::text::sort::SortBuffers<u32>,
    table: crate::text::sort::DistinctTable,
    distinct: Vec<u64>,
    /// A set's 32-bit ids while it is made, before they are copied into the set.
    ids: Vec<u32>,
    removed: usize,
    voted: usize,
    language: Option<crate::text::Language>,
    /// Whether a field of the record was read as words because it did not parse as code.
    code_fallback: bool,
}

impl Scratch {
    /// The content hash and word count of the record whose tokens are in `all_tokens`.
    fn token_summary(&mut self) -> (ContentHash, usize) {
        let hash = ContentHash::of_tokens(&self.all_tokens, &mut self.bytes);
        let words = self
            .all_tokens
            .iter()
            .filter(|&&t| t != FIELD_SEPARATOR)
            .count();
        (hash, words)
    }

    /// Buffers past this many bytes are freed by [`release_large`](Self::release_large).
    const KEEP_BYTES: usize = 1 << 20;

    /// Frees the buffers a very long text grew past 1 MiB (records of megabytes exist: a
    /// scratch kept for a thread's lifetime held hundreds of megabytes after one), keeping
    /// those an ordinary record needs. Call it after each record when a scratch is kept.
    pub fn release_large(&mut self) {
        fn release<T>(v: &mut Vec<T>) {
            if v.capacity() * std::mem::size_of::<T>() > Scratch::KEEP_BYTES {
                *v = Vec::new();
            }
        }
        if self.normalized.capacity() > Self::KEEP_BYTES {
            self.normalized = String::new();
        }
        if self.joined.capacity() > Self::KEEP_BYTES {
            self.joined = String::new();
        }
        release(&mut self.tokens);
        release(&mut self.all_tokens);
        release(&mut self.field);
        release(&mut self.high);
        release(&mut self.all_shingles);
        release(&mut self.bytes);
        release(&mut self.strs);
        self.table.release_large(Self::KEEP_BYTES);
        release(&mut self.distinct);
        release(&mut self.ids);
        self.sort.release_large(Self::KEEP_BYTES);
        self.sort_ids.release_large(Self::KEEP_BYTES);
    }
}

/// What the pipeline needs of one record: fingerprint, shingle set, content hash, size.
///
/// `S` is the form of the shingle set: [`SimHasher::analyze`] answers the sorted distinct
/// 64-bit hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis<S = Vec<u64>> {
    /// The SimHash fingerprint.
    pub fingerprint: Fingerprint,
    /// Distinct shingle hashes after boilerplate removal, sorted: the set that Jaccard
    /// verification compares.
    pub shingles: S,
    /// Hash of the normalised token stream (the exact tier).
    pub content_hash: ContentHash,
    /// Number of tokens over all fields.
    pub token_count: usize,
    /// Number of shingle occurrences removed as boilerplate.
    pub boilerplate_removed: usize,
    /// Number of shingle occurrences that voted (after boilerplate removal).
    pub shingle_count: usize,
    /// The record's language and script, when the hasher detects them.
    pub language: Option<crate::text::Language>,
    /// In code mode ([`TokenRule::Code`]), whether the record did not parse as its language
    /// and was read as words instead.
    pub code_fallback: bool,
}

impl Analysis<()> {
    /// This analysis with its shingle set.
    fn with<S>(self, shingles: S) -> Analysis<S> {
        Analysis {
            fingerprint: self.fingerprint,
            shingles,
            content_hash: self.content_hash,
            token_count: self.token_count,
            boilerplate_removed: self.boilerplate_removed,
            shingle_count: self.shingle_count,
            language: self.language,
            code_fallback: self.code_fallback,
        }
    }
}

/// Makes fingerprints; see [`SimHasher::builder`].
///
/// ```
/// use neardup::SimHasher;
/// let hasher = SimHasher::builder().shingle_width(4).build()?;
/// let original = "the quick brown fox jumps over the lazy dog ".repeat(20);
/// let edited = original.replacen("lazy dog", "lazy cat", 1);
/// let (a, b) = (hasher.fingerprint(&original)?, hasher.fingerprint(&edited)?);
/// assert!(a.distance(&b)? <= 3);
/// # Ok::<(), neardup::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimHasher {
    hash: HashAlgo,
    shingle_width: usize,
    bits: FingerprintBits,
    weighting: Weighting,
    tokens: TokenRule,
    stopwords: bool,
    detect_language: bool,
    synonyms: Option<Arc<Synonyms>>,
    profile: Profile,
}

impl SimHasher {
    /// A builder with the defaults: xxh3, 4-token shingles, 64 bits, term frequency.
    pub fn builder() -> SimHasherBuilder {
        SimHasherBuilder::default()
    }

    /// The profile stamped on every fingerprint this hasher makes.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The weighting.
    pub fn weighting(&self) -> &Weighting {
        &self.weighting
    }

    /// The tokenisation rule of this profile.
    pub fn token_rule(&self) -> TokenRule {
        self.tokens
    }

    /// The tokens of `text` under this profile, normalised (for explanations and tools).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        crate::text::tokens(text, self.tokens)
    }

    /// Fingerprints one text.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when the text has no tokens.
    pub fn fingerprint(&self, text: &str) -> Result<Fingerprint> {
        self.fingerprint_fields(&[Field::new(text)])
    }

    /// Fingerprints several weighted fields of one record.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when no field has a token; [`Error::InvalidConfig`] for a
    /// field weight of 0.
    pub fn fingerprint_fields(&self, fields: &[Field<'_>]) -> Result<Fingerprint> {
        let mut scratch = Scratch::default();
        self.vote(fields, None, &mut scratch, false)
    }

    /// Fingerprints one text with reusable buffers: the allocation-free path for loops.
    ///
    /// # Errors
    /// As [`fingerprint`](Self::fingerprint).
    pub fn fingerprint_with(&self, text: &str, scratch: &mut Scratch) -> Result<Fingerprint> {
        self.vote(&[Field::new(text)], None, scratch, false)
    }

    /// Analyses a record: fingerprint after removing `boilerplate`, the distinct shingle set,
    /// the content hash and the token count.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when nothing is left to fingerprint (no tokens, or only
    /// boilerplate); [`Error::InvalidConfig`] for a field weight of 0.
    pub fn analyze(
        &self,
        fields: &[Field<'_>],
        boilerplate: Option<&Boilerplate>,
        scratch: &mut Scratch,
    ) -> Result<Analysis> {
        let summary = self.summarize(fields, boilerplate, scratch)?;
        let mut shingles = std::mem::take(&mut scratch.all_shingles);
        sort_distinct(&mut shingles, &mut scratch.sort);
        Ok(summary.with(shingles))
    }

    /// [`analyze`](Self::analyze) for the pipeline: the shingle set as the sorted distinct
    /// 32-bit ids that verification compares ([`crate::text::shingle::shingle_ids`] of `analyze`'s
    /// shingles), made by sorting the ids rather than the 64-bit hashes, and with the
    /// scratch's shingle buffer kept for the next record (`analyze` hands it over, and a
    /// buffer grown from nothing for every record was a tenth of the analysis's copies).
    /// The set is made in the scratch and copied once into the shared slice the pipeline
    /// keeps for verification and hands to the store. Scale-out jobs (the Python package's
    /// Spark stages) take this analysis so that their sets and Jaccard scores are the
    /// pipeline's, bit for bit ([`crate::verify::id_jaccard`] compares two of them).
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] when the fields have no
    /// words to fingerprint.
    pub fn analyze_ids(
        &self,
        fields: &[Field<'_>],
        boilerplate: Option<&Boilerplate>,
        scratch: &mut Scratch,
    ) -> Result<Analysis<Arc<[u32]>>> {
        let summary = self.summarize(fields, boilerplate, scratch)?;
        let ids = &mut scratch.ids;
        ids.clear();
        ids.extend(
            scratch
                .all_shingles
                .iter()
                .map(|&h| crate::text::shingle::shingle_id(h)),
        );
        sort_distinct(ids, &mut scratch.sort_ids);
        Ok(summary.with(Arc::from(&ids[..])))
    }

    /// Everything [`analyze`](Self::analyze) answers but the set, whose shingles (not yet
    /// sorted or distinct) it leaves in `scratch.all_shingles`.
    fn summarize(
        &self,
        fields: &[Field<'_>],
        boilerplate: Option<&Boilerplate>,
        scratch: &mut Scratch,
    ) -> Result<Analysis<()>> {
        let fingerprint = self.vote(fields, boilerplate, scratch, true)?;
        let (content_hash, token_count) = scratch.token_summary();
        Ok(Analysis {
            fingerprint,
            shingles: (),
            content_hash,
            token_count,
            boilerplate_removed: scratch.removed,
            shingle_count: scratch.voted,
            language: scratch.language.take(),
            code_fallback: scratch.code_fallback,
        })
    }

    /// The distinct shingle hashes of `text`, sorted (for IDF tables, boilerplate learning
    /// and Jaccard).
    pub fn shingle_set(&self, text: &str) -> Vec<u64> {
        self.shingle_set_with(text, &mut Scratch::default())
    }

    /// [`shingle_set`](Self::shingle_set) with reusable buffers, for loops.
    pub fn shingle_set_with(&self, text: &str, scratch: &mut Scratch) -> Vec<u64> {
        self.field_shingles(Field::new(text), scratch);
        sort_distinct(&mut scratch.field, &mut scratch.sort);
        // A copy of exactly the set's size; the buffer stays for the next text.
        scratch.field.clone()
    }

    /// The distinct shingle hashes of several texts together (a record's fields), in no
    /// particular order: what boilerplate learning counts, which sorts a bucket of pages
    /// at once and needs each page's shingles only once. Repeats are dropped through a
    /// small hash table instead of a sort, half the work.
    pub fn distinct_shingles_with(
        &self,
        texts: &[&str],
        scratch: &mut Scratch,
    ) -> std::sync::Arc<[u64]> {
        scratch.all_shingles.clear();
        for text in texts {
            self.field_shingles(Field::new(text), scratch);
            scratch.all_shingles.extend_from_slice(&scratch.field);
        }
        scratch.distinct.clear();
        scratch
            .table
            .distinct(&scratch.all_shingles, &mut scratch.distinct);
        // A copy of exactly the set's size: learners hold thousands of these at once.
        std::sync::Arc::from(&scratch.distinct[..])
    }

    /// Fingerprints a bag of features with positive integer weights (seed 001); a feature is
    /// hashed as a one-token shingle, so a bag equals the text that repeats each token
    /// `weight` times under shingle width 1.
    ///
    /// # Errors
    /// [`Error::EmptyFeatureBag`] for an empty bag, [`Error::NonPositiveWeight`] for a
    /// weight of zero or less.
    ///
    /// ```
    /// let hasher = neardup::SimHasher::builder().build()?;
    /// let fp = hasher.fingerprint_bag([("dock", 3), ("scanner", 2), ("timeout", 1)])?;
    /// assert!(hasher.fingerprint_bag([("dock", 0)]).is_err());
    /// # Ok::<(), neardup::Error>(())
    /// ```
    pub fn fingerprint_bag<'a>(
        &self,
        features: impl IntoIterator<Item = (&'a str, i64)>,
    ) -> Result<Fingerprint> {
        let mut lo = WeightedVote::default();
        let mut hi = WeightedVote::default();
        let mut any = false;
        for (feature, weight) in features {
            if weight <= 0 {
                return Err(Error::NonPositiveWeight {
                    feature: feature.to_owned(),
                    weight,
                });
            }
            any = true;
            let h = match self.hash {
                HashAlgo::Xxh3 => shingle_hash_of_tokens(&[token_hash(feature.as_bytes())]),
                HashAlgo::Blake2b => blake2b64(feature),
            };
            lo.add(h, weight);
            if self.bits == FingerprintBits::Bits128 {
                hi.add(fmix64(h ^ HIGH_HALF_KEY), weight);
            }
        }
        if !any {
            return Err(Error::EmptyFeatureBag { record: None });
        }
        Ok(self.make(lo.bits(), hi.bits()))
    }

    fn make(&self, lo: u64, hi: u64) -> Fingerprint {
        let value = match self.bits {
            FingerprintBits::Bits64 => u128::from(lo),
            FingerprintBits::Bits128 => u128::from(hi) << 64 | u128::from(lo),
        };
        Fingerprint {
            value,
            profile: self.profile,
        }
    }

    /// Fills `scratch.tokens` with the token hashes of one field (and, for the Python
    /// profile, `scratch.strs` with each token's place in `scratch.normalized`).
    fn field_tokens(&self, field: Field<'_>, scratch: &mut Scratch) {
        let text = field.text;
        scratch.tokens.clear();
        match (self.hash, self.tokens) {
            (HashAlgo::Xxh3, TokenRule::Characters) => {
                normalize_non_ascii_into(text, &mut scratch.normalized);
                crate::text::shingle::unicode_token_hashes(
                    &scratch.normalized,
                    TokenRule::Characters,
                    &mut scratch.tokens,
                );
            }
            (HashAlgo::Xxh3, rule @ (TokenRule::Code(_) | TokenRule::CodeAuto)) => {
                let lang = match rule {
                    TokenRule::Code(lang) => Some(lang),
                    _ => field.code_lang,
                };
                let tokens = &mut scratch.tokens;
                let parsed = lang.is_some_and(|lang| {
                    crate::text::code::for_each_code_token(text, lang, |t| {
                        tokens.push(token_hash(t.as_bytes()));
                    })
                });
                if !parsed {
                    // Not code of that language: its words, as the default profile reads them.
                    scratch.code_fallback = true;
                    text_token_hashes(
                        text,
                        TokenRule::Unicode,
                        &mut scratch.normalized,
                        &mut scratch.tokens,
                    );
                }
            }
            (HashAlgo::Xxh3, rule) => {
                text_token_hashes(text, rule, &mut scratch.normalized, &mut scratch.tokens);
            }
            (HashAlgo::Blake2b, _) => {
                normalize_python_into(text, &mut scratch.normalized);
                scratch.strs.clear();
                let base = scratch.normalized.as_ptr() as usize;
                let (strs, tokens) = (&mut scratch.strs, &mut scratch.tokens);
                for_each_token(&scratch.normalized, TokenRule::PythonWord, |t| {
                    let start = t.as_ptr() as usize - base;
                    strs.push((start, start + t.len()));
                    tokens.push(token_hash(t.as_bytes()));
                });
            }
        }
        if let Some(synonyms) = &self.synonyms {
            synonyms.apply(&mut scratch.tokens);
        }
    }

    /// Fills `scratch.tokens` and `scratch.field` with the token and shingle hashes of one
    /// field (in order).
    fn field_shingles(&self, field: Field<'_>, scratch: &mut Scratch) {
        scratch.field.clear();
        self.field_tokens(field, scratch);
        match self.hash {
            HashAlgo::Xxh3 => {
                shingle_hashes(&scratch.tokens, self.shingle_width, &mut scratch.field);
            }
            HashAlgo::Blake2b => {
                let n = scratch.strs.len();
                let w = self.shingle_width;
                let windows = if n == 0 {
                    0
                } else if n < w {
                    1
                } else {
                    n - w + 1
                };
                for i in 0..windows {
                    scratch.joined.clear();
                    for (j, &(s, e)) in scratch.strs[i..(i + w).min(n)].iter().enumerate() {
                        if j > 0 {
                            scratch.joined.push(' ');
                        }
                        scratch.joined.push_str(&scratch.normalized[s..e]);
                    }
                    scratch.field.push(blake2b64(&scratch.joined));
                }
            }
        }
    }

    /// The language of a record whose longest field is `text`, with token hashes `tokens`.
    fn language_of(&self, text: &str, tokens: &[u64]) -> Option<crate::text::Language> {
        let sample = crate::text::language::windows_sample(text);
        if self.tokens == TokenRule::Characters {
            // Character tokens are no words to vote with: the sample's words vote.
            return crate::text::detect_language(&sample);
        }
        crate::text::language::detect_language_of(&sample, tokens)
    }

    /// Leaves out of `scratch.field` the shingles whose tokens are all stopwords (weight 0).
    /// A shingle's hash depends only on its tokens, so dropping by hash is exact.
    fn drop_stopword_shingles(
        &self,
        stops: &crate::text::boilerplate::ShingleSet,
        scratch: &mut Scratch,
    ) {
        let w = self.shingle_width;
        let tokens = &scratch.tokens;
        let stop: Vec<bool> = tokens.iter().map(|t| stops.contains(t)).collect();
        let windows = if tokens.len() < w {
            1
        } else {
            tokens.len() - w + 1
        };
        let mut silent: Vec<u64> = (0..windows.min(scratch.field.len()))
            .filter(|&i| stop[i..(i + w).min(stop.len())].iter().all(|&s| s))
            .map(|i| scratch.field[i])
            .collect();
        if silent.is_empty() {
            return;
        }
        silent.sort_unstable();
        scratch.field.retain(|h| silent.binary_search(h).is_err());
    }

    fn vote(
        &self,
        fields: &[Field<'_>],
        boilerplate: Option<&Boilerplate>,
        scratch: &mut Scratch,
        keep_shingles: bool,
    ) -> Result<Fingerprint> {
        scratch.all_tokens.clear();
        scratch.all_shingles.clear();
        scratch.language = None;
        scratch.code_fallback = false;
        // The language is read from the longest field: before the fields when its stopwords
        // are dropped, else from the token hashes its shingles are made of.
        let longest = (0..fields.len()).max_by_key(|&i| fields[i].text.len());
        if self.stopwords {
            if let Some(i) = longest {
                self.field_tokens(fields[i], scratch);
                scratch.language = self.language_of(fields[i].text, &scratch.tokens);
            }
        }
        let stops = match (&scratch.language, self.stopwords) {
            (Some(l), true) => crate::text::language::stopwords(l.code),
            _ => None,
        };
        let wide = self.bits == FingerprintBits::Bits128;
        // Unit weights everywhere: count set bits, the fast path.
        let unit =
            !matches!(self.weighting, Weighting::Idf(_)) && fields.iter().all(|f| f.weight == 1);
        let (mut counts_lo, mut counts_hi) = (BitCounts::default(), BitCounts::default());
        let (mut sums_lo, mut sums_hi) = (WeightedVote::default(), WeightedVote::default());
        let mut total = 0usize;
        let mut removed = 0usize;
        for (i, field) in fields.iter().enumerate() {
            if field.weight == 0 {
                return Err(Error::InvalidConfig {
                    field: "field weight",
                    value: "0".into(),
                    reason: format!("field {i} has weight 0; weights start at 1"),
                });
            }
            if i > 0 {
                scratch.all_tokens.push(FIELD_SEPARATOR);
            }
            self.field_shingles(*field, scratch);
            // The record's tokens, for its content hash and word count. Only here: sets
            // made for boilerplate learning reuse one scratch for many pages, and appending
            // there grew this buffer without end (a tenth of the learning pass's CPU went
            // to reallocating it).
            scratch.all_tokens.extend_from_slice(&scratch.tokens);
            if self.detect_language && !self.stopwords && Some(i) == longest {
                scratch.language = self.language_of(field.text, &scratch.tokens);
            }
            if keep_shingles && stops.is_some() {
                // Verification compares content; stopword runs are content too.
                scratch.all_shingles.extend_from_slice(&scratch.field);
            }
            if let Some(stops) = stops {
                self.drop_stopword_shingles(stops, scratch);
            }
            if let Some(b) = boilerplate {
                let before = scratch.field.len();
                b.retain_content(&mut scratch.field);
                removed += before - scratch.field.len();
            }
            if keep_shingles && stops.is_none() {
                // Nothing was dropped but boilerplate: the field is the content to verify.
                scratch.all_shingles.extend_from_slice(&scratch.field);
            }
            if matches!(self.weighting, Weighting::Presence) {
                sort_distinct(&mut scratch.field, &mut scratch.sort);
            }
            total += scratch.field.len();
            if wide {
                scratch.high.clear();
                scratch
                    .high
                    .extend(scratch.field.iter().map(|&h| fmix64(h ^ HIGH_HALF_KEY)));
            }
            let weight = i64::from(field.weight);
            match &self.weighting {
                Weighting::Idf(table) => {
                    for &h in &scratch.field {
                        let w = weight * table.weight(h);
                        sums_lo.add(h, w);
                        if wide {
                            sums_hi.add(fmix64(h ^ HIGH_HALF_KEY), w);
                        }
                    }
                }
                _ if unit => {
                    count_ones(&scratch.field, &mut counts_lo);
                    if wide {
                        count_ones(&scratch.high, &mut counts_hi);
                    }
                }
                _ => {
                    let mut c = BitCounts::default();
                    count_ones(&scratch.field, &mut c);
                    sums_lo.add_counts(&c, weight);
                    if wide {
                        let mut c = BitCounts::default();
                        count_ones(&scratch.high, &mut c);
                        sums_hi.add_counts(&c, weight);
                    }
                }
            }
        }
        if keep_shingles && stops.is_some() {
            if let Some(b) = boilerplate {
                b.retain_content(&mut scratch.all_shingles);
            }
        }
        scratch.removed = removed;
        scratch.voted = total;
        if total == 0 {
            return Err(Error::EmptyFeatureBag { record: None });
        }
        let (lo, hi) = if unit {
            (counts_lo.majority(), counts_hi.majority())
        } else {
            (sums_lo.bits(), sums_hi.bits())
        };
        Ok(self.make(lo, hi))
    }
}

/// The hash of a shingle made of the given token hashes (exposed for the feature bag).
fn shingle_hash_of_tokens(tokens: &[u64]) -> u64 {
    let mut out = Vec::with_capacity(1);
    shingle_hashes(tokens, tokens.len().max(1), &mut out);
    out[0]
}

/// Seed 000's feature hash: blake2b with an 8-byte digest, read big-endian.
fn blake2b64(text: &str) -> u64 {
    let digest = Blake2b::<U8>::digest(text.as_bytes());
    u64::from_be_bytes(digest.into())
}

#[cfg(test)]
mod tests;
