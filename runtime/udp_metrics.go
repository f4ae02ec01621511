package uringrt

import (
	"encoding/binary"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// udpLoop is a loop's UDP state: counters, and the next buffer group id
// for a PacketConn's provided buffer ring (loop-owned).
type udpLoop struct {
	udpStats
	nextBgid uint16
}

// udpStats are one loop's UDP counters, written by the goroutines of its
// PacketConns and read at scrape time. I/O a caller does itself through
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
	if !rt.metrics {
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
	if !rt.metrics {
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

var (
	dUDPInDgrams  = desc("udp_received_datagrams_total", "UDP datagrams received by PacketConns (UDP_GRO-coalesced ones counted by segment).", "loop")
	dUDPOutDgrams = desc("udp_sent_datagrams_total", "UDP datagrams sent by PacketConns (a UDP_SEGMENT send counted by segment).", "loop")
	dUDPInBytes   = desc("udp_received_bytes_total", "UDP payload bytes received by PacketConns.", "loop")
	dUDPOutBytes  = desc("udp_sent_bytes_total", "UDP payload bytes sent by PacketConns.", "loop")
	dUDPTrunc     = desc("udp_truncated_total", "UDP datagrams received longer than the reader's buffer (MSG_TRUNC): the rest was discarded.", "loop")
	dUDPPolled    = desc("udp_poll_waits_total", "PacketConn reads and writes that found EAGAIN at the nonblock try and parked on the loop's poll, by op: read or write.", "loop", "op")
)

// udpCollector exports the loops' udpStats.
type udpCollector struct{ rt *Runtime }

// Describe sends the UDP metrics' descriptors.
func (c udpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dUDPInDgrams, dUDPOutDgrams, dUDPInBytes, dUDPOutBytes, dUDPTrunc, dUDPPolled} {
		ch <- d
	}
}

// Collect reads the loops' UDP counters.
func (c udpCollector) Collect(ch chan<- prometheus.Metric) {
	out := sink(ch)
	for _, l := range c.rt.loops {
		id := strconv.Itoa(l.id)
		s := &l.udp
		out.counter(dUDPInDgrams, s.inDatagrams.Load(), id)
		out.counter(dUDPOutDgrams, s.outDatagrams.Load(), id)
		out.counter(dUDPInBytes, s.inBytes.Load(), id)
		out.counter(dUDPOutBytes, s.outBytes.Load(), id)
		out.counter(dUDPTrunc, s.truncated.Load(), id)
		out.counter(dUDPPolled, s.inPolled.Load(), id, "read")
		out.counter(dUDPPolled, s.outPolled.Load(), id, "write")
	}
}
