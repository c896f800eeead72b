package worker_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/worker"
)

// TestAsynqLogHoldsBackRepeatsWhileRedisIsDown: with Redis down, Asynq's
// loops (the forwarder every second, the dequeuer, the janitor, the
// heartbeat) fail alike and each reports every failure: a worker logged
// about two ERROR lines a second for as long as Redis was away (thousands
// an hour per worker, burying everything else), where the Redis client's
// own messages were held back to one per 30 s. Each of Asynq's messages now
// goes through once per period, as the Redis client's do, with a count of
// the repeats held back.
func TestAsynqLogHoldsBackRepeatsWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	var logs lockedBuffer
	runServer(t, worker.Config{Redis: rdb, Store: memory.New(), Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	t.Cleanup(srv.Restart) // runs before the server's stop: it stops on a Redis that answers

	srv.Stop()
	// The forwarder looks for due tasks every second: once it has told of
	// the outage, five more seconds are five more failures of it.
	const forward = "Failed to forward scheduled tasks"
	deadline := time.Now().Add(patience(t))
	for !strings.Contains(logs.String(), forward) {
		if time.Now().After(deadline) {
			t.Fatalf("the outage was never logged:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(5 * time.Second)

	// A message may go through again once a period after its first line:
	// the lines allowed are counted from the log's own times, so that a
	// slow machine, whose wait above lasts longer, allows what it should.
	end := time.Now()
	seen, first := map[string]int{}, map[string]time.Time{}
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Time  time.Time `json:"time"`
			Level string    `json:"level"`
			Msg   string    `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == "ERROR" || rec.Level == "WARN" {
			if seen[rec.Msg]++; seen[rec.Msg] == 1 {
				first[rec.Msg] = rec.Time
			}
		}
	}
	for msg, n := range seen {
		if allowed := 1 + int(end.Sub(first[msg])/worker.AsynqLogEvery); n > allowed {
			t.Errorf("logged %d times in the %v after its first line, want at most %d (once a %v): %s",
				n, end.Sub(first[msg]).Round(time.Second), allowed, worker.AsynqLogEvery, msg)
		}
	}
}
