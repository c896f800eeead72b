package postgres_test

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestMigrationKeepsMarkets stores a market and its snapshots in the
// schema before migration 004 (the upstream fields, trades and gaps), then
// migrates: every value is still there and the new fields are unknown.
func TestMigrationKeepsMarkets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewEmptyDatabase(t)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	m, err := migrate.NewMigrator(ctx, conn, "schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(os.DirFS("migrations")); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	_, err = conn.Exec(ctx, `
		insert into markets (slug, market_id, event_id, coin, market_type, start_time, end_time,
			coin_price_start, coin_price_end, condition_id, clob_token_up, clob_token_down,
			winner, final_volume, final_liquidity, resolved_at, created_at, updated_at)
		values ('btc-updown-1hr-1780315200', 'm1', 'e1', 'BTC', '1hr', $1, $2, 100.5, 101.25,
			'c1', 'up1', 'down1', 'Up', 1234.5, 99.5, $3, $4, $4)`,
		start, start.Add(time.Hour), start.Add(time.Hour+time.Minute), start.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}

	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMarket(ctx, "btc-updown-1hr-1780315200")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Market{
		Slug: "btc-updown-1hr-1780315200", MarketID: "m1", EventID: "e1", Coin: store.BTC, MarketType: store.H1,
		StartTime: start, EndTime: start.Add(time.Hour), CoinPriceStart: ptr(100.5), CoinPriceEnd: ptr(101.25),
		ConditionID: "c1", ClobTokenUp: "up1", ClobTokenDown: "down1", Winner: ptr(store.OutcomeUp),
		FinalVolume: ptr(1234.5), FinalLiquidity: ptr(99.5), ResolvedAt: ptr(start.Add(time.Hour + time.Minute)),
		CreatedAt: start.Add(-time.Hour), UpdatedAt: start.Add(-time.Hour),
		DataSources: []string{store.DataRecorder}, // migration 010: markets stored before were recorded
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("after migration:\n got  %+v\n want %+v", got, want)
	}

	// The migrated market takes trades and gaps.
	trade := store.MarketTrade{Time: start.Add(time.Minute), Outcome: store.OutcomeUp, Price: 0.5, Size: 10, Side: store.SideBuy}
	if _, err := s.AppendMarketTrades(ctx, want.Slug, []store.MarketTrade{trade}); err != nil {
		t.Fatal(err)
	}
	if _, total, err := s.ListMarketTrades(ctx, want.Slug, store.MarketTradeQuery{}); err != nil || total != 1 {
		t.Errorf("ListMarketTrades after migration: total %d, %v; want 1", total, err)
	}
	if _, err := s.RecordGaps(ctx, want.Slug, []store.Gap{{From: start, To: start.Add(5 * time.Second)}}); err != nil {
		t.Fatal(err)
	}

}

func ptr[T any](v T) *T { return &v }
