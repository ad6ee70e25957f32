; out[128, 128] = w[256, 128]^T @ x[256, 128] in two K-chunks of 128 rows, accumulated in
; one PSUM bank (0x2000000): the first MATMUL starts the accumulation ({begin=1}), the last
; ends it ({end=1}). LDWEIGHTS loads the stationary chunk of w; MATMUL streams x through it.
; SBUF layout (bf16, per partition): w chunk k at 0x100*k, x chunk k at 0x400 + 0x100*k.
; LDWEIGHTS reads each partition's 128 weights last to first, as the compiler does: the j-th
; element read lands in PE column 127 - j, so column c (PSUM partition c) holds element c. The
; pattern starts at element 127 (byte 0xfe) and steps -1 inside groups of 32, -32 between them.
LDWEIGHTS wait_mode=SEM_GE_IMM wait_idx=1 semaphore_value=2 src=[0xfe step=-1,0,-32 num=32,1,4] in_dtype=BF16 num_active_rows=128 num_active_cols=128 row_grp=15 col_grp=15
MATMUL src=[0x400 step=1,1,1 num=128,1,1] in_dtype=BF16 num_active_rows=128 num_active_cols=128 out_dtype=FP32 psum_accumulate_flags={begin=1} row_grp=15 col_grp=15 dst=[0x2000000 step=1,1,1 num=128,1,1]
LDWEIGHTS src=[0x1fe step=-1,0,-32 num=32,1,4] in_dtype=BF16 num_active_rows=128 num_active_cols=128 row_grp=15 col_grp=15
MATMUL update_mode=SEM_INC_COMPLETE update_idx=3 src=[0x500 step=1,1,1 num=128,1,1] in_dtype=BF16 num_active_rows=128 num_active_cols=128 out_dtype=FP32 psum_accumulate_flags={end=1} row_grp=15 col_grp=15 dst=[0x2000000 step=1,1,1 num=128,1,1]
