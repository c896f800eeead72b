package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// TestSentinelFailsOver: the group's sentinels promote the replica when
// the primary is killed, a failover client follows them to it, and what
// was synced before the kill is still there.
func TestSentinelFailsOver(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinel(t, redistest.SentinelOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: g.Sentinels, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	old := g.KillPrimary(ctx)
	now, err := g.WaitFailover(ctx, old)
	if err != nil {
		t.Fatalf("no failover from %s: %v", old, err)
	}
	t.Logf("the sentinels moved the primary from %s to %s in %s", old, now, time.Since(killed).Round(time.Millisecond))
	for {
		v, err := rdb.Get(ctx, "k").Result()
		if err == nil {
			if v != "before" {
				t.Fatalf("after the failover k = %q, want before", v)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the failover client did not reach the new primary: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := rdb.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatalf("write after the failover: %v", err)
	}
	if v, err := g.Client(now).Get(ctx, "k").Result(); err != nil || v != "after" {
		t.Fatalf("the new primary has k = %q (%v); the failover client wrote elsewhere", v, err)
	}
}
