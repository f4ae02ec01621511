package uringrt

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// TestCallbackSlowReaderEchoWhole: peers that stream 4 MiB and read their
// echo slowly keep the server's send buffers full, so sends complete short
// and the kernel retries them. A retry it makes from an io-wq worker finds
// the nonblocking socket still full and completes with EAGAIN; that is a
// send of 0 bytes to issue again, not a failed connection. Before, the
// connection was closed with "write: resource temporarily unavailable" and
// its unread input made the kernel reset it (under -race, about one round
// in three).
func TestCallbackSlowReaderEchoWhole(t *testing.T) {
	rt := newRT(t, Config{Loops: 1})
	ln := serveCB(t, rt, EchoHandler{})
	for round := 0; round < 4; round++ {
		inParallel(t, 8, func(i int) error {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			msg := pattern(4<<20, byte(i+round))
			werr := streamThenCloseWrite(c, msg)
			// A slow reader: small reads with pauses, so the server's
			// sends keep finding the socket full.
			got := make([]byte, 0, len(msg))
			buf := make([]byte, 16<<10)
			for reads := 1; ; reads++ {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					return fmt.Errorf("round %d conn %d: read %d of %d echoed bytes: %w", round, i, len(got), len(msg), err)
				}
				if reads%32 == 0 {
					time.Sleep(200 * time.Microsecond)
				}
			}
			if err := <-werr; err != nil {
				return err
			}
			if d := firstDiff(got, msg); d >= 0 || len(got) != len(msg) {
				return fmt.Errorf("round %d conn %d: echo of %d bytes differs at %d (got %d)", round, i, len(msg), d, len(got))
			}
			return nil
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("sends and recvs retried after EAGAIN: %d", rt.Stats().Loops[0].RetriedEAGAIN)
}
