package uringrt

import (
	"context"
	"net"
)

func isUDP(network string) bool {
	return network == "udp" || network == "udp4" || network == "udp6"
}

// dialUDPContext is Dial/DialContext/Dialer.DialContext for "udp", "udp4"
// and "udp6": Go's net resolves the address and connects the socket (with
// the Dialer's LocalAddr and Control), then the runtime drives it. The
// net.Conn returned is a connected *PacketConn.
func (rt *Runtime) dialUDPContext(ctx context.Context, d *Dialer, network, address string) (net.Conn, error) {
	if err := rt.udpCheck("dial", network); err != nil {
		return nil, err
	}
	c, err := d.std().DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	pc, err := rt.adoptUDP(c.(*net.UDPConn), network, "dial", true)
	if err != nil {
		return nil, err
	}
	return pc, nil
}

// ListenPacket announces on the local address for "udp", "udp4" and
// "udp6", as net.ListenConfig.ListenPacket: Control runs on the socket
// before bind, and ReusePort sets SO_REUSEPORT (several PacketConns then
// share the port and the kernel spreads datagrams across them by flow).
// ctx bounds only the setup. Errors are Runtime.ListenPacket's.
func (lc *ListenConfig) ListenPacket(ctx context.Context, network, address string) (*PacketConn, error) {
	rt := lc.Runtime
	if rt == nil {
		var err error
		if rt, err = Default(); err != nil {
			return nil, err
		}
	}
	if err := rt.udpCheck("listen", network); err != nil {
		return nil, err
	}
	pc, err := lc.std(lc.ReusePort).ListenPacket(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return rt.adoptUDP(pc.(*net.UDPConn), network, "listen", false)
}
