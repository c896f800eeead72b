// Package api is updown's HTTP API: Huma operations, authentication, plans
// and data windows, the error envelope, health and metrics endpoints.
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/danielgtaylor/huma/v2/yaml"
	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
)

// Version is the API version shown in the OpenAPI document.
const Version = "1.0.0"

// maxBodyBytes bounds every request body (DESIGN 5).
const maxBodyBytes = 1 << 20

// Config is what the API needs from the process that runs it.
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// Now is the clock (time.Now when nil); tests pin it.
	Now func() time.Time
	// DevKeys accepts the fixed ud_dev_ demo keys. Only `updown dev` sets it.
	DevKeys bool
	// Checks are readiness checks beside the store's Ping, by name
	// (for example "redis"); one named "store" replaces the Ping (the
	// production api's also checks the schema's version).
	Checks map[string]func(context.Context) error
	// Monitoring, when set, is the Asynq monitoring UI, mounted at
	// /monitoring/.
	Monitoring http.Handler
	// Live is the latest exchange depth and recent trades (Redis in
	// production).
	Live store.LiveExchange
	// LiveTimeout bounds each read of Live (default DefaultLiveTimeout):
	// past it the request answers 503 SERVICE_UNAVAILABLE, so that a
	// stalled Redis is a prompt 503 rather than a wait of the Redis
	// client's read timeouts and retries. The bound cuts the read off only
	// when the Redis client is made with ContextTimeoutEnabled, as the
	// api's is.
	LiveTimeout time.Duration
	// Redis is the shared Redis (rate limits); nil disables what needs it.
	Redis redis.UniversalClient
	// RateLimits overrides the plan table's rate limits per tier (fields
	// of 0: unlimited). Limiting counts in Redis: with Redis nil it is off.
	RateLimits map[store.Tier]RateLimit
	// JobsInFlight overrides the plan table's cap on a customer's jobs
	// (replays, backtests, generations) running at once, per tier (0: no
	// cap). The slots are counted in Redis: with Redis nil there is no cap.
	JobsInFlight map[store.Tier]int
	// ReadsInFlight overrides the plan table's cap on a customer's heavy
	// reads (series, snapshot pages with books, CSV and Parquet exports,
	// depth history) answering at once, per tier (0: no cap); counted in
	// Redis like JobsInFlight (readcap.go).
	ReadsInFlight map[store.Tier]int
	// HeavyReads bounds the heavy store reads the process runs at once,
	// whoever asks, so that light queries always find a database
	// connection (default DefaultHeavyReads(), half the default pool;
	// negative: no bound). Set it below the pool's size.
	HeavyReads int
	// JobSlotLease is how long a slot of jobs in flight outlives the last
	// sign of its job when its api process stops keeping it (default 30 s;
	// tests shorten it).
	JobSlotLease time.Duration
	// WebhookSecret verifies billing webhooks (Standard Webhooks: "whsec_"
	// and the base64 key). Empty: POST /v1/webhook/dodo answers 503 and
	// logs an error, so nothing is ever applied unverified.
	WebhookSecret string
	// BillingProductTiers, when set, maps the billing provider's product
	// ids to tiers: a subscription.active's tier is its data.product_id's,
	// its data.metadata.tier ignored (logged when it disagrees), and a
	// product id not in the map is outcome unknown_tier. Empty: the tier
	// is data.metadata.tier. Every tier must be known (New).
	BillingProductTiers map[string]store.Tier
	// AI configures the Backtest AI agent.
	AI AIConfig
	// Jobs runs replays and backtests on the workers (worker.Client).
	Jobs JobRunner
	// Sweeps queues sweep shards on the workers (worker.Client); without
	// it POST /v1/sweeps answers 503.
	Sweeps SweepQueue
	// JobWait bounds how long a request waits for its job (default 60 s)
	// before answering 504 JOB_TIMEOUT with the job id.
	JobWait time.Duration
	// Metrics is the Prometheus registry /metrics serves; a new one is
	// made when nil. Other components (queues) may register on it.
	Metrics *prometheus.Registry
	// WriteStall bounds how long one write of an answer may wait for a
	// client that stopped reading (default DefaultWriteStall; negative: no
	// bound), so that slow readers cannot pin answers in memory.
	WriteStall time.Duration
	// RedisTimeout bounds each rate-limit, cap and session check on Redis
	// (default DefaultRedisTimeout); past it the request goes on (the rate
	// limits counted by this process alone) and the failure is logged, so
	// that a slow Redis never holds the API.
	RedisTimeout time.Duration
	// JobRedisTimeout bounds the take of a job's slot (default
	// DefaultJobRedisTimeout, never under RedisTimeout). A job's request
	// waits on the queue, on the same Redis, for seconds anyway: a take
	// slowed by a burst is waited for, where RedisTimeout's bound refused
	// the job (503) after a quarter of a second.
	JobRedisTimeout time.Duration
	// PublicURL is the address users reach the service at; https makes the
	// session cookie Secure. BillingURL is the checkout link
	// GET /v1/account/billing answers (none when empty).
	PublicURL, BillingURL string
	// SeriesCacheBytes bounds the chart series of resolved markets the
	// process keeps (seriescache.go; default DefaultSeriesCacheBytes).
	SeriesCacheBytes int
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	cfg     Config
	store   store.Store
	log     *slog.Logger
	api     huma.API
	mux     *http.ServeMux
	handler http.Handler
	metrics *httpMetrics
	// limiter counts requests in Redis; nil when Config.Redis is nil.
	limiter *rateLimiter
	// auth caches API key look-ups (authcache.go); nil without a limiter.
	auth *authCache
	// seriesCache keeps and coalesces chart series (seriescache.go).
	seriesCache *seriesCache
	// insecureCookie says once that a sign-in over https got a cookie
	// without Secure (createSession).
	insecureCookie sync.Once
	// pinHTTPS sends Strict-Transport-Security (pinsHTTPS).
	pinHTTPS bool
	// scalarQueries keeps each operation's scalar query parameters
	// (*huma.Operation to scalarQueryOf's []string), found at its first
	// request and read by every one after (rejectRepeatedQuery).
	scalarQueries sync.Map
	// unreturned holds the job slots whose give-back failed and is being
	// tried again (giveBackSlot), for a refused take to return first.
	unreturned unreturnedSlots
}

