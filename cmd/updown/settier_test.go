package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

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

// TestSetTierBackToBilling: `customers set-tier --billing` undoes a tier
// set by hand by mistake: the customer goes back to the plan its billing
// events leave (SUITE, its subscription's), whose sweeps rule applies as
// any plan change's does (the running sweep the hand-set ENTERPRISE plan
// allowed is cancelled), and the subscription's later cancellation, which
// the tier set by hand would have left standing, ends it. --billing with
// --tier, or with neither, is refused before any database is opened.
func TestSetTierBackToBilling(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"customers", "set-tier", "--email", "ada@example.com", "--tier", "PRO", "--billing"},
		{"customers", "set-tier", "--email", "ada@example.com"},
	} {
		args = append(args, "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--billing") || strings.Contains(err.Error(), "database") {
			t.Errorf("updown %s: %v; want an error naming --billing, not the database", strings.Join(args, " "), err)
		}
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"customers", "set-tier", "-h"}, io.Discard, &help); err != nil && !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("set-tier -h: %v", err)
	}
	if !strings.Contains(help.String(), "--billing") {
		t.Errorf("set-tier -h does not tell of --billing:\n%s", help.String())
	}

	dbURL := pgtest.NewEmptyDatabase(t)
	var created struct {
		CustomerID string `json:"customer_id"`
	}
	out := runCmd(t, "customers", "create", "--database-url", dbURL, "--email", "mistaken@example.com")
	if err := json.Unmarshal(out, &created); err != nil || created.CustomerID == "" {
		t.Fatalf("customers create: %s %v", out, err)
	}
	ctx := context.Background()
	st, err := openAdminStore(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	event := func(id, typ string, tier store.Tier, at time.Time) store.BillingEvent {
		t.Helper()
		rec, _, err := st.RecordBillingEvent(ctx, store.BillingEvent{ID: id, Type: typ, OccurredAt: at, SubscriptionID: "sub_suite",
			CustomerRef: created.CustomerID, SetTier: true, EndsSubscription: typ == "subscription.cancelled", Tier: tier, Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	event("evt_suite", "subscription.active", store.Suite, time.Now().Add(-time.Hour))
	runCmd(t, "customers", "set-tier", "--database-url", dbURL, "--redis-url=", "--id", created.CustomerID, "--tier", "ENTERPRISE")
	sw, err := st.CreateSweep(ctx, store.Sweep{CustomerID: created.CustomerID, Request: []byte(`{}`), TrialCount: 2,
		Markets: []string{"btc-updown-15m-1777460400"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err != nil {
		t.Fatal(err)
	}

	out = runCmd(t, "customers", "set-tier", "--database-url", dbURL, "--redis-url=", "--id", created.CustomerID, "--billing")
	var got struct{ CustomerID, Tier string }
	if err := json.Unmarshal(out, &got); err != nil || got.Tier != string(store.Suite) {
		t.Errorf("set-tier --billing printed %s (%v), want tier SUITE", out, err)
	}
	if c, err := st.GetCustomer(ctx, created.CustomerID); err != nil || c.Tier != store.Suite {
		t.Errorf("after set-tier --billing: %s %v, want SUITE", c.Tier, err)
	}
	if got, err := st.GetSweep(ctx, sw.ID); err != nil || got.Status != store.SweepCancelled {
		t.Errorf("after set-tier --billing to SUITE (no sweeps): sweep %s %v, want CANCELLED", got.Status, err)
	}
	if rec := event("evt_suite_cancelled", "subscription.cancelled", store.Starter, time.Now()); rec.Outcome != store.BillingApplied {
		t.Errorf("the subscription's cancellation after set-tier --billing: outcome %s, want applied", rec.Outcome)
	}
}

// TestCustomersListSaysTierSetByHand: `customers list` tells, for each
// customer, whether its plan was set by hand (tier_set_by_hand), true
// from `customers set-tier --tier` until `--billing` hands it back, the
// other fields as they were; it did not say, and an operator could not
// tell a plan set by hand from one billing set.
func TestCustomersListSaysTierSetByHand(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	ids := map[string]string{}
	for _, email := range []string{"hand@example.com", "billed@example.com"} {
		var created struct {
			CustomerID string `json:"customer_id"`
		}
		out := runCmd(t, "customers", "create", "--database-url", dbURL, "--email", email, "--tier", "PRO")
		if err := json.Unmarshal(out, &created); err != nil || created.CustomerID == "" {
			t.Fatalf("customers create: %s %v", out, err)
		}
		ids[email] = created.CustomerID
	}
	// list checks the hand customer's tier and tier_set_by_hand; the
	// other stays on PRO, not set by hand.
	list := func(after string, handTier string, byHand bool) {
		t.Helper()
		out := runCmd(t, "customers", "list", "--database-url", dbURL)
		var got []map[string]any
		if err := json.Unmarshal(out, &got); err != nil || len(got) != 2 {
			t.Fatalf("customers list after %s: %s (%v), want 2 customers as JSON", after, out, err)
		}
		for _, c := range got {
			email, _ := c["email"].(string)
			wantTier, wantHand := "PRO", false
			if email == "hand@example.com" {
				wantTier, wantHand = handTier, byHand
			}
			if got, ok := c["tier_set_by_hand"].(bool); !ok || got != wantHand {
				t.Errorf("customers list after %s: %s tier_set_by_hand %v, want %v", after, email, c["tier_set_by_hand"], wantHand)
			}
			for _, field := range []string{"customer_id", "email", "name", "tier", "created_at"} {
				if _, ok := c[field].(string); !ok {
					t.Errorf("customers list after %s: %s's %s is %v, want a string", after, email, field, c[field])
				}
			}
			if c["customer_id"] != ids[email] || c["tier"] != wantTier {
				t.Errorf("customers list after %s: %v, want customer %s on %s", after, c, ids[email], wantTier)
			}
		}
	}
	list("customers were created", "PRO", false)
	setTier := func(how ...string) {
		t.Helper()
		runCmd(t, append([]string{"customers", "set-tier", "--database-url", dbURL, "--redis-url=", "--email", "hand@example.com"}, how...)...)
	}
	setTier("--tier", "SUITE")
	list("set-tier --tier SUITE", "SUITE", true)
	setTier("--billing")
	list("set-tier --billing", "STARTER", false)
	setTier("--tier", "PRO")
	list("set-tier --tier PRO", "PRO", true)
}
