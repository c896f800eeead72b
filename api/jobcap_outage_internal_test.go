package api

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/redis/redistest"
)

// outageServer is a server (a memory store, a PRO cap of one job) whose
// Redis goes while down is set: its connections are cut by the caller
// (admin, a client that stays up), and new ones refused.
func outageServer(t *testing.T) (s *Server, admin *redis.Client, down *atomic.Bool) {
	t.Helper()
	opt, err := redis.ParseURL(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	admin = redis.NewClient(opt)
	t.Cleanup(func() { _ = admin.Close() })
	down = new(atomic.Bool)
	flaky := *opt
	flaky.MaxRetries = -1
	flaky.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, errors.New("redis failing over")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	rdb := redis.NewClient(&flaky)
	t.Cleanup(func() { _ = rdb.Close() })
	if s, err = New(Config{Store: memory.New(), Redis: rdb, JobSlotLease: time.Minute, JobsInFlight: map[store.Tier]int{store.Pro: 1}}); err != nil {
		t.Fatal(err)
	}
	return s, admin, down
}

// TestJobSlotGivenBackAfterAnOutage (issue 28, item 12): a slot whose
// give-back fails, Redis failing over at that moment, comes back once
// Redis answers again, not a whole lease later: a customer at its cap is
// not refused (429) for that long after a failover.
func TestJobSlotGivenBackAfterAnOutage(t *testing.T) {
	t.Parallel()
	s, admin, down := outageServer(t)
	p := principal{Customer: store.Customer{ID: "c1"}, Plan: planFor(store.Pro)}
	ctx := t.Context()
	release, _, err := s.takeJobSlot(ctx, p, "job-1", time.Second)
	if err != nil || release == nil {
		t.Fatalf("take a slot: %v", err)
	}

	// Redis goes: connections cut, new ones refused.
	down.Store(true)
	if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	release()
	if err := admin.ZScore(ctx, jobSlotKey("c1"), "job-1").Err(); err != nil {
		t.Fatalf("the slot went back while Redis was unreachable: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	down.Store(false) // the new primary

	deadline := time.Now().Add(15 * time.Second) // well inside the minute's lease
	for admin.ZScore(ctx, jobSlotKey("c1"), "job-1").Err() != redis.Nil {
		if time.Now().After(deadline) {
			t.Fatal("the slot was not given back once Redis answered again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	next, _, err := s.takeJobSlot(ctx, p, "job-2", time.Second)
	if err != nil {
		t.Fatalf("the customer's next job after the outage: %v", err)
	}
	if next != nil {
		next()
	}
}

// TestJobSlotReturnedBeforeARefusal: the customer's first job after an
// outage, at its cap only by the slot whose give-back failed in the
// outage, is not refused (429 "too many jobs in flight", none running)
// because the give-back's next try in the background has not come yet:
// the take returns that slot first. A failover's first replays were so
// refused for up to a second.
func TestJobSlotReturnedBeforeARefusal(t *testing.T) {
	t.Parallel()
	s, admin, down := outageServer(t)
	p := principal{Customer: store.Customer{ID: "c1"}, Plan: planFor(store.Pro)}
	ctx := t.Context()
	release, _, err := s.takeJobSlot(ctx, p, "job-1", time.Second)
	if err != nil || release == nil {
		t.Fatalf("take a slot: %v", err)
	}
	down.Store(true)
	if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	release() // fails: tried again in the background, 50 ms on, then 100, 200, 400, ...
	time.Sleep(400 * time.Millisecond)
	down.Store(false) // the new primary, between two of the background's tries
	next, _, err := s.takeJobSlot(ctx, p, "job-2", time.Second)
	if err != nil {
		t.Fatalf("the customer's first job after the outage: %v", err)
	}
	if next != nil {
		next()
	}
}

// lateAnswers carries out every command and then answers too late for
// the caller's deadline: a Redis whose answers arrive after RedisTimeout.
type lateAnswers struct{ after time.Duration }

func (lateAnswers) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h lateAnswers) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(context.WithoutCancel(ctx), cmd)
		time.Sleep(h.after)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
}
func (lateAnswers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestTimedOutSlotTakeIsGivenBack: a slot take that Redis carried out but
// answered after JobRedisTimeout refuses its request (503), and its slot
// does not stay behind to refuse the customer's next jobs (429).
func TestTimedOutSlotTakeIsGivenBack(t *testing.T) {
	t.Parallel()
	s, admin := lateSlotServer(t, Config{RedisTimeout: 50 * time.Millisecond, JobRedisTimeout: 50 * time.Millisecond, JobSlotLease: time.Minute},
		100*time.Millisecond)
	p := principal{Customer: store.Customer{ID: "c1"}, Plan: planFor(store.Pro)}
	if _, _, err := s.takeJobSlot(t.Context(), p, "job-1", time.Minute); err == nil {
		t.Fatal("a take answered after JobRedisTimeout was not refused")
	}
	// Not a speed budget: the slot would go by itself once its wait (a
	// minute) and lease had passed, so the look ends well before that.
	deadline := time.Now().Add(45 * time.Second)
	for admin.ZCard(t.Context(), jobSlotKey("c1")).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slot of a take that timed out stayed taken")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSlowSlotTakeWaitedFor: a slot take that Redis answers after the
// rate checks' bound (RedisTimeout, 250 ms) but within a job's
// (JobRedisTimeout) is waited for: in a burst at a busy moment, a replay
// answered 503 for a take that came 300 ms late.
func TestSlowSlotTakeWaitedFor(t *testing.T) {
	t.Parallel()
	s, _ := lateSlotServer(t, Config{}, DefaultRedisTimeout+50*time.Millisecond)
	p := principal{Customer: store.Customer{ID: "c1"}, Plan: planFor(store.Pro)}
	release, added, err := s.takeJobSlot(t.Context(), p, "job-1", time.Minute)
	if err != nil || !added || release == nil {
		t.Fatalf("a take answered %v late: added %v, %v", DefaultRedisTimeout+50*time.Millisecond, added, err)
	}
}

// lateSlotServer is a server of cfg (a memory store, a PRO cap of one job)
// whose Redis answers every command by after late, once New has run (its
// own checks at start answer in time); admin is a client of the same
// Redis that answers at once.
func lateSlotServer(t *testing.T, cfg Config, after time.Duration) (s *Server, admin *redis.Client) {
	t.Helper()
	opt, err := redis.ParseURL(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	admin = redis.NewClient(opt)
	t.Cleanup(func() { _ = admin.Close() })
	late := redis.NewClient(opt)
	t.Cleanup(func() { _ = late.Close() })
	cfg.Store, cfg.Redis, cfg.JobsInFlight = memory.New(), late, map[store.Tier]int{store.Pro: 1}
	if s, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	// The script known to Redis, so that the take's EVALSHA runs it (a
	// NOSCRIPT answered late would not be followed by its EVAL).
	if err := takeSlotScript.Load(t.Context(), admin).Err(); err != nil {
		t.Fatal(err)
	}
	late.AddHook(lateAnswers{after: after})
	return s, admin
}