// New builds the API and registers every route.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("api: a store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.JobWait == 0 {
		cfg.JobWait = 60 * time.Second
	}
	if cfg.RedisTimeout <= 0 {
		cfg.RedisTimeout = DefaultRedisTimeout
	}
	if cfg.JobRedisTimeout <= 0 {
		cfg.JobRedisTimeout = max(DefaultJobRedisTimeout, cfg.RedisTimeout)
	}
	if cfg.LiveTimeout <= 0 {
		cfg.LiveTimeout = DefaultLiveTimeout
	}
	if cfg.WriteStall == 0 {
		cfg.WriteStall = DefaultWriteStall
	}
	if cfg.HeavyReads == 0 {
		cfg.HeavyReads = DefaultHeavyReads()
	}
	if cfg.SeriesCacheBytes == 0 {
		cfg.SeriesCacheBytes = DefaultSeriesCacheBytes
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
		cfg.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, mux: http.NewServeMux(),
		seriesCache: newSeriesCache(cfg.SeriesCacheBytes), pinHTTPS: pinsHTTPS(cfg.PublicURL)}
	if cfg.HeavyReads > 0 {
		s.store = heavyGate{Store: cfg.Store, sem: make(chan struct{}, cfg.HeavyReads)}
	}
	m, err := newHTTPMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	s.metrics = m

	hc := huma.DefaultConfig("updown API", Version)
	hc.CreateHooks = nil // no $schema fields or Link headers: SPEC's shapes are exact
	hc.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	// The document and its schemas are served by serveOpenAPI, not Huma,
	// whose json.Marshal would write every "<" of a description as \u003c.
	hc.OpenAPIPath, hc.SchemasPath = "", ""
	hc.DocsPath = "" // dashboard.go serves /docs from embedded assets
	hc.Info.Description = "History of short-interval up/down prediction markets (BTC, ETH, SOL), exchange data, strategy replay and a Backtest AI agent."
	hc.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		schemeAPIKey: {Type: "apiKey", In: "header", Name: "X-API-Key", Description: "API key created with `updown customers create` or `updown keys create`."},
	}
	hc.Formats = map[string]huma.Format{
		"application/json": jsonFormat,
		"json":             jsonFormat,
		"text/csv":         csvFormat,
		"csv":              csvFormat,
		// DESIGN 13: the same routes answer Parquet (parquet.go).
		"application/vnd.apache.parquet": parquetFormat,
		"parquet":                        parquetFormat,
	}
	s.api = humago.New(routeMux{s.mux, s.notFound}, hc) // routeMux: activity.go
	// rejectAmbiguousCredentials: auth.go; rejectMalformedQuery,
	// rejectRepeatedQuery: markets.go; capHeavyReads: readcap.go.
	s.api.UseMiddleware(s.rejectAmbiguousCredentials, s.authenticate, s.rejectMalformedQuery, s.rejectRepeatedQuery, s.capHeavyReads)

	s.registerMarkets()
	s.registerActivity() // activity.go
	s.registerReplay()
	s.registerExchange()
	s.registerBacktestAI()
	s.registerSweeps() // sweeps.go
	if err := s.registerBilling(); err != nil {
		return nil, err
	}
	s.registerDashboard() // dashboard.go: sessions, series, billing, keys, /app/, /docs
	fixErrorResponses(s.api.OpenAPI())
	documentJSONBodies(s.api.OpenAPI())
	documentNullableEnums(s.api.OpenAPI())
	documentNullableObjects(s.api.OpenAPI())
	documentJobs(s.api.OpenAPI()) // replay.go
	documentCSV(s.api.OpenAPI())
	documentSweepTrials(s.api.OpenAPI()) // sweeps.go
	documentReadCap(s.api.OpenAPI())     // readcap.go
	documentRateLimits(s.api.OpenAPI())  // ratelimit.go
	s.serveOpenAPI()

	checks := map[string]func(context.Context) error{"store": s.store.Ping}
	for name, c := range cfg.Checks {
		checks[name] = c
	}
	ops := OpsHandler(cfg.Metrics, checks, s.log)
	for _, route := range []string{"GET /healthz", "GET /readyz", "GET /metrics"} {
		s.mux.Handle(route, ops)
	}
	if cfg.Monitoring != nil {
		s.mux.Handle("/monitoring/", cfg.Monitoring)
		s.mux.Handle("GET /monitoring", http.RedirectHandler("/monitoring/", http.StatusMovedPermanently))
	}
	s.mux.HandleFunc("/", s.notFound)

	// Metrics wrap the mux directly: the mux records the matched pattern on
	// the request it is handed, which the metrics read back as the route.
	// Responses are compressed for clients that accept it (bodies over
	// 1 KiB), gzip at its fastest level: a megabyte page or replay then
	// costs about a third less time for about an eighth more bytes.
	compress, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, fmt.Errorf("response compression: %w", err)
	}
	s.handler = withWriteStall(s.withRequestID(s.withRecover(compress(withCSVNegotiation(
		http.MaxBytesHandler(s.withMetrics(s.withCleanPath(s.withPlainBody(withFoldedCase(s.mux)))), maxBodyBytes))))), cfg.WriteStall)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// OpenAPI returns the API's OpenAPI 3.1 document.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

