//! What a fingerprint was made with, so fingerprints of different making are never compared.

use std::fmt;
use std::str::FromStr;

use crate::text::TokenRule;
use crate::{Error, Result};

/// Version of everything that defines a fingerprint beyond the profile's fields (tokeniser,
/// normaliser, token and shingle hashes, and the language detector where stopwords are
/// left out). Bump it when any of them changes, and say in [`Profile::reads`] which older
/// versions stay comparable.
///
/// 3: a Latin-script text dominated by one language's stopwords is that language without
/// trigram scoring, which shapes only `/stop` fingerprints.
/// 4: the stopword vote reads up to 300 of the longest field's tokens, without single
/// letters and numerals (again only `/stop` fingerprints).
pub const FORMAT_VERSION: u16 = 4;

/// The feature hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HashAlgo {
    /// xxh3 of each token, combined per shingle (fast; the default).
    #[default]
    Xxh3,
    /// blake2b (8-byte digest, big-endian) of the space-joined shingle text, with Python's
    /// `\w+` tokens: bit-for-bit seed 000's Python `simhash(text)`.
    Blake2b,
}

impl HashAlgo {
    /// The name used in profiles and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            HashAlgo::Xxh3 => "xxh3",
            HashAlgo::Blake2b => "blake2b",
        }
    }
}

/// Fingerprint width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FingerprintBits {
    /// 64 bits (the default).
    #[default]
    Bits64,
    /// 128 bits: finer distances, twice the memory.
    Bits128,
}

impl FingerprintBits {
    /// The number of bits.
    pub fn count(self) -> u32 {
        match self {
            FingerprintBits::Bits64 => 64,
            FingerprintBits::Bits128 => 128,
        }
    }
}

/// How shingles were weighted; an IDF weighting names its table by digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightingTag {
    /// Term frequency.
    Tf,
    /// Presence.
    Presence,
    /// IDF with the table of this digest.
    Idf(u64),
}

/// Everything that determines a fingerprint: hash, shingle width, width in bits, weighting
/// and format version. Two fingerprints are comparable only when their profiles are equal.
///
/// The text form (`Display`/`FromStr`) is stored with fingerprints, e.g.
/// `neardup/4/xxh3/w4/b64/tf`; options away from the defaults follow (`/tok=jieba`,
/// `/stop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Profile {
    pub(crate) hash: HashAlgo,
    pub(crate) shingle_width: u8,
    pub(crate) bits: FingerprintBits,
    pub(crate) weighting: WeightingTag,
    pub(crate) version: u16,
    pub(crate) tokens: TokenRule,
    pub(crate) stopwords: bool,
    /// The digest of the synonym groups, when there are some.
    pub(crate) synonyms: Option<u64>,
}

impl Profile {
    /// The feature hash.
    pub fn hash(&self) -> HashAlgo {
        self.hash
    }
    /// Tokens per shingle.
    pub fn shingle_width(&self) -> usize {
        usize::from(self.shingle_width)
    }
    /// Fingerprint width.
    pub fn bits(&self) -> FingerprintBits {
        self.bits
    }
    /// The weighting.
    pub fn weighting(&self) -> WeightingTag {
        self.weighting
    }
    /// The format version.
    pub fn version(&self) -> u16 {
        self.version
    }
    /// The tokenisation rule.
    pub fn tokens(&self) -> TokenRule {
        self.tokens
    }
    /// Whether shingles made only of stopwords were left out of the vote.
    pub fn stopwords(&self) -> bool {
        self.stopwords
    }

    /// Whether fingerprints made with the profile written `stored` (as a store keeps it)
    /// are comparable with this profile's: the same profile, or one of an older format
    /// version that differs from this one only where this profile does not look.
    ///
    /// ```
    /// use neardup::fingerprint::Profile;
    /// let current: Profile = "neardup/4/xxh3/w4/b64/tf".parse().unwrap();
    /// assert!(current.reads("neardup/4/xxh3/w4/b64/tf"));
    /// // Versions 3 and 4 changed the language detector, which only `/stop` profiles
    /// // depend on.
    /// assert!(current.reads("neardup/2/xxh3/w4/b64/tf"));
    /// assert!(current.reads("neardup/3/xxh3/w4/b64/tf"));
    /// let stop: Profile = "neardup/4/xxh3/w4/b64/tf/stop".parse().unwrap();
    /// assert!(!stop.reads("neardup/3/xxh3/w4/b64/tf/stop"));
    /// assert!(!current.reads("neardup/4/xxh3/w5/b64/tf"));
    /// ```
    pub fn reads(&self, stored: &str) -> bool {
        let Ok(stored) = stored.parse::<Profile>() else {
            return false;
        };
        // Formats 3 and 4 changed only the language detector, which `/stop` profiles
        // depend on.
        let only_version_differs = Profile {
            version: self.version,
            ..stored
        } == *self;
        stored == *self
            || (only_version_differs
                && (2..=3).contains(&stored.version)
                && self.version == 4
                && !self.stopwords)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "neardup/{}/{}/w{}/b{}/",
            self.version,
            self.hash.name(),
            self.shingle_width,
            self.bits.count()
        )?;
        match self.weighting {
            WeightingTag::Tf => f.write_str("tf")?,
            WeightingTag::Presence => f.write_str("presence")?,
            WeightingTag::Idf(d) => write!(f, "idf:{d:016x}")?,
        }
        let default_tokens = match self.hash {
            HashAlgo::Xxh3 => TokenRule::Unicode,
            HashAlgo::Blake2b => TokenRule::PythonWord,
        };
        if self.tokens != default_tokens {
            write!(f, "/tok={}", self.tokens.name())?;
        }
        if self.stopwords {
            f.write_str("/stop")?;
        }
        if let Some(d) = self.synonyms {
            write!(f, "/syn:{d:016x}")?;
        }
        Ok(())
    }
}

