package postgres_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestTickChangesMigration: tick changes an import stored out of order,
// some at one instant, before the stores kept them sorted, read back
// oldest first and one at an instant (the first listed) once migrated, as
// a write keeps them today (store.SortTickChanges), though reads no
// longer sort them; rows already in order, or with none or one change,
// are as they were, and no market's updated_at moves.
func TestTickChangesMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := postgres.Open(ctx, pgtest.NewEmptyDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := postgres.MigrateBefore(ctx, s, "tick_changes_sorted"); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
	updated := start.Add(-time.Hour)
	changes := func(cs ...store.TickSizeChange) []store.TickSizeChange { return cs }
	c := func(sec int, tick float64) store.TickSizeChange {
		return store.TickSizeChange{Time: at(sec), TickSize: tick}
	}
	cases := []struct {
		slug         string
		stored, want []store.TickSizeChange
	}{
		{"btc-updown-4hr-1", changes(c(300, 0.001), c(100, 0.01), c(200, 0.001), c(100, 0.001), c(300, 0.01)),
			changes(c(100, 0.01), c(200, 0.001), c(300, 0.001))},
		{"btc-updown-4hr-2", changes(c(50, 0.001), c(10, 0.01)), changes(c(10, 0.01), c(50, 0.001))},
		{"btc-updown-4hr-3", changes(c(10, 0.01), c(10, 0.001)), changes(c(10, 0.01))},
		{"btc-updown-4hr-4", changes(c(10, 0.001), c(20, 0.01), c(30, 0.001)), changes(c(10, 0.001), c(20, 0.01), c(30, 0.001))},
		{"btc-updown-4hr-5", changes(c(10, 0.001)), changes(c(10, 0.001))},
		{"btc-updown-4hr-6", nil, nil},
	}
	for _, tc := range cases {
		times, sizes := []time.Time{}, []float64{}
		for _, ch := range tc.stored {
			times, sizes = append(times, ch.Time), append(sizes, ch.TickSize)
		}
		if _, err := s.Pool().Exec(ctx, `
			insert into markets (slug, market_id, event_id, coin, market_type, start_time, end_time,
				condition_id, clob_token_up, clob_token_down, created_at, updated_at, tick_change_times, tick_change_sizes)
			values ($1, $1, 'e', 'BTC', '4hr', $2, $3, 'c', 'up', 'down', $4, $4, $5, $6)`,
			tc.slug, start, start.Add(4*time.Hour), updated, times, sizes); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		if !reflect.DeepEqual(store.SortTickChanges(tc.stored), tc.want) {
			t.Fatalf("%s: the case wants %v where a write of %v keeps %v", tc.slug, tc.want, tc.stored, store.SortTickChanges(tc.stored))
		}
		m, err := s.GetMarket(ctx, tc.slug)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.TickSizeChanges, tc.want) || !m.UpdatedAt.Equal(updated) {
			t.Errorf("%s stored with %v: after the migration %v, updated_at %v; want %v, %v",
				tc.slug, tc.stored, m.TickSizeChanges, m.UpdatedAt, tc.want, updated)
		}
	}
}
