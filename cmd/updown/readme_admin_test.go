package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/store"
	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestReadmeCustomerCommandsRunInOrder runs the README's Production block
// of `updown customers` and `updown keys` commands as a newcomer types
// them, one after another on one new database: each must succeed. (The
// block is marked readme-test: skip, since it needs Postgres, so
// TestReadmeExamples leaves it alone; set-limits is an ENTERPRISE feature,
// so a line that takes the customer off ENTERPRISE before it fails.)
func TestReadmeCustomerCommandsRunInOrder(t *testing.T) {
	// No t.Parallel: REDIS_URL is cleared for the commands, which then
	// tell no api process (none runs) and say so.
	t.Setenv("REDIS_URL", "")
	blocks, err := readmeBlocks("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, b := range blocks {
		if !strings.Contains(b.code, "bin/updown customers create") {
			continue
		}
		for _, line := range strings.Split(b.code, "\n") {
			if strings.HasPrefix(line, "bin/updown customers ") || strings.HasPrefix(line, "bin/updown keys ") {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) < 5 {
		t.Fatalf("README.md: found %d `bin/updown customers` and `keys` lines: has this test stopped finding the Production block?", len(lines))
	}
	dbURL := pgtest.NewEmptyDatabase(t)
	keyID := ""
	for _, line := range lines {
		code, _, _ := strings.Cut(line, " #")
		args := strings.Fields(code)[1:]
		if args[len(args)-1] == "--help" {
			continue
		}
		for i, a := range args {
			if a == "<key_id>" {
				if keyID == "" {
					t.Fatalf("README.md: %q names <key_id> before any `keys create` line printed one", line)
				}
				args[i] = keyID
			}
		}
		args = append(args, "--database-url", dbURL)
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("README.md's %q, run after the lines before it: %v\n%s", line, err, errOut.String())
		}
		if args[0] == "keys" && args[1] == "create" {
			var created struct {
				KeyID string `json:"key_id"`
			}
			if err := json.Unmarshal(out.Bytes(), &created); err != nil || created.KeyID == "" {
				t.Fatalf("%q printed %s: no key_id (%v)", line, out.String(), err)
			}
			keyID = created.KeyID
		}
	}
}

// TestReadmeFillFeesExitStatus: the exit status the README's
// `markets fill-fees` section gives for a --slug not stored and for a
// Gamma that does not answer is the one the binary exits with.
func TestReadmeFillFeesExitStatus(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tells, ok := strings.Cut(string(raw), "- **What it tells.**")
	if !ok {
		t.Fatal(`README.md has no "- **What it tells.**" bullet under markets fill-fees: has this test stopped finding it?`)
	}
	tells, _, _ = strings.Cut(tells, "\n\n")
	tells = strings.Join(strings.Fields(tells), " ")
	said := regexp.MustCompile(`not stored is named and the command exits (\d+)\b.*?the run stops and exits (\d+) with`).FindStringSubmatch(tells)
	if said == nil {
		t.Fatalf("README.md's fill-fees bullet names no exit status for a --slug not stored and for a Gamma that does not answer:\n%s", tells)
	}

	db := pgtest.NewDatabase(t)
	st, err := postgres.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 25, 6, 15, 0, 0, time.UTC)
	m := store.Market{Slug: "btc-updown-15m-1772000100", MarketID: "4243", Coin: store.BTC, MarketType: store.M15,
		StartTime: at, EndTime: at.Add(15 * time.Minute), UpstreamSlug: "btc-updown-15m-1772000100"}
	err = st.UpsertMarkets(t.Context(), []store.Market{m})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, want string
		args       []string
	}{
		{"a --slug not stored", said[1], []string{"--slug", "btc-updown-15m-1772000000"}},
		{"a Gamma that does not answer", said[2], []string{"--slug", m.Slug, "--gamma-url", "http://" + freeAddr(t)}},
	} {
		code, _, errOut := runBinary(t, nil, append([]string{"markets", "fill-fees", "--database-url", db}, c.args...)...)
		if strconv.Itoa(code) != c.want {
			t.Errorf("markets fill-fees with %s: exit %d, where README.md says %s\n%s", c.what, code, c.want, errOut)
		}
	}
}
