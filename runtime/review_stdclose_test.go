package uringrt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reviewBackends are the backends the callback API's close races run on.
var reviewBackends = []struct {
	name    string
	backend Backend
}{{"std", BackendStd}, {"uring", BackendUring}}

const tornRecord = 1024

// tornCheck reads r to its end and reports the first record of got that is
// not one whole writer's record (each is tornRecord bytes: writer id and
// sequence, then that id repeated), and the bytes read.
func tornCheck(r io.Reader) (int, error) {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, r)
	if err != nil {
		return int(n), fmt.Errorf("read: %v", err)
	}
	b := buf.Bytes()
	if len(b)%tornRecord != 0 {
		return len(b), fmt.Errorf("got %d bytes: not whole %d-byte writes", len(b), tornRecord)
	}
	for i := 0; i < len(b); i += tornRecord {
		r := b[i : i+tornRecord]
		id := r[0]
		for j := 8; j < tornRecord; j++ {
			if r[j] != id {
				return len(b), fmt.Errorf("record at %d is torn (writer %d, byte %d is %d)", i, id, j, r[j])
			}
		}
	}
	return len(b), nil
}

// TestReviewWritersRacingClose: several goroutines write 1 KiB records to
// a callback connection while another goroutine closes it; the peer reads
// in small pieces, so writes wait on a full socket when the Close comes. Every
// Write is all or nothing: the peer gets whole records only (BackendStd's
// Close cut the Write in progress: a peer got megabytes that were not
// whole writes).
func TestReviewWritersRacingClose(t *testing.T) {
	for _, b := range reviewBackends {
		t.Run(b.name, func(t *testing.T) {
			rt := newRT(t, Config{Loops: 1, Backend: b.backend})
			conns := make(chan *CallbackConn, 1)
			ln := serveCB(t, rt, HandlerFuncs{Open: func(c *CallbackConn) { conns <- c }})
			deadline := time.Now().Add(20 * time.Second)
			for round := 0; round < 10 && time.Now().Before(deadline); round++ {
				peer, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				c := <-conns
				var wg sync.WaitGroup
				var wrote atomic.Int64
				for w := 1; w <= 4; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rec := bytes.Repeat([]byte{byte(w)}, tornRecord)
						for seq := uint32(0); seq < 16384; seq++ {
							binary.LittleEndian.PutUint32(rec[4:], seq)
							n, err := c.Write(rec)
							for err == ErrWriteBufferFull {
								time.Sleep(time.Millisecond)
								n, err = c.Write(rec)
							}
							if err != nil {
								if n != 0 {
									t.Errorf("Write failed after %d of %d bytes: %v", n, len(rec), err)
								}
								return
							}
							if n == len(rec) {
								wrote.Add(1)
							}
						}
					}()
				}
				go func() {
					// Close while the writers wait on the socket, which
					// the peer drains in odd-sized reads (so a Write may
					// find room for part of its record).
					for wrote.Load() < int64(4096+64*round) {
						time.Sleep(time.Millisecond)
					}
					c.Close()
				}()
				peer.SetReadDeadline(time.Now().Add(15 * time.Second))
				_, err = tornCheck(oddReader{peer})
				wg.Wait()
				peer.Close()
				if err != nil {
					t.Fatalf("round %d: %v (%d records written)", round, err, wrote.Load())
				}
			}
		})
	}
}

// oddReader reads 1000 bytes at a time.
type oddReader struct{ r io.Reader }

func (o oddReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1000)]) }
