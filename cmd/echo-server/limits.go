package main

import (
	"flag"
	"time"

	"github.com/uringrt/uringrt/runtime"
)

// The runtime's limits against hostile peers (issue 15): an idle timeout
// for both APIs and the callback API's memory budget.

// limitOptions are the flags of this file.
type limitOptions struct {
	idleTimeout time.Duration
	maxBuffered int
}

const maxIdleTimeout = 24 * time.Hour

func (o *limitOptions) register(fs *flag.FlagSet) {
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 0, "close a connection that made no read or write progress for this long (Config.IdleTimeout; 0 = never)")
	fs.IntVar(&o.maxBuffered, "max-buffered", 0, "cap on the bytes all callback connections queue for output together (Config.MaxBufferedBytes; 0 = default 256 MiB, -1 = no cap)")
}

// limitRanges are the ranges of this file's flags (see flagRanges).
func limitRanges() map[string]flagRange {
	return map[string]flagRange{
		"idle-timeout": {"0 (never) or 10ms..24h", func(v any) bool {
			d, ok := v.(time.Duration)
			return ok && (d == 0 || d >= 10*time.Millisecond && d <= maxIdleTimeout)
		}},
		"max-buffered": intRange(-1, 1<<40, "bytes; 0 = default, -1 = no cap"),
	}
}

// apply sets the Config fields of these flags.
func (o *limitOptions) apply(cfg *uringrt.Config) {
	cfg.IdleTimeout = o.idleTimeout
	cfg.MaxBufferedBytes = int64(o.maxBuffered)
}
