package uringws

import (
	"bytes"
	"compress/flate"
	"runtime"
	"testing"
)

// gibBomb is a raw deflate stream of about 1 MiB that inflates to 1 GiB
// of zeros: the compressor's output for 1 MiB of zeros after a flush is
// the same each time, so it is made once and repeated (deflate cannot do
// better than about 1:1000).
func gibBomb(t *testing.T) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	z := make([]byte, 1<<20)
	var chunks [3][]byte
	for i := range chunks {
		start := buf.Len()
		w.Write(z)
		w.Flush()
		chunks[i] = append([]byte(nil), buf.Bytes()[start:]...)
	}
	if !bytes.Equal(chunks[1], chunks[2]) {
		t.Fatal("the compressor's flushed output for zeros is not periodic")
	}
	out := chunks[0]
	for i := 1; i < 1024; i++ {
		out = append(out, chunks[1]...)
	}
	// permessage-deflate strips the flush marker the receiver adds back.
	return bytes.TrimSuffix(out, []byte{0, 0, 0xff, 0xff})
}

// TestAttackDeflateBombGiB: a 1 MiB compressed message that inflates to
// 1 GiB closes with 1009 at the 4 MiB default limit without inflating
// more than the limit, on every path; sent where compression was not
// negotiated, its RSV1 closes with 1002 before any inflating.
func TestAttackDeflateBombGiB(t *testing.T) {
	bomb := clientFrame(true, rsv1Bit, opBinary, testKey, gibBomb(t))
	const offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
	log := newCloseLog()
	for _, negotiated := range []bool{true, false} {
		u := &Upgrader{EnableCompression: negotiated}
		want := CloseMessageTooBig
		if !negotiated {
			want = CloseProtocolError
		}
		for _, s := range serveAll(t, upgradeHandler(u, log.handler())) {
			rc := dialRaw(t, s.addr, offer)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			if negotiated {
				rc.send(bomb)
			} else {
				// Refused at its header: more would be unread input,
				// whose close is a reset that may beat the close frame.
				rc.send(bomb[:1024])
			}
			if code := rc.expectClose(); code != want {
				t.Fatalf("%s negotiated=%v: bomb answered %d, want %d", s.name, negotiated, code, want)
			}
			log.wait(t, s.name)
			runtime.ReadMemStats(&m1)
			grew := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%s negotiated=%v: %d-byte bomb allocated %d bytes", s.name, negotiated, len(bomb), grew)
			if grew > 64<<20 {
				t.Errorf("%s negotiated=%v: a 1 GiB bomb allocated %d bytes, want far under 1 GiB", s.name, negotiated, grew)
			}
		}
	}
}
