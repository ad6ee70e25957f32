//! Generators of the tables the other layers read instead of restating the spec: field
//! locators, enumeration members and predicate sets, and the opcode → L2 format gate binding
//! with the gate list the validator's dispatch is generated from.

use super::*;

/// `LdWeights` -> `ld_weights`, `DmaDirect2d` -> `dma_direct2d`.
pub(crate) fn snake(name: &str) -> String {
    let mut s = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else {
            s.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
    }
    s
}

/// Rows merged by name: (name, offset per generation, type per generation).
fn merged_fields(
    rows: &[FieldRow],
    gens: PresenceStr,
) -> Vec<(&'static str, [u8; 4], [Option<FieldType>; 4])> {
    let mut out: Vec<(&'static str, [u8; 4], [Option<FieldType>; 4])> = Vec::new();
    for r in rows {
        let k = match out.iter().position(|(n, _, _)| *n == r.name) {
            Some(k) => k,
            None => {
                out.push((r.name, [NA; 4], [None; 4]));
                out.len() - 1
            }
        };
        for gi in 0..4 {
            if r.at[gi] == NA || !presence_at(gens, gi).is_present() {
                continue;
            }
            if out[k].1[gi] != NA {
                fail(format!(
                    "field {} has two rows in {}",
                    r.name, GEN_NAMES[gi]
                ));
            }
            out[k].1[gi] = r.at[gi];
            out[k].2[gi] = Some(r.ty);
        }
    }
    out
}

fn write_locators(
    out: &mut String,
    module: &str,
    doc: &str,
    format: &str,
    rows: &[FieldRow],
    gens: PresenceStr,
) -> Vec<String> {
    writeln!(out, "    /// {doc}\n    pub mod {module} {{\n        #[allow(unused_imports)]\n        use super::*;").unwrap();
    let mut names = Vec::new();
    for (name, at, ty) in merged_fields(rows, gens) {
        let c = upper_ident(name);
        let tys: Vec<String> = ty
            .iter()
            .map(|t| match t {
                Some(t) => format!("Some({})", field_type_expr(t)),
                None => "None".into(),
            })
            .collect();
        writeln!(
            out,
            "        /// `{name}`: offset per generation v2..v5 ({}).\n        pub const {c}: FieldLoc = FieldLoc {{ format: {format:?}, name: {name:?}, at: {at:?}, ty: [{}] }};",
            at.iter()
                .map(|&o| if o == NA { "-".to_string() } else { o.to_string() })
                .collect::<Vec<_>>()
                .join(", "),
            tys.join(", ")
        )
        .unwrap();
        names.push(format!("{module}::{c}"));
        // Sub-fields of a bitfield.
        if let Some(FieldType::Bits(b)) = ty.iter().flatten().next() {
            for d in BITFIELDS[bitfield_index(b)].bits {
                writeln!(
                    out,
                    "        /// `{name}.{}`: bits {}..{} of `{name}`.\n        pub const {c}_{}: BitLoc = BitLoc {{ field: {c}, name: {:?}, lsb: {}, width: {} }};",
                    d.name,
                    d.lsb,
                    d.lsb + d.width,
                    upper_ident(d.name),
                    d.name,
                    d.lsb,
                    d.width
                )
                .unwrap();
            }
        }
    }
    writeln!(out, "    }}").unwrap();
    names
}

pub(crate) fn gen_locators(out: &mut String) {
    writeln!(out, "/// Field locators of every format, per generation: `loc::<format>::<FIELD>` (byte offset,").unwrap();
    writeln!(out, "/// type and enumeration per generation), `loc::header` / `loc::events` for bytes 0..12 and").unwrap();
    writeln!(
        out,
        "/// `<FIELD>_<BIT>` bit locators for the sub-fields of a bitfield byte."
    )
    .unwrap();
    writeln!(out, "pub mod loc {{\n    #[allow(unused_imports)]\n    use crate::spec::{{BitLoc, FieldLoc, FieldType}};").unwrap();
    write_locators(
        out,
        "header",
        "Header fields (bytes 0..4).",
        "",
        HEADER_FIELDS,
        "YYYY",
    );
    write_locators(
        out,
        "events",
        "Events fields (bytes 4..12).",
        "",
        EVENTS_FIELDS,
        "YYYY",
    );
    write_locators(
        out,
        "events_ext",
        "`EVENTS_EXTENDED` block fields, at offsets relative to the block (`Field::member`).",
        "",
        EVENTS_EXT_FIELDS,
        "YYYY",
    );
    let mut all = Vec::new();
    for f in FORMATS {
        let names = write_locators(
            out,
            &snake(f.name),
            &format!("`{}` body fields.", f.name),
            f.name,
            f.fields,
            f.gens,
        );
        all.push(names);
    }
    writeln!(out, "    /// Every format's locators, indexed like `spec::FORMATS`.\n    pub static BY_FORMAT: [&[FieldLoc]; {}] = [", FORMATS.len()).unwrap();
    for names in all {
        writeln!(out, "        &[{}],", names.join(", ")).unwrap();
    }
    writeln!(out, "    ];\n}}\n").unwrap();
}

fn byteset_expr(members: impl Iterator<Item = u8>) -> String {
    let mut w = [0u64; 4];
    for v in members {
        w[v as usize >> 6] |= 1 << (v & 63);
    }
    format!(
        "crate::spec::ByteSet([{:#x}, {:#x}, {:#x}, {:#x}])",
        w[0], w[1], w[2], w[3]
    )
}

pub(crate) fn gen_sets(out: &mut String) {
    writeln!(out, "/// Members of every enumeration per generation v2..v5 (`members::ALU_OP[gen.index()]`).\npub mod members {{").unwrap();
    for e in ENUMS {
        let per: Vec<String> = (0..4)
            .map(|gi| {
                byteset_expr(
                    e.values
                        .iter()
                        .filter(|v| presence_at(v.gens, gi).is_present())
                        .map(|v| v.value),
                )
            })
            .collect();
        writeln!(
            out,
            "    /// `{}` members in v2, v3, v4, v5.\n    pub const {}: [crate::spec::ByteSet; 4] = [{}];",
            e.name,
            upper_ident(e.name),
            per.join(", ")
        )
        .unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "/// Every predicate set per generation v2..v5 (`sets::ARITH[gen.index()]`); a member counts in\n/// a generation where both the set row and the enumeration value are present.\npub mod sets {{").unwrap();
    for s in SETS {
        let e = ENUMS.iter().find(|e| e.name == s.of);
        let per: Vec<String> = (0..4)
            .map(|gi| {
                byteset_expr(
                    s.members
                        .iter()
                        .filter(|m| presence_at(m.gens, gi).is_present())
                        .filter(|m| match e {
                            Some(e) => e
                                .value(m.value)
                                .is_some_and(|v| presence_at(v.gens, gi).is_present()),
                            None => true,
                        })
                        .map(|m| m.value),
                )
            })
            .collect();
        writeln!(
            out,
            "    /// `{}` (over `{}`) in v2, v3, v4, v5.\n    pub const {}: [crate::spec::ByteSet; 4] = [{}];",
            s.name,
            s.of,
            upper_ident(s.name),
            per.join(", ")
        )
        .unwrap();
    }
    writeln!(out, "}}\n").unwrap();
}

/// The gate of every format (index into `GATES`), from the format rows' gate column, after
/// checking the gate rows: unique variants, gate names and rule tables, a Rust identifier for
/// every variant, module and table, and at least one format per gate.
fn gate_of_format() -> Vec<Option<usize>> {
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    for (gi, g) in GATES.iter().enumerate() {
        if !ident(g.variant) || !ident(g.gate) {
            fail(format!(
                "gate {}: variant and gate must be identifiers",
                g.variant
            ));
        }
        if g.prov.is_empty() {
            fail(format!("gate {} has no provenance", g.variant));
        }
        for o in &GATES[..gi] {
            if o.variant == g.variant || o.gate == g.gate {
                fail(format!("gate {} / {} listed twice", g.variant, g.gate));
            }
        }
    }
    let of: Vec<Option<usize>> = FORMATS
        .iter()
        .map(|f| {
            (!f.gate.is_empty()).then(|| {
                GATES
                    .iter()
                    .position(|g| g.variant == f.gate)
                    .unwrap_or_else(|| {
                        fail(format!("format {} names unknown gate {}", f.name, f.gate))
                    })
            })
        })
        .collect();
    for (gi, g) in GATES.iter().enumerate() {
        if !of.contains(&Some(gi)) {
            fail(format!("gate {} is named by no format row", g.variant));
        }
    }
    of
}

pub(crate) fn gen_gates(out: &mut String, layouts: &[Layout]) {
    let gate_of_format = gate_of_format();
    let formats_of = |gi: usize| -> Vec<&str> {
        FORMATS
            .iter()
            .zip(&gate_of_format)
            .filter(|(_, g)| **g == Some(gi))
            .map(|(f, _)| f.name)
            .collect()
    };
    writeln!(
        out,
        "/// The L2 format gates (`spec::GATES`), one per validator `is_valid_<fmt>` function."
    )
    .unwrap();
    writeln!(out, "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub enum FormatGate {{").unwrap();
    for (gi, g) in GATES.iter().enumerate() {
        writeln!(
            out,
            "    /// `{}`: formats {}.\n    {},",
            g.gate,
            formats_of(gi).join(", "),
            g.variant
        )
        .unwrap();
    }
    writeln!(out, "}}").unwrap();
    let mut table = [[u8::MAX; 256]; 4];
    for r in OPCODES {
        if r.format.is_empty() {
            continue;
        }
        let fi = format_index(r.format);
        let Some(g) = gate_of_format[fi] else {
            continue;
        };
        for gi in 0..4 {
            let p = r.presence_in(gi);
            let has_layout = layouts.iter().any(|l| l.fmt == fi && l.gens[gi]);
            if p.is_present() && p != Presence::Dormant && has_layout {
                table[gi][r.code as usize] = g as u8;
            }
        }
    }
    writeln!(out, "impl FormatGate {{").unwrap();
    writeln!(
        out,
        "    /// Every gate, in `spec::GATES` order.\n    pub const ALL: [FormatGate; {}] = [{}];",
        GATES.len(),
        GATES
            .iter()
            .map(|g| format!("FormatGate::{}", g.variant))
            .collect::<Vec<_>>()
            .join(", ")
    )
    .unwrap();
    // A `const fn(self)` of `FormatGate` with one match arm per gate.
    let per_gate = |out: &mut String, head: &str, value: &dyn Fn(usize, &GateDef) -> String| {
        writeln!(out, "{head} {{\n        match self {{").unwrap();
        for (gi, g) in GATES.iter().enumerate() {
            writeln!(
                out,
                "            FormatGate::{} => {},",
                g.variant,
                value(gi, g)
            )
            .unwrap();
        }
        writeln!(out, "        }}\n    }}").unwrap();
    };
    per_gate(
        out,
        "    /// The gate's name as the shipped validators spell it.\n    pub const fn gate_name(self) -> &'static str",
        &|_, g| format!("{:?}", g.gate),
    );
    per_gate(
        out,
        "    /// The spec formats the gate checks (the format rows that name it), in spec order.\n    pub const fn formats(self) -> &'static [&'static str]",
        &|gi, _| format!("&{:?}", formats_of(gi)),
    );
    writeln!(out, "    /// The spec row of the gate.\n    pub fn def(self) -> &'static crate::spec::GateDef {{ &crate::spec::GATES[self as usize] }}").unwrap();
    writeln!(out, "    /// The gate that checks `opcode` on `gen`, from the opcode's format column: `None` when the\n    /// opcode is absent or dormant there, its format has no layout there or names no gate.\n    #[inline]\n    pub const fn of(gen: Gen, opcode: u8) -> Option<FormatGate> {{\n        let i = GATE_OF[gen.index()][opcode as usize] as usize;\n        if i < Self::ALL.len() {{ Some(Self::ALL[i]) }} else {{ None }}\n    }}\n}}").unwrap();
    writeln!(out, "/// Gate index (into `FormatGate::ALL`) per generation and opcode byte; 0xFF = none.\nconst GATE_OF: [[u8; 256]; 4] = [").unwrap();
    for t in &table {
        let v: Vec<String> = t.iter().map(|x| x.to_string()).collect();
        writeln!(out, "    [{}],", v.join(", ")).unwrap();
    }
    writeln!(out, "];\n").unwrap();
}

/// Wire engines (bit = wire id: PE 0, ACT 1, POOL 2, DVE 3, SP 4) of an engine-class set, as
/// `OpcodeRow::runs_on` maps them: NX is every engine, DMA is SP.
fn engine_bits(c: EngineClass) -> u8 {
    if c.contains(EngineClass::NX) {
        return 0x1F;
    }
    [
        EngineClass::PE,
        EngineClass::ACT,
        EngineClass::POOL,
        EngineClass::DVE,
        EngineClass::DMA,
    ]
    .iter()
    .enumerate()
    .filter(|(_, k)| c.contains(**k))
    .fold(0, |a, (i, _)| a | 1 << i)
}

/// The simulator's engine table: per opcode byte the engines of its engine column plus its
/// `RUNS_ON` rows, and the `RUNS_ON` pairs themselves.
pub(crate) fn gen_runs_on(out: &mut String) {
    const ENGINES: [&str; 5] = ["Pe", "Act", "Pool", "Dve", "Sp"];
    let mut table = [0u8; 256];
    for r in OPCODES {
        table[r.code as usize] = engine_bits(r.engines);
    }
    let mut pairs = Vec::new();
    let mut last = -1i32;
    for x in RUNS_ON {
        if x.prov.is_empty() {
            fail(format!("runs-on row 0x{:02X} has no provenance", x.code));
        }
        if (x.code as i32) <= last {
            fail(format!("runs-on rows not ascending at 0x{:02X}", x.code));
        }
        last = x.code as i32;
        let Some(r) = OPCODES.iter().find(|r| r.code == x.code) else {
            fail(format!("runs-on row 0x{:02X} has no opcode row", x.code));
        };
        let bits = engine_bits(x.engines);
        if bits == 0 || bits & engine_bits(r.engines) != 0 {
            fail(format!(
                "runs-on row 0x{:02X} adds no engine beyond the engine column",
                x.code
            ));
        }
        table[x.code as usize] |= bits;
        for (i, e) in ENGINES.iter().enumerate() {
            if bits & 1 << i != 0 {
                pairs.push(format!("({:#04x}, crate::Engine::{e})", x.code));
            }
        }
    }
    writeln!(out, "/// Engines (bit = wire id) the simulator runs each opcode byte on: the engine column of its\n/// row (`OpcodeRow::runs_on`) plus its `spec::RUNS_ON` rows.\npub static RUNS_ON_ENGINES: [u8; 256] = [{}];\n", table.iter().map(|b| format!("{b:#04x}")).collect::<Vec<_>>().join(", ")).unwrap();
    writeln!(out, "/// Every `(opcode, engine)` pair `spec::RUNS_ON` adds to the engine column.\npub const RUNS_ON_EXTRA: [(u8, crate::Engine); {}] = [{}];\n", pairs.len(), pairs.join(", ")).unwrap();
}

/// `NumFormat` (one variant per `NUM_FORMATS` row, the row index as discriminant), its subsets
/// and the tag readings per generation, after checking the rows against the DTYPE enumeration.
pub(crate) fn gen_num_formats() -> String {
    let rows = NUM_FORMATS;
    let dtype = &ENUMS[enum_index("DTYPE")];
    let idx = |v: &str| {
        rows.iter()
            .position(|r| r.variant == v)
            .unwrap_or_else(|| fail(format!("unknown number format {v}")))
    };
    let mut plain = [[0u8; 256]; 4];
    let mut mx = [[0u8; 256]; 4];
    for (i, r) in rows.iter().enumerate() {
        if r.prov.is_empty() {
            fail(format!("number format {} has no provenance", r.name));
        }
        if rows[..i]
            .iter()
            .any(|o| o.name == r.name || o.variant == r.variant)
        {
            fail(format!("number format {} listed twice", r.name));
        }
        if r.bir != NUM_NONE && r.bir as usize != i {
            fail(format!("BIR format {} is not at row {}", r.name, r.bir));
        }
        if r.bir == NUM_NONE && rows[i..].iter().any(|o| o.bir != NUM_NONE) {
            fail(format!("BIR formats must come first ({})", r.name));
        }
        if !r.element.is_empty() && rows[idx(r.element)].lanes != 1 {
            fail(format!("element of {} is packed", r.name));
        }
        check_presence(r.plain, r.name);
        check_presence(r.mx, r.name);
        for gi in 0..4 {
            let t = r.wire[gi];
            if t == NUM_NONE {
                if presence_at(r.plain, gi).is_present() || presence_at(r.mx, gi).is_present() {
                    fail(format!(
                        "{} is read from no tag in {}",
                        r.name, GEN_NAMES[gi]
                    ));
                }
                continue;
            }
            if !dtype
                .value(t)
                .is_some_and(|v| presence_at(v.gens, gi).is_present())
            {
                fail(format!(
                    "{}: tag {t:#04x} is not a DTYPE member in {}",
                    r.name, GEN_NAMES[gi]
                ));
            }
            for (p, table) in [(r.plain, &mut plain), (r.mx, &mut mx)] {
                if presence_at(p, gi).is_present() {
                    if table[gi][t as usize] != 0 {
                        fail(format!("tag {t:#04x} read twice in {}", GEN_NAMES[gi]));
                    }
                    table[gi][t as usize] = i as u8 + 1;
                }
            }
        }
    }
    let list = |f: &dyn Fn(&NumFormatRow) -> bool| -> (usize, String) {
        let v: Vec<String> = rows
            .iter()
            .filter(|r| f(r))
            .map(|r| format!("NumFormat::{}", r.variant))
            .collect();
        (v.len(), v.join(", "))
    };
    let mut out = String::new();
    out.push_str("// @generated by isa/build.rs from isa/spec/dtypes.rs. Do not edit.\n\n");
    writeln!(out, "/// A number format: every element type BIR, the NEFF schema and the simulator name (one\n/// `spec::NUM_FORMATS` row each). The discriminant is the row index, which for the BIR formats\n/// is their BIR dtype ordinal.\n#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]\n#[repr(u8)]\npub enum NumFormat {{").unwrap();
    for (i, r) in rows.iter().enumerate() {
        let bir = if r.bir == NUM_NONE {
            "no BIR ordinal".to_string()
        } else {
            format!("BIR {}", r.bir)
        };
        let note = if r.note.is_empty() {
            String::new()
        } else {
            format!(": {}", r.note)
        };
        writeln!(
            out,
            "    /// `{}` ({bir}){note}.\n    {} = {i},",
            r.name, r.variant
        )
        .unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    let every = list(&|_| true);
    let bir = list(&|r| r.bir != NUM_NONE);
    let device = list(&|r| r.device);
    let neff = list(&|r| r.neff);
    writeln!(out, "impl NumFormat {{").unwrap();
    writeln!(out, "    /// Every format, in row (discriminant) order.\n    pub const EVERY: [NumFormat; {}] = [{}];", every.0, every.1).unwrap();
    writeln!(out, "    /// The BIR formats, in BIR ordinal order.\n    pub const ALL: [NumFormat; {}] = [{}];", bir.0, bir.1).unwrap();
    writeln!(out, "    /// The device formats (the simulator's value models): the BIR formats, then the unpacked\n    /// ones.\n    pub const DEVICE: [NumFormat; {}] = [{}];", device.0, device.1).unwrap();
    writeln!(out, "    /// The formats the NEFF schema (`def.json`, `.npy`) spells.\n    pub const NEFF: [NumFormat; {}] = [{}];", neff.0, neff.1).unwrap();
    writeln!(out, "}}\n").unwrap();
    let elems: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "NumFormat::{}",
                if r.element.is_empty() {
                    r.variant
                } else {
                    r.element
                }
            )
        })
        .collect();
    writeln!(
        out,
        "/// The format of one lane, per format.\nconst ELEMENT: [NumFormat; {}] = [{}];\n",
        elems.len(),
        elems.join(", ")
    )
    .unwrap();
    for (name, doc, t) in [
        ("PLAIN", "a plain operand's", &plain),
        ("MX_DATA", "an MX operand's data", &mx),
    ] {
        writeln!(out, "/// The format {doc} wire tag reads as, per generation v2..v5 and tag: row index + 1,\n/// 0 for none.\nconst {name}: [[u8; 256]; 4] = [").unwrap();
        for g in t.iter() {
            writeln!(
                out,
                "    [{}],",
                g.iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .unwrap();
        }
        writeln!(out, "];\n").unwrap();
    }
    out
}
