package uringws

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"testing"
	"time"
)

// closeLog records each connection's OnClose.
type closeLog struct {
	mu    sync.Mutex
	codes []int
	ch    chan int
}

func newCloseLog() *closeLog { return &closeLog{ch: make(chan int, 16)} }

func (l *closeLog) handler() Handler {
	return HandlerFuncs{
		Message: echoHandler.Message,
		Close:   func(c *Conn, code int, reason string) { l.ch <- code },
	}
}

func (l *closeLog) wait(t *testing.T, name string) int {
	t.Helper()
	select {
	case code := <-l.ch:
		return code
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no OnClose", name)
	}
	return 0
}

func TestProtocolViolationsClose(t *testing.T) {
	k := testKey
	tests := []struct {
		name  string
		frame []byte
		code  int
	}{
		{"unmasked", []byte{finBit | opText, 1, 'a'}, CloseProtocolError},
		{"reserved bit", clientFrame(true, 0x10, opText, k, []byte("a")), CloseProtocolError},
		{"opcode 5", clientFrame(true, 0, 5, k, nil), CloseProtocolError},
		{"fragmented ping", clientFrame(false, 0, opPing, k, nil), CloseProtocolError},
		{"long ping", clientFrame(true, 0, opPing, k, make([]byte, 126)), CloseProtocolError},
		{"bad utf8", clientFrame(true, 0, opText, k, []byte{'a', 0xc0, 0xaf}), CloseInvalidFramePayloadData},
		{"too big", clientFrame(true, 0, opBinary, k, make([]byte, 2000)), CloseMessageTooBig},
		{"close code 1005", clientFrame(true, 0, opClose, k, closePayload(1005, "")), CloseProtocolError},
		{"close code 999", clientFrame(true, 0, opClose, k, closePayload(999, "")), CloseProtocolError},
		{"close of 1 byte", clientFrame(true, 0, opClose, k, []byte{3}), CloseProtocolError},
		{"close reason not utf8", clientFrame(true, 0, opClose, k, closePayload(1000, "\xff")), CloseInvalidFramePayloadData},
		{"2^63 length", []byte{finBit | opBinary, maskBit | 127, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, CloseProtocolError},
	}
	log := newCloseLog()
	u := &Upgrader{MaxMessageSize: 1000}
	for _, s := range serveAll(t, upgradeHandler(u, log.handler())) {
		for _, tt := range tests {
			rc := dialRaw(t, s.addr, "")
			rc.send(tt.frame)
			if got := rc.expectClose(); got != tt.code {
				t.Fatalf("%s %s: close %d, want %d", s.name, tt.name, got, tt.code)
			}
			if got := log.wait(t, s.name); got != tt.code {
				t.Fatalf("%s %s: OnClose %d, want %d", s.name, tt.name, got, tt.code)
			}
		}
	}
}

func TestCloseHandshakeEchoesCode(t *testing.T) {
	log := newCloseLog()
	u := &Upgrader{}
	for _, s := range serveAll(t, upgradeHandler(u, log.handler())) {
		for _, code := range []int{1000, 1001, 3000, 4999} {
			rc := dialRaw(t, s.addr, "")
			rc.send(clientFrame(true, 0, opClose, testKey, closePayload(code, "done")))
			if got := rc.expectClose(); got != code {
				t.Fatalf("%s: answered %d to %d", s.name, got, code)
			}
			if got := log.wait(t, s.name); got != code {
				t.Fatalf("%s: OnClose %d, want %d", s.name, got, code)
			}
		}
		rc := dialRaw(t, s.addr, "")
		rc.send(clientFrame(true, 0, opClose, testKey, nil))
		if got := rc.expectClose(); got != CloseNoStatusReceived {
			t.Fatalf("%s: empty close answered %d", s.name, got)
		}
		log.wait(t, s.name)
	}
}

func TestPingPongAndFragments(t *testing.T) {
	u := &Upgrader{}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		rc := dialRaw(t, s.addr, "")
		// A text message in three fragments with a ping between, its
		// bytes trickled one at a time.
		var all []byte
		all = append(all, clientFrame(false, 0, opText, testKey, []byte("κό"))...)
		all = append(all, clientFrame(true, 0, opPing, testKey, []byte("are you there"))...)
		all = append(all, clientFrame(false, 0, opContinuation, testKey, []byte{0xcf})...)
		all = append(all, clientFrame(true, 0, opContinuation, testKey, []byte{0x83, 'x'})...)
		for i := range all {
			rc.send(all[i : i+1])
		}
		op, _, _, p, err := rc.frame()
		if err != nil || op != opPong || string(p) != "are you there" {
			t.Fatalf("%s: pong %d %q %v", s.name, op, p, err)
		}
		op, fin, _, p, err := rc.frame()
		if err != nil || op != opText || !fin || string(p) != "κόσx" {
			t.Fatalf("%s: echo %d %q %v", s.name, op, p, err)
		}
	}
}

