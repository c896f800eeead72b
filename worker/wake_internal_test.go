package worker

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// TestFailingDequeuePauses: a dequeue Redis refuses at once (here: a user
// without the right to run scripts) holds the server back, so that a worker
// with no sleep between rounds does not spin against it; other calls go
// through as they are.
func TestFailingDequeuePauses(t *testing.T) {
	t.Parallel()
	opt := options(t, redistest.Start(t))
	admin := redis.NewClient(opt)
	defer admin.Close()
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-evalsha").Err(); err != nil {
		t.Fatal(err)
	}
	opt.Username, opt.Password = "noscripts", "pw"
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	g := gatedRedis{rdb, newGate([]string{"q"}, time.Second)}
	call := func(keys []string) time.Duration {
		t.Helper()
		start := time.Now()
		if err := g.EvalSha(context.Background(), "0123", keys).Err(); !redis.HasErrorPrefix(err, "NOPERM") {
			t.Fatalf("EvalSha: %v, want NOPERM", err)
		}
		return time.Since(start)
	}
	var others time.Duration
	for range 5 {
		others += call([]string{"other"})
	}
	if others >= 5*dequeueErrorPause {
		t.Errorf("5 other scripts refused took %v: they were held back too", others)
	}
	dequeue := []string{"asynq:{q}:pending", "asynq:{q}:paused", "asynq:{q}:active", "asynq:{q}:lease"}
	if d := call(dequeue); d < dequeueErrorPause {
		t.Errorf("a refused dequeue returned after %v, want at least %v", d, dequeueErrorPause)
	}
}
