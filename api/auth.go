package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

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
	// keyHash is the hash of the API key the request came with ("" for
	// other credentials); cachedGen the customer generation the principal
	// was cached at (authcache.go), -1 when it was not read from the cache.
	keyHash   string
	cachedGen int64
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
// An operation behind the apiKey scheme may accept other credentials of
// the same customer as alternatives (GET /v1/jobs/{id} takes the bearer
// token that made an agent request too): the request is authenticated by
// the credential it carries (credentialFor). What a credential resolves to
// is the customer, and that is all a handler compares, so a job answers to
// whichever credential of its owner asks (a key, a token, and any scheme
// added later, a dashboard session, that resolves to the customer).
//
// The plan is read from the customer's row (or the auth cache, whose
// entries every change invalidates at once: authcache.go), so a tier
// change made through any api process (a billing webhook) holds for the
// very next request everywhere.
//
// Every authenticated answer, errors included, carries X-Tier and the
// X-RateLimit-* headers, so they are set here before the handler runs.
func (s *Server) authenticate(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	if !requires(op, schemeAPIKey) {
		next(ctx)
		return
	}
	if ctx.Header("X-API-Key") == "" && !hasBearerToken(ctx) && hasSessionCookie(ctx) {
		s.requireSession(ctx, next) // the dashboard (session.go)
		return
	}
	var p principal
	var err error
	if credentialFor(ctx, op) == schemeBearer {
		p, err = s.principalForToken(ctx.Context(), ctx.Header("Authorization"))
	} else {
		p, err = s.principalForKey(ctx.Context(), ctx.Header("X-API-Key"), ctx.Header("Authorization"))
	}
	if err != nil {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, err)
		return
	}
	s.meter(ctx, p, next)
}

// rejectAmbiguousCredentials answers 401 UNAUTHORIZED, before any
// credential is looked at, to a request to a secured operation that
// carries two different API keys (X-API-Key headers) or two different
// bearer tokens. Go reads the first header of a name alone, so the answer
// depended on the headers' order, and a key a proxy added could stand in
// for the client's (or the reverse) without a word. The same credential
// sent twice is one credential.
func (s *Server) rejectAmbiguousCredentials(ctx huma.Context, next func(huma.Context)) {
	if len(ctx.Operation().Security) > 0 {
		r, w := humago.Unwrap(ctx)
		if err := ambiguousCredentials(r.Header); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	next(ctx)
}

// ambiguousCredentials returns the 401 of headers that carry more than one
// distinct API key, or more than one distinct bearer token.
func ambiguousCredentials(h http.Header) *Error {
	if distinct(h.Values("X-API-Key"), func(string) bool { return true }) > 1 {
		return Errorf(http.StatusUnauthorized, CodeUnauthorized,
			"more than one API key: send one X-API-Key header")
	}
	isBearer := func(v string) bool {
		scheme, _, _ := strings.Cut(v, " ")
		return strings.EqualFold(scheme, "Bearer")
	}
	if distinct(h.Values("Authorization"), isBearer) > 1 {
		return Errorf(http.StatusUnauthorized, CodeUnauthorized,
			"more than one bearer token: send one Authorization header")
	}
	return nil
}

// distinct counts the different non-empty values (spaces trimmed) that
// keep holds for.
func distinct(values []string, keep func(string) bool) int {
	if len(values) < 2 {
		return len(values)
	}
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		if v = strings.TrimSpace(v); v != "" && keep(v) {
			seen[v] = true
		}
	}
	return len(seen)
}

// credentialFor is the scheme that authenticates a request to an operation
// behind the apiKey scheme: the bearer token when the operation accepts
// one and the request carries an Authorization header but no X-API-Key;
// else the API key (whose absence is the 401 that names it).
func credentialFor(ctx huma.Context, op *huma.Operation) string {
	if requires(op, schemeBearer) && ctx.Header("X-API-Key") == "" && ctx.Header("Authorization") != "" {
		return schemeBearer
	}
	return schemeAPIKey
}

