package wsconform

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
)

// Obs is one thing the server sent that a case's expectation lists: a
// message (text or binary) or a pong.
type Obs struct {
	Kind string // "text", "binary" or "pong"
	Data []byte
}

func (o Obs) String() string {
	if len(o.Data) > 24 {
		return fmt.Sprintf("%s[%d]", o.Kind, len(o.Data))
	}
	return fmt.Sprintf("%s%q", o.Kind, o.Data)
}

// Text, Binary and Pong make the observations a case expects.
func Text(s []byte) Obs   { return Obs{"text", s} }
func Binary(b []byte) Obs { return Obs{"binary", b} }
func Pong(b []byte) Obs   { return Obs{"pong", b} }

// Client is one connection of the suite's client to the server under test.
type Client struct {
	conn    net.Conn
	br      *bufio.Reader
	deflate *deflateParams // nil: not negotiated
	tx      *txDeflate

	mu        sync.Mutex
	cond      *sync.Cond
	obs       []Obs
	closeCode int    // the server's close code; 0: no close frame; 1005: empty
	closeErr  string // a close frame no server may send
	badFrame  string // the server broke the protocol
	eof       bool   // the server closed or reset TCP
	closeSent bool
}

// Dial connects to addr, upgrades on path offering the extension header
// offer ("" offers none) and starts reading what the server sends.
func Dial(addr, path, offer string, timeout time.Duration) (*Client, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c.(*net.TCPConn).SetNoDelay(true)
	var kb [16]byte
	rand.Read(kb[:])
	key := base64.StdEncoding.EncodeToString(kb[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n"
	if offer != "" {
		req += "Sec-WebSocket-Extensions: " + offer + "\r\n"
	}
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	if resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		return nil, fmt.Errorf("handshake: status %s", resp.Status)
	}
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(h[:]) {
		c.Close()
		return nil, errors.New("handshake: wrong Sec-WebSocket-Accept")
	}
	s := &Client{conn: c, br: br}
	s.cond = sync.NewCond(&s.mu)
	if ext := resp.Header.Values("Sec-WebSocket-Extensions"); len(ext) > 0 {
		p, err := parseDeflateResponse(ext, offer)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("handshake: %w", err)
		}
		s.deflate = p
		s.tx = newTxDeflate(p)
	}
	go s.readLoop()
	return s, nil
}

// Deflate reports whether permessage-deflate was negotiated.
func (s *Client) Deflate() bool { return s.deflate != nil }

// Send writes b in pieces of chop bytes (0: at once); pieces of 16 bytes or
// less are spaced a little apart so that the server reads them one by one.
func (s *Client) Send(b []byte, chop int) error {
	if chop <= 0 || chop >= len(b) {
		_, err := s.conn.Write(b)
		return err
	}
	for len(b) > 0 {
		n := min(chop, len(b))
		if _, err := s.conn.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		if chop <= 16 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// SendFrames writes fs, each chopped into chop bytes; frameWise writes each
// frame on its own with a pause after it.
func (s *Client) SendFrames(chop int, frameWise bool, fs ...Frame) error {
	if !frameWise {
		return s.Send(Frames(fs...), chop)
	}
	for _, f := range fs {
		if err := s.Send(f.Encode(), chop); err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// SendClose sends a close frame with code and reason (code 0: empty).
func (s *Client) SendClose(code int, reason string) error {
	s.mu.Lock()
	s.closeSent = true
	s.mu.Unlock()
	return s.Send(CloseFrame(code, reason).Encode(), 0)
}

// WaitObs waits until the server sent n observations, closed, or timeout
// passed; it reports whether n arrived.
func (s *Client) WaitObs(n int, timeout time.Duration) bool {
	return s.waitFor(timeout, func() bool { return len(s.obs) >= n || s.eof })
}

// WaitEOF waits until the server closes the connection or timeout passes.
func (s *Client) WaitEOF(timeout time.Duration) bool {
	return s.waitFor(timeout, func() bool { return s.eof })
}

func (s *Client) waitFor(timeout time.Duration, cond func() bool) bool {
	t := time.AfterFunc(timeout, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer t.Stop()
	deadline := time.Now().Add(timeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond() && time.Now().Before(deadline) {
		s.cond.Wait()
	}
	return cond()
}

// Observed returns a copy of what the server sent so far.
func (s *Client) Observed() []Obs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Obs(nil), s.obs...)
}

// Close drops the connection.
func (s *Client) Close() { s.conn.Close() }

func (s *Client) add(o Obs) {
	s.mu.Lock()
	s.obs = append(s.obs, o)
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *Client) fault(msg string) {
	s.mu.Lock()
	if s.badFrame == "" {
		s.badFrame = msg
	}
	s.mu.Unlock()
}

// readLoop reads the server's frames until EOF, joining fragments,
// inflating compressed messages and answering pings.
func (s *Client) readLoop() {
	defer func() {
		s.mu.Lock()
		s.eof = true
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	rx := newRxDeflate(s.deflate)
	var msgOp byte
	var msg []byte
	var compressed bool
	for {
		f, err := readFrame(s.br)
		if err != nil {
			if errors.Is(err, errServerFrame) {
				s.fault(err.Error())
			}
			return
		}
		allowed := byte(0)
		if s.deflate != nil && (f.op == OpText || f.op == OpBinary) {
			allowed = RSV1
		}
		if f.rsv&^allowed != 0 {
			s.fault(fmt.Sprintf("server frame op %d with reserved bits %d", f.op, f.rsv))
			return
		}
		switch f.op {
		case OpPing, OpPong, OpClose:
			if !f.fin || len(f.payload) > 125 {
				s.fault("fragmented or long control frame from the server")
				return
			}
		}
		switch f.op {
		case OpPing:
			s.Send(Frame{Fin: true, Op: OpPong, Payload: f.payload}.Encode(), 0)
		case OpPong:
			s.add(Pong(f.payload))
		case OpClose:
			s.onClose(f.payload)
		case OpText, OpBinary:
			if msgOp != 0 {
				s.fault("new data frame inside a fragmented message from the server")
				return
			}
			msgOp, msg, compressed = f.op, f.payload, f.rsv&RSV1 != 0
		case OpCont:
			if msgOp == 0 {
				s.fault("continuation with nothing to continue from the server")
				return
			}
			msg = append(msg, f.payload...)
		default:
			s.fault(fmt.Sprintf("reserved opcode %d from the server", f.op))
			return
		}
		if !f.fin || (f.op != OpText && f.op != OpBinary && f.op != OpCont) {
			continue
		}
		if compressed {
			if msg, err = rx.inflate(msg); err != nil {
				s.fault("inflate: " + err.Error())
				return
			}
		}
		if msgOp == OpText {
			s.add(Text(bytes.Clone(msg)))
		} else {
			s.add(Binary(bytes.Clone(msg)))
		}
		msgOp, msg = 0, nil
	}
}

func (s *Client) onClose(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(p) == 0:
		s.closeCode = 1005
	case len(p) == 1:
		s.closeErr = "close payload of 1 byte"
		s.closeCode = -1
	default:
		s.closeCode = int(p[0])<<8 | int(p[1])
		if !utf8.Valid(p[2:]) {
			s.closeErr = "close reason not UTF-8"
		}
	}
	closeSent := s.closeSent
	s.closeSent = true
	if !closeSent {
		// Echo the server's close as a client does, then wait for its TCP close.
		code := s.closeCode
		if code <= 0 || code == 1005 {
			code = 0
		}
		go s.Send(CloseFrame(code, "").Encode(), 0)
	}
}
