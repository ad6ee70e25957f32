//! The collective gates (seed 000): `checkCollective` (no IO tensors), `checkCollectiveCompute`
//! (arch, outputs, supported kind, placement, the replica-group element ratios, SendRecv and
//! AllToAllV arity) and `checkCollectivesInDynamicCFG` (only local collectives in dynamic
//! control flow).

use crate::bir::{ArchLevel, CollectiveKind, InstClass, InstRef, Instruction, MemoryType, Module};
use crate::diag::Diagnostic;
use crate::registry::Rule;
use tpbsim_isa::NumFormat;

use super::{error_at, not_checked_at};

/// The per-level supported-kind map (`kindSupported`). `project-defined`: the compiler builds it
/// at start-up and its rows are not public; tpbsim admits every kind the wire encodes from
/// gen3 on, and the kinds whose wire codes come last (AllToAllV and the implicit permutes)
/// from core_v4 on.
pub fn kind_supported(arch: ArchLevel, kind: CollectiveKind) -> bool {
    use CollectiveKind as K;
    match kind {
        K::AllToAllV | K::PermuteImplicit | K::PermuteReduceImplicit => arch >= ArchLevel::CoreV4,
        _ => arch >= ArchLevel::Gen3,
    }
}

/// `checkCollective`: the directions it checks for a class (input, output).
fn io_directions(c: InstClass) -> Option<(bool, bool)> {
    match c {
        InstClass::CollectiveSend => Some((true, false)),
        InstClass::CollectiveRecv => Some((false, true)),
        c if c.is_collective_compute() => Some((true, true)),
        _ => None,
    }
}

/// `checkCollective` (no assertion code; `reportError`).
pub struct CollectiveIo;

impl Rule for CollectiveIo {
    rule_meta! {
        name: "checkCollective",
        property: CollectiveIo,
        codes: [],
        summary: "collectives never read (CollectiveCompute, Send) or write (CollectiveCompute, Recv) module I/O tensors",
        source: "seed 000, the collective replica-group gate (checkCollective, inst_visitor.cpp:3489-3497)",
        scope: Instruction,
    }
    fn check(&self, _m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        let Some((ins, outs)) = io_directions(r.inst.class) else {
            return;
        };
        if ins {
            if let Some((i, ap)) = r.inst.args.iter().enumerate().find(|(_, a)| a.mem.is_io()) {
                out.push(error_at(
                    r,
                    "checkCollective",
                    None,
                    format!("Collective instruction cannot read IO tensors: args[{i}] is {} tensor {:?}", ap.mem, ap.buffer),
                ));
            }
        }
        if outs {
            if let Some((i, ap)) = r.inst.outs.iter().enumerate().find(|(_, a)| a.mem.is_io()) {
                out.push(error_at(
                    r,
                    "checkCollective",
                    None,
                    format!("Collective instruction cannot write IO tensors: outs[{i}] is {} tensor {:?}", ap.mem, ap.buffer),
                ));
            }
        }
    }
}

