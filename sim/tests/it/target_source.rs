//! Where a NEFF's generation comes from, as messages name it: the kelf `target` of the
//! runtime's layout, `neff.json` `target_arch` of the earlier dialect, `*`, or nothing.

use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::target_source;
use tpbsim_sim::machine::pack::Package;

/// A v3 package with one SP NOP.
fn package() -> Package {
    let mut p = Package::new("t", Gen::V3);
    let mut nop = Bundle::ZERO;
    nop.set_u8(0, 0xA4);
    nop.set_u8(1, 0x10);
    p.streams[Engine::Sp as usize].push(nop);
    p
}

#[test]
fn a_dialect_neff_names_its_target_arch() {
    let mut n = package().to_neff_dialect().unwrap();
    assert_eq!(target_source(&n), "neff.json target_arch \"cayman\"");
    n.members
        .insert("neff.json".into(), br#"{"target_arch": "*"}"#.to_vec());
    assert_eq!(
        target_source(&n),
        "neff.json target_arch \"*\" (any generation)"
    );
    n.members.remove("neff.json");
    assert_eq!(
        target_source(&n),
        "nothing (no kelf target, no neff.json target_arch)"
    );
}

#[test]
fn a_runtime_layout_neff_names_its_kelf_target() {
    let bytes = package().to_neff().unwrap().to_bytes().unwrap();
    let n = Neff::from_bytes(&bytes, &ReadOptions::default()).unwrap();
    let s = target_source(&n);
    let kelf = s
        .strip_suffix(" target \"cayman\"")
        .unwrap_or_else(|| panic!("{s}"));
    assert!(n.members.contains_key(kelf), "{s} names no member");
    assert!(kelf.ends_with(".json") && kelf != "neff.json", "{s}");
}
