package netpoll

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Params configures New.
type Params struct {
	// Entries is the SQ size in SQEs. The kernel rounds it up to a power of
	// two; 0 means 256. Above the kernel maximum (32768) New fails with
	// EINVAL unless Flags has SetupClamp.
	Entries uint32
	// CQEntries is the CQ size in CQEs; 0 lets the kernel pick 2*Entries.
	CQEntries uint32
	// Flags are the setup flags asked for (SetupSingleIssuer,
	// SetupDeferTaskrun, SetupCoopTaskrun, SetupSQPoll, SetupClamp, ...).
	Flags SetupFlags
	// Fallback, when set, retries setup without flags the kernel rejects,
	// in the order DEFER_TASKRUN -> COOP_TASKRUN|TASKRUN_FLAG -> none
	// (SINGLE_ISSUER is kept while the kernel takes it). The flags that
	// took are reported by (*Ring).Flags.
	Fallback bool
	// SQThreadIdle is how long the SQPOLL kernel thread spins before it
	// sleeps (milliseconds resolution). Used only with SetupSQPoll.
	SQThreadIdle time.Duration
	// SQThreadCPU is the CPU the SQPOLL thread is pinned to when Flags has
	// SetupSQAff.
	SQThreadCPU int
}

// Ring is one io_uring instance: the mmapped SQ, CQ and SQE array.
//
// A Ring is not safe for concurrent use: one goroutine (the loop, locked to
// its OS thread when the ring has SINGLE_ISSUER) prepares SQEs, enters and
// reaps. The zero value is not usable; make one with New.
type Ring struct {
	fd       int
	enterFD  int
	enterFlg uint32
	flags    SetupFlags
	features FeatureFlags
	closed   bool
	// rawMax is the most SQEs an enter submits as a raw system call
	// (SetRawSubmitMax).
	rawMax uint32

	// SQ
	sqHead    *uint32
	sqTail    *uint32
	sqFlags   *uint32
	sqDropped *uint32
	sqMask    uint32
	sqEntries uint32
	sqes      []SQE
	sqeHead   uint32 // local: first SQE not yet published
	sqeTail   uint32 // local: next SQE to hand out

	// CQ
	cqHead     *uint32
	cqTail     *uint32
	cqOverflow *uint32
	cqMask     uint32
	cqEntries  uint32
	cqes       []CQE

	sqMem, cqMem, sqeMem []byte

	arg  getEventsArg
	ts   Timespec
	stat Stats
}

// Stats are counters a ring keeps about itself. They are plain fields owned
// by the ring's goroutine; read them from that goroutine (or after it stopped).
type Stats struct {
	Enters        uint64 // io_uring_enter calls
	SQEsSubmitted uint64 // SQEs the kernel consumed
	CQEsReaped    uint64 // CQEs advanced past by the caller
	CQOverflows   uint64 // times the kernel flagged IORING_SQ_CQ_OVERFLOW (flushed, nothing lost with FEAT_NODROP)
	SQFull        uint64 // GetSQE calls that found no free SQE
	Timeouts      uint64 // waits that ended with ETIME
	Waits         uint64 // enters that could sleep: GETEVENTS with min_complete > 0
}

// New sets up a ring with io_uring_setup(2) and maps its SQ, CQ and SQE
// array (one mapping for SQ and CQ when the kernel offers
// IORING_FEAT_SINGLE_MMAP, 5.4+).
//
// Errors wrap the errno in *Error: EPERM when io_uring is blocked (seccomp,
// kernel.io_uring_disabled=2, or =1 without the io_uring group), ENOSYS when
// the kernel lacks io_uring (before 5.1 or CONFIG_IO_URING=n) or a seccomp
// filter answers ENOSYS (podman's default profile), EINVAL for
// zero or too many entries or rejected flags (errors.ErrUnsupported), ENOMEM
// when locked memory is exhausted.
func New(p Params) (*Ring, error) {
	if p.Entries == 0 {
		p.Entries = 256
	}
	flags := p.Flags
	for {
		r, err := setup(p, flags)
		if err == nil {
			return r, nil
		}
		next, ok := fallbackFlags(flags)
		if !p.Fallback || err.Err != syscall.EINVAL || !ok {
			if err.Err == syscall.EINVAL && flags != 0 {
				err.unsupported = true
				err.Detail = fmt.Sprintf("entries=%d flags=%v: entries must be 1..32768 (or use CLAMP) and the kernel must accept every flag", p.Entries, flags)
			}
			return nil, err
		}
		flags = next
	}
}

// fallbackFlags is one step down the chain DEFER_TASKRUN ->
// COOP_TASKRUN|TASKRUN_FLAG (keeping SINGLE_ISSUER) -> without SINGLE_ISSUER
// -> none of these.
func fallbackFlags(f SetupFlags) (SetupFlags, bool) {
	switch {
	case f&SetupDeferTaskrun != 0:
		return f&^SetupDeferTaskrun | SetupCoopTaskrun | SetupTaskrunFlag, true
	case f&SetupSingleIssuer != 0:
		return f &^ SetupSingleIssuer, true
	case f&(SetupCoopTaskrun|SetupTaskrunFlag) != 0:
		return f &^ (SetupCoopTaskrun | SetupTaskrunFlag), true
	case f&SetupSubmitAll != 0:
		return f &^ SetupSubmitAll, true
	}
	return f, false
}

