package soak

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Service names what a wire's front stands for: fault kinds differ by service.
type Service string

// The services a bot process reaches over HTTP.
const (
	Scaleway Service = "scaleway"
	GitHub   Service = "github"
	S3       Service = "s3"
	Factory  Service = "factory"
)

// Wire is one bot process's connection to the world: a loopback reverse proxy per service that
// injects the process's faults and, at the kill point, cuts every connection of the process at
// once and for good. Requests keep their Host header, so S3's signatures (which cover it) stay
// valid through the proxy.
type Wire struct {
	mu        sync.Mutex
	rng       *rand.Rand
	faults    Faults
	killAfter int
	requests  int
	dead      bool
	onKill    func()

	outCtx    context.Context // outbound requests; canceled at the kill
	outStop   context.CancelFunc
	transport *http.Transport
	servers   []*http.Server
	fronts    []net.Listener
}

// NewWire returns a wire whose fault decisions follow seed; killAfter > 0 kills the process at its
// killAfter-th request (onKill is then called once, after the wire is cut).
func NewWire(seed uint64, f Faults, killAfter int, onKill func()) *Wire {
	ctx, stop := context.WithCancel(context.Background())
	return &Wire{rng: rand.New(rand.NewPCG(seed, seed+1)), faults: f, killAfter: killAfter, onKill: onKill, outCtx: ctx, outStop: stop,
		transport: &http.Transport{ResponseHeaderTimeout: 2 * time.Minute, MaxIdleConnsPerHost: 8}}
}

// Front starts the proxy of one service and returns the URL that replaces target's in the
// process's configuration (same path, the front's host).
func (w *Wire) Front(svc Service, target string) (string, error) {
	return w.front(svc, target, nil)
}

// frontLogged is Front with every request and its answer recorded in gl.
func (w *Wire) frontLogged(svc Service, target string, gl *ghLog) (string, error) {
	return w.front(svc, target, gl)
}

func (w *Wire) front(svc Service, target string, gl *ghLog) (string, error) {
	tu, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	rp := &httputil.ReverseProxy{
		Director: func(r *http.Request) {
			r.URL.Scheme, r.URL.Host = tu.Scheme, tu.Host // r.Host is kept: S3 signs it
		},
		// Connections to the services are reused (a history makes thousands of requests); the
		// kill cancels every request in flight through outCtx, and Close drops the idle ones.
		Transport: w.transport,
		ErrorHandler: func(rw http.ResponseWriter, r *http.Request, err error) {
			if w.Killed() {
				panic(http.ErrAbortHandler) // the process is gone: no answer at all
			}
			rw.WriteHeader(http.StatusBadGateway)
		},
	}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fault, delay, dead := w.decide(svc, r.Method)
		if dead {
			panic(http.ErrAbortHandler)
		}
		switch fault {
		case http.StatusServiceUnavailable:
			markEffect(rw, 0)
			writeFault(rw, svc, http.StatusServiceUnavailable)
			return
		case http.StatusTooManyRequests:
			markEffect(rw, 0)
			rw.Header().Set("Retry-After", "1")
			writeFault(rw, svc, http.StatusTooManyRequests)
			return
		}
		r = r.WithContext(w.outCtx)
		if fault == http.StatusInternalServerError {
			// Took effect, then the answer is lost to a 500.
			rec := &discardWriter{h: http.Header{}, code: http.StatusOK}
			rp.ServeHTTP(rec, r)
			markEffect(rw, rec.code)
			if w.Killed() {
				panic(http.ErrAbortHandler)
			}
			writeFault(rw, svc, http.StatusInternalServerError)
			return
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-w.outCtx.Done():
				panic(http.ErrAbortHandler)
			}
		}
		rp.ServeHTTP(rw, r)
	})
	var handler http.Handler = h
	if gl != nil {
		handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: rw, code: http.StatusOK, effect: -1, gl: gl, method: r.Method, path: r.URL.Path}
			defer func() {
				if !sw.logged {
					// Killed before any answer: nothing known to have reached the service.
					effect := max(sw.effect, 0)
					sw.logged = true
					gl.add(r.Method, r.URL.Path, sw.code, effect, false)
				}
			}()
			h.ServeHTTP(sw, r)
		})
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	w.mu.Lock()
	w.servers = append(w.servers, srv)
	w.fronts = append(w.fronts, ln)
	w.mu.Unlock()
	go srv.Serve(ln)
	front := *tu
	front.Host = ln.Addr().String()
	return front.String(), nil
}

