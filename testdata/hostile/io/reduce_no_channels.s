TENSOR_REDUCE_ARITH_OP src=fp32@0x0[1,1,1,1][256,1,1,1] dst=fp32@0x800[1,1,1,1][1,1,1,1] op=ADD op_dim=X;
