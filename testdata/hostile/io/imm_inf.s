TENSOR_SCALAR_ARITH_OP src=fp32@0x0[1,1,1][256,1,1] dst=fp32@0x800[1,1,1][256,1,1] num_active_partitions=128 op0=MULT imm0=-inf op1=ADD imm1=0.0;
