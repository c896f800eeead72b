package worker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// runTask starts a worker on a throwaway Redis that runs handle for tasks
// of the type, and returns the Redis, a client of it, and a context the
// test's waits are bounded by; all end with the test.
func runTask(t *testing.T, typ string, handle func(context.Context, []byte) (any, error)) (redis.UniversalClient, *Client, context.Context) {
	t.Helper()
	return runTaskWith(t, typ, Config{}, nil, handle)
}

// runTaskWith is runTask on a server of cfg (its Redis, store and logger
// filled in), which setup, when given, adjusts before it runs.
func runTaskWith(t *testing.T, typ string, cfg Config, setup func(*Server), handle func(context.Context, []byte) (any, error)) (redis.UniversalClient, *Client, context.Context) {
	t.Helper()
	rdb := redistest.Client(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Redis, cfg.Store, cfg.Logger = rdb, memory.New(), log
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	srv.mux.HandleFunc(typ, srv.handler(handle))
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	t.Cleanup(func() { scancel(); <-done })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	client, err := NewClient(ctx, ClientConfig{Redis: rdb, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return rdb, client, ctx
}
