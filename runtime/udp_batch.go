package uringrt

import (
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

func (c *ringUDP) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	c.fd.rmu.Lock()
	defer c.fd.rmu.Unlock()
	for i := range ms {
		m := &ms[i]
		var p []byte
		if len(m.Buffers) > 0 {
			p = m.Buffers[0]
		}
		var from unix.RawSockaddrAny
		n, oobn, rflags, ok, err := c.readMsgLocked(p, m.OOB, flags, &from, "read", "recvmsg", i == 0)
		if err != nil {
			if i == 0 {
				return 0, err
			}
			return i, nil
		}
		if !ok {
			return i, nil
		}
		m.N, m.NN, m.Flags = n, oobn, rflags
		m.Addr = rawUDPAddr(&from)
		if m.Addr == nil && c.connected {
			m.Addr = c.fd.remot
		}
	}
	return len(ms), nil
}
