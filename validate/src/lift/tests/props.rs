//! Property tests: random instructions of every class and every single-bundle binding lower
//! and lift back unchanged, random bundles lift and lower back byte for byte; the class
//! generator reaches every fan-in variant.

use super::*;

fn cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// A small deterministic generator (proptest supplies the seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn dtypes(gen: Gen, ctx: DtypeCtx, nibble: bool) -> Vec<NumFormat> {
    NumFormat::ALL
        .into_iter()
        .filter(|&d| {
            is_canonical(d, gen, ctx) && (!nibble || crate::lift::dtype::wire_tag(d, gen) <= 0x0F)
        })
        .collect()
}

/// A canonical pattern: at most `dims` free dimensions, the outermost not a filler (1, 1).
fn gen_ap(
    r: &mut Rng,
    mem: MemoryType,
    dts: &[NumFormat],
    parts: u64,
    dims: usize,
    gen: Gen,
) -> AccessPattern {
    let mem = if mem == ONCHIP { onchip(r) } else { mem };
    let dtype = r.pick(dts);
    let parts = if parts == 0 {
        r.range(1, 128) as u64
    } else {
        parts
    };
    let n = r.below(dims as u64 + 1) as usize;
    let mut pattern: Vec<Dim> = (0..n)
        .map(|_| Dim {
            step: r.range(-40, 200),
            num: r.range(1, 300) as u64,
        })
        .collect();
    if let Some(d) = pattern.first_mut() {
        if d.step == 1 && d.num == 1 {
            d.num = 2;
        }
    }
    let size = dtype.container_bytes() as i64;
    let g = tpbsim_isa::geometry::Geometry::of(gen);
    let window = if mem == MemoryType::Psum {
        g.psum_partition_stride
    } else {
        0x10000
    } as i64;
    let mut start = r.below(129 - parts.min(128));
    // v5: SBUF partitions 32..=35 share their addresses with the PSUM window (1 MiB partition
    // stride, PSUM at 0x2000000); such SBUF operands do not encode.
    if gen == Gen::V5 && mem == MemoryType::Sb && (32..=35).contains(&start) {
        start = 36.min(128 - parts.min(92));
    }
    AccessPattern {
        mem,
        buffer: if mem == MemoryType::Psum {
            PSUM_BUFFER.into()
        } else {
            SBUF_BUFFER.into()
        },
        dtype,
        start_partition: start,
        partitions: parts,
        pattern,
        offset: r.range(0, window / size - 1),
        indirect: false,
    }
}

/// `gen_ap` memory argument: SB or (a quarter of the time) PSUM.
const ONCHIP: MemoryType = MemoryType::Unallocated;

/// Change a generated pattern's dtype, keeping its offset inside the window.
fn retype(a: &mut AccessPattern, dtype: NumFormat) {
    a.dtype = dtype;
    a.offset %= 0x8000 / dtype.container_bytes() as i64;
}

fn onchip(r: &mut Rng) -> MemoryType {
    if r.chance(25) {
        MemoryType::Psum
    } else {
        MemoryType::Sb
    }
}

/// Random raw values for the parameter fields of the instruction's parameter bundle, as the
/// attributes lifting would record (only those differing from what lowering derives).
fn gen_params(r: &mut Rng, inst: &mut Instruction, gen: Gen, skip: &[&str]) {
    let Ok(ops) = plan(inst, gen) else { return };
    let Ok(pieces) = bindings(inst.class, &ops, inst.args.len(), gen) else {
        return;
    };
    let k = primary(&pieces);
    let Ok(built) = crate::lift::lower::build(inst, &pieces, gen) else {
        return;
    };
    let (canon, meta) = built[k];
    let mut b = canon;
    for p in pieces[k].form.params {
        if skip.contains(&p.name) || !r.chance(50) {
            continue;
        }
        let Some(m) = meta.field(p.name) else {
            continue;
        };
        let range = m.range();
        for x in &mut b.0[range.clone()] {
            *x = r.next() as u8;
        }
        if let tpbsim_isa::spec::FieldType::Str(_) = m.ty {
            for (j, x) in b.0[range.clone()].iter_mut().enumerate() {
                *x = if j < 6 { b'a' + (*x % 26) } else { 0 };
            }
        }
        if b.0[range.clone()] == canon.0[range.clone()] {
            continue;
        }
        inst.attrs
            .insert(p.name.to_string(), fields::param_value(m, &b));
    }
}