func TestServerCloseAndWritesAfter(t *testing.T) {
	got := make(chan *Conn, 1)
	log := newCloseLog()
	u := &Upgrader{}
	h := HandlerFuncs{Open: func(c *Conn) { got <- c }, Close: func(c *Conn, code int, _ string) { log.ch <- code }}
	for _, s := range serveAll(t, upgradeHandler(u, h)) {
		rc := dialRaw(t, s.addr, "")
		c := <-got
		if err := c.Close(1000, "bye"); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(1000, ""); err != ErrCloseSent {
			t.Fatalf("second Close: %v", err)
		}
		if err := c.WriteMessage(TextMessage, []byte("x")); err != ErrCloseSent {
			t.Fatalf("%s: write after Close: %v", s.name, err)
		}
		op, _, _, p, _ := rc.frame()
		if op != opClose || binary.BigEndian.Uint16(p) != 1000 || string(p[2:]) != "bye" {
			t.Fatalf("%s: close frame %d %q", s.name, op, p)
		}
		rc.send(clientFrame(true, 0, opClose, testKey, closePayload(1000, "")))
		if code := log.wait(t, s.name); code != 1000 {
			t.Fatalf("%s: OnClose %d", s.name, code)
		}
		if c.Close(1005, "") != ErrBadCloseCode {
			t.Fatalf("1005 accepted for sending")
		}
	}
}

func TestDeadPeerDetectedByPings(t *testing.T) {
	log := newCloseLog()
	u := &Upgrader{PingInterval: 50 * time.Millisecond}
	for _, s := range serveAll(t, upgradeHandler(u, log.handler())) {
		rc := dialRaw(t, s.addr, "")
		// The client reads pings and never answers.
		pings := 0
		for {
			op, _, _, _, err := rc.frame()
			if err != nil {
				break
			}
			if op == opPing {
				pings++
			}
		}
		if pings == 0 {
			t.Fatalf("%s: no ping before the close", s.name)
		}
		if code := log.wait(t, s.name); code != CloseAbnormalClosure {
			t.Fatalf("%s: OnClose %d, want 1006", s.name, code)
		}
	}
}

func TestIdleTimeoutCloses(t *testing.T) {
	u := &Upgrader{IdleTimeout: 100 * time.Millisecond}
	for _, s := range serveAll(t, upgradeHandler(u, echoHandler)) {
		rc := dialRaw(t, s.addr, "")
		if code := rc.answerClose(); code != CloseGoingAway {
			t.Fatalf("%s: idle close %d", s.name, code)
		}
	}
}

// drainHandler is a HandlerFuncs with OnDrained.
type drainHandler struct {
	HandlerFuncs
	drained chan struct{}
}

func (d *drainHandler) OnDrained(c *Conn) {
	select {
	case d.drained <- struct{}{}:
	default:
	}
}

