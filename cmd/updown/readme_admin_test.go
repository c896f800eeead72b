package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

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
