package netpoll

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufRing is a provided buffer ring (IORING_REGISTER_PBUF_RING, 5.19+):
// Count buffers of Size bytes each, registered as buffer group ID. A recv
// with buffer select takes one; its CQE names it by id; the caller reads
// the data and gives the buffer back with Recycle (batched; published by
// Advance or Commit).
//
// The ring and the buffers live in anonymous mmaps, outside Go's heap: the GC
// never frees, moves or reuses them while the kernel holds them. Close
// unregisters the group and unmaps both.
type BufRing struct {
	ring    *Ring
	bgid    uint16
	entries uint32 // power of two
	mask    uint32
	size    uint32
	mem     []byte // ring of struct io_uring_buf
	bufs    []byte // entries*size bytes
	tail    *uint16
	local   uint16   // tail not yet published
	inc     bool     // IOU_PBUF_RING_INC: buffers consumed incrementally
	off     []uint32 // inc: bytes of each buffer already delivered
	// The ring's contents as last written, for bundles (Bundle): the
	// buffer id in each ring slot, and the ring position (free-running,
	// like local) each buffer id was last written at.
	slotID []uint16
	idPos  []uint16
}

// BufRingIncremental asks RegisterBufRingFlags for a ring whose buffers the
// kernel consumes incrementally (IOU_PBUF_RING_INC, Linux 6.12+): a recv
// takes only the bytes it needs from the head buffer, the next recv (of any
// socket selecting from the group) continues in the same buffer, and a CQE
// whose buffer still has room carries CQEFBufMore. Large buffers then cost
// no more memory for small messages, and a stream fills them whole.
// A CQE whose buffer the kernel keeps using carries CQEFBufMore: the buffer
// must not be recycled yet.
const BufRingIncremental = pbufRingIncrement

// RegisterBufRing creates a buffer ring of count buffers of size bytes each
// as group bgid and hands every buffer to the kernel. count must be a power
// of two between 1 and 32768. Errors: EINVAL (ErrUnsupported before 5.19),
// EEXIST when bgid is taken, ENOMEM.
func (r *Ring) RegisterBufRing(bgid uint16, count, size uint32) (*BufRing, error) {
	return r.RegisterBufRingFlags(bgid, count, size, 0)
}

// RegisterBufRingFlags is RegisterBufRing with registration flags: 0 or
// BufRingIncremental (EINVAL before Linux 6.12).
func (r *Ring) RegisterBufRingFlags(bgid uint16, count, size uint32, flags uint16) (*BufRing, error) {
	if count == 0 || count > 32768 || count&(count-1) != 0 || size == 0 {
		return nil, &Error{Op: "register PBUF_RING", Err: syscall.EINVAL, Detail: "count must be a power of two in 1..32768 and size > 0"}
	}
	mem, err := unix.Mmap(-1, 0, int(count)*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, newError("mmap buffer ring", err.(syscall.Errno))
	}
	bufs, err := unix.Mmap(-1, 0, int(count)*int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Munmap(mem)
		return nil, newError("mmap buffers", err.(syscall.Errno))
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: count, bgid: bgid, flags: flags}
	if _, err := r.register("PBUF_RING", regPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		unix.Munmap(mem)
		unix.Munmap(bufs)
		return nil, err
	}
	b := &BufRing{ring: r, bgid: bgid, entries: count, mask: count - 1, size: size, mem: mem, bufs: bufs,
		tail: (*uint16)(unsafe.Pointer(&mem[14])), slotID: make([]uint16, count), idPos: make([]uint16, count)}
	if flags&BufRingIncremental != 0 {
		b.inc = true
		b.off = make([]uint32, count)
	}
	for i := uint32(0); i < count; i++ {
		b.Recycle(uint16(i))
	}
	b.Commit()
	return b, nil
}

// Group returns the buffer group id to pass to PrepRecvSelect/Multishot.
func (b *BufRing) Group() uint16 { return b.bgid }

// Size returns each buffer's size in bytes; Count the number of buffers.
func (b *BufRing) Size() uint32 { return b.size }

// Count returns the number of buffers.
func (b *BufRing) Count() uint32 { return b.entries }

// Buf returns the first n bytes of buffer id: the data a CQE with that
// buffer id delivered (n = CQE.Res). The slice aliases kernel-provided
// memory: it is valid until the buffer is recycled.
func (b *BufRing) Buf(id uint16, n int) []byte {
	off := int(id) * int(b.size)
	return b.bufs[off : off+n : off+int(b.size)]
}

// Incremental reports whether the kernel consumes the buffers
// incrementally (BufRingIncremental).
func (b *BufRing) Incremental() bool { return b.inc }

