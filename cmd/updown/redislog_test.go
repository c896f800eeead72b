package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisClientLogsThroughSlog checks that what go-redis logs on its
// own (here a pool that cannot dial, as while Redis restarts) reaches the
// process's JSON log as JSON, once per message and period, rather than as
// "redis: 2026/11/29 … pool.go:770: …" lines on stderr, one per failed
// request, in the middle of it.
func TestRedisClientLogsThroughSlog(t *testing.T) {
	t.Setenv("LOG_LEVEL", "info")
	t.Setenv("LOG_FORMAT", "")
	var out syncBuffer
	newLogger(&out, "json")
	t.Cleanup(func() { routeRedisLog(slog.New(slog.DiscardHandler)) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	for range 3 {
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatalf("ping of a closed port succeeded")
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	dials := 0
	for _, line := range lines {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if rec["component"] == "redis" && strings.Contains(rec["detail"].(string), "failed to dial") {
			dials++
		}
	}
	if dials != 1 {
		t.Errorf("%d log records of the failed dials of three pings, want 1 (the repeats held back):\n%s", dials, out.String())
	}
}

// TestRedisLogForgetsHeldMessages: a message whose repeats were held back
// and that never comes back does not take its count with it: once its
// period is over, the next message of the client logs how many were held
// back (throttle.Log forgets it).
func TestRedisLogForgetsHeldMessages(t *testing.T) {
	var out syncBuffer
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := newRedisLog(slog.New(slog.NewJSONHandler(&out, nil)), 30*time.Second, func() time.Time { return clock })
	ctx := context.Background()
	for range 3 {
		l.Printf(ctx, "redis: dial tcp 10.0.0.5:6379: connection refused")
	}
	clock = clock.Add(time.Minute)
	l.Printf(ctx, "sentinel: new master=%q addr=%q", "mymaster", "10.0.0.6:6379")
	if !strings.Contains(out.String(), `"suppressed":2`) {
		t.Errorf("the two repeats held back were never logged:\n%s", out.String())
	}
}
