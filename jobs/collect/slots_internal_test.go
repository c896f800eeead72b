package collect

import (
	"testing"
	"time"

	"github.com/updown/updown/store/memory"
)

// TestDefaultSlotsOutlastPollsToTheirDeadline: a REST poll of the books
// the websocket lacks that runs to its deadline holds its instant's
// request slot for MaxLag, and the websocket's markets of every instant
// that finds no slot are lost with it (busy). The default slots hold the
// instants of twice MaxLag at the default cadence, room for a loaded
// machine's lateness; 4 held those of 1.2 s, 200 ms beyond a poll's
// deadline.
func TestDefaultSlotsOutlastPollsToTheirDeadline(t *testing.T) {
	t.Parallel()
	c := Config{Store: memory.New(), Live: memory.NewLive(), Scheduler: noScheduler{}, Scheme: QuickScheme{Length: 5 * time.Minute}}
	if err := c.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if held := time.Duration(c.MaxInFlight) * c.Interval; held < 2*c.MaxLag {
		t.Errorf("%d slots at a %v cadence hold the instants of %v, under twice MaxLag (%v)", c.MaxInFlight, c.Interval, held, 2*c.MaxLag)
	}
}
