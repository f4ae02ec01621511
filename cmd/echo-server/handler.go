package main

import (
	"net"

	uringrt "github.com/uringrt/uringrt/runtime"
)

// The net.Conn handler's read buffer (-buf-size): by default io.Copy's
// 32 KiB, what a Go user's echo server reads into, so a stream moves up to
// 32 KiB per Read and Write rather than one small chunk at a time.
const (
	defaultBufSize = 32 << 10 // bytes
	minBufSize     = 512      // bytes
	maxBufSize     = 16 << 20 // bytes
)

// echo serves one net.Conn: it reads up to bufSize bytes and writes back
// what it read, as the plain Go echo server does (a goroutine per
// connection), until EOF or an error. The callback API needs no buffer: its
// handler (echoHandler) queues back each chunk the loop hands it,
// whole.
func echo(c net.Conn, bufSize int) {
	defer c.Close()
	buf := make([]byte, bufSize)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// echoHandler is the callback API's echo: it writes every byte it receives
// back to the sender with WriteNoCopy, so runs of 2 KiB or more go out of
// the provided buffers they arrived in, without a copy.
type echoHandler struct{}

func (echoHandler) OnOpen(*uringrt.CallbackConn) {}

// OnData echoes data; a write the connection's queue refuses
// (uringrt.ErrWriteBufferFull: the peer stopped reading) closes the
// connection instead of dropping the bytes.
func (echoHandler) OnData(c *uringrt.CallbackConn, data []byte) {
	if _, err := c.WriteNoCopy(data); err != nil {
		c.Close()
	}
}

func (echoHandler) OnClose(*uringrt.CallbackConn, error) {}
