//! JSON objects read from a line, as JSON Lines records are: each member's key with its
//! value left unparsed in the line. The CLI reads its records with it, and so does the
//! Python package (the Spark job's analysis); both extend kept records with it.
//!
//! The scan is hand-written because no JSON crate reads what a record needs as fast: keys
//! and raw values by field names known only at run time (`--text-field` and the like), with
//! the values left in the line so kept.jsonl can copy a record's other members as bytes.
//! `cargo bench -p neardup-cli --bench json` holds it against the crates on 2,000 JSON Lines
//! records of real text (Debian's copyright files and licences, about 18 MB). Each reader
//! returns four fields, unescaped and owned, and all of them must agree before anything is
//! timed.
//! Throughput on 2026-12-05, 2 cores of an Intel Xeon, one thread:
//!
//! | reader | GiB/s | the scan is |
//! |---|---:|---:|
//! | this scan (`Members::parse`) | 2.60 | 1x |
//! | serde_json, keys and `&RawValue`s (`Members::parse_with_serde`, the fallback) | 1.91 | 1.36x |
//! | serde_json, a typed struct (fields fixed at compile time) | 2.24 | 1.16x |
//! | sonic-rs 0.5, `to_object_iter` (keys and raw values) | 1.53 | 1.70x |
//! | sonic-rs 0.5, `get_many` with a `PointerTree` of the fields | 1.39 | 1.87x |
//! | sonic-rs 0.5, serde visitor of keys and `LazyValue`s | 0.94 | 2.75x |
//! | sonic-rs 0.5, a typed struct (fields fixed at compile time) | 2.62 | 0.99x |
//! | simd-json 0.19, `to_borrowed_value` (on a copy of the line) | 1.19 | 2.19x |
//!
//! Only sonic-rs with a struct fixed at compile time keeps up, and a fixed struct can
//! neither take field names from the command line nor leave the values in place.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

#[cfg(test)]
mod tests;

/// The keys the outputs that extend a record set on it (kept.jsonl's `source_urls` and the
/// rest): a record's own members of these names are left out of the copy.
pub const RESERVED_KEYS: [&str; 5] = [
    "source_urls",
    "first_seen",
    "cluster_size",
    "neardup_fingerprint",
    "neardup_language",
];

/// The members of [`RESERVED_KEYS`] that kept records end with, written after a record's
/// own members (no separator before them): its cluster's source URLs and first-seen time
/// (RFC 3339), the cluster's size, its fingerprint in hex, and its language where known,
/// given as a JSON value (`"en"`). The CLI's kept.jsonl and the Python package's kept lines
/// are written by it, so the two agree byte for byte.
pub fn write_kept_fields<S: serde::Serialize>(
    out: &mut Vec<u8>,
    source_urls: &[S],
    first_seen: &str,
    cluster_size: usize,
    fingerprint: Option<&str>,
    language: Option<&str>,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"\"source_urls\":");
    serde_json::to_writer(&mut *out, source_urls)?;
    out.extend_from_slice(b",\"first_seen\":");
    serde_json::to_writer(&mut *out, first_seen)?;
    out.extend_from_slice(b",\"cluster_size\":");
    out.extend_from_slice(cluster_size.to_string().as_bytes());
    out.extend_from_slice(b",\"neardup_fingerprint\":");
    serde_json::to_writer(&mut *out, &fingerprint)?;
    if let Some(language) = language {
        out.extend_from_slice(b",\"neardup_language\":");
        out.extend_from_slice(language.as_bytes());
    }
    Ok(())
}

/// The object `object` (valid, as read) up to its last member, for members to be added
/// after it: without its closing brace and the white space before it, and whether it has
/// members (so that an added one needs a comma first). `None` where it does not end with a
/// brace.
///
/// ```
/// use neardup::json::open_object;
/// assert_eq!(open_object(b"{\"a\":1 }"), Some((&b"{\"a\":1"[..], true)));
/// assert_eq!(open_object(b"{ }"), Some((&b"{"[..], false)));
/// assert_eq!(open_object(b"[1]"), None);
/// ```
pub fn open_object(object: &[u8]) -> Option<(&[u8], bool)> {
    let body = object.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    Some((body, !body.ends_with(b"{")))
}

