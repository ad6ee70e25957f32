//! Property: the L1 registry never panics, whatever the module (extreme counts, steps and
//! offsets, any class on any engine at any level, aliasing buffers, nested regions).

use proptest::prelude::*;
use tpbsim_isa::NumFormat;
use tpbsim_validate::bir::{
    AccessPattern, ArchLevel, Block, ClassFields, CollectiveFields, CollectiveKind, Dim,
    EngineType, FieldsKind, Function, InstClass, Instruction, MatmultMxFields, MemoryType, Module,
    MxTiles, NkiKernelFields, Sb2SbFields,
};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::registry::{PropertySet, Registry};

fn cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

fn num() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..5, 1u64..600, Just(u64::MAX), Just(1u64 << 40)]
}

fn step() -> impl Strategy<Value = i64> {
    prop_oneof![-3i64..4, Just(i64::MAX), Just(i64::MIN), 1i64..1000]
}

fn ap() -> impl Strategy<Value = AccessPattern> {
    (
        prop::sample::select(MemoryType::ALL.to_vec()),
        prop::sample::select(vec!["a", "b"]),
        prop::sample::select(NumFormat::ALL.to_vec()),
        prop_oneof![0u64..130, Just(u64::MAX)],
        prop_oneof![0u64..130, Just(u64::MAX)],
        prop::collection::vec((step(), num()), 0..4),
        prop_oneof![-5i64..5, Just(i64::MAX), Just(i64::MIN)],
        any::<bool>(),
    )
        .prop_map(
            |(mem, buf, dtype, start_partition, partitions, dims, offset, indirect)| {
                AccessPattern {
                    mem,
                    buffer: buf.to_string(),
                    dtype,
                    start_partition,
                    partitions,
                    pattern: dims
                        .into_iter()
                        .map(|(step, num)| Dim { step, num })
                        .collect(),
                    offset,
                    indirect,
                }
            },
        )
}

fn small_i64() -> impl Strategy<Value = i64> {
    prop_oneof![-2i64..200, Just(i64::MAX), Just(i64::MIN)]
}

fn inst() -> impl Strategy<Value = Instruction> {
    (
        prop::sample::select(InstClass::ALL.to_vec()),
        prop::sample::select(EngineType::ALL_TYPES.to_vec()),
        prop::collection::vec(ap(), 0..6),
        prop::collection::vec(ap(), 0..4),
        prop::collection::vec(small_i64(), 7),
        prop::option::of(prop::collection::vec(0u64..9, 0..3)),
        prop::sample::select(CollectiveKind::ALL.to_vec()),
        any::<(bool, bool, bool)>(),
    )
        .prop_map(|(class, engine, args, outs, ints, shape, kind, flags)| {
            let mut i = Instruction::new(class, engine)
                .with_args(args)
                .with_outs(outs);
            i.fields = match FieldsKind::of(class) {
                FieldsKind::MatmultMx => ClassFields::MatmultMx(MatmultMxFields {
                    replication_shift: ints[0],
                    tiles: flags.0.then(|| MxTiles {
                        row_pos: vec![ints[1]],
                        col_pos: vec![ints[2]],
                        row_size: vec![ints[3]],
                        col_size: vec![ints[4]],
                    }),
                }),
                FieldsKind::NkiKernel => ClassFields::NkiKernel(NkiKernelFields {
                    func: flags.1.then(|| "f".to_string()),
                    sb_num_partitions: ints[0],
                    sb_per_partition_size: ints[1],
                    psum_bank_count: ints[2],
                    psum_num_partitions: ints[3],
                    num_sb_buffers: ints[4],
                    num_psum_buffers: ints[5],
                }),
                FieldsKind::Collective => ClassFields::Collective(CollectiveFields {
                    kind: class.coarse_collective_kind().or(Some(kind)),
                    replica_groups_shape: shape,
                    recv_from_rank: flags.2.then(|| vec![ints[6]]),
                    sb_scratchpad: flags.0,
                    is_local: flags.1,
                }),
                FieldsKind::Sb2Sb => ClassFields::Sb2Sb(Sb2SbFields {
                    ctx: flags.2.then_some(ints[6].unsigned_abs()),
                }),
                FieldsKind::Region => ClassFields::Region(vec![Block {
                    name: "body".into(),
                    dynamic_cfg: flags.0,
                    instructions: vec![Instruction::new(InstClass::AllReduce, EngineType::Pool)],
                }]),
                FieldsKind::None => ClassFields::None,
            };
            i
        })
}

fn module() -> impl Strategy<Value = Module> {
    (
        prop::sample::select(ArchLevel::ALL.to_vec()),
        prop::collection::vec(inst(), 0..8),
        any::<bool>(),
    )
        .prop_map(|(arch, instructions, dynamic_cfg)| Module {
            name: None,
            arch,
            functions: vec![Function {
                name: "f".into(),
                attrs: Default::default(),
                blocks: vec![Block {
                    name: "b".into(),
                    dynamic_cfg,
                    instructions,
                }],
            }],
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn verify_never_panics(m in module()) {
        let r = Registry::l1();
        let all = r.verify(PropertySet::all(), &m, Mode::CollectAll);
        let first = r.verify(PropertySet::all(), &m, Mode::FailFast);
        // Fail-fast output is a prefix of the full output ending at its first error.
        prop_assert!(first.len() <= all.len());
        prop_assert_eq!(&all[..first.len()], &first[..]);
        prop_assert!(first.iter().filter(|d| d.is_error()).count() <= 1);
    }
}
