package uringrt

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpLoop is a loop's UDP state: counters, and the next buffer group id
// for a PacketConn's provided buffer ring (loop-owned).
type udpLoop struct {
	udpStats
	nextBgid uint16
}

// udpStats are one loop's UDP counters, written by the goroutines of its
// PacketConns and read by Runtime.Stats. I/O a caller does itself through
// SyscallConn (x/net's recvmmsg batches, as quic-go reads) is not seen, so
// not counted.
type udpStats struct {
	_                    [64]byte
	inDatagrams, inBytes atomic.Uint64
	outDatagrams         atomic.Uint64
	outBytes             atomic.Uint64
	truncated            atomic.Uint64
	inPolled, outPolled  atomic.Uint64
	_                    [64]byte
}

// countIn counts one read of n bytes: one datagram, or several coalesced by
// UDP_GRO (their count from the UDP_GRO cmsg's segment size).
func (s *udpStats) countIn(rt *Runtime, n int, oob []byte, rflags int, polled bool) {
	if !rt.metrics.Load() {
		return
	}
	s.inDatagrams.Add(uint64(segments(n, oob, unix.UDP_GRO)))
	s.inBytes.Add(uint64(n))
	if rflags&unix.MSG_TRUNC != 0 {
		s.truncated.Add(1)
	}
	if polled {
		s.inPolled.Add(1)
	}
}

// countOut counts one sendmsg of n bytes: one datagram, or several with a
// UDP_SEGMENT (GSO) cmsg.
func (s *udpStats) countOut(rt *Runtime, n int, oob []byte, polled bool) {
	if !rt.metrics.Load() {
		return
	}
	s.outDatagrams.Add(uint64(segments(n, oob, unix.UDP_SEGMENT)))
	s.outBytes.Add(uint64(n))
	if polled {
		s.outPolled.Add(1)
	}
}

// segments is how many datagrams n bytes are when oob carries a SOL_UDP
// cmsg of type typ (UDP_SEGMENT or UDP_GRO) giving the segment size.
func segments(n int, oob []byte, typ int32) int {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			break
		}
		if h.Level == unix.SOL_UDP && h.Type == typ && l >= unix.CmsgLen(2) {
			data := oob[unix.CmsgLen(0):l]
			var seg int
			if len(data) >= 4 && typ == unix.UDP_GRO {
				seg = int(binary.NativeEndian.Uint32(data))
			} else {
				seg = int(binary.NativeEndian.Uint16(data))
			}
			if seg > 0 && n > 0 {
				return (n + seg - 1) / seg
			}
		}
		oob = oob[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(oob)):]
	}
	return 1
}