/// The JSON object `object` (valid, as read) with only its members at `kept` (see
/// [`Members::kept_members`]).
pub fn object_with(object: &[u8], kept: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut rewritten = Vec::with_capacity(object.len());
    rewritten.push(b'{');
    for (i, member) in kept.iter().enumerate() {
        if i > 0 {
            rewritten.push(b',');
        }
        rewritten.extend_from_slice(&object[member.clone()]);
    }
    rewritten.push(b'}');
    rewritten
}

/// A JSON object's members as read: keys (borrowed unless escaped) and unparsed values, in
/// order. Parsing only what a record needs, instead of building a `serde_json::Value` of the
/// whole line and serialising it again for kept.jsonl, roughly halves the cost of a record.
pub struct Members<'a>(pub Vec<(Cow<'a, str>, &'a str)>);

impl<'a> Members<'a> {
    /// When the object has members of [`RESERVED_KEYS`], the byte ranges in `line` (which
    /// these are members of) of its other members, from key to value, for outputs that set
    /// the reserved keys themselves to copy the object without them: a copy of bytes where
    /// a JSON parser's object written again read and escaped every string of the record
    /// twice (a third of the CPU time of a run on records with a `first_seen`).
    pub fn kept_members(&self, line: &str) -> Option<Vec<std::ops::Range<usize>>> {
        if !self.0.iter().any(|(k, _)| RESERVED_KEYS.contains(&&**k)) {
            return None;
        }
        let bytes = line.as_bytes();
        // Values are slices of `line`; a member's key is the first string after the previous
        // member's value (past a comma) or after the object's opening brace.
        let mut from = bytes.iter().position(|&b| b == b'{')? + 1;
        let mut kept = Vec::with_capacity(self.0.len());
        for (key, value) in &self.0 {
            let start = (value.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
            let end = start + value.len();
            let key_start = from + bytes.get(from..start)?.iter().position(|&b| b == b'"')?;
            if !RESERVED_KEYS.contains(&&**key) {
                kept.push(key_start..end);
            }
            from = end;
        }
        Some(kept)
    }

    /// The members of the object `line` holds: by the scan where it can read the object,
    /// else by serde_json. `Err` is a reject's reason: the line is malformed JSON (naming
    /// the column) or not an object (naming what it is).
    pub fn parse(line: &'a str) -> Result<Members<'a>, String> {
        if let Some(members) = Self::scan(line) {
            return Ok(members);
        }
        Self::parse_with_serde(line)
    }

    /// [`Members::parse`] by serde_json alone: keys and `&RawValue`s.
    pub fn parse_with_serde(line: &'a str) -> Result<Members<'a>, String> {
        use serde::de::{Deserializer as _, MapAccess, Visitor};
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(CowStr(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    members.push((key, value.get()));
                }
                Ok(Members(members))
            }
        }
        let mut de = serde_json::Deserializer::from_str(line);
        let members = de.deserialize_map(Object).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => match kind(line) {
                // Not an object at all; an object's data errors (a key that is not a
                // string cannot be one in valid JSON) are the parser's to say.
                k @ ("null" | "a boolean" | "a string" | "an array") => {
                    format!("expected a JSON object, not {k}")
                }
                _ if !line.trim_start().starts_with('{') => {
                    "expected a JSON object, not a number".to_owned()
                }
                _ => malformed(&e),
            },
            _ => malformed(&e),
        })?;
        de.end().map_err(|e| malformed(&e))?;
        Ok(members)
    }

