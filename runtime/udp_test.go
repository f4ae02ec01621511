package uringrt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// udpConn is what *net.UDPConn and *PacketConn share: the conformance
// scripts below run on either.
type udpConn interface {
	net.PacketConn
	net.Conn
	ReadFromUDP(b []byte) (int, *net.UDPAddr, error)
	WriteToUDP(b []byte, addr *net.UDPAddr) (int, error)
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
	SetReadBuffer(bytes int) error
	SetWriteBuffer(bytes int) error
	SyscallConn() (syscall.RawConn, error)
}

var (
	_ udpConn = (*net.UDPConn)(nil)
	_ udpConn = (*PacketConn)(nil)
)

// udpSide opens sockets for a script: Go's net, or a uringrt runtime.
type udpSide struct {
	name      string
	noRawRead bool // Config.UDPRecvMultishot: SyscallConn's Read is unsupported
	listen    func(network, addr string) (udpConn, error)
	dial      func(network string, raddr *net.UDPAddr) (udpConn, error)
}

func stdUDPSide() udpSide {
	return udpSide{
		name: "std",
		listen: func(network, addr string) (udpConn, error) {
			pc, err := net.ListenPacket(network, addr)
			if err != nil {
				return nil, err
			}
			return pc.(*net.UDPConn), nil
		},
		dial: func(network string, raddr *net.UDPAddr) (udpConn, error) {
			return net.DialUDP(network, nil, raddr)
		},
	}
}

func uringUDPSide(rt *Runtime, name string) udpSide {
	return udpSide{
		name: name,
		listen: func(network, addr string) (udpConn, error) {
			pc, err := rt.ListenPacket(network, addr)
			if err != nil {
				return nil, err
			}
			return pc, nil
		},
		dial: func(network string, raddr *net.UDPAddr) (udpConn, error) {
			pc, err := rt.DialUDP(network, nil, raddr)
			if err != nil {
				return nil, err
			}
			return pc, nil
		},
	}
}

func multishotSide(rt *Runtime) udpSide {
	s := uringUDPSide(rt, "uring-multishot")
	s.noRawRead = true
	return s
}

// udpScript is one conformance script: it drives the socket(s) side opens
// against a peer from Go's net and returns a transcript, which must be the
// same for Go's net and for uringrt.
type udpScript struct {
	name string
	run  func(t *testing.T, s udpSide) []string
}

// describeErr is an error as the transcript records it: what a caller can
// test (Op, Net, errors.Is targets, Timeout) and the cause's text, without
// addresses or ports, which differ between runs.
func describeErr(err error) string {
	if err == nil {
		return "nil"
	}
	var b strings.Builder
	var oe *net.OpError
	if errors.As(err, &oe) {
		fmt.Fprintf(&b, "OpError{op=%s net=%s src=%v addr=%v} ", oe.Op, oe.Net, oe.Source != nil, oe.Addr != nil)
		err2 := oe.Err
		var se *os.SyscallError
		if errors.As(err2, &se) {
			fmt.Fprintf(&b, "syscall=%s errno=%v ", se.Syscall, se.Err)
		} else {
			fmt.Fprintf(&b, "cause=%q ", err2.Error())
		}
	} else {
		fmt.Fprintf(&b, "%T %q ", err, err.Error())
	}
	var ne net.Error
	fmt.Fprintf(&b, "closed=%v deadline=%v timeout=%v", errors.Is(err, net.ErrClosed),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout())
	return b.String()
}

