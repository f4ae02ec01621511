package uringrt

import (
	"testing"
	"unsafe"
)

// TestHotFieldsShareALine keeps what a net.Conn Read touches on every call
// in the first cache line of netFD and of connIO (BENCHMARKS.md, "The net.Conn
// drop-in against Go's net"): with a thousand connections, each line is a cache miss.
func TestHotFieldsShareALine(t *testing.T) {
	var n netFD
	var c connIO
	const line = 64
	for name, end := range map[string]uintptr{
		"netFD.fd":          unsafe.Offsetof(n.fd) + unsafe.Sizeof(n.fd),
		"netFD.rt":          unsafe.Offsetof(n.rt) + unsafe.Sizeof(n.rt),
		"netFD.connIO":      unsafe.Offsetof(n.connIO) + unsafe.Sizeof(n.connIO),
		"netFD.closing":     unsafe.Offsetof(n.closing) + unsafe.Sizeof(n.closing),
		"netFD.refs":        unsafe.Offsetof(n.refs) + unsafe.Sizeof(n.refs),
		"netFD.rmu":         unsafe.Offsetof(n.rmu) + unsafe.Sizeof(n.rmu),
		"netFD.idle.active": unsafe.Offsetof(n.idle) + unsafe.Offsetof(n.idle.active) + unsafe.Sizeof(n.idle.active),
		"connIO.rd":         unsafe.Offsetof(c.rd) + unsafe.Sizeof(c.rd),
		"connIO.pollInIdle": unsafe.Offsetof(c.pollInIdle) + unsafe.Sizeof(c.pollInIdle),
		"connIO.rdDrained":  unsafe.Offsetof(c.rdDrained) + unsafe.Sizeof(c.rdDrained),
		"netFD.wmu":         unsafe.Offsetof(n.wmu) + unsafe.Sizeof(n.wmu),
		"connIO.rdl.expired": unsafe.Offsetof(c.rdl) + unsafe.Offsetof(c.rdl.expired) +
			unsafe.Sizeof(c.rdl.expired),
		"connIO.wdl.expired": unsafe.Offsetof(c.wdl) + unsafe.Offsetof(c.wdl.expired) +
			unsafe.Sizeof(c.wdl.expired),
	} {
		if end > line {
			t.Errorf("%s ends at byte %d, past the first %d-byte line", name, end, line)
		}
	}
}

// TestFdAllocLines keeps a net.Conn's netFD and connIO each at the start
// of a cache line inside its one allocation: the size a multiple of 64
// (a size class of such a size starts every object on a line) and connIO
// at a multiple of 64 within it. 384 bytes is what was measured.
func TestFdAllocLines(t *testing.T) {
	var a fdAlloc
	size, io := unsafe.Sizeof(a), unsafe.Offsetof(a.io)
	if size%64 != 0 || io%64 != 0 || unsafe.Offsetof(a.n) != 0 {
		t.Errorf("fdAlloc: %d bytes, netFD at %d, connIO at %d; want a multiple of 64 for each", size, unsafe.Offsetof(a.n), io)
	}
	if size > 384 {
		t.Errorf("fdAlloc is %d bytes, over the 384 measured", size)
	}
}

// TestIdleConnObjectsFit keeps the objects an idle callback connection
// holds in the size classes measured (BENCHMARKS.md, "idle keep-alive
// connections"): a field added to CallbackConn past 576 bytes moves every
// connection to the 640-byte class, one past 208 bytes of netFD to 224.
// Fields a connection needs only while a send is in flight belong in
// cbSend, and BackendStd's in stdCB.
func TestIdleConnObjectsFit(t *testing.T) {
	for _, c := range []struct {
		name      string
		size, max uintptr
	}{
		{"CallbackConn", unsafe.Sizeof(CallbackConn{}), 576},
		{"netFD", unsafe.Sizeof(netFD{}), 208},
		{"op", unsafe.Sizeof(op{}), 120},
	} {
		if c.size > c.max {
			t.Errorf("%s is %d bytes, over the %d-byte size class an idle connection's memory was measured at", c.name, c.size, c.max)
		}
	}
}
