package wsconform

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// kosme is the Greek word "kosme", the UTF-8 stress test's first sample.
var kosme = []byte("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5")

// utf8Case sends payload as one text message: echoed if it is UTF-8 (RFC
// 3629: no surrogates, no overlong forms, nothing past U+10FFFF), else the
// connection must fail with 1007.
func utf8Case(id string, payload []byte, chop int) Case {
	valid := utf8.Valid(payload)
	return Case{ID: id, Desc: fmt.Sprintf("text %x (valid %v)", payload, valid), Run: func(s *Client) Expect {
		s.SendFrames(chop, false, Msg(OpText, payload))
		if valid {
			return Expect{OK: []Obs{Text(payload)}}
		}
		return Expect{Fail: true, Codes: []int{1007}}
	}}
}

// failFast sends the parts of a one after another (their bytes already
// encoded frames), waits for the server to fail, then sends b: failing only
// after b is NON-STRICT.
func failFast(id, desc string, b []byte, a ...[]byte) Case {
	return Case{ID: id, Desc: desc, Run: func(s *Client) Expect {
		for _, part := range a {
			s.Send(part, 0)
			time.Sleep(5 * time.Millisecond)
		}
		e := Expect{Fail: true, Codes: []int{1007}}
		if !s.WaitEOF(failFastWait) {
			s.Send(b, 0)
			e.FailLate = true
		}
		return e
	}}
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// Section6 is UTF-8 handling: valid and invalid text in one message, across
// fragments and chops, and failing fast on the first bad byte.
func Section6() []Case {
	hello := []byte("Hello-\xc2\xb5@\xc3\x9f\xc3\xb6\xc3\xa4\xc3\xbc\xc3\xa0\xc3\xa1-UTF-8!!")
	cs := []Case{
		utf8Case("6.1.1", nil, 0),
		{ID: "6.1.2", Desc: "3 empty text fragments", Run: func(s *Client) Expect {
			s.SendFrames(0, false, frag(OpText, false, ""), frag(OpCont, false, ""), frag(OpCont, true, ""))
			return Expect{OK: []Obs{Text(nil)}}
		}},
		{ID: "6.1.3", Desc: "empty, non-empty, empty text fragments", Run: func(s *Client) Expect {
			s.SendFrames(0, false, frag(OpText, false, ""), frag(OpCont, false, "middle frame payload"), frag(OpCont, true, ""))
			return Expect{OK: []Obs{Text([]byte("middle frame payload"))}}
		}},
		utf8Case("6.2.1", hello, 0),
		{ID: "6.2.2", Desc: "valid UTF-8 in 2 fragments split at a code point", Run: func(s *Client) Expect {
			s.SendFrames(0, false, Frame{Op: OpText, Payload: hello[:7]}, Frame{Fin: true, Op: OpCont, Payload: hello[7:]})
			return Expect{OK: []Obs{Text(hello)}}
		}},
		utf8Case("6.2.3", hello, 1),
		utf8Case("6.2.4", kosme, 1),
	}
	bad := cat(kosme, []byte("\xed\xa0\x80"), []byte("edited"))
	cs = append(cs, utf8Case("6.3.1", bad, 0), utf8Case("6.3.2", bad, 1))

	// Fail fast: the bad bytes arrive, the rest only after a pause.
	f1, f3 := Frame{Op: OpText, Payload: kosme}, Frame{Fin: true, Op: OpCont, Payload: []byte("edited")}
	cs = append(cs,
		failFast("6.4.1", "valid fragment, invalid fragment, then a valid one", f3.Encode(),
			f1.Encode(), Frame{Op: OpCont, Payload: []byte("\xf4\x90\x80\x80")}.Encode()),
		failFast("6.4.2", "fragments cut inside the invalid code point",
			Frame{Fin: true, Op: OpCont, Payload: []byte("\x80\x80edited")}.Encode(),
			Frame{Op: OpText, Payload: cat(kosme, []byte{0xf4})}.Encode(), Frame{Op: OpCont, Payload: []byte{0x90}}.Encode()))
	one := Msg(OpText, cat(kosme, []byte("\xf4\x90\x80\x80"), []byte("edited"))).Encode()
	// The frame header is 6 bytes (payload < 126, masked); kosme is 11.
	cs = append(cs,
		failFast("6.4.3", "one frame, its bytes cut after the invalid code point", one[6+15:], one[:6+11], one[6+11:6+15]),
		failFast("6.4.4", "one frame, its bytes cut inside the invalid code point", one[6+13:], one[:6+12], one[6+12:6+13]))

	groups := [][]string{
		{"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"},
		nil, // 6.6: prefixes of kosme, below
		{"\x00", "\xc2\x80", "\xe0\xa0\x80", "\xf0\x90\x80\x80"},
		{"\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80"},
		{"\x7f", "\xdf\xbf", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"},
		{"\xf7\xbf\xbf\xbf", "\xfb\xbf\xbf\xbf\xbf", "\xfd\xbf\xbf\xbf\xbf\xbf"},
		{"\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80"},
		{"\x80", "\xbf", "\x80\xbf", "\x80\xbf\x80", "\x80\xbf\x80\xbf", "\x80\xbf\x80\xbf\x80", "\x80\xbf\x80\xbf\x80\xbf", string(span(0x80, 0xbf, ""))},
		{string(span(0xc0, 0xdf, " ")), string(span(0xe0, 0xef, " ")), string(span(0xf0, 0xf7, " ")), string(span(0xf8, 0xfb, " ")), string(span(0xfc, 0xfd, " "))},
		missingLast,
		{joined(missingLast)},
		{"\xfe", "\xff", "\xfe\xfe\xff\xff"},
		{"\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xf8\x80\x80\x80\xaf", "\xfc\x80\x80\x80\x80\xaf"},
		{"\xc1\xbf", "\xe0\x9f\xbf", "\xf0\x8f\xbf\xbf", "\xf8\x87\xbf\xbf\xbf", "\xfc\x83\xbf\xbf\xbf\xbf"},
		{"\xc0\x80", "\xe0\x80\x80", "\xf0\x80\x80\x80", "\xf8\x80\x80\x80\x80", "\xfc\x80\x80\x80\x80\x80"},
		{"\xed\xa0\x80", "\xed\xad\xbf", "\xed\xae\x80", "\xed\xaf\xbf", "\xed\xb0\x80", "\xed\xbe\x80", "\xed\xbf\xbf"},
		{"\xed\xa0\x80\xed\xb0\x80", "\xed\xa0\x80\xed\xbf\xbf", "\xed\xad\xbf\xed\xb0\x80", "\xed\xad\xbf\xed\xbf\xbf",
			"\xed\xae\x80\xed\xb0\x80", "\xed\xae\x80\xed\xbf\xbf", "\xed\xaf\xbf\xed\xb0\x80", "\xed\xaf\xbf\xed\xbf\xbf"},
		nonCharacters(),
		{"\xef\xbf\xb9", "\xef\xbf\xba", "\xef\xbf\xbb", "\xef\xbf\xbc", "\xef\xbf\xbd", "\xef\xbf\xbe", "\xef\xbf\xbf"},
	}
	for g, group := range groups {
		if g == 1 {
			for i := 1; i <= len(kosme); i++ {
				cs = append(cs, utf8Case(fmt.Sprintf("6.6.%d", i), kosme[:i], 0))
			}
			continue
		}
		for i, p := range group {
			cs = append(cs, utf8Case(fmt.Sprintf("6.%d.%d", g+5, i+1), []byte(p), 0))
		}
	}
	return cs
}

var missingLast = []string{"\xc0", "\xe0\x80", "\xf0\x80\x80", "\xf8\x80\x80\x80", "\xfc\x80\x80\x80\x80",
	"\xdf", "\xef\xbf", "\xf7\xbf\xbf", "\xfb\xbf\xbf\xbf", "\xfd\xbf\xbf\xbf\xbf"}

func joined(ss []string) string {
	out := ""
	for _, s := range ss {
		out += s
	}
	return out
}

// span is the bytes lo..hi, each followed by sep.
func span(lo, hi byte, sep string) []byte {
	var b []byte
	for c := int(lo); c <= int(hi); c++ {
		b = append(b, byte(c))
		b = append(b, sep...)
	}
	return b
}

// nonCharacters are U+xFFFE and U+xFFFF of every plane: valid UTF-8.
func nonCharacters() []string {
	var out []string
	for plane := rune(0); plane <= 16; plane++ {
		out = append(out, string(plane<<16|0xFFFE), string(plane<<16|0xFFFF))
	}
	return out
}
