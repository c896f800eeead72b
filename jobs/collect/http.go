package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Backoff is a bounded exponential backoff with full jitter: the n-th wait
// (n ≥ 1) is uniform in [0, min(Max, Base·2^(n−1))], so that many clients
// failing together do not retry together.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Delay returns the wait before retry n (n ≥ 1).
func (b Backoff) Delay(n int) time.Duration {
	ceil := b.Base
	for i := 1; i < n && ceil < b.Max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, b.Max)
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// maxBody bounds what is read of a response: a book batch is tens of
// kilobytes, a Binance page of 1,000 trades about 150 KB.
const maxBody = 16 << 20

// UpstreamError is a request to an upstream that failed, written for the
// operator who reads it in a log.
type UpstreamError struct {
	Upstream string // gamma, clob, binance-spot, binance-futures
	Op       string // method and path, e.g. "GET /events?slug=btc-updown-5m-1700000000"
	Status   int    // HTTP status; 0 when no response came
	// RetryAfter is the wait the upstream asked for (429, 418, 503).
	RetryAfter time.Duration
	// Temporary is true when a later attempt may succeed: no response, a
	// timeout, 429, 5xx, or a body that does not decode.
	Temporary bool
	Err       error
}

func (e *UpstreamError) Error() string {
	var b strings.Builder
	b.WriteString(e.Upstream + ": " + e.Op + ": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "%d %s", e.Status, http.StatusText(e.Status))
		if e.Err != nil {
			b.WriteString(": ")
		}
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (asked to wait %v)", e.RetryAfter)
	}
	return b.String()
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// binanceSpotDataURL is Binance's address for public spot market data
// alone (the endpoints the collector and resolver use), which a 451 from
// api.binance.com is pointed to.
const binanceSpotDataURL = "https://data-api.binance.vision"

// errBackingOff is a request not sent because the upstream asked us to
// wait (a 429's Retry-After) and the wait is not over.
var errBackingOff = errors.New("not sent: backing off after a rate limit")

// temporary reports whether err is worth another attempt.
func temporary(err error) bool {
	var ue *UpstreamError
	return errors.As(err, &ue) && ue.Temporary
}

// retryAfter returns the wait an upstream asked for, if err carries one.
func retryAfter(err error) time.Duration {
	var ue *UpstreamError
	if errors.As(err, &ue) {
		return ue.RetryAfter
	}
	return 0
}

// upstream is one upstream HTTP API at a base URL. It is safe for
// concurrent use.
//
// When the upstream answers 429 (or Binance's 418, which follows 429s that
// were ignored) every request to it waits out Retry-After, not only the
// one that was refused: hammering a rate-limited API gets an IP banned.
type upstream struct {
	name string
	base string // without a trailing slash
	hc   *http.Client
	log  *slog.Logger
	now  func() time.Time
	// health, when set, follows the requests' outcomes; warn, when set,
	// rate-limits the retry warnings.
	health *upstreamHealth
	warn   *rateLog

	mu    sync.Mutex
	until time.Time // no request before this
}

func newUpstream(name, base string, hc *http.Client, log *slog.Logger, now func() time.Time) (*upstream, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("collect: %s base URL %q is not an http(s) URL", name, base)
	}
	return &upstream{name: name, base: strings.TrimRight(base, "/"), hc: hc, log: log, now: now}, nil
}

// request is one call to an upstream.
type request struct {
	method string
	path   string
	query  url.Values
	body   any // sent as JSON when not nil
	// timeout bounds each attempt.
	timeout time.Duration
	// attempts is how many times the request is sent at most (1: no retry).
	attempts int
	backoff  Backoff
}

func (r request) op() string {
	if len(r.query) == 0 {
		return r.method + " " + r.path
	}
	return r.method + " " + r.path + "?" + r.query.Encode()
}

// maxInlineWait is the longest a retrying request sleeps before its next
// attempt. An upstream that asks for more (a Binance ban lasts minutes to
// days) fails the request at once, as a temporary error carrying the wait:
// its caller asks again on its next round and meanwhile goes on with the
// rest, where sleeping the ban out inside the discovery round stopped
// Polymarket's new markets being found while Binance banned the start-price
// lookups.
const maxInlineWait = 5 * time.Second