func (s *Server) now() time.Time { return s.cfg.Now() }

// clientGone reports whether err is the end of the request's own context:
// its client went away (hung up, or gave up waiting) before the call
// answered. That is no failure of the server's, and must not be logged as
// an outage (clientWentAway). A context of the server's own that ran out
// (a Redis or store timeout) leaves the request's context live: a real
// failure still. The status answered stays as it was: nobody reads it.
func clientGone(ctx context.Context, err error) bool {
	return err != nil && errors.Is(ctx.Err(), context.Canceled) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// clientWentAway reports whether the call op failed with err because its
// client went away (clientGone), and then logs it as that, at INFO: the
// one way every such call is logged, whatever it was (a store call, a
// rate limit check, a slot, a job). A caller logs any other failure its
// own way.
func (s *Server) clientWentAway(ctx context.Context, op string, err error) bool {
	if !clientGone(ctx, err) {
		return false
	}
	s.log.InfoContext(ctx, op+": the client went away before it was done (not a server failure)", "request_id", RequestID(ctx), "err", err)
	return true
}

// logFailure logs a failed call with the request id: at ERROR, unless its
// client went away (clientWentAway).
func (s *Server) logFailure(ctx context.Context, op string, err error) {
	if s.clientWentAway(ctx, op, err) {
		return
	}
	s.log.ErrorContext(ctx, op+" failed", "request_id", RequestID(ctx), "err", err)
}

// internal logs an unexpected failure with the request id and answers 500
// without internals.
func (s *Server) internal(ctx context.Context, op string, err error) *Error {
	s.logFailure(ctx, op, err)
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "internal server error (request id " + RequestID(ctx) + ")", Cause: fmt.Errorf("%s: %w", op, err)}
}

