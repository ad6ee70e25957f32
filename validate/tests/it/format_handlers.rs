//! Every instruction format of the spec is handled by each layer that executes or checks it.
//!
//! * The simulator and any other consumer of decoded bundles implement
//!   `tpbsim_isa::InstVisitor`, generated from the spec's format list with one required method
//!   per format and no default: a format added to the spec does not build until each
//!   implementor handles it. That part is checked by the compiler.
//! * The L2 format gates are listed in the spec (`spec::GATES`, with the module, function and rule
//!   table that implement each) and a format row names its gate. The validator's dispatch
//!   (`l2::formats::run` / `table`) is generated from that list, so a gate without its function
//!   or table does not build. The gates are bound to opcodes by `tpbsim_isa::FormatGate::of`.
//!   That binding is data, so it is checked here: on every generation with an L2 validator, every maintained
//!   opcode of the header enum that the spec binds to a typed format has a format gate, and so
//!   does every typed format the generation has. Dormant opcodes (presence `n`: in the enum, not
//!   emitted) have no public gate; L2 reports them "not checked", and the test pins that list.

use tpbsim_isa::{spec, FormatGate, Gen, VISITOR_METHODS};
use tpbsim_validate::l2;

/// The spec formats with a typed layout in `gen`: the ones `InstVisitor` has a method for.
fn typed_formats(gen: Gen) -> Vec<&'static spec::FormatDef> {
    spec::formats()
        .iter()
        .filter(|f| spec::presence_at(f.gens, gen.index()).is_present())
        .collect()
}

/// The opcodes bound to `f` (the format column of the opcode rows, or the opcode a
/// sub-selected format lives under).
fn bound_opcodes(f: &spec::FormatDef) -> Vec<u8> {
    match f.sub {
        Some(s) => vec![s.opcode],
        None => spec::opcodes()
            .iter()
            .filter(|r| r.format == f.name)
            .map(|r| r.code)
            .collect(),
    }
}

#[test]
fn the_visitor_has_one_method_per_typed_format_and_the_raw_form() {
    let mut named: Vec<&str> = VISITOR_METHODS.iter().map(|(f, _)| *f).collect();
    assert_eq!(named.pop(), Some("Raw"));
    let mut typed: Vec<&str> = spec::formats()
        .iter()
        .filter(|f| {
            Gen::ALL
                .iter()
                .any(|g| spec::presence_at(f.gens, g.index()).is_present())
        })
        .map(|f| f.name)
        .collect();
    named.sort_unstable();
    typed.sort_unstable();
    assert_eq!(named, typed);
}

#[test]
fn every_typed_opcode_of_an_l2_generation_has_a_format_gate() {
    let mut missing = Vec::new();
    let mut dormant_ungated = Vec::new();
    for gen in l2::GENS {
        for r in spec::opcodes() {
            if r.format.is_empty() || !l2::catalog::present(r, gen) {
                continue;
            }
            let typed = typed_formats(gen).iter().any(|f| f.name == r.format);
            if !typed || tpbsim_isa::FormatGate::of(gen, r.code).is_some() {
                continue;
            }
            if r.presence_for(gen) == spec::Presence::Dormant {
                dormant_ungated.push((gen.index(), r.code));
            } else {
                missing.push(format!(
                    "{gen} {:#04x} {} ({})",
                    r.code,
                    r.mnemonic(),
                    r.format
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "opcodes without a format gate: {missing:#?}"
    );
    // The dormant pointer / immediate-load TensorScalar variants have no public gate.
    let mut want = Vec::new();
    for gen in l2::GENS {
        for op in [0x44, 0x4F, 0x54, 0x5F, 0x70, 0x71] {
            want.push((gen.index(), op));
        }
        if gen == Gen::V2 {
            want.extend([(gen.index(), 0x87), (gen.index(), 0x88)]);
        }
    }
    dormant_ungated.sort_unstable();
    want.sort_unstable();
    assert_eq!(dormant_ungated, want);
}

#[test]
fn every_typed_format_of_an_l2_generation_has_a_gated_opcode() {
    let mut missing = Vec::new();
    for gen in l2::GENS {
        for f in typed_formats(gen) {
            let gated = bound_opcodes(f).into_iter().any(|op| {
                spec::opcode(op).is_some_and(|r| l2::catalog::present(r, gen))
                    && tpbsim_isa::FormatGate::of(gen, op).is_some()
            });
            if !gated {
                missing.push(format!("{gen} {}", f.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "formats without a format gate: {missing:#?}"
    );
}

#[test]
fn every_gate_is_named_by_its_formats_and_bound_to_the_function_of_its_name() {
    for g in FormatGate::ALL {
        let d = g.def();
        assert_eq!(d.gate, g.gate_name());
        assert_eq!(l2::formats::gate_fn_name(g), d.gate);
        assert!(!g.formats().is_empty(), "{} checks no format", d.gate);
        for f in g.formats() {
            assert_eq!(spec::format(f).map(|f| f.gate), Some(d.variant), "{f}");
        }
    }
    for f in spec::formats().iter().filter(|f| !f.gate.is_empty()) {
        assert!(
            FormatGate::ALL
                .iter()
                .any(|g| g.formats().contains(&f.name)),
            "{} names gate {} that does not list it",
            f.name,
            f.gate
        );
    }
}
