//! Generator of `docs/isa.md` from the spec. A test keeps the committed file equal to the
//! output; `TPBSIM_BLESS=1 cargo test -p tpbsim-isa --test docs` rewrites it.

use crate::formats::LAYOUT_META;
use crate::spec::{self, presence_at, FieldType, NA};
use crate::Gen;
use std::fmt::Write as _;

#[path = "docs_asm.rs"]
mod asm;
pub use asm::asm_markdown;

fn esc(s: &str) -> String {
    s.replace('|', "\\|")
}

fn ty_label(t: &FieldType) -> String {
    match *t {
        FieldType::Enum(e) => format!("enum {e}"),
        FieldType::Bits(b) => format!("bits {b}"),
        FieldType::Tensor(n) => format!("TENSOR{n}D"),
        FieldType::MemPattern(n) => format!("MEM_PATTERN{n}D"),
        FieldType::MxMemPattern1d => "MXMEM_PATTERN1D".into(),
        FieldType::MxIndirect16b => "MXINDIRECT16B".into(),
        FieldType::Addr4 => "ADDR4".into(),
        FieldType::Addr8 => "ADDR8".into(),
        FieldType::EventsExt => "EVENTS_EXTENDED".into(),
        FieldType::DtypePair => "dtype pair".into(),
        FieldType::I32Array(n) => format!("i32[{n}]"),
        FieldType::U16Array(n) => format!("u16[{n}]"),
        FieldType::Str(n) => format!("char[{n}]"),
        FieldType::Opaque(n) => format!("opaque[{n}]"),
        other => format!("{other:?}").to_lowercase(),
    }
}

const INTRO: &str = r#"# The NeuronCore engine ISA in tpbsim

This file is generated from the encoding spec (`isa/spec/*.rs`) by `tpbsim_isa::docs`; a test
fails when it differs from the generator output, and `TPBSIM_BLESS=1 cargo test -p tpbsim-isa
--test docs` rewrites it. Do not edit it by hand.

## The spec and what is derived from it

The spec is Rust-syntax constant data: the row types live in `isa/spec/model.rs`, the tables in
`isa/spec/opcodes.rs`, `enums.rs`, `formats.rs` (with the L2 gates), `conflicts.rs`, `geometry.rs`
and `dtypes.rs`. The same files
are `include!`d twice:

* by `isa/build.rs`, which checks them (unique ascending opcode rows, well-formed presence
  strings, known enum/bitfield/format names, fields inside bytes 12..64 without overlaps, a
  provenance on every row) and generates into `OUT_DIR` the enum newtypes, the bitfields, the
  `Opcode` constants, one struct per (format, layout), the per-format enums, `Inst`, the decode
  dispatch table and encode, and the tables the other layers read instead of restating the
  spec: field locators (`formats::loc::<format>::<FIELD>`, a `FieldLoc` with the byte offset
  and type per generation, `<FIELD>_<BIT>` `BitLoc`s for bitfield sub-fields), enumeration
  members and predicate sets per generation as 256-bit `ByteSet`s (`formats::members::ALU_OP`,
  `formats::sets::ARITH`), the opcode → L2 format gate binding (`FormatGate::of`), the simulator's engine table
  (`RUNS_ON_ENGINES`: the engine column plus the "runs on" rows) and the one number-format type
  `NumFormat` (BIR, the NEFF schema and the simulator name an element type with it; its
  names, BIR ordinals, sizes, classes and wire-tag readings per generation come from the
  `NUM_FORMATS` rows below);
* by the library as `tpbsim_isa::spec`, the runtime metadata that the validator, the text and
  JSON forms and this document read (`spec::opcodes()` gives the engine classes and
  per-generation presence the L2 engine gate is built from).

A fact lives in exactly one row. A format is a list of field rows; each row gives the field's
offset in v2, v3, v4 and v5 (`-` = absent in that generation). Generations whose field lists are
identical (same names, offsets and types) share one generated struct; a format with several
layouts becomes an enum whose variants are named by the first generation of each layout
(`Matmul::V2`, `Matmul::V3`, ...), with accessors for the fields the layouts share. Bytes 12..64
that no field covers in a generation are reserved: decode keeps them in the struct's `reserved`
array so every bundle round-trips, and `Inst::nonzero_reserved` reports the non-zero ones.
Bytes whose layout is not published but which carry data are typed `opaque[N]`: kept and shown,
never reported as reserved.

