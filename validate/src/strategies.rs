//! proptest strategies for BIR modules (feature `proptest`).
//!
//! - [`arb_valid_module`]: modules that pass every L1 rule at a given level. Each module is a
//!   sequence of independent units (one or a few instructions on buffers no other unit
//!   touches), each built only from classes whose driver row ([`crate::l1::table::driver`])
//!   admits the level, on an engine of the row's legal set at that level, with the memory
//!   types and dtypes the clean fixtures of `testdata/bir/` use.
//! - [`arb_broken_module`]: a valid module plus one unit that breaks exactly one rule, with
//!   the rule name and assertion code the verifier reports for it. Only mutations whose
//!   effect the fixtures of `testdata/bir/cases.json` pin are used.
//!
//! Both are deterministic functions of the proptest RNG and shrink by dropping units.

use proptest::prelude::*;

use crate::bir::{
    AccessPattern, ArchLevel, Block, ClassFields, CollectiveFields, EngineSet, EngineType,
    Function, InstClass, Instruction, MatmultMxFields, MemoryType, Module, NkiKernelFields,
    NUM_PARTITIONS,
};
use crate::l1::table::driver;
use tpbsim_isa::NumFormat;

/// One broken module and what the L1 verifier must say about it.
#[derive(Clone, Debug)]
pub struct BrokenModule {
    /// The module: valid except for one unit.
    pub module: Module,
    /// Name of the rule the broken unit violates (the diagnostic's `rule`).
    pub rule: &'static str,
    /// Assertion code the rule reports.
    pub code: u32,
}

/// Classes of the element-wise unit (Pool/DVE compute).
const ELEMENTWISE: [InstClass; 3] = [
    InstClass::TensorTensor,
    InstClass::TensorScalar,
    InstClass::TensorCopy,
];
/// Dtypes of the element-wise and activation units.
const FLOATS: [NumFormat; 3] = [NumFormat::Bfloat16, NumFormat::Float32, NumFormat::Float16];

/// True when the driver row of `class` admits `arch`.
fn admits(class: InstClass, arch: ArchLevel) -> bool {
    driver(class).arch.contains(arch)
}

/// The legal engines of `class` at `arch` among `wanted`.
fn engines(class: InstClass, arch: ArchLevel, wanted: &[EngineType]) -> Vec<EngineType> {
    let legal: EngineSet = driver(class).engines.at(arch);
    wanted
        .iter()
        .copied()
        .filter(|e| legal.contains(*e))
        .collect()
}

fn sb(buf: String, dtype: NumFormat, partitions: u64, elems: u64) -> AccessPattern {
    AccessPattern::contiguous(MemoryType::Sb, &buf, dtype, 0, partitions, elems)
}

fn psum(buf: String, dtype: NumFormat, partitions: u64, elems: u64) -> AccessPattern {
    AccessPattern::contiguous(MemoryType::Psum, &buf, dtype, 0, partitions, elems)
}

/// A self-contained piece of a module: instructions for the main block and, for kernels,
/// the function holding the kernel body.
#[derive(Clone, Debug)]
struct Unit {
    insts: Vec<Instruction>,
    functions: Vec<Function>,
}

impl Unit {
    fn one(i: Instruction) -> Unit {
        Unit {
            insts: vec![i],
            functions: Vec::new(),
        }
    }
}

/// Unit kinds; each is instantiated with a unit index that makes its buffer names unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Elementwise {
        class: usize,
        engine: EngineType,
        dtype: usize,
        partitions: u64,
        elems: u64,
    },
    Activation {
        partitions: u64,
        elems: u64,
    },
    Matmult {
        n: u64,
    },
    MatmultMx,
    Gather {
        elems: u64,
    },
    Scatter {
        elems: u64,
    },
    NkiKernel,
    CustomOp,
}

