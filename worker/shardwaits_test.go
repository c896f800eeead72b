package worker

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// TestShardWaits: a completion reaches every batch waiting on its channel,
// from the moment wait returns (a publish right after it is never lost)
// until stop; a channel nobody waits on is unsubscribed; and after Redis
// restarts, the subscription comes back by itself.
func TestShardWaits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := t.Context()
	w := newShardWaits(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running := make(chan struct{})
	go func() { w.run(ctx); close(running) }()
	defer func() { _ = w.close(); <-running }()

	hears := func(inbox chan *redis.Message, channel, payload string) bool {
		t.Helper()
		select {
		case m := <-inbox:
			if m.Channel != channel || m.Payload != payload {
				t.Fatalf("heard %s %q, want %s %q", m.Channel, m.Payload, channel, payload)
			}
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}
	publish := func(channel, payload string) {
		t.Helper()
		if err := rdb.Publish(ctx, channel, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Published the moment wait returns, a hundred times over.
	for i := range 100 {
		ch := "done:now-" + strconv.Itoa(i)
		inbox := make(chan *redis.Message, 1)
		stop, err := w.wait(ctx, []string{ch}, inbox)
		if err != nil {
			t.Fatal(err)
		}
		publish(ch, "x")
		if !hears(inbox, ch, "x") {
			t.Fatalf("round %d: a completion published as wait returned was lost", i)
		}
		stop()
	}

	// Two batches sharing a shard.
	a, b := make(chan *redis.Message, 4), make(chan *redis.Message, 4)
	stopA, err := w.wait(ctx, []string{"done:1", "done:shared"}, a)
	if err != nil {
		t.Fatal(err)
	}
	stopB, err := w.wait(ctx, []string{"done:shared", "done:2"}, b)
	if err != nil {
		t.Fatal(err)
	}
	publish("done:shared", "s")
	if !hears(a, "done:shared", "s") || !hears(b, "done:shared", "s") {
		t.Fatal("a shared shard's completion did not reach both batches")
	}
	publish("done:2", "two")
	if !hears(b, "done:2", "two") || hears(a, "", "") {
		t.Fatal("done:2 went astray")
	}
	stopA()
	publish("done:shared", "s2")
	if !hears(b, "done:shared", "s2") {
		t.Fatal("B stopped hearing the shared shard when A stopped waiting")
	}
	numsub := func(ch string) int64 {
		t.Helper()
		n, err := rdb.PubSubNumSub(ctx, ch).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[ch]
	}
	if n := numsub("done:1"); n != 0 {
		t.Errorf("done:1 has %d subscribers after its only batch stopped waiting", n)
	}
	if n := numsub("done:shared"); n != 1 {
		t.Errorf("done:shared has %d subscribers while B waits, want 1", n)
	}

	// Redis restarts: B's subscription comes back, and new waits work.
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for numsub("done:2") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription never came back after Redis restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	publish("done:2", "after")
	if !hears(b, "done:2", "after") {
		t.Fatal("B heard nothing after Redis restarted")
	}
	stopB()
	c := make(chan *redis.Message, 1)
	stopC, err := w.wait(ctx, []string{"done:3"}, c)
	if err != nil {
		t.Fatal(err)
	}
	defer stopC()
	publish("done:3", "c")
	if !hears(c, "done:3", "c") {
		t.Fatal("a wait after the restart heard nothing")
	}
}
