package netpoll

import "unsafe"

// Kernel ABI of io_uring, from include/uapi/linux/io_uring.h. Names follow
// the kernel's with the IORING_ prefix dropped and Go casing applied.

// Opcode is an SQE opcode (enum io_uring_op).
type Opcode uint8

// Opcodes used by uringrt. The comment gives the first kernel that has each.
const (
	OpNop           Opcode = 0  // 5.1
	OpReadv         Opcode = 1  // 5.1
	OpWritev        Opcode = 2  // 5.1
	OpPollAdd       Opcode = 6  // 5.1
	OpPollRemove    Opcode = 7  // 5.1
	OpSendmsg       Opcode = 9  // 5.3
	OpRecvmsg       Opcode = 10 // 5.3
	OpTimeout       Opcode = 11 // 5.4
	OpTimeoutRemove Opcode = 12 // 5.5
	OpAccept        Opcode = 13 // 5.5
	OpAsyncCancel   Opcode = 14 // 5.5
	OpLinkTimeout   Opcode = 15 // 5.5
	OpConnect       Opcode = 16 // 5.5
	OpClose         Opcode = 19 // 5.6
	OpRead          Opcode = 22 // 5.6
	OpWrite         Opcode = 23 // 5.6
	OpSend          Opcode = 26 // 5.6
	OpRecv          Opcode = 27 // 5.6
	OpShutdown      Opcode = 34 // 5.11
	OpMsgRing       Opcode = 40 // 5.18
	OpSocket        Opcode = 45 // 5.19
	OpSendZC        Opcode = 47 // 6.0
	opLast          Opcode = 64 // probe buffer size bound
)

var opNames = map[Opcode]string{
	OpNop: "nop", OpReadv: "readv", OpWritev: "writev", OpPollAdd: "poll_add",
	OpPollRemove: "poll_remove", OpSendmsg: "sendmsg", OpRecvmsg: "recvmsg",
	OpTimeout: "timeout", OpTimeoutRemove: "timeout_remove", OpAccept: "accept",
	OpAsyncCancel: "async_cancel", OpLinkTimeout: "link_timeout", OpConnect: "connect",
	OpClose: "close", OpRead: "read", OpWrite: "write", OpSend: "send", OpRecv: "recv",
	OpShutdown: "shutdown", OpMsgRing: "msg_ring", OpSocket: "socket", OpSendZC: "send_zc",
}

// String returns the kernel's lower-case name of the opcode ("recv"), or
// "op(N)" for one this package does not name.
func (o Opcode) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "op(" + itoa(int(o)) + ")"
}

// SetupFlags are io_uring_setup(2) flags (IORING_SETUP_*).
type SetupFlags uint32

// Setup flags. The comment gives the first kernel that accepts each.
const (
	SetupIOPoll       SetupFlags = 1 << 0  // 5.1
	SetupSQPoll       SetupFlags = 1 << 1  // 5.1 (unprivileged 5.11)
	SetupSQAff        SetupFlags = 1 << 2  // 5.1
	SetupCQSize       SetupFlags = 1 << 3  // 5.5
	SetupClamp        SetupFlags = 1 << 4  // 5.6
	SetupAttachWQ     SetupFlags = 1 << 5  // 5.6
	SetupRDisabled    SetupFlags = 1 << 6  // 5.10
	SetupSubmitAll    SetupFlags = 1 << 7  // 5.18
	SetupCoopTaskrun  SetupFlags = 1 << 8  // 5.19
	SetupTaskrunFlag  SetupFlags = 1 << 9  // 5.19
	SetupSQE128       SetupFlags = 1 << 10 // 5.19
	SetupCQE32        SetupFlags = 1 << 11 // 5.19
	SetupSingleIssuer SetupFlags = 1 << 12 // 6.0
	SetupDeferTaskrun SetupFlags = 1 << 13 // 6.1 (needs SINGLE_ISSUER)
	SetupNoMmap       SetupFlags = 1 << 14 // 6.5
	SetupRegFDOnly    SetupFlags = 1 << 15 // 6.5
	SetupNoSQArray    SetupFlags = 1 << 16 // 6.6
)

var setupNames = []string{"IOPOLL", "SQPOLL", "SQ_AFF", "CQSIZE", "CLAMP", "ATTACH_WQ",
	"R_DISABLED", "SUBMIT_ALL", "COOP_TASKRUN", "TASKRUN_FLAG", "SQE128", "CQE32",
	"SINGLE_ISSUER", "DEFER_TASKRUN", "NO_MMAP", "REGISTERED_FD_ONLY", "NO_SQARRAY"}

