//! BIR instruction classes.
//!
//! The first 110 classes are the compiler's `bir::InstructionType` members, in ordinal order
//! (0..=109). The rest are classes a lifter produces from the opcode catalog that the enum has
//! no member for (a lone `LDWEIGHTS`, `CAST`, `TENSOR_DEQUANTIZE`, the coarse-grain collective
//! kinds, semaphore waits, ...); they carry no compiler ordinal and are marked
//! `project-defined` in `docs/bir-json.md`.

use std::fmt;

macro_rules! inst_classes {
    ( $( $variant:ident = $name:literal, $ord:expr, $doc:literal; )* ) => {
        /// A BIR instruction class (`InstXxx`), named in JSON without the `Inst` prefix.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum InstClass {
            $( #[doc = $doc] $variant, )*
        }

        impl InstClass {
            /// Every class: the 110 compiler members in ordinal order, then the lifter classes.
            pub const ALL: &'static [InstClass] = &[ $( InstClass::$variant, )* ];

            /// The JSON `op` name (class name without the `Inst` prefix).
            pub const fn name(self) -> &'static str {
                match self { $( InstClass::$variant => $name, )* }
            }

            /// The compiler's `InstructionType` ordinal, when the class is one of its members.
            pub const fn bir_ordinal(self) -> Option<u32> {
                match self { $( InstClass::$variant => $ord, )* }
            }
        }
    };
}

