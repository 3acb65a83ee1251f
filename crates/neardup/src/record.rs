//! Input records: id, source, time, retention class and the text fields that are content.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::{Error, Result};

/// Milliseconds since the Unix epoch, UTC: when a record was first seen.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Timestamp {
        Timestamp(Utc::now().timestamp_millis())
    }

    /// Parses an RFC 3339 time such as `2026-11-30T08:00:00Z` or `2026-11-30T09:00:00+01:00`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the text when it is not RFC 3339.
    pub fn parse_rfc3339(text: &str) -> Result<Timestamp> {
        DateTime::parse_from_rfc3339(text.trim())
            .map(|t| Timestamp(t.timestamp_millis()))
            .map_err(|e| Error::InvalidInput {
                field: "first_seen",
                value: text.to_owned(),
                reason: format!("not an RFC 3339 time ({e}); expected e.g. 2026-11-30T08:00:00Z"),
            })
    }

    /// RFC 3339 in UTC, with milliseconds only when they are not zero.
    pub fn to_rfc3339(self) -> String {
        match DateTime::<Utc>::from_timestamp_millis(self.0) {
            Some(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            None => self.0.to_string(),
        }
    }
}

/// One text field of a record, with the weight of its shingles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextField {
    /// The field's name in the input.
    pub name: String,
    /// Its text (already extracted from markup).
    pub text: String,
    /// Weight of each of its shingles (>= 1).
    pub weight: u32,
}

/// A record to deduplicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The caller's id, unique in the store.
    pub id: String,
    /// Where it was found.
    pub url: Option<String>,
    /// The site it belongs to, for boilerplate learning; derived from `url` when absent.
    pub host: Option<String>,
    /// When it was first seen; records without a time are stamped when processed.
    pub first_seen: Option<Timestamp>,
    /// The retention class its fingerprint inherits (seed 000).
    pub retention_class: Option<String>,
    /// The content: extracted text fields in order. Markup is never fingerprinted.
    pub fields: Vec<TextField>,
}

impl Record {
    /// A record with one text field named `text`.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Record {
        Record {
            id: id.into(),
            url: None,
            host: None,
            first_seen: None,
            retention_class: None,
            fields: vec![TextField {
                name: "text".into(),
                text: text.into(),
                weight: 1,
            }],
        }
    }

    /// Sets the URL (and, unless set, the host derived from it).
    pub fn with_url(mut self, url: impl Into<String>) -> Record {
        self.url = Some(url.into());
        self
    }

    /// Sets the first-seen time.
    pub fn with_first_seen(mut self, t: Timestamp) -> Record {
        self.first_seen = Some(t);
        self
    }

    /// Sets the retention class.
    pub fn with_retention_class(mut self, class: impl Into<String>) -> Record {
        self.retention_class = Some(class.into());
        self
    }

    /// The host: the explicit one, else the URL's host in lowercase without `www.`.
    pub fn effective_host(&self) -> Option<String> {
        if let Some(h) = &self.host {
            return Some(h.trim().to_ascii_lowercase());
        }
        host_of(self.url.as_deref()?)
    }
}

/// The host of a URL, lowercased, without a leading `www.`; `None` when it has none.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some(host.strip_prefix("www.").map(str::to_owned).unwrap_or(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_and_normalise_to_utc() {
        let t = Timestamp::parse_rfc3339("2026-11-30T09:00:00+01:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T08:00:00Z");
        assert_eq!(
            Timestamp::parse_rfc3339("2026-11-30T08:00:00.250Z")
                .unwrap()
                .0
                % 1000,
            250
        );
        let err = Timestamp::parse_rfc3339("yesterday").unwrap_err();
        assert!(err.to_string().contains("\"yesterday\""), "{err}");
    }

    #[test]
    fn host_is_derived_from_url() {
        assert_eq!(
            host_of("https://WWW.Example.com/a/b?c"),
            Some("example.com".into())
        );
        assert_eq!(host_of("not a url"), None);
        let r = Record::new("1", "x").with_url("http://news.example.org/story");
        assert_eq!(r.effective_host(), Some("news.example.org".into()));
    }
}
