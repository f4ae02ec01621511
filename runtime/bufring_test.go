package uringrt

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"testing"
	"time"
)

// TestCallbackIncrementalBuffers echoes streams through the callback API
// with Config.IncrementalBuffers (IOU_PBUF_RING_INC, 6.12+; whole buffers
// where the kernel refuses it): every byte comes back once and in order,
// in chunks both smaller and larger than one 32 KiB buffer.
func TestCallbackIncrementalBuffers(t *testing.T) {
	rt := newRT(t, Config{Loops: 1, IncrementalBuffers: true})
	addr := echoServer(t, rt, "callback")
	rng := rand.New(rand.NewSource(1))
	for _, size := range []int{1, 100, 4096, 40 << 10, 300 << 10} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		want := make([]byte, size)
		rng.Read(want)
		go c.Write(want)
		got := make([]byte, size)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: echo differs", size)
		}
		c.Close()
	}
}
