package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
)

// Dashboard sessions (DESIGN 12): an API key signs in once; the browser
// then carries an opaque cookie. The session is a Redis hash naming the
// customer and the key it was opened with; the plan is read from the
// customer's row on every request and the key is checked on every request,
// so a tier change or a revocation holds for the session's next request,
// as it does for keys and bearer tokens.
const (
	schemeSession    = "session"
	sessionCookie    = "updown_session"
	sessionTTL       = 12 * time.Hour
	csrfHeader       = "X-CSRF-Token"
	sessionKeyPrefix = "updown:session:"
	// CodeCSRF answers a cookie-authenticated POST or DELETE without the
	// session's CSRF token.
	CodeCSRF = "CSRF_TOKEN_INVALID"
)

// sessionCookieRenewEvery is how often a session in use sends its cookie
// again with a full Max-Age: the session slides in Redis on every use, and
// the browser's cookie must slide with it (issue 28, item 11: it expired
// 12 h after sign-in however active the user).
const sessionCookieRenewEvery = 5 * time.Minute

// session is what Redis keeps of a sign-in.
type session struct {
	id         string // the cookie's value; only its hash names the Redis key
	CustomerID string
	KeyID      string
	CSRF       string
	ExpiresAt  time.Time
	// cookieAt is when the browser was last sent the cookie (unix seconds;
	// 0 for a session from before it was recorded).
	cookieAt int64
}

type sessionCtxKey struct{}

// sessionFrom returns the session a request was authenticated by (nil when
// it came with a key or a token).
func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionCtxKey{}).(*session)
	return s
}

// sessionRedisKey hides the cookie value: a Redis dump holds no usable id.
func sessionRedisKey(id string) string { return sessionKeyOfHash(sessionHash(id)) }

// sessionKeyOfHash is the Redis key of the session whose id hashes to h
// (sessionHash), as a token minted under it names it.
func sessionKeyOfHash(h string) string { return sessionKeyPrefix + h }

// sessionHash names a session without revealing its cookie value (from
// which it cannot be worked back): in its Redis key, and in the sid claim
// of the bearer tokens it obtained (token.go).
func sessionHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// hasSessionCookie tells whether a request carries the session cookie;
// authentication falls back to it when no key or token is sent.
func hasSessionCookie(ctx huma.Context) bool {
	r, _ := humago.Unwrap(ctx)
	_, err := r.Cookie(sessionCookie)
	return err == nil
}

// secureCookies is true when the public address is https (publicHTTPS).
func (s *Server) secureCookies() bool {
	_, ok := publicHTTPS(s.cfg.PublicURL)
	return ok
}

func (s *Server) sessionCookie(value string, maxAge int) http.Cookie {
	return http.Cookie{Name: sessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookies()}
}

// clearCookie goes with every answer that finds the session gone, so the
// browser drops it.
func (s *Server) clearCookie(e *Error) *Error {
	c := s.sessionCookie("", -1)
	e.GetHeaders().Add("Set-Cookie", c.String())
	return e
}

func (s *Server) sessionsConfigured() error {
	if s.cfg.Redis == nil {
		return Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "sessions are not available on this server (no Redis configured)")
	}
	return nil
}

// requireSession authenticates a request by its session cookie, checks the
// CSRF token on state-changing methods, and meters it like a key.
func (s *Server) requireSession(ctx huma.Context, next func(huma.Context)) {
	p, sess, err := s.principalForSession(ctx)
	if err != nil {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, err)
		return
	}
	// Signing out sets its own cookie, the one that ends the session.
	if ctx.Operation().OperationID != opDeleteSession {
		s.renewCookie(ctx, sess)
	}
	s.meter(huma.WithValue(ctx, sessionCtxKey{}, sess), p, next)
}

