package worker

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/updown/updown/store/redis/redistest"
)

// TestAnnouncedOutcomeIsReadInPlace (issue 27): the api's Client decodes
// an announced outcome over the bytes go-redis read it into, where it made
// a copy of the whole answer first (4.5 MB for a trade-heavy 24hr
// replay): hearing an outcome of 4 MiB allocates about 4 MiB, not 8. Not
// parallel: the count is the process's.
func TestAnnouncedOutcomeIsReadInPlace(t *testing.T) {
	url := redistest.New(t)
	c, err := NewClient(t.Context(), ClientConfig{Redis: redistest.ClientOf(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	pub := redistest.ClientOf(t, url)
	const size = 4 << 20
	result := append(append([]byte(`{"result":"`), bytes.Repeat([]byte("x"), size)...), `"}`...)
	hear := func(id string) (allocated uint64) {
		ch := c.wait(id)
		defer c.unwait(id, ch)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := pub.Publish(context.Background(), doneChannelPrefix+id, result).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case o := <-ch:
			runtime.ReadMemStats(&after)
			if len(o.Result) != size+2 {
				t.Fatalf("heard a result of %d bytes, want %d", len(o.Result), size+2)
			}
		case <-time.After(time.Minute):
			t.Fatal("the announcement was not heard")
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	hear("warm-up") // the subscription's buffers
	allocated := hear("counted")
	t.Logf("hearing an outcome of %d MiB allocated %.1f MiB", size>>20, float64(allocated)/(1<<20))
	if allocated > size*3/2 {
		t.Errorf("hearing an outcome of %d bytes allocated %d: it was copied", size, allocated)
	}
}
