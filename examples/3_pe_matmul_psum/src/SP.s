; SP issues the DMAs of SP.json: block 0 of queue `in` loads x, block 0 of queue `out`
; stores the result once DVE has signalled semaphore 2.
PSEUDO_DMATRIGGER queue_name="in" block_id=0
PSEUDO_DMATRIGGER wait_mode=SEM_GE_IMM wait_idx=2 semaphore_value=1 queue_name="out" block_id=0
