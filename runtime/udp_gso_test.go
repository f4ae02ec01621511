package uringrt

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpSegmentOOB is a UDP_SEGMENT control message asking the kernel (GSO,
// Linux 4.18+) to cut one send into datagrams of size bytes.
func udpSegmentOOB(size uint16) []byte {
	oob := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafePointerOf(oob))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], size)
	return oob
}

// TestUDPGSOAndGRO: WriteMsgUDP passes a UDP_SEGMENT cmsg through, so one
// send leaves as several datagrams; a receiver that set UDP_GRO through
// SyscallConn gets them coalesced by ReadMsgUDP with a UDP_GRO cmsg giving
// the segment size, one that did not gets each datagram. The metrics count
// datagrams by segment.
func TestUDPGSOAndGRO(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1})
	send, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()
	rc, err := send.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var gsoErr error
	rc.Control(func(fd uintptr) { _, gsoErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT) })
	if gsoErr != nil {
		t.Skipf("kernel without UDP GSO: %v", gsoErr)
	}
	const seg, segs = 1000, 3
	msg := make([]byte, seg*segs)
	for i := range msg {
		msg[i] = byte(i / seg)
	}

	plain, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	gro, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer gro.Close()
	grc, _ := gro.SyscallConn()
	var groErr error
	grc.Control(func(fd uintptr) { groErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) })
	if groErr != nil {
		t.Skipf("kernel without UDP GRO: %v", groErr)
	}
	for _, dst := range []*PacketConn{plain, gro} {
		n, oobn, err := send.WriteMsgUDP(msg, udpSegmentOOB(seg), loopbackTo(dst))
		if err != nil || n != len(msg) || oobn != unix.CmsgSpace(2) {
			t.Fatalf("WriteMsgUDP with UDP_SEGMENT: n=%d oobn=%d err=%v", n, oobn, err)
		}
	}

	buf := make([]byte, 65536)
	oob := make([]byte, 128)
	plain.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < segs; i++ {
		n, _, flags, _, err := plain.ReadMsgUDP(buf, oob)
		if err != nil || n != seg || flags != 0 || !bytes.Equal(buf[:n], msg[i*seg:(i+1)*seg]) {
			t.Fatalf("segment %d without GRO: n=%d flags=%#x err=%v", i, n, flags, err)
		}
	}
	gro.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, oobn, _, _, err := gro.ReadMsgUDP(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(msg) || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("GRO read: %d bytes, want the %d coalesced", n, len(msg))
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatal(err)
	}
	var groSize int
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_GRO {
			groSize = int(binary.NativeEndian.Uint32(m.Data))
		}
	}
	if groSize != seg {
		t.Fatalf("UDP_GRO cmsg segment size %d, want %d (cmsgs %+v)", groSize, seg, msgs)
	}

	u := rt.Stats().Loops[0].UDP
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"SentDatagrams", u.SentDatagrams, 2 * segs},
		{"ReceivedDatagrams", u.ReceivedDatagrams, 2 * segs},
		{"SentBytes", u.SentBytes, uint64(2 * len(msg))},
		{"ReceivedBytes", u.ReceivedBytes, uint64(2 * len(msg))},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestUDPMetrics: datagrams, bytes and truncations are counted per
// direction.
func TestUDPMetrics(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1})
	a, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := stdPeer(t, "udp4", "127.0.0.1:0")
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	const count = 10
	for i := 0; i < count; i++ {
		if _, err := a.WriteToUDP(payload(i, 100), loopbackTo(b)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.WriteToUDP(payload(i, 50), loopbackTo(a)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 40) // every datagram in is truncated to 40 bytes
	for i := 0; i < count; i++ {
		if _, _, err := a.ReadFrom(buf); err != nil {
			t.Fatal(err)
		}
	}
	u := rt.Stats().Loops[0].UDP
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"SentDatagrams", u.SentDatagrams, count},
		{"ReceivedDatagrams", u.ReceivedDatagrams, count},
		{"SentBytes", u.SentBytes, count * 100},
		{"ReceivedBytes", u.ReceivedBytes, count * 40},
		{"Truncated", u.Truncated, count},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func unsafePointerOf(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
