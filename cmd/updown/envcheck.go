package main

import (
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// envChecks are the variables whose values have a form, with what they
// must be: a value set in another form is refused at start, naming the
// variable, rather than read as the default (JOB_WAIT=30, without a
// unit, was 60 s; MIGRATE_ON_START=1 did not migrate).
var envChecks = []struct {
	name  string
	check func(string) error
}{
	{"JOB_WAIT", positiveDuration},
	{"SHUTDOWN_TIMEOUT", positiveDuration},
	{"COLLECT_INTERVAL", positiveDuration},
	{"COLLECT_UNHEALTHY_AFTER", positiveDuration},
	{"COLLECT_DISCOVERY_INTERVAL", positiveDuration},
	{"COLLECT_RESOLVE_DELAY", positiveDuration},
	{"COLLECT_QUICK_WINDOWS", nonNegativeDuration},
	// REPLAY_CACHE_MIB beyond what an int64 of bytes holds wrapped round.
	{"REPLAY_CACHE_MIB", mebibytes},
	{"SNAPSHOT_BOOKS_VERSION", integer},
	{"MIGRATE_ON_START", boolean},
	{"LOG_LEVEL", logLevel},
	{"LOG_FORMAT", oneOf("json", "text")},
	{"PORT", port},
	// PUBLIC_URL=updown.example.com, without its scheme, left the session
	// cookie without Secure behind https; BILLING_URL is a link users follow.
	{"PUBLIC_URL", httpURL},
	{"BILLING_URL", httpURL},
	// OPENAI_BASE_URL=api.openai.com/v1 started a worker whose every
	// generation then failed (502); the worker took a Polymarket or
	// Binance base URL without its scheme with an error logged once, and
	// resolved no market. (The websocket's URL is ws(s)://, and collect
	// checks it.)
	{"OPENAI_BASE_URL", httpURL},
	{"OPENAI_TIMEOUT", modelTimeout},
	{"POLYMARKET_GAMMA_URL", httpURL},
	{"POLYMARKET_CLOB_URL", httpURL},
	{"POLYMARKET_DATA_URL", httpURL},
	{"BINANCE_SPOT_URL", httpURL},
	{"BINANCE_FUTURES_URL", httpURL},
}

// checkEnv refuses the first variable of envChecks set in a form it does
// not take; unset and empty variables take their defaults. The value is
// quoted with any password it holds blotted out (envValueShown).
func checkEnv(getenv func(string) string) error {
	for _, c := range envChecks {
		if v := getenv(c.name); v != "" {
			if err := c.check(v); err != nil {
				return fmt.Errorf("%s=%q: %w", c.name, envValueShown(v), err)
			}
		}
	}
	return nil
}

// envValueShown is a refused value as an error may quote it: a URL's
// password goes (redactURL), also in the forms the URL checks refuse, which
// are the ones quoted: without its scheme (user:pw@llm.internal/v1) or with
// a scheme mistyped (https//user:pw@host). The error goes to the process's
// log, where a proxy's password in OPENAI_BASE_URL, say, must not.
func envValueShown(v string) string {
	if r := redactURL(v); r != v || !strings.Contains(v, "@") {
		return r
	}
	const scheme = "x://"
	return strings.TrimPrefix(redactURL(scheme+v), scheme)
}

func positiveDuration(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a duration above 0 with its unit, such as 30s or 2m")
	}
	return nil
}

// maxModelTimeout bounds OPENAI_TIMEOUT: a generation makes up to two
// calls to the model (one repair) within its task's 2 minutes
// (worker.Client's default), which Asynq would otherwise cut and retry.
const maxModelTimeout = 55 * time.Second

// modelTimeout checks OPENAI_TIMEOUT: one call to the model, 1s to
// maxModelTimeout.
func modelTimeout(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > maxModelTimeout {
		return fmt.Errorf("want a duration from 1s to %v, such as 45s: a generation makes up to two calls to the model within its 2-minute task", maxModelTimeout)
	}
	return nil
}

func nonNegativeDuration(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration with its unit, such as 30s, or 0")
	}
	return nil
}

func integer(v string) error {
	if _, err := strconv.ParseInt(v, 10, 64); err != nil {
		return fmt.Errorf("want a whole number")
	}
	return nil
}

// maxMiB is the largest size in MiB whose bytes an int64 holds.
const maxMiB = math.MaxInt64 >> 20

// mebibytes is a size in MiB (a negative one, as 0, is none).
func mebibytes(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err != nil || n > maxMiB {
		return fmt.Errorf("want a whole number of MiB, at most %d", int64(maxMiB))
	}
	return nil
}

func boolean(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("want true or false")
	}
	return nil
}

func logLevel(v string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("want debug, info, warn or error")
	}
	return nil
}

func port(v string) error {
	if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port number, 0 to 65535")
	}
	return nil
}

func httpURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "" {
		return fmt.Errorf("want an absolute http:// or https:// URL, such as https://updown.example.com")
	}
	return nil
}

// oneOf takes one of values, in any case.
func oneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, w := range values {
			if strings.EqualFold(v, w) {
				return nil
			}
		}
		return fmt.Errorf("want one of %q", values)
	}
}
