//! The seeds' worked examples, end to end through the public API.

use neardup::{BandIndex, HammingIndex, SimHasher};

/// Seed 001: incidents 47 and 83, fingerprinted from weighted feature bags, each found at
/// distance 0 through an eight-band index; a bag with a non-positive weight is refused.
#[test]
fn seed_001_incidents_are_found_at_distance_zero() {
    let hasher = SimHasher::builder().build().unwrap();
    let incident_47 = [("dock", 3), ("scanner", 2), ("timeout", 1)];
    let incident_83 = [("weather", 4), ("road", 2)];
    let fp47 = hasher.fingerprint_bag(incident_47).unwrap().as_u64();
    let fp83 = hasher.fingerprint_bag(incident_83).unwrap().as_u64();
    let mut index = BandIndex::builder().bands(8).build().unwrap();
    index.insert(47, fp47).unwrap();
    index.insert(83, fp83).unwrap();
    let hits47 = index.query(fp47, 7).unwrap();
    assert_eq!((hits47[0].id, hits47[0].distance), (47, 0));
    assert!(hits47.iter().all(|m| m.id != 83 || m.distance <= 7));
    let hits83 = index.query(fp83, 7).unwrap();
    assert_eq!((hits83[0].id, hits83[0].distance), (83, 0));
    // Eight bands answer at most 7 bits exactly.
    assert!(index.query(fp47, 8).is_err());
    assert!(
        index.insert(47, fp47).is_err(),
        "an indexed id is refused without replace"
    );
    assert!(hasher.fingerprint_bag([("dock", 0)]).is_err());
}
