//! Every dtype field the spec gives a gated format is covered by the gate's rule data: a dtype
//! row (what the checker evaluates and the fuzz generator's invalid-dtype mutation breaks) or a
//! field row that bounds the field to a dtype set; the few left to procedural code are listed
//! below with the reason. A dtype field added to the spec fails here until its gate says how
//! it checks it.

use tpbsim_isa::formats::LAYOUT_META;
use tpbsim_isa::spec::FieldType;
use tpbsim_isa::FormatGate;
use tpbsim_validate::l2::formats::table;
use tpbsim_validate::l2::table::Part;
use tpbsim_validate::l2::GENS;

/// (format, field, why no row): dtype fields whose check is procedural or that the gate
/// reports as not checked.
const PROCEDURAL: &[(&str, &str, &str)] = &[
    (
        "Activate2",
        "imm_dtype",
        "no public validity condition: reported as not checked (is_valid_s2d2_ac.imm_dtype)",
    ),
    (
        "DmaDirect2d",
        "in_dtype",
        "the descriptor's dtype conditions are not public: reported as not checked",
    ),
    (
        "DmaDirect2d",
        "out_dtype",
        "the descriptor's dtype conditions are not public: reported as not checked",
    ),
    (
        "Matmul",
        "out_dtype",
        "a PSUM output set (0, FP32, BF16 on v4) that depends on the generation, not is_valid_dtype",
    ),
    (
        "MatmulSparse",
        "out_dtype",
        "a PSUM output set (0, FP32, BF16 on v4) that depends on the generation, not is_valid_dtype",
    ),
    (
        "MatmulMx",
        "out_dtype",
        "a PSUM output set (0, FP32, BF16), not is_valid_dtype",
    ),
];

#[test]
fn every_spec_dtype_field_of_a_gated_format_has_rule_data() {
    let mut missing = Vec::new();
    let mut used = vec![false; PROCEDURAL.len()];
    for l in LAYOUT_META.iter() {
        let Some(f) = l.format else { continue };
        for gen in GENS.into_iter().filter(|g| l.gens[g.index()]) {
            for (op, _) in l.opcodes(gen) {
                let Some(gate) = FormatGate::of(gen, op) else {
                    continue;
                };
                let t = table(gate);
                for fm in l.fields.iter().filter(|m| m.offset >= 12) {
                    let parts: &[Part] = match fm.ty {
                        FieldType::Enum("DTYPE") => &[Part::Byte],
                        FieldType::DtypePair => &[Part::Low, Part::High],
                        _ => continue,
                    };
                    for &part in parts {
                        let by_dtype_row = t
                            .dtype_rows()
                            .any(|r| r.field.start == fm.offset && r.part == part && r.ops.has(op));
                        let by_field_row = t
                            .rows()
                            .any(|r| r.field.start == fm.offset && r.applies(gen, op));
                        if by_dtype_row || by_field_row {
                            continue;
                        }
                        match PROCEDURAL
                            .iter()
                            .position(|p| p.0 == f.name && p.1 == fm.name)
                        {
                            Some(i) => used[i] = true,
                            None => missing
                                .push(format!("{} {op:#04x} {gen} {} ({part:?})", f.name, fm.name)),
                        }
                    }
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "dtype fields without rule data: {missing:#?}"
    );
    for (p, u) in PROCEDURAL.iter().zip(used) {
        assert!(u, "{}.{} is listed but has rule data or no gate", p.0, p.1);
    }
}