fn gen_events(r: &mut Rng, inst: &mut Instruction, gen: Gen) {
    let Ok(n) = lower_instruction(inst, gen).map(|b| b.len()) else {
        return;
    };
    if !r.chance(40) {
        return;
    }
    let ev: Vec<Value> = (0..n)
        .map(|_| {
            let mut b = Bundle::ZERO;
            if r.chance(60) {
                for x in &mut b.0[4..12] {
                    *x = if r.chance(50) { r.next() as u8 } else { 0 };
                }
            }
            fields::events_value(&b).unwrap_or(Value::Null)
        })
        .collect();
    if ev.iter().any(|e| !e.is_null()) {
        inst.attrs.insert(ATTR_EVENTS.into(), Value::Array(ev));
    }
}

const CLASSES: &[InstClass] = &[
    InstClass::Matmult,
    InstClass::Transpose,
    InstClass::MatmultMx,
    InstClass::Activation,
    InstClass::TensorTensor,
    InstClass::TensorScalar,
    InstClass::TensorReduce,
    InstClass::TensorCopy,
    InstClass::Memset,
    InstClass::Iota,
    InstClass::CopyPredicated,
    InstClass::Select,
    InstClass::QuantizeMx,
    InstClass::TensorDequantize,
    InstClass::EventSemaphore,
    InstClass::Halt,
    InstClass::NoOp,
    InstClass::CompareAndBranch,
    InstClass::UnconditionalBranch,
    InstClass::DmaTrigger,
];