Presence strings have one character per generation v2, v3, v4, v5: `Y` maintained, `n` dormant,
`.` present but unflagged, `-` absent. Decode rejects an opcode absent in the generation
(`DecodeError::UnknownOpcode`), returns the typed format of that generation's layout when the
opcode binds a format that applies there, and the raw form (`Inst::Raw`, header and events
views plus the body bytes) otherwise. Enumerations are newtypes over the wire byte: an unknown
value decodes and keeps its number (`name()` returns `None`).

Provenance: `C <path>` = `neuronx-cc/wiki/src/<path>`, `G <path>` = `neuronx-gpsimd/wiki/src/<path>`,
`R <path>` = `neuronx-runtime/wiki/src/<path>` of the public wiki `GrigoryEvko/crucible-notes`;
`project-defined` marks a fact without a public source (listed at the end). An empty provenance
on an enum value or a set member means "the parent row's source".

### Sub-byte fields: bitfield-struct

Sub-byte fields (`MATMUL_FLAGS`, `LD_WEIGHT_FLAGS`, `PSUM_ACCUMULATE_FLAGS`, `BOUND_CHECK_REG`,
`TS_REVERSE`) are generated with **bitfield-struct** (0.13, a workspace dependency), not
modular-bitfield. Its types are transparent newtypes over the `u8`: `from_bits` keeps every bit,
including bits no sub-field covers, so non-canonical bytes round-trip and the reserved bits stay
visible (`RESERVED_MASK`); fields are least-significant-bit first like the C headers; accessors
are `const fn`; and the declaration is plain field syntax that `build.rs` can emit from the
spec rows. modular-bitfield would add a second bitfield dialect whose byte-array
representation and specifier types buy nothing for one-byte fields.
"#;

const DESCRIPTORS: &str = r#"## Addresses and descriptors

| Form | Size | Layout | Source |
|---|---|---|---|
| ADDR4 | 4 | bits 0..28 address (partition-folded), byte 3 marker bits (`ADDR4_MARKER`); register form `0x80000000 \| regid`, regid < 0x40; predicates `(b3 & 0xA0) == 0x80` register, `(b3 & 0x60) == 0x20` indirect; PSUM iff `(addr - 0x2000000) <= 0x3FFFFF` | C isa/addr4.md |
| TENSORnD | 4 + 4N | ADDR4 +0, i16 step[N] +4, u16 num[N] +4+2N | C isa/tensor-descriptors.md |
| MEM_PATTERNnD | 4 + 4N | same bytes as TENSORnD; union with INDIRECTxB (and MXTENSOR_V2 on v5) selected by the ADDR4 marker | G generations/arch-isa-header-diff.md |
| MXMEM_PATTERN1D | 16 | data ADDR4 +0, scale ADDR4 +4, K u16 +8, step sign +0xA, scale partition +0xB, reserved +0xC..+0x10 | C isa/mxmem-pattern1d.md |
| MXINDIRECT16B | 16 | indices ADDR4 +0, data ADDR4 +4, scale ADDR4 +8, K u16 +0xC, byte +0xE (unpublished), scale partition +0xF | C isa/mxmem-pattern1d.md |
| ADDR8 | 8 | bytes 0..7 address (register forms: reg_lo +0, reg_hi +1); byte 7 marker, two readings: header `ADDR8_MARKER` (`b7 & 0xE0`, +0x08 table offset register, +0x04 wide) and compiler `ADDR8_PSEUDO_MARKER` (`b7 & 0x38`, var-id test `(b7 & 0xFC) == 0x10`, +0x04 pair, +0x40 move) | G dma/descriptor-ring-field-tables.md, C isa/dma-encoding.md |
| EVENTS_EXTENDED | 12 | wait_mode, wait_idx, update_mode, update_idx, u32 sem_wait_value +4, u32 sem_update_value +8 | C isa/sp-sync-encoding.md |

The `desc` module gives typed views of each (`Addr4::kind`, `Addr4::split`, `MemPattern::is_indirect`,
`Addr8::header_marker` / `pseudo_marker`, ...); the `geometry` module gives the per-generation
constants below.
"#;

const NUM_FORMATS_INTRO: &str = r#"
## Number formats

