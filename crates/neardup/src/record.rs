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
    let url = url.trim();
    let host = match plain_http_host(url) {
        Some(host) => host.to_ascii_lowercase(),
        None => url::Url::parse(url).ok()?.host_str()?.to_ascii_lowercase(),
    };
    Some(host.strip_prefix("www.").map(str::to_owned).unwrap_or(host))
}

/// The host of an `http` or `https` URL whose host is a plain domain name (labels of ASCII
/// letters, digits and hyphens, the last starting with a letter, an optional port), as
/// written; `None` for anything else, which the full URL parser then reads.
///
/// Records are parsed for their host twice a run, and the parser (WHATWG URL: the path,
/// query and fragment percent-encoded too) cost more than a tenth of reading a record. For
/// the URLs this accepts it answers exactly what the parser does, up to case: no IDNA
/// mapping applies to such labels (`xn--` ones go to the parser), none can be read as an
/// IPv4 address (the last label does not start with a digit), and there is nothing to
/// strip or decode; the property test holds the two to the same answers.
fn plain_http_host(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if let Some(port) = port {
        // An empty port is none; a port above 65535 is an error the parser reports.
        if !port.bytes().all(|b| b.is_ascii_digit())
            || port.parse::<u32>().map_or(!port.is_empty(), |p| p > 65535)
        {
            return None;
        }
    }
    let labels = host.strip_suffix('.').unwrap_or(host);
    let last = labels.rsplit('.').next()?;
    let plain = |label: &str| {
        !label.is_empty()
            && !label
                .get(..4)
                .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    (last.starts_with(|c: char| c.is_ascii_alphabetic()) && labels.split('.').all(plain))
        .then_some(host)
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

    fn parsed_host(url: &str) -> Option<String> {
        let host = url::Url::parse(url.trim())
            .ok()?
            .host_str()?
            .to_ascii_lowercase();
        Some(host.strip_prefix("www.").map(str::to_owned).unwrap_or(host))
    }

    #[test]
    fn plain_hosts_are_read_as_the_url_parser_reads_them() {
        for url in [
            "https://Docs.Example.com:8443/a?b#c",
            "http://a.b.c./",
            "HTTPS://www.x-y.example",
            "https://example.com:/x",
            "https://example.com:65536/x",
            "https://example.com:99999999999999999999/",
            "https://1.2.3.4/",
            "https://0x7f.1/",
            "https://a.0x7f/",
            "https://xn--nxasmq6b.example/",
            "https://xn--a.example/",
            "https://ex%41mple.com/",
            "https://user:pw@example.com/",
            "https://exa\tmple.com/",
            "https://example..com/",
            "https://.example.com/",
            "https:///example.com/",
            "https://example.com\\path",
            "ftp://files.example/",
            "file:///etc/passwd",
            "https://",
            "https://-a-.example/",
            "  https://example.org/x  ",
        ] {
            assert_eq!(host_of(url), parsed_host(url), "{url:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn prop_hosts_are_read_as_the_url_parser_reads_them(
            scheme in proptest::sample::select(vec!["http", "HTTPS", "https", "ftp", "ws", "http:"]),
            host in "[a-zA-Z0-9.%:@\\_-]{0,24}",
            tail in proptest::sample::select(vec!["", "/", "/p?q#f", "?x", "#y", ":80/", ":0", ":70000/"]),
        ) {
            let url = format!("{scheme}://{host}{tail}");
            proptest::prop_assert_eq!(host_of(&url), parsed_host(&url), "{:?}", url);
        }

        #[test]
        fn prop_domain_like_hosts_are_read_as_the_url_parser_reads_them(
            labels in proptest::collection::vec("[a-zA-Z0-9-]{0,5}|xn--[a-z0-9]{1,4}|0x[0-9a-f]{1,3}", 1..5),
            dot in proptest::bool::ANY,
            port in proptest::option::of("[0-9]{0,6}"),
        ) {
            // Mostly hosts the fast path takes: every label rule at its edges.
            let host = labels.join(".") + if dot { "." } else { "" };
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let url = format!("https://{host}{port}/x");
            proptest::prop_assert_eq!(host_of(&url), parsed_host(&url), "{:?}", url);
        }
    }

    #[test]
    fn plain_domains_take_the_fast_path() {
        assert_eq!(
            plain_http_host("https://Docs.Example.com:8443/a"),
            Some("Docs.Example.com")
        );
        assert_eq!(plain_http_host("http://a.b.c./"), Some("a.b.c."));
        assert_eq!(plain_http_host("https://1.2.3.4/"), None);
        assert_eq!(plain_http_host("https://xn--nxasmq6b.example/"), None);
    }
}
