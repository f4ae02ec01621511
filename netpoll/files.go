package netpoll

// FileTable is a ring's registered file table (fixed files), sparse: slots
// are filled one at a time as descriptors come and cleared as they go, and
// an SQE with SQEFixedFile names the slot instead of the descriptor (no
// fd table look-up, fget/fput, per request). Needs Linux 5.19 for sparse
// registration (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE)
// and 5.13 for IORING_REGISTER_FILES_UPDATE2. Driven by the ring's owner.
type FileTable struct {
	r    *Ring
	size int32
	next int32   // next never-used slot
	free []int32 // released slots
}

// RegisterFileTable registers a sparse table of n slots on r.
func (r *Ring) RegisterFileTable(n uint32) (*FileTable, error) {
	if err := r.RegisterFilesSparse(n); err != nil {
		return nil, err
	}
	return &FileTable{r: r, size: int32(n), free: make([]int32, 0, 64)}, nil
}

// Add puts fd in a free slot and returns the slot, or false when the table
// is full or the update failed (the caller then uses fd itself).
func (t *FileTable) Add(fd int) (int32, bool) {
	var slot int32
	if n := len(t.free); n > 0 {
		slot = t.free[n-1]
		t.free = t.free[:n-1]
	} else if t.next < t.size {
		slot = t.next
		t.next++
	} else {
		return -1, false
	}
	if _, err := t.r.UpdateFiles(uint32(slot), []int32{int32(fd)}); err != nil {
		t.free = append(t.free, slot)
		return -1, false
	}
	return slot, true
}

// Remove clears slot; call it once no request uses the slot.
func (t *FileTable) Remove(slot int32) {
	t.r.UpdateFiles(uint32(slot), []int32{-1})
	t.free = append(t.free, slot)
}