// Take returns the n bytes (n = CQE.Res) that a CQE with buffer id and CQE
// flags cqeFlags delivered, and whether the kernel is done with the buffer
// (recycle it once the data is used). In an incremental ring the data
// starts where the buffer's previous CQE ended, and the buffer stays the
// kernel's while cqeFlags has CQEFBufMore; otherwise Take is Buf and done
// is always true. The slice is valid until the buffer is recycled.
func (b *BufRing) Take(id uint16, n int, cqeFlags uint32) (data []byte, done bool) {
	if !b.inc {
		return b.Buf(id, n), true
	}
	start := int(id)*int(b.size) + int(b.off[id])
	end := start + n
	if cqeFlags&CQEFBufMore != 0 {
		b.off[id] += uint32(n)
	} else {
		b.off[id] = 0
		done = true
	}
	return b.bufs[start:end:end], done
}

// Recycle queues buffer id to be handed back to the kernel; it becomes
// visible to the kernel at the next Commit.
func (b *BufRing) Recycle(id uint16) {
	e := unsafe.Add(unsafe.Pointer(&b.mem[0]), uintptr(b.local&uint16(b.mask))*16)
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&b.bufs[int(id)*int(b.size)])))
	*(*uint32)(unsafe.Add(e, 8)) = b.size
	*(*uint16)(unsafe.Add(e, 12)) = id
	b.slotID[b.local&uint16(b.mask)] = id
	b.idPos[id] = b.local
	b.local++
}

// BundleBuf is one provided buffer of a bundle CQE: its id and how many
// bytes of the CQE's data it holds (see Bundle).
type BundleBuf struct {
	ID  uint16
	Len int
}

// Bundle appends to dst the buffers a bundle CQE filled, in order
// (IORING_RECVSEND_BUNDLE, Linux 6.10+, on a whole-buffer ring): first is
// the CQE's buffer id and n its byte count (CQE.Res > 0). The kernel takes
// a bundle's buffers from consecutive ring slots, starting at the one first
// was written to, and fills each up to the length in its ring entry, so the
// ids come from this ring's record of what each slot holds (whatever order
// the buffers were recycled in) and each buffer's share of the bytes from
// its entry. An entry's length is normally Size, but a kernel may have cut
// it short (a bundle limited to fewer bytes than the head buffer; kernels
// before "io_uring/kbuf: don't truncate end buffer for bundles" leave the
// cut length in the entry when that recv then consumes nothing), so every
// buffer but the last is not always full. Call it before recycling any of
// them.
func (b *BufRing) Bundle(first uint16, n int, dst []BundleBuf) []BundleBuf {
	pos := b.idPos[first]
	for n > 0 {
		slot := pos & uint16(b.mask)
		l := int(atomic.LoadUint32((*uint32)(unsafe.Add(unsafe.Pointer(&b.mem[0]), uintptr(slot)*16+8))))
		if l <= 0 || l > int(b.size) {
			l = int(b.size)
		}
		l = min(l, n)
		dst = append(dst, BundleBuf{ID: b.slotID[slot], Len: l})
		n -= l
		pos++
	}
	return dst
}

// Contiguous reports whether buffer next follows buffer id in memory (next
// is id+1), so a bundle's data in both, when id is full, reads as one
// slice: Span.
func (b *BufRing) Contiguous(id, next uint16) bool {
	return next == id+1 && uint32(next) < b.entries
}

// Span returns n bytes of data starting at buffer id's first byte, across
// the buffers that follow it in memory (ids id, id+1, ...; see Contiguous).
// n must not run past the last buffer. Valid until those buffers are
// recycled.
func (b *BufRing) Span(id uint16, n int) []byte {
	off := int(id) * int(b.size)
	return b.bufs[off : off+n : off+n]
}

// Commit publishes recycled buffers to the kernel with one release store of
// the ring tail (io_uring_buf_ring_advance).
func (b *BufRing) Commit() {
	// The tail shares its slot with entry 0's resv field; Recycle never
	// writes resv, so the store below is the only writer of it.
	atomicStoreUint16(b.tail, b.local)
}

// Close unregisters the group (IORING_UNREGISTER_PBUF_RING) and unmaps the
// ring and buffers. Requests that may still select from the group must have
// completed first.
func (b *BufRing) Close() error {
	if b.mem == nil {
		return nil
	}
	var err error
	if !b.ring.closed {
		reg := bufReg{bgid: b.bgid}
		_, err = b.ring.register("UNREGISTER_PBUF_RING", regUnPbufRing, unsafe.Pointer(&reg), 1)
	}
	unix.Munmap(b.mem)
	unix.Munmap(b.bufs)
	b.mem, b.bufs = nil, nil
	return err
}

// atomicStoreUint16 is a release store of a 16-bit value: Go's sync/atomic
// has no 16-bit store, so it stores the aligned 32-bit word that holds it
// (the other half, entry 0's bid, is written only by Recycle on this
// goroutine, and the kernel only reads it).
func atomicStoreUint16(p *uint16, v uint16) {
	w := (*uint32)(unsafe.Pointer(uintptr(unsafe.Pointer(p)) &^ 3))
	old := atomic.LoadUint32(w)
	// p is at byte 14 of the entry: the upper half of the word at byte 12.
	atomic.StoreUint32(w, old&0x0000ffff|uint32(v)<<16)
}