// storeFailure answers a failed store call: 503 SERVICE_UNAVAILABLE when
// the backend cannot be reached (clients retry), else 500 INTERNAL_ERROR.
// Either way the cause is logged with the request id, never answered; a
// call its client went away from is logged as that, not as a failure
// (logFailure).
func (s *Server) storeFailure(ctx context.Context, op string, err error) *Error {
	if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
		return s.internal(ctx, op, err)
	}
	s.logFailure(ctx, op, err)
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable,
		Message: "the data store is unavailable; retry with backoff (request id " + RequestID(ctx) + ")", Cause: fmt.Errorf("%s: %w", op, err)}
}

func init() {
	// Huma builds its own errors (validation, bad bodies) through these
	// hooks; route them into SPEC 7's envelope. They are Huma's documented
	// extension points, set once for the process.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return fromHuma(status, msg, errs...)
	}
	huma.NewErrorWithContext = func(_ huma.Context, status int, msg string, errs ...error) huma.StatusError {
		return fromHuma(status, msg, errs...)
	}
}

// Schema documents *Error in the OpenAPI document as the envelope it writes.
func (e *Error) Schema(r huma.Registry) *huma.Schema {
	return r.Schema(reflect.TypeOf(ErrorEnvelope{}), true, "ErrorEnvelope")
}

// jsonResponse is an operation's 200 answer: a JSON body of the schema.
func jsonResponse(desc string, schema *huma.Schema) map[string]*huma.Response {
	return map[string]*huma.Response{"200": {Description: desc,
		Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}}}
}

// jsonBody is an operation's required JSON request body of the schema.
func jsonBody(schema *huma.Schema) *huma.RequestBody {
	return &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}}
}

// fixErrorResponses moves Huma's 422 responses to 400, the status this API
// answers validation errors with.
func fixErrorResponses(doc *huma.OpenAPI) {
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			if r, ok := op.Responses["422"]; ok {
				delete(op.Responses, "422")
				if _, has := op.Responses["400"]; !has {
					r.Description = "Bad Request (VALIDATION_ERROR and friends)"
					op.Responses["400"] = r
				}
			}
		}
	}
}

// documentJSONBodies leaves application/json the only form of every
// request body: Huma documents an operation that reads its RawBody as also
// taking application/octet-stream, and every such operation answers 415 to
// anything but JSON (requireJSON).
func documentJSONBodies(doc *huma.OpenAPI) {
	for _, item := range doc.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op != nil && op.RequestBody != nil {
				delete(op.RequestBody.Content, "application/octet-stream")
			}
		}
	}
}

// documentNullableEnums lists null in the enum of every nullable property:
// Huma writes a nullable enum's type as [type, "null"] but its enum from
// the tag alone, so a document that says winner is null while unresolved
// would refuse the null it describes.
func documentNullableEnums(doc *huma.OpenAPI) {
	for _, sc := range doc.Components.Schemas.Map() {
		for _, p := range sc.Properties {
			if p.Nullable && len(p.Enum) > 0 && !slices.Contains(p.Enum, nil) {
				p.Enum = append(p.Enum, nil)
			}
		}
	}
}

