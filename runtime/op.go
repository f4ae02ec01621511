package runtime

import (
	"sync/atomic"
	"unsafe"

	"github.com/uringrt/uringrt/netpoll"
)

// opKind says what an in-flight ring request is and who completes it.
type opKind uint8

const (
	opWake     opKind = iota + 1 // read of the loop's eventfd
	opPollIn                     // multishot POLLIN on a netFD (hybrid mode)
	opPollOut                    // one-shot POLLOUT on a netFD (hybrid mode)
	opRecv                       // recv into the caller's buffer (ring/async modes)
	opSend                       // send of the caller's buffer (ring/async modes)
	opCBRecv                     // multishot (or single) recv for a callback conn
	opCBSend                     // send of a callback conn's queued output
	opAcceptCB                   // multishot accept for Serve
	opTimer                      // accept back-off timer
	opUDPRecv                    // multishot recvmsg of a PacketConn (udp_multishot.go)
)

// op is one request the loop has (or will have) in flight. The lifecycle
// is written once here and used by every operation:
//
//	owner fills kind/fd/buf -> loop.post -> loop takes a slot, preps the SQE
//	(user_data = slot) -> CQE(s) -> loop.complete: res/flags stored; the slot
//	is freed when the last CQE (no F_MORE) arrives -> owner woken.
//
// A buffer in buf belongs to the kernel from the SQE until the last CQE;
// the op keeps it reachable and nobody touches it in between. Cancellation
// (deadline, Close) goes through the loop as ASYNC_CANCEL of the slot, and
// the owner still waits for the op's own CQE.
type op struct {
	kind     opKind
	sqeFlags uint8
	armed    bool // loop-owned: in flight
	cancel   bool // loop-owned: a cancel is queued or sent
	slot     uint32
	fd       int
	events   uint32
	buf      []byte
	res      int32
	flags    uint32
	nfd      *netFD        // opPollIn/opPollOut/opRecv/opSend
	cc       *CallbackConn // opCBRecv/opCBSend
	ln       *listener     // opAcceptCB
	ur       *udpRing      // opUDPRecv
	done     chan struct{}
	expired  *atomic.Bool     // deadline passed: complete with ECANCELED instead of arming
	ts       netpoll.Timespec // opTimer's timespec
}

func (o *op) bufPtr() unsafe.Pointer {
	if len(o.buf) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(o.buf))
}

// reqKind is what a posted request asks of the loop.
type reqKind uint8

const (
	reqArm        reqKind = iota + 1 // arm op
	reqCancel                        // cancel op if armed
	reqCloseFD                       // cancel every op on nfd, close its fd when they are done
	reqRegisterCB                    // take a callback conn into the loop
	reqCBWrite                       // queue bytes on a callback conn (from off the loop)
	reqCBClose                       // close a callback conn (from off the loop)
	reqServe                         // start accepting for Serve
	reqStopServe                     // stop accepting for Serve
	reqShutdownCB                    // stop reading callback conns, close them when drained
	reqFunc                          // run fn on the loop
	reqStop                          // cancel everything and exit
)

type request struct {
	kind reqKind
	op   *op
	nfd  *netFD
	cc   *CallbackConn
	ln   *listener
	data []byte
	fn   func()
}
