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
		_, err := tc.flags.require()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want+" ") || strings.ContainsAny(err.Error(), "[]") {
			t.Errorf("require with %+v: %v; want %q", tc.flags, err, tc.want)
		}
	}
	// Both set, REDIS_URL is parsed there, once, for openBackends; one
	// that does not parse is refused there.
	both := serviceFlags{databaseURL: "postgres://x", redisURL: "redis://x:6390/3"}
	if conn, err := both.require(); err != nil || conn.describe() != "Redis x:6390 db 3" {
		t.Errorf("require with both set: %q, %v; want Redis x:6390 db 3", conn.describe(), err)
	}
	bad := serviceFlags{databaseURL: "postgres://x", redisURL: "http://x"}
	if _, err := bad.require(); err == nil || !strings.Contains(err.Error(), "REDIS_URL: scheme") {
		t.Errorf("require with REDIS_URL http://x: %v; want its scheme refused", err)
	}
	// The processes say so through run, for every service command.
	for _, cmd := range []string{"api", "worker", "collect"} {
		err := run(context.Background(), []string{cmd, "--database-url", "", "--redis-url", ""}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "DATABASE_URL and REDIS_URL must be set") {
			t.Errorf("updown %s without its backends: %v", cmd, err)
		}
	}
}