// documentNullableObjects documents as nullable the properties that are
// pointers to structs answered as null when nil (no omitempty): Huma names
// their schema alone (it supports null for scalars only), so that a
// client generated from the document, or a validator, refuses the nulls
// the server sends (a sweep trial's pnl_per_market without a traded
// market). Such a property becomes anyOf its schema and null; the 3.0
// form writes it as allOf the schema, nullable (downgradeNullableObjects).
func documentNullableObjects(doc *huma.OpenAPI) {
	reg := doc.Components.Schemas
	for name, sc := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		if t == nil || t.Kind() != reflect.Struct {
			continue
		}
		for _, f := range reflect.VisibleFields(t) {
			tag := f.Tag.Get("json")
			jsonName, opts, _ := strings.Cut(tag, ",")
			if !f.IsExported() || f.Anonymous || jsonName == "-" || strings.Contains(opts, "omitempty") ||
				f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
				continue
			}
			if jsonName == "" {
				jsonName = f.Name
			}
			if p := sc.Properties[jsonName]; p != nil && p.Ref != "" {
				sc.Properties[jsonName] = &huma.Schema{Description: p.Description,
					AnyOf: []*huma.Schema{{Ref: p.Ref}, {Type: "null"}}}
			}
		}
	}
}

// downgradeNullableObjects rewrites the 3.1 document's nullable objects
// (documentNullableObjects) in the 3.0 form of doc, JSON: anyOf a schema
// and null becomes allOf the schema, nullable, as 3.0 has no null type.
func downgradeNullableObjects(doc []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if alts, ok := x["anyOf"].([]any); ok && len(alts) == 2 {
				if n, ok := alts[1].(map[string]any); ok && len(n) == 1 && n["type"] == "null" {
					delete(x, "anyOf")
					x["allOf"], x["nullable"] = alts[:1], true
				}
			}
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return marshalJSON(v)
}

// documentCSV adds the text/csv form to the answers that have one.
func documentCSV(doc *huma.OpenAPI) {
	for path, item := range doc.Paths {
		if item.Get == nil || !csvRoute(path) {
			continue
		}
		if ok := item.Get.Responses["200"]; ok != nil && ok.Content != nil {
			ok.Content["text/csv"] = &huma.MediaType{Schema: &huma.Schema{Type: "string",
				Description: "With Accept: text/csv, one record a line after a header row, in the form `updown export --format csv` writes."}}
			ok.Content["application/vnd.apache.parquet"] = &huma.MediaType{Schema: &huma.Schema{Type: "string", Format: "binary",
				Description: "With Accept: application/vnd.apache.parquet, one Parquet file of the page: a row a record, times as UTC microsecond timestamps, books as lists of {price, size}."}}
		}
	}
}

// serveOpenAPI serves the OpenAPI document at the paths Huma serves it
// (/openapi.json, /openapi-3.0.json, /openapi.yaml, /openapi-3.0.yaml) and
// each schema at /schemas/{name}.json, with JSON as every answer is written
// (marshalJSON: "<" as it is). Each form is encoded once, on first use.
func (s *Server) serveOpenAPI() {
	doc := s.api.OpenAPI()
	downgraded := func() ([]byte, error) {
		b, err := doc.Downgrade()
		if err != nil {
			return nil, err
		}
		return downgradeNullableObjects(b)
	}
	forms := []struct {
		path, contentType string
		encode            func() ([]byte, error)
	}{
		{"/openapi.json", "application/openapi+json", func() ([]byte, error) { return marshalJSON(doc) }},
		{"/openapi-3.0.json", "application/openapi+json", downgraded},
		{"/openapi.yaml", "application/openapi+yaml", doc.YAML},
		{"/openapi-3.0.yaml", "application/openapi+yaml", func() ([]byte, error) {
			b, err := downgraded()
			if err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			err = yaml.Convert(&buf, bytes.NewReader(b))
			return buf.Bytes(), err
		}},
	}
	for _, f := range forms {
		encoded := sync.OnceValues(f.encode)
		s.mux.HandleFunc("GET "+f.path, func(w http.ResponseWriter, r *http.Request) {
			b, err := encoded()
			if err != nil {
				writeError(w, r, s.log, s.internal(r.Context(), "encode the OpenAPI document", err))
				return
			}
			w.Header().Set("Content-Type", f.contentType)
			_, _ = w.Write(b)
		})
	}
	schemas := doc.Components.Schemas
	s.mux.HandleFunc("GET /schemas/{schema}", func(w http.ResponseWriter, r *http.Request) {
		schema, ok := schemas.Map()[strings.TrimSuffix(r.PathValue("schema"), ".json")]
		if !ok {
			s.notFound(w, r)
			return
		}
		b, err := marshalJSON(schema)
		if err != nil {
			writeError(w, r, s.log, s.internal(r.Context(), "encode a schema", err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(schemaRef.ReplaceAll(b, []byte(`/schemas/$1.json`)))
	})
}

// schemaRef is a reference inside the document, which a schema served on
// its own points at its own address instead.
var schemaRef = regexp.MustCompile(`#/components/schemas/([^"]+)`)

// notFound answers paths no route serves: 405 when the path exists for
// another method, else 404 RESOURCE_NOT_FOUND.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		e := Errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s; use %s", clip(r.Method), clip(r.URL.Path), strings.Join(allowed, ", "))
		e.GetHeaders().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, r, s.log, e)
		return
	}
	// /v1/{coin}/{spot,future}/snapshots cannot be a route beside
	// /v1/markets/{slug}/snapshots: coins without history are answered here.
	if e := exchangeHistoryNotFound(r.URL.Path); e != nil {
		writeError(w, r, s.log, e)
		return
	}
	writeError(w, r, s.log, Errorf(http.StatusNotFound, CodeNotFound, "no such endpoint: %s %s (see /docs)", clip(r.Method), clip(r.URL.Path)))
}