    /// The members of a flat object (strings, numbers, booleans and nulls) of valid JSON,
    /// read without a parser: serde_json reads a string byte by byte, and a record's text
    /// is kilobytes long; here its closing quote is found by a vectorised search, and its
    /// contents are checked for what JSON forbids in a string (control characters, unknown
    /// escapes) in one pass. `None` for anything else (nested values, escaped keys, any
    /// invalid JSON), which the parser then reads, or rejects with its message: the
    /// property tests hold the two to the same answers.
    pub fn scan(line: &'a str) -> Option<Members<'a>> {
        let bytes = line.as_bytes();
        let ws = |mut i: usize| {
            while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            i
        };
        // Every boundary below is at an ASCII byte, so a char boundary of the line: slicing
        // the `str` checks just that (validating each value's UTF-8 again cost as much as
        // reading the string).
        let text = |a: usize, b: usize| line.get(a..b);
        let mut members = Vec::new();
        let mut i = ws(0);
        if bytes.get(i) != Some(&b'{') {
            return None;
        }
        i = ws(i + 1);
        if bytes.get(i) == Some(&b'}') {
            return (ws(i + 1) == bytes.len()).then_some(Members(members));
        }
        loop {
            if bytes.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = string_at(bytes, i)?;
            let key_start = i + 1;
            let key = &bytes[key_start..key_end - 1];
            if key.iter().any(|&b| b == b'\\' || b < 0x20) {
                return None;
            }
            i = ws(key_end);
            if bytes.get(i) != Some(&b':') {
                return None;
            }
            let start = ws(i + 1);
            let end = match bytes.get(start)? {
                b'"' => string_at(bytes, start)?,
                b't' => literal(bytes, start, b"true")?,
                b'f' => literal(bytes, start, b"false")?,
                b'n' => literal(bytes, start, b"null")?,
                b'-' | b'0'..=b'9' => number_end(bytes, start)?,
                _ => return None,
            };
            members.push((
                Cow::Borrowed(text(key_start, key_end - 1)?),
                text(start, end)?,
            ));
            i = ws(end);
            match bytes.get(i)? {
                b',' => i = ws(i + 1),
                b'}' => return (ws(i + 1) == bytes.len()).then_some(Members(members)),
                _ => return None,
            }
        }
    }

    /// The value of `field` (the last one, when a key repeats, as JSON parsers do).
    pub fn get(&self, field: &str) -> Option<&'a str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == field)
            .map(|(_, v)| *v)
    }

    /// A string field: absent, null or blank is `None`; any other type is an error.
    pub fn string(&self, field: &str) -> Result<Option<String>, String> {
        Ok(match self.text(field)? {
            Text::Present(s) => Some(s),
            Text::Absent | Text::Null | Text::Empty | Text::Blank => None,
        })
    }

    /// A string field as it is: absent, null, empty, blank or text; any other type is an
    /// error naming the field and the type.
    pub fn text(&self, field: &str) -> Result<Text, String> {
        let Some(raw) = self.get(field) else {
            return Ok(Text::Absent);
        };
        match kind(raw) {
            "null" => Ok(Text::Null),
            "a string" => {
                let s = unescape(raw).map_err(|e| format!("field {field:?}: {e}"))?;
                Ok(if s.is_empty() {
                    Text::Empty
                } else if s.trim().is_empty() {
                    Text::Blank
                } else {
                    Text::Present(s.into_owned())
                })
            }
            other => Err(format!("field {field:?} must be a string, not {other}")),
        }
    }
}

/// A string field of a JSON object, as found.
#[derive(Debug, PartialEq, Eq)]
pub enum Text {
    /// No such member.
    Absent,
    /// `null`.
    Null,
    /// `""`.
    Empty,
    /// White space only.
    Blank,
    /// Text, unescaped.
    Present(String),
}

impl Text {
    /// What the field holds when it is present but has no text: `"body_text" is ""`.
    pub fn describe_empty(&self, field: &str) -> Option<String> {
        match self {
            Text::Null => Some(format!("{field:?} is null")),
            Text::Empty => Some(format!("{field:?} is \"\"")),
            Text::Blank => Some(format!("{field:?} is white space only")),
            Text::Absent | Text::Present(_) => None,
        }
    }
}

/// A parser error as a reject's reason: its column in the line (the reject names the
/// file's line; the parser, reading one line, would say line 1).
fn malformed(e: &serde_json::Error) -> String {
    format!("malformed JSON at column {}: {}", e.column(), unlocated(e))
}

/// A parser error without serde's position: for a value parsed on its own (a number out of
/// range, a bad escape), the position is within the value, not the line.
pub fn unlocated(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let located = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&located).unwrap_or(&full).to_owned()
}

