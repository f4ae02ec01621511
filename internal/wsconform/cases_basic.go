package wsconform

import (
	"bytes"
	"fmt"
	"time"
)

// failFastWait is how long a fail-fast case waits for the server to fail
// the connection before it sends the frames that follow the bad one.
const failFastWait = 2 * time.Second

func repeat(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// echoCase sends one message of op and wants it echoed.
func echoCase(id, desc string, op byte, payload []byte, chop int) Case {
	return Case{ID: id, Desc: desc, Run: func(s *Client) Expect {
		s.SendFrames(chop, false, Msg(op, payload))
		return Expect{OK: []Obs{obsOf(op, payload)}}
	}}
}

func obsOf(op byte, b []byte) Obs {
	if op == OpText {
		return Text(b)
	}
	return Binary(b)
}

// failCase sends fs (chopped) and wants the connection failed, after
// echoing echoed (or, NON-STRICT, failed before echoing them).
func failCase(id, desc string, chop int, frameWise bool, echoed []Obs, fs ...Frame) Case {
	return Case{ID: id, Desc: desc, Run: func(s *Client) Expect {
		s.SendFrames(chop, frameWise, fs...)
		e := Expect{OK: echoed, Fail: true}
		if len(echoed) > 0 {
			for i := range echoed {
				e.NonStrict = append(e.NonStrict, echoed[:i])
			}
		}
		return e
	}}
}

// Section1 is framing: text and binary messages of the sizes around the
// length encodings' limits.
func Section1() []Case {
	sizes := []int{0, 125, 126, 127, 128, 65535, 65536}
	var cs []Case
	for i, op := range []byte{OpText, OpBinary} {
		kind := map[byte]string{OpText: "text", OpBinary: "binary"}[op]
		fill := map[byte]byte{OpText: '*', OpBinary: 0xfe}[op]
		for j, n := range sizes {
			cs = append(cs, echoCase(fmt.Sprintf("1.%d.%d", i+1, j+1),
				fmt.Sprintf("%s message of %d bytes", kind, n), op, repeat(fill, n), 0))
		}
		cs = append(cs, echoCase(fmt.Sprintf("1.%d.8", i+1),
			kind+" message of 65536 bytes sent in chops of 997", op, repeat(fill, 65536), 997))
	}
	return cs
}

// Section2 is pings and pongs.
func Section2() []Case {
	ping := func(p []byte) Frame { return Msg(OpPing, p) }
	pong := func(p []byte) Frame { return Msg(OpPong, p) }
	bin := []byte{0, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0, 0xff}
	one := func(id, desc string, p []byte, chop int) Case {
		return Case{ID: id, Desc: desc, Run: func(s *Client) Expect {
			s.SendFrames(chop, false, ping(p))
			return Expect{OK: []Obs{Pong(p)}}
		}}
	}
	ten := func(id string, chop int) Case {
		return Case{ID: id, Desc: "10 pings with payloads", Run: func(s *Client) Expect {
			var fs []Frame
			var want []Obs
			for i := range 10 {
				p := fmt.Appendf(nil, "payload-%d", i)
				fs, want = append(fs, ping(p)), append(want, Pong(p))
			}
			s.SendFrames(chop, false, fs...)
			// A server may answer only the last of pings it read together.
			return Expect{OK: want, NonStrict: [][]Obs{want[9:]}}
		}}
	}
	return []Case{
		one("2.1", "ping without payload", nil, 0),
		one("2.2", "ping with a small text payload", []byte("Hello, world!"), 0),
		one("2.3", "ping with a small binary payload", bin, 0),
		one("2.4", "ping with a 125-byte payload", repeat(0xfe, 125), 0),
		failCase("2.5", "ping with a 126-byte payload", 0, false, nil, ping(repeat(0xfe, 126))),
		one("2.6", "ping with a 125-byte payload sent a byte at a time", repeat(0xfe, 125), 1),
		{ID: "2.7", Desc: "unsolicited pong without payload", Run: func(s *Client) Expect {
			s.SendFrames(0, false, pong(nil))
			return Expect{}
		}},
		{ID: "2.8", Desc: "unsolicited pong with payload", Run: func(s *Client) Expect {
			s.SendFrames(0, false, pong([]byte("unsolicited pong payload")))
			return Expect{}
		}},
		{ID: "2.9", Desc: "unsolicited pong, then a ping", Run: func(s *Client) Expect {
			s.SendFrames(0, false, pong([]byte("unsolicited pong payload")), ping([]byte("ping payload")))
			return Expect{OK: []Obs{Pong([]byte("ping payload"))}}
		}},
		ten("2.10", 0),
		ten("2.11", 1),
	}
}

// Section3 is reserved bits without an extension that defines them.
func Section3() []Case {
	hello := []byte("Hello, world!")
	echo := []Obs{Text(hello)}
	tx := Msg(OpText, hello)
	pingF := Msg(OpPing, hello)
	with := func(f Frame, rsv byte) Frame { f.RSV = rsv; return f }
	return []Case{
		failCase("3.1", "text with RSV = 1", 0, false, nil, with(tx, 1)),
		failCase("3.2", "text, text with RSV = 2, ping", 0, false, echo, tx, with(tx, 2), pingF),
		failCase("3.3", "as 3.2 with RSV = 3, frame by frame", 0, true, echo, tx, with(tx, 3), pingF),
		failCase("3.4", "as 3.2 with RSV = 4, a byte at a time", 1, false, echo, tx, with(tx, 4), pingF),
		failCase("3.5", "binary with RSV = 5", 0, false, nil, with(Msg(OpBinary, []byte{0, 0xff, 0xfe}), 5)),
		failCase("3.6", "ping with RSV = 6", 0, false, nil, with(pingF, 6)),
		failCase("3.7", "close with RSV = 7", 0, false, nil, with(CloseFrame(1000, ""), 7)),
	}
}

// Section4 is reserved opcodes.
func Section4() []Case {
	hello := []byte("Hello, world!")
	echo := []Obs{Text(hello)}
	var cs []Case
	for g, base := range []byte{3, 11} {
		for i := range 5 {
			op := base + byte(i)
			id := fmt.Sprintf("4.%d.%d", g+1, i+1)
			desc := fmt.Sprintf("reserved opcode %d", op)
			switch i {
			case 0:
				cs = append(cs, failCase(id, desc, 0, false, nil, Msg(op, nil)))
			case 1:
				cs = append(cs, failCase(id, desc+" with payload", 0, false, nil, Msg(op, []byte("reserved opcode payload"))))
			default:
				chop := 0
				if i == 4 {
					chop = 1
				}
				cs = append(cs, failCase(id, "text, "+desc+", ping", chop, i == 3, echo,
					Msg(OpText, hello), Msg(op, []byte("reserved opcode payload")), Msg(OpPing, hello)))
			}
		}
	}
	return cs
}