// renewedScript records when a session's cookie was last sent, unless the
// session has ended meanwhile (signed out): it never makes a session again.
var renewedScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'cookie_at', ARGV[1]) end
return 1
`)

// renewCookie sends the session cookie again with a full Max-Age, the
// same attributes and value, when it was last sent sessionCookieRenewEvery
// or longer ago: the browser's cookie then ends with the session (12 h
// after its last use, not after sign-in) at the cost of one Set-Cookie and
// one Redis write per session every few minutes.
func (s *Server) renewCookie(hctx huma.Context, sess *session) {
	now := s.now()
	if now.Sub(time.Unix(sess.cookieAt, 0)) < sessionCookieRenewEvery {
		return
	}
	ctx := hctx.Context()
	// Best effort: when the write fails, the next request renews again.
	if err := renewedScript.Run(ctx, s.cfg.Redis, []string{sessionRedisKey(sess.id)}, now.Unix()).Err(); err != nil {
		s.log.WarnContext(ctx, "record session cookie renewal", "request_id", RequestID(ctx), "err", err)
	}
	c := s.sessionCookie(sess.id, int(sessionTTL/time.Second))
	hctx.AppendHeader("Set-Cookie", c.String())
}

func (s *Server) principalForSession(hctx huma.Context) (principal, *session, error) {
	ctx := hctx.Context()
	if err := s.sessionsConfigured(); err != nil {
		return principal{}, nil, err
	}
	r, _ := humago.Unwrap(hctx)
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		if op := hctx.Operation(); op != nil && !requires(op, schemeAPIKey) && !requires(op, schemeBearer) {
			// GET and DELETE /v1/auth/session: a key or a token, which
			// the caller may well have sent, is not taken here.
			return principal{}, nil, Errorf(http.StatusUnauthorized, CodeUnauthorized,
				"not signed in: %s %s takes the dashboard's session cookie only, not an X-API-Key or a bearer token; sign in with POST /v1/auth/session (X-API-Key)",
				op.Method, op.Path)
		}
		return principal{}, nil, Errorf(http.StatusUnauthorized, CodeUnauthorized,
			"not signed in: sign in with POST /v1/auth/session (X-API-Key), or send an X-API-Key or bearer token")
	}
	rkey := sessionRedisKey(c.Value)
	var get *redis.MapStringStringCmd
	_, err = s.cfg.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.HGetAll(ctx, rkey)
		p.Expire(ctx, rkey, sessionTTL) // sliding: every use extends it
		return nil
	})
	if err != nil {
		return principal{}, nil, s.redisFailure(ctx, "read session", err)
	}
	v := get.Val()
	sess := &session{id: c.Value, CustomerID: v["customer"], KeyID: v["key"], CSRF: v["csrf"], ExpiresAt: s.now().Add(sessionTTL)}
	sess.cookieAt, _ = strconv.ParseInt(v["cookie_at"], 10, 64)
	if sess.CustomerID == "" || sess.KeyID == "" || sess.CSRF == "" {
		return principal{}, nil, s.clearCookie(Errorf(http.StatusUnauthorized, CodeUnauthorized, "the session has expired or was signed out: sign in again"))
	}
	p, ok, err := s.principalForKeyID(ctx, sess.CustomerID, sess.KeyID)
	if err != nil {
		return principal{}, nil, err
	}
	if !ok {
		// The key was revoked (or the customer removed): the session dies with it.
		if err := s.cfg.Redis.Del(ctx, rkey).Err(); err != nil {
			s.log.WarnContext(ctx, "delete dead session", "request_id", RequestID(ctx), "err", err)
		}
		return principal{}, nil, s.clearCookie(Errorf(http.StatusUnauthorized, CodeUnauthorized,
			"the API key this session was opened with has been revoked: sign in again with a live key"))
	}
	// After the key's check: a session that died with its key says so
	// (401, the cookie cleared, the dashboard signs in again) to a
	// state-changing request too, rather than that its CSRF token is off.
	switch hctx.Method() {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		got := hctx.Header(csrfHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.CSRF)) != 1 {
			return principal{}, nil, Errorf(http.StatusForbidden, CodeCSRF,
				"a request authenticated by the session cookie that changes state must carry the session's CSRF token in %s (GET /v1/auth/session answers it)", csrfHeader)
		}
	}
	return p, sess, nil
}

// principalForKeyID is the caller behind a key id, when the customer exists
// and the key is live (and, outside dev, not a demo key). ok is false
// otherwise. Sessions and bearer tokens name their key by id.
func (s *Server) principalForKeyID(ctx context.Context, customerID, keyID string) (p principal, ok bool, err error) {
	c, err := s.store.GetCustomer(ctx, customerID)
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, false, nil
	}
	if err != nil {
		return principal{}, false, s.storeFailure(ctx, "get customer", err)
	}
	// The key by its id: one row, however many keys the customer has
	// revoked (issue 28, item 5: every request read them all).
	k, err := s.store.GetAPIKey(ctx, keyID)
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, false, nil
	}
	if err != nil {
		return principal{}, false, s.storeFailure(ctx, "get API key", err)
	}
	if k.CustomerID != c.ID || k.RevokedAt != nil || strings.HasPrefix(k.Prefix, DevKeyPrefix) && !s.cfg.DevKeys {
		return principal{}, false, nil
	}
	return principal{Customer: c, Key: k, Plan: customerPlan(c), cachedGen: -1}, true, nil
}

// redisFailure answers a failed Redis call as 503 (clients retry).
func (s *Server) redisFailure(ctx context.Context, op string, err error) *Error {
	s.logFailure(ctx, op, err)
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable,
		Message: "Redis, which keeps sessions, is unavailable; retry with backoff (request id " + RequestID(ctx) + ")", Cause: fmt.Errorf("%s: %w", op, err)}
}

type sessionCreatedOutput struct {
	SetCookie string `header:"Set-Cookie" doc:"updown_session: HttpOnly; SameSite=Strict; Path=/; Secure when the server's public URL is https."`
}

type sessionInfoJSON struct {
	CustomerID string   `json:"customer_id" format:"uuid"`
	Email      string   `json:"email"`
	Name       string   `json:"name"`
	Tier       string   `json:"tier" enum:"STARTER,PRO,PRO_TRIAL,SUITE,ENTERPRISE"`
	KeyID      string   `json:"key_id" doc:"The API key the session was opened with."`
	CSRFToken  string   `json:"csrf_token" doc:"Send it as X-CSRF-Token on every POST and DELETE authenticated by the session cookie."`
	ExpiresAt  string   `json:"expires_at" format:"date-time" doc:"When the session ends unless used again (12 h, sliding)."`
	Plan       planJSON `json:"plan" doc:"What the plan allows."`
}

type sessionInfoBody struct {
	Success   bool            `json:"success"`
	Data      sessionInfoJSON `json:"data"`
	Timestamp string          `json:"timestamp" format:"date-time"`
}

type sessionInfoOutput struct{ Body sessionInfoBody }

type sessionEndedOutput struct {
	SetCookie string `header:"Set-Cookie" doc:"Expires the session cookie."`
}

func (s *Server) registerSession() {
	doc := s.api.OpenAPI()
	doc.Components.SecuritySchemes[schemeSession] = &huma.SecurityScheme{Type: "apiKey", In: "cookie", Name: sessionCookie,
		Description: "The dashboard's session, from POST /v1/auth/session. POST and DELETE requests authenticated by it must carry X-CSRF-Token."}
	sessionOnly := []map[string][]string{{schemeSession: {}}}
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-session",
		Method:        http.MethodPost,
		Path:          "/v1/auth/session",
		Summary:       "Sign in: trade an API key for a dashboard session",
		Description:   "Answers 204 and sets the updown_session cookie (12 h, sliding). GET /v1/auth/session then answers the CSRF token.",
		Tags:          []string{"Auth"},
		Security:      []map[string][]string{{schemeAPIKey: {}}},
		DefaultStatus: http.StatusNoContent,
		// A RawBody is read (settingsFreeBody): bounded here, as the key
		// creation's, so an oversized one is 413.
		MaxBodyBytes: maxBodyBytes,
		Errors:       []int{400, 401, 413, 415, 429, 500, 503},
	}, s.createSession)
	optionalEmptyBody(s.api, "/v1/auth/session", "None, or an empty object: signing in takes the X-API-Key header and no settings.")
	huma.Register(s.api, huma.Operation{
		OperationID: opGetSession,
		Method:      http.MethodGet,
		Path:        "/v1/auth/session",
		Summary:     "The signed-in customer, plan and CSRF token",
		Tags:        []string{"Auth"},
		Security:    sessionOnly,
		Middlewares: huma.Middlewares{s.requireSession},
		Errors:      []int{401, 429, 500, 503},
	}, s.getSession)
	huma.Register(s.api, huma.Operation{
		OperationID:   opDeleteSession,
		Method:        http.MethodDelete,
		Path:          "/v1/auth/session",
		Summary:       "Sign out",
		Description:   "Ends the session (X-CSRF-Token required) and expires the cookie.",
		Tags:          []string{"Auth"},
		Security:      sessionOnly,
		Middlewares:   huma.Middlewares{s.requireSession},
		DefaultStatus: http.StatusNoContent,
		Errors:        []int{401, 403, 429, 500, 503},
	}, s.deleteSession)
}

// signInInput is POST /v1/auth/session's input: a settingsFreeInput, and
// the scheme a proxy says the client used. (Huma reads no parameters of
// an unexported embedded struct: the fields are written out.)
type signInInput struct {
	ContentType string `header:"Content-Type"`
	// ForwardedProto is the scheme a proxy says the client used: a sign-in
	// over https with a PUBLIC_URL that is not is a setting to mend.
	ForwardedProto string `header:"X-Forwarded-Proto" hidden:"true"`
	RawBody        []byte
}

func (s *Server) createSession(ctx context.Context, in *signInInput) (*sessionCreatedOutput, error) {
	if err := s.sessionsConfigured(); err != nil {
		return nil, err
	}
	if sessionFrom(ctx) != nil {
		return nil, Errorf(http.StatusUnauthorized, CodeUnauthorized, "signing in needs an API key in the X-API-Key header")
	}
	if err := settingsFreeBody(in.ContentType, in.RawBody, "signing in"); err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	id := randomToken(32)
	rkey := sessionRedisKey(id)
	_, err := s.cfg.Redis.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, rkey, "customer", p.Customer.ID, "key", p.Key.ID, "csrf", randomToken(32), "cookie_at", s.now().Unix())
		pipe.Expire(ctx, rkey, sessionTTL)
		return nil
	})
	if err != nil {
		return nil, s.redisFailure(ctx, "create session", err)
	}
	c := s.sessionCookie(id, int(sessionTTL/time.Second))
	if proto, _, _ := strings.Cut(in.ForwardedProto, ","); !c.Secure && strings.EqualFold(strings.TrimSpace(proto), "https") {
		s.insecureCookie.Do(func() {
			s.log.WarnContext(ctx, "a sign-in over https (X-Forwarded-Proto) got a session cookie without Secure: PUBLIC_URL is not https; set PUBLIC_URL=https://<your host>",
				"public_url", s.cfg.PublicURL)
		})
	}
	return &sessionCreatedOutput{SetCookie: c.String()}, nil
}

func (s *Server) getSession(ctx context.Context, _ *struct{}) (*sessionInfoOutput, error) {
	p, sess := principalFrom(ctx), sessionFrom(ctx)
	c := p.Customer
	return &sessionInfoOutput{Body: sessionInfoBody{Success: true, Timestamp: formatTime(s.now()), Data: sessionInfoJSON{
		CustomerID: c.ID, Email: c.Email, Name: c.Name, Tier: string(p.Plan.Tier), KeyID: sess.KeyID,
		CSRFToken: sess.CSRF, ExpiresAt: formatTime(sess.ExpiresAt), Plan: s.planJSON(p.Plan, p.Customer),
	}}}, nil
}

func (s *Server) deleteSession(ctx context.Context, _ *struct{}) (*sessionEndedOutput, error) {
	sess := sessionFrom(ctx)
	if err := s.cfg.Redis.Del(ctx, sessionRedisKey(sess.id)).Err(); err != nil {
		return nil, s.redisFailure(ctx, "delete session", err)
	}
	c := s.sessionCookie("", -1)
	return &sessionEndedOutput{SetCookie: c.String()}, nil
}

// documentSessions adds the session cookie as an alternative to every
// operation that takes a key or a bearer token: the dashboard calls them
// all (DESIGN 12).
func documentSessions(doc *huma.OpenAPI) {
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil || op.OperationID == "create-session" || requires(op, schemeSession) {
				continue
			}
			if requires(op, schemeAPIKey) || requires(op, schemeBearer) {
				op.Security = append(op.Security, map[string][]string{schemeSession: {}})
			}
		}
	}
}
