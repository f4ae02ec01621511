package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestFlattenProfile: the flattened profile keeps the default deny, allows
// io_uring_* unconditionally, drops the rules Docker grants only to holders
// of a capability (so CAP_SYS_ADMIN's unrestricted clone/unshare/mount are
// not allowed to a container without it, as containerd would allow them
// reading the moby file), keeps the amd64 rules and drops other arches'.
func TestFlattenProfile(t *testing.T) {
	moby, err := os.ReadFile("../seccomp-io_uring.json")
	if err != nil {
		t.Fatal(err)
	}
	flat, err := FlattenProfile(moby, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	var p ociProfile
	dec := json.NewDecoder(bytesReader(flat))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || !slices.Equal(p.Architectures, ociArch["amd64"]) {
		t.Errorf("defaultAction %s, architectures %v", p.DefaultAction, p.Architectures)
	}
	allowed := map[string]bool{}
	for _, s := range p.Syscalls {
		if s.Action == "SCMP_ACT_ALLOW" && len(s.Args) == 0 {
			for _, n := range s.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "arch_prctl", "read", "epoll_pwait"} {
		if !allowed[n] {
			t.Errorf("%s not allowed unconditionally", n)
		}
	}
	for _, n := range []string{"mount", "unshare", "setns", "bpf", "reboot", "init_module", "s390_runtime_instr", "riscv_flush_icache", "perf_event_open"} {
		if allowed[n] {
			t.Errorf("%s allowed, though Docker grants it only with a capability or on another arch", n)
		}
	}
	if _, err := FlattenProfile(moby, "mips"); err == nil {
		t.Error("FlattenProfile accepted arch mips")
	}
	arm, err := FlattenProfile(moby, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(arm, flat) {
		t.Error("arm64 and amd64 flatten the same")
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