/// A canonical instruction of `class` for `gen`, or `None` when the class has no lowering there.
fn gen_inst(r: &mut Rng, class: InstClass, gen: Gen) -> Option<Instruction> {
    use InstClass as C;
    use MemoryType::*;
    let plain = dtypes(gen, DtypeCtx::Plain, false);
    let nib = dtypes(gen, DtypeCtx::Plain, true);
    let parts = r.range(1, 128) as u64;
    let engine = |r: &mut Rng| r.pick(&[EngineType::Pool, EngineType::Dve]);
    let mut skip: Vec<&str> = Vec::new();
    let mut inst = match class {
        C::Matmult | C::Transpose => {
            if class == C::Transpose && gen == Gen::V2 {
                return None;
            }
            let pe: Vec<NumFormat> = plain
                .iter()
                .copied()
                .filter(|d| !matches!(d, NumFormat::Float32r | NumFormat::Float32) || r.chance(30))
                .collect();
            let mut i = Instruction::new(class, EngineType::Pe);
            let rows = r.range(1, 128) as u64;
            i.args.push(gen_ap(r, Sb, &pe, rows, 3, gen));
            if r.chance(80) {
                i.args.push(gen_ap(r, Sb, &pe, 0, 3, gen));
            }
            // float32r cannot share a two-pass (float32) sequence.
            if i.args.iter().any(|a| a.dtype == NumFormat::Float32) && i.args.len() == 2 {
                for a in &mut i.args {
                    if a.dtype == NumFormat::Float32r {
                        retype(a, NumFormat::Float32);
                    }
                }
                if r.chance(30) {
                    i.attrs.insert(ATTR_FP32_PASSES.into(), 1.into());
                }
            }
            let out_dt = if gen == Gen::V2 {
                NumFormat::Float32
            } else {
                r.pick(&plain)
            };
            let cols = r.range(1, 128) as u64;
            i.outs.push(gen_ap(r, Psum, &[out_dt], cols, 3, gen));
            skip.extend([
                "fp32_mode",
                "transpose_mode",
                "flags",
                "perf_mode",
                "tile_size",
                "tile_sel",
            ]);
            i
        }
        C::MatmultMx => {
            if !matches!(gen, Gen::V4 | Gen::V5) {
                return None;
            }
            let mx = dtypes(gen, DtypeCtx::MxData, false);
            let mut i = Instruction::new(class, EngineType::Pe);
            let (ri, rw) = (r.range(1, 128) as u64, r.range(1, 128) as u64);
            let data = |r: &mut Rng, parts: u64| {
                let mut a = gen_ap(r, Sb, &mx, parts, 1, gen);
                a.pattern = vec![Dim {
                    step: r.pick(&[1, -1]),
                    num: r.range(1, 4000) as u64,
                }];
                a
            };
            let (di, dw) = (data(r, ri), data(r, rw));
            let scale = |r: &mut Rng, d: &AccessPattern| {
                let mut s = gen_ap(
                    r,
                    Sb,
                    &[NumFormat::Float8E8m0fnu],
                    d.partitions.div_ceil(8),
                    1,
                    gen,
                );
                s.pattern = vec![Dim {
                    step: 1,
                    num: d.pattern[0].num,
                }];
                s
            };
            let (si, sw) = (scale(r, &di), scale(r, &dw));
            i.args = vec![di, dw, si, sw];
            i.outs.push(gen_ap(r, Psum, &plain, 0, 3, gen));
            i
        }
        C::QuantizeMx => {
            if !matches!(gen, Gen::V4 | Gen::V5) {
                return None;
            }
            let mut i = Instruction::new(class, EngineType::Dve);
            i.args.push(gen_ap(r, Sb, &plain, parts, 3, gen));
            let mut d = gen_ap(r, Sb, &dtypes(gen, DtypeCtx::MxData, false), parts, 1, gen);
            d.pattern = vec![Dim {
                step: r.pick(&[1, -1]),
                num: r.range(1, 4000) as u64,
            }];
            let mut s = gen_ap(
                r,
                Sb,
                &[NumFormat::Float8E8m0fnu],
                parts.div_ceil(8),
                1,
                gen,
            );
            s.pattern = vec![Dim {
                step: 1,
                num: d.pattern[0].num,
            }];
            i.outs = vec![d, s];
            i
        }
        C::Activation => {
            let mut i = Instruction::new(class, EngineType::Act);
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 3, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            if r.chance(40) {
                i.args.push(gen_ap(r, ONCHIP, &nib, parts, 0, gen));
                skip.push("bias_src_n");
                skip.push("bias");
            }
            if r.chance(40) {
                i.outs.push(gen_ap(r, ONCHIP, &plain, 0, 1, gen));
                skip.push("accumulator_cmd");
                if r.chance(50) {
                    i.attrs.insert(
                        "accumulator_cmd".into(),
                        r.pick(&["ZERO", "ACCUMULATE", "LOAD_ACCUMULATE"]).into(),
                    );
                }
            }
            i
        }
        C::TensorTensor => {
            let mut i = Instruction::new(class, engine(r));
            let wide = gen == Gen::V5 && r.chance(20);
            for _ in 0..2 {
                let dims = if wide { 2 } else { 3 };
                i.args.push(gen_ap(r, ONCHIP, &nib, parts, dims, gen));
            }
            if gen == Gen::V2 && r.chance(30) {
                for a in &mut i.args {
                    retype(a, NumFormat::Bfloat16);
                    a.pattern.push(Dim {
                        step: 1,
                        num: 2 * r.range(1, 50) as u64,
                    });
                    a.pattern.truncate(3);
                    if a.pattern.len() == 3 {
                        a.pattern.remove(0);
                    }
                }
                i.attrs
                    .insert("op".into(), r.pick(&["ADD", "MULT", "SUBTRACT"]).into());
                skip.push("op");
            }
            if wide {
                i.attrs.insert(ATTR_WIDE.into(), true.into());
                i.outs.push(gen_ap(r, Sb, &nib, parts, 2, gen));
                i.outs.push(gen_ap(r, Sb, &nib, parts, 2, gen));
            } else {
                i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            }
            i
        }
        C::TensorScalar => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            if r.chance(30) {
                i.outs.push(gen_ap(r, ONCHIP, &plain, 0, 1, gen));
            } else {
                // One output with an accumulate command lowers to 0x9A, which lifts as
                // TensorScalarCache (a documented collision).
                skip.push("accumulator_cmd");
                if r.chance(25) {
                    // A bit-vector op0 (op1 unset): the 0x53 fan-in.
                    let op = r.pick(&[0x01, 0x02, 0x03, 0x10, 0x11, 0x0A, 0x0B, 0x0C]);
                    i.attrs
                        .insert("op0".into(), fields::enum_value("ALU_OP", op));
                    skip.extend(["op0", "op1"]);
                }
            }
            i
        }
        C::TensorReduce | C::TensorCopy => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            if gen == Gen::V2 && r.chance(30) {
                retype(&mut i.args[0], NumFormat::Bfloat16);
                i.engine = EngineType::Pool;
                if class == C::TensorReduce {
                    i.attrs.insert("op".into(), r.pick(&["ADD", "MAX"]).into());
                    skip.push("op");
                }
            }
            i
        }
        C::Memset | C::Iota => {
            let mut i = Instruction::new(class, engine(r));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            i
        }
        C::CopyPredicated => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 3, gen));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 3, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            i
        }
        C::Select => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 2, gen));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 2, gen));
            i.args.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 2, gen));
            i
        }
        C::TensorDequantize => {
            if gen == Gen::V2 {
                return None;
            }
            let mut i = Instruction::new(class, EngineType::Pool);
            i.args.push(gen_ap(r, Sb, &plain, parts, 3, gen));
            i.outs.push(gen_ap(r, Sb, &plain, parts, 3, gen));
            i
        }
        C::CompareAndBranch => {
            let mut i = Instruction::new(
                class,
                r.pick(&[
                    EngineType::Pe,
                    EngineType::Act,
                    EngineType::Pool,
                    EngineType::Dve,
                    EngineType::Sp,
                ]),
            );
            i.attrs.insert(
                "cmp_op".into(),
                r.pick(&["LT_IMM", "EQ_IMM", "GE_REG", "NE_REG"]).into(),
            );
            skip.push("cmp_op");
            i
        }
        C::UnconditionalBranch => {
            skip.push("cmp_op");
            Instruction::new(class, r.pick(&[EngineType::Pe, EngineType::Sp]))
        }
        C::EventSemaphore | C::Halt | C::NoOp | C::DmaTrigger => Instruction::new(
            class,
            r.pick(&[
                EngineType::Pe,
                EngineType::Act,
                EngineType::Pool,
                EngineType::Dve,
                EngineType::Sp,
            ]),
        ),
        _ => return None,
    };
    gen_params(r, &mut inst, gen, &skip);
    gen_events(r, &mut inst, gen);
    Some(inst)
}

