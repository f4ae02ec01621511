package netpoll

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func (r *Ring) register(op string, opcode uint32, arg unsafe.Pointer, nrArgs uint32) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uintptr(opcode), uintptr(arg), uintptr(nrArgs), 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		case syscall.EINVAL, syscall.EOPNOTSUPP, syscall.ENOSYS:
			return 0, unsupportedError("register "+op, errno, "")
		default:
			return 0, newError("register "+op, errno)
		}
	}
}

// Probe returns the set of opcodes this kernel supports
// (IORING_REGISTER_PROBE, 5.6+). Before 5.6 it returns an error that
// matches errors.ErrUnsupported.
func (r *Ring) Probe() (OpSet, error) {
	var buf [unsafe.Sizeof(probeHdr{}) + uintptr(opLast)*unsafe.Sizeof(probeOp{})]byte
	if _, err := r.register("PROBE", regProbe, unsafe.Pointer(&buf[0]), uint32(opLast)); err != nil {
		return OpSet{}, err
	}
	hdr := (*probeHdr)(unsafe.Pointer(&buf[0]))
	ops := unsafe.Slice((*probeOp)(unsafe.Add(unsafe.Pointer(&buf[0]), unsafe.Sizeof(probeHdr{}))), opLast)
	var set OpSet
	for i := 0; i < int(hdr.opsLen) && i < len(ops); i++ {
		if ops[i].flags&1 != 0 { // IO_URING_OP_SUPPORTED
			set.add(Opcode(ops[i].op))
		}
	}
	set.Last = Opcode(hdr.lastOp)
	return set, nil
}

// OpSet is a set of opcodes, as reported by Probe.
type OpSet struct {
	bits [4]uint64
	// Last is the highest opcode the kernel knows.
	Last Opcode
}

func (s *OpSet) add(op Opcode) { s.bits[op/64] |= 1 << (op % 64) }

// Has reports whether op is supported.
func (s OpSet) Has(op Opcode) bool { return s.bits[op/64]&(1<<(op%64)) != 0 }

// RegisterFilesSparse registers a table of n empty fixed-file slots
// (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, 5.19+), to be
// filled with UpdateFiles and addressed with SQEFixedFile.
func (r *Ring) RegisterFilesSparse(n uint32) error {
	rr := rsrcRegister{nr: n, flags: rsrcRegisterSparse}
	_, err := r.register("FILES2 sparse", regFiles2, unsafe.Pointer(&rr), uint32(unsafe.Sizeof(rr)))
	return err
}

// UpdateFiles sets fixed-file slots off, off+1, ... to fds (-1 clears a
// slot), with IORING_REGISTER_FILES_UPDATE2 (5.13+). It returns how many
// slots were updated.
func (r *Ring) UpdateFiles(off uint32, fds []int32) (int, error) {
	if len(fds) == 0 {
		return 0, nil
	}
	up := rsrcUpdate2{offset: off, data: uint64(uintptr(unsafe.Pointer(&fds[0]))), nr: uint32(len(fds))}
	return r.register("FILES_UPDATE2", regFilesUpdate2, unsafe.Pointer(&up), uint32(unsafe.Sizeof(up)))
}

// UnregisterFiles drops the fixed-file table (5.1+).
func (r *Ring) UnregisterFiles() error {
	_, err := r.register("UNREGISTER_FILES", regUnregisterFiles, nil, 0)
	return err
}

// IOWQMaxWorkers sets the maximum number of io-wq workers per NUMA node for
// bounded (regular file and block I/O) and unbounded (socket and other
// pollable-forced, e.g. IOSQE_ASYNC) work with
// IORING_REGISTER_IOWQ_MAX_WORKERS (5.15+). A 0 leaves that limit as it is.
// It returns the limits in force before the call, so IOWQMaxWorkers(0, 0)
// only reads them.
func (r *Ring) IOWQMaxWorkers(bounded, unbounded uint32) (prevBounded, prevUnbounded uint32, err error) {
	vals := [2]uint32{bounded, unbounded}
	if _, err = r.register("IOWQ_MAX_WORKERS", regIOWQMaxWorkers, unsafe.Pointer(&vals[0]), 2); err != nil {
		return 0, 0, err
	}
	return vals[0], vals[1], nil
}

// SetIOWQAffinity pins this ring's io-wq workers to cpus
// (IORING_REGISTER_IOWQ_AFF, 5.14+). An empty set removes the pinning.
func (r *Ring) SetIOWQAffinity(cpus *unix.CPUSet) error {
	if cpus == nil || cpus.Count() == 0 {
		_, err := r.register("UNREGISTER_IOWQ_AFF", regIOWQUnAff, nil, 0)
		return err
	}
	_, err := r.register("IOWQ_AFF", regIOWQAff, unsafe.Pointer(cpus), uint32(unsafe.Sizeof(*cpus)))
	return err
}

// RegisterEventfd makes the kernel signal eventfd efd on every posted CQE
// (IORING_REGISTER_EVENTFD, 5.2+).
func (r *Ring) RegisterEventfd(efd int) error {
	fd := int32(efd)
	_, err := r.register("EVENTFD", regRegisterEventfd, unsafe.Pointer(&fd), 1)
	return err
}

// UnregisterEventfd removes the eventfd registered with RegisterEventfd.
func (r *Ring) UnregisterEventfd() error {
	_, err := r.register("UNREGISTER_EVENTFD", regUnregisterEventfd, nil, 0)
	return err
}

// RegisterRingFD registers the ring's own fd with the kernel
// (IORING_REGISTER_RING_FDS, 5.18+), so every later enter skips the fd
// table look-up (IORING_ENTER_REGISTERED_RING). Call it on the ring's
// goroutine: the registration belongs to the calling thread's task.
func (r *Ring) RegisterRingFD() error {
	up := ringFDUpdate{offset: ^uint32(0), data: uint64(r.fd)}
	if _, err := r.register("RING_FDS", regRingFDs, unsafe.Pointer(&up), 1); err != nil {
		return err
	}
	r.enterFD = int(up.offset)
	r.enterFlg |= enterRegisteredRing
	return nil
}