/// Findings of `checkCollectiveCompute` for one instruction: `(code, message, not_checked)`.
pub fn check_collective_compute(
    i: &Instruction,
    arch: ArchLevel,
) -> Vec<(Option<u32>, String, bool)> {
    let mut v: Vec<(Option<u32>, String, bool)> = Vec::new();
    let err = |v: &mut Vec<(Option<u32>, String, bool)>, code: Option<u32>, msg: String| {
        v.push((code, msg, false))
    };
    let f = i.collective().cloned().unwrap_or_default();
    if arch <= ArchLevel::Sunda {
        err(
            &mut v,
            Some(371),
            format!("Module.getArchLevel() > ArchLevel::Sunda: collective compute on {arch} (assertion 371; the seed also lists 319 for this predicate)"),
        );
    }
    let n_out = i.outs.len();
    if !(n_out == 1 || (f.sb_scratchpad && n_out == 2)) {
        err(
            &mut v,
            Some(318),
            format!(
                "I.num_outputs() == 1 || (isCCHavingSBScratchPad(I) && I.num_outputs() == 2): {n_out} output(s), scratch pad {}",
                f.sb_scratchpad
            ),
        );
    }
    let kind = i.collective_kind();
    // The supported-kind map has no rows for levels without collective compute (371 above).
    if let Some(k) = kind.filter(|_| arch > ArchLevel::Sunda) {
        if !kind_supported(arch, k) {
            err(&mut v, Some(311), format!("kindSupported: {k} is not supported on {arch} [project-defined: supported-kind map]"));
        }
    }
    if let Some((a, ap)) = i
        .args
        .iter()
        .enumerate()
        .find(|(_, a)| !a.is_partition_contiguous())
    {
        err(
            &mut v,
            Some(312),
            format!(
                "arg.isPartitionContiguous(): args[{a}] of {:?} is not dense within its partitions",
                ap.buffer
            ),
        );
    }
    if let Some((a, ap)) = i
        .args
        .iter()
        .enumerate()
        .find(|(_, a)| a.mem != MemoryType::Sb)
    {
        err(
            &mut v,
            Some(313),
            format!("arg.isLocationSB(): args[{a}] lies in {}", ap.mem),
        );
    }
    // Data outputs: the scratch pad, when present, is the last output.
    let data_outs = if f.sb_scratchpad && n_out == 2 {
        &i.outs[..1]
    } else {
        &i.outs[..]
    };
    match kind {
        Some(k @ (CollectiveKind::AllGather | CollectiveKind::ReduceScatter)) => {
            let pairs: Vec<(u64, u64)> = i
                .args
                .iter()
                .zip(data_outs)
                .map(|(a, o)| (a.num_elements(), o.num_elements()))
                .collect();
            let Some(g) = f.group_size() else {
                v.push((
                    None,
                    format!(
                        "{k} has no replica_groups_shape: the src/dst element ratio is not checked"
                    ),
                    true,
                ));
                return v;
            };
            let shape = f.replica_groups_shape.clone().unwrap_or_default();
            // AllGather: out = in × group; ReduceScatter: in = out × group.
            let small = |&(a, o): &(u64, u64)| {
                if k == CollectiveKind::AllGather {
                    (a, o)
                } else {
                    (o, a)
                }
            };
            if let Some(&(a0, o0)) = pairs.first() {
                for (n, &(a, o)) in pairs.iter().enumerate().skip(1) {
                    // Ratios o/a and o0/a0 compared exactly: o·a0 == o0·a.
                    if u128::from(o) * u128::from(a0) != u128::from(o0) * u128::from(a) {
                        err(
                            &mut v,
                            None,
                            format!("src/dst element ratio must be the same for all inputs: input 0 is {a0}→{o0}, input {n} is {a}→{o}"),
                        );
                        break;
                    }
                }
            }
            for (n, p) in pairs.iter().enumerate() {
                let (s, b) = small(p);
                if s == 0 || u128::from(s) * u128::from(g) != u128::from(b) {
                    err(
                        &mut v,
                        None,
                        format!(
                            "Illegal src/dst ratio for {k}: in={} out={} (input {n}); replica_groups_shape={shape:?} needs a ratio of {g}",
                            p.0, p.1
                        ),
                    );
                }
            }
        }
        Some(CollectiveKind::SendRecv) => {
            let ranks = f.recv_from_rank.as_ref().map_or(0, Vec::len);
            if i.args.len() != ranks {
                err(
                    &mut v,
                    Some(74),
                    format!(
                        "I.num_arguments() == I.getRecvFromRank().size(): {} vs {ranks}",
                        i.args.len()
                    ),
                );
            }
            for (n, (a, o)) in i.args.iter().zip(&i.outs).enumerate() {
                if a.dtype != o.dtype {
                    err(
                        &mut v,
                        Some(75),
                        format!(
                            "OutAP.getType() == InAP.getType(): pair {n} is {} → {}",
                            a.dtype, o.dtype
                        ),
                    );
                }
            }
        }
        Some(CollectiveKind::AllToAllV) => {
            let (na, no) = (i.args.len(), i.outs.len());
            if !(na == no + 1 || na == no) {
                err(
                    &mut v,
                    None,
                    format!("AllToAllV must have one more input than outputs (metadata), or equal count when a channel buffer output is present. Got {na} input(s), {no} output(s)"),
                );
            }
            if na < 2 {
                err(&mut v, None, format!("AllToAllV requires at least one data input and one metadata input, got {na}"));
            } else if let Some(meta) = i.args.last().filter(|m| m.dtype != NumFormat::Uint32) {
                err(
                    &mut v,
                    None,
                    format!(
                        "AllToAllV metadata input must be uint32, got {}",
                        meta.dtype
                    ),
                );
            }
        }
        _ => {}
    }
    v
}

/// `checkCollectiveCompute`, codes 371 (/319), 318, 311, 312, 313, 74, 75.
pub struct CollectiveCompute;

