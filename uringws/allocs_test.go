package uringws

import (
	"testing"
)

type nopSink struct{}

func (nopSink) onMessage(MessageType, []byte)        {}
func (nopSink) onControl(byte, []byte) (bool, error) { return false, nil }

// The receive path allocates nothing per message: the frame is unmasked
// in place and delivered from the input.
func TestReadPathAllocs(t *testing.T) {
	frame := clientFrame(true, 0, opText, testKey, make([]byte, 1024))
	buf := make([]byte, len(frame))
	r := &reader{maxMsg: 1 << 20}
	if a := testing.AllocsPerRun(1000, func() {
		copy(buf, frame)
		if n, err := r.feed(nopSink{}, buf); err != nil || n != len(buf) {
			t.Fatal(n, err)
		}
	}); a != 0 {
		t.Fatalf("%v allocations per message read", a)
	}
}

// An echo's write from the connection's own callback allocates nothing.
func TestEchoWriteAllocs(t *testing.T) {
	res := make(chan float64, 1)
	u := &Upgrader{}
	h := HandlerFuncs{Message: func(c *Conn, mt MessageType, data []byte) {
		c.WriteMessage(mt, data) // warm the pool
		res <- testing.AllocsPerRun(200, func() { c.WriteMessage(mt, data) })
	}}
	s := serveOne(t, "uringhttp", upgradeHandler(u, h))
	rc := dialRaw(t, s.addr, "")
	rc.send(clientFrame(true, 0, opBinary, testKey, make([]byte, 1024)))
	if a := <-res; a >= 1 {
		t.Fatalf("%v allocations per echoed message", a)
	}
}