// String returns the flags as kernel names joined by "|" ("SINGLE_ISSUER|DEFER_TASKRUN"),
// or "none".
func (f SetupFlags) String() string { return bitNames(uint32(f), setupNames) }

// FeatureFlags are the IORING_FEAT_* bits the kernel reports at setup.
type FeatureFlags uint32

// Feature bits. The comment gives the first kernel that reports each.
const (
	FeatSingleMmap     FeatureFlags = 1 << 0  // 5.4
	FeatNoDrop         FeatureFlags = 1 << 1  // 5.5
	FeatSubmitStable   FeatureFlags = 1 << 2  // 5.5
	FeatRWCurPos       FeatureFlags = 1 << 3  // 5.6
	FeatCurPersonality FeatureFlags = 1 << 4  // 5.6
	FeatFastPoll       FeatureFlags = 1 << 5  // 5.7
	FeatPoll32Bits     FeatureFlags = 1 << 6  // 5.9
	FeatSQPollNonfixed FeatureFlags = 1 << 7  // 5.11
	FeatExtArg         FeatureFlags = 1 << 8  // 5.11
	FeatNativeWorkers  FeatureFlags = 1 << 9  // 5.12
	FeatRsrcTags       FeatureFlags = 1 << 10 // 5.13
	FeatCQESkip        FeatureFlags = 1 << 11 // 5.17
	FeatLinkedFile     FeatureFlags = 1 << 12 // 5.17
	FeatRegRegRing     FeatureFlags = 1 << 13 // 6.3
	FeatRecvSendBundle FeatureFlags = 1 << 14 // 6.10
	FeatMinTimeout     FeatureFlags = 1 << 15 // 6.12
	FeatRWAttr         FeatureFlags = 1 << 16 // 6.14
	FeatNoIOWait       FeatureFlags = 1 << 17 // 6.15
)

var featNames = []string{"SINGLE_MMAP", "NODROP", "SUBMIT_STABLE", "RW_CUR_POS",
	"CUR_PERSONALITY", "FAST_POLL", "POLL_32BITS", "SQPOLL_NONFIXED", "EXT_ARG",
	"NATIVE_WORKERS", "RSRC_TAGS", "CQE_SKIP", "LINKED_FILE", "REG_REG_RING",
	"RECVSEND_BUNDLE", "MIN_TIMEOUT", "RW_ATTR", "NO_IOWAIT"}

// String returns the feature bits as kernel names joined by "|".
func (f FeatureFlags) String() string { return bitNames(uint32(f), featNames) }

// SQE flags (IOSQE_*), set with (*SQE).SetFlags.
const (
	SQEFixedFile      uint8 = 1 << 0 // 5.1: fd is an index into the registered file table
	SQEIODrain        uint8 = 1 << 1 // 5.2
	SQEIOLink         uint8 = 1 << 2 // 5.3: the next SQE starts when this one completes
	SQEIOHardlink     uint8 = 1 << 3 // 5.5
	SQEAsync          uint8 = 1 << 4 // 5.6: force the request to io-wq
	SQEBufferSelect   uint8 = 1 << 5 // 5.7: pick a buffer from the group in BufIndex
	SQECQESkipSuccess uint8 = 1 << 6 // 5.17: post no CQE on success
)

// CQE flags (IORING_CQE_F_*).
const (
	CQEFBuffer       uint32 = 1 << 0 // 5.7: upper 16 bits hold the buffer id
	CQEFMore         uint32 = 1 << 1 // 5.13: the multishot request stays armed
	CQEFSockNonempty uint32 = 1 << 2 // 5.19: the socket had more data after this recv
	CQEFNotif        uint32 = 1 << 3 // 6.0: zero-copy send notification
	CQEFBufMore      uint32 = 1 << 4 // 6.12: incremental buffer not yet consumed
	cqeBufferShift          = 16
)

const (
	enterGetEvents      = 1 << 0
	enterSQWakeup       = 1 << 1
	enterSQWait         = 1 << 2
	enterExtArg         = 1 << 3
	enterRegisteredRing = 1 << 4

	sqNeedWakeup = 1 << 0
	sqCQOverflow = 1 << 1
	sqTaskrun    = 1 << 2

	offSQRing   = 0
	offCQRing   = 0x8000000
	offSQEs     = 0x10000000
	offPbufRing = 0x80000000

	// ioprio bits for accept.
	acceptMultishot = 1 << 0
	// ioprio bits for send/recv.
	recvsendPollFirst = 1 << 0
	recvMultishot     = 1 << 1
	recvsendBundle    = 1 << 4
	// len bits for poll_add.
	pollAddMulti = 1 << 0
	// async_cancel flags.
	cancelAll      = 1 << 0
	cancelFD       = 1 << 1
	cancelAny      = 1 << 2
	cancelUserData = 1 << 4
	// timeout flags.
	timeoutAbs         = 1 << 0
	timeoutEtimeSucc   = 1 << 5
	timeoutMultishot   = 1 << 6
	msgRingData        = 0
	pbufRingIncrement  = 2
	rsrcRegisterSparse = 1 << 0
)

