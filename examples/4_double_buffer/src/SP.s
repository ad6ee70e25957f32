; Loads tiles 0 and 1, then for each buffer: store its result once DVE is done with it and
; load the next tile into it (SP runs in order, so the load follows the wait above it).
PSEUDO_DMA_TRIGGER in block_id=0;
PSEUDO_DMA_TRIGGER in block_id=1;
PSEUDO_DMA_TRIGGER $S[3]>=1 out block_id=0;
PSEUDO_DMA_TRIGGER in block_id=2;
PSEUDO_DMA_TRIGGER $S[4]>=1 out block_id=1;
PSEUDO_DMA_TRIGGER in block_id=3;
PSEUDO_DMA_TRIGGER $S[3]>=2 out block_id=2;
PSEUDO_DMA_TRIGGER $S[4]>=2 out block_id=3;
