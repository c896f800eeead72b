package postgres_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestMarketTradesPlan: a page of trades by time range and keyset
// position is one range scan of the primary key, forwards or backwards,
// with no sort; the position is an index condition, not a filter.
func TestMarketTradesPlan(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	slug := newMarket(t, s, t0)
	other := newMarket(t, s, t0.Add(time.Hour))
	for i := 0; i < 20_000; i += 5000 {
		for _, m := range []string{slug, other} {
			if _, err := s.AppendMarketTrades(ctx, m, benchTrades(t0, i, 5000)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Pool().Exec(ctx, `analyze market_trades`); err != nil {
		t.Fatal(err)
	}
	after := benchTrades(t0, 9000, 1)[0]
	from, to := t0.Add(10*time.Second), t0.Add(30*time.Minute)
	for _, asc := range []bool{true, false} {
		sql, args := postgres.TradePageSQL(slug, store.MarketTradeQuery{Limit: 100, Ascending: asc, From: &from, To: &to, After: &after})
		var plan string
		rows, err := s.Pool().Query(ctx, "explain "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan += line + "\n"
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("asc %t:\n%s", asc, plan)
		scan := regexp.MustCompile(`Index (Only )?Scan (Backward )?using market_trades_pkey on market_trades`)
		if !scan.MatchString(plan) ||
			strings.Contains(plan, "Sort") || strings.Contains(plan, "Filter:") || !strings.Contains(plan, "ROW(") {
			t.Errorf("asc %t: want one range scan of the key with the position in its condition:\n%s", asc, plan)
		}
	}
}