fn build(kind: Kind, k: usize) -> Unit {
    let b = |s: &str| format!("u{k}_{s}");
    match kind {
        Kind::Elementwise {
            class,
            engine,
            dtype,
            partitions,
            elems,
        } => {
            let class = ELEMENTWISE[class];
            let dt = FLOATS[dtype];
            let n_args = if class == InstClass::TensorTensor {
                2
            } else {
                1
            };
            let args = (0..n_args)
                .map(|a| sb(b(&format!("in{a}")), dt, partitions, elems))
                .collect();
            Unit::one(
                Instruction::new(class, engine)
                    .with_args(args)
                    .with_outs(vec![sb(b("out"), dt, partitions, elems)]),
            )
        }
        Kind::Activation { partitions, elems } => Unit::one(
            Instruction::new(InstClass::Activation, EngineType::Act)
                .with_args(vec![psum(b("in"), NumFormat::Float32, partitions, elems)])
                .with_outs(vec![sb(b("out"), NumFormat::Bfloat16, partitions, elems)]),
        ),
        Kind::Matmult { n } => Unit::one(
            Instruction::new(InstClass::Matmult, EngineType::Pe)
                .with_args(vec![
                    sb(b("w"), NumFormat::Bfloat16, 128, 128),
                    sb(b("i"), NumFormat::Bfloat16, 128, n),
                ])
                .with_outs(vec![psum(b("acc"), NumFormat::Float32, 128, n)]),
        ),
        Kind::MatmultMx => Unit::one(mx(k)),
        Kind::Gather { elems } => Unit::one(collective(InstClass::AllGather, k, elems, elems * 4)),
        Kind::Scatter { elems } => {
            Unit::one(collective(InstClass::ReduceScatter, k, elems * 4, elems))
        }
        Kind::NkiKernel => nki(k),
        Kind::CustomOp => Unit::one(
            Instruction::new(InstClass::CustomOp, EngineType::Pool)
                .with_args(vec![
                    sb(b("in"), NumFormat::Float32, 128, 64),
                    AccessPattern::contiguous(
                        MemoryType::Input,
                        &b("model_in"),
                        NumFormat::Float32,
                        0,
                        1,
                        64,
                    ),
                ])
                .with_outs(vec![sb(b("out"), NumFormat::Float32, 128, 64)]),
        ),
    }
}

/// The clean `MatmultMx` of `testdata/bir/clean_core_v4.bir.json` on unit-`k` buffers.
fn mx(k: usize) -> Instruction {
    let b = |s: &str| format!("u{k}_{s}");
    let mut i = Instruction::new(InstClass::MatmultMx, EngineType::Pe)
        .with_args(vec![
            sb(b("ifmap"), NumFormat::Float8E4m3fnX4, 128, 32),
            sb(b("weights"), NumFormat::Float8E4m3fnX4, 128, 32),
            sb(b("ifmap_scales"), NumFormat::Uint8, 16, 32),
            sb(b("weights_scales"), NumFormat::Uint8, 16, 32),
        ])
        .with_outs(vec![psum(b("out"), NumFormat::Float32, 32, 32)]);
    i.fields = ClassFields::MatmultMx(MatmultMxFields {
        replication_shift: 0,
        tiles: None,
    });
    i
}

fn collective(class: InstClass, k: usize, in_elems: u64, out_elems: u64) -> Instruction {
    let mut i = Instruction::new(class, EngineType::Pool)
        .with_args(vec![sb(
            format!("u{k}_in"),
            NumFormat::Float32,
            128,
            in_elems,
        )])
        .with_outs(vec![sb(
            format!("u{k}_out"),
            NumFormat::Float32,
            128,
            out_elems,
        )]);
    i.fields = ClassFields::Collective(CollectiveFields {
        kind: class.coarse_collective_kind(),
        replica_groups_shape: Some(vec![2, 4]),
        ..CollectiveFields::default()
    });
    i
}

/// The clean `NKIKernel` of `clean_core_v4.bir.json` and its body function.
fn nki(k: usize) -> Unit {
    let func = format!("u{k}_kernel_body");
    let out_sb = sb(format!("u{k}_k_sb"), NumFormat::Bfloat16, 128, 512);
    let mut i = Instruction::new(InstClass::NkiKernel, EngineType::Unassigned)
        .with_args(vec![sb(format!("u{k}_in"), NumFormat::Bfloat16, 128, 512)])
        .with_outs(vec![
            out_sb.clone(),
            psum(format!("u{k}_k_ps"), NumFormat::Float32, 128, 512),
        ]);
    i.fields = ClassFields::NkiKernel(NkiKernelFields {
        func: Some(func.clone()),
        sb_num_partitions: 128,
        sb_per_partition_size: 1024,
        psum_bank_count: 2,
        psum_num_partitions: 128,
        num_sb_buffers: 1,
        num_psum_buffers: 1,
    });
    let body = Function {
        name: func,
        attrs: Default::default(),
        blocks: vec![Block {
            name: "entry".into(),
            dynamic_cfg: false,
            instructions: vec![
                Instruction::new(InstClass::Memset, EngineType::Pool).with_outs(vec![out_sb]),
                Instruction::new(InstClass::Return, EngineType::All),
            ],
        }],
    };
    Unit {
        insts: vec![i],
        functions: vec![body],
    }
}

