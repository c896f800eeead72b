package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// devRun is an `updown dev` running in this process.
type devRun struct {
	base   string // http://host:port
	banner string // what it printed up to the API line
	stop   func() error
}

// startDev runs `updown dev args...` until the test ends (or stop), with
// small generated data and no collector ticks.
func startDev(t *testing.T, args ...string) devRun {
	t.Helper()
	return startDevLogged(t, io.Discard, args...)
}

// startDevLogged is startDev with dev's log written to log.
func startDevLogged(t *testing.T, log io.Writer, args ...string) devRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"dev", "--snapshots-per-market", "20", "--collect-every", "0"}, args...), pw, log)
		pw.CloseWithError(errors.Join(err, io.EOF))
		done <- err
	}()
	found := make(chan devRun, 1)
	go func() {
		var banner strings.Builder
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			banner.WriteString(sc.Text() + "\n")
			if m := bannerURL.FindStringSubmatch(sc.Text()); m != nil {
				found <- devRun{base: m[1], banner: banner.String()}
				_, _ = io.Copy(io.Discard, pr)
				return
			}
		}
	}()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(patience):
			return fmt.Errorf("dev's stop hung (gave up after %v)", patience)
		}
	})
	select {
	case d := <-found:
		d.stop = stop
		t.Cleanup(func() { _ = stop() })
		return d
	case err := <-done:
		cancel()
		t.Fatalf("updown dev %v exited: %v", args, err)
	case <-time.After(patience):
		cancel()
		t.Fatalf("updown dev hung before its banner (gave up after %v)", patience)
	}
	return devRun{}
}

// TestDevLeavesProductionAlone: with DATABASE_URL pointing at a production
// database, `updown dev` runs on its in-memory store, writes nothing into
// that database, and listens on loopback only (DESIGN 3's dev contract).
func TestDevLeavesProductionAlone(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	prodKey := createKey(t, dbURL, "real@customer.com", store.Enterprise)
	t.Setenv("DATABASE_URL", dbURL)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	t.Setenv("PORT", port)

	d := startDev(t) // no --addr, no --database
	if !strings.Contains(d.banner, "store: memory") {
		t.Errorf("dev adopted DATABASE_URL:\n%s", d.banner)
	}
	if want := "http://127.0.0.1:" + port; d.base != want {
		t.Errorf("dev serves %s, want %s (loopback only unless --addr says otherwise)", d.base, want)
	}
	if a := do(nil, http.MethodGet, d.base+"/v1/markets?coin=BTC&limit=1", "ud_dev_enterprise", ""); a.status != http.StatusOK {
		t.Errorf("a demo key in dev: %v", a)
	}
	if a := do(nil, http.MethodGet, d.base+"/v1/markets?coin=BTC&limit=1", prodKey, ""); a.status != http.StatusUnauthorized {
		t.Errorf("a production key works in dev: %v", a)
	}
	if err := d.stop(); err != nil {
		t.Fatalf("dev: %v", err)
	}
	assertNoDevTraces(t, dbURL)
}

// TestDevRefusesAForeignDatabase: --database with a database dev did not
// make (tables, no mark) is refused, clearly and before anything is written.
func TestDevRefusesAForeignDatabase(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	createKey(t, dbURL, "real@customer.com", store.Enterprise)
	err := run(context.Background(), []string{"dev", "--addr", "127.0.0.1:0", "--database", dbURL, "--snapshots-per-market", "20"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "only an empty database or one it made itself") {
		t.Fatalf("dev on a production database: %v", err)
	}
	assertNoDevTraces(t, dbURL)
}

// TestDevClaimsAnEmptyDatabase: --database with an empty database works,
// and dev takes the same database again on its next start.
func TestDevClaimsAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	for i := range 2 {
		d := startDev(t, "--addr", "127.0.0.1:0", "--database", dbURL)
		if !strings.Contains(d.banner, "store: postgres") {
			t.Errorf("run %d: not on postgres:\n%s", i, d.banner)
		}
		if a := do(nil, http.MethodGet, d.base+"/v1/markets?coin=BTC&limit=1", "ud_dev_pro", ""); a.status != http.StatusOK {
			t.Errorf("run %d: a demo key: %v", i, a)
		}
		if err := d.stop(); err != nil {
			t.Fatalf("run %d: dev: %v", i, err)
		}
	}
}

// assertNoDevTraces checks that no demo customer and no dev mark made it
// into the database at dbURL.
func assertNoDevTraces(t *testing.T, dbURL string) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range demoCustomers() {
		if _, err := st.GetCustomerByEmail(ctx, c.Email); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("demo customer %s in the production database: %v", c.Email, err)
		}
	}
	var marked bool
	if err := st.Pool().QueryRow(ctx, `select to_regclass($1) is not null`, devMarkerTable).Scan(&marked); err != nil || marked {
		t.Errorf("the production database carries dev's mark (%v)", err)
	}
	if n, err := st.CountMarkets(ctx, store.MarketFilter{}); err != nil || n != 0 {
		t.Errorf("dev wrote %d markets into the production database (%v)", n, err)
	}
}

// TestDevBusyPortFailsFirst: dev on an address another process holds
// fails naming the address, before it generates data or starts a worker.
func TestDevBusyPortFailsFirst(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	var log syncBuffer
	err = run(context.Background(), []string{"dev", "--addr", addr, "--snapshots-per-market", "20"}, io.Discard, &log)
	if err == nil || !strings.Contains(err.Error(), "listen on "+addr) {
		t.Fatalf("dev on a held address: %v; want an error naming %s", err, addr)
	}
	for _, work := range []string{"generated dev data", "loaded live exchange data", "worker started"} {
		if strings.Contains(log.String(), work) {
			t.Errorf("dev did %q before it found its address taken:\n%s", work, log.String())
		}
	}
}

