package redislive_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
	redislive "github.com/updown/updown/store/redis"
	"github.com/updown/updown/store/redis/redistest"
	"github.com/updown/updown/store/storetest"
)

// TestConformance runs the suite on a real redis-server. Its tests share
// one server, each under a key prefix of its own, which also shows that
// prefixes keep deployments apart.
func TestConformance(t *testing.T) {
	rdb := redistest.Client(t)
	var n atomic.Int64
	storetest.RunLive(t, func(t *testing.T) store.LiveExchange {
		return redislive.New(rdb, fmt.Sprintf("test%d:", n.Add(1)))
	})
}

// TestConformanceMiniredis runs the suite on miniredis, the embedded Redis
// of `updown dev`, whose Lua is gopher-lua rather than Redis's own.
func TestConformanceMiniredis(t *testing.T) {
	storetest.RunLive(t, func(t *testing.T) store.LiveExchange {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		return redislive.New(rdb, "")
	})
}

func depth(ms int64) store.DepthSnapshot {
	return store.DepthSnapshot{Symbol: "BTCUSDT", Time: time.UnixMilli(ms), CoinPrice: 95_000.5,
		Bids: []store.DepthLevel{{Price: 95_000, Quantity: 1.5}}, Asks: []store.DepthLevel{{Price: 95_001, Quantity: 0.25}}}
}

// TestKeyLayout pins the keys other tools (redis-cli, dashboards) see.
func TestKeyLayout(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := t.Context()
	l := redislive.New(rdb, "")
	if err := l.SetLatestDepth(ctx, store.ETH, store.Future, depth(1_777_467_600_000)); err != nil {
		t.Fatal(err)
	}
	if err := l.AddTrades(ctx, store.SOL, store.Spot, []store.Trade{{ID: 42, Price: 180, Qty: 1, Time: time.UnixMilli(1)}}); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"updown:live:depth:eth:future": "string", "updown:live:trades:sol:spot": "zset"}
	if len(keys) != len(want) {
		t.Fatalf("keys = %v, want %v", keys, want)
	}
	for k, typ := range want {
		if got := rdb.Type(ctx, k).Val(); got != typ {
			t.Errorf("%s is a %q, want %s", k, got, typ)
		}
	}
	if score := rdb.ZScore(ctx, "updown:live:trades:sol:spot", rdb.ZRange(ctx, "updown:live:trades:sol:spot", 0, 0).Val()[0]).Val(); score != 42 {
		t.Errorf("trade scored %v, want its id 42", score)
	}
}

// TestScriptCacheFlushed checks that writes survive a Redis that forgot the
// scripts (a restart or failover): go-redis falls back from EVALSHA to EVAL.
func TestScriptCacheFlushed(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := t.Context()
	l := redislive.New(rdb, "")
	if err := l.SetLatestDepth(ctx, store.BTC, store.Spot, depth(2000)); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetLatestDepth(ctx, store.BTC, store.Spot, depth(1000)); err != nil {
		t.Fatal(err)
	}
	if err := l.AddTrades(ctx, store.BTC, store.Spot, []store.Trade{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	d, err := l.LatestDepth(ctx, store.BTC, store.Spot)
	if err != nil || d.Time.UnixMilli() != 2000 {
		t.Errorf("latest depth at %v (%v), want the newer one at 2000 ms", d.Time, err)
	}
}

// TestNegativeTimes checks the script's time comparison across the sign,
// where the fixed-width decimal is padded after the minus.
func TestNegativeTimes(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := t.Context()
	l := redislive.New(rdb, "")
	for _, ms := range []int64{-5000, -10, 7, -3} {
		if err := l.SetLatestDepth(ctx, store.BTC, store.Spot, depth(ms)); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := l.LatestDepth(ctx, store.BTC, store.Spot); err != nil || d.Time.UnixMilli() != 7 {
		t.Errorf("latest depth at %d ms (%v), want 7", d.Time.UnixMilli(), err)
	}
}

// TestUnavailable checks that an unreachable Redis is store.ErrUnavailable,
// which the api answers with 503.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	checkUnavailable(t, redislive.New(rdb, ""))

	closed := redis.NewClient(&redis.Options{Addr: addr})
	_ = closed.Close()
	checkUnavailable(t, redislive.New(closed, ""))
}

func checkUnavailable(t *testing.T, l *redislive.LiveExchange) {
	t.Helper()
	ctx := t.Context()
	_, errDepth := l.LatestDepth(ctx, store.BTC, store.Spot)
	_, errTrades := l.RecentTrades(ctx, store.BTC, store.Spot, 10)
	for name, err := range map[string]error{
		"SetLatestDepth": l.SetLatestDepth(ctx, store.BTC, store.Spot, depth(1)),
		"LatestDepth":    errDepth,
		"AddTrades":      l.AddTrades(ctx, store.BTC, store.Spot, []store.Trade{{ID: 1}}),
		"RecentTrades":   errTrades,
	} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on an unreachable Redis: error = %v, want one matching store.ErrUnavailable", name, err)
		}
	}
}

// TestForeignValues checks that values this package did not write are
// errors, neither panics nor ErrNotFound, and not ErrUnavailable either:
// retrying will not mend them.
func TestForeignValues(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := t.Context()
	l := redislive.New(rdb, "p:")
	mustDo(t, rdb.Set(ctx, "p:depth:btc:spot", "not a depth snapshot at all", 0).Err())
	mustDo(t, rdb.ZAdd(ctx, "p:trades:btc:spot", redis.Z{Score: 1, Member: "garbage"}).Err())
	mustDo(t, rdb.RPush(ctx, "p:depth:eth:spot", "a list").Err())
	mustDo(t, rdb.Set(ctx, "p:trades:eth:spot", "a string", 0).Err())

	_, err := l.LatestDepth(ctx, store.BTC, store.Spot)
	checkForeign(t, "LatestDepth of garbage", err)
	_, err = l.RecentTrades(ctx, store.BTC, store.Spot, 10)
	checkForeign(t, "RecentTrades of garbage", err)
	_, err = l.LatestDepth(ctx, store.ETH, store.Spot)
	checkForeign(t, "LatestDepth of a list", err)
	_, err = l.RecentTrades(ctx, store.ETH, store.Spot, 10)
	checkForeign(t, "RecentTrades of a string", err)
	checkForeign(t, "AddTrades to a string", l.AddTrades(ctx, store.ETH, store.Spot, []store.Trade{{ID: 1}}))
}

func checkForeign(t *testing.T, op string, err error) {
	t.Helper()
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("%s: error = %v, want a plain error", op, err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeadline checks that a request's deadline bounds a call to a Redis
// that accepts connections but never answers.
func TestDeadline(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Accept connections and hold them, silent, until the listener closes.
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = redislive.New(rdb, "").LatestDepth(ctx, store.BTC, store.Spot)
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("error = %v, want a deadline or unavailable error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v, want about the 100ms deadline", took)
	}
}