/// Unit kinds legal at `arch`.
fn arb_kind(arch: ArchLevel) -> BoxedStrategy<Kind> {
    let mut options: Vec<BoxedStrategy<Kind>> = Vec::new();
    // PSUM operands stay within one bank of the level's PSUM.
    let geometry = arch.psum_geometry();
    let psum_parts = u64::from(geometry.partitions);
    let psum_f32 = u64::from(geometry.bank_bytes) / NumFormat::Float32.container_bytes() as u64;
    let ew: Vec<(usize, Vec<EngineType>)> = ELEMENTWISE
        .iter()
        .enumerate()
        .filter(|(_, c)| admits(**c, arch))
        .map(|(i, c)| (i, engines(*c, arch, &[EngineType::Pool, EngineType::Dve])))
        .filter(|(_, e)| !e.is_empty())
        .collect();
    if !ew.is_empty() {
        options.push(
            (
                prop::sample::select(ew),
                any::<prop::sample::Index>(),
                0..FLOATS.len(),
                1u64..=128,
                1u64..=512,
            )
                .prop_map(
                    |((class, engs), e, dtype, partitions, elems)| Kind::Elementwise {
                        class,
                        engine: engs[e.index(engs.len())],
                        dtype,
                        partitions,
                        elems,
                    },
                )
                .boxed(),
        );
    }
    if admits(InstClass::Activation, arch)
        && !engines(InstClass::Activation, arch, &[EngineType::Act]).is_empty()
    {
        options.push(
            (1u64..=psum_parts, 1u64..=psum_f32)
                .prop_map(|(partitions, elems)| Kind::Activation { partitions, elems })
                .boxed(),
        );
    }
    if admits(InstClass::Matmult, arch)
        && !engines(InstClass::Matmult, arch, &[EngineType::Pe]).is_empty()
        && psum_parts == NUM_PARTITIONS
    {
        options.push((1u64..=psum_f32).prop_map(|n| Kind::Matmult { n }).boxed());
    }
    if admits(InstClass::MatmultMx, arch)
        && !engines(InstClass::MatmultMx, arch, &[EngineType::Pe]).is_empty()
    {
        options.push(Just(Kind::MatmultMx).boxed());
    }
    // Collective compute needs Gen3 or later (fixture collective_371_on_sunda).
    if arch >= ArchLevel::Gen3 {
        for (class, scatter) in [
            (InstClass::AllGather, false),
            (InstClass::ReduceScatter, true),
        ] {
            if admits(class, arch) && !engines(class, arch, &[EngineType::Pool]).is_empty() {
                options.push(
                    (1u64..=64)
                        .prop_map(move |elems| {
                            if scatter {
                                Kind::Scatter { elems }
                            } else {
                                Kind::Gather { elems }
                            }
                        })
                        .boxed(),
                );
            }
        }
    }
    if arch >= ArchLevel::CoreV4 && admits(InstClass::NkiKernel, arch) {
        options.push(Just(Kind::NkiKernel).boxed());
    }
    // CustomOp is rejected from Gen3 on (fixtures customop_178_*).
    if arch == ArchLevel::Sunda && admits(InstClass::CustomOp, arch) {
        options.push(Just(Kind::CustomOp).boxed());
    }
    if options.is_empty() {
        return Just(Kind::MatmultMx)
            .prop_filter("no unit is legal at this level", |_| false)
            .boxed();
    }
    prop::strategy::Union::new(options).boxed()
}

