package uringws

import (
	"errors"
	"strconv"
)

// Close codes of RFC 6455 section 7.4.1.
const (
	CloseNormalClosure           = 1000
	CloseGoingAway               = 1001
	CloseProtocolError           = 1002
	CloseUnsupportedData         = 1003
	CloseNoStatusReceived        = 1005
	CloseAbnormalClosure         = 1006
	CloseInvalidFramePayloadData = 1007
	ClosePolicyViolation         = 1008
	CloseMessageTooBig           = 1009
	CloseMandatoryExtension      = 1010
	CloseInternalServerErr       = 1011
)

var (
	// ErrSlowConsumer is returned by a write when the bytes already queued
	// for the connection and the message together pass
	// Upgrader.WriteBufferLimit: nothing of the message was queued and the
	// connection stays open, so the writer decides (drop the message, or
	// Close a consumer that stays slow).
	ErrSlowConsumer = errors.New("uringws: slow consumer: write buffer limit reached")
	// ErrCloseSent is returned by writes after Close (or after the
	// connection answered or sent a close frame).
	ErrCloseSent = errors.New("uringws: close sent")
	// ErrClosed is returned by writes once the connection is gone.
	ErrClosed = errors.New("uringws: connection closed")
	// ErrControlTooLong is returned by WriteMessage for a ping or pong
	// payload over 125 bytes.
	ErrControlTooLong = errors.New("uringws: control frame payload over 125 bytes")
	// ErrBadMessageType is returned by WriteMessage for a type other than
	// TextMessage, BinaryMessage, PingMessage and PongMessage.
	ErrBadMessageType = errors.New("uringws: bad message type")
	// ErrBadCloseCode is returned by Close for a code that may not be
	// sent (RFC 6455 section 7.4).
	ErrBadCloseCode = errors.New("uringws: close code may not be sent")
)

// closeError is a protocol failure and the close code it is answered
// with.
type closeError struct {
	code int
	text string
}

func (e *closeError) Error() string {
	return "uringws: " + e.text + " (close " + strconv.Itoa(e.code) + ")"
}

func errProto(text string) error { return &closeError{CloseProtocolError, text} }

var (
	errUTF8    error = &closeError{CloseInvalidFramePayloadData, "invalid UTF-8 in text"}
	errTooBig  error = &closeError{CloseMessageTooBig, "message over the size limit"}
	errInflate error = &closeError{CloseProtocolError, "invalid deflate data"}
)

// validReceivedCloseCode reports whether a close frame may carry code
// (RFC 6455 section 7.4 and the IANA registry, as gorilla/websocket
// accepts them).
func validReceivedCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}