func mustListen(t *testing.T, s udpSide, network, addr string) udpConn {
	t.Helper()
	c, err := s.listen(network, addr)
	if err != nil {
		t.Fatalf("%s: listen %s %s: %v", s.name, network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const udpScriptTimeout = 10 * time.Second

var udpScripts = []udpScript{
	{"boundaries", func(t *testing.T, s udpSide) []string {
		c := mustListen(t, s, "udp4", "127.0.0.1:0")
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		c.SetReadDeadline(time.Now().Add(udpScriptTimeout))
		var out []string
		sizes := []int{0, 1, 100, 1472, 9000, 65507}
		for i, n := range sizes {
			if _, err := peer.WriteToUDP(payload(i, n), loopbackTo(c)); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 65536)
		for i, n := range sizes {
			got, from, err := c.ReadFrom(buf)
			out = append(out, fmt.Sprintf("read %d: n=%d want=%d exact=%v from-peer=%v err=%s",
				i, got, n, bytes.Equal(buf[:got], payload(i, n)), sameAddr(from, udpAddrOf(peer)), describeErr(err)))
		}
		return out
	}},
	{"addr-forms", func(t *testing.T, s udpSide) []string {
		c := mustListen(t, s, "udp", ":0") // dual stack: AF_INET6
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		c.SetReadDeadline(time.Now().Add(udpScriptTimeout))
		var out []string
		buf := make([]byte, 64)
		for i := 0; i < 3; i++ {
			peer.WriteToUDP(payload(i, 8), loopbackTo(c))
		}
		n, a1, err := c.ReadFromUDP(buf)
		out = append(out, fmt.Sprintf("ReadFromUDP n=%d iplen=%d ip=%s port-ok=%v err=%s", n, len(a1.IP), a1.IP, a1.Port == udpAddrOf(peer).Port, describeErr(err)))
		n, ap, err := c.ReadFromUDPAddrPort(buf)
		out = append(out, fmt.Sprintf("ReadFromUDPAddrPort n=%d is4in6=%v addr=%s port-ok=%v err=%s", n, ap.Addr().Is4In6(), ap.Addr(), int(ap.Port()) == udpAddrOf(peer).Port, describeErr(err)))
		n, _, flags, a3, err := c.ReadMsgUDP(buf, nil)
		out = append(out, fmt.Sprintf("ReadMsgUDP n=%d flags=%#x ip=%s err=%s", n, flags, a3.IP, describeErr(err)))
		// Replies to the three address forms reach the peer.
		peer.SetReadDeadline(time.Now().Add(udpScriptTimeout))
		_, err1 := c.WriteToUDP([]byte("a"), a1)
		_, err2 := c.WriteToUDPAddrPort([]byte("b"), ap)
		_, _, err3 := c.WriteMsgUDP([]byte("c"), nil, a3)
		_, err4 := c.WriteTo([]byte("d"), loopbackTo(peer))
		out = append(out, "writes: "+describeErr(err1)+" | "+describeErr(err2)+" | "+describeErr(err3)+" | "+describeErr(err4))
		for i := 0; i < 4; i++ {
			n, err := peer.Read(buf)
			out = append(out, fmt.Sprintf("peer got %q %s", buf[:n], describeErr(err)))
		}
		return out
	}},
	{"truncation", func(t *testing.T, s udpSide) []string {
		c := mustListen(t, s, "udp4", "127.0.0.1:0")
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		c.SetReadDeadline(time.Now().Add(udpScriptTimeout))
		var out []string
		for i := 0; i < 3; i++ {
			peer.WriteToUDP(payload(i, 100), loopbackTo(c))
		}
		small := make([]byte, 10)
		n, _, flags, _, err := c.ReadMsgUDP(small, nil)
		out = append(out, fmt.Sprintf("ReadMsgUDP n=%d trunc=%v prefix-ok=%v err=%s", n, flags&unix.MSG_TRUNC != 0, bytes.Equal(small[:n], payload(0, 100)[:10]), describeErr(err)))
		n, _, err = c.ReadFrom(small)
		out = append(out, fmt.Sprintf("ReadFrom n=%d prefix-ok=%v err=%s", n, bytes.Equal(small[:n], payload(1, 100)[:10]), describeErr(err)))
		big := make([]byte, 200)
		n, _, flags, _, err = c.ReadMsgUDP(big, nil)
		out = append(out, fmt.Sprintf("next datagram whole: n=%d trunc=%v exact=%v err=%s", n, flags&unix.MSG_TRUNC != 0, bytes.Equal(big[:n], payload(2, 100)), describeErr(err)))
		return out
	}},
	{"deadlines", func(t *testing.T, s udpSide) []string {
		c := mustListen(t, s, "udp4", "127.0.0.1:0")
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		var out []string
		buf := make([]byte, 64)
		// start is taken first: taken after SetReadDeadline, a preemption
		// between the two (CI under load: 1.3 ms) made the read look early.
		start := time.Now()
		c.SetReadDeadline(start.Add(30 * time.Millisecond))
		_, _, err := c.ReadFrom(buf)
		out = append(out, "future deadline: "+describeErr(err))
		if d := time.Since(start); d < 30*time.Millisecond || d > udpScriptTimeout {
			t.Errorf("%s: read returned after %v, want about 30ms", s.name, d)
		}
		c.SetReadDeadline(time.Now().Add(-time.Second))
		peer.WriteToUDP([]byte("x"), loopbackTo(c))
		_, _, err = c.ReadFrom(buf)
		out = append(out, "past deadline, data queued: "+describeErr(err))
		_, _, _, _, err = c.ReadMsgUDP(buf, nil)
		out = append(out, "past deadline ReadMsgUDP: "+describeErr(err))
		c.SetReadDeadline(time.Time{})
		c.SetReadDeadline(time.Now().Add(udpScriptTimeout))
		n, _, err := c.ReadFrom(buf)
		out = append(out, fmt.Sprintf("cleared: n=%d %s", n, describeErr(err)))
		// A deadline set while a read is parked wakes it.
		done := make(chan error, 1)
		c.SetReadDeadline(time.Time{})
		go func() {
			_, _, err := c.ReadFrom(buf)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let it park (not needed for correctness)
		c.SetReadDeadline(time.Now())
		select {
		case err := <-done:
			out = append(out, "deadline set while parked: "+describeErr(err))
		case <-time.After(udpScriptTimeout):
			t.Fatalf("%s: a parked read ignored a new deadline", s.name)
		}
		c.SetWriteDeadline(time.Now().Add(-time.Second))
		_, err = c.WriteTo([]byte("x"), loopbackTo(peer))
		out = append(out, "past write deadline: "+describeErr(err))
		return out
	}},
	{"close", func(t *testing.T, s udpSide) []string {
		c := mustListen(t, s, "udp4", "127.0.0.1:0")
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		var out []string
		done := make(chan error, 2)
		go func() {
			_, _, err := c.ReadFrom(make([]byte, 64))
			done <- err
		}()
		rc, err := c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if s.noRawRead {
				_, _, _, _, err := c.ReadMsgUDP(make([]byte, 64), nil)
				done <- err
				return
			}
			// A raw read whose callback never finds data parks too.
			done <- rc.Read(func(fd uintptr) bool { return false })
		}()
		time.Sleep(20 * time.Millisecond) // let them park (not needed for correctness)
		out = append(out, "Close: "+describeErr(c.Close()))
		for i := 0; i < 2; i++ {
			select {
			case err := <-done:
				out = append(out, "blocked read woken: closed="+fmt.Sprint(errors.Is(err, net.ErrClosed)))
			case <-time.After(udpScriptTimeout):
				t.Fatalf("%s: Close did not wake a blocked read", s.name)
			}
		}
		buf := make([]byte, 8)
		_, _, err = c.ReadFrom(buf)
		out = append(out, "ReadFrom after Close: "+describeErr(err))
		_, err = c.WriteTo(buf, loopbackTo(peer))
		out = append(out, "WriteTo after Close: "+describeErr(err))
		_, _, err = c.WriteMsgUDP(buf, nil, loopbackTo(peer))
		out = append(out, "WriteMsgUDP after Close: "+describeErr(err))
		out = append(out, "SetDeadline after Close: "+describeErr(c.SetDeadline(time.Now())))
		out = append(out, "SetReadBuffer after Close: "+describeErr(c.SetReadBuffer(4096)))
		_, err = c.SyscallConn()
		out = append(out, "SyscallConn after Close: "+describeErr(err))
		out = append(out, "raw Control after Close: "+describeErr(rc.Control(func(uintptr) {})))
		out = append(out, "second Close: "+describeErr(c.Close()))
		return out
	}},
	{"burst", func(t *testing.T, s udpSide) []string {
		// Rounds of 64 datagrams of 512 bytes (about 100 KiB of socket
		// buffer with the kernel's overhead, under the 208 KiB default):
		// the reader is parked when each round starts, acknowledges the
		// whole round, and no datagram may be lost or reordered.
		c := mustListen(t, s, "udp4", "127.0.0.1:0")
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		c.SetReadDeadline(time.Now().Add(4 * udpScriptTimeout))
		peer.SetReadDeadline(time.Now().Add(4 * udpScriptTimeout))
		const rounds, per, size = 20, 64, 512
		errc := make(chan error, 1)
		go func() {
			buf := make([]byte, 2048)
			for r := 0; r < rounds; r++ {
				for i := 0; i < per; i++ {
					n, from, err := c.ReadFromUDP(buf)
					if err != nil {
						errc <- err
						return
					}
					seq := r*per + i
					if !bytes.Equal(buf[:n], payload(seq, size)) {
						errc <- fmt.Errorf("datagram %d: got seq %d (%d bytes)", seq, binary.BigEndian.Uint32(buf), n)
						return
					}
					if i == per-1 {
						if _, err := c.WriteToUDP([]byte("ack"), from); err != nil {
							errc <- err
							return
						}
					}
				}
			}
			errc <- nil
		}()
		ack := make([]byte, 8)
		for r := 0; r < rounds; r++ {
			for i := 0; i < per; i++ {
				if _, err := peer.WriteToUDP(payload(r*per+i, size), loopbackTo(c)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := peer.Read(ack); err != nil {
				t.Fatalf("%s: round %d not acknowledged: %v (reader: %v)", s.name, r, err, <-errc)
			}
		}
		return []string{fmt.Sprintf("%d datagrams: %s", rounds*per, describeErr(<-errc))}
	}},
	{"connected", func(t *testing.T, s udpSide) []string {
		peer := stdPeer(t, "udp4", "127.0.0.1:0")
		c, err := s.dial("udp4", loopbackTo(peer))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(udpScriptTimeout))
		peer.SetDeadline(time.Now().Add(udpScriptTimeout))
		var out []string
		out = append(out, fmt.Sprintf("RemoteAddr is peer: %v", sameAddr(c.RemoteAddr(), loopbackTo(peer))))
		n, err := c.Write([]byte("hello"))
		out = append(out, fmt.Sprintf("Write n=%d %s", n, describeErr(err)))
		buf := make([]byte, 64)
		n, from, _ := peer.ReadFromUDP(buf)
		out = append(out, fmt.Sprintf("peer got %q from dialer: %v", buf[:n], sameAddr(from, loopbackTo(c))))
		// A stranger's datagram is dropped by the kernel; the peer's arrives.
		stranger := stdPeer(t, "udp4", "127.0.0.1:0")
		stranger.WriteToUDP([]byte("stranger"), loopbackTo(c))
		peer.WriteToUDP([]byte("reply"), from)
		n, err = c.Read(buf)
		out = append(out, fmt.Sprintf("Read %q %s", buf[:n], describeErr(err)))
		n, err = c.Read(nil)
		out = append(out, fmt.Sprintf("Read(nil) n=%d %s", n, describeErr(err)))
		_, err = c.WriteTo([]byte("x"), loopbackTo(peer))
		out = append(out, "WriteTo on connected: "+describeErr(err)+fmt.Sprintf(" is-ErrWriteToConnected=%v", errors.Is(err, net.ErrWriteToConnected)))
		_, _, err = c.WriteMsgUDP([]byte("m"), nil, nil)
		n, _ = peer.Read(buf)
		out = append(out, fmt.Sprintf("WriteMsgUDP(nil addr) %s; peer got %q", describeErr(err), buf[:n]))
		// The peer goes away: the ICMP port unreachable surfaces as
		// ECONNREFUSED on the next read.
		peer.Close()
		c.Write([]byte("anyone?"))
		_, err = c.Read(buf)
		out = append(out, "read after peer closed: "+describeErr(err)+fmt.Sprintf(" refused=%v", errors.Is(err, syscall.ECONNREFUSED)))
		return out
	}},
	{"write-errors", func(t *testing.T, s udpSide) []string {
		c := mustListen(t, s, "udp4", "127.0.0.1:0")
		var out []string
		_, err := c.WriteTo([]byte("x"), nil)
		out = append(out, "WriteTo(nil): "+describeErr(err))
		_, err = c.WriteToUDP([]byte("x"), nil)
		out = append(out, "WriteToUDP(nil): "+describeErr(err))
		_, err = c.WriteTo([]byte("x"), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
		out = append(out, "WriteTo(TCPAddr): "+describeErr(err))
		_, err = c.WriteToUDP([]byte("x"), &net.UDPAddr{IP: net.IPv6loopback, Port: 9})
		out = append(out, "IPv6 dest on udp4: "+describeErr(err))
		_, err = c.WriteToUDP(make([]byte, 70000), loopbackTo(c))
		out = append(out, "oversize: "+describeErr(err))
		_, err = c.Write([]byte("x"))
		out = append(out, "Write unconnected: "+describeErr(err))
		out = append(out, fmt.Sprintf("RemoteAddr unconnected nil: %v", c.RemoteAddr() == nil))
		return out
	}},
}

// TestUDPConformance runs every script on Go's net and on uringrt (each
// tier whose PacketConn path differs) and requires equal transcripts.
func TestUDPConformance(t *testing.T) {
	sides := []udpSide{
		uringUDPSide(newRT(t, Config{Loops: 1}), "uring"),
		uringUDPSide(newRT(t, Config{Loops: 1, Switches: experiment.Switches{DisableMultishot: true, DisableDeferTaskrun: true}}), "uring-singleshot"),
		uringUDPSide(newRT(t, Config{Loops: 1, Switches: experiment.Switches{Pollable: experiment.PollRing}}), "uring-ring"),
		multishotSide(newRT(t, Config{Loops: 1, UDPRecvMultishot: true})),
		uringUDPSide(newRT(t, Config{Backend: BackendStd}), "backend-std"),
	}
	for _, sc := range udpScripts {
		t.Run(sc.name, func(t *testing.T) {
			want := sc.run(t, stdUDPSide())
			for _, s := range sides {
				got := sc.run(t, s)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s differs from Go's net:\n%s", s.name, diffLines(want, got))
				}
			}
			if testing.Verbose() {
				t.Logf("transcript:\n%s", strings.Join(want, "\n"))
			}
		})
	}
}

// diffLines shows the lines that differ, Go's net's first.
func diffLines(want, got []string) string {
	var b strings.Builder
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			fmt.Fprintf(&b, "  std:    %s\n  uring:  %s\n", w, g)
		}
	}
	return b.String()
}

// TestUDPConcurrentReadWrite: several goroutines send and receive on one
// PacketConn at once (race detector on in CI); every datagram comes back.
func TestUDPConcurrentReadWrite(t *testing.T) {
	rt := newRT(t, Config{Loops: 2})
	srv, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() { // echo
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			srv.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	cli, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cli.SetDeadline(time.Now().Add(30 * time.Second))
	const writers, each = 4, 200
	acks := make([]chan struct{}, writers*each)
	for i := range acks {
		acks[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	seen := make(map[uint32]bool)
	var mu sync.Mutex
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64)
			for {
				n, _, err := cli.ReadFrom(buf)
				if err != nil {
					return
				}
				if n != 8 {
					continue
				}
				seq := binary.BigEndian.Uint32(buf)
				mu.Lock()
				if !seen[seq] && int(seq) < len(acks) {
					seen[seq] = true
					close(acks[seq])
				}
				done := len(seen) == writers*each
				mu.Unlock()
				if done {
					cli.SetReadDeadline(time.Now()) // release the other reader
					return
				}
			}
		}()
	}
	// Each writer waits for its datagram's echo before the next (resending
	// after 200 ms), so the socket buffers never overflow: a loss would be
	// the kernel's, not ours.
	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := 0; i < each; i++ {
				seq := w*each + i
				for try := 0; try < 50; try++ {
					if _, err := cli.WriteTo(payload(seq, 8), srv.LocalAddr()); err != nil {
						t.Error(err)
						return
					}
					select {
					case <-acks[seq]:
					case <-time.After(200 * time.Millisecond):
						continue
					}
					break
				}
			}
		}()
	}
	ww.Wait()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != writers*each {
		t.Fatalf("%d of %d datagrams echoed", len(seen), writers*each)
	}
}