// withCleanPath answers a path with an empty, "." or ".." segment with the
// 404 of an unknown endpoint. Go's mux would answer it with a redirect to
// the path cleaned, another resource: /v1/markets//snapshots is not the
// market "snapshots".
func (s *Server) withCleanPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; strings.Contains(p, "//") || strings.Contains(p+"/", "/./") || strings.Contains(p+"/", "/../") {
			writeError(w, r, s.log, Errorf(http.StatusNotFound, CodeNotFound, "no such endpoint: %s %s (see /docs)", clip(r.Method), clip(p)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withPlainBody answers 415 UNSUPPORTED_MEDIA_TYPE to a request whose body
// comes with a Content-Encoding other than identity: the handlers read
// bodies as sent, so a gzipped JSON body was 400 "invalid character
// '\x1f'" (and a webhook's signature failed), and a plain body labelled
// gzip was taken. Per RFC 9110 the answer says, in Accept-Encoding, that
// only identity is read. A request without a body passes.
func (s *Server) withPlainBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			for _, v := range r.Header.Values("Content-Encoding") {
				for _, coding := range strings.Split(v, ",") {
					if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
						e := Errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
							"request bodies are read as sent: Content-Encoding %s is not supported, send the body uncompressed", clip(c))
						e.GetHeaders().Set("Accept-Encoding", "identity")
						writeError(w, r, s.log, e)
						return
					}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// foldedParams are the query parameters whose values are names from a
// fixed lower-case set (order: asc, desc; market_type: 5m ... 24hr), read
// in any case as coin is.
var foldedParams = map[string]bool{"order": true, "market_type": true}

// withFoldedCase lower-cases what the service reads in any case before the
// router sees it: the coin of /v1/<coin>/{spot,future}/... (the latest
// and trades routes took BTC while /v1/BTC/spot/snapshots was 404), and
// the values of foldedParams (order=DESC and market_type=5M were 400 while
// coin=btc was taken). Answers keep their own spelling. A value whose
// escapes are malformed is left for the handlers to refuse.
func withFoldedCase(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, query := foldCoinPath(r.URL.Path), foldQuery(r.URL.RawQuery)
		if path != r.URL.Path || query != r.URL.RawQuery {
			u := *r.URL
			u.Path, u.RawPath, u.RawQuery = path, "", query
			r = r.WithContext(r.Context())
			r.URL = &u
		}
		next.ServeHTTP(w, r)
	})
}

// foldCoinPath lower-cases the coin of /v1/<coin>/{spot,future}/...
// when it is a coin in another case.
func foldCoinPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok {
		return path
	}
	coin, tail, ok := strings.Cut(rest, "/")
	if !ok || coin == strings.ToLower(coin) {
		return path
	}
	if _, ok := store.ParseCoin(coin); !ok {
		return path
	}
	if kind, _, _ := strings.Cut(tail, "/"); !store.ExchangeKind(kind).Valid() {
		return path
	}
	return "/v1/" + strings.ToLower(coin) + "/" + tail
}

