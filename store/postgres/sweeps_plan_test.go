package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestSweepsPlan: a page of a customer's sweeps is a scan of the
// sweeps_by_customer index in the listing's order, with no sort, and the
// count of its sweeps in flight reads the partial sweeps_active index, and
// retention finds the sweeps finished before its cut by sweeps_finished,
// among many customers' sweeps, most of them finished.
func TestSweepsPlan(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := t.Context()
	const customers = 40
	ids := make([]string, customers)
	for i := range ids {
		c, err := s.CreateCustomer(ctx, store.Customer{Email: fmt.Sprintf("c%d@example.com", i), Name: "c"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.ID
	}
	_, err := s.Pool().Exec(ctx, `
		insert into sweeps (id, customer_id, status, request, trial_count, markets, replays_total,
			replays_done, result, created_at, updated_at, finished_at)
		select 'sw_' || lpad(g::text, 16, '0'), ($1::uuid[])[g % $2 + 1],
			case when g % 100 = 0 then 'RUNNING' else 'DONE' end, '{}', 1, array['m'], 1,
			case when g % 100 = 0 then 0 else 1 end,
			case when g % 100 = 0 then null else '{}'::json end,
			t, t, case when g % 100 = 0 then null else t end
		from generate_series(1, 40000) g, lateral (select now() - g * interval '1 minute' as t) at`,
		ids, customers)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `analyze sweeps`); err != nil {
		t.Fatal(err)
	}
	var cut time.Time // all but the oldest 400 sweeps were created after it
	if err := s.Pool().QueryRow(ctx, `select now() - 39600 * interval '1 minute'`).Scan(&cut); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sql, want string
		arg             any
		sortFree        bool
	}{
		{"list", postgres.ListSweepsSQL + " limit 20 offset 20", "using sweeps_by_customer", ids[7], true},
		{"count active", postgres.ActiveSweepsSQL, "sweeps_active", ids[7], false},
		{"retention", postgres.DeleteFinishedSQL, "sweeps_finished", cut, false},
	} {
		var plan strings.Builder
		rows, err := s.Pool().Query(ctx, "explain "+tc.sql, tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", tc.name, plan.String())
		if !strings.Contains(plan.String(), tc.want) || (tc.sortFree && strings.Contains(plan.String(), "Sort")) ||
			strings.Contains(plan.String(), "Seq Scan") {
			t.Errorf("%s: want a plan %s without a sequential scan or a sort:\n%s", tc.name, tc.want, plan.String())
		}
	}
}