// TestUDPRuntimeCloseClosesPacketConn: Runtime.Close closes its
// PacketConns, waking a parked ReadFrom with net.ErrClosed, and leaves no
// descriptor behind; ListenPacket after Close fails with net.ErrClosed.
func TestUDPRuntimeCloseClosesPacketConn(t *testing.T) {
	for _, multishot := range []bool{false, true} {
		t.Run(fmt.Sprintf("multishot=%v", multishot), func(t *testing.T) {
			before := countFDs(t)
			rt, err := New(Config{Loops: 1, Backend: BackendUring, UDPRecvMultishot: multishot})
			if err != nil {
				t.Fatal(err)
			}
			pc, err := rt.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if multishot && udpRingOf(pc) == nil {
				t.Log("kernel without multishot recvmsg: the nonblock path is tested twice")
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := pc.ReadFrom(make([]byte, 16))
				done <- err
			}()
			time.Sleep(10 * time.Millisecond) // let it park (not needed for correctness)
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("parked ReadFrom after Runtime.Close: %v, want net.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Runtime.Close did not wake a parked ReadFrom")
			}
			if _, err := rt.ListenPacket("udp", "127.0.0.1:0"); !errors.Is(err, net.ErrClosed) {
				t.Errorf("ListenPacket after Close: %v, want net.ErrClosed", err)
			}
			waitFDs(t, before)
		})
	}
}

