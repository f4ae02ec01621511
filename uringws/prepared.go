package uringws

import "sync"

// PreparedMessage is a message encoded once for many connections (a
// broadcast): its plain frame and its compressed frame are each built the
// first time a connection needs it and then shared by every write.
type PreparedMessage struct {
	op         byte
	data       []byte
	plainOnce  sync.Once
	plain      []byte
	deflOnce   sync.Once
	compressed []byte
}

// NewPreparedMessage prepares a message of type t (TextMessage,
// BinaryMessage, or a ping or pong of at most 125 bytes). data is kept,
// not copied: it must not change while the message is in use. Errors:
// ErrBadMessageType, ErrControlTooLong.
func NewPreparedMessage(t MessageType, data []byte) (*PreparedMessage, error) {
	switch t {
	case TextMessage, BinaryMessage:
	case PingMessage, PongMessage:
		if len(data) > maxControlPayload {
			return nil, ErrControlTooLong
		}
	default:
		return nil, ErrBadMessageType
	}
	return &PreparedMessage{op: byte(t), data: data}, nil
}

// frame returns the message's frame for a connection with or without
// permessage-deflate.
func (pm *PreparedMessage) frame(deflate bool) []byte {
	if deflate && pm.op < opClose {
		pm.deflOnce.Do(func() {
			bp := compressFrame(pm.op, pm.data)
			pm.compressed = append([]byte(nil), *bp...)
			putBuf(bp)
		})
		return pm.compressed
	}
	pm.plainOnce.Do(func() {
		b := make([]byte, 0, headerSize(len(pm.data))+len(pm.data))
		pm.plain = append(appendHeader(b, true, 0, pm.op, len(pm.data)), pm.data...)
	})
	return pm.plain
}

// WritePrepared sends a prepared message, as WriteMessage does (same
// errors), without encoding or compressing it again.
func (c *Conn) WritePrepared(pm *PreparedMessage) error {
	if !c.beginWrite() {
		return ErrCloseSent
	}
	defer c.endWrite()
	err := c.send(pm.frame(c.deflate), pm.op < opClose)
	if err == nil && pm.op < opClose {
		c.active.Store(true)
	}
	return err
}
