package runtime

import (
	"bytes"
	"fmt"
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