/// The text of a JSON string literal (`raw`, quotes included, as the parser delimited it),
/// borrowed unless it holds escapes.
///
/// Record texts are long and escape every line break, and serde_json decodes a string into
/// a scratch buffer that the caller then copies: here the text is decoded once, into a
/// buffer of its final size, 64 bytes at a time: each block is copied whole and the copy cut
/// back to the block's first backslash, so the text between escapes (a few dozen bytes in
/// prose) costs one fixed-size copy and no call of its own.
pub fn unescape(raw: &str) -> Result<Cow<'_, str>, String> {
    let inner = raw
        .trim()
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or("not a string")?;
    let bytes = inner.as_bytes();
    let Some(first) = memchr::memchr(b'\\', bytes) else {
        return Ok(Cow::Borrowed(inner));
    };
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 16);
    out.extend_from_slice(&bytes[..first]);
    let mut at = first;
    let mut utf8 = [0u8; 4];
    loop {
        // `at` is at a backslash.
        match bytes.get(at + 1).and_then(|&c| simple_escape(c)) {
            Some(decoded) => {
                out.push(decoded);
                at += 2;
            }
            None => {
                let (decoded, len) = escape_at(&bytes[at..])?;
                out.extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
                at += len;
            }
        }
        // Copy up to the next backslash: 64 bytes at once, cut back to it. The output
        // never outgrows the input read (escapes are longer than what they stand for), so
        // the copy stays within the capacity.
        loop {
            let Some(block) = bytes.get(at..at + 64) else {
                let rest = &bytes[at..];
                match memchr::memchr(b'\\', rest) {
                    Some(i) => {
                        out.extend_from_slice(&rest[..i]);
                        at += i;
                        break;
                    }
                    None => {
                        out.extend_from_slice(rest);
                        // Valid UTF-8: the pieces of `inner` copied end at backslashes
                        // (ASCII, so char boundaries) or at its end, and the rest are
                        // encoded chars.
                        debug_assert!(std::str::from_utf8(&out).is_ok());
                        // SAFETY: as just argued, `out` is valid UTF-8.
                        return Ok(Cow::Owned(unsafe { String::from_utf8_unchecked(out) }));
                    }
                }
            };
            let block: &[u8; 64] = block.try_into().expect("64 bytes");
            out.extend_from_slice(block);
            match backslash_mask(block) {
                0 => at += 64,
                mask => {
                    let k = mask.trailing_zeros() as usize;
                    out.truncate(out.len() - 64 + k);
                    at += k;
                    break;
                }
            }
        }
    }
}

/// The byte each one-character escape (`\n`, `\"`, ...) stands for, by the character after
/// its backslash; 0 for none (no escape stands for a NUL). A table, where a `match`
/// compiled to an indirect jump that went wrong whenever one kind of escape followed
/// another.
static ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'n' as usize] = b'\n';
    t[b't' as usize] = b'\t';
    t[b'r' as usize] = b'\r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0c;
    t
};

/// The byte a one-character escape stands for, from the character after its backslash.
#[inline(always)]
fn simple_escape(c: u8) -> Option<u8> {
    Some(ESCAPES[c as usize]).filter(|&d| d != 0)
}

/// Bit i set where `block[i]` is a backslash.
#[inline(always)]
fn backslash_mask(block: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline.
        block_mask(block, |v| unsafe {
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8))
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    block
        .iter()
        .enumerate()
        .fold(0, |m, (i, &b)| m | (u64::from(b == b'\\') << i))
}

/// The bits of the 64-byte `block` whose bytes `lanes` marks (0xFF), 16 bytes at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_mask(
    block: &[u8; 64],
    lanes: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
) -> u64 {
    use std::arch::x86_64::*;
    let mut mask = 0u64;
    for k in 0..4 {
        // SAFETY: SSE2 is part of the x86_64 baseline; the load reads 16 bytes of `block`.
        let bits = unsafe {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast());
            _mm_movemask_epi8(lanes(v)) as u16
        };
        mask |= u64::from(bits) << (16 * k);
    }
    mask
}

/// Decodes the escape at the start of `bytes` (a backslash first): the character and the
/// escape's length (a surrogate pair is one character of two escapes).
fn escape_at(bytes: &[u8]) -> Result<(char, usize), String> {
    match bytes.get(1) {
        Some(b'u') => {}
        other => {
            return other
                .and_then(|&c| simple_escape(c))
                .map(|d| (char::from(d), 2))
                .ok_or_else(|| "invalid escape".into())
        }
    }
    let unit = hex4(bytes, 2)?;
    if !(0xD800..0xE000).contains(&unit) {
        return Ok((char::from_u32(unit).expect("not a surrogate"), 6));
    }
    if unit >= 0xDC00 || bytes.get(6..8) != Some(b"\\u") {
        return Err("lone surrogate in \\u escape".into());
    }
    let low = hex4(bytes, 8)?;
    if !(0xDC00..0xE000).contains(&low) {
        return Err("lone surrogate in \\u escape".into());
    }
    let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    Ok((char::from_u32(c).expect("a surrogate pair is a char"), 12))
}

