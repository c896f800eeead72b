package gen_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// TestLoadLive loads the dev data set's live exchange data, as `updown dev`
// does, and reads it back: every coin on spot and futures has a latest
// depth at Now and a full page of recent trades, futures without
// isBestMatch.
func TestLoadLive(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	live := memory.NewLive()
	st, err := gen.LoadLive(t.Context(), gen.DefaultConfig(now), live)
	if err != nil {
		t.Fatal(err)
	}
	if want := (gen.LiveStats{Depth: 6, Trades: 6 * store.MaxRecentTrades}); st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	g, err := gen.New(gen.DefaultConfig(now))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range store.Coins {
		for _, k := range []store.ExchangeKind{store.Spot, store.Future} {
			d, err := live.LatestDepth(t.Context(), c, k)
			if err != nil {
				t.Fatalf("%s %s: %v", c, k, err)
			}
			want, _ := g.LatestDepth(c, k)
			if !d.Time.Equal(now) || d.Symbol != gen.Symbol(c) || d.Kind != k || d.CoinPrice != want.CoinPrice ||
				len(d.Bids) != 20 || len(d.Asks) != 20 || d.Bids[0].Price >= d.Asks[0].Price {
				t.Errorf("%s %s latest depth: %s at %v, coin price %v (want %v), %d bids, %d asks",
					c, k, d.Symbol, d.Time, d.CoinPrice, want.CoinPrice, len(d.Bids), len(d.Asks))
			}
			trades, err := live.RecentTrades(t.Context(), c, k, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(trades) != store.MaxRecentTrades {
				t.Fatalf("%s %s: %d trades, want %d", c, k, len(trades), store.MaxRecentTrades)
			}
			for i, tr := range trades {
				if tr.Time.After(now) || (i > 0 && tr.ID >= trades[i-1].ID) {
					t.Fatalf("%s %s trade %d: id %d at %v after id %d", c, k, i, tr.ID, tr.Time, trades[max(i-1, 0)].ID)
				}
				if (k == store.Spot) != (tr.IsBestMatch != nil) {
					t.Fatalf("%s %s trade %d: IsBestMatch %v", c, k, i, tr.IsBestMatch)
				}
			}
		}
	}

	// Loading again, and then an hour earlier, changes nothing: the latest
	// never moves back and trade ids already kept are ignored.
	before, _ := live.RecentTrades(t.Context(), store.BTC, store.Spot, 1)
	if _, err := gen.LoadLive(t.Context(), gen.DefaultConfig(now), live); err != nil {
		t.Fatal(err)
	}
	if _, err := gen.LoadLive(t.Context(), gen.DefaultConfig(now.Add(-time.Hour)), live); err != nil {
		t.Fatal(err)
	}
	after, _ := live.RecentTrades(t.Context(), store.BTC, store.Spot, 1)
	d, _ := live.LatestDepth(t.Context(), store.BTC, store.Spot)
	if after[0].ID != before[0].ID || !d.Time.Equal(now) {
		t.Errorf("reloading moved the live data back: newest trade %d (was %d), depth at %v", after[0].ID, before[0].ID, d.Time)
	}
}

// failingWriter fails every write.
type failingWriter struct{ err error }

func (f failingWriter) SetLatestDepth(context.Context, store.Coin, store.ExchangeKind, store.DepthSnapshot) error {
	return f.err
}

func (f failingWriter) AddTrades(context.Context, store.Coin, store.ExchangeKind, []store.Trade) error {
	return f.err
}

func TestLoadLiveErrors(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	if _, err := gen.LoadLive(t.Context(), gen.DefaultConfig(now), failingWriter{store.ErrUnavailable}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a failing writer: error = %v, want it wrapped", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := gen.LoadLive(ctx, gen.DefaultConfig(now), memory.NewLive()); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: error = %v", err)
	}
	if _, err := gen.LoadLive(t.Context(), gen.Config{}, memory.NewLive()); err == nil {
		t.Error("an invalid config loaded")
	}
}
