// The L2 format gates: which validator gate checks which spec formats.
//
// An opcode is gated in a generation when it is present and not dormant there, its format has
// a layout in that generation and a gate below lists the format. Dormant opcodes (`n`) and
// formats no gate lists decode but have no L2 format gate. Generation v5 has no L2 validator;
// the binding is still computed for it so tools can name the gate.

const VAL: &str = "R isa/validator-architecture.md";
const VPA: &str = "R isa/validators-per-arch.md";

/// Every format gate, in the order of the validator roster.
pub const GATES: &[GateDef] = &[
    GateDef { variant: "S3Lw", gate: "is_valid_s3_lw", formats: &["LdWeights"], prov: VPA },
    GateDef { variant: "S3d3Mm", gate: "is_valid_s3d3_mm", formats: &["Matmul"], prov: VPA },
    GateDef { variant: "S4d3Mm", gate: "is_valid_s4d3_mm", formats: &["MatmulSparse"], prov: VPA },
    GateDef { variant: "Smx1Lw", gate: "is_valid_smx1_lw", formats: &["LdWeightsMx"], prov: VPA },
    GateDef { variant: "Smx1d3Mm", gate: "is_valid_smx1d3_mm", formats: &["MatmulMx"], prov: VPA },
    GateDef { variant: "S3dmx1Quant", gate: "is_valid_s3dmx1_quant", formats: &["QuantizeMx"], prov: VPA },
    GateDef { variant: "S3d3Ac", gate: "is_valid_activate", formats: &["Activate"], prov: VAL },
    GateDef { variant: "S3s3d3Tt", gate: "is_valid_s3s3d3_tt", formats: &["TensorTensor"], prov: VAL },
    GateDef { variant: "S3d3Ts", gate: "is_valid_s3d3_ts", formats: &["TensorScalar"], prov: VAL },
    GateDef { variant: "S4d4Tr", gate: "is_valid_s4d4_tr", formats: &["TensorReduce"], prov: VAL },
    GateDef { variant: "S2d2Rs", gate: "is_valid_s2d2_rs", formats: &["RangeSelect"], prov: VPA },
    GateDef { variant: "CtrlEs", gate: "is_valid_ctrl_es", formats: &["EventSemaphore"], prov: VAL },
    GateDef { variant: "S2d2Ac", gate: "is_valid_s2d2_ac", formats: &["Activate2"], prov: VPA },
    GateDef { variant: "S3d3Aq", gate: "is_valid_s3d3_aq", formats: &["ActivateQuantize"], prov: VAL },
    GateDef { variant: "D1Rd", gate: "is_valid_d1_rd", formats: &["ReadAccumulator"], prov: VAL },
    GateDef { variant: "CtrlNo", gate: "is_valid_ctrl_no", formats: &["ActTableLoad", "Notify"], prov: VAL },
    GateDef { variant: "Memset", gate: "is_valid_memset", formats: &["Memset"], prov: VAL },
    GateDef { variant: "Iota", gate: "is_valid_iota", formats: &["Iota"], prov: VAL },
    GateDef { variant: "TensDequant", gate: "is_valid_tensor_dequantize", formats: &["TensorDequantize"], prov: VPA },
    GateDef { variant: "CpPredScalar", gate: "is_valid_s3d3_cp_pred_scalar", formats: &["CopyPredScalar"], prov: VAL },
    GateDef { variant: "SelectReduce", gate: "is_valid_select_reduce", formats: &["SelectReduce"], prov: VAL },
    GateDef { variant: "S2s2d2Stt", gate: "is_valid_s2s2d2_stt", formats: &["ScalarTensorTensor"], prov: VAL },
    GateDef { variant: "S4d4Pl", gate: "is_valid_s4d4_pl", formats: &["Pool"], prov: VAL },
    GateDef { variant: "S3d3TsSelect", gate: "is_valid_s3d3_ts_select", formats: &["TensorScalarSelect"], prov: VAL },
    GateDef { variant: "S2d2TsAs", gate: "is_valid_s2d2_ts_as", formats: &["AffineSelect"], prov: VAL },
    GateDef { variant: "S3Lt", gate: "is_valid_s3_lt", formats: &["LdTags"], prov: VPA },
    GateDef { variant: "PeManageSeed", gate: "is_valid_pe_manage_seed", formats: &["PeManageSeed"], prov: VPA },
    GateDef { variant: "Ctrl", gate: "is_valid_ctrl", formats: &["Control"], prov: VAL },
    GateDef { variant: "Drain", gate: "is_valid_drain", formats: &["Drain"], prov: VAL },
    GateDef { variant: "Write", gate: "is_valid_write", formats: &["Write"], prov: VAL },
    GateDef { variant: "CtrlAl", gate: "is_valid_ctrl_al", formats: &["AluOpInst"], prov: VAL },
    GateDef { variant: "CtrlBr", gate: "is_valid_ctrl_br", formats: &["CompareBranch"], prov: VAL },
    GateDef { variant: "RangeClear", gate: "is_valid_event_semaphore_range_clear", formats: &["EventSemaphoreRangeClear"], prov: VAL },
    GateDef { variant: "DmaDirect2d", gate: "is_valid_dma_direct2d", formats: &["DmaDirect2d"], prov: VAL },
    GateDef { variant: "Pseudo", gate: "is_valid_pseudo", formats: &["DmaTrigger", "LoadActFuncSet", "FunctionBegin", "FunctionCall", "PseudoInst"], prov: VAL },
    GateDef { variant: "Extended", gate: "is_valid_extended", formats: &["Extended"], prov: VAL },
    GateDef { variant: "CoreBarrier", gate: "is_valid_core_barrier", formats: &["CoreBarrier"], prov: "project-defined" },
];
