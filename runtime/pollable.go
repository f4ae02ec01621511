package uringrt

import (
	"syscall"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// pollable is how a Conn's Read and Write do one attempt of their socket
// operation under a Config.Pollable policy (see doc.go's "Pollable
// policies"): pollable_hybrid.go, pollable_ring.go (experiment.PollRing and
// experiment.PollAsync) and pollable_blocking.go. Conn.Read and Conn.Write own the
// loop around it: locks, Close and deadline checks, errno handling and the
// counters; a policy only moves bytes or waits.
//
// The policies are empty structs, so a Runtime holds one in an interface
// without allocating, and a call allocates nothing.
type pollable interface {
	// read does one attempt to receive into b (len(b) > 0), holding
	// fd.rmu. n and errno are the recv's result (n == 0 with errno 0 is
	// the peer's EOF). waited reports that the attempt waited for
	// readiness or a completion; again that it produced no result (the
	// fd was closing, or it only waited) and the caller must check Close
	// and the deadline and call again.
	read(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool)
	// write is read's counterpart for a send of b (len(b) > 0), holding
	// fd.wmu; n may be short, and the caller sends the rest.
	write(fd *netFD, b []byte) (n int, errno syscall.Errno, waited, again bool)
	// pollsForLife reports whether a connection keeps a multishot POLLIN
	// armed for its life and waits for readiness on its pollDesc (true
	// for the hybrid policy only), which netFD.start, RawConn and the
	// splice and sendfile paths rely on.
	pollsForLife() bool
}

// pollableFor returns the policy p names; p has been validated by New.
func pollableFor(p experiment.Pollable) pollable {
	switch p {
	case experiment.PollRing, experiment.PollAsync:
		return pollRing{}
	case experiment.PollBlocking:
		return pollBlocking{}
	}
	return pollHybrid{}
}