// meter counts the caller's request against its plan's rate limits, sets
// the X-Tier and X-RateLimit-* headers, and answers 429 past a limit; it is
// the same for API keys and bearer tokens. A principal from the auth cache
// that the customer's changes have made stale is looked up afresh first.
func (s *Server) meter(ctx huma.Context, p principal, next func(huma.Context)) {
	exempt := exemptionOf(ctx.Operation().OperationID)
	p.Usage = s.countRequest(ctx.Context(), p, exempt)
	if p.Usage.stale {
		s.auth.drop(p.keyHash)
		fresh, err := s.lookupKeyAt(ctx.Context(), p.keyHash, p.Usage.gen)
		if err != nil {
			r, w := humago.Unwrap(ctx)
			writeError(w, r, s.log, err)
			return
		}
		p = fresh
		p.Usage = s.countRequest(ctx.Context(), p, exempt)
		if p.Usage.stale {
			// The customer changed again while it was looked up. Stale
			// counts nothing, so going on would let the request through
			// uncounted (and a customer changing itself, revoking keys,
			// could keep its requests off the books): count it without
			// the generation's check, as without a cache. p is as the
			// store had it once the generation the request was first
			// counted at was set, so it holds every change made before
			// the request came; the one that raced it may or may not
			// hold, as without a cache.
			p.cachedGen = -1
			p.Usage = s.countRequest(ctx.Context(), p, exempt)
		}
	}
	setRateHeaders(ctx, p.Plan.Tier, p.Usage)
	if p.Usage.Exceeded != "" {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, rateLimited(p.Plan.Tier, p.Usage, s.now()))
		return
	}
	next(huma.WithValue(ctx, principalKey{}, p))
}

// Operation ids that exemptionOf names.
const (
	opGetAccount    = "get-account"
	opGetBilling    = "get-billing"
	opGetSession    = "get-session"
	opDeleteSession = "delete-session"
	opListKeys      = "list-account-keys"
	opRevokeKey     = "revoke-account-key"
)

// rateExemption says which of the caller's limits may refuse an operation.
// An exempt request is still counted in a window while that window has
// room, so the counts and headers stay true.
type rateExemption int

const (
	// notExempt: both limits hold.
	notExempt rateExemption = iota
	// exemptDay: the minute's limit holds, the day's does not.
	exemptDay
	// exemptAll: neither limit refuses the request.
	exemptAll
)

// exemptionOf says which limits an operation is exempt from.
//
// A customer whose day's requests ran out may still read its account and
// plan (GET /v1/account/billing, the upgrade path its 429s and 403s name),
// look at or end its dashboard session, and list and revoke its keys. Until
// midnight UTC a Starter could otherwise not even see why, nor how to
// upgrade; and a leaked key that spent the day could not be revoked before
// the thief had the new day's allowance. Signing in is not among them:
// each session is kept in Redis for hours, and the day's limit is what
// bounds how many a key can make; nor is creating a key.
//
// Revoking a key must not wait on the minute's limit either: the limits
// are the customer's, shared by all its keys, so a leaked key kept busy
// would fill every minute and its owner's DELETE would lose the race each
// time. Revoking, and what it takes (the key list, for the key's id; for
// the dashboard, the session, whose CSRF token the DELETE carries), is
// exempt from both limits. Each is one indexed read or write of the
// customer's own rows (at most its ten keys) or a session's Redis key, so
// whoever holds a key gains little by calling them without end, while
// refusing them would lock the owner out of the one remedy. The account
// (GET /v1/account counts the month's generations) keeps the minute's
// limit: the dashboard's account page shows its keys part without it.
func exemptionOf(operationID string) rateExemption {
	switch operationID {
	case opListKeys, opRevokeKey, opGetSession:
		return exemptAll
	case opGetBilling, opDeleteSession, opGetAccount:
		return exemptDay
	}
	return notExempt
}

func requires(op *huma.Operation, scheme string) bool {
	for _, req := range op.Security {
		if _, ok := req[scheme]; ok {
			return true
		}
	}
	return false
}

