package uringhttp

import (
	"io"
	"sync"
)

// sniffLen is how many bytes http.DetectContentType looks at.
const sniffLen = 512

var copyBufPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

// ReadFrom implements io.ReaderFrom as net/http's ResponseWriter does, so
// that io.Copy(w, src) (http.ServeContent, http.FileServer, a handler
// copying a file) frames the response as under net/http: the first 512
// bytes go through Write (they decide Content-Type when it is not set),
// then the head is sent, then the rest is copied in 32 KiB pieces from a
// pooled buffer. It returns the bytes copied and the first error of src
// (io.EOF aside) or of the connection.
func (w *response) ReadFrom(src io.Reader) (n int64, err error) {
	buf := copyBufPool.Get().(*[32 << 10]byte)
	defer copyBufPool.Put(buf)
	if !w.cw.wroteHeader {
		n0, err := io.CopyBuffer(writerOnly{w}, io.LimitReader(src, sniffLen), buf[:])
		n += n0
		if err != nil || n0 < sniffLen {
			return n, err
		}
	}
	if err := w.FlushError(); err != nil {
		return n, err
	}
	n0, err := io.CopyBuffer(writerOnly{w}, src, buf[:])
	return n + n0, err
}
