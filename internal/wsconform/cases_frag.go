package wsconform

import "time"

func frag(op byte, fin bool, p string) Frame { return Frame{Fin: fin, Op: op, Payload: []byte(p)} }

// Section5 is fragmentation, with control frames between fragments.
func Section5() []Case {
	f1, f2 := frag(OpText, false, "fragment1"), frag(OpCont, true, "fragment2")
	whole := []Obs{Text([]byte("fragment1fragment2"))}
	ping := Msg(OpPing, []byte("ping payload"))
	withPing := append([]Obs{Pong([]byte("ping payload"))}, whole...)
	echo := func(id, desc string, chop int, frameWise bool, want []Obs, fs ...Frame) Case {
		return Case{ID: id, Desc: desc, Run: func(s *Client) Expect {
			s.SendFrames(chop, frameWise, fs...)
			return Expect{OK: want}
		}}
	}
	text := Msg(OpText, []byte("Hello, world!"))
	lone := func(fin bool) Frame { return frag(OpCont, fin, "non-continuation payload") }
	cs := []Case{
		failCase("5.1", "ping in 2 fragments", 0, false, nil, frag(OpPing, false, "fragment1"), f2),
		failCase("5.2", "pong in 2 fragments", 0, false, nil, frag(OpPong, false, "fragment1"), f2),
		echo("5.3", "text in 2 fragments", 0, false, whole, f1, f2),
		echo("5.4", "text in 2 fragments, a byte at a time", 1, false, whole, f1, f2),
		echo("5.5", "text in 2 fragments, frame by frame", 0, true, whole, f1, f2),
		echo("5.6", "text in 2 fragments, a ping between", 0, false, withPing, f1, ping, f2),
		echo("5.7", "as 5.6, a byte at a time", 1, false, withPing, f1, ping, f2),
		echo("5.8", "as 5.6, frame by frame", 0, true, withPing, f1, ping, f2),
	}
	for i, fin := range []bool{true, false} {
		for j, mode := range []struct {
			chop      int
			frameWise bool
		}{{0, false}, {0, true}, {1, false}} {
			id := []string{"5.9", "5.10", "5.11", "5.12", "5.13", "5.14"}[i*3+j]
			cs = append(cs, failCase(id, "continuation with nothing to continue, then text",
				mode.chop, mode.frameWise, nil, lone(fin), text))
		}
	}
	cs = append(cs,
		failCase("5.15", "text in 2 fragments, a lone continuation, text", 0, false, whole,
			f1, f2, frag(OpCont, false, "fragment3"), frag(OpText, true, "fragment4")),
		failCase("5.16", "twice: lone continuation, text fragment, last continuation", 0, false, nil,
			lone(false), f1, f2, lone(false), f1, f2),
		failCase("5.17", "twice: lone final continuation, text fragment, last continuation", 0, false, nil,
			lone(true), f1, f2, lone(true), f1, f2),
		failCase("5.18", "text fragment, then a new text frame", 0, false, nil, f1, frag(OpText, true, "fragment2")),
	)
	five := func(id string, frameWise bool) Case {
		return Case{ID: id, Desc: "text in 5 fragments, pings between, a pause", Run: func(s *Client) Expect {
			p1, p2 := Msg(OpPing, []byte("pongme 1!")), Msg(OpPing, []byte("pongme 2!"))
			s.SendFrames(0, frameWise, frag(OpText, false, "fragment1"), frag(OpCont, false, "fragment2"), p1,
				frag(OpCont, false, "fragment3"))
			time.Sleep(100 * time.Millisecond)
			s.SendFrames(0, frameWise, frag(OpCont, false, "fragment4"), p2, frag(OpCont, true, "fragment5"))
			return Expect{OK: []Obs{Pong([]byte("pongme 1!")), Pong([]byte("pongme 2!")),
				Text([]byte("fragment1fragment2fragment3fragment4fragment5"))}}
		}}
	}
	return append(cs, five("5.19", false), five("5.20", true))
}
