package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/updown/updown/store"
)

// TestSessionCookieSlides (issue 28, item 11): the session slides in Redis
// on every use, and its cookie slides with it: a session in use sends the
// cookie again, the same value and attributes with a full 12 h Max-Age,
// at most once every few minutes, so that an active user is not signed out
// 12 h after signing in; expires_at says when the renewed cookie ends.
func TestSessionCookieSlides(t *testing.T) {
	t.Parallel()
	clk := newClock(now)
	b := sessionSetup(t, func(o *setupOpts) { o.clock = clk.Now })
	br := b.signIn(store.Pro)
	renewed := func(r response) *http.Cookie {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var got *http.Cookie
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == "updown_session" {
				if got != nil {
					t.Errorf("two updown_session cookies: %v", r.header["Set-Cookie"])
				}
				got = c
			}
		}
		return got
	}

	// Just signed in: nothing to renew.
	clk.Advance(time.Minute)
	if c := renewed(br.get("/v1/account")); c != nil {
		t.Errorf("a minute after sign-in the cookie was sent again: %v", c)
	}
	// Hours of use later, well inside every renewal period: renewed each
	// period, once.
	for i := range 3 {
		clk.Advance(4 * time.Hour)
		r := br.get("/v1/auth/session")
		c := renewed(r)
		if c == nil {
			t.Fatalf("after %d h in use: no renewed cookie; headers %v", 4*(i+1), r.header)
		}
		if c.Value != br.cookie.Value || c.MaxAge != 12*3600 || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode ||
			c.Path != "/" || c.Secure != br.cookie.Secure {
			t.Errorf("renewed cookie %+v, want the sign-in's %+v with Max-Age 12 h", c, br.cookie)
		}
		exp, err := time.Parse(time.RFC3339Nano, r.json(t)["data"].(map[string]any)["expires_at"].(string))
		if err != nil || !exp.Equal(clk.Now().Add(12*time.Hour)) {
			t.Errorf("expires_at %v (%v), want %v, when the renewed cookie ends", exp, err, clk.Now().Add(12*time.Hour))
		}
		clk.Advance(time.Second)
		if c := renewed(br.get("/v1/account")); c != nil {
			t.Errorf("renewed twice in a second: %v", c)
		}
	}
	// 12 h after sign-in the session and its cookie live on.
	if r := br.get("/v1/account"); r.status != http.StatusOK {
		t.Errorf("13 h after sign-in, in use throughout: %d %s", r.status, r.body)
	}
	// Signing out sends the cookie that ends the session, and only that.
	clk.Advance(10 * time.Minute)
	out := br.change(http.MethodDelete, "/v1/auth/session", "")
	if cs := out.header.Values("Set-Cookie"); out.status != http.StatusNoContent || len(cs) != 1 {
		t.Errorf("sign out: %d, Set-Cookie %v; want 204 and one cookie, the expired one", out.status, cs)
	}
}
