; Copy the PSUM result to SBUF (identity, scale 1.0, no bias) for the output DMA.
ACTIVATE wait_mode=SEM_GE_IMM wait_idx=3 update_mode=SEM_INC_COMPLETE update_idx=2 semaphore_value=1 bias_src_n=INSTRUCTION src=[0x2000000 step=1,1,1 num=128,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=128 activation_func=IDENTITY scale_value=1.0 dst=[0x1000 step=1,1,1 num=128,1,1]