// foldQuery lower-cases the values of foldedParams in a raw query,
// leaving every other byte of it as it came.
func foldQuery(raw string) string {
	if raw == "" {
		return raw
	}
	pairs := strings.Split(raw, "&")
	changed := false
	for i, pair := range pairs {
		key, val, ok := strings.Cut(pair, "=")
		if !ok || !foldedParams[key] {
			continue
		}
		v, err := url.QueryUnescape(val)
		if err != nil || v == strings.ToLower(v) {
			continue
		}
		pairs[i] = key + "=" + url.QueryEscape(strings.ToLower(v))
		changed = true
	}
	if !changed {
		return raw
	}
	return strings.Join(pairs, "&")
}

type requestIDKey struct{}

// pinsHTTPS tells whether a server at the public address publicURL sends
// Strict-Transport-Security: when it is https, so that a browser that has
// been there once never sends a later visit, typed as http://, over plain
// http, where the sign-in's API key and the session cookie could be read
// or stripped on the way. The host only (no includeSubDomains): other
// hosts of the domain are not the service's to pin. Not on localhost,
// whose pin would hold every local service, whatever its port, to https
// in the developer's browser for a year (browsers ignore it on an IP
// address anyway).
func pinsHTTPS(publicURL string) bool {
	host, ok := publicHTTPS(publicURL)
	return ok && host != "" && host != "localhost" && !strings.HasSuffix(host, ".localhost")
}

// publicHTTPS reports whether the public address publicURL is https, and
// its host, lower-cased without a trailing dot: the one reading of
// PUBLIC_URL that Strict-Transport-Security (pinsHTTPS) and the session
// cookie's Secure flag (secureCookies) both take.
func publicHTTPS(publicURL string) (host string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(publicURL))
	if err != nil || !strings.EqualFold(u.Scheme, "https") {
		return "", false
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), true
}

// RequestID returns the request's id ("" outside a request).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID gives every request an id, echoed in X-Request-Id, and sets
// the headers every API response carries.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		h := w.Header()
		h.Set("X-Request-Id", id)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if s.pinHTTPS {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		// JSON needs no scripts, styles or frames; the docs page and the
		// monitoring UI are HTML that loads scripts, so they are left
		// without a policy rather than broken.
		if !strings.HasPrefix(r.URL.Path, "/docs") && !strings.HasPrefix(r.URL.Path, "/monitoring") {
			h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// validRequestID accepts a caller's id only when it is short and plain, so
// it can be logged and echoed safely.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// withRecover turns a panic into 500 INTERNAL_ERROR, logged with the stack.
func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				writeError(w, r, s.log, &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
					Message: "internal server error (request id " + RequestID(r.Context()) + ")",
					Cause:   fmt.Errorf("panic: %v", v)})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// httpMetrics are the API's Prometheus metrics.
type httpMetrics struct {
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry) (*httpMetrics, error) {
	m := &httpMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "updown",
		Name:      "http_request_duration_seconds",
		Help:      "HTTP request latency by route and status.",
		Buckets:   []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"method", "route", "status"})}
	if err := reg.Register(m.duration); err != nil {
		return nil, fmt.Errorf("api: register metrics: %w", err)
	}
	return m, nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// withMetrics records each request's latency by route and status, and
// logs the request.
func (s *Server) withMetrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := r.Pattern // set by the mux on match
		if route == "" || route == "/" {
			route = "unmatched"
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		took := time.Since(start)
		method := methodLabel(r.Method)
		s.metrics.duration.WithLabelValues(method, route, strconv.Itoa(rec.status)).Observe(took.Seconds())
		// The request log: the route pattern, never the path or query, so
		// nothing a client put in the URL is written down. client_gone
		// marks a request whose client went away before its answer: its
		// status (a 5xx when a call was cut short) was sent to nobody, and
		// is no outage.
		attrs := []slog.Attr{slog.String("method", method), slog.String("route", route),
			slog.Int("status", rec.status), slog.Duration("duration", took), slog.String("request_id", RequestID(r.Context()))}
		if errors.Is(r.Context().Err(), context.Canceled) {
			attrs = append(attrs, slog.Bool("client_gone", true))
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	})
}

// methodLabel is the request's method as the metrics and the request log
// name it: one of HTTP's own methods, else OTHER. A client chooses the
// method, any token up to the header limit (a megabyte), and every
// distinct label value is a time series kept for the life of the process
// and written out by every scrape: unbounded, an unauthenticated client
// could grow the api's memory and /metrics at will.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
