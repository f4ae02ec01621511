package wsconform

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// deflateParams is what the server's permessage-deflate response agreed.
type deflateParams struct {
	serverNoCtx, clientNoCtx     bool
	serverMaxBits, clientMaxBits int  // 15 when absent
	ignoredRequest               bool // the response fits no offer's request strictly
}

// extParams splits one extension element ("name; a; b=1") into its name and
// parameters.
func extParams(elem string) (string, map[string]string, error) {
	parts := strings.Split(elem, ";")
	name := strings.TrimSpace(parts[0])
	ps := map[string]string{}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		k = strings.TrimSpace(k)
		if _, dup := ps[k]; dup {
			return name, nil, fmt.Errorf("parameter %s twice", k)
		}
		ps[k] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	return name, ps, nil
}

func splitElems(headers []string) []string {
	var out []string
	for _, h := range headers {
		for _, e := range strings.Split(h, ",") {
			if strings.TrimSpace(e) != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// parseDeflateResponse checks the server's Sec-WebSocket-Extensions against
// what offer offered (RFC 7692 section 7.1).
func parseDeflateResponse(headers []string, offer string) (*deflateParams, error) {
	elems := splitElems(headers)
	if len(elems) != 1 {
		return nil, fmt.Errorf("%d extensions accepted", len(elems))
	}
	name, ps, err := extParams(elems[0])
	if err != nil {
		return nil, err
	}
	if name != "permessage-deflate" || offer == "" {
		return nil, fmt.Errorf("extension %q not offered", name)
	}
	p := &deflateParams{serverMaxBits: 15, clientMaxBits: 15}
	for k, v := range ps {
		switch k {
		case "server_no_context_takeover", "client_no_context_takeover":
			if v != "" {
				return nil, fmt.Errorf("%s=%s", k, v)
			}
			if k[0] == 's' {
				p.serverNoCtx = true
			} else {
				p.clientNoCtx = true
			}
		case "server_max_window_bits", "client_max_window_bits":
			n, err := strconv.Atoi(v)
			if err != nil || n < 8 || n > 15 {
				return nil, fmt.Errorf("%s=%q", k, v)
			}
			if k[0] == 's' {
				p.serverMaxBits = n
			} else {
				p.clientMaxBits = n
			}
		default:
			return nil, fmt.Errorf("unknown parameter %s", k)
		}
	}
	fits, clientBitsOffered := false, false
	for _, e := range splitElems([]string{offer}) {
		_, off, _ := extParams(e)
		_, cb := off["client_max_window_bits"]
		clientBitsOffered = clientBitsOffered || cb
		_, rcb := ps["client_max_window_bits"]
		ok := !(rcb && !cb)
		if v, req := off["server_max_window_bits"]; req {
			want, _ := strconv.Atoi(v)
			_, has := ps["server_max_window_bits"]
			ok = ok && (has || want == 15) && p.serverMaxBits <= want
		}
		if _, req := off["server_no_context_takeover"]; req {
			ok = ok && p.serverNoCtx
		}
		fits = fits || ok
	}
	if _, has := ps["client_max_window_bits"]; has && !clientBitsOffered {
		return nil, errors.New("client_max_window_bits in the response but not offered")
	}
	p.ignoredRequest = !fits
	return p, nil
}

// txDeflate compresses the client's messages as the agreed parameters allow.
type txDeflate struct {
	p   *deflateParams
	buf bytes.Buffer
	w   *flate.Writer
}

func newTxDeflate(p *deflateParams) *txDeflate {
	t := &txDeflate{p: p}
	level := flate.BestSpeed
	if p.clientMaxBits < 15 {
		// No back-references at all: valid for every window size.
		level = flate.HuffmanOnly
	}
	t.w, _ = flate.NewWriter(&t.buf, level)
	return t
}

// compress returns p's message payload compressed, the final empty block's
// 00 00 ff ff tail removed (RFC 7692 section 7.2.1).
func (t *txDeflate) compress(msg []byte) []byte {
	t.buf.Reset()
	if t.p.clientNoCtx {
		t.w.Reset(&t.buf)
	}
	t.w.Write(msg)
	t.w.Flush()
	return bytes.Clone(bytes.TrimSuffix(t.buf.Bytes(), []byte{0, 0, 0xff, 0xff}))
}

// rxDeflate inflates the server's messages, keeping the window between
// messages unless the server agreed to no context takeover.
type rxDeflate struct {
	p    *deflateParams
	dict []byte
}

func newRxDeflate(p *deflateParams) *rxDeflate { return &rxDeflate{p: p} }

var deflateTail = []byte{0, 0, 0xff, 0xff, 1, 0, 0, 0xff, 0xff}

func (r *rxDeflate) inflate(p []byte) ([]byte, error) {
	if r.p == nil {
		return nil, errors.New("compressed message without permessage-deflate")
	}
	var dict []byte
	if !r.p.serverNoCtx {
		dict = r.dict
	}
	fr := flate.NewReaderDict(io.MultiReader(bytes.NewReader(p), bytes.NewReader(deflateTail)), dict)
	out, err := io.ReadAll(io.LimitReader(fr, maxServerFrame+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxServerFrame {
		return nil, errors.New("inflates past 64 MiB")
	}
	if !r.p.serverNoCtx {
		r.dict = append(r.dict, out...)
		if len(r.dict) > 32<<10 {
			r.dict = bytes.Clone(r.dict[len(r.dict)-32<<10:])
		}
	}
	return out, nil
}

// SendMessage sends msg as op, compressed when permessage-deflate was
// agreed, in frames of frag payload bytes (0: one frame).
func (s *Client) SendMessage(op byte, msg []byte, frag int) error {
	rsv := byte(0)
	if s.tx != nil {
		msg, rsv = s.tx.compress(msg), RSV1
	}
	if frag <= 0 || frag >= len(msg) {
		return s.Send(Frame{Fin: true, RSV: rsv, Op: op, Payload: msg}.Encode(), 0)
	}
	var b []byte
	for i := 0; i < len(msg); i += frag {
		end := min(i+frag, len(msg))
		f := Frame{Fin: end == len(msg), Op: OpCont, Payload: msg[i:end]}
		if i == 0 {
			f.Op, f.RSV = op, rsv
		}
		b = append(b, f.Encode()...)
	}
	return s.Send(b, 0)
}