func setup(p Params, flags SetupFlags) (*Ring, *Error) {
	var prm params
	prm.flags = uint32(flags)
	if p.CQEntries != 0 {
		prm.flags |= uint32(SetupCQSize)
		prm.cqEntries = p.CQEntries
	}
	if flags&SetupSQPoll != 0 {
		prm.sqThreadIdle = uint32(p.SQThreadIdle / time.Millisecond)
		if flags&SetupSQAff != 0 {
			prm.sqThreadCPU = uint32(p.SQThreadCPU)
		}
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(p.Entries), uintptr(unsafe.Pointer(&prm)), 0)
	if errno != 0 {
		e := newError("io_uring_setup", errno)
		switch errno {
		case syscall.EPERM, syscall.EACCES:
			e.Detail = "io_uring is blocked: by the sysctl kernel.io_uring_disabled (0 allows it) or by a seccomp filter (Seccomp: 2 in /proc/self/status)"
		case syscall.ENOSYS:
			e.Detail = "io_uring_setup not implemented: a kernel before 5.1 or built without CONFIG_IO_URING, or a seccomp filter answering ENOSYS (podman's default profile)"
			e.unsupported = true
		case syscall.ENOMEM:
			e.Detail = "locked memory exhausted: raise RLIMIT_MEMLOCK or use fewer/smaller rings"
		}
		return nil, e
	}
	r := &Ring{fd: int(fd), enterFD: int(fd), flags: SetupFlags(prm.flags), features: FeatureFlags(prm.features), rawMax: DefaultRawSubmitMax}
	if err := r.mmap(&prm); err != nil {
		unix.Close(int(fd))
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) *Error {
	sqSize := uintptr(p.sqOff.array) + uintptr(p.sqEntries)*4
	cqSize := uintptr(p.cqOff.cqes) + uintptr(p.cqEntries)*unsafe.Sizeof(CQE{})
	single := r.features&FeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
		cqSize = sqSize
	}
	var err error
	r.sqMem, err = unix.Mmap(r.fd, offSQRing, int(sqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return newError("mmap SQ ring", err.(syscall.Errno))
	}
	if single {
		r.cqMem = r.sqMem
	} else {
		r.cqMem, err = unix.Mmap(r.fd, offCQRing, int(cqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			r.unmap()
			return newError("mmap CQ ring", err.(syscall.Errno))
		}
	}
	r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(uintptr(p.sqEntries)*unsafe.Sizeof(SQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.unmap()
		return newError("mmap SQEs", err.(syscall.Errno))
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqFlags = (*uint32)(unsafe.Add(sq, p.sqOff.flags))
	r.sqDropped = (*uint32)(unsafe.Add(sq, p.sqOff.dropped))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqEntries = *(*uint32)(unsafe.Add(sq, p.sqOff.ringEntries))
	// The index array maps SQ slot i to SQE i once and for all (as liburing
	// does), so publishing SQEs is one tail store.
	if r.flags&SetupNoSQArray == 0 {
		arr := unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), r.sqEntries)
		for i := range arr {
			arr[i] = uint32(i)
		}
	}
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), r.sqEntries)
	r.sqeHead = atomic.LoadUint32(r.sqTail)
	r.sqeTail = r.sqeHead

	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqOverflow = (*uint32)(unsafe.Add(cq, p.cqOff.overflow))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqEntries = *(*uint32)(unsafe.Add(cq, p.cqOff.ringEntries))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.cqOff.cqes)), r.cqEntries)
	return nil
}

func (r *Ring) unmap() {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
		r.sqeMem = nil
	}
	if r.cqMem != nil && &r.cqMem[0] != &r.sqMem[0] {
		unix.Munmap(r.cqMem)
	}
	r.cqMem = nil
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
		r.sqMem = nil
	}
}

// Close unmaps the rings and closes the ring fd. The kernel cancels what is
// still in flight; buffers handed to in-flight requests must stay alive until
// then, so callers cancel and reap first. Close is idempotent.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.unmap()
	if err := unix.Close(r.fd); err != nil {
		return newError("close ring", err.(syscall.Errno))
	}
	return nil
}

// FD returns the ring's file descriptor (for MSG_RING from another ring, or
// an eventfd/epoll watch).
func (r *Ring) FD() int { return r.fd }

// Flags returns the setup flags that took (after any fallback).
func (r *Ring) Flags() SetupFlags { return r.flags }

// FeatureBits returns the IORING_FEAT_* bits the kernel reported at setup.
func (r *Ring) FeatureBits() FeatureFlags { return r.features }

// SQEntries returns the SQ size in SQEs; CQEntries the CQ size in CQEs.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }

// CQEntries returns the CQ size in CQEs.
func (r *Ring) CQEntries() uint32 { return r.cqEntries }

// Stats returns the ring's counters. Call it from the ring's goroutine.
func (r *Ring) Stats() Stats { return r.stat }
