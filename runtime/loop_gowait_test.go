package uringrt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestNetpollableWrapsCause: a file Go's netpoller cannot poll (a regular
// file) is refused with an error that still matches os.ErrNoDeadline, so
// a caller can tell the cause with errors.Is.
func TestNetpollableWrapsCause(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = netpollable(f)
	if !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("netpollable(regular file) = %v, want an error wrapping os.ErrNoDeadline", err)
	}
	r, w, err := os.Pipe() // pipes are pollable: accepted
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := netpollable(r); err != nil {
		t.Fatalf("netpollable(pipe) = %v, want nil", err)
	}
}
