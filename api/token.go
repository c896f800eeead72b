package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/golang-jwt/jwt/v5"
)

// schemeBearer is the security scheme of the dashboard (Backtest AI)
// endpoints: Authorization: Bearer <token from POST /v1/auth/token>.
const schemeBearer = "bearer"

// Bearer token settings (DESIGN 8).
const (
	tokenIssuer     = "updown"
	defaultTokenTTL = 15 * time.Minute
	// MinTokenSecret is the shortest TOKEN_SECRET accepted: HS256 wants a
	// key at least as long as its 32-byte hash.
	MinTokenSecret = 32
)

// tokenClaims are what a bearer token says: who (sub, the customer id),
// through which API key (key_id), until when (exp). The plan is not in the
// token: it is read from the store on every request, so a tier change
// (SPEC 3.2) applies at once.
//
// A token obtained with the dashboard's session cookie rather than a key
// names that session too (sid: the hash of the cookie's value, which names
// its Redis key, never the value itself) and ends with it: signing out, or
// the session's expiry, stops it at once, not up to its exp later. Only
// such a token costs a Redis read to verify; one traded for a key has no
// sid and is checked as before.
type tokenClaims struct {
	KeyID     string `json:"key_id"`
	SessionID string `json:"sid,omitempty"`
	jwt.RegisteredClaims
}

type tokenBody struct {
	AccessToken string `json:"access_token" doc:"A signed token (JWT, HS256) for Authorization: Bearer."`
	TokenType   string `json:"token_type" enum:"Bearer"`
	ExpiresIn   int    `json:"expires_in" doc:"Seconds until the token expires."`
}

type tokenOutput struct{ Body tokenBody }

func (s *Server) registerToken() {
	huma.Register(s.api, huma.Operation{
		OperationID: "create-token",
		Method:      http.MethodPost,
		Path:        "/v1/auth/token",
		Summary:     "Trade an API key for a short-lived bearer token",
		Description: "The Backtest AI endpoints take `Authorization: Bearer <access_token>` only. The token is valid until it expires " +
			"and while the API key it was issued for is not revoked; one obtained with the dashboard's session cookie also ends when " +
			"that session does (signed out or expired).",
		Tags:     []string{"Auth"},
		Security: []map[string][]string{{schemeAPIKey: {}}},
		// A RawBody is read (settingsFreeBody): bounded here, as the key
		// creation's, so an oversized one is 413.
		MaxBodyBytes: maxBodyBytes,
		Errors:       []int{400, 401, 413, 415, 429, 500, 503},
	}, s.issueToken)
	optionalEmptyBody(s.api, "/v1/auth/token", "None, or an empty object: a token takes no settings (its lifetime is the server's, expires_in in the answer).")
}

func (s *Server) tokenTTL() time.Duration {
	if s.cfg.AI.TokenTTL > 0 {
		return s.cfg.AI.TokenTTL
	}
	return defaultTokenTTL
}

func (s *Server) tokensConfigured() error {
	if len(s.cfg.AI.TokenSecret) == 0 {
		return Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "bearer tokens are not configured on this server (TOKEN_SECRET)")
	}
	return nil
}

func (s *Server) issueToken(ctx context.Context, in *settingsFreeInput) (*tokenOutput, error) {
	if err := s.tokensConfigured(); err != nil {
		return nil, err
	}
	if err := settingsFreeBody(in.ContentType, in.RawBody, "a token"); err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	now := s.now()
	var jti [16]byte
	_, _ = rand.Read(jti[:]) // crypto/rand.Read never fails
	ttl := s.tokenTTL()
	claims := tokenClaims{KeyID: p.Key.ID, RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    tokenIssuer,
		Subject:   p.Customer.ID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		ID:        hex.EncodeToString(jti[:]),
	}}
	if sess := sessionFrom(ctx); sess != nil {
		claims.SessionID = sessionHash(sess.id)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.cfg.AI.TokenSecret)
	if err != nil {
		return nil, s.internal(ctx, "sign token", err)
	}
	return &tokenOutput{Body: tokenBody{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int(ttl / time.Second)}}, nil
}