inst_classes! {
    Generic = "Generic", Some(0), "0: permissive base; any engine.";
    GenericCopy = "GenericCopy", Some(1), "1";
    GenericRelu = "GenericRelu", Some(2), "2";
    AbstractCopy = "AbstractCopy", Some(3), "3";
    Activation = "Activation", Some(4), "4: ACTIVATE / ACTIVATE2.";
    ReadActivationAccumulator = "ReadActivationAccumulator", Some(5), "5: 0x24.";
    LoadActFuncSet = "LoadActFuncSet", Some(6), "6: ACTIVATION_TABLE_LOAD / pseudo 0xC6.";
    MatmultBase = "MatmultBase", Some(7), "7: abstract matmul base.";
    Matmult = "Matmult", Some(8), "8: LDWEIGHTS + MATMUL.";
    MatmultSparse = "MatmultSparse", Some(9), "9: LDTAGS + LDWEIGHTS + MATMUL_SPARSE.";
    Memset = "Memset", Some(10), "10: MEMSET / RNG fill.";
    GetGlobalRankId = "GetGlobalRankId", Some(11), "11: pseudo GID_LOAD.";
    NoOp = "NoOp", Some(12), "12: NOP / ENGINE_NOP.";
    EventSemaphore = "EventSemaphore", Some(13), "13: EVENT_SEMAPHORE.";
    GroupResetSemaphores = "GroupResetSemaphores", Some(14), "14: EVENT_SEMAPHORE_RANGE_CLEAR.";
    AllEngineBarrier = "AllEngineBarrier", Some(15), "15: pseudo SYNC_BARRIER.";
    Drain = "Drain", Some(16), "16: DRAIN.";
    Halt = "Halt", Some(17), "17: HALT.";
    Dma = "DMA", Some(18), "18";
    Load = "Load", Some(19), "19: DMA load (pseudo DMA_DIRECT2D).";
    Pool = "Pool", Some(20), "20: POOL / MAX_POOL_SELECT.";
    Reciprocal = "Reciprocal", Some(21), "21: RECIPROCAL.";
    Save = "Save", Some(22), "22: DMA save.";
    TensorCopy = "TensorCopy", Some(23), "23: COPY.";
    TensorCopyDynamicSrc = "TensorCopyDynamicSrc", Some(24), "24";
    TensorCopyDynamicDst = "TensorCopyDynamicDst", Some(25), "25";
    IndirectCopy = "IndirectCopy", Some(26), "26: INDIRECT_COPY.";
    TensorReduce = "TensorReduce", Some(27), "27: TENSOR_REDUCE_* and transposing reduces.";
    TensorScalar = "TensorScalar", Some(28), "28: TENSOR_SCALAR_*.";
    TensorScalarPtr = "TensorScalarPtr", Some(29), "29: TENSOR_SCALAR_PTR_*.";
    TensorScalarCache = "TensorScalarCache", Some(30), "30: TENSOR_SCALAR_CACHE_*.";
    TensorTensor = "TensorTensor", Some(31), "31: TENSOR_TENSOR_*.";
    DmaCopy = "DMACopy", Some(32), "32: DMA copy / cast / transpose / replicate.";
    GpsimdSb2Sb = "GPSIMDSB2SB", Some(33), "33: GpSimd SBUF-to-SBUF (SB2SB_COLLECTIVE).";
    BnStats = "BNStats", Some(34), "34: BATCH_NORM_STATS2 / TRANSPOSE_BATCH_NORM_STATS2.";
    BnStatsAggregate = "BNStatsAggregate", Some(35), "35: BATCH_NORM_AGGREGATE.";
    BnGradients = "BNGradients", Some(36), "36: BATCH_NORM_GRAD_ACCUMULATE(2).";
    BnBackprop = "BNBackprop", Some(37), "37: PARAM_LOAD + BACK_PROP.";
    BnBackprop2 = "BNBackprop2", Some(38), "38: PARAM_LOAD + PARAM_LOAD2.";
    StreamShuffle = "StreamShuffle", Some(39), "39: LOAD_MASK_SELECT + STREAM_SHUFFLE.";
    StreamTranspose = "StreamTranspose", Some(40), "40: LOAD_MASK_SELECT + STREAM_TRANSPOSE.";
    ReadVarAddr = "ReadVarAddr", Some(41), "41: pseudo READ_VAR_ADDR.";
    GenericIndirectLoad = "GenericIndirectLoad", Some(42), "42";
    IndirectLoad = "IndirectLoad", Some(43), "43";
    GenericIndirectSave = "GenericIndirectSave", Some(44), "44";
    IndirectSave = "IndirectSave", Some(45), "45";
    IndirectSaveAccumulate = "IndirectSaveAccumulate", Some(46), "46";
    Collective = "Collective", Some(47), "47: plain collective (generic engine set).";
    CollectiveCompute = "CollectiveCompute", Some(48), "48: fine-grain collective (kind field).";
    CollectiveSend = "CollectiveSend", Some(49), "49";
    CollectiveRecv = "CollectiveRecv", Some(50), "50";
    Select = "Select", Some(51), "51: copy + SELECT_REDUCE.";
    CopyPredicated = "CopyPredicated", Some(52), "52: COPY_PREDICATED / CAST_PREDICATED.";
    CustomOp = "CustomOp", Some(53), "53: CUSTOM_OP_HEADER + PAYLOAD.";
    BirKernel = "BIRKernel", Some(54), "54";
    NkiKernel = "NKIKernel", Some(55), "55";
    NkiKlirKernel = "NKIKLIRKernel", Some(56), "56";
    DevicePrint = "DevicePrint", Some(57), "57";
    GetRandState = "GetRandState", Some(58), "58: RAND_GET_STATE.";
    SetRandState = "SetRandState", Some(59), "59: RAND_SET_STATE.";
    Rand = "Rand", Some(60), "60: RAND.";
    Iota = "Iota", Some(61), "61: IOTA.";
    TensorScalarAffineSelect = "TensorScalarAffineSelect", Some(62), "62";
    RangeSelect = "RangeSelect", Some(63), "63: RANGE_SELECT.";
    GetSequenceBounds = "GetSequenceBounds", Some(64), "64";
    Dropout = "Dropout", Some(65), "65";
    GetCurProcessingRankId = "GetCurProcessingRankID", Some(66), "66";
    DmaTrigger = "DMATrigger", Some(67), "67";
    DmaDescriptor = "DMADescriptor", Some(68), "68";
    DmaDescriptorCopy = "DMADescriptorCopy", Some(69), "69";
    DmaDescriptorCce = "DMADescriptorCCE", Some(70), "70";
    DmaDescriptorTranspose = "DMADescriptorTranspose", Some(71), "71";
    DmaDescriptorReplicate = "DMADescriptorReplicate", Some(72), "72";
    RegisterAlu = "RegisterAlu", Some(73), "73: ALU_OP.";
    RegisterMove = "RegisterMove", Some(74), "74: MOVE.";
    TensorLoad = "TensorLoad", Some(75), "75";
    TensorSave = "TensorSave", Some(76), "76";
    Terminator = "Terminator", Some(77), "77";
    CompareAndBranch = "CompareAndBranch", Some(78), "78: COMPARE_BRANCH.";
    UnconditionalBranch = "UnconditionalBranch", Some(79), "79";
    BranchHint = "BranchHint", Some(80), "80";
    Return = "Return", Some(81), "81";
    Exit = "Exit", Some(82), "82";
    Break = "Break", Some(83), "83";
    Call = "Call", Some(84), "84";
    SwitchQueueInstance = "SwitchQueueInstance", Some(85), "85";
    ResetQueueInstance = "ResetQueueInstance", Some(86), "86";
    CoreBarrier = "CoreBarrier", Some(87), "87";
    Max = "Max", Some(88), "88: MAX8.";
    MaxIndex = "MaxIndex", Some(89), "89";
    MatchReplace = "MatchReplace", Some(90), "90";
    MaxIndexAndMatchReplace = "MaxIndexAndMatchReplace", Some(91), "91";
    Gather = "Gather", Some(92), "92";
    InlineAsmBytes = "InlineASMBytes", Some(93), "93: opaque bytes.";
    TensorCompletion = "TensorCompletion", Some(94), "94";
    MatmultMx = "MatmultMx", Some(95), "95: LDWEIGHTS_MX + MATMUL_MX.";
    QuantizeMx = "QuantizeMx", Some(96), "96";
    Rand2 = "Rand2", Some(97), "97";
    RandSetState = "RandSetState", Some(98), "98";
    RandGetState = "RandGetState", Some(99), "99";
    Rng = "Rng", Some(100), "100";
    ActivationReadAccumulator = "ActivationReadAccumulator", Some(101), "101";
    DveReadAccumulator = "DveReadAccumulator", Some(102), "102";
    Exponential = "Exponential", Some(103), "103";
    NonzeroWithCount = "NonzeroWithCount", Some(104), "104";
    Loop = "Loop", Some(105), "105: structured loop region.";
    DynamicForLoop = "DynamicForLoop", Some(106), "106: dynamic loop region.";
    DmaBlock = "DMABlock", Some(107), "107: DMA region.";
    DoWhile = "DoWhile", Some(108), "108: do-while region.";
    TongaReduceMacroSymbolic = "TongaReduceMacroSymbolic", Some(109), "109";
    // Lifter classes without a compiler ordinal (project-defined).
    LoadWeights = "LoadWeights", None, "A lone LDWEIGHTS (weights kept in the array).";
    PeRegWrite = "PeRegWrite", None, "PE_REG_WRITE.";
    PeManageSeed = "PeManageSeed", None, "PE_MANAGE_SEED (v4+).";
    Transpose = "Transpose", None, "A transposing copy through the PE array.";
    ActivationQuantize = "ActivationQuantize", None, "ACTIVATE_QUANTIZE.";
    ActivationMultipass = "ActivationMultipass", None, "ACTIVATE_MULTIPASS (v5).";
    Cast = "Cast", None, "CAST (a copy that changes dtype).";
    TensorCumulative = "TensorCumulative", None, "TENSOR_CUMULATIVE_*.";
    CrossLaneReduce = "CrossLaneReduce", None, "CROSS_LANE_REDUCE_*.";
    ScalarTensorTensor = "ScalarTensorTensor", None, "SCALAR_TENSOR_TENSOR_*.";
    TensorTensorScan = "TensorTensorScan", None, "TENSOR_TENSOR_SCAN_ARITH.";
    Sort = "Sort", None, "SORT.";
    SparsityCompress = "SparsityCompress", None, "SPARSITY_COMPRESS(_TAG) (v4+).";
    TensorDequantize = "TensorDequantize", None, "TENSOR_DEQUANTIZE.";
    DmaTranspose = "DMATranspose", None, "DMA_TRANSPOSE / DMA_GATHER_TRANSPOSE (v3+).";
    Wait = "Wait", None, "A semaphore wait (POLL_SEM, TEST_EVENT_SEM).";
    Signal = "Signal", None, "A notification (NOTIFY).";
    AllReduce = "AllReduce", None, "Coarse-grain collective, kind AllReduce.";
    AllGather = "AllGather", None, "Coarse-grain collective, kind AllGather.";
    ReduceScatter = "ReduceScatter", None, "Coarse-grain collective, kind ReduceScatter.";
    AllToAll = "AllToAll", None, "Coarse-grain collective, kind AllToAll.";
    AllToAllV = "AllToAllV", None, "Coarse-grain collective, kind AllToAllV (metadata input).";
    SendRecv = "SendRecv", None, "Coarse-grain collective, kind SendRecv.";
    Permute = "Permute", None, "Coarse-grain collective, kind Permute.";
}

