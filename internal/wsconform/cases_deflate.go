package wsconform

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// DefaultOffer is the permessage-deflate offer of section 12: the client
// lets the server choose client_max_window_bits.
const DefaultOffer = "permessage-deflate; client_max_window_bits"

// Offers13 are section 13's offers: what the client asks of the server's
// compressor (server_no_context_takeover, server_max_window_bits).
var Offers13 = []string{
	DefaultOffer,
	"permessage-deflate; server_no_context_takeover; client_max_window_bits",
	"permessage-deflate; server_max_window_bits=8; client_max_window_bits",
	"permessage-deflate; server_max_window_bits=15; client_max_window_bits",
	"permessage-deflate; server_no_context_takeover; server_max_window_bits=8; client_max_window_bits",
	"permessage-deflate; server_no_context_takeover; server_max_window_bits=15; client_max_window_bits",
	"permessage-deflate; server_no_context_takeover; server_max_window_bits=8; client_max_window_bits, " +
		"permessage-deflate; server_no_context_takeover; client_max_window_bits, " + DefaultOffer,
}

// deflateSizes are the message sizes of each subsection's 18 cases: the
// first 10 sent in one frame each, the last 8 in frames of 256 bytes.
var (
	deflateSizes     = []int{16, 64, 256, 1 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10}
	deflateFragSizes = []int{256, 1 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10}
)

// payloadKinds are section 12's payloads: two texts and three binaries of
// falling compressibility.
var payloadKinds = []struct {
	name string
	op   byte
	gen  func(r *rand.Rand, n int) []byte
}{
	{"JSON text", OpText, genJSON},
	{"prose text", OpText, genProse},
	{"structured binary", OpBinary, func(r *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i / 4 * 7 >> (8 * (i % 4)))
		}
		return b
	}},
	{"low-entropy binary", OpBinary, func(r *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(16))
		}
		return b
	}},
	{"random binary", OpBinary, func(r *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}},
}

var words = strings.Fields("to be or not that is the question whether tis nobler in mind suffer slings and arrows of outrageous fortune take arms against a sea troubles by opposing end them die sleep")

func genProse(r *rand.Rand, n int) []byte {
	var b []byte
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
		b = append(b, ' ')
	}
	return b[:n]
}

func genJSON(r *rand.Rand, n int) []byte {
	var b []byte
	for i := 0; len(b) < n; i++ {
		b = fmt.Appendf(b, `{"id":%d,"name":"item-%d","tags":["a","b"],"price":%d.%02d},`, i, r.IntN(1000), r.IntN(100), r.IntN(100))
	}
	return b[:n]
}

// deflateCount is how many messages a case sends: Autobahn sends 1000; the
// suite sends about 64 KiB worth (2 to 50 messages) unless full.
func deflateCount(size int, full bool) int {
	if full {
		return 1000
	}
	return max(2, min(50, (64<<10)/size))
}

// deflateCase sends count messages made by gen, compressed, each after the
// echo of the one before, and wants them back.
func deflateCase(id, offer string, op byte, gen func(*rand.Rand, int) []byte, size, frag int, full bool) Case {
	count := deflateCount(size, full)
	desc := fmt.Sprintf("%d compressed messages of %d bytes, frames of %d (0: one), offer %q", count, size, frag, offer)
	return Case{ID: id, Desc: desc, Offer: offer, NeedDeflate: true, DeclineOK: mayDecline(offer), Run: func(s *Client) Expect {
		r := rand.New(rand.NewPCG(uint64(size), uint64(frag)))
		var want []Obs
		for i := range count {
			p := gen(r, size)
			if err := s.SendMessage(op, p, frag); err != nil {
				break
			}
			want = append(want, obsOf(op, p))
			if !s.WaitObs(i+1, 10*time.Second) {
				break
			}
		}
		return Expect{OK: want}
	}}
}

// mayDecline reports whether every element of offer asks for a window
// smaller than 32 KiB of the server's compressor, which it may not support.
func mayDecline(offer string) bool {
	for _, e := range splitElems([]string{offer}) {
		_, ps, _ := extParams(e)
		if v, ok := ps["server_max_window_bits"]; !ok || v == "15" {
			return false
		}
	}
	return true
}

func deflateSubsection(prefix, offer string, op byte, gen func(*rand.Rand, int) []byte, full bool) []Case {
	var cs []Case
	for i, n := range deflateSizes {
		cs = append(cs, deflateCase(fmt.Sprintf("%s.%d", prefix, i+1), offer, op, gen, n, 0, full))
	}
	for i, n := range deflateFragSizes {
		cs = append(cs, deflateCase(fmt.Sprintf("%s.%d", prefix, len(deflateSizes)+i+1), offer, op, gen, n, 256, full))
	}
	return cs
}

// Section12 is permessage-deflate with the default offer over five kinds of
// payload; full sends Autobahn's 1000 messages a case.
func Section12(full bool) []Case {
	var cs []Case
	for k, p := range payloadKinds {
		cs = append(cs, deflateSubsection(fmt.Sprintf("12.%d", k+1), DefaultOffer, p.op, p.gen, full)...)
	}
	return cs
}

// Section13 is permessage-deflate under each of Offers13, prose payloads.
func Section13(full bool) []Case {
	var cs []Case
	for k, offer := range Offers13 {
		cs = append(cs, deflateSubsection(fmt.Sprintf("13.%d", k+1), offer, OpText, genProse, full)...)
	}
	return cs
}

// All is every case of the suite in order.
func All(full bool) []Case {
	var cs []Case
	for _, sec := range [][]Case{Section1(), Section2(), Section3(), Section4(), Section5(), Section6(),
		Section7(), Section9(), Section10(), Section12(full), Section13(full)} {
		cs = append(cs, sec...)
	}
	return cs
}
