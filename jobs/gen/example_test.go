package gen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/updown/updown/jobs/gen"
	"github.com/updown/updown/store"
	"github.com/updown/updown/store/memory"
)

// One resolved 24hr market at the reference's 300 ms cadence with ten-level
// books: the longest input a replay sees, as replay tests and benchmarks
// need it.
func ExampleGenerator_Market() {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	cfg := gen.DefaultConfig(now)
	cfg.MaxSnapshotsPerMarket = 0 // every 300 ms
	cfg.BookLevels = 10
	g, err := gen.New(cfg)
	if err != nil {
		panic(err)
	}
	m, err := g.Market(store.BTC, store.H24, now.AddDate(0, 0, -2))
	if err != nil {
		panic(err)
	}
	snaps, err := g.Snapshots(m)
	if err != nil {
		panic(err)
	}
	first := snaps[0]
	fmt.Println(m.Slug, len(snaps), "snapshots")
	fmt.Printf("start %.2f, end %.2f: %s wins\n", *m.CoinPriceStart, *m.CoinPriceEnd, *m.Winner)
	fmt.Printf("first: up %.2f down %.2f, %d bids and %d asks on Up\n",
		first.PriceUp, first.PriceDown, len(first.BookUp.Bids), len(first.BookUp.Asks))
	// Output:
	// btc-updown-24hr-1773244800 288000 snapshots
	// start 112214.86, end 108906.99: Down wins
	// first: up 0.50 down 0.51, 10 bids and 10 asks on Up
}

// Seed writes generated data into any store: `updown dev` seeds
// DefaultConfig(time.Now()) into the memory store at start-up. Here, a
// smaller config: BTC's last three 5m markets and a minute of depth.
func ExampleSeed() {
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	cfg := gen.DefaultConfig(now)
	cfg.Coins = gen.DefaultCoins()[:1]
	cfg.Markets = map[store.MarketType]int{store.M5: 3}
	cfg.DepthHistory = time.Minute
	s := memory.New()
	st, err := gen.Seed(context.Background(), cfg, s)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", st)

	live, _ := s.GetMarket(context.Background(), "btc-updown-5m-1773500700")
	fmt.Println(live.Slug, "resolved:", live.Resolved())
	// Output:
	// {Markets:3 Unresolved:1 NoData:0 Snapshots:2887 Trades:291 Gaps:0 Depth:12}
	// btc-updown-5m-1773500700 resolved: false
}