impl InstClass {
    /// Number of classes.
    pub const COUNT: usize = InstClass::ALL.len();

    /// Index into [`InstClass::ALL`].
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Parse a JSON `op` name (also accepts the `Inst` prefix and `Branch` for
    /// `UnconditionalBranch`).
    pub fn parse(s: &str) -> Option<InstClass> {
        let s = s
            .strip_prefix("Inst")
            .filter(|r| !r.is_empty())
            .unwrap_or(s);
        if s == "Branch" {
            return Some(InstClass::UnconditionalBranch);
        }
        InstClass::ALL.iter().copied().find(|c| c.name() == s)
    }

    /// Structured regions whose body blocks the verifier recurses into.
    pub const fn is_region(self) -> bool {
        matches!(
            self,
            InstClass::Loop | InstClass::DynamicForLoop | InstClass::DoWhile | InstClass::DmaBlock
        )
    }

    /// Regions whose trip count is decided at run time: their blocks are dynamic-CFG blocks.
    pub const fn is_dynamic_region(self) -> bool {
        matches!(self, InstClass::DynamicForLoop | InstClass::DoWhile)
    }

    /// Every collective class.
    pub const fn is_collective(self) -> bool {
        matches!(
            self,
            InstClass::Collective
                | InstClass::CollectiveCompute
                | InstClass::CollectiveSend
                | InstClass::CollectiveRecv
        ) || self.coarse_collective_kind().is_some()
    }

    /// The kind a coarse-grain collective class implies.
    pub const fn coarse_collective_kind(self) -> Option<super::CollectiveKind> {
        use super::CollectiveKind as K;
        match self {
            InstClass::AllReduce => Some(K::AllReduce),
            InstClass::AllGather => Some(K::AllGather),
            InstClass::ReduceScatter => Some(K::ReduceScatter),
            InstClass::AllToAll => Some(K::AllToAll),
            InstClass::AllToAllV => Some(K::AllToAllV),
            InstClass::SendRecv => Some(K::SendRecv),
            InstClass::Permute => Some(K::Permute),
            _ => None,
        }
    }

    /// Classes `checkCollectiveCompute` verifies: the fine-grain `CollectiveCompute` and the
    /// coarse-grain kinds.
    pub const fn is_collective_compute(self) -> bool {
        matches!(self, InstClass::CollectiveCompute) || self.coarse_collective_kind().is_some()
    }

    /// Classes that transpose their data (`isTransposeInstruction`): never written in place.
    pub const fn is_transpose(self) -> bool {
        matches!(
            self,
            InstClass::Transpose
                | InstClass::StreamTranspose
                | InstClass::DmaTranspose
                | InstClass::DmaDescriptorTranspose
        )
    }
}

impl fmt::Display for InstClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_ordinals_are_dense() {
        for (i, c) in InstClass::ALL.iter().take(110).enumerate() {
            assert_eq!(c.bir_ordinal(), Some(i as u32), "{c}");
        }
        assert!(InstClass::ALL[110..]
            .iter()
            .all(|c| c.bir_ordinal().is_none()));
        assert_eq!(InstClass::TensorScalarPtr.bir_ordinal(), Some(29));
        assert_eq!(InstClass::CollectiveCompute.bir_ordinal(), Some(48));
        assert_eq!(InstClass::CustomOp.bir_ordinal(), Some(53));
        assert_eq!(InstClass::BnStatsAggregate.bir_ordinal(), Some(35));
    }

    #[test]
    fn names_parse_and_are_unique() {
        let mut names: Vec<&str> = InstClass::ALL.iter().map(|c| c.name()).collect();
        for (i, c) in InstClass::ALL.iter().enumerate() {
            assert_eq!(InstClass::parse(c.name()), Some(*c));
            assert_eq!(c.index(), i);
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), InstClass::COUNT);
        assert_eq!(
            InstClass::parse("InstMatmultMx"),
            Some(InstClass::MatmultMx)
        );
        assert_eq!(
            InstClass::parse("Branch"),
            Some(InstClass::UnconditionalBranch)
        );
        assert_eq!(InstClass::parse("Inst"), None);
        assert_eq!(InstClass::parse("Matmul"), None);
    }
}