One row per element type BIR, the NEFF schema and the simulator name (`isa/spec/dtypes.rs`,
generated `NumFormat`; the discriminant is the row index, the BIR ordinal for BIR formats).
Tags: the wire DTYPE tag per generation v2 / v3 / v4 / v5. Plain: generations where a plain
operand's tag reads as this format (the lifter's canonical dtype, the simulator's value model of
a tag); MX: generations where a microscaled operand's data tag reads as it. Bits: one element's
code; lanes: elements per container. Device: the simulator has a value model; NEFF: `def.json`
and `.npy` spell it; numpy: numpy has a native dtype (otherwise `.npy` stores it as void).

| Name | BIR | Compiler | Short | Tags | Plain | MX | Bits | Lanes | Class | Max finite | Device | NEFF | numpy | Source | Note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
"#;

const TEXT: &str = r#"## Text and JSON forms

`sim disasm FILE --arch vN [--engine E]` writes one line per bundle: index, byte offset, mnemonic
and `name=value` for every field whose bytes are not zero (`inst_word_len` only when it is not
0x10). Access patterns read `[ADDR4 step=a,b,c num=x,y,z]`, bitfields `{sub=value ...}`, dtype
pairs `LO|HI`, strings are quoted with `\xNN` escapes, unpublished bytes are hex, floats are
decimal when that round-trips (else `0x` bits). Non-zero reserved bytes appear as
`reserved@OFFSET=HEX`. A bundle that does not decode on the generation is written
`.bundle <128 hex digits>` with the reason as a comment. `sim asm FILE.s -o OUT.bin --arch vN`
parses the same syntax (`;` comments, the index/offset prefix is optional) and the toolchain's
neuron dialect, which `sim disasm --syntax neuron` writes; parse errors name the line and column
with a caret. `asm(disasm(s)) == s` for every stream in either syntax. The language, its lint
and a tutorial are in `docs/asm.md`.

`sim decode FILE --arch vN --json` writes JSON Lines: `{"index","offset","opcode","mnemonic",
"format","fields":{...},"reserved_nonzero":[{"offset","len","hex"}]}`. Numbers are JSON numbers;
an enum field is its number plus a `<name>_name` sibling (null when unnamed); floats are numbers
(null when not finite) with a `<name>_bits` sibling; ADDR4 values are objects with `raw`,
`address`, `marker`/`marker_name` and either `register` or `region`/`partition`/`offset`;
access patterns are `{"addr","step","num"}`; bitfields `{"raw", <sub>...}`; dtype pairs
`{"raw","lo","lo_name","hi","hi_name"}`. An undecodable bundle gives `{"index","offset","opcode",
"mnemonic","error","hex"}`.
"#;