fn strip_origin(mut i: Instruction) -> Instruction {
    i.attrs.remove(ATTR_ORIGIN);
    i
}

/// `bundles` lifted as one stream of `engine` (no file name), and its instructions without
/// their origins.
fn lifted(bundles: &[Bundle], engine: Engine, gen: Gen) -> (LiftedStream, Vec<Instruction>) {
    let input = StreamInput {
        function: "f".into(),
        file: None,
        engine,
        bundles,
    };
    let s = lift_stream(&input, gen);
    let got = s.function.blocks[0]
        .instructions
        .iter()
        .cloned()
        .map(strip_origin)
        .collect();
    (s, got)
}

fn bir_engine_to_wire(e: EngineType) -> Engine {
    e.wire().unwrap_or(Engine::Sp)
}

fn dump(i: &Instruction) -> String {
    let mut m = Map::new();
    m.insert("class".into(), i.class.name().into());
    m.insert("attrs".into(), Value::Object(i.attrs.clone()));
    format!("{m:?}\nargs {:?}\nouts {:?}", i.args, i.outs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// lift(lower(x)) == x for generated instructions of the classes the simulator executes.
    #[test]
    fn lift_inverts_lower(seed in 1u64.., g in 0usize..4, c in 0usize..CLASSES.len()) {
        let gen = Gen::ALL[g];
        let mut r = Rng(seed | 1);
        // A class with no lowering in `gen` (gen_inst gives None) passes the draw on to the
        // next class, so every case checks an instruction.
        let x = (0..CLASSES.len())
            .find_map(|k| gen_inst(&mut r, CLASSES[(c + k) % CLASSES.len()], gen))
            .ok_or_else(|| TestCaseError::fail(format!("no class lowers on {gen}")))?;
        let bundles = match lower_instruction(&x, gen) {
            Ok(b) => b,
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{}", dump(&x)))),
        };
        let (s, got) = lifted(&bundles, bir_engine_to_wire(x.engine), gen);
        prop_assert_eq!(got.len(), 1, "{:?}\n{}", s.diagnostics, dump(&x));
        prop_assert!(got[0] == x, "lifted:\n{}\nexpected:\n{}", dump(&got[0]), dump(&x));
    }

    /// lower(lift(stream)) == stream for arbitrary bundles (known opcodes, random bodies, with
    /// the multi-bundle sequences over-represented).
    #[test]
    fn lower_inverts_lift(seed in 1u64.., g in 0usize..4, e in 0usize..5, n in 1usize..12) {
        let gen = Gen::ALL[g];
        let mut r = Rng(seed | 1);
        let present: Vec<u8> = tpbsim_isa::spec::opcodes().iter().filter(|o| o.is_present(gen)).map(|o| o.code).collect();
        let seqs: &[&[u8]] = &[&[0x01, 0x02], &[0x01, 0x02, 0x01, 0x02], &[0x09, 0x0A], &[0x21, 0x24], &[0x9A, 0x9B], &[0x69, 0x6A], &[0x85, 0x86, 0x86], &[0x46, 0xEA]];
        let mut bundles = Vec::new();
        while bundles.len() < n {
            let ops: Vec<u8> = if r.chance(30) { r.pick(seqs).to_vec() } else { vec![r.pick(&present)] };
            for op in ops {
                let mut b = canonical(op);
                // Mostly-zero bodies with a few random bytes lift more often than noise.
                for _ in 0..r.below(20) {
                    let k = r.range(2, 63) as usize;
                    b.0[k] = r.next() as u8;
                }
                bundles.push(b);
            }
        }
        let engine = Engine::ALL[e];
        let (s, _) = lifted(&bundles, engine, gen);
        prop_assert_eq!(lower_function(&s.function, gen).map_err(|e| TestCaseError::fail(e.to_string()))?, bundles.clone());
        prop_assert_eq!(s.lifted_bundles + s.generic_bundles, bundles.len() as u64);
    }
}

/// docs/lift.md lists every single-bundle binding in its opcode → class table.
#[test]
fn docs_table_covers_every_single_binding() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/lift.md");
    let doc = std::fs::read_to_string(path).expect("docs/lift.md");
    let start = doc.find("| Opcode | Class | Form |").expect("opcode table");
    let table = &doc[start..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    for &(op, class, _) in crate::lift::rules::singles() {
        let hex = format!("0x{op:02X}");
        let row = table.lines().find(|l| l.contains(&hex));
        assert!(
            row.is_some_and(|r| r.contains(class.name())),
            "{hex} → {class} missing from the docs table"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Every single-bundle binding, and the fan-in coverage of the class generator

/// A canonical instruction lowering to exactly `op` through the single-bundle binding
/// `(op, class, form)`: operands per the form's roles (dimensions, dtypes and shared partition
/// counts as the layout allows), random parameters and events, and the `opcode` attribute when
/// the fan-in would choose another opcode of the class. `None` when the binding does not apply
/// in `gen` (opcode absent or untyped, MX or undecoded operands, branch forms chosen by field).
fn binding_inst(
    r: &mut Rng,
    op: u8,
    class: InstClass,
    form: &crate::lift::rules::Form,
    gen: Gen,
) -> Option<Instruction> {
    use crate::lift::rules::Dt;
    if matches!(
        class,
        InstClass::CompareAndBranch | InstClass::UnconditionalBranch | InstClass::Exit
    ) || std::ptr::eq(form, &crate::lift::rules::OPAQUE)
        || form
            .args
            .iter()
            .chain(form.outs)
            .any(|role| role.ctx != DtypeCtx::Plain)
    {
        return None;
    }
    let meta = fields::layout_of(&canonical(op), gen).ok()?;
    meta.format?;
    let engine = r.pick(&[
        EngineType::Pe,
        EngineType::Act,
        EngineType::Pool,
        EngineType::Dve,
        EngineType::Sp,
    ]);
    let mut inst = Instruction::new(class, engine);
    let mut parts: Vec<(FieldLoc, u64)> = Vec::new();
    let (n_args, roles) = (
        form.args.len(),
        form.args.iter().chain(form.outs).collect::<Vec<_>>(),
    );
    for (k, role) in roles.into_iter().enumerate() {
        let m = fields::field(meta, role.field).ok()?;
        let dims = crate::lift::lower::dims_of(m).ok()?;
        let dts = match role.dt {
            Dt::Fixed(d) => vec![d],
            Dt::Lo(_) | Dt::Hi(_) => dtypes(gen, DtypeCtx::Plain, true),
            Dt::Field(_) | Dt::PsumOut(_) => dtypes(gen, DtypeCtx::Plain, false),
        };
        let p = match parts.iter().find(|(f, _)| *f == role.part) {
            Some(&(_, p)) => p,
            None => {
                let p = r.range(1, 128) as u64;
                parts.push((role.part, p));
                p
            }
        };
        let a = gen_ap(r, ONCHIP, &dts, p, dims, gen);
        if k < n_args {
            inst.args.push(a);
        } else {
            inst.outs.push(a);
        }
    }
    // Class attributes that choose the opcode, as lifting writes them.
    if op == 0xE6 {
        inst.attrs.insert(ATTR_TSC_MODE.into(), "Cumulative".into());
    }
    if matches!(op, 0xF3 | 0xF4) {
        inst.attrs.insert(ATTR_WIDE.into(), true.into());
    }
    let name = Value::from(crate::lift::lower::mnemonic(op));
    let pin = |inst: &mut Instruction| {
        inst.attrs.remove(ATTR_OPCODE);
        if plan(inst, gen).ok().as_deref() != Some(&[op][..]) {
            inst.attrs.insert(ATTR_OPCODE.into(), name.clone());
        }
    };
    pin(&mut inst);
    // float32r inputs fix fp32_mode (High).
    let skip: &[&str] = if inst
        .args
        .iter()
        .any(|a| matches!(a.dtype, NumFormat::Float32r | NumFormat::Float32))
    {
        &["fp32_mode"]
    } else {
        &[]
    };
    gen_params(r, &mut inst, gen, skip);
    // A parameter (an ALU op, an accumulate command) may move the fan-in.
    pin(&mut inst);
    if plan(&inst, gen).ok().as_deref() != Some(&[op][..]) {
        return None;
    }
    gen_events(r, &mut inst, gen);
    Some(inst)
}

/// The bindings `binding_inst` covers.
fn decoded_bindings() -> Vec<(u8, InstClass, &'static crate::lift::rules::Form)> {
    crate::lift::rules::singles()
        .iter()
        .copied()
        .filter(|&(op, class, form)| {
            let mut r = Rng(0x9E37_79B9_7F4A_7C15);
            Gen::ALL
                .iter()
                .any(|&g| binding_inst(&mut r, op, class, form, g).is_some())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// lift(lower(x)) == x for every single-bundle binding with decoded operands (each opcode
    /// of each class, the fan-in variants pinned by the `opcode` attribute where the fan-in
    /// would pick another), on every generation that types the opcode.
    #[test]
    fn lift_inverts_lower_for_every_binding(seed in 1u64.., g in 0usize..4, k in 0usize..1000) {
        let all = decoded_bindings();
        let (op, class, form) = all[k % all.len()];
        let gen = Gen::ALL[g];
        let mut r = Rng(seed | 1);
        let Some(x) = binding_inst(&mut r, op, class, form, gen) else { return Ok(()) };
        let bundles = lower_instruction(&x, gen)
            .map_err(|e| TestCaseError::fail(format!("0x{op:02X}: {e}\n{}", dump(&x))))?;
        prop_assert_eq!(bundles.len(), 1);
        prop_assert_eq!(bundles[0].0[0], op);
        let (s, got) = lifted(&bundles, bir_engine_to_wire(x.engine), gen);
        prop_assert_eq!(got.len(), 1, "{:?}\n{}", s.diagnostics, dump(&x));
        prop_assert!(got[0] == x, "0x{:02X} on {}: lifted:\n{}\nexpected:\n{}", op, gen, dump(&got[0]), dump(&x));
    }
}

/// Every binding with decoded operands is generated (and lowers to its opcode) on some
/// generation, so the property above covers all of them.
#[test]
fn every_decoded_binding_is_generated() {
    let all = decoded_bindings();
    let covered: std::collections::BTreeSet<u8> = all.iter().map(|b| b.0).collect();
    for op in [
        0x41, 0x51, 0x8A, 0x8B, 0x8F, 0xF3, 0x72, 0x99, 0x43, 0x53, 0x9A, 0xE6, 0x44, 0x54, 0x42,
        0x52, 0x8C, 0x8D, 0x46, 0x47, 0x49, 0x7E, 0x7B, 0x9D, 0x9E, 0xBC, 0x21, 0x25, 0x22, 0x24,
        0x01, 0xA0, 0xA1, 0xA2,
    ] {
        assert!(covered.contains(&op), "0x{op:02X} not generated");
    }
}

/// The class generator of `lift_inverts_lower` reaches every fan-in variant: the v2 BF16
/// opcodes, 0x41 on POOL and on DVE, the bit-vector opcodes, the multi-bundle sequences
/// (LdWeights + Matmul, the two-pass float32 form, LdWeightsMx + MatmulMx, the accumulator
/// pairs, Select), and lifting gives each instruction back.
#[test]
fn class_generator_reaches_every_fan_in_variant() {
    use std::collections::BTreeSet;
    let mut seen: BTreeSet<(Gen, Vec<u8>, Engine)> = BTreeSet::new();
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    for &gen in &Gen::ALL {
        for &class in CLASSES {
            for _ in 0..400 {
                let Some(x) = gen_inst(&mut r, class, gen) else {
                    break;
                };
                let b = lower_instruction(&x, gen).unwrap_or_else(|e| panic!("{e}\n{}", dump(&x)));
                let engine = bir_engine_to_wire(x.engine);
                let (_, got) = lifted(&b, engine, gen);
                assert_eq!(got, vec![x.clone()], "{}", dump(&x));
                seen.insert((gen, b.iter().map(|b| b.0[0]).collect(), engine));
            }
        }
    }
    let has = |gen: Gen, ops: &[u8], engine: Option<Engine>| {
        seen.iter()
            .any(|(g, o, e)| *g == gen && o == ops && engine.is_none_or(|x| x == *e))
    };
    for op in [0x8A, 0x8B, 0x8F, 0x8C, 0x8D] {
        assert!(has(Gen::V2, &[op], Some(Engine::Pool)), "v2 0x{op:02X}");
    }
    for &gen in &Gen::ALL {
        for engine in [Engine::Pool, Engine::Dve] {
            assert!(has(gen, &[0x41], Some(engine)), "{gen} 0x41 on {engine}");
        }
        for ops in [
            &[0x01, 0x02][..],
            &[0x01, 0x02, 0x01, 0x02],
            &[0x02],
            &[0x51],
            &[0x53],
            &[0x9A, 0x9B],
            &[0x21, 0x24],
            &[0x46, 0xEA],
            &[0x47, 0xEA],
            &[0x46],
            &[0x47],
            &[0x72],
            &[0x99],
        ] {
            assert!(has(gen, ops, None), "{gen} {ops:02X?}");
        }
    }
    for gen in [Gen::V4, Gen::V5] {
        assert!(has(gen, &[0x09, 0x0A], None), "{gen} MatmultMx");
        assert!(has(gen, &[0xE3], None), "{gen} QuantizeMx");
    }
    assert!(has(Gen::V5, &[0xF3], None), "v5 0xF3");
}

/// A BIR Select with no parameters lowers to a SELECT_REDUCE whose ops the L2 gate accepts
/// (op1 MAX), and lifts back without them; one whose reduce op is set to something else lowers
/// to a bundle L2 rejects and lifts back with that op. The round trip and the L2 verdict agree.
#[test]
fn select_lowers_to_the_reduce_op_l2_accepts() {
    let mut r = Rng(0x005E_1EC7);
    // The generations with an L2 validator.
    for gen in [Gen::V2, Gen::V3, Gen::V4] {
        let mut x = gen_inst(&mut r, InstClass::Select, gen).expect("Select lowers everywhere");
        x.attrs.clear();
        for (op, ok) in [(None, true), (Some("ADD"), false)] {
            let mut x = x.clone();
            if let Some(op) = op {
                x.attrs.insert("reduce_op".into(), op.into());
            }
            let b = lower_instruction(&x, gen).unwrap_or_else(|e| panic!("{e}\n{}", dump(&x)));
            let sr = b
                .iter()
                .find(|b| b.opcode() == 0xEA)
                .expect("a SELECT_REDUCE");
            let engine = bir_engine_to_wire(x.engine);
            let fails = crate::l2::cascade::check_collect(gen, engine, sr);
            let ops_rejected = fails
                .iter()
                .any(|f| f.rule.name == "is_valid_select_reduce.ops");
            assert_eq!(!ops_rejected, ok, "{gen} {op:?}: {fails:?}");
            let (_, got) = lifted(&b, engine, gen);
            assert_eq!(got, vec![x.clone()], "{gen}: {}", dump(&x));
        }
    }
}
