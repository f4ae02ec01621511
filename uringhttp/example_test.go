package uringhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// A net/http handler served on io_uring's callback API.
func ExampleServer() {
	rt, err := uringrt.New(uringrt.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", r.PathValue("name"))
	})
	srv := &uringhttp.Server{Handler: mux, Runtime: rt, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)

	resp, err := http.Get("http://" + ln.Addr().String() + "/hello/gopher")
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(b))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	// Output: hello, gopher
}
