package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestJobSlotOfAGoneClientIsNoOutage: a job slot taken for a request whose
// client has gone fails on the request's context; that was logged as
// Redis down ("rate limiter unavailable ... jobs are refused with 503").
// It is logged at INFO now, and a Redis that does not answer still is an
// outage, logged and answered 503 as before.
func TestJobSlotOfAGoneClientIsNoOutage(t *testing.T) {
	t.Parallel()
	p := principal{Customer: store.Customer{ID: "c1"}, Plan: planFor(store.Pro)}
	serve := func(rdb redis.UniversalClient) (*Server, *syncBuffer) {
		logs := &syncBuffer{}
		s, err := New(Config{Store: memory.New(), Redis: rdb, Logger: slog.New(slog.NewTextHandler(logs, nil)),
			JobRedisTimeout: 2 * time.Second, JobsInFlight: map[store.Tier]int{store.Pro: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return s, logs
	}
	wantUnavailable := func(what string, err error) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
			t.Errorf("%s: %v, want the 503 answered before", what, err)
		}
	}

	rdb := redistest.Client(t)
	s, logs := serve(rdb)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the client has gone
	release, _, err := s.takeJobSlot(ctx, p, "job-1", time.Second)
	if release != nil {
		release()
	}
	wantUnavailable("a gone client's slot", err)
	if out := logs.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") || !strings.Contains(out, "client went away") {
		t.Errorf("a gone client's job slot was logged as a failure, or not as its client's going away:\n%s", out)
	}

	// Redis down (nothing listens): the outage is logged as before.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { down.Close() })
	s, logs = serve(down)
	release, _, err = s.takeJobSlot(t.Context(), p, "job-2", time.Second)
	if release != nil {
		release()
	}
	wantUnavailable("Redis down", err)
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "rate limiter unavailable") {
		t.Errorf("Redis down was not logged as an outage:\n%s", out)
	}
}