fn assemble(arch: ArchLevel, units: Vec<Unit>, ret: bool) -> Module {
    let mut insts = Vec::new();
    let mut functions = Vec::new();
    for u in units {
        insts.extend(u.insts);
        functions.extend(u.functions);
    }
    if ret && admits(InstClass::Return, arch) {
        insts.push(Instruction::new(InstClass::Return, EngineType::All));
    }
    functions.insert(
        0,
        Function {
            name: "main".into(),
            attrs: Default::default(),
            blocks: vec![Block {
                name: "bb0".into(),
                dynamic_cfg: false,
                instructions: insts,
            }],
        },
    );
    Module {
        name: Some("generated".into()),
        arch,
        functions,
    }
}

fn arb_kinds(arch: ArchLevel) -> BoxedStrategy<Vec<Kind>> {
    if has_units(arch) {
        prop::collection::vec(arb_kind(arch), 0..6).boxed()
    } else {
        Just(Vec::new()).boxed()
    }
}

/// True when at least one unit kind is legal at `arch`.
fn has_units(arch: ArchLevel) -> bool {
    ELEMENTWISE.iter().any(|c| admits(*c, arch))
        || admits(InstClass::Activation, arch)
        || admits(InstClass::Matmult, arch)
}

/// Modules at `arch` that pass every L1 rule (at Inferentia, where no compute class of the
/// driver table is legal, the module has an empty main block).
pub fn arb_valid_module(arch: ArchLevel) -> impl Strategy<Value = Module> {
    (arb_kinds(arch), any::<bool>()).prop_map(move |(kinds, ret)| {
        let units = kinds
            .into_iter()
            .enumerate()
            .map(|(k, kind)| build(kind, k))
            .collect();
        assemble(arch, units, ret)
    })
}

