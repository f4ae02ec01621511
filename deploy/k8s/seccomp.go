package k8s

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// mobyProfile is the part of moby's seccomp profile format
// (../seccomp-io_uring.json) that FlattenProfile reads: rules may be
// conditioned on capabilities, architectures and kernel versions.
type mobyProfile struct {
	DefaultAction   string `json:"defaultAction"`
	DefaultErrnoRet *uint  `json:"defaultErrnoRet,omitempty"`
	ArchMap         []struct {
		Arch    string   `json:"architecture"`
		SubArch []string `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []struct {
		Names    []string          `json:"names"`
		Action   string            `json:"action"`
		Args     []json.RawMessage `json:"args,omitempty"`
		ErrnoRet *uint             `json:"errnoRet,omitempty"`
		Comment  string            `json:"comment,omitempty"`
		Includes *mobyFilter       `json:"includes,omitempty"`
		Excludes *mobyFilter       `json:"excludes,omitempty"`
	} `json:"syscalls"`
}

type mobyFilter struct {
	Caps      []string `json:"caps,omitempty"`
	Arches    []string `json:"arches,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// ociProfile is the OCI runtime spec's LinuxSeccomp, the format containerd
// reads a Kubernetes Localhost profile as: no conditions.
type ociProfile struct {
	DefaultAction   string       `json:"defaultAction"`
	DefaultErrnoRet *uint        `json:"defaultErrnoRet,omitempty"`
	Architectures   []string     `json:"architectures"`
	Syscalls        []ociSyscall `json:"syscalls"`
}

type ociSyscall struct {
	Names    []string          `json:"names"`
	Action   string            `json:"action"`
	ErrnoRet *uint             `json:"errnoRet,omitempty"`
	Args     []json.RawMessage `json:"args,omitempty"`
}

// ociArch maps moby's arch names (in includes/excludes) to the seccomp
// architectures of an amd64 or arm64 node.
var ociArch = map[string][]string{
	"amd64": {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"},
	"arm64": {"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"},
}

// mobyArches are the moby arch names that run on a node of GOARCH arch.
var mobyArches = map[string][]string{
	"amd64": {"amd64", "x32", "x86"},
	"arm64": {"arm64", "arm"},
}

// FlattenProfile turns a moby-format seccomp profile into the OCI format
// with every condition resolved as Docker would resolve it for a container
// with no capabilities (capabilities drop ALL) on a node of arch ("amd64"
// or "arm64"), on a kernel new enough for io_uring (5.1+): rules that need
// a capability or another arch are dropped, rules that exclude a
// capability are kept, kernel-version conditions (all older than 5.1) are
// met. The result is byte-stable JSON, indented by two spaces, with a
// trailing newline. Errors: unparsable input, or an arch other than amd64
// and arm64.
func FlattenProfile(moby []byte, arch string) ([]byte, error) {
	var in mobyProfile
	if err := json.Unmarshal(moby, &in); err != nil {
		return nil, err
	}
	archs, ok := ociArch[arch]
	if !ok {
		return nil, fmt.Errorf("arch %q: want amd64 or arm64", arch)
	}
	ours := mobyArches[arch]
	out := ociProfile{DefaultAction: in.DefaultAction, DefaultErrnoRet: in.DefaultErrnoRet, Architectures: archs, Syscalls: []ociSyscall{}}
	for _, s := range in.Syscalls {
		if inc := s.Includes; inc != nil {
			if len(inc.Caps) > 0 {
				continue // only for holders of a capability: none here
			}
			if len(inc.Arches) > 0 && !slices.ContainsFunc(inc.Arches, func(a string) bool { return slices.Contains(ours, a) }) {
				continue
			}
			if inc.MinKernel != "" && !strings.HasPrefix(inc.MinKernel, "4.") && !strings.HasPrefix(inc.MinKernel, "3.") {
				return nil, fmt.Errorf("rule for %v needs kernel %s: not resolved for 5.1+", s.Names, inc.MinKernel)
			}
		}
		if exc := s.Excludes; exc != nil {
			if len(exc.Arches) > 0 && slices.ContainsFunc(exc.Arches, func(a string) bool { return slices.Contains(ours, a) }) {
				continue
			}
			if exc.MinKernel != "" {
				return nil, fmt.Errorf("rule for %v excludes kernel %s: not resolved", s.Names, exc.MinKernel)
			}
			// excludes.caps: applies to callers without the capability, as here.
		}
		out.Syscalls = append(out.Syscalls, ociSyscall{Names: s.Names, Action: s.Action, ErrnoRet: s.ErrnoRet, Args: s.Args})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
