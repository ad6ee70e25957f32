; out = x * 2.5 + 1.0 on the vector engine: 128 partitions x 512 fp32.
; Waits for the input DMA (semaphore 1), then signals SP (semaphore 2).
TENSOR_SCALAR_ARITH_OP wait_mode=SEM_GE_IMM wait_idx=1 semaphore_value=1 update_mode=SEM_INC_COMPLETE update_idx=2 src=[0x0 step=1,1,1 num=512,1,1] in_dtype=FP32 out_dtype=FP32 num_active_partitions=128 op0=MULT imm0=2.5 op1=ADD imm1=1.0 dst=[0x1000 step=1,1,1 num=512,1,1]
