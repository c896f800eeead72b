package collect

import (
	"encoding/json"
	"testing"
)

// TestMarketsFileSkipsAnUnusableMarket reads a markets file of two
// windows' events: the real Gamma event of btc-updown-5m-1778584200, and
// the next window's market as Gamma lists it while it is still being
// deployed (no token ids yet), as `updown markets fetch --to` a little in
// the future saves it. The good market is read and the other skipped and
// counted, as discovery skips it, where the whole file was refused and
// `updown import events --markets` imported nothing.
func TestMarketsFileSkipsAnUnusableMarket(t *testing.T) {
	t.Parallel()
	var events []map[string]any
	decodeReal(t, realGamma[0], &events)
	next := map[string]any{}
	b, _ := json.Marshal(events[0])
	_ = json.Unmarshal(b, &next)
	next["id"], next["slug"], next["ticker"] = "473574", "btc-updown-5m-1778584500", "btc-updown-5m-1778584500"
	next["startTime"], next["endDate"] = "2026-05-12T11:15:00Z", "2026-05-12T11:20:00Z"
	m := next["markets"].([]any)[0].(map[string]any)
	m["id"], m["slug"], m["conditionId"] = "2229687", "btc-updown-5m-1778584500", "0xa5c6d0c4cef71fe53c0235790b5568574343551fe67c62db39e9ebf3387b415b"
	m["eventStartTime"], m["endDate"] = "2026-05-12T11:15:00Z", "2026-05-12T11:20:00Z"
	m["clobTokenIds"], m["deploying"], m["pendingDeployment"] = nil, true, true
	data, _ := json.Marshal([]any{events[0], next})

	ms, skipped, err := MarketsFromGamma(data, nil)
	if err != nil {
		t.Fatalf("a markets file with one market not yet deployed: %v", err)
	}
	if len(ms) != 1 || ms[0].Slug != "btc-updown-5m-1778584200" || skipped != 1 {
		t.Errorf("markets %+v, %d skipped; want btc-updown-5m-1778584200 and 1 skipped", ms, skipped)
	}
}