/// The four hex digits at `bytes[at..at + 4]`.
fn hex4(bytes: &[u8], at: usize) -> Result<u32, String> {
    let digits = bytes
        .get(at..at + 4)
        .ok_or("invalid \\u escape: fewer than four hex digits")?;
    digits.iter().try_fold(0u32, |n, &d| {
        let v = (d as char)
            .to_digit(16)
            .ok_or("invalid \\u escape: not a hex digit")?;
        Ok(n * 16 + v)
    })
}

/// A string (a key or a value), borrowed from the line unless it holds escapes.
struct CowStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(CowVisitor).map(CowStr)
    }
}

struct CowVisitor;

impl<'de> serde::de::Visitor<'de> for CowVisitor {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// The end (after its closing quote) of the JSON string whose opening quote is at
/// `bytes[start]`, if the string is valid JSON: no control character, every backslash one of
/// JSON's escapes (`\u` with four hex digits). One pass: the quotes, backslashes and control
/// characters of each 64-byte block are found at once, and each escape checked and stepped
/// over (1.6x faster over the 1 GB bench corpus than a search from each escape to the next,
/// 16 bytes at a time).
fn string_at(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        let Some(block) = bytes.get(i..i + 64) else {
            // The last bytes, one at a time.
            let j = i + bytes.get(i..)?.iter().position(|&c| is_special(c))?;
            match bytes[j] {
                b'"' => return Some(j + 1),
                b'\\' => i = j + escape_len(bytes, j)?,
                _ => return None, // a control character
            }
            continue;
        };
        // Every special byte of the block is visited from one mask: escapes a few dozen
        // bytes apart (every line break is one) cost no new search each.
        let base = i;
        let mut mask = special_mask(block.try_into().expect("64 bytes"));
        loop {
            if mask == 0 {
                i = base + 64;
                break;
            }
            let j = base + mask.trailing_zeros() as usize;
            match bytes[j] {
                b'"' => return Some(j + 1),
                b'\\' => {
                    let next = j + escape_len(bytes, j)?;
                    if next >= base + 64 {
                        i = next;
                        break;
                    }
                    // What the escape covered (an escaped quote or backslash) is skipped.
                    mask &= u64::MAX << (next - base);
                }
                _ => return None, // a control character
            }
        }
    }
}

/// Whether `c` ends a stretch of plain string bytes: a quote, a backslash or a control
/// character.
#[inline(always)]
fn is_special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The length of the valid JSON escape at `bytes[j]` (a backslash), or `None`.
#[inline(always)]
fn escape_len(bytes: &[u8], j: usize) -> Option<usize> {
    match bytes.get(j + 1)? {
        &c if ESCAPES[c as usize] != 0 => Some(2),
        b'u' if bytes
            .get(j + 2..j + 6)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
        {
            Some(6)
        }
        _ => None,
    }
}

/// Bit i set where `block[i]` is special ([`is_special`]).
#[inline(always)]
fn special_mask(block: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline.
        block_mask(block, |v| unsafe {
            let control = _mm_set1_epi8(0x1f);
            // Unsigned v <= 0x1f exactly where max(v, 0x1f) == 0x1f.
            _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                ),
                _mm_cmpeq_epi8(_mm_max_epu8(v, control), control),
            )
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    block
        .iter()
        .enumerate()
        .fold(0, |m, (i, &c)| m | (u64::from(is_special(c)) << i))
}

/// The end of the literal `word` at `bytes[start]`, if it is there.
fn literal(bytes: &[u8], start: usize, word: &[u8]) -> Option<usize> {
    bytes[start..]
        .starts_with(word)
        .then_some(start + word.len())
}

/// The end of the JSON number at `bytes[start]`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn number_end(bytes: &[u8], start: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        let from = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > from).then_some(i)
    };
    let mut i = start;
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match bytes.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i)?,
        _ => return None,
    };
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(i)?;
    }
    Some(i)
}

/// What kind of JSON value `raw` is (its first character tells; it is valid JSON).
pub fn kind(raw: &str) -> &'static str {
    match raw.trim_start().as_bytes().first() {
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        Some(b'"') => "a string",
        Some(b'[') => "an array",
        Some(b'{') => "an object",
        _ => "a number",
    }
}
