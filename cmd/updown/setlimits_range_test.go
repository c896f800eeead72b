package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/updown/updown/store/postgres/pgtest"
)

// TestSetLimitsAboveWhatIsKeptIsToldAsSuch: a limit over 2147483647 (the
// database keeps each in 32 bits) is refused naming the flag and the
// largest, where the driver's "unable to encode ... into binary format
// for int4" was the message; a limit at the largest is kept.
func TestSetLimitsAboveWhatIsKeptIsToldAsSuch(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	do := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append(args, "--database-url", dbURL), &out, &bytes.Buffer{})
		return out.String(), err
	}
	if _, err := do("customers", "create", "--email", "big@example.com", "--tier", "ENTERPRISE"); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--per-minute", "--per-day", "--ai-generations", "--sweep-trials", "--sweep-markets", "--sweep-replays"} {
		_, err := do("customers", "set-limits", "--email", "big@example.com", flag, "3000000000")
		if err == nil || !strings.Contains(err.Error(), flag+" 3000000000: at most 2147483647") || strings.Contains(err.Error(), "int4") {
			t.Errorf("set-limits %s 3000000000: %v; want it refused as over 2147483647", flag, err)
		}
	}
	out, err := do("customers", "set-limits", "--email", "big@example.com", "--per-day", "2147483647")
	if err != nil || !strings.Contains(out, `"per_day": 2147483647`) {
		t.Errorf("set-limits --per-day 2147483647: %v\n%s", err, out)
	}
}
