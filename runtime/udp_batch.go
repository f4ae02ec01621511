package uringrt

import (
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// ReadBatch reads up to len(ms) datagrams, as golang.org/x/net/ipv4's
// PacketConn.ReadBatch does with recvmmsg(2): it waits (through the loop,
// like ReadFrom) for the first, then takes those already queued without
// waiting, and returns how many it filled. Each message gets its datagram
// in Buffers[0] (further buffers are left alone), N, its control messages
// in OOB and NN, Flags (MSG_TRUNC, MSG_CTRUNC) and Addr (*net.UDPAddr).
// flags are recvmsg(2) flags (0 usually; ignored under
// Config.UDPRecvMultishot). quic-go reads through this method when it is
// there, so it works under Config.UDPRecvMultishot too, where SyscallConn's
// Read cannot. Errors are ReadMsgUDP's, for the first datagram; a later
// one's error (a pending ICMP error such as ECONNREFUSED) ends the batch
// and is dropped, as the socket's pending error is consumed by the read.
func (c *PacketConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if c.std != nil {
		return ipv4.NewPacketConn(c.std).ReadBatch(ms, flags)
	}
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