func TestSlowConsumerGetsError(t *testing.T) {
	res := make(chan error, 1)
	u := &Upgrader{WriteBufferLimit: 256 << 10}
	h := &drainHandler{drained: make(chan struct{}, 1)}
	h.Open = func(c *Conn) {
		go func() {
			msg := bytes.Repeat([]byte("z"), 16<<10)
			for i := 0; i < 100000; i++ {
				if err := c.WriteMessage(BinaryMessage, msg); err != nil {
					res <- err
					return
				}
			}
			res <- nil
		}()
	}
	s := serveOne(t, "uringhttp", upgradeHandler(u, h))
	rc := dialRaw(t, s.addr, "") // reads nothing at first
	select {
	case err := <-res:
		if err != ErrSlowConsumer {
			t.Fatalf("writer got %v, want ErrSlowConsumer", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writer never refused")
	}
	// The consumer catches up: OnDrained tells the producer.
	go func() {
		for {
			if _, _, _, _, err := rc.frame(); err != nil {
				return
			}
		}
	}()
	select {
	case <-h.drained:
	case <-time.After(30 * time.Second):
		t.Fatal("no OnDrained after the consumer caught up")
	}
}

func TestLoopPathHoldsNoGoroutine(t *testing.T) {
	opened := make(chan *Conn, 64)
	u := &Upgrader{}
	h := HandlerFuncs{Open: func(c *Conn) { opened <- c }, Message: echoHandler.Message}
	s := serveOne(t, "uringhttp", upgradeHandler(u, h))
	dialRaw(t, s.addr, "") // warm up the server's pools and goroutines
	<-opened
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	const n = 40
	for i := 0; i < n; i++ {
		rc := dialRaw(t, s.addr, "")
		rc.send(clientFrame(true, 0, opText, testKey, []byte("hi")))
		if _, _, _, p, err := rc.frame(); err != nil || string(p) != "hi" {
			t.Fatalf("echo %q %v", p, err)
		}
		if c := <-opened; c.cc == nil {
			t.Fatal("uringhttp's upgrade did not move the connection onto the loop")
		}
	}
	// Handlers may still be returning: wait for the count to settle.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+n/4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+n/4 {
		t.Fatalf("%d goroutines for %d idle websockets (before: %d)", g, n, before)
	}
}

func TestReadTimeoutCloses(t *testing.T) {
	log := newCloseLog()
	u := &Upgrader{ReadTimeout: 100 * time.Millisecond}
	for _, s := range serveAll(t, upgradeHandler(u, log.handler())) {
		rc := dialRaw(t, s.addr, "")
		rc.send(clientFrame(false, 0, opText, testKey, []byte("half a message, then silence")))
		if _, _, _, _, err := rc.frame(); err == nil {
			t.Fatalf("%s: a frame instead of the end", s.name)
		}
		if code := log.wait(t, s.name); code != CloseAbnormalClosure {
			t.Fatalf("%s: OnClose %d, want 1006", s.name, code)
		}
	}
}

// Messages written concurrently from many goroutines each arrive whole.
func TestConcurrentWritersKeepMessagesWhole(t *testing.T) {
	const writers, each = 8, 50
	u := &Upgrader{WriteBufferLimit: 64 << 20}
	h := HandlerFuncs{Open: func(c *Conn) {
		for w := 0; w < writers; w++ {
			go func(w int) {
				msg := bytes.Repeat([]byte{byte('a' + w)}, 20000+w)
				for i := 0; i < each; i++ {
					err := c.WriteMessage(BinaryMessage, msg)
					for ; err == ErrSlowConsumer; err = c.WriteMessage(BinaryMessage, msg) {
						time.Sleep(time.Millisecond) // the documented outcome: retry or drop
					}
					if err != nil {
						return
					}
				}
			}(w)
		}
	}}
	for _, s := range serveAll(t, upgradeHandler(u, h)) {
		c := dialGorilla(t, s, nil)
		for i := 0; i < writers*each; i++ {
			_, p, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("%s: message %d: %v", s.name, i, err)
			}
			w := int(p[0] - 'a')
			if len(p) != 20000+w || !bytes.Equal(p, bytes.Repeat(p[:1], len(p))) {
				t.Fatalf("%s: message %d mixed or cut (%d bytes)", s.name, i, len(p))
			}
		}
	}
}

// No data frame follows the close frame, whatever writes run beside
// Close.
func TestNoDataAfterCloseFrame(t *testing.T) {
	u := &Upgrader{WriteBufferLimit: 64 << 20}
	h := HandlerFuncs{Open: func(c *Conn) {
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c.WriteMessage(TextMessage, []byte("data")) != ErrCloseSent {
				}
			}()
		}
		go func() {
			time.Sleep(20 * time.Millisecond)
			c.Close(CloseNormalClosure, "")
			wg.Wait()
		}()
	}}
	for _, s := range serveAll(t, upgradeHandler(u, h)) {
		rc := dialRaw(t, s.addr, "")
		for {
			op, _, _, _, err := rc.frame()
			if err != nil {
				t.Fatalf("%s: %v before the close frame", s.name, err)
			}
			if op == opClose {
				break
			}
		}
		rc.send(clientFrame(true, 0, opClose, testKey, closePayload(1000, "")))
		if op, _, _, _, err := rc.frame(); err == nil {
			t.Fatalf("%s: frame %d after the close frame", s.name, op)
		}
	}
}
