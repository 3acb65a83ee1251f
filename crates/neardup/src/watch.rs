//! Watchlists: known content (content-farm articles, leaked text, banned posts) that
//! arriving text is checked against, with alerts graded by distance (seed 002, 6.1: "a
//! fingerprint library of known content farms, graded alerts, Hamming distance 1-3 red").
//!
//! A watchlist is an ordinary store: its records are the known content, each with its
//! class (a record's [`retention_class`](crate::Record::retention_class), so `expire
//! --class farm` retires a class and erasure works as for any store). A [`Watchlist`]
//! opens it with a rule widened to its [`AlertBands`]: every stored record within the
//! widest band's distance whose shingle Jaccard reaches the lowest floor is verified, and
//! each is graded by the first band it falls in.

use std::fmt;
use std::str::FromStr;

use crate::pipeline::{Deduper, Rule, ShortText};
use crate::store::Store;
use crate::verify::Scores;
use crate::{Error, Record, Result};

/// The default bands: red within 3 bits (the seed's), orange within 8, yellow within 16
/// (`dedup`'s default radius), each only where at least half the shingles are shared
/// (the Jaccard floor: a fingerprint that close with less in common is chance, which
/// short and templated texts make likely).
pub const DEFAULT_BANDS: &str = "red=3:0.5,orange=8:0.5,yellow=16:0.5";

/// The most alerts [`Watchlist::check`] reports for one record.
pub const MAX_ALERTS: usize = 10;

/// One alert level: a name, the largest distance it covers and its Jaccard floor.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertBand {
    /// The level's name (`red`, `orange`, ...): letters, digits, `_` and `-`.
    pub level: String,
    /// Stored records at most this many bits away fall in the band ...
    pub max_distance: u32,
    /// ... when their shingle Jaccard is at least this.
    pub min_jaccard: f64,
}

/// Alert levels, most severe first: a match gets the first band it falls in.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertBands {
    bands: Vec<AlertBand>,
}

impl AlertBands {
    /// Bands from a list, most severe first.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for no band, a repeated or malformed level name, a
    /// distance over 128 bits or a floor outside 0..=1.
    pub fn new(bands: Vec<AlertBand>) -> Result<AlertBands> {
        let bad = |reason: String| Error::InvalidConfig {
            field: "alert_bands",
            value: bands
                .iter()
                .map(AlertBand::to_string)
                .collect::<Vec<_>>()
                .join(","),
            reason,
        };
        if bands.is_empty() {
            return Err(bad("give at least one band, e.g. red=3:0.5".into()));
        }
        for (i, b) in bands.iter().enumerate() {
            if b.level.is_empty()
                || !b
                    .level
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad(format!(
                    "level {:?}: a name is letters, digits, '_' and '-'",
                    b.level
                )));
            }
            if bands[..i].iter().any(|o| o.level == b.level) {
                return Err(bad(format!("level {:?} is given twice", b.level)));
            }
            if b.max_distance > 128 {
                return Err(bad(format!(
                    "level {:?}: {} bits is more than a fingerprint has (128 at most)",
                    b.level, b.max_distance
                )));
            }
            if !(0.0..=1.0).contains(&b.min_jaccard) {
                return Err(bad(format!(
                    "level {:?}: the Jaccard floor {} is not within 0..=1",
                    b.level, b.min_jaccard
                )));
            }
        }
        Ok(AlertBands { bands })
    }

    /// The bands, most severe first.
    pub fn bands(&self) -> &[AlertBand] {
        &self.bands
    }

    /// The level names, most severe first.
    pub fn levels(&self) -> impl Iterator<Item = &str> {
        self.bands.iter().map(|b| b.level.as_str())
    }

    /// The widest band's distance: the radius a check searches.
    pub fn max_distance(&self) -> u32 {
        self.bands.iter().map(|b| b.max_distance).max().unwrap_or(0)
    }

    /// The lowest Jaccard floor: what a check verifies candidates against.
    pub fn min_jaccard(&self) -> f64 {
        self.bands.iter().map(|b| b.min_jaccard).fold(1.0, f64::min)
    }

    /// The index of the first band `scores` falls in (0 is the most severe).
    pub fn band_of(&self, scores: Scores) -> Option<usize> {
        self.bands
            .iter()
            .position(|b| scores.distance <= b.max_distance && scores.jaccard >= b.min_jaccard)
    }

    /// `base` widened so that a deduper opened with it finds every match of these bands
    /// (its radius and floors, for long and short texts alike).
    pub fn rule(&self, base: Rule) -> Rule {
        let short_text = match base.short_text {
            ShortText::CharNgrams { width, .. } => ShortText::CharNgrams {
                width,
                max_distance: self.max_distance(),
                min_jaccard: self.min_jaccard(),
            },
            exact => exact,
        };
        Rule {
            max_distance: self.max_distance(),
            min_jaccard: self.min_jaccard(),
            short_text,
            ..base
        }
    }
}

