package interop

// Routers and WebSocket libraries as their users write them, served by
// uringhttp: chi, gin and echo route; gorilla/websocket and
// coder/websocket upgrade through http.Hijacker and echo messages.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	uringrt "github.com/uringrt/uringrt/runtime"
	"github.com/uringrt/uringrt/uringhttp"
)

// serveUring serves h with uringhttp on 127.0.0.1 and returns its base URL.
func serveUring(t *testing.T, h http.Handler) string {
	t.Helper()
	rt, err := uringrt.New(uringrt.Config{Loops: 2, Backend: uringrt.BackendUring})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := rt.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	srv := &uringhttp.Server{Handler: h, Runtime: rt, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
			srv.Close()
		}
		<-done
		rt.Close()
	})
	return "http://" + ln.Addr().String()
}

// routeCase is one request to a router and the answer it must give.
type routeCase struct {
	method, path, body string
	status             int
	want               string // the body
	header             string // a "Key: value" the response must carry
}

func checkRoutes(t *testing.T, base string, cases []routeCase) {
	t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || strings.TrimSpace(string(b)) != c.want {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, resp.StatusCode, b, c.status, c.want)
		}
		if c.header != "" {
			k, v, _ := strings.Cut(c.header, ": ")
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s %s: header %s = %q, want %q", c.method, c.path, k, got, v)
			}
		}
	}
}

func TestUringhttpChi(t *testing.T) {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Mw", "chi")
			next.ServeHTTP(w, r)
		})
	})
	r.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user %s", chi.URLParam(r, "id"))
	})
	r.Route("/api", func(r chi.Router) {
		r.Post("/items", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "created %s", b)
		})
	})
	base := serveUring(t, r)
	checkRoutes(t, base, []routeCase{
		{"GET", "/users/42", "", 200, "user 42", "X-Mw: chi"},
		{"POST", "/api/items", `{"n":1}`, 201, `created {"n":1}`, ""},
		{"GET", "/nope", "", 404, "404 page not found", ""},
		{"DELETE", "/users/42", "", 405, "", ""},
	})
}

func TestUringhttpGin(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard))
	r.GET("/users/:id", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"id": c.Param("id"), "q": c.Query("q")})
	})
	r.POST("/items", func(c *gin.Context) {
		var in struct{ N int }
		if err := c.BindJSON(&in); err != nil {
			return
		}
		c.String(http.StatusCreated, "n=%d", in.N)
	})
	r.GET("/panic", func(c *gin.Context) { panic("gin handler panic") })
	r.GET("/stream", func(c *gin.Context) {
		i := 0
		c.Stream(func(w io.Writer) bool {
			fmt.Fprintf(w, "tick%d;", i)
			i++
			return i < 3
		})
	})
	base := serveUring(t, r)
	checkRoutes(t, base, []routeCase{
		{"GET", "/users/7?q=x", "", 200, `{"id":"7","q":"x"}`, "Content-Type: application/json; charset=utf-8"},
		{"POST", "/items", `{"N":5}`, 201, "n=5", ""},
		{"POST", "/items", `not json`, 400, "", ""},
		{"GET", "/panic", "", 500, "", ""},
		{"GET", "/stream", "", 200, "tick0;tick1;tick2;", ""},
		{"GET", "/missing", "", 404, "404 page not found", ""},
	})
}

func TestUringhttpEcho(t *testing.T) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/users/:id", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"id": c.Param("id")})
	})
	e.POST("/items", func(c echo.Context) error {
		var in struct{ N int }
		if err := c.Bind(&in); err != nil {
			return err
		}
		return c.String(http.StatusCreated, fmt.Sprintf("n=%d", in.N))
	})
	e.GET("/err", func(c echo.Context) error { return echo.NewHTTPError(http.StatusTeapot, "teapot") })
	base := serveUring(t, e)
	checkRoutes(t, base, []routeCase{
		{"GET", "/users/9", "", 200, `{"id":"9"}`, "Content-Type: application/json"},
		{"POST", "/items", `{"N":3}`, 201, "n=3", ""},
		{"GET", "/err", "", 418, `{"message":"teapot"}`, ""},
		{"GET", "/missing", "", 404, `{"message":"Not Found"}`, ""},
	})
}

func TestUringhttpGorillaWebSocket(t *testing.T) {
	up := websocket.Upgrader{}
	base := serveUring(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, msg); err != nil {
				return
			}
		}
	}))
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i, size := range []int{1, 125, 126, 65535, 65536, 1 << 20} {
		msg := bytes.Repeat([]byte{byte('a' + i)}, size)
		mt := websocket.BinaryMessage
		if i%2 == 0 {
			mt = websocket.TextMessage
		}
		if err := c.WriteMessage(mt, msg); err != nil {
			t.Fatal(err)
		}
		gt, got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message of %d bytes: %v", size, err)
		}
		if gt != mt || !bytes.Equal(got, msg) {
			t.Fatalf("message of %d bytes came back as type %d, %d bytes", size, gt, len(got))
		}
	}
	// A ping gets a pong; a close gets a close.
	pong := make(chan struct{}, 1)
	c.SetPongHandler(func(string) error { pong <- struct{}{}; return nil })
	c.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second))
	c.WriteMessage(websocket.TextMessage, []byte("after ping"))
	if _, m, err := c.ReadMessage(); err != nil || string(m) != "after ping" {
		t.Fatalf("after ping: %q %v", m, err)
	}
	select {
	case <-pong:
	default:
		t.Fatal("no pong")
	}
	c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("after close: %v, want a normal close", err)
	}
}

func TestUringhttpCoderWebSocket(t *testing.T) {
	base := serveUring(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := cws.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(4 << 20)
		for {
			mt, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), mt, msg); err != nil {
				return
			}
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := cws.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(4 << 20)
	for _, size := range []int{0, 10, 70000, 1 << 20} {
		msg := bytes.Repeat([]byte("c"), size)
		if err := c.Write(ctx, cws.MessageBinary, msg); err != nil {
			t.Fatal(err)
		}
		mt, got, err := c.Read(ctx)
		if err != nil || mt != cws.MessageBinary || !bytes.Equal(got, msg) {
			t.Fatalf("message of %d bytes: type %v, %d bytes, %v", size, mt, len(got), err)
		}
	}
	if err := c.Close(cws.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("close handshake: %v", err)
	}
}