// TestDevRefusesBadSettingsFirst: a setting dev reads in a form it does
// not take stops it at start naming the variable, before it generates
// data: a malformed WEBHOOK_SECRET failed after the data as "api: webhook
// secret: ...", which named nothing the user set, and AI_PROVIDER,
// JOBS_IN_FLIGHT, READS_IN_FLIGHT and MONITORING_WRITE were told only
// after seconds of generation.
func TestDevRefusesBadSettingsFirst(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"WEBHOOK_SECRET", "not-a-whsec-secret"},
		{"AI_PROVIDER", "bogus"},
		{"JOBS_IN_FLIGHT", "PRO"},
		{"READS_IN_FLIGHT", "GOLD=2"},
		{"MONITORING_WRITE", "maybe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			var log syncBuffer
			err := run(context.Background(), []string{"dev", "--addr", "127.0.0.1:0", "--snapshots-per-market", "20"}, io.Discard, &log)
			if err == nil || !strings.Contains(err.Error(), c.name) {
				t.Fatalf("dev with %s=%q: %v; want an error naming %s", c.name, c.value, err, c.name)
			}
			if strings.Contains(log.String(), "generated dev data") {
				t.Errorf("dev generated its data before it refused %s:\n%s", c.name, log.String())
			}
		})
	}
}

// TestDevRefusesNegativeCollectEvery: --collect-every below 0 is refused,
// naming it, before dev generates anything, rather than read as 0 (a
// collector that never moves the data to the present).
func TestDevRefusesNegativeCollectEvery(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--addr", "127.0.0.1:0", "--snapshots-per-market", "20", "--collect-every", "-5s"}, io.Discard, &log)
	}()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			if strings.Contains(log.String(), "api listening") { // it took the setting: stop it
				cancel()
			}
		}
	}
	if err == nil || !strings.Contains(err.Error(), "--collect-every") {
		t.Fatalf("dev --collect-every -5s: %v; want an error naming --collect-every", err)
	}
	if strings.Contains(log.String(), "generated dev data") {
		t.Errorf("dev generated its data before it refused --collect-every:\n%s", log.String())
	}
}

// TestNegativeSnapshotsPerMarketRefused: dev and seed refuse a
// --snapshots-per-market below 0, naming it, before they open or
// generate anything: it was told as the generator's
// "MaxSnapshotsPerMarket -1 is negative", and seed opened (and migrated)
// the database first, so behind an unreachable one the database's error
// was told instead.
func TestNegativeSnapshotsPerMarketRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"dev", "--addr", "127.0.0.1:0", "--collect-every", "0", "--snapshots-per-market", "-1"},
		{"seed", "--database-url", "postgres://127.0.0.1:1/none", "--snapshots-per-market", "-1"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--snapshots-per-market -1") {
			t.Errorf("updown %s: %v; want an error naming --snapshots-per-market", strings.Join(args, " "), err)
		}
	}
}

// TestDevRestoresRevokedDemoKeys: a demo key revoked in a dev database
// (keys revoke, as a user trying the CLI would) works again on dev's next
// start, which says it restored it; the other keys are left as they are.
func TestDevRestoresRevokedDemoKeys(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	d := startDev(t, "--addr", "127.0.0.1:0", "--database", dbURL)
	if err := d.stop(); err != nil {
		t.Fatalf("dev: %v", err)
	}
	var keys []struct {
		KeyID string `json:"key_id"`
	}
	if err := json.Unmarshal(runCmd(t, "keys", "list", "--database-url", dbURL, "--email", "pro@example.com"), &keys); err != nil || len(keys) != 1 {
		t.Fatalf("the demo PRO customer's keys: %+v %v", keys, err)
	}
	// --redis-url=: keys revoke tells no api processes.
	runCmd(t, "keys", "revoke", "--database-url", dbURL, "--redis-url=", "--id", keys[0].KeyID)

	var log syncBuffer
	d = startDevLogged(t, &log, "--addr", "127.0.0.1:0", "--database", dbURL)
	for _, key := range []string{"ud_dev_pro", "ud_dev_starter"} {
		if a := do(nil, http.MethodGet, d.base+"/v1/markets?coin=BTC&limit=1", key, ""); a.status != http.StatusOK {
			t.Errorf("%s after dev restarted: %v", key, a)
		}
	}
	if err := d.stop(); err != nil {
		t.Fatalf("dev: %v", err)
	}
	var restored []string
	for line := range strings.SplitSeq(log.String(), "\n") {
		if strings.Contains(line, "restored demo keys") {
			restored = append(restored, line)
		}
	}
	if len(restored) != 1 || !strings.Contains(restored[0], "ud_dev_pro") || strings.Contains(restored[0], "ud_dev_starter") {
		t.Errorf("dev's log names restored keys %q; want one line naming ud_dev_pro alone\n%s", restored, log.String())
	}
}

// TestDevBannerWarnsBeyondLoopback: dev's demo keys, built-in secrets and
// open /monitoring are public; a dev that listens where other machines
// reach it (--addr :8080) says so in its banner, and one on loopback, the
// default, does not.
func TestDevBannerWarnsBeyondLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr net.Addr
		warn bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, false},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, false},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, true},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, true},
		{&net.TCPAddr{Port: 8080}, true},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8080}, true},
	} {
		var b strings.Builder
		printBanner(&b, tc.addr, "memory", time.Second, []string{"Token secret (bearer tokens): built in: x"})
		if got := strings.Contains(b.String(), "reachable beyond this machine"); got != tc.warn {
			t.Errorf("dev on %v: banner warns of other machines: %v, want %v:\n%s", tc.addr, got, tc.warn, b.String())
		}
	}
}
