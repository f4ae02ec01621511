package uringhttp

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// transfer applies the Transfer-Encoding and Content-Length rules.
func (p *parsed) transfer() error {
	req, h := p.req, p.req.Header
	if raw, present := h["Transfer-Encoding"]; present {
		delete(h, "Transfer-Encoding")
		if req.ProtoAtLeast(1, 1) {
			if len(raw) != 1 {
				return &unsupportedTEError{fmt.Sprintf("too many transfer encodings: %q", raw)}
			}
			if !strings.EqualFold(raw[0], "chunked") {
				return &unsupportedTEError{fmt.Sprintf("unsupported transfer encoding: %q", raw[0])}
			}
			p.chunked = true
		}
	}
	cls := h["Content-Length"]
	if len(cls) > 1 {
		first := textproto.TrimString(cls[0])
		for _, ct := range cls[1:] {
			if first != textproto.TrimString(ct) {
				return protoError("http: message cannot contain multiple Content-Length headers")
			}
		}
		h["Content-Length"] = []string{first}
		cls = h["Content-Length"]
	}
	var n int64
	if len(cls) > 0 {
		cl := textproto.TrimString(cls[0])
		if cl == "" {
			return protoError("invalid empty Content-Length")
		}
		v, err := strconv.ParseUint(cl, 10, 63)
		if err != nil {
			return protoError("bad Content-Length")
		}
		n = int64(v)
	}
	switch {
	case p.chunked:
		delete(h, "Content-Length")
		p.clen, p.hasBody = -1, true
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
	case len(cls) > 0:
		p.clen, p.hasBody = n, n > 0
		req.ContentLength = n
	default:
		delete(h, "Content-Length")
		p.clen = 0
	}
	// Trailer
	if vv, ok := h["Trailer"]; ok && p.chunked {
		delete(h, "Trailer")
		var tr http.Header
		for _, v := range vv {
			for _, f := range strings.Split(v, ",") {
				f = textproto.TrimString(f)
				if f == "" {
					continue
				}
				k := http.CanonicalHeaderKey(f)
				switch k {
				case "Transfer-Encoding", "Trailer", "Content-Length":
					return protoError("bad trailer key")
				}
				if tr == nil {
					tr = make(http.Header)
				}
				tr[k] = nil
			}
		}
		req.Trailer = tr
	}
	return nil
}
