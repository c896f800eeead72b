package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/updown/updown/store"
)

// Security scheme names used in operations and the OpenAPI document.
const schemeAPIKey = "apiKey"

// principal is who a request acts for.
type principal struct {
	Customer store.Customer
	Key      store.APIKey
	Plan     Plan
	// Usage is the rate limiter's count of this request.
	Usage rateUsage
}

type principalKey struct{}

// principalFrom returns the authenticated caller; handlers behind the
// apiKey scheme always have one.
func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// authenticate enforces the security schemes an operation declares, then
// counts the request against the caller's rate limits (ratelimit.go).
//
// The plan is read from the customer's row on every request, never cached
// in the process, so a tier change made through any api process (a billing
// webhook) holds for the very next request everywhere.
//
// Every authenticated answer, errors included, carries X-Tier and the
// X-RateLimit-* headers, so they are set here before the handler runs.
func (s *Server) authenticate(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	if !requires(op, schemeAPIKey) {
		next(ctx)
		return
	}
	if ctx.Header("X-API-Key") == "" && hasSessionCookie(ctx) {
		s.requireSession(ctx, next) // the dashboard (session.go)
		return
	}
	p, err := s.principalForKey(ctx.Context(), ctx.Header("X-API-Key"))
	if err != nil {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, err)
		return
	}
	s.meter(ctx, p, next)
}

// meter counts the caller's request against its plan's rate limits, sets
// the X-Tier and X-RateLimit-* headers, and answers 429 past a limit; it is
// the same for API keys and bearer tokens.
func (s *Server) meter(ctx huma.Context, p principal, next func(huma.Context)) {
	p.Usage = s.countRequest(ctx.Context(), p)
	setRateHeaders(ctx, p.Plan.Tier, p.Usage)
	if p.Usage.Exceeded != "" {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, rateLimited(p.Plan.Tier, p.Usage, s.now()))
		return
	}
	next(huma.WithValue(ctx, principalKey{}, p))
}

func requires(op *huma.Operation, scheme string) bool {
	for _, req := range op.Security {
		if _, ok := req[scheme]; ok {
			return true
		}
	}
	return false
}

// principalForKey looks an API key up. Keys are found by their hash, so no
// secret is ever compared byte by byte.
func (s *Server) principalForKey(ctx context.Context, key string) (principal, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "missing API key: send it in the X-API-Key header")
	}
	if strings.HasPrefix(key, DevKeyPrefix) && !s.cfg.DevKeys {
		return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid API key: demo keys (ud_dev_...) work only with `updown dev`")
	}
	k, c, err := s.store.LookupAPIKey(ctx, HashKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid or revoked API key")
	}
	if err != nil {
		return principal{}, s.storeFailure(ctx, "look up API key", err)
	}
	return principal{Customer: c, Key: k, Plan: planFor(c.Tier)}, nil
}
