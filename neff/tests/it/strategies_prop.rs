//! Properties of the NEFF image strategy (`tpbsim_neff::strategies::arb_neff`): packing a
//! generated image and reading it back gives the same members and header fields, the
//! subgraph checks accept it, and the reader returns errors (never panics) on truncated and
//! byte-flipped versions of the packed archive; truncation is always detected.
//!
//! Case counts: `TPBSIM_PROPTEST_CASES` (default 256) / 4 per property.
#![cfg(feature = "proptest")]

use proptest::prelude::*;
use tpbsim_neff::strategies::{arb_neff, SUBGRAPH};
use tpbsim_neff::{Neff, ReadOptions, HEADER_LEN};

fn cases() -> u32 {
    let total: u32 = std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    (total / 4).max(1)
}

fn read_all(bytes: &[u8], opts: &ReadOptions) -> Result<Neff, String> {
    let n = Neff::from_bytes(bytes, opts).map_err(|e| e.to_string())?;
    for d in n.subgraph_dirs() {
        n.subgraph(&d).map_err(|e| e.to_string())?;
    }
    Ok(n)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn pack_then_read_gives_the_same_members(neff in arb_neff()) {
        let sg = neff.subgraph(SUBGRAPH);
        prop_assert!(sg.is_ok(), "generated image rejected: {:?}", sg.err());
        let bytes = neff.to_bytes();
        prop_assert!(bytes.is_ok(), "{:?}", bytes.err());
        let bytes = bytes.unwrap_or_default();
        let back = Neff::from_bytes(&bytes, &ReadOptions::default());
        prop_assert!(back.is_ok(), "{:?}", back.as_ref().err());
        let back = back.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back.members, &neff.members);
        prop_assert_eq!(back.header.name_str(), neff.header.name_str());
        prop_assert_eq!(back.header.pkg_version, neff.header.pkg_version);
        prop_assert_eq!(back.header.num_tpb, neff.header.num_tpb);
        let (a, b) = (neff.subgraph(SUBGRAPH), back.subgraph(SUBGRAPH));
        prop_assert!(b.is_ok(), "{:?}", b.as_ref().err());
        let (a, b) = (a.map_err(|e| TestCaseError::fail(e.to_string()))?, b.map_err(|e| TestCaseError::fail(e.to_string()))?);
        prop_assert_eq!(a.streams.keys().collect::<Vec<_>>(), b.streams.keys().collect::<Vec<_>>());
        prop_assert_eq!(a.sidecars.keys().collect::<Vec<_>>(), b.sidecars.keys().collect::<Vec<_>>());
        // Packing is deterministic.
        prop_assert_eq!(back.to_bytes().ok(), Some(bytes));
    }

    #[test]
    fn truncated_archives_are_errors(neff in arb_neff(), cut in any::<prop::sample::Index>()) {
        let bytes = neff.to_bytes().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let cut = cut.index(bytes.len());
        for verify_hash in [true, false] {
            let r = read_all(&bytes[..cut], &ReadOptions { verify_hash, ..ReadOptions::default() });
            prop_assert!(r.is_err(), "{} of {} bytes read back (verify_hash {})", cut, bytes.len(), verify_hash);
        }
    }

    #[test]
    fn flipped_archives_never_panic(neff in arb_neff(), flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4)) {
        let mut bytes = neff.to_bytes().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let len = bytes.len();
        let mut payload_flipped = false;
        for (at, x) in flips {
            let i = at.index(len);
            bytes[i] ^= x;
            payload_flipped |= i >= HEADER_LEN;
        }
        let verified = read_all(&bytes, &ReadOptions { verify_hash: true, ..ReadOptions::default() });
        // A changed payload byte never passes the digest check (when it is asked for).
        if payload_flipped {
            prop_assert!(verified.is_err(), "payload change not detected");
        }
        let _ = read_all(&bytes, &ReadOptions { verify_hash: false, ..ReadOptions::default() });
    }
}
