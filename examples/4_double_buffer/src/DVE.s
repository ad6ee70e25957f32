; out = x * 3.0 - 0.5 over four 128 x 256 fp32 tiles, double-buffered, in the neuron dialect.
; Buffers per partition: in0 0x0, in1 0x400, out0 0x800, out1 0xC00.
; Semaphores: 1/2 = loads into in0/in1 done (DMA), 3/4 = DVE done with in0+out0 / in1+out1,
; 5/6 = stores from out0/out1 done (DMA).
TENSOR_SCALAR_ARITH_OP $S[1]>=1 $S[3]++@complete src=fp32@0x0[1,1,1][256,1,1] dst=fp32@0x800[1,1,1][256,1,1] num_active_partitions=128 op0=MULT imm0=3.0 op1=ADD imm1=-0.5;
TENSOR_SCALAR_ARITH_OP $S[2]>=1 $S[4]++@complete src=fp32@0x400[1,1,1][256,1,1] dst=fp32@0xC00[1,1,1][256,1,1] num_active_partitions=128 op0=MULT imm0=3.0 op1=ADD imm1=-0.5;
; Before overwriting out0, wait until its store (tile 0) has completed: one wait per bundle,
; so the second wait gets a NOP of its own.
NOP $S[5]>=1;
TENSOR_SCALAR_ARITH_OP $S[1]>=2 $S[3]++@complete src=fp32@0x0[1,1,1][256,1,1] dst=fp32@0x800[1,1,1][256,1,1] num_active_partitions=128 op0=MULT imm0=3.0 op1=ADD imm1=-0.5;
NOP $S[6]>=1;
TENSOR_SCALAR_ARITH_OP $S[2]>=2 $S[4]++@complete src=fp32@0x400[1,1,1][256,1,1] dst=fp32@0xC00[1,1,1][256,1,1] num_active_partitions=128 op0=MULT imm0=3.0 op1=ADD imm1=-0.5;
