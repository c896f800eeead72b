package redistest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Trips is a go-redis hook that records the round trips a client makes
// while on (Start to Stop), once answered: each as its commands, one alone
// or a pipeline (MULTI and EXEC included), every command as its name and
// arguments (each cut to 80 bytes). A connection's set-up (CLIENT, HELLO)
// is left out. Add it with (*redis.Client).AddHook.
type Trips struct {
	mu    sync.Mutex
	on    bool
	trips [][][]string
}

// DialHook is go-redis's: dials are not recorded.
func (h *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records a command sent alone.
func (h *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.record([]redis.Cmder{cmd})
		return err
	}
}

// ProcessPipelineHook records a pipeline as one trip.
func (h *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.record(cmds)
		return err
	}
}

func (h *Trips) record(cmds []redis.Cmder) {
	var trip [][]string
	for _, c := range cmds {
		if n := c.Name(); n == "client" || n == "hello" {
			continue
		}
		var args []string
		for _, a := range c.Args() {
			s := fmt.Sprint(a)
			if len(s) > 80 {
				s = s[:80] + "…"
			}
			args = append(args, s)
		}
		trip = append(trip, args)
	}
	if len(trip) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on {
		h.trips = append(h.trips, trip)
	}
}

// Start begins recording, afresh.
func (h *Trips) Start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on, h.trips = true, nil
}

// Stop ends recording and returns the trips recorded since Start.
func (h *Trips) Stop() [][][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = false
	return h.trips
}

// Names is a trip's commands' names, lower case.
func Names(trip [][]string) []string {
	n := make([]string, 0, len(trip))
	for _, c := range trip {
		n = append(n, strings.ToLower(c[0]))
	}
	return n
}
