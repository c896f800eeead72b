package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestSetTierStopsSweeps: `customers set-tier` to a plan without sweeps
// cancels the customer's running sweeps, as the billing webhook does; a
// plan with sweeps leaves them running.
func TestSetTierStopsSweeps(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	var created struct {
		CustomerID string `json:"customer_id"`
	}
	out := runCmd(t, "customers", "create", "--database-url", dbURL, "--email", "sweeper@example.com", "--tier", "ENTERPRISE")
	if err := json.Unmarshal(out, &created); err != nil || created.CustomerID == "" {
		t.Fatalf("customers create: %s %v", out, err)
	}
	ctx := context.Background()
	st, err := openAdminStore(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sw, err := st.CreateSweep(ctx, store.Sweep{CustomerID: created.CustomerID, Request: []byte(`{}`), TrialCount: 2,
		Markets: []string{"btc-updown-15m-1777460400"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}
	status := func() store.SweepStatus {
		t.Helper()
		got, err := st.GetSweep(ctx, sw.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	runCmd(t, "customers", "set-tier", "--database-url", dbURL, "--redis-url=", "--id", created.CustomerID, "--tier", "PRO")
	if s := status(); s != store.SweepRunning {
		t.Fatalf("set-tier PRO (a plan with sweeps) left the sweep %s", s)
	}
	runCmd(t, "customers", "set-tier", "--database-url", dbURL, "--redis-url=", "--id", created.CustomerID, "--tier", "SUITE")
	if s := status(); s != store.SweepCancelled {
		t.Errorf("set-tier SUITE (no sweeps) left the sweep %s, want CANCELLED", s)
	}
}