// register opcodes.
const (
	regRegisterFiles     = 2
	regUnregisterFiles   = 3
	regRegisterEventfd   = 4
	regUnregisterEventfd = 5
	regProbe             = 8
	regFiles2            = 13
	regFilesUpdate2      = 14
	regIOWQAff           = 17
	regIOWQUnAff         = 18
	regIOWQMaxWorkers    = 19
	regRingFDs           = 20
	regUnRingFDs         = 21
	regPbufRing          = 22
	regUnPbufRing        = 23
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// SQE is one submission queue entry (struct io_uring_sqe, 64 bytes). It is
// written in place in the mmapped SQ array; fill it with one Prep method and
// optional setters, then submit.
type SQE struct {
	Opcode      Opcode
	Flags       uint8
	IOPrio      uint16
	FD          int32
	Off         uint64 // off / addr2
	Addr        uint64 // addr / splice_off_in
	Len         uint32
	OpFlags     uint32 // rw_flags, msg_flags, poll32_events, accept_flags, cancel_flags, ...
	UserData    uint64
	BufIndex    uint16 // buf_index / buf_group
	Personality uint16
	FileIndex   int32 // splice_fd_in / file_index / addr_len
	Addr3       uint64
	pad2        uint64
}

// CQE is one completion queue entry (struct io_uring_cqe, 16 bytes): the
// request's user_data, its result (>= 0, or -errno) and IORING_CQE_F_* flags.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// More reports IORING_CQE_F_MORE: a multishot request stays armed and will
// post more CQEs. Needs Linux 5.13+.
func (c *CQE) More() bool { return c.Flags&CQEFMore != 0 }

// BufferID returns the provided buffer's id and true when the CQE carries
// IORING_CQE_F_BUFFER (a buffer-select recv consumed one). Needs Linux 5.7+.
func (c *CQE) BufferID() (uint16, bool) {
	return uint16(c.Flags >> cqeBufferShift), c.Flags&CQEFBuffer != 0
}

// SockNonempty reports IORING_CQE_F_SOCK_NONEMPTY: the socket still held data
// after this recv. Needs Linux 5.19+.
func (c *CQE) SockNonempty() bool { return c.Flags&CQEFSockNonempty != 0 }

// Notif reports IORING_CQE_F_NOTIF (zero-copy send notification). Linux 6.0+.
func (c *CQE) Notif() bool { return c.Flags&CQEFNotif != 0 }

type probeHdr struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
}

type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

type rsrcRegister struct {
	nr    uint32
	flags uint32
	resv2 uint64
	data  uint64
	tags  uint64
}

type rsrcUpdate2 struct {
	offset uint32
	resv   uint32
	data   uint64
	tags   uint64
	nr     uint32
	resv2  uint32
}

type getEventsArg struct {
	sigmask     uint64
	sigmaskSz   uint32
	minWaitUsec uint32 // 6.12+: FEAT_MIN_TIMEOUT (was pad)
	ts          uint64
}

type ringFDUpdate struct {
	offset uint32
	resv   uint32
	data   uint64
}

// Timespec is struct __kernel_timespec, the argument of timeout ops.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// compile-time ABI size checks.
var (
	_ [64 - unsafe.Sizeof(SQE{})]byte
	_ [unsafe.Sizeof(SQE{}) - 64]byte
	_ [16 - unsafe.Sizeof(CQE{})]byte
	_ [120 - unsafe.Sizeof(params{})]byte
	_ [unsafe.Sizeof(params{}) - 120]byte
	_ [40 - unsafe.Sizeof(bufReg{})]byte
	_ [24 - unsafe.Sizeof(getEventsArg{})]byte
	_ [32 - unsafe.Sizeof(rsrcRegister{})]byte
	_ [32 - unsafe.Sizeof(rsrcUpdate2{})]byte
)

func bitNames(v uint32, names []string) string {
	if v == 0 {
		return "none"
	}
	s := ""
	for i := 0; i < 32; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		n := "bit" + itoa(i)
		if i < len(names) {
			n = names[i]
		}
		if s != "" {
			s += "|"
		}
		s += n
	}
	return s
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b [20]byte
	p := len(b)
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}
