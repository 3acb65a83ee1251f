//! The layout's key names and values (see the module documentation of [`redis`](super)):
//! `{P}:rec` values, merge-log and rejection rows, boilerplate blobs, band-set members and
//! the change log's entries.

use crate::store::{Features, HostBoilerplate, MergeLogEntry, Rejection, StoredRecord};

/// Version of the layout, kept in `{P}:meta` as `redis_layout`.
pub(super) const LAYOUT_VERSION: &str = "1";

/// Key names.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    pub(super) prefix: String,
}

impl Keys {
    /// A key in the atomic slot.
    pub(super) fn tagged(&self, name: &str) -> String {
        format!("{{{}}}:{name}", self.prefix)
    }
    pub(super) fn shingles(&self, handle: u64, token: u64) -> String {
        format!("{}:s:{handle}:{token:016x}", self.prefix)
    }
    /// A record's sentence embeddings ([`embedding_blob`](crate::semantic::embedding_blob)),
    /// beside its shingles and gone with them.
    pub(super) fn embedding(&self, handle: u64, token: u64) -> String {
        format!("{}:e:{handle}:{token:016x}", self.prefix)
    }
}

/// What the change log carries besides the handles of new records (whose data other
/// processes read from `{P}:rec`, so an erasure leaves no copy of a record in the log).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Change {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) survivor_updates: Vec<(u64, u64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) boilerplate: Vec<(String, HostBoilerplate)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) erase: Vec<u64>,
}

fn features_char(f: Features) -> char {
    match f {
        Features::Words => 'w',
        Features::Chars => 'c',
        Features::ExactOnly => 'x',
    }
}

/// `{P}:rec`'s value: fixed-width fields the scripts read without parsing JSON, then the
/// record.
pub(super) fn record_value(r: &StoredRecord, token: u64) -> String {
    format!(
        "{token:016x} {:032x} {} {}",
        r.fingerprint,
        features_char(r.features),
        serde_json::to_string(r).expect("records serialise")
    )
}

pub(super) fn parse_record_value(
    handle: &str,
    value: &[u8],
    survivor: &[u8],
) -> std::result::Result<(StoredRecord, u64), String> {
    let bad = |what: &str| format!("record {handle} in Redis is unreadable ({what})");
    if value.len() < 53 {
        return Err(bad("too short"));
    }
    let token = std::str::from_utf8(&value[..16])
        .ok()
        .and_then(|t| u64::from_str_radix(t, 16).ok())
        .ok_or_else(|| bad("token"))?;
    let mut record: StoredRecord =
        serde_json::from_slice(&value[52..]).map_err(|e| bad(&e.to_string()))?;
    if !survivor.is_empty() {
        record.survivor = std::str::from_utf8(survivor)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("survivor"))?;
    }
    Ok((record, token))
}

pub(super) fn fingerprint_member(handle: u64, fp: u128) -> String {
    if fp >> 64 == 0 {
        format!("{handle}:{fp:016x}")
    } else {
        format!("{handle}:{fp:032x}")
    }
}

/// A `{P}:merges` row: the ids an erasure rewrites, as JSON strings the commit script
/// reads, then the rest of the entry as JSON text.
pub(super) fn merge_row(m: &MergeLogEntry) -> String {
    let rest = MergeLogEntry {
        kept: String::new(),
        merged: String::new(),
        matched: String::new(),
        ..m.clone()
    };
    let row = (
        &m.kept,
        &m.merged,
        &m.matched,
        serde_json::to_string(&rest).expect("merges serialise"),
    );
    serde_json::to_string(&row).expect("rows serialise")
}

/// Reads [`merge_row`]'s rows.
pub(super) fn parse_merge_row(row: &[u8]) -> serde_json::Result<MergeLogEntry> {
    let (kept, merged, matched, rest): (String, String, String, String) =
        serde_json::from_slice(row)?;
    Ok(MergeLogEntry {
        kept,
        merged,
        matched,
        ..serde_json::from_str(&rest)?
    })
}

/// The `{P}:labels` field of the pair `(a, b)`: a JSON array, so no id can collide with
/// another pair's.
pub(super) fn label_field(a: &str, b: &str) -> String {
    serde_json::to_string(&[a, b]).expect("strings serialise")
}

/// A `{P}:rejections` row, made as [`merge_row`]'s.
pub(super) fn rejection_row(r: &Rejection) -> String {
    let rest = Rejection {
        record: String::new(),
        candidate: String::new(),
        ..r.clone()
    };
    let row = (
        &r.record,
        &r.candidate,
        serde_json::to_string(&rest).expect("rejections serialise"),
    );
    serde_json::to_string(&row).expect("rows serialise")
}

/// Reads [`rejection_row`]'s rows.
pub(super) fn parse_rejection_row(row: &[u8]) -> serde_json::Result<Rejection> {
    let (record, candidate, rest): (String, String, String) = serde_json::from_slice(row)?;
    Ok(Rejection {
        record,
        candidate,
        ..serde_json::from_str(&rest)?
    })
}

/// `{P}:bp`'s value: the page count, then the shingle hashes, little-endian u64s.
pub(super) fn boilerplate_value(b: &HostBoilerplate) -> Vec<u8> {
    let mut blob = b.pages.to_le_bytes().to_vec();
    blob.extend(b.shingles.iter().flat_map(|h| h.to_le_bytes()));
    blob
}

/// Reads [`boilerplate_value`]'s values; `None` for one too short to hold the page count.
pub(super) fn parse_boilerplate_value(blob: &[u8]) -> Option<HostBoilerplate> {
    (blob.len() >= 8).then(|| HostBoilerplate {
        pages: u64::from_le_bytes(blob[..8].try_into().expect("8 bytes")),
        shingles: blob[8..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_values_round_trip() {
        let r = StoredRecord {
            handle: 7,
            id: "x y".into(),
            fingerprint: u128::MAX - 5,
            content_hash: 9,
            url: None,
            host: None,
            first_seen: crate::record::Timestamp(5),
            retention_class: None,
            survivor: 7,
            arrival: crate::store::Arrival::New,
            tokens: 3,
            language: None,
            features: Features::Words,
        };
        let v = record_value(&r, 0xabc);
        assert_eq!(&v[17..49], format!("{:032x}", r.fingerprint));
        assert_eq!(&v[50..51], "w");
        let (back, token) = parse_record_value("7", v.as_bytes(), b"3").unwrap();
        assert_eq!(token, 0xabc);
        assert_eq!(back, StoredRecord { survivor: 3, ..r });
    }
}