impl Default for AlertBands {
    fn default() -> AlertBands {
        DEFAULT_BANDS.parse().expect("the default bands parse")
    }
}

impl fmt::Display for AlertBand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={}:{}",
            self.level, self.max_distance, self.min_jaccard
        )
    }
}

impl fmt::Display for AlertBands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.bands.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{b}")?;
        }
        Ok(())
    }
}

/// `LEVEL=BITS[:JACCARD],...`, most severe first; a band without a floor has 0.
impl FromStr for AlertBands {
    type Err = Error;

    fn from_str(spec: &str) -> Result<AlertBands> {
        let bad = |reason: String| Error::InvalidConfig {
            field: "alert_bands",
            value: spec.to_owned(),
            reason,
        };
        let mut bands = Vec::new();
        for part in spec.split(',').map(str::trim) {
            let (level, rest) = part.split_once('=').ok_or_else(|| {
                bad(format!(
                    "{part:?}: expected LEVEL=BITS or LEVEL=BITS:JACCARD, e.g. red=3:0.5"
                ))
            })?;
            let (bits, floor) = rest.split_once(':').unwrap_or((rest, "0"));
            let max_distance = bits
                .trim()
                .parse()
                .map_err(|_| bad(format!("{part:?}: {bits:?} is not a number of bits")))?;
            let min_jaccard = floor
                .trim()
                .parse()
                .map_err(|_| bad(format!("{part:?}: {floor:?} is not a Jaccard floor")))?;
            bands.push(AlertBand {
                level: level.trim().to_owned(),
                max_distance,
                min_jaccard,
            });
        }
        AlertBands::new(bands)
    }
}

/// A match of a checked record on the watchlist.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Alert {
    /// The band it fell in.
    pub level: String,
    /// The watched record's id.
    pub watched: String,
    /// The watched record's class (`farm`, ...), if it has one.
    pub class: Option<String>,
    /// Hamming distance of the fingerprints, in bits.
    pub distance: u32,
    /// Shingle Jaccard similarity.
    pub jaccard: f64,
}

/// A store of known content, checked with graded alerts.
pub struct Watchlist<S: Store> {
    deduper: Deduper<S>,
    bands: AlertBands,
}

impl<S: Store> Watchlist<S> {
    /// A watchlist over `deduper`'s store, graded by `bands`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the deduper's rule would miss matches of the bands
    /// (open it with [`AlertBands::rule`]).
    pub fn new(deduper: Deduper<S>, bands: AlertBands) -> Result<Watchlist<S>> {
        let rule = deduper.rule();
        if rule.max_distance < bands.max_distance() || rule.min_jaccard > bands.min_jaccard() {
            return Err(Error::InvalidConfig {
                field: "alert_bands",
                value: bands.to_string(),
                reason: format!(
                    "the watchlist's rule (within {} bits, Jaccard >= {}) would miss matches of the bands: open it with AlertBands::rule",
                    rule.max_distance, rule.min_jaccard
                ),
            });
        }
        Ok(Watchlist { deduper, bands })
    }

    /// The alert bands.
    pub fn bands(&self) -> &AlertBands {
        &self.bands
    }