impl Rule for CollectiveCompute {
    rule_meta! {
        name: "checkCollectiveCompute",
        property: CollectiveCompute,
        codes: [371, 318, 311, 312, 313, 74, 75],
        summary: "collective compute after sunda, one output (two with an SB scratch pad), supported kind, partition-contiguous SB inputs, AllGather/ReduceScatter element ratio = ranks per group, SendRecv arity and dtypes, AllToAllV arity and uint32 metadata",
        source: "seed 000, the collective replica-group gate (checkCollectiveCompute)",
        project: "the supported-kind map (code 311); the reading of isPartitionContiguous as dense-within-partition",
        scope: Instruction,
    }
    fn check(&self, m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if !r.inst.class.is_collective_compute() {
            return;
        }
        for (code, msg, nc) in check_collective_compute(r.inst, m.arch) {
            out.push(if nc {
                not_checked_at(r, "checkCollectiveCompute", msg)
            } else {
                error_at(r, "checkCollectiveCompute", code, msg)
            });
        }
    }
}

/// True for the SendRecv collectives (code 1500 in dynamic control flow).
fn is_send_recv(r: &InstRef<'_>) -> bool {
    matches!(
        r.inst.collective_kind(),
        Some(CollectiveKind::SendRecv | CollectiveKind::SendRecvCce)
    )
}

/// `checkCollectivesInDynamicCFG`, codes 123 / 1500.
pub struct InDynamicCfg;

