package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestServiceNamesMissingVariables: a service process started without
// its database or Redis says which in a sentence, not as a Go slice.
func TestServiceNamesMissingVariables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flags serviceFlags
		want  string
	}{
		{serviceFlags{}, "DATABASE_URL and REDIS_URL must be set"},
		{serviceFlags{redisURL: "redis://127.0.0.1:1"}, "DATABASE_URL must be set"},
		{serviceFlags{databaseURL: "postgres://127.0.0.1:1/x"}, "REDIS_URL must be set"},
	} {
		err := tc.flags.require()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want+" ") || strings.ContainsAny(err.Error(), "[]") {
			t.Errorf("require with %+v: %v; want %q", tc.flags, err, tc.want)
		}
	}
	both := serviceFlags{databaseURL: "postgres://x", redisURL: "redis://x"}
	if err := both.require(); err != nil {
		t.Errorf("require with both set: %v", err)
	}
	// The processes say so through run, for every service command.
	for _, cmd := range []string{"api", "worker", "collect"} {
		err := run(context.Background(), []string{cmd, "--database-url", "", "--redis-url", ""}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL and REDIS_URL must be set") {
			t.Errorf("updown %s without its backends: %v", cmd, err)
		}
	}
}