// requireBearer authenticates the operations it is attached to (their
// Middlewares, not the API's: Huma captures the API's middlewares when an
// operation is registered, so a UseMiddleware here would apply to every
// operation registered after this point, whoever registers it, and to none
// before).
func (s *Server) requireBearer(ctx huma.Context, next func(huma.Context)) {
	if !hasBearerToken(ctx) && hasSessionCookie(ctx) {
		s.requireSession(ctx, next) // the dashboard (session.go)
		return
	}
	p, err := s.principalForToken(ctx.Context(), ctx.Header("Authorization"))
	if err != nil {
		r, w := humago.Unwrap(ctx)
		writeError(w, r, s.log, err)
		return
	}
	s.meter(ctx, p, next)
}

// hasBearerToken tells whether a request's Authorization header is of the
// Bearer scheme, this API's. Another scheme's (the Basic credentials a
// browser sends with every request to a site behind a password-protected
// proxy) is not a credential of the API: the session cookie, when there is
// one, authenticates the request as if the header were absent.
func hasBearerToken(ctx huma.Context) bool {
	scheme, _, _ := strings.Cut(strings.TrimSpace(ctx.Header("Authorization")), " ")
	return strings.EqualFold(scheme, "Bearer")
}

// principalForToken verifies a bearer token and that what it names still
// stands: the customer exists, the API key it was issued for is not
// revoked and, for a token obtained with a session, the session has not
// ended.
func (s *Server) principalForToken(ctx context.Context, header string) (principal, error) {
	if err := s.tokensConfigured(); err != nil {
		return principal{}, err
	}
	unauthorized := func(challenge, format string, args ...any) error {
		e := Errorf(http.StatusUnauthorized, CodeUnauthorized, format, args...)
		e.GetHeaders().Set("WWW-Authenticate", `Bearer realm="updown"`+challenge)
		return e
	}
	const invalidToken = `, error="invalid_token"`
	header = strings.TrimSpace(header)
	if header == "" {
		return principal{}, unauthorized("", "missing bearer token: send Authorization: Bearer <token>, with a token from POST /v1/auth/token (which takes your X-API-Key)")
	}
	scheme, tok, _ := strings.Cut(header, " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return principal{}, unauthorized(`, error="invalid_request"`, "the Authorization header must be \"Bearer <token>\"; get a token from POST /v1/auth/token")
	}
	var claims tokenClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now),
	)
	_, err := parser.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return s.cfg.AI.TokenSecret, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return principal{}, unauthorized(invalidToken, "the bearer token has expired: get a new one from POST /v1/auth/token")
	case err != nil, claims.Subject == "", claims.KeyID == "":
		return principal{}, unauthorized(invalidToken, "invalid bearer token: get one from POST /v1/auth/token")
	}
	if claims.SessionID != "" {
		live, err := s.tokenSessionLive(ctx, claims)
		if err != nil {
			return principal{}, err
		}
		if !live {
			return principal{}, unauthorized(invalidToken, "the dashboard session this bearer token was obtained with has ended (signed out or expired): sign in again")
		}
	}
	p, ok, err := s.principalForKeyID(ctx, claims.Subject, claims.KeyID)
	if err != nil {
		return principal{}, err
	}
	if ok {
		return p, nil
	}
	return principal{}, unauthorized(invalidToken, "the API key this bearer token was issued for has been revoked, or its customer no longer exists")
}

// tokenSessionLive tells whether the session a bearer token was obtained
// with still stands for the customer and key the token names: one Redis
// read, which never extends the session (only the cookie's use does).
func (s *Server) tokenSessionLive(ctx context.Context, claims tokenClaims) (bool, error) {
	if err := s.sessionsConfigured(); err != nil {
		return false, err
	}
	v, err := s.cfg.Redis.HMGet(ctx, sessionKeyOfHash(claims.SessionID), "customer", "key").Result()
	if err != nil {
		return false, s.redisFailure(ctx, "read the session of a bearer token", err)
	}
	customer, _ := v[0].(string)
	key, _ := v[1].(string)
	return customer == claims.Subject && key == claims.KeyID, nil
}
