// Package fault lets the fake upstreams (polytest, binancetest) misbehave
// the ways real ones do, on demand: rate limits, server errors, slow and
// malformed answers, dropped connections.
package fault

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fault is one way to answer a request badly. The zero Fault answers
// normally.
type Fault struct {
	// Status, when set, is answered instead of the real response, with
	// Body (or a short JSON error) as the body.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter time.Duration
	// Delay holds the answer back (a timeout, when longer than the
	// client waits).
	Delay time.Duration
	// Body, when set with a zero Status, replaces the real body under a
	// 200: a malformed answer.
	Body string
	// Drop closes the connection without answering.
	Drop bool
}

// Set holds the faults waiting for each route (a path such as "/books").
// It is safe for concurrent use.
type Set struct {
	mu     sync.Mutex
	queued map[string][]Fault
	always map[string]Fault
	hits   map[string]int
}

// Next queues faults for the next requests to route, one request each.
func (s *Set) Next(route string, fs ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued == nil {
		s.queued = make(map[string][]Fault)
	}
	s.queued[route] = append(s.queued[route], fs...)
}

// Always answers every request to route with f until Clear.
func (s *Set) Always(route string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.always == nil {
		s.always = make(map[string]Fault)
	}
	s.always[route] = f
}

// Clear removes every fault of route.
func (s *Set) Clear(route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.queued, route)
	delete(s.always, route)
}

// Hits returns how many requests route has had.
func (s *Set) Hits(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[route]
}

// take counts a request to route and returns the fault to apply.
func (s *Set) take(route string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hits == nil {
		s.hits = make(map[string]int)
	}
	s.hits[route]++
	if q := s.queued[route]; len(q) > 0 {
		s.queued[route] = q[1:]
		return q[0], true
	}
	f, ok := s.always[route]
	return f, ok
}

// Wrap answers a request with its route's fault, if one is due, and
// otherwise calls next.
func (s *Set) Wrap(route string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, ok := s.take(route)
		if !ok {
			next(w, r)
			return
		}
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f.Drop {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		}
		switch {
		case f.Status != 0:
			body := f.Body
			if body == "" {
				body = `{"error":"` + http.StatusText(f.Status) + `"}`
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			_, _ = w.Write([]byte(body))
		case f.Body != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(f.Body))
		default:
			next(w, r)
		}
	}
}
