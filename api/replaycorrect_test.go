package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// TestReplayAfterCorrectionIsNotReused replays a market, corrects its
// winner (as the resolver does when Polymarket's verdict differs from the
// series' rule), and replays it again with the identical request: the
// answer is the corrected market's, not the reused result of the old one.
func TestReplayAfterCorrectionIsNotReused(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	body := replayBody(slug, func(m map[string]any) { m["positionSize"] = 41 })
	winner := func() string {
		t.Helper()
		r := b.replay(store.Pro, body)
		if r.status != http.StatusOK {
			t.Fatalf("replay: %d %s", r.status, r.body)
		}
		var env struct{ Data replay.Result }
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatal(err)
		}
		return env.Data.Market.Winner
	}
	before := winner()
	corrected := correctWinner(t, q.store, slug)
	if after := winner(); after != corrected {
		t.Errorf("after the winner was corrected from %s to %s, the identical replay answers winner %s", before, corrected, after)
	}
}

// correctWinner sets the other winner on the resolved market slug, as an
// operator correcting a settlement would, and returns it.
func correctWinner(t *testing.T, st store.Store, slug string) string {
	t.Helper()
	m, err := st.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	corrected := store.OutcomeDown
	if *m.Winner == store.OutcomeDown {
		corrected = store.OutcomeUp
	}
	m.Winner = &corrected
	m.UpdatedAt = time.Time{} // the store stamps the update
	if err := st.UpsertMarkets(t.Context(), []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	return corrected
}