// do sends the request, retrying temporary failures with backoff (and at
// least what the upstream asked for, up to maxInlineWait), and decodes the
// JSON answer into out.
func (u *upstream) do(ctx context.Context, r request, out any) error {
	attempts := max(r.attempts, 1)
	for n := 1; ; n++ {
		err := u.once(ctx, r, out)
		switch {
		case err == nil:
			u.health.ok(u.name)
		case ctx.Err() == nil && !errors.Is(err, errBackingOff):
			u.health.fail(u.name, err)
		}
		if err == nil || !temporary(err) || n >= attempts || ctx.Err() != nil {
			return err
		}
		wait := max(r.backoff.Delay(n), retryAfter(err))
		if wait > maxInlineWait {
			return err // the caller asks again on its next round
		}
		args := []any{"upstream", u.name, "op", r.op(), "attempt", n, "of", attempts, "retry_in", wait.Round(time.Millisecond).String(), "err", err}
		if u.warn != nil {
			u.warn.warn(ctx, u.name+" retry", "upstream request failed; retrying", args...)
		} else {
			u.log.WarnContext(ctx, "upstream request failed; retrying", args...)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// once sends the request one time.
func (u *upstream) once(ctx context.Context, r request, out any) error {
	fail := func(status int, retry time.Duration, temp bool, err error) error {
		return &UpstreamError{Upstream: u.name, Op: r.op(), Status: status, RetryAfter: retry, Temporary: temp, Err: err}
	}
	if wait := u.blocked(); wait > 0 {
		if r.attempts <= 1 || wait > maxInlineWait {
			return fail(0, wait, true, errBackingOff)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}

	target := u.base + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fail(0, 0, false, fmt.Errorf("encode request: %w", err))
		}
		body = bytes.NewReader(b)
	}
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return fail(0, 0, false, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := u.hc.Do(req)
	if err != nil {
		// No answer: refused, reset, or timed out. Worth another try
		// unless our own context ended.
		return fail(0, 0, true, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return fail(res.StatusCode, 0, true, fmt.Errorf("read body: %w", err))
	}
	if len(raw) > maxBody {
		return fail(res.StatusCode, 0, false, fmt.Errorf("body over %d bytes", maxBody))
	}

	switch s := res.StatusCode; {
	case s == http.StatusTooManyRequests || s == http.StatusTeapot:
		wait := parseRetryAfter(res.Header.Get("Retry-After"), u.now())
		if wait <= 0 {
			wait = time.Second
		}
		u.block(wait)
		return fail(s, wait, true, snippet(raw))
	case s >= 500:
		return fail(s, parseRetryAfter(res.Header.Get("Retry-After"), u.now()), true, snippet(raw))
	case s == http.StatusUnavailableForLegalReasons && u.name == "binance-spot":
		// Binance refuses requests from restricted locations (the United
		// States among them) on api.binance.com; every snapshot's coin
		// price comes from its spot ticker, so nothing is recorded until
		// the operator points the collector elsewhere.
		hint := fmt.Sprintf("Binance refuses this location: its public spot market data is also served at %s (set BINANCE_SPOT_URL, --binance-spot-url)", binanceSpotDataURL)
		if e := snippet(raw); e != nil {
			return fail(s, 0, false, fmt.Errorf("%w; %s", e, hint))
		}
		return fail(s, 0, false, errors.New(hint))
	case s < 200 || s > 299:
		return fail(s, 0, false, snippet(raw))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		// A proxy's HTML error page or a truncated body: often passing.
		return fail(res.StatusCode, 0, true, fmt.Errorf("malformed body: %w (%s)", err, snippet(raw)))
	}
	return nil
}

// blocked returns how long requests must still wait.
func (u *upstream) blocked() time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.until.Sub(u.now())
}

// block holds every request back for d.
func (u *upstream) block(d time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if t := u.now().Add(d); t.After(u.until) {
		u.until = t
	}
}

// maxRetryAfter bounds the wait an upstream may ask for: Binance's longest
// IP ban (418), given to repeat offenders, is three days.
const maxRetryAfter = 3 * 24 * time.Hour

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date. A
// longer wait than maxRetryAfter is cut to it, not ignored: a ban of days
// ignored had every request sent again a second later, into the ban.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		if s >= maxRetryAfter.Seconds() {
			return maxRetryAfter
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}

// snippet is the start of a body, for error messages.
func snippet(raw []byte) error {
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return nil
	}
	return errors.New(strconv.Quote(s))
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
