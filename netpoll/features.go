package netpoll

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Features is what this kernel offers, as probed once at start.
type Features struct {
	// Kernel is the running kernel's release (uname -r).
	Kernel string
	// SetupFlags are the setup flags a ring took when asked for
	// SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG with the fallback chain.
	SetupFlags SetupFlags
	// Bits are the IORING_FEAT_* bits.
	Bits FeatureFlags
	// Ops are the supported opcodes (IORING_REGISTER_PROBE).
	Ops OpSet
	// BufRing reports provided buffer rings (IORING_REGISTER_PBUF_RING, 5.19+).
	BufRing bool
	// MultishotAccept and MultishotRecv report the multishot variants
	// (5.19+ and 6.0+); approximated from BufRing and the CQE_SKIP feature
	// era, as the kernel has no probe for ioprio flags.
	MultishotAccept, MultishotRecv bool
	// MinWait reports the enter min-wait timeout (FeatMinTimeout, 6.12+).
	MinWait bool
	// IOWQMaxWorkers reports IORING_REGISTER_IOWQ_MAX_WORKERS (5.15+).
	IOWQMaxWorkers bool
}

// ProbeFeatures sets up a small ring, probes it and closes it. It fails with
// the setup error when io_uring is unavailable (see New for the errnos).
func ProbeFeatures() (Features, error) {
	f := Features{Kernel: KernelRelease()}
	r, err := New(Params{Entries: 8, Flags: SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag, Fallback: true})
	if err != nil {
		return f, err
	}
	defer r.Close()
	f.SetupFlags = r.Flags()
	f.Bits = r.FeatureBits()
	if ops, err := r.Probe(); err == nil {
		f.Ops = ops
	}
	f.MinWait = f.Bits&FeatMinTimeout != 0
	if br, err := r.RegisterBufRing(0, 1, 64); err == nil {
		f.BufRing = true
		br.Close()
	}
	// Multishot accept came with 5.19 (buffer rings); multishot recv with
	// 6.0 (SEND_ZC appeared in the same release).
	f.MultishotAccept = f.BufRing
	f.MultishotRecv = f.BufRing && f.Ops.Has(OpSendZC)
	if _, _, err := r.IOWQMaxWorkers(0, 0); err == nil {
		f.IOWQMaxWorkers = true
	}
	return f, nil
}

// String renders the features for a log line or `-version`.
func (f Features) String() string {
	var ops []string
	for op := Opcode(0); op <= f.Ops.Last && op < opLast; op++ {
		if f.Ops.Has(op) {
			if _, named := opNames[op]; named {
				ops = append(ops, op.String())
			}
		}
	}
	return fmt.Sprintf("kernel=%s setup=%v features=%v buf_ring=%v multishot_accept=%v multishot_recv=%v min_wait=%v iowq_max_workers=%v ops=%s",
		f.Kernel, f.SetupFlags, f.Bits, f.BufRing, f.MultishotAccept, f.MultishotRecv, f.MinWait, f.IOWQMaxWorkers, strings.Join(ops, ","))
}

// KernelRelease returns uname(2)'s release string ("6.18.0"), or "unknown".
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