// decide counts the request, kills the process at the kill point, and draws the request's fault.
func (w *Wire) decide(svc Service, method string) (fault int, delay time.Duration, dead bool) {
	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		return 0, 0, true
	}
	w.requests++
	if w.killAfter > 0 && w.requests >= w.killAfter {
		w.dead = true
		w.mu.Unlock()
		w.outStop()
		if w.onKill != nil {
			w.onKill()
		}
		return 0, 0, true
	}
	defer w.mu.Unlock()
	f := w.faults
	x := w.rng.Float64()
	mutating := method != http.MethodGet && method != http.MethodHead
	switch {
	case x < f.Rate5xx:
		return http.StatusServiceUnavailable, 0, false
	case x < f.Rate5xx+f.Rate429:
		return http.StatusTooManyRequests, 0, false
	case mutating && x < f.Rate5xx+f.Rate429+f.AfterEffect:
		return http.StatusInternalServerError, 0, false
	}
	if f.Slow > 0 && w.rng.Float64() < f.Slow && f.SlowMax > 0 {
		return 0, time.Duration(w.rng.Int64N(int64(f.SlowMax))), false
	}
	return 0, 0, false
}

// writeFault answers in the service's own error shape, so that its client classifies it as the
// real service's.
func writeFault(rw http.ResponseWriter, svc Service, code int) {
	switch svc {
	case S3:
		rw.Header().Set("Content-Type", "application/xml")
		rw.WriteHeader(code)
		rw.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + map[int]string{500: "InternalError", 503: "SlowDown", 429: "SlowDown"}[code] +
			`</Code><Message>injected by the soak</Message></Error>`))
	default:
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(code)
		rw.Write([]byte(`{"message":"injected by the soak"}`))
	}
}

// Killed reports whether the process was killed.
func (w *Wire) Killed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dead
}

// Requests is how many requests the process made.
func (w *Wire) Requests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests
}

// Close stops the fronts.
func (w *Wire) Close() error {
	w.outStop()
	w.mu.Lock()
	servers := w.servers
	w.servers = nil
	w.mu.Unlock()
	w.transport.CloseIdleConnections()
	var errs []error
	for _, s := range servers {
		if err := s.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }

// ghLog is what one process asked of GitHub, in order, with the answers it got.
type ghLog struct {
	mu   sync.Mutex
	reqs []ghRequest
}

type ghRequest struct {
	Method, Path string
	Status       int  // the answer the process got
	Effect       int  // the service's own answer (0: the wire refused it before the service)
	Answered     bool // an answer reached the process (not cut by its kill)
}

// tookEffect says whether the service carried the request out, whatever answer the process got.
func (r ghRequest) tookEffect() bool { return r.Effect >= 200 && r.Effect < 300 }

func (g *ghLog) add(method, path string, code, effect int, answered bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reqs = append(g.reqs, ghRequest{Method: method, Path: path, Status: code, Effect: effect, Answered: answered})
}

func (g *ghLog) requests() []ghRequest {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]ghRequest(nil), g.reqs...)
}

// statusWriter logs a request as its answer starts, before any byte of it reaches the process:
// a client may read a whole JSON answer and go on (go-github closes the body once it has
// decoded the object) while the proxy still waits for the end of a chunked answer, and a
// process that has ended must find in the log everything it read.
type statusWriter struct {
	http.ResponseWriter
	code   int
	wrote  bool
	effect int // the service's answer when the wire answered instead (-1: it did not)

	gl           *ghLog
	method, path string
	logged       bool
}

// markEffect records, on a logged front, the service's answer to a request the wire answered
// itself (0: the service never saw it). It is called before the wire's answer is written.
func markEffect(rw http.ResponseWriter, effect int) {
	if sw, ok := rw.(*statusWriter); ok {
		sw.effect = effect
	}
}

// answer logs the request once, with the status the process gets: the wire's own answer
// carries the effect it marked, any other is the service's answer, passed on.
func (s *statusWriter) answer(code int) {
	s.code, s.wrote = code, true
	if s.logged {
		return
	}
	s.logged = true
	effect := s.effect
	if effect < 0 {
		effect = code
	}
	s.gl.add(s.method, s.path, code, effect, true)
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote && code >= 200 { // a 1xx is no answer yet
		s.answer(code)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if !s.wrote {
		s.answer(http.StatusOK)
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
