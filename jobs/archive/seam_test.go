package archive_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs/archive"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestHourlyDumpsImportedInTurn imports a capture kept as hourly dump
// files, each begun with the initial dump of the books its subscription
// got (an array of `book` events, each stamped with its book's last
// change), of two markets live across the hour, one of whose Down book
// has been quiet since 20 s before it: the hours imported one after the
// other, as an operator imports each as it comes, must store the
// snapshots and gaps of one import of the two files concatenated.
// The first hour's import took its books GapAfter past their last
// events, beyond the end of its file, and wrote ~3 s of snapshots of
// books frozen at the hour, which, stored first, won over the second
// hour's snapshots of the moving books at the same instants. The second
// hour's import took the 20 s between the quiet book's time and the
// next book's, both of its first frame (pmxt-v2: its first rows), for a
// silence, forgot the quiet book, and took no snapshot of that market
// from the hour on. The hours as pmxt-v2 files, imported in turn, store
// the same.
func TestHourlyDumpsImportedInTurn(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		hourlyDumpsImportedInTurn(t, func() archive.Store { return memory.New() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		hourlyDumpsImportedInTurn(t, func() archive.Store { return pgtest.NewStore(t) })
	})
}

func hourlyDumpsImportedInTurn(t *testing.T, newStore func() archive.Store) {
	ctx := context.Background()
	seam := fxHour.Add(time.Hour)
	ms := []store.Market{fxMarket(store.BTC, seam.Add(-2*time.Minute), 1), fxMarket(store.ETH, seam.Add(-3*time.Minute), 2)}
	var evs []fxEvent
	for i, m := range ms {
		evs = append(evs, fxStream(m, m.StartTime.Add(-20*time.Second), m.EndTime.Add(10*time.Second), uint64(i+1), 0)...)
	}
	quiet := ms[1].ClobTokenDown
	evs = slices.DeleteFunc(evs, func(e fxEvent) bool {
		return e.asset == quiet && e.kind != "book" && e.ts >= seam.Add(-20*time.Second).UnixMilli()
	})
	slices.SortStableFunc(evs, func(a, b fxEvent) int { return cmp.Compare(a.received, b.received) })
	// The second hour's subscription begins with its initial dump, the
	// quiet book first.
	var hours [2][]fxEvent
	var dump []fxEvent
	for _, m := range ms {
		for _, tok := range []string{m.ClobTokenDown, m.ClobTokenUp} {
			b := bookAt(t, evs, tok, seam.UnixMilli())
			b.market = m.ConditionID
			dump = append(dump, b)
		}
	}
	for _, e := range evs {
		h := 0
		if e.received >= seam.UnixMilli() {
			h = 1
		}
		hours[h] = append(hours[h], e)
	}
	dir := t.TempDir()
	frames := func(evs []fxEvent) []string {
		out := make([]string, len(evs))
		for i, e := range evs {
			out[i] = string(e.frame())
		}
		return out
	}
	dumpFrame := "[" + strings.Join(frames(dump), ",") + "]"
	write := func(name string, lines ...[]string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(slices.Concat(lines...), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	h13, h14 := write("2026-05-12T13.jsonl", frames(hours[0])), write("2026-05-12T14.jsonl", []string{dumpFrame}, frames(hours[1]))
	all := write("cat.jsonl", frames(hours[0]), []string{dumpFrame}, frames(hours[1]))
	p13, p14 := filepath.Join(dir, "2026-05-12T13.parquet"), filepath.Join(dir, "2026-05-12T14.parquet")
	writePMXT(t, p13, pmxtRows(hours[0]))
	writePMXT(t, p14, pmxtRows(append(dump, hours[1]...)))
	imp := func(st archive.Store, f archive.Format, files ...string) {
		t.Helper()
		cp := archive.NewCoinPrices()
		writeKlines(t, cp, store.BTC, fxHour, seam.Add(time.Hour), func(at time.Time) float64 { return 80000 + float64(at.Unix()%97) })
		writeKlines(t, cp, store.ETH, fxHour, seam.Add(time.Hour), func(at time.Time) float64 { return 3000 + float64(at.Unix()%89) })
		if _, err := archive.Import(ctx, st, archive.Options{Format: f, Files: files, Markets: ms, Prices: cp}); err != nil {
			t.Fatalf("import %v: %v", files, err)
		}
	}
	want := newStore()
	imp(want, archive.WSJSONL, all)
	together := newStore()
	imp(together, archive.WSJSONL, h13, h14)
	inTurn, pmxtInTurn := newStore(), newStore()
	for _, h := range [][2]string{{h13, p13}, {h14, p14}} {
		imp(inTurn, archive.WSJSONL, h[0])
		imp(pmxtInTurn, archive.PMXTv2, h[1])
	}
	for _, m := range ms {
		w := listSnapshots(t, want, m.Slug)
		if len(w) < 900 {
			t.Fatalf("%s: %d snapshots of the concatenated stream", m.Slug, len(w))
		}
		wg, err := want.ListGaps(ctx, m.Slug)
		if err != nil {
			t.Fatal(err)
		}
		for name, st := range map[string]archive.Store{"together": together, "in turn": inTurn, "in turn as pmxt-v2": pmxtInTurn} {
			got := listSnapshots(t, st, m.Slug)
			if len(got) != len(w) {
				t.Errorf("%s, the hours imported %s: %d snapshots, the concatenated stream %d", m.Slug, name, len(got), len(w))
			}
			for i := range min(len(got), len(w)) {
				if !got[i].Time.Equal(w[i].Time) || !sameSnapshot(got[i], w[i]) {
					t.Errorf("%s, the hours imported %s: snapshot %d at %s is %s, the concatenated stream's at %s %s",
						m.Slug, name, i, got[i].Time.Format("15:04:05.000"), fmtSnap(got[i]), w[i].Time.Format("15:04:05.000"), fmtSnap(w[i]))
					break
				}
			}
			if g, err := st.ListGaps(ctx, m.Slug); err != nil || !sameGaps(g, wg) {
				t.Errorf("%s, the hours imported %s: gaps %v (%v), the concatenated stream's %v", m.Slug, name, g, err, wg)
			}
		}
	}
}

func listSnapshots(t *testing.T, st archive.Store, slug string) []store.Snapshot {
	t.Helper()
	out, _, err := st.ListSnapshots(context.Background(), slug, store.SnapshotQuery{Ascending: true, WithBooks: true})
	if err != nil {
		t.Fatalf("snapshots of %s: %v", slug, err)
	}
	return out
}

// bookAt is the token's book as its events received before at left it,
// as a `book` event stamped with its last change: what a subscription
// made at at gets in its initial dump.
func bookAt(t *testing.T, evs []fxEvent, token string, at int64) fxEvent {
	t.Helper()
	var bids, asks map[string]string
	var last int64
	for _, e := range evs {
		if e.received >= at || e.asset != token {
			continue
		}
		switch {
		case e.kind == "book":
			bids, asks, last = map[string]string{}, map[string]string{}, e.ts
			for _, l := range e.bids {
				bids[l.Price] = l.Size
			}
			for _, l := range e.asks {
				asks[l.Price] = l.Size
			}
		case e.kind == "price_change" && bids != nil:
			side := asks
			if e.side == "BUY" {
				side = bids
			}
			if size, _ := strconv.ParseFloat(e.size, 64); size == 0 {
				delete(side, e.price)
			} else {
				side[e.price] = e.size
			}
			last = e.ts
		}
	}
	if bids == nil {
		t.Fatalf("token %s has no book before %d", token, at)
	}
	out := fxEvent{ts: last, received: at, kind: "book", asset: token}
	for p, s := range bids {
		out.bids = append(out.bids, level{p, s})
	}
	for p, s := range asks {
		out.asks = append(out.asks, level{p, s})
	}
	// As the CLOB lists them: bids ascending, asks descending.
	slices.SortFunc(out.bids, func(a, b level) int { return cmp.Compare(a.Price, b.Price) })
	slices.SortFunc(out.asks, func(a, b level) int { return cmp.Compare(b.Price, a.Price) })
	return out
}
