package uringrt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uringrt/uringrt/runtime/experiment"
)

// TestConfigRejectsOutOfRange: values that are neither zero (the default)
// nor in range fail New with ErrConfig naming the field, instead of being
// replaced silently.
func TestConfigRejectsOutOfRange(t *testing.T) {
	tests := []struct {
		field string
		cfg   Config
	}{
		{"Loops", Config{Loops: -1}},
		{"Loops", Config{Loops: MaxLoops + 1}},
		{"Loops", Config{Loops: 100000}}, // 100,000 rings would take half a minute to set up
		{"Workers", Config{Workers: -1}},
		{"MaxConns", Config{MaxConns: -3}},
		{"MaxWriteBuffer", Config{MaxWriteBuffer: -1}},
		{"WaitLatency", Config{WaitLatency: -5 * time.Second}},
		{"RingEntries", Config{RingEntries: 1 << 20}},
		{"BufferSize", Config{BufferSize: -1}},
		{"Buffers", Config{Buffers: 3}},
		{"Backend", Config{Backend: 99}},
		{"Pollable", Config{Switches: experiment.Switches{Pollable: 9}}},
		{"WaitBatch", Config{Switches: experiment.Switches{WaitBatch: 7}}},
		{"IdlePoll", Config{IdlePoll: -time.Microsecond}},
		{"IdlePoll", Config{IdlePoll: 2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			rt, err := New(tt.cfg)
			if err == nil {
				rt.Close()
				t.Fatal("New accepted it")
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("err = %v, does not name %s", err, tt.field)
			}
			t.Log(err)
		})
	}
	rt, err := New(Config{Backend: BackendStd, Buffers: 64, RingEntries: 32768})
	if err != nil {
		t.Fatalf("in-range config rejected: %v", err)
	}
	rt.Close()
	if err := validate(&Config{Loops: MaxLoops}); err != nil {
		t.Errorf("Loops = MaxLoops rejected: %v", err)
	}
}