    /// The deduper over the watchlist's store.
    pub fn deduper(&self) -> &Deduper<S> {
        &self.deduper
    }

    /// Alerts for `record`: the watched records it falls in a band of, most severe first,
    /// then nearest, at most [`MAX_ALERTS`]; none for a record with no words to compare.
    /// Nothing is stored.
    ///
    /// # Errors
    /// Store failures.
    pub fn check(&self, record: &Record) -> Result<Vec<Alert>> {
        let matches = match self.deduper.query(record) {
            Err(Error::InvalidConfig { field: "text", .. }) => return Ok(Vec::new()),
            other => other?,
        };
        let mut alerts: Vec<(usize, Alert)> = matches
            .into_iter()
            .filter_map(|(id, scores)| {
                let band = self.bands.band_of(scores)?;
                let class = self.deduper.record(&id).and_then(|r| r.retention_class);
                Some((
                    band,
                    Alert {
                        level: self.bands.bands[band].level.clone(),
                        watched: id,
                        class,
                        distance: scores.distance,
                        jaccard: scores.jaccard,
                    },
                ))
            })
            .collect();
        alerts.sort_by(|(ba, a), (bb, b)| {
            ba.cmp(bb)
                .then(a.distance.cmp(&b.distance))
                .then(b.jaccard.total_cmp(&a.jaccard))
                .then_with(|| a.watched.cmp(&b.watched))
        });
        alerts.truncate(MAX_ALERTS);
        Ok(alerts.into_iter().map(|(_, a)| a).collect())
    }

    /// Brings the watchlist up to date with what other processes committed to its store
    /// since it was opened (records added, erased or expired by the CLI while a service
    /// checks against it).
    ///
    /// # Errors
    /// Store failures.
    pub fn refresh(&mut self) -> Result<()> {
        self.deduper.refresh()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    #[test]
    fn bands_parse_print_and_grade_in_order() {
        let bands: AlertBands = "red=3:0.7, orange=8:0.6,yellow=16".parse().unwrap();
        assert_eq!(bands.to_string(), "red=3:0.7,orange=8:0.6,yellow=16:0");
        assert_eq!(bands.max_distance(), 16);
        assert_eq!(bands.min_jaccard(), 0.0);
        let s = |distance, jaccard| Scores::new(distance, jaccard);
        assert_eq!(bands.band_of(s(0, 1.0)), Some(0));
        assert_eq!(bands.band_of(s(3, 0.7)), Some(0));
        // Close but under red's floor: the next band whose floor it meets.
        assert_eq!(bands.band_of(s(2, 0.65)), Some(1));
        assert_eq!(bands.band_of(s(2, 0.55)), Some(2));
        assert_eq!(bands.band_of(s(4, 0.9)), Some(1));
        assert_eq!(bands.band_of(s(16, 0.1)), Some(2));
        assert_eq!(bands.band_of(s(17, 1.0)), None);
        assert_eq!(AlertBands::default().to_string(), DEFAULT_BANDS);
    }

    #[test]
    fn bad_bands_name_the_problem() {
        for (spec, needle) in [
            ("", "expected LEVEL=BITS"),
            ("red", "expected LEVEL=BITS"),
            ("red=x", "not a number of bits"),
            ("red=3:high", "not a Jaccard floor"),
            ("red=3:1.5", "not within 0..=1"),
            ("red=200", "128 at most"),
            ("red=3,red=5", "given twice"),
            ("r d=3", "a name is letters"),
        ] {
            let err = spec.parse::<AlertBands>().unwrap_err().to_string();
            assert!(err.contains(needle), "{spec:?}: {err}");
        }
    }

    #[test]
    fn a_rule_too_narrow_for_the_bands_is_refused() {
        let deduper = Deduper::builder()
            .rule(Rule {
                max_distance: 3,
                ..Rule::default()
            })
            .open(MemoryStore::new())
            .unwrap();
        let err = Watchlist::new(deduper, AlertBands::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("would miss matches"), "{err}");
    }
}