// principalForKey looks an API key up, in the auth cache first when there
// is one (authcache.go). Keys are found by their hash, so no secret is ever
// compared byte by byte. authorization is the request's Authorization
// header, which the message of a missing key speaks of when it holds a
// bearer token.
func (s *Server) principalForKey(ctx context.Context, key, authorization string) (principal, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		if scheme, tok, _ := strings.Cut(strings.TrimSpace(authorization), " "); strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) != "" {
			// The caller has a credential, of the wrong kind for this
			// endpoint: "missing API key" alone reads as if nothing was sent.
			return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized,
				"missing API key: this endpoint takes your API key in the X-API-Key header, not a bearer token "+
					"(bearer tokens from POST /v1/auth/token are for the Backtest AI endpoints and GET /v1/jobs/{id})")
		}
		return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "missing API key: send it in the X-API-Key header")
	}
	if strings.HasPrefix(key, DevKeyPrefix) && !s.cfg.DevKeys {
		return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid API key: demo keys (ud_dev_...) work only with `updown dev`")
	}
	hash := string(HashKey(key))
	if s.auth != nil {
		if p, ok := s.auth.get(hash, time.Now()); ok {
			return p, nil
		}
	}
	return s.lookupKey(ctx, hash)
}

// lookupKey looks the key with the hash up in the store and, with an auth
// cache, caches what it found. The customer's generation is read between
// two look-ups, so that the entry is never newer in generation than in
// content: a change stored before the generation was read is in the
// second look-up, one stored after it bumps the generation past the
// entry's.
//
// Concurrent look-ups of one key (a client's burst arriving at once) share
// one: the first caller's.
func (s *Server) lookupKey(ctx context.Context, hash string) (principal, error) {
	if s.auth == nil {
		return s.lookupKeyInStore(ctx, hash)
	}
	return s.sharedLookup(ctx, hash, func(ctx context.Context) (principal, error) {
		p, err := s.lookupKeyInStore(ctx, hash)
		if err != nil {
			return p, err
		}
		gen, err := s.limiter.customerGen(ctx, p.Customer.ID)
		if err != nil {
			return p, nil // Redis is failing: the request goes on uncached (its rate limit counted by this process alone)
		}
		return s.lookupAndCache(ctx, hash, gen)
	})
}

// lookupKeyAt is lookupKey for a key whose customer's generation is
// known, read before (the rate script answers it with a stale count): one
// look-up, after the generation was read, as lookupKey's second.
// Concurrent look-ups of one key at one generation share one.
func (s *Server) lookupKeyAt(ctx context.Context, hash string, gen int64) (principal, error) {
	return s.sharedLookup(ctx, hash+"@"+strconv.FormatInt(gen, 10), func(ctx context.Context) (principal, error) {
		return s.lookupAndCache(ctx, hash, gen)
	})
}

// sharedLookup runs lookup once for the concurrent callers with one key,
// under a context of its own: not the first caller's alone, since the
// others wait on it.
func (s *Server) sharedLookup(ctx context.Context, key string, lookup func(context.Context) (principal, error)) (principal, error) {
	v, err, _ := s.auth.flight.Do(key, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return lookup(lctx)
	})
	p, _ := v.(principal)
	return p, err
}

// lookupAndCache looks the key with the hash up in the store and caches
// what it found at generation gen, read before the look-up.
func (s *Server) lookupAndCache(ctx context.Context, hash string, gen int64) (principal, error) {
	p, err := s.lookupKeyInStore(ctx, hash)
	if err != nil {
		return p, err
	}
	s.auth.put(hash, p, gen, time.Now())
	p.cachedGen = gen
	return p, nil
}

func (s *Server) lookupKeyInStore(ctx context.Context, hash string) (principal, error) {
	k, c, err := s.store.LookupAPIKey(ctx, []byte(hash))
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, Errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid or revoked API key")
	}
	if err != nil {
		return principal{}, s.storeFailure(ctx, "look up API key", err)
	}
	return principal{Customer: c, Key: k, Plan: customerPlan(c), keyHash: hash, cachedGen: -1}, nil
}
