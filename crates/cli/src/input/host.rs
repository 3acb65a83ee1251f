//! The host of a JSON line, read without building its record.

use std::fmt;

use crate::args::InputArgs;

/// The host of a JSONL line (its host field, else its URL's host), read without building the
/// whole object: the boilerplate pass needs only this for the pages it does not sample.
///
/// A line whose members are all strings, numbers, booleans or nulls is scanned for the two
/// fields directly (its long text values skipped with a vectorised search for the closing
/// quote, several times faster than a parser's byte loop); other lines are parsed. Neither
/// path validates what it skips: a malformed line is rejected by the main pass.
pub fn probe_host(bytes: &[u8], args: &InputArgs) -> Option<String> {
    let (url, host) = match scan_flat_object(bytes, &args.url_field, &args.host_field) {
        Some(found) => found,
        None => probe_fields(bytes, args)?,
    };
    host.map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .or_else(|| url.as_deref().and_then(neardup::record::host_of))
}

/// The string values of the members `url_field` and `host_field` of a JSON object whose
/// members are all strings, numbers, booleans or nulls (the last of a repeated key, as a
/// parser reads it); `None` when the line is not such an object or a value or key this
/// scan does not read (an escaped key, an escaped url or host, a nested value) is met.
pub(super) fn scan_flat_object(
    bytes: &[u8],
    url_field: &str,
    host_field: &str,
) -> Option<(Option<String>, Option<String>)> {
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    };
    // The end of the string whose opening quote is at `i` (the index after its closing
    // quote). Quotes are rare in text and backslashes are not (every line break is one):
    // the search is for quotes alone, and a quote after an odd run of backslashes is
    // escaped.
    let string_end = |i: usize| -> Option<usize> {
        let mut j = i + 1;
        loop {
            j += memchr::memchr(b'"', &bytes[j..])?;
            let backslashes = bytes[i + 1..j]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count();
            if backslashes % 2 == 0 {
                return Some(j + 1);
            }
            j += 1;
        }
    };
    // The contents of a short string read as is: `None` when it holds an escape.
    let unescaped = |start: usize, end: usize| -> Option<&[u8]> {
        let contents = &bytes[start + 1..end - 1];
        memchr::memchr(b'\\', contents)
            .is_none()
            .then_some(contents)
    };
    let (mut url, mut host) = (None, None);
    let mut i = skip_ws(0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(i + 1);
    if bytes.get(i) == Some(&b'}') {
        return Some((url, host));
    }
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(i)?;
        let key = unescaped(i, key_end)?;
        i = skip_ws(key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(i + 1);
        let wanted = if key == url_field.as_bytes() {
            Some(&mut url)
        } else if key == host_field.as_bytes() {
            Some(&mut host)
        } else {
            None
        };
        match bytes.get(i)? {
            b'"' => {
                let end = string_end(i)?;
                if let Some(slot) = wanted {
                    *slot = Some(std::str::from_utf8(unescaped(i, end)?).ok()?.to_owned());
                }
                i = end;
            }
            b'{' | b'[' => return None,
            _ => {
                // A number, boolean or null runs to the next comma or closing brace.
                let end = i + memchr::memchr2(b',', b'}', &bytes[i..])?;
                if let Some(slot) = wanted {
                    // Null is no value; what anything else that is not a string gives,
                    // the parser says.
                    if bytes[i..end].trim_ascii_end() != b"null" {
                        return None;
                    }
                    *slot = None;
                }
                i = end;
            }
        }
        i = skip_ws(i);
        match bytes.get(i)? {
            b',' => i = skip_ws(i + 1),
            b'}' => return Some((url, host)),
            _ => return None,
        }
    }
}

/// [`probe_host`]'s fields read by a parser.
pub(super) fn probe_fields(
    bytes: &[u8],
    args: &InputArgs,
) -> Option<(Option<String>, Option<String>)> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

    struct Probe<'a> {
        url_field: &'a str,
        host_field: &'a str,
    }
    impl<'de> Visitor<'de> for Probe<'_> {
        type Value = (Option<String>, Option<String>);
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let (mut url, mut host) = (None, None);
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == self.host_field {
                    host = map.next_value::<Option<String>>().ok().flatten();
                } else if key == self.url_field {
                    url = map.next_value::<Option<String>>().ok().flatten();
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok((url, host))
        }
    }
    impl<'de> DeserializeSeed<'de> for Probe<'_> {
        type Value = (Option<String>, Option<String>);
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    Probe {
        url_field: &args.url_field,
        host_field: &args.host_field,
    }
    .deserialize(&mut de)
    .ok()
}
