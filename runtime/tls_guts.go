package uringrt

import (
	"bytes"
	"crypto/tls"
	"reflect"
	"unsafe"
)

// What crypto/tls keeps per connection, and what the loop takes back.
//
// A tls.Conn keeps three buffers of its own for life: rawInput (the
// records read, grown to the largest one plus 512 bytes), input (a reader
// over the last record's plaintext, which lies in rawInput) and hand (the
// handshake messages, grown to the largest one: a ClientHello with a
// post-quantum key share is 1.7 KiB). Its record writes use a buffer from
// a pool it shares, and its handshake's send buffer is dropped after the
// flight. The rest is the Conn and its ciphers (about 3 KiB with AES-GCM).
//
// crypto/tls has no API to let its buffers go, so the loop reaches in: it
// finds the three fields by name and type once (tlsGuts; a layout it does
// not recognise turns all of this off, and a test fails loudly on it) and
// resets them to their zero values, which crypto/tls treats as empty
// buffers, whenever they hold nothing: hand after the handshake, and
// rawInput and input after each batch of records. Better: while the loop
// decrypts a batch of records it lends rawInput the loop's own buffer, so
// records are decrypted in place there and no connection owns one.

// tlsGutsT is where the buffers lie in a tls.Conn.
type tlsGutsT struct {
	ok                       bool
	rawInput, input, handBuf uintptr
}

var tlsGuts = findTLSGuts()

func findTLSGuts() tlsGutsT {
	t := reflect.TypeOf(tls.Conn{})
	field := func(name string, typ reflect.Type) (uintptr, bool) {
		f, ok := t.FieldByName(name)
		if !ok || f.Type != typ || len(f.Index) != 1 {
			return 0, false
		}
		return f.Offset, true
	}
	var g tlsGutsT
	var ok1, ok2, ok3 bool
	g.rawInput, ok1 = field("rawInput", reflect.TypeOf(bytes.Buffer{}))
	g.input, ok2 = field("input", reflect.TypeOf(bytes.Reader{}))
	g.handBuf, ok3 = field("hand", reflect.TypeOf(bytes.Buffer{}))
	g.ok = ok1 && ok2 && ok3
	return g
}

func tlsRawInput(tc *tls.Conn) *bytes.Buffer {
	return (*bytes.Buffer)(unsafe.Add(unsafe.Pointer(tc), tlsGuts.rawInput))
}

func tlsInput(tc *tls.Conn) *bytes.Reader {
	return (*bytes.Reader)(unsafe.Add(unsafe.Pointer(tc), tlsGuts.input))
}

func tlsHand(tc *tls.Conn) *bytes.Buffer {
	return (*bytes.Buffer)(unsafe.Add(unsafe.Pointer(tc), tlsGuts.handBuf))
}

// tlsRawSize is the loop's record buffer: the largest record and the 512
// bytes crypto/tls asks for beyond it.
const tlsRawSize = recordHeader + maxCiphertext + 1024

// tlsShrinkHandshake drops what the handshake left in tc's buffers (loop,
// the handshake goroutine done).
func (l *loop) tlsShrinkHandshake(tc *tls.Conn) {
	if !tlsGuts.ok || l.rt.cfg.tlsKeepBuffers {
		return
	}
	if h := tlsHand(tc); h.Len() == 0 {
		*h = bytes.Buffer{}
	}
	if r, in := tlsRawInput(tc), tlsInput(tc); r.Len() == 0 && in.Len() == 0 {
		*r = bytes.Buffer{}
		*in = bytes.Reader{}
	}
}

// tlsLendRaw lends the loop's record buffer to tc's rawInput for a batch
// of records (loop). Only an empty rawInput is replaced.
func (l *loop) tlsLendRaw(tc *tls.Conn) {
	if !tlsGuts.ok || l.rt.cfg.tlsKeepBuffers || l.tlsLent != nil {
		return
	}
	r := tlsRawInput(tc)
	if r.Len() != 0 || tlsInput(tc).Len() != 0 {
		return
	}
	if l.tlsRaw == nil {
		l.tlsRaw = make([]byte, 0, tlsRawSize)
	}
	*r = *bytes.NewBuffer(l.tlsRaw[:0])
	l.tlsLent = tc
}

// tlsUnlendRaw takes the loop's buffer back from tc (loop): rawInput and
// input are reset when empty (they are after whole records); if not, tc
// keeps the buffer and the loop makes itself a new one.
func (l *loop) tlsUnlendRaw(tc *tls.Conn) {
	if l.tlsLent != tc {
		if tlsGuts.ok && !l.rt.cfg.tlsKeepBuffers && l.tlsLent == nil {
			l.tlsShrinkHandshake(tc) // a buffer crypto/tls grew itself
		}
		return
	}
	l.tlsLent = nil
	r, in := tlsRawInput(tc), tlsInput(tc)
	if r.Len() != 0 || in.Len() != 0 {
		l.tlsRaw = nil
		return
	}
	*r = bytes.Buffer{}
	*in = bytes.Reader{}
}

// tlsPlainBuf returns the loop's plaintext buffer (a record's worth), or
// a new one while it is in use.
func (l *loop) tlsPlainBuf() []byte {
	if l.tlsPlainBusy {
		return make([]byte, 16<<10)
	}
	if l.tlsPlain == nil {
		l.tlsPlain = make([]byte, 16<<10)
	}
	l.tlsPlainBusy = true
	return l.tlsPlain
}

func (l *loop) tlsPlainDone(b []byte) {
	if len(l.tlsPlain) > 0 && &b[0] == &l.tlsPlain[0] {
		l.tlsPlainBusy = false
	}
}