/// A one-rule breakage: rule, code, and the unit builder given a fresh unit index.
type Breakage = (&'static str, u32, fn(usize) -> Unit);

/// The one-rule breakages known at `arch`.
fn breakages(arch: ArchLevel) -> Vec<Breakage> {
    let mut v: Vec<Breakage> = Vec::new();
    if admits(InstClass::TensorTensor, arch)
        && !engines(InstClass::TensorTensor, arch, &[EngineType::Dve]).is_empty()
    {
        // engines_400: TensorTensor on PE.
        v.push(("checkValidEngines", 400, |k| {
            let mut u = build(tt(), k);
            u.insts[0].engine = EngineType::Pe;
            u
        }));
        // memtype_310: a DRAM operand of a compute instruction.
        v.push(("checkMemType", 310, |k| {
            let mut u = build(tt(), k);
            u.insts[0].args[1].mem = MemoryType::Dram;
            u
        }));
    }
    if arch >= ArchLevel::CoreV4 {
        v.push(("checkMatmultMxInstruction", 204, |k| {
            let mut i = mx(k);
            i.fields = ClassFields::MatmultMx(MatmultMxFields {
                replication_shift: 1,
                tiles: None,
            });
            Unit::one(i)
        }));
        v.push(("checkMatmultMxInputs", 235, |k| {
            let mut i = mx(k);
            i.args[1].partitions = 64;
            Unit::one(i)
        }));
        v.push(("checkMatmultMxInputs", 236, |k| {
            let mut i = mx(k);
            i.outs[0].partitions = 31;
            Unit::one(i)
        }));
        v.push(("checkNKIKernelBufferShapes", 1680, |k| {
            nki_with(k, |f| f.sb_num_partitions = 0)
        }));
        v.push(("checkNKIKernelBufferShapes", 1681, |k| {
            nki_with(k, |f| f.psum_bank_count = 9)
        }));
        v.push(("checkNKIKernelBufferShapes", 1682, |k| {
            nki_with(k, |f| f.psum_num_partitions = 129)
        }));
        v.push(("checkNKIKernelBufferShapes", 1683, |k| {
            nki_with(k, |f| f.num_psum_buffers = 2)
        }));
    }
    if arch == ArchLevel::Gen3 {
        v.push(("checkArchLevel", 366, |k| Unit::one(mx(k))));
    }
    if arch == ArchLevel::Gen3 || arch == ArchLevel::CoreV4 {
        v.push(("checkCustomOp", 178, |k| build(Kind::CustomOp, k)));
    }
    if arch == ArchLevel::Sunda {
        v.push(("checkArchLevel", 367, |_| {
            Unit::one(Instruction::new(
                InstClass::TongaReduceMacroSymbolic,
                EngineType::Pool,
            ))
        }));
    }
    v
}

fn tt() -> Kind {
    Kind::Elementwise {
        class: 0,
        engine: EngineType::Dve,
        dtype: 0,
        partitions: 128,
        elems: 512,
    }
}

fn nki_with(k: usize, f: fn(&mut NkiKernelFields)) -> Unit {
    let mut u = nki(k);
    if let ClassFields::NkiKernel(fields) = &mut u.insts[0].fields {
        f(fields);
    }
    u
}

/// Modules at `arch` that break exactly one L1 rule: a valid module from
/// [`arb_valid_module`] plus one unit carrying a breakage the fixtures pin, inserted at a
/// random position. Levels with no known breakage (Inferentia, CoreV5 without TensorTensor)
/// yield no value: the strategy rejects every case there.
pub fn arb_broken_module(arch: ArchLevel) -> impl Strategy<Value = BrokenModule> {
    let table = breakages(arch);
    let n = table.len();
    (
        arb_kinds(arch),
        any::<bool>(),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
    )
        .prop_filter("no breakage is known at this level", move |_| n > 0)
        .prop_map(move |(kinds, ret, which, pos)| {
            let (rule, code, make) = table[which.index(table.len())];
            let mut units: Vec<Unit> = kinds
                .iter()
                .enumerate()
                .map(|(k, kind)| build(*kind, k))
                .collect();
            let at = pos.index(units.len() + 1);
            units.insert(at, make(kinds.len()));
            BrokenModule {
                module: assemble(arch, units, ret),
                rule,
                code,
            }
        })
}

// ---- valid and mutated bundles from the fuzz generator ----

use crate::fuzz::generate::{self as fuzzgen, Entropy, Generated, Mutation, MutationKind};
use tpbsim_isa::{Gen, LayoutMeta};

impl Entropy for proptest::test_runner::TestRng {
    fn next_u64(&mut self) -> u64 {
        proptest::prelude::Rng::next_u64(self)
    }
}

/// Valid bundles of one typed layout in `gen`, with the engine stream that holds them
/// ([`fuzzgen::valid_bundle`]: spec-derived fields plus the L2 rule rows and recipe of the
/// opcode's format gate). `None` when the layout has no generated opcode in `gen`. Shrinking
/// is by case, not by field (the bundle is built from the runner's RNG).
pub fn arb_valid_bundle(layout: &'static LayoutMeta, gen: Gen) -> Option<BoxedStrategy<Generated>> {
    if fuzzgen::generated_opcodes(layout, gen).is_empty() {
        return None;
    }
    Some(
        Just(())
            .prop_perturb(move |_, mut rng| {
                fuzzgen::valid_bundle(&mut rng, layout, gen).expect("layout has generated opcodes")
            })
            .boxed(),
    )
}

/// Valid bundles of any generated layout of `gen`.
pub fn arb_any_valid_bundle(gen: Gen) -> BoxedStrategy<Generated> {
    Just(())
        .prop_perturb(move |_, mut rng| {
            fuzzgen::any_valid_bundle(&mut rng, gen).expect("generated layouts exist")
        })
        .boxed()
}

/// Mutations of valid bundles of `layout` in `gen`: of `kind` when given (cases where the kind
/// does not apply are rejected by the strategy's filter), of any applicable kind otherwise.
/// Each comes with the L2 rule it must break ([`Mutation::rule`]).
pub fn arb_mutation(
    layout: &'static LayoutMeta,
    gen: Gen,
    kind: Option<MutationKind>,
) -> Option<BoxedStrategy<Mutation>> {
    let valid = arb_valid_bundle(layout, gen)?;
    Some(
        valid
            .prop_perturb(move |g, mut rng| match kind {
                Some(k) => fuzzgen::mutate_kind(&mut rng, gen, g, k),
                None => Some(fuzzgen::mutate(&mut rng, gen, g)),
            })
            .prop_filter_map("mutation kind does not apply", |m| m)
            .boxed(),
    )
}
