package collect

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scripted answers the n-th request (from 0) with answers[n], then with
// the last one.
func scripted(t *testing.T, answers ...func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		answers[min(i, len(answers)-1)](w)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func status(code int, retryAfter string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"error":"nope"}`)
	}
}

func body(s string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { _, _ = io.WriteString(w, s) }
}

func testUpstream(t *testing.T, url string) *upstream {
	t.Helper()
	u, err := newUpstream("test", url, http.DefaultClient, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var quick = Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}

func TestUpstreamRetriesTemporaryFailures(t *testing.T) {
	t.Parallel()
	srv, n := scripted(t, status(502, ""), body(`<html>proxy error</html>`), status(503, ""), body(`{"ok":true}`))
	var out struct{ OK bool }
	err := testUpstream(t, srv.URL).do(context.Background(), request{method: "GET", path: "/x", attempts: 4, backoff: quick, timeout: time.Second}, &out)
	if err != nil || !out.OK || n.Load() != 4 {
		t.Fatalf("after 502, a malformed body and 503: err %v, ok %v, %d requests; want success on the 4th", err, out.OK, n.Load())
	}
}

func TestUpstreamGivesUpOnPermanentFailures(t *testing.T) {
	t.Parallel()
	srv, n := scripted(t, status(404, ""))
	err := testUpstream(t, srv.URL).do(context.Background(), request{method: "GET", path: "/x", attempts: 4, backoff: quick}, nil)
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Status != 404 || ue.Temporary || n.Load() != 1 {
		t.Fatalf("404: %v after %d requests; want one request and a permanent error", err, n.Load())
	}
}

func TestUpstreamBoundedAttempts(t *testing.T) {
	t.Parallel()
	srv, n := scripted(t, status(500, ""))
	err := testUpstream(t, srv.URL).do(context.Background(), request{method: "GET", path: "/x", attempts: 3, backoff: quick}, nil)
	if !temporary(err) || n.Load() != 3 {
		t.Fatalf("500 forever: %v after %d requests; want 3 and a temporary error", err, n.Load())
	}
}

// TestUpstreamHonoursRetryAfter checks that a 429 holds back every
// request to the upstream, not only the refused one: a request sent once
// fails at once without reaching the server, and a retrying one waits.
func TestUpstreamHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv, n := scripted(t, status(429, "1"), body(`{}`))
	u := testUpstream(t, srv.URL)
	err := u.do(context.Background(), request{method: "GET", path: "/x", attempts: 1}, nil)
	if ra := retryAfter(err); ra != time.Second || !temporary(err) {
		t.Fatalf("429: %v (retry after %v)", err, ra)
	}
	err = u.do(context.Background(), request{method: "GET", path: "/x", attempts: 1}, nil)
	if !errors.Is(err, errBackingOff) || n.Load() != 1 {
		t.Fatalf("during the wait: %v after %d requests; want no request sent", err, n.Load())
	}
	began := time.Now()
	if err := u.do(context.Background(), request{method: "GET", path: "/x", attempts: 2, backoff: quick}, nil); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(began); waited < 900*time.Millisecond {
		t.Errorf("a retrying request went after %v, before the 1s the upstream asked for", waited)
	}
}

func TestUpstreamTimeout(t *testing.T) {
	t.Parallel()
	srv, _ := scripted(t, func(w http.ResponseWriter) { time.Sleep(300 * time.Millisecond) })
	began := time.Now()
	err := testUpstream(t, srv.URL).do(context.Background(), request{method: "GET", path: "/x", attempts: 1, timeout: 50 * time.Millisecond}, nil)
	if !temporary(err) || time.Since(began) > 250*time.Millisecond {
		t.Fatalf("slow upstream: %v after %v; want a temporary error after the 50ms timeout", err, time.Since(began))
	}
}

func TestUpstreamStopsOnCancel(t *testing.T) {
	t.Parallel()
	srv, _ := scripted(t, status(503, "30"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := testUpstream(t, srv.URL).do(ctx, request{method: "GET", path: "/x", attempts: 5, backoff: quick}, nil)
	if err == nil || time.Since(began) > time.Second {
		t.Fatalf("cancelled during a 30s Retry-After: %v after %v", err, time.Since(began))
	}
}

func TestNewUpstreamRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "gamma-api.polymarket.com", "ftp://x", "http://"} {
		if _, err := newUpstream("x", u, http.DefaultClient, slog.Default(), time.Now); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
}

// TestUpstreamHonoursLongBan answers a 418, Binance's IP ban, with the
// Retry-After of a two-day ban (bans grow to three days for repeat
// offenders): every request to the upstream waits the whole ban out, and
// the wait is reported, where a Retry-After of a day or more was taken for
// none and the banned API was asked again a second later.
func TestUpstreamHonoursLongBan(t *testing.T) {
	t.Parallel()
	srv, n := scripted(t, status(http.StatusTeapot, "172800"), body(`{}`))
	u := testUpstream(t, srv.URL)
	err := u.do(context.Background(), request{method: "GET", path: "/api/v3/depth", attempts: 1}, nil)
	if ra := retryAfter(err); ra != 48*time.Hour || !temporary(err) {
		t.Fatalf("418 with Retry-After 172800: %v (retry after %v); want a temporary error asking for 48h", err, ra)
	}
	if wait := u.blocked(); wait < 47*time.Hour {
		t.Fatalf("after a two-day ban the upstream is held back for %v", wait)
	}
	err = u.do(context.Background(), request{method: "GET", path: "/api/v3/trades", attempts: 1}, nil)
	if !errors.Is(err, errBackingOff) || n.Load() != 1 {
		t.Fatalf("during the ban: %v after %d requests; want no request sent", err, n.Load())
	}
}

// TestBinanceRestrictedLocationSaysWhere: Binance's 451 (a restricted
// location) on the spot API is a permanent failure that names the address
// its public spot market data is also served at, where the log said only
// "451 Unavailable For Legal Reasons" and nothing was recorded.
func TestBinanceRestrictedLocationSaysWhere(t *testing.T) {
	t.Parallel()
	srv, n := scripted(t, status(451, ""))
	u, err := newUpstream("binance-spot", srv.URL, http.DefaultClient, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	err = u.do(context.Background(), request{method: "GET", path: "/api/v3/ticker/price", attempts: 3, backoff: quick}, nil)
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Status != 451 || ue.Temporary || n.Load() != 1 {
		t.Fatalf("451: %v after %d requests; want one request and a permanent error", err, n.Load())
	}
	if !strings.Contains(err.Error(), "https://data-api.binance.vision") || !strings.Contains(err.Error(), "BINANCE_SPOT_URL") {
		t.Errorf("451: %v; want the spot data address and the setting named", err)
	}
}
