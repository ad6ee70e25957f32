; y = exp(0.5 * x - 1.0) on the activation engine, and s = the row sums of y.
; scale_value=0.5 is the scale (omitted, it would be 0.0: lint act-scale-zero);
; bias_src_n=INSTRUCTION makes `bias` an immediate (omitted, the bias would be read from
; SBUF at address `bias`: lint pointer-unwritten). ZERO_ACCUMULATE zeroes the per-partition
; accumulator and adds every output element to it; ACTIVATION_READ_ACCUMULATOR writes it out.
ACTIVATE wait_mode=SEM_GE_IMM wait_idx=1 semaphore_value=1 accumulator_cmd=ZERO_ACCUMULATE bias_src_n=INSTRUCTION src=[0x0 step=1,1,1 num=512,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=128 activation_func=EXP scale_value=0.5 bias=-1.0 dst=[0x1000 step=1,1,1 num=512,1,1]
ACTIVATION_READ_ACCUMULATOR update_mode=SEM_INC_COMPLETE update_idx=2 dst_element_count=1 dtype=FP32 num_active_partitions=128 dst=[0x2000 step=1 num=1]
