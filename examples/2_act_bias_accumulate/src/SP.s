; The same handshake in the neuron dialect: `$S[2]>=1` is wait_mode=SEM_GE_IMM wait_idx=2
; semaphore_value=1, and a bare word is the queue name.
PSEUDO_DMA_TRIGGER in block_id=0;
PSEUDO_DMA_TRIGGER $S[2]>=1 out block_id=0;
