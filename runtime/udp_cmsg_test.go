package uringrt

import (
	"bytes"
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestUDPMultishotControlTruncation: under Config.UDPRecvMultishot,
// ReadMsgUDP into an oob buffer of every length from 0 to past the
// control data (IP_TOS and IP_PKTINFO) returns what Go's *net.UDPConn
// (recvmsg(2)) returns for the same datagram: the same oobn, MSG_CTRUNC,
// bytes, and a prefix syscall.ParseSocketControlMessage parses. Before,
// the ring's bytes were copied raw: a cut message kept its full cmsg_len
// and did not parse.
func TestUDPMultishotControlTruncation(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, UDPRecvMultishot: true})
	pc, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if r, ok := pc.sock.(*ringUDP); !ok || r.ur == nil {
		t.Skip("kernel without multishot recvmsg into a provided buffer ring (6.0+)")
	}
	std := stdPeer(t, "udp4", "127.0.0.1:0")
	for _, c := range []syscall.Conn{pc, std} {
		rc, _ := c.SyscallConn()
		rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		})
	}
	sender := stdPeer(t, "udp4", "127.0.0.1:0")
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	std.SetReadDeadline(time.Now().Add(10 * time.Second))
	// IP_TOS and IP_PKTINFO take 56 bytes with padding: every cut of them,
	// and room to spare.
	const most = 96
	whole := -1 // the shortest oob that took every message
	for size := 0; size <= most; size++ {
		msg := payload(size, 64)
		for _, to := range []net.PacketConn{pc, std} {
			if _, err := sender.WriteToUDP(msg, loopbackTo(to)); err != nil {
				t.Fatal(err)
			}
		}
		type got struct {
			oobn, flags int
			oob         []byte
		}
		read := func(r interface {
			ReadMsgUDP(b, oob []byte) (int, int, int, *net.UDPAddr, error)
		}) got {
			b, oob := make([]byte, 128), make([]byte, size)
			n, oobn, flags, _, err := r.ReadMsgUDP(b, oob)
			if err != nil {
				t.Fatalf("oob %d: %v", size, err)
			}
			if !bytes.Equal(b[:n], msg) {
				t.Fatalf("oob %d: datagram %x, want %x", size, b[:n], msg)
			}
			return got{oobn, flags, oob[:oobn]}
		}
		g, w := read(pc), read(std)
		if g.oobn != w.oobn || g.flags != w.flags || !bytes.Equal(g.oob, w.oob) {
			t.Fatalf("oob buffer of %d bytes: oobn %d flags %#x oob %x; Go's net: oobn %d flags %#x oob %x",
				size, g.oobn, g.flags, g.oob, w.oobn, w.flags, w.oob)
		}
		if _, err := syscall.ParseSocketControlMessage(g.oob); err != nil {
			t.Fatalf("oob buffer of %d bytes: ParseSocketControlMessage(%x): %v", size, g.oob, err)
		}
		if size == 0 && g.flags&unix.MSG_CTRUNC == 0 {
			t.Fatal("no control messages arrived (MSG_CTRUNC unset with no oob room)")
		}
		if whole < 0 && g.flags&unix.MSG_CTRUNC == 0 {
			whole = size
		}
	}
	if whole < 0 {
		t.Fatalf("MSG_CTRUNC set even with %d bytes of oob", most)
	}
	t.Logf("control data takes %d bytes; every oob length 0..%d matches Go's net", whole, most)
}

// FuzzCopyControl: for any run of well-formed control messages and any
// oob room, copyControl's result fits the room, parses with
// syscall.ParseSocketControlMessage, and is the messages' prefix (each
// whole but the last, which may be cut); MSG_CTRUNC is set exactly when
// something was left out.
func FuzzCopyControl(f *testing.F) {
	f.Add([]byte{12, 1, 4}, uint8(20))
	f.Add([]byte{1, 12}, uint8(49))
	f.Add([]byte{0, 7, 200}, uint8(0))
	f.Fuzz(func(t *testing.T, lens []byte, room uint8) {
		var src []byte
		var want []unix.SocketControlMessage
		for i, l := range lens {
			if i == 8 {
				break
			}
			data := bytes.Repeat([]byte{byte(i + 1)}, int(l))
			m := make([]byte, unix.CmsgSpace(len(data)))
			h := (*unix.Cmsghdr)(unsafe.Pointer(&m[0]))
			h.Level, h.Type = unix.IPPROTO_IP, int32(i)
			h.SetLen(unix.CmsgLen(len(data)))
			copy(m[unix.CmsgLen(0):], data)
			src = append(src, m...)
			want = append(want, unix.SocketControlMessage{Header: *h, Data: data})
		}
		dst := make([]byte, room)
		n, trunc := copyControl(dst, src)
		if n > len(dst) {
			t.Fatalf("n = %d > room %d", n, len(dst))
		}
		got, err := unix.ParseSocketControlMessage(dst[:n])
		if err != nil {
			t.Fatalf("ParseSocketControlMessage(%x): %v", dst[:n], err)
		}
		if len(got) > len(want) {
			t.Fatalf("%d messages out of %d", len(got), len(want))
		}
		for i, m := range got {
			cut := i == len(got)-1 && trunc
			if m.Header.Type != want[i].Header.Type || !bytes.HasPrefix(want[i].Data, m.Data) || !cut && len(m.Data) != len(want[i].Data) {
				t.Fatalf("message %d: %+v, want %+v (cut %v)", i, m, want[i], cut)
			}
		}
		if lost := len(got) < len(want) || len(got) > 0 && len(got[len(got)-1].Data) < len(want[len(got)-1].Data); lost != trunc {
			t.Fatalf("trunc %v, but lost anything: %v (%d of %d messages)", trunc, lost, len(got), len(want))
		}
	})
}