impl FromStr for Profile {
    type Err = Error;

    fn from_str(s: &str) -> Result<Profile> {
        let bad = |reason: &str| Error::InvalidConfig {
            field: "profile",
            value: s.to_owned(),
            reason: format!("{reason} (expected e.g. neardup/4/xxh3/w4/b64/tf)"),
        };
        let parts: Vec<&str> = s.split('/').collect();
        if parts.len() < 6 {
            return Err(bad("wrong number of parts"));
        }
        let [name, version, hash, width, bits, weighting] = parts[..6] else {
            return Err(bad("wrong number of parts"));
        };
        if name != "neardup" {
            return Err(bad("not a neardup profile"));
        }
        let version = version.parse().map_err(|_| bad("bad version"))?;
        let hash = match hash {
            "xxh3" => HashAlgo::Xxh3,
            "blake2b" => HashAlgo::Blake2b,
            _ => return Err(bad("unknown hash")),
        };
        let shingle_width = width
            .strip_prefix('w')
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad("bad shingle width"))?;
        let bits = match bits {
            "b64" => FingerprintBits::Bits64,
            "b128" => FingerprintBits::Bits128,
            _ => return Err(bad("bad bit width")),
        };
        let weighting = match weighting {
            "tf" => WeightingTag::Tf,
            "presence" => WeightingTag::Presence,
            w => {
                let d = w
                    .strip_prefix("idf:")
                    .and_then(|d| u64::from_str_radix(d, 16).ok())
                    .ok_or_else(|| bad("bad weighting"))?;
                WeightingTag::Idf(d)
            }
        };
        let mut tokens = match hash {
            HashAlgo::Xxh3 => TokenRule::Unicode,
            HashAlgo::Blake2b => TokenRule::PythonWord,
        };
        let mut stopwords = false;
        let mut synonyms = None;
        for extra in &parts[6..] {
            if let Some(name) = extra.strip_prefix("tok=") {
                tokens = TokenRule::parse(name).ok_or_else(|| bad("unknown token rule"))?;
            } else if *extra == "stop" {
                stopwords = true;
            } else if let Some(d) = extra.strip_prefix("syn:") {
                synonyms =
                    Some(u64::from_str_radix(d, 16).map_err(|_| bad("bad synonyms digest"))?);
            } else {
                return Err(bad("unknown option"));
            }
        }
        Ok(Profile {
            hash,
            shingle_width,
            bits,
            weighting,
            version,
            tokens,
            stopwords,
            synonyms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_text_round_trips() {
        for p in [
            Profile {
                hash: HashAlgo::Xxh3,
                shingle_width: 4,
                bits: FingerprintBits::Bits64,
                weighting: WeightingTag::Tf,
                version: FORMAT_VERSION,
                tokens: TokenRule::Unicode,
                stopwords: false,
                synonyms: None,
            },
            Profile {
                hash: HashAlgo::Blake2b,
                shingle_width: 3,
                bits: FingerprintBits::Bits128,
                weighting: WeightingTag::Idf(0xdead_beef),
                version: 7,
                tokens: TokenRule::PythonWord,
                stopwords: false,
                synonyms: None,
            },
            Profile {
                hash: HashAlgo::Xxh3,
                shingle_width: 3,
                bits: FingerprintBits::Bits64,
                weighting: WeightingTag::Tf,
                version: 2,
                tokens: TokenRule::UnicodeJieba,
                stopwords: true,
                synonyms: None,
            },
        ] {
            assert_eq!(p.to_string().parse::<Profile>().expect("parses"), p);
        }
        assert!("neardup/2/md5/w4/b64/tf".parse::<Profile>().is_err());
        assert!("garbage".parse::<Profile>().is_err());
        assert!("neardup/2/xxh3/w4/b64/tf/tok=klingon"
            .parse::<Profile>()
            .is_err());
        assert_eq!(
            "neardup/2/xxh3/w3/b64/tf/tok=jieba/stop"
                .parse::<Profile>()
                .unwrap()
                .to_string(),
            "neardup/2/xxh3/w3/b64/tf/tok=jieba/stop"
        );
    }
}