// TestUDPUnknownNetwork: networks other than udp, udp4, udp6 are refused as
// net.ListenPacket and net.DialUDP refuse them.
func TestUDPUnknownNetwork(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	_, stdErr := net.ListenPacket("sctp", "127.0.0.1:0")
	_, err := rt.ListenPacket("sctp", "127.0.0.1:0")
	if describeErr(err) != describeErr(stdErr) {
		t.Errorf("ListenPacket(sctp): %s, Go's net: %s", describeErr(err), describeErr(stdErr))
	}
	_, stdErr = net.DialUDP("ip4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
	_, err = rt.DialUDP("ip4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
	if describeErr(err) != describeErr(stdErr) {
		t.Errorf("DialUDP(ip4): %s, Go's net: %s", describeErr(err), describeErr(stdErr))
	}
}

// TestUDPMultishotRecvmsg: under Config.UDPRecvMultishot a PacketConn
// receives through its multishot recvmsg and provided buffer ring (the
// conformance scripts run on it too): more datagrams than buffers, sent
// while nobody reads, all arrive in order (the multishot ends with ENOBUFS
// and is re-armed), with their control messages; SyscallConn's Read says
// it is unsupported.
func TestUDPMultishotRecvmsg(t *testing.T) {
	rt := newMetricsRT(t, Config{Loops: 1, UDPRecvMultishot: true})
	pc, err := rt.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if udpRingOf(pc) == nil {
		t.Skip("kernel without multishot recvmsg into a provided buffer ring (6.0+)")
	}
	rc, _ := pc.SyscallConn()
	if err := rc.Read(func(uintptr) bool { return true }); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("RawConn.Read: %v, want errors.ErrUnsupported", err)
	}
	rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1) })
	peer := stdPeer(t, "udp4", "127.0.0.1:0")
	const count = 5 * udpRingBufs
	for i := 0; i < count; i++ {
		if _, err := peer.WriteToUDP(payload(i, 200), loopbackTo(pc)); err != nil {
			t.Fatal(err)
		}
	}
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	oob := make([]byte, 128)
	for i := 0; i < count; i++ {
		n, oobn, flags, from, err := pc.ReadMsgUDP(buf, oob)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], payload(i, 200)) || flags != 0 || !sameAddr(from, udpAddrOf(peer)) {
			t.Fatalf("datagram %d: n=%d seq=%d flags=%#x from=%v", i, n, binary.BigEndian.Uint32(buf), flags, from)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 || msgs[0].Header.Type != unix.IP_PKTINFO {
			t.Fatalf("datagram %d: control messages %v (%v), want IP_PKTINFO", i, msgs, err)
		}
	}
	// 80 datagrams into 16 buffers: the multishot ran out at least once.
	l := rt.Stats().Loops[0]
	if v := l.BufferRingExhausted; v < 1 {
		t.Errorf("BufferRingExhausted = %v, want >= 1", v)
	}
	if v := l.UDP.ReceivedDatagrams; v != count {
		t.Errorf("UDP.ReceivedDatagrams = %v, want %d", v, count)
	}
}