impl Rule for InDynamicCfg {
    rule_meta! {
        name: "checkCollectivesInDynamicCFG",
        property: CollectivesInDynamicCfg,
        codes: [123, 1500],
        summary: "a collective in a dynamic-CFG block (flagged, or in a DynamicForLoop/DoWhile body) must be local; a SendRecv there is rejected",
        source: "seed 000, the collective gate considerations (checkCollectivesInDynamicCFG, inst_visitor.cpp:1024)",
        project: "blocks nested in DynamicForLoop / DoWhile count as dynamic-CFG blocks",
        scope: Instruction,
    }
    fn check(&self, _m: &Module, r: &InstRef<'_>, out: &mut Vec<Diagnostic>) {
        if !r.dynamic_cfg || !r.inst.class.is_collective() {
            return;
        }
        if is_send_recv(r) {
            out.push(error_at(
                r,
                "checkCollectivesInDynamicCFG",
                Some(1500),
                "SendRecv inside dynamic control flow",
            ));
        } else if !r.inst.collective().is_some_and(|c| c.is_local) {
            out.push(error_at(
                r,
                "checkCollectivesInDynamicCFG",
                Some(123),
                format!(
                    "isLocal: {} inside dynamic control flow ({}) is not local",
                    r.inst.class, r.block_path
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::{Block, ClassFields, CollectiveFields, EngineType};
    use crate::l1::testutil::*;
    use crate::registry::Property;

    fn coll(
        class: InstClass,
        ins: &[(u64, NumFormat)],
        outs: &[(u64, NumFormat)],
        shape: Option<Vec<u64>>,
    ) -> Instruction {
        let mut i = Instruction::new(class, EngineType::Pool)
            .with_args(
                ins.iter()
                    .enumerate()
                    .map(|(n, &(e, d))| sb(&format!("i{n}"), d, 0, 128, e))
                    .collect(),
            )
            .with_outs(
                outs.iter()
                    .enumerate()
                    .map(|(n, &(e, d))| sb(&format!("o{n}"), d, 0, 128, e))
                    .collect(),
            );
        if let ClassFields::Collective(f) = &mut i.fields {
            f.replica_groups_shape = shape;
        }
        i
    }

    fn codes(i: &Instruction, arch: ArchLevel) -> Vec<Option<u32>> {
        check_collective_compute(i, arch)
            .into_iter()
            .filter(|x| !x.2)
            .map(|x| x.0)
            .collect()
    }

    fn msgs(i: &Instruction) -> Vec<String> {
        check_collective_compute(i, ArchLevel::CoreV4)
            .into_iter()
            .map(|x| x.1)
            .collect()
    }

    const F: NumFormat = NumFormat::Float32;

    #[test]
    fn all_gather_ratio() {
        let ok = coll(
            InstClass::AllGather,
            &[(64, F)],
            &[(256, F)],
            Some(vec![2, 4]),
        );
        assert!(codes(&ok, ArchLevel::CoreV4).is_empty());
        let bad = coll(
            InstClass::AllGather,
            &[(64, F)],
            &[(128, F)],
            Some(vec![2, 4]),
        );
        assert_eq!(codes(&bad, ArchLevel::CoreV4), vec![None]);
        assert!(
            msgs(&bad)[0].starts_with("Illegal src/dst ratio for AllGather: in=8192 out=16384"),
            "{:?}",
            msgs(&bad)
        );
        let none = coll(InstClass::AllGather, &[(64, F)], &[(128, F)], None);
        let f = check_collective_compute(&none, ArchLevel::CoreV4);
        assert_eq!(f.len(), 1);
        assert!(f[0].2, "missing shape is not checked, not passed");
        // The fine-grain form with the kind field.
        let mut cc = coll(
            InstClass::CollectiveCompute,
            &[(64, F)],
            &[(128, F)],
            Some(vec![1, 2]),
        );
        if let ClassFields::Collective(f) = &mut cc.fields {
            f.kind = Some(CollectiveKind::AllGather);
        }
        assert!(codes(&cc, ArchLevel::CoreV4).is_empty());
    }

    #[test]
    fn reduce_scatter_ratio_and_consistency() {
        let ok = coll(
            InstClass::ReduceScatter,
            &[(256, F)],
            &[(64, F)],
            Some(vec![2, 4]),
        );
        assert!(codes(&ok, ArchLevel::CoreV4).is_empty());
        // Input/output pairs are zipped; two data outputs also break 318.
        let two = coll(
            InstClass::ReduceScatter,
            &[(256, F), (128, F)],
            &[(64, F), (32, F)],
            Some(vec![2, 4]),
        );
        assert_eq!(codes(&two, ArchLevel::CoreV4), vec![Some(318)]);
        let bad = coll(
            InstClass::ReduceScatter,
            &[(256, F), (128, F)],
            &[(64, F), (64, F)],
            Some(vec![2, 4]),
        );
        let m: Vec<String> = msgs(&bad)
            .into_iter()
            .filter(|m| !m.starts_with("I.num_outputs"))
            .collect();
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(
            m[0].starts_with("src/dst element ratio must be the same for all inputs"),
            "{m:?}"
        );
        assert!(
            m[1].starts_with(
                "Illegal src/dst ratio for ReduceScatter: in=16384 out=8192 (input 1)"
            ),
            "{m:?}"
        );
    }

    #[test]
    fn arch_outputs_kind_placement() {
        let ok = coll(InstClass::AllReduce, &[(64, F)], &[(64, F)], None);
        assert!(codes(&ok, ArchLevel::Gen3).is_empty());
        assert_eq!(codes(&ok, ArchLevel::Sunda), vec![Some(371)]);
        let two = coll(InstClass::AllReduce, &[(64, F)], &[(64, F), (64, F)], None);
        assert_eq!(codes(&two, ArchLevel::CoreV4), vec![Some(318)]);
        let mut scratch = two.clone();
        if let ClassFields::Collective(f) = &mut scratch.fields {
            f.sb_scratchpad = true;
        }
        assert!(codes(&scratch, ArchLevel::CoreV4).is_empty());
        let a2av = coll(
            InstClass::AllToAllV,
            &[(64, F), (8, NumFormat::Uint32)],
            &[(64, F)],
            None,
        );
        assert!(codes(&a2av, ArchLevel::CoreV4).is_empty());
        assert_eq!(codes(&a2av, ArchLevel::Gen3), vec![Some(311)]);
        let mut strided = ok.clone();
        strided.args[0].pattern[0].step = 2;
        assert_eq!(codes(&strided, ArchLevel::CoreV4), vec![Some(312)]);
        let mut dram = ok.clone();
        dram.args[0].mem = MemoryType::Dram;
        assert_eq!(codes(&dram, ArchLevel::CoreV4), vec![Some(313)]);
    }

    #[test]
    fn send_recv_74_75() {
        let mut ok = coll(InstClass::SendRecv, &[(64, F)], &[(64, F)], None);
        if let ClassFields::Collective(f) = &mut ok.fields {
            f.recv_from_rank = Some(vec![3]);
        }
        assert!(codes(&ok, ArchLevel::CoreV4).is_empty());
        let mut no_ranks = ok.clone();
        no_ranks.fields = ClassFields::Collective(CollectiveFields {
            kind: Some(CollectiveKind::SendRecv),
            ..Default::default()
        });
        assert_eq!(codes(&no_ranks, ArchLevel::CoreV4), vec![Some(74)]);
        let mut dt = ok.clone();
        dt.outs[0].dtype = NumFormat::Bfloat16;
        assert_eq!(codes(&dt, ArchLevel::CoreV4), vec![Some(75)]);
    }

    #[test]
    fn all_to_all_v_arity_and_metadata() {
        let bad_meta = coll(
            InstClass::AllToAllV,
            &[(64, F), (8, NumFormat::Int32)],
            &[(64, F)],
            None,
        );
        assert_eq!(
            msgs(&bad_meta),
            vec!["AllToAllV metadata input must be uint32, got int32".to_string()]
        );
        let one = coll(InstClass::AllToAllV, &[(64, F)], &[(64, F)], None);
        assert_eq!(
            msgs(&one),
            vec![
                "AllToAllV requires at least one data input and one metadata input, got 1"
                    .to_string()
            ]
        );
        let arity = coll(
            InstClass::AllToAllV,
            &[(64, F), (64, F), (8, NumFormat::Uint32)],
            &[(64, F)],
            None,
        );
        assert!(
            msgs(&arity)[0].starts_with("AllToAllV must have one more input than outputs"),
            "{:?}",
            msgs(&arity)
        );
        let channel = coll(
            InstClass::AllToAllV,
            &[(64, F), (8, NumFormat::Uint32)],
            &[(64, F), (64, F)],
            None,
        );
        // Equal counts (a channel-buffer output) are legal for the arity; two outputs break 318.
        assert_eq!(codes(&channel, ArchLevel::CoreV4), vec![Some(318)]);
    }

    #[test]
    fn io_tensors_rule() {
        let mut send = coll(InstClass::CollectiveSend, &[(64, F)], &[(64, F)], None);
        send.args[0].mem = MemoryType::Input;
        send.outs[0].mem = MemoryType::Output;
        let d = run(
            Property::CollectiveIo,
            &module(ArchLevel::CoreV4, vec![send]),
        );
        assert_eq!(d.len(), 1);
        assert!(d[0]
            .message
            .starts_with("Collective instruction cannot read IO tensors"));
        let mut recv = coll(InstClass::CollectiveRecv, &[(64, F)], &[(64, F)], None);
        recv.outs[0].mem = MemoryType::Output;
        let d = run(
            Property::CollectiveIo,
            &module(ArchLevel::CoreV4, vec![recv]),
        );
        assert!(d[0]
            .message
            .starts_with("Collective instruction cannot write IO tensors"));
        let ok = coll(
            InstClass::AllGather,
            &[(64, F)],
            &[(256, F)],
            Some(vec![1, 4]),
        );
        assert!(run(Property::CollectiveIo, &module(ArchLevel::CoreV4, vec![ok])).is_empty());
    }

    fn in_loop(class: InstClass, inst: Instruction) -> crate::bir::Module {
        let mut lp = Instruction::new(class, EngineType::All);
        lp.fields = ClassFields::Region(vec![Block {
            name: "body".into(),
            dynamic_cfg: false,
            instructions: vec![inst],
        }]);
        module(ArchLevel::CoreV4, vec![lp])
    }

    #[test]
    fn dynamic_cfg_123_1500() {
        let ar = coll(InstClass::AllReduce, &[(64, F)], &[(64, F)], None);
        let d = run(
            Property::CollectivesInDynamicCfg,
            &in_loop(InstClass::DoWhile, ar.clone()),
        );
        assert_eq!(error_codes(&d), vec![Some(123)]);
        assert_eq!(d[0].location.block.as_deref(), Some("bb0/0/body"));
        // A static loop body is not dynamic control flow.
        assert!(run(
            Property::CollectivesInDynamicCfg,
            &in_loop(InstClass::Loop, ar.clone())
        )
        .is_empty());
        let mut local = ar;
        if let ClassFields::Collective(f) = &mut local.fields {
            f.is_local = true;
        }
        assert!(run(
            Property::CollectivesInDynamicCfg,
            &in_loop(InstClass::DynamicForLoop, local)
        )
        .is_empty());
        let sr = coll(InstClass::SendRecv, &[(64, F)], &[(64, F)], None);
        let d = run(
            Property::CollectivesInDynamicCfg,
            &in_loop(InstClass::DynamicForLoop, sr),
        );
        assert_eq!(error_codes(&d), vec![Some(1500)]);
        // A block flagged dynamic.
        let mut m = module(
            ArchLevel::CoreV4,
            vec![coll(InstClass::AllReduce, &[(64, F)], &[(64, F)], None)],
        );
        m.functions[0].blocks[0].dynamic_cfg = true;
        assert_eq!(
            error_codes(&run(Property::CollectivesInDynamicCfg, &m)),
            vec![Some(123)]
        );
    }
}
