package uringrt

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// TestUDPReadBatch: ReadBatch returns the queued datagrams in order, each
// in its own message with its length and sender, waiting only for the
// first; on both receive paths.
func TestUDPReadBatch(t *testing.T) {
	for _, multishot := range []bool{false, true} {
		t.Run(fmt.Sprintf("multishot=%v", multishot), func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, UDPRecvMultishot: multishot})
			pc, err := rt.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			peer := stdPeer(t, "udp4", "127.0.0.1:0")
			pc.SetReadDeadline(time.Now().Add(10 * time.Second))
			const count = 40
			// The first batch waits for the first datagram.
			go func() {
				time.Sleep(20 * time.Millisecond)
				for i := 0; i < count; i++ {
					peer.WriteToUDP(payload(i, 100+i), loopbackTo(pc))
				}
			}()
			ms := make([]ipv4.Message, 8)
			for i := range ms {
				ms[i].Buffers = [][]byte{make([]byte, 2048)}
				ms[i].OOB = make([]byte, 64)
			}
			got := 0
			for got < count {
				n, err := pc.ReadBatch(ms, 0)
				if err != nil {
					t.Fatalf("after %d datagrams: %v", got, err)
				}
				if n < 1 || n > len(ms) {
					t.Fatalf("ReadBatch returned %d", n)
				}
				for _, m := range ms[:n] {
					if !bytes.Equal(m.Buffers[0][:m.N], payload(got, 100+got)) || m.Flags != 0 || !sameAddr(m.Addr, udpAddrOf(peer)) {
						t.Fatalf("datagram %d: N=%d flags=%#x addr=%v", got, m.N, m.Flags, m.Addr)
					}
					got++
				}
			}
			// With nothing queued, a batch waits until the deadline.
			pc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if n, err := pc.ReadBatch(ms, 0); n != 0 || err == nil {
				t.Fatalf("empty socket: %d, %v; want 0 and a deadline error", n, err)
			}
		})
	}
}

// TestUDPDialAndListenConfig: Dial("udp"), Dialer.DialContext with a
// LocalAddr and ListenConfig.ListenPacket with Control and ReusePort give
// PacketConns; two with ReusePort share a port.
func TestUDPDialAndListenConfig(t *testing.T) {
	rt := newRT(t, Config{Loops: 2})
	var controlled atomic.Int32
	lc := ListenConfig{Runtime: rt, ReusePort: true, Control: func(network, address string, c syscall.RawConn) error {
		controlled.Add(1)
		return nil
	}}
	a, err := lc.ListenPacket(context.Background(), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := lc.ListenPacket(context.Background(), "udp4", a.LocalAddr().String())
	if err != nil {
		t.Fatalf("second ReusePort PacketConn on %v: %v", a.LocalAddr(), err)
	}
	defer b.Close()
	if controlled.Load() != 2 {
		t.Errorf("Control called %d times, want 2", controlled.Load())
	}
	c, err := rt.Dial("udp", a.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*PacketConn); !ok {
		t.Fatalf("Dial(udp) gave %T, want *PacketConn", c)
	}
	local := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0}
	d := Dialer{Runtime: rt, LocalAddr: local}
	c2, err := d.DialContext(context.Background(), "udp4", a.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	// Each dialed socket is a flow; SO_REUSEPORT hashes it to a or b.
	for i, cc := range []net.Conn{c, c2} {
		if _, err := cc.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan byte, 2)
	for _, pc := range []*PacketConn{a, b} {
		go func() {
			pc.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 8)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil || n != 1 {
					return
				}
				got <- buf[0]
			}
		}()
	}
	seen := map[byte]bool{}
	for len(seen) < 2 {
		select {
		case v := <-got:
			seen[v] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("datagrams seen: %v, want both", seen)
		}
	}
}