/// The full text of `docs/isa.md`.
pub fn isa_markdown() -> String {
    let mut o = String::from(INTRO);
    let gens = ["v2", "v3", "v4", "v5"];

    // Geometry.
    o.push_str(
        "\n## Generations and geometry\n\n| Generation | Codename | ArchLevel |\n|---|---|---|\n",
    );
    for g in Gen::ALL {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            g.short(),
            g.codename(),
            g.arch_level()
        );
    }
    o.push_str("\n| Constant | v2 | v3 | v4 | v5 | Unit | Source | Note |\n|---|---|---|---|---|---|---|---|\n");
    for r in spec::geometry_rows() {
        let v: Vec<String> =
            r.v.iter()
                .map(|x| {
                    if *x >= 0x10000 {
                        format!("{x:#x}")
                    } else {
                        x.to_string()
                    }
                })
                .collect();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            v[0],
            v[1],
            v[2],
            v[3],
            r.unit,
            r.prov,
            esc(r.note)
        );
    }

    // Header and events.
    o.push_str("\n## Header and events (bytes 0..12, every format)\n\n| Offset | Field | Type | Source | Note |\n|---|---|---|---|---|\n");
    for r in spec::HEADER_FIELDS.iter().chain(spec::EVENTS_FIELDS.iter()) {
        let _ = writeln!(
            o,
            "| +{} | `{}` | {} | {} | {} |",
            r.at[0],
            r.name,
            ty_label(&r.ty),
            r.prov,
            esc(r.note)
        );
    }
    o.push('\n');
    o.push_str(DESCRIPTORS);

    // Opcodes.
    o.push_str("\n## Opcodes\n\nEngine classes: PE, ACT, POOL, DVE; NX = the sequencer of every engine (legal on all engines); DMA = the DMA queues.\n\n");
    o.push_str("| Op | Mnemonic | Kind | Engines | Header struct | Format | v2 | v3 | v4 | v5 | Source | Note |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in spec::opcodes() {
        let p: Vec<char> = (0..4).map(|i| r.presence_in(i).symbol()).collect();
        let _ = writeln!(
            o,
            "| {:#04x} | `{}` | {:?} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.code,
            r.mnemonic(),
            r.kind,
            r.engines.label(),
            if r.header_struct.is_empty() {
                "-"
            } else {
                r.header_struct
            },
            if r.format.is_empty() { "raw" } else { r.format },
            p[0],
            p[1],
            p[2],
            p[3],
            r.prov,
            esc(r.note)
        );
    }

    // Per-generation engine legality rows.
    o.push_str("\n### Engine legality by generation\n\nAn opcode is legal on the engines of its engine column and, on the generations a row marks, on the engines these rows add (`spec::ENGINE_LEGAL`, `OpcodeRow::legal_on`). The L2 engine gate, the disassembler's engine annotation and the L1 engine sets read the column plus these rows; the column itself stays the published catalog's.\n\n| Op | Mnemonic | Engine column | Also legal on | v2 | v3 | v4 | v5 | Source | Note |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for x in spec::engine_legal_rows() {
        let r = spec::opcode(x.code);
        let g: Vec<char> = x.gens.chars().collect();
        let _ = writeln!(
            o,
            "| {:#04x} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            x.code,
            r.map_or("?", |r| r.mnemonic()),
            r.map_or("-".to_string(), |r| r.engines.label()),
            x.engines.label(),
            g.first().copied().unwrap_or('-'),
            g.get(1).copied().unwrap_or('-'),
            g.get(2).copied().unwrap_or('-'),
            g.get(3).copied().unwrap_or('-'),
            esc(x.prov),
            esc(x.note)
        );
    }

    // Runs-on rows.
    o.push_str("\n### Runs on (simulator)\n\nThe simulator executes an opcode on the engines of its engine column (NX: every engine, DMA: SP) and on the engines these rows add (`spec::RUNS_ON`, generated `RUNS_ON_ENGINES`). The engine column is unchanged by them, and so is the L2 engine gate, which reads the column plus the engine legality rows above.\n\n| Op | Mnemonic | Engine column | Also runs on | Source | Note |\n|---|---|---|---|---|---|\n");
    for x in spec::runs_on_rows() {
        let r = spec::opcode(x.code);
        let _ = writeln!(
            o,
            "| {:#04x} | `{}` | {} | {} | {} | {} |",
            x.code,
            r.map_or("?", |r| r.mnemonic()),
            r.map_or("-".to_string(), |r| r.engines.label()),
            x.engines.label(),
            esc(x.prov),
            esc(x.note)
        );
    }

    // Formats.
    o.push_str("\n## Formats\n\nOffsets are bytes from the bundle start; `-` = absent in that generation. Every format starts with the header and events above.\n");
    for f in spec::formats() {
        let _ = write!(
            o,
            "\n### {}\n\nHeader struct: {}. Generations: {}. Source: {}.",
            f.name,
            if f.header_struct.is_empty() {
                "none (compiler view)"
            } else {
                f.header_struct
            },
            f.gens,
            f.prov
        );
        if let Some(s) = f.sub {
            let _ = write!(
                o,
                " Selected for opcode {:#04x} when byte +{} is {}.",
                s.opcode, s.offset, s.value
            );
        }
        let ops: Vec<String> = spec::opcodes()
            .iter()
            .filter(|r| r.format == f.name)
            .map(|r| format!("{:#04x} {}", r.code, r.mnemonic()))
            .collect();
        if !ops.is_empty() {
            let _ = write!(o, " Opcodes: {}.", ops.join(", "));
        }
        if !f.note.is_empty() {
            let _ = write!(o, " {}.", f.note.trim_end_matches('.'));
        }
        o.push_str("\n\n| Field | Type | Width | v2 | v3 | v4 | v5 | Source | Note |\n|---|---|---|---|---|---|---|---|---|\n");
        for r in f.fields {
            let at: Vec<String> =
                r.at.iter()
                    .map(|&a| if a == NA { "-".into() } else { format!("+{a}") })
                    .collect();
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.name,
                ty_label(&r.ty),
                r.ty.width(),
                at[0],
                at[1],
                at[2],
                at[3],
                r.prov,
                esc(r.note)
            );
        }
        o.push_str("\nLayouts (reserved byte ranges `[start, end)`):\n\n");
        for l in LAYOUT_META
            .iter()
            .filter(|l| l.format.is_some_and(|lf| lf.name == f.name))
        {
            let g: Vec<&str> = (0..4).filter(|&i| l.gens[i]).map(|i| gens[i]).collect();
            let res: Vec<String> = l
                .reserved
                .iter()
                .map(|(s, e)| format!("{s}..{e}"))
                .collect();
            let _ = writeln!(
                o,
                "- `{}` ({}): reserved {}",
                l.rust_name,
                g.join(", "),
                if res.is_empty() {
                    "none".into()
                } else {
                    res.join(", ")
                }
            );
        }
    }

    // Enums.
    o.push_str("\n## Enumerations\n");
    for e in spec::enums() {
        let _ = writeln!(o, "\n### {} (`{}`)\n\nSource: {}. {}\n\n| Value | Name | v2 | v3 | v4 | v5 | Bits | Source | Note |\n|---|---|---|---|---|---|---|---|---|", e.name, e.rust, e.prov, esc(e.note));
        for v in e.values {
            let p: Vec<char> = (0..4).map(|i| presence_at(v.gens, i).symbol()).collect();
            let bits = if v.bits == 0 {
                "-".to_string()
            } else {
                v.bits.to_string()
            };
            let _ = writeln!(
                o,
                "| {:#04x} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
                v.value,
                v.name,
                p[0],
                p[1],
                p[2],
                p[3],
                bits,
                e.prov_of(v),
                esc(v.note)
            );
        }
    }

    // Number formats.
    o.push_str(NUM_FORMATS_INTRO);
    for r in spec::num_format_rows() {
        let tags: Vec<String> = r
            .wire
            .iter()
            .map(|&t| {
                if t == spec::NUM_NONE {
                    "-".to_string()
                } else {
                    format!("{t:#04X}")
                }
            })
            .collect();
        let opt = |s: &str| {
            if s.is_empty() {
                "-".to_string()
            } else {
                format!("`{s}`")
            }
        };
        let yes = |b: bool| if b { "yes" } else { "-" };
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {:?}{} | {} | {} | {} | {} | {} | {} |",
            r.name,
            if r.bir == spec::NUM_NONE {
                "-".to_string()
            } else {
                r.bir.to_string()
            },
            opt(r.compiler),
            opt(r.short),
            tags.join(" / "),
            r.plain,
            r.mx,
            r.bits,
            r.lanes,
            r.class,
            if r.signed { ", signed" } else { "" },
            if r.max_finite == 0 {
                "-".to_string()
            } else {
                let m = f32::from_bits(r.max_finite);
                if m < 1e6 {
                    format!("{m}")
                } else {
                    format!("{m:e}")
                }
            },
            yes(r.device),
            yes(r.neff),
            yes(r.numpy_native),
            esc(r.prov),
            esc(r.note)
        );
    }

    // Sets.
    o.push_str("\n## Predicate sets\n\n| Set | Over | v2 | v3 | v4 | v5 | Members | Source | Note |\n|---|---|---|---|---|---|---|---|---|\n");
    for s in spec::sets() {
        let counts: Vec<usize> = Gen::ALL.iter().map(|g| s.members_in(*g).count()).collect();
        let members: Vec<String> = s
            .members
            .iter()
            .map(|m| {
                let name = spec::enum_def(s.of)
                    .and_then(|e| e.value(m.value))
                    .map(|v| v.name.to_string())
                    .unwrap_or_else(|| format!("{:#04x}", m.value));
                if m.gens == "YYYY" {
                    name
                } else {
                    format!("{name} ({})", m.gens)
                }
            })
            .collect();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            s.of,
            counts[0],
            counts[1],
            counts[2],
            counts[3],
            members.join(", "),
            s.prov,
            esc(s.note)
        );
    }

    // Format gates.
    o.push_str("\n## L2 format gates\n\nAn opcode is checked by the gate that lists its format, in a generation where the opcode is present and not dormant and its format has a layout (`FormatGate::of`). Generation v5 has no L2 validator.\n\n| Gate | Formats | Opcodes | Source |\n|---|---|---|---|\n");
    for g in crate::FormatGate::ALL {
        let d = g.def();
        let ops: Vec<String> = spec::opcodes()
            .iter()
            .filter(|r| {
                crate::Gen::ALL
                    .iter()
                    .any(|&gen| crate::FormatGate::of(gen, r.code) == Some(g))
            })
            .map(|r| format!("{:#04x}", r.code))
            .collect();
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} |",
            d.gate,
            g.formats().join(", "),
            ops.join(" "),
            d.prov
        );
    }

    // Bitfields.
    o.push_str("\n## Bitfields (one byte, least significant bit first)\n\n| Bitfield | Sub-fields | Source | Note |\n|---|---|---|---|\n");
    for b in spec::bitfields() {
        let subs: Vec<String> = b
            .bits
            .iter()
            .map(|d| {
                let range = if d.width == 1 {
                    format!("bit {}", d.lsb)
                } else {
                    format!("bits {}..{}", d.lsb, d.lsb + d.width - 1)
                };
                if d.note.is_empty() {
                    format!("`{}` {range}", d.name)
                } else {
                    format!("`{}` {range} ({})", d.name, d.note)
                }
            })
            .collect();
        let _ = writeln!(
            o,
            "| `{}` (`{}`) | {} | {} | {} |",
            b.name,
            b.rust,
            esc(&subs.join("; ")),
            b.prov,
            esc(b.note)
        );
    }

    // Conflicts.
    o.push_str("\n## Conflicts between sources and the choice made\n\n`D<n>` = row n of the digest's discrepancy table; `P<n>` = found while writing the spec. The choice names the spec row that carries it.\n\n| Id | Topic | Reading A | Reading B | Choice |\n|---|---|---|---|---|\n");
    for c in spec::conflicts() {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            c.id,
            esc(c.topic),
            esc(c.claim_a),
            esc(c.claim_b),
            esc(c.choice)
        );
    }

    // Project-defined facts.
    o.push_str("\n## Project-defined facts\n\nFacts without a public source, each defined in one spec row:\n\n");
    o.push_str("- Opcode rows of the pseudo band (0xC1..0xDF): engine class NX (any engine's stream may carry them until the runtime rewrites them).\n");
    for f in spec::formats() {
        if f.note.contains("project-defined") {
            let _ = writeln!(
                o,
                "- Format `{}`: {}.",
                f.name,
                esc(f.note.trim_end_matches('.'))
            );
        }
        for r in f.fields {
            if r.prov == "project-defined" || r.note.contains("project-defined") {
                let _ = writeln!(
                    o,
                    "- `{}.{}`: {}.",
                    f.name,
                    r.name,
                    if r.note.is_empty() {
                        "placement"
                    } else {
                        r.note
                    }
                );
            }
        }
    }
    for e in spec::enums() {
        for v in e.values {
            if v.prov == "project-defined" {
                let _ = writeln!(
                    o,
                    "- `{}::{}` = {:#04x}: {}.",
                    e.name,
                    v.name,
                    v.value,
                    if v.note.is_empty() {
                        "numbering"
                    } else {
                        v.note
                    }
                );
            }
        }
        if e.note.contains("project-defined") {
            let _ = writeln!(o, "- Enumeration `{}`: {}.", e.name, esc(e.note));
        }
    }
    for b in spec::bitfields() {
        if b.note.contains("project-defined") {
            let _ = writeln!(o, "- Bitfield `{}`: {}.", b.name, esc(b.note));
        }
    }
    o.push_str("- `OpcodeRow::runs_on`: NX matches every engine, DMA matches SP.\n");
    for x in spec::runs_on_rows() {
        if x.prov.starts_with("project-defined") {
            let _ = writeln!(
                o,
                "- Runs on {:#04x}: {} also executes it ({}).",
                x.code,
                x.engines.label(),
                esc(x.prov.trim_start_matches("project-defined: "))
            );
        }
    }
    for r in spec::num_format_rows() {
        if r.prov.starts_with("project-defined") {
            let _ = writeln!(
                o,
                "- Number format `{}`: {}.",
                r.name,
                esc(r.prov.trim_start_matches("project-defined: "))
            );
        }
        if !r.short.is_empty() {
            let _ = writeln!(
                o,
                "- Number format `{}`: BIR JSON import also accepts `{}`.",
                r.name, r.short
            );
        }
    }
    o.push('\n');
    o.push_str(TEXT);
    o
}
