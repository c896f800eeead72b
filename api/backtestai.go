package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/backtest"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/store"
	"github.com/updown/updown/worker"
)

// AIConfig configures the Backtest AI agent (SPEC 4.4, DESIGN 8). The
// generator itself (AI_PROVIDER, OPENAI_*) runs on the workers: see
// worker.BacktestConfig.
type AIConfig struct {
	// TokenSecret signs and verifies bearer tokens (HS256, TOKEN_SECRET;
	// at least MinTokenSecret bytes). Without it POST /v1/auth/token and
	// the Backtest AI endpoints answer 503.
	TokenSecret []byte
	// TokenTTL is how long a bearer token lives (default 15 min).
	TokenTTL time.Duration
	// BacktestTimeout bounds a multi-market backtest on the workers
	// (default 5 min): markets unfinished by then are reported with the
	// code JOB_TIMEOUT. The request itself waits Config.JobWait, then
	// answers 504 JOB_TIMEOUT with the job id; GET /v1/jobs/{id} answers
	// the backtest once it is done.
	BacktestTimeout time.Duration
}

// Codes of the Backtest AI agent (SPEC 7).
const (
	CodeBacktestAIRequired = "BACKTEST_AI_REQUIRED"
	CodeAIQuotaExceeded    = "BACKTEST_AI_QUOTA_EXCEEDED"
	CodeGenerationFailed   = strategy.CodeGenerationFailed
	CodeNoBacktestMarkets  = "NO_BACKTEST_MARKETS"
)

const defaultBacktestTimeout = 5 * time.Minute

// registerBacktestAI registers the Backtest AI endpoints and bearer tokens.
func (s *Server) registerBacktestAI() {
	doc := s.api.OpenAPI()
	if doc.Components.SecuritySchemes == nil {
		doc.Components.SecuritySchemes = map[string]*huma.SecurityScheme{}
	}
	doc.Components.SecuritySchemes[schemeBearer] = &huma.SecurityScheme{Type: "http", Scheme: "bearer", BearerFormat: "JWT",
		Description: "A short-lived token from POST /v1/auth/token. The Backtest AI endpoints take this scheme only."}
	s.registerToken()

	schemas := doc.Components.Schemas
	genReq := schemas.Schema(reflect.TypeFor[backtestAIGenerateRequest](), true, "")
	runReq := schemas.Schema(reflect.TypeFor[backtestAIRunRequest](), true, "")
	genResp := schemas.Schema(reflect.TypeFor[backtestAIGenerateResponse](), true, "")
	btResp := schemas.Schema(reflect.TypeFor[backtestAIBacktestResponse](), true, "")
	quotaResp := schemas.Schema(reflect.TypeFor[backtestAIQuotaResponse](), true, "")
	op := func(id, method, path, summary, description string) huma.Operation {
		return huma.Operation{
			OperationID: id, Method: method, Path: path, Summary: summary, Description: description,
			Tags:        []string{"Backtest AI"},
			Security:    []map[string][]string{{schemeBearer: {}}},
			Middlewares: huma.Middlewares{s.requireBearer},
			// The handlers read the body themselves, to answer the
			// replay codes and name the offending field.
			SkipValidateBody: true,
			// Huma bounds only operations with a Body field; say the bound here
			// so an oversized body is 413, not a failed read.
			MaxBodyBytes: maxBodyBytes,
		}
	}

	o := op("backtest-ai-generate", http.MethodPost, "/v1/backtest-ai/generate", "Generate a strategy from a prompt",
		"Turns a plain-English idea (and optionally a preset) into a normalized, replay-ready strategy and its strategy_code. "+
			"marketCount is checked as /strategy checks it, but the strategy does not carry it: /run takes its own (default 10). "+
			"Consumes one generation of the monthly quota, only when generation succeeds.")
	o.RequestBody, o.Responses = jsonBody(genReq), jsonResponse("The generated strategy", genResp)
	o.Errors = []int{400, 401, 403, 413, 415, 429, 500, 502, 503, 504}
	huma.Register(s.api, o, s.generate)

	o = op("backtest-ai-strategy", http.MethodPost, "/v1/backtest-ai/strategy", "Generate a strategy and backtest it",
		"Generates a strategy as /generate does, then replays it on the newest marketCount resolved markets of the coin and type "+
			"within the plan's data window, sharded across the workers. Consumes one generation, only when generation succeeds. "+
			"The generation and the backtest wait JOB_WAIT together, as long as any request waits for its job: a backtest that outlasts what "+
			"is left answers 504 JOB_TIMEOUT with details.job_id for GET /v1/jobs/{id} (X-API-Key). "+
			"Once the generation has succeeded, a backtest that outlasts the wait (504), cannot run (429 concurrent_jobs, 503) or fails "+
			"(GET /v1/jobs/{id}) answers details.generated_strategy and details.strategy_code, for /run.")
	o.RequestBody, o.Responses = jsonBody(genReq), jsonResponse("The strategy, the aggregate and every market's result", btResp)
	o.Errors = []int{400, 401, 403, 404, 413, 415, 429, 500, 502, 503, 504}
	huma.Register(s.api, o, s.backtestStrategy)

	o = op("backtest-ai-run", http.MethodPost, "/v1/backtest-ai/run", "Backtest a strategy or a strategy code",
		"Backtests a generatedStrategy object (as /generate answers it) or a strategy_code string on the newest marketCount resolved "+
			"markets; feeModel, feeRate, feeExponent and latencyMs, when given, replace the strategy's costs. Does not use the quota, "+
			"and answers it.")
	o.RequestBody, o.Responses = jsonBody(runReq), jsonResponse("The strategy, the aggregate and every market's result", btResp)
	o.Errors = []int{400, 401, 403, 404, 413, 415, 429, 500, 503, 504}
	huma.Register(s.api, o, s.runStrategy)

	o = op("backtest-ai-quota", http.MethodGet, "/v1/backtest-ai/quota", "Monthly generation quota",
		"Generations used this calendar month (UTC). limit and remaining are null on an unlimited plan.")
	o.Responses = jsonResponse("The quota", quotaResp)
	o.Errors = []int{401, 403, 429, 500, 503}
	huma.Register(s.api, o, s.quota)
}

type aiInput struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

type aiOutput struct{ Body successBody }

// generateData is the data of /generate.
type generateData struct {
	GeneratedStrategy strategy.Spec   `json:"generated_strategy"`
	StrategyCode      string          `json:"strategy_code"`
	Quota             *backtest.Quota `json:"quota"`
}

func (s *Server) success(ctx context.Context, data any) (*aiOutput, error) {
	// Conditions and strategy codes are full of < and >: marshalJSON
	// keeps them readable rather than \u003c.
	b, err := marshalJSON(data)
	if err != nil {
		return nil, s.internal(ctx, "encode answer", err)
	}
	return &aiOutput{Body: successBody{Success: true, Data: b, Timestamp: formatTime(s.now())}}, nil
}

// aiAllowed answers 403 BACKTEST_AI_REQUIRED for plans without the agent.
func aiAllowed(p principal) error {
	if p.Plan.BacktestAI {
		return nil
	}
	e := tierDenied(p.Plan, store.Pro, "the Backtest AI agent needs the PRO or ENTERPRISE plan; yours is %s", p.Plan.Tier)
	e.Code = CodeBacktestAIRequired
	return e
}

// generationRequest checks the plan and reads the body of /generate and
// /strategy.
func (s *Server) generationRequest(ctx context.Context, in *aiInput) (principal, strategy.Request, error) {
	p := principalFrom(ctx)
	var req strategy.Request
	if err := aiAllowed(p); err != nil {
		return p, req, err
	}
	if err := requireJSON(in.ContentType); err != nil {
		return p, req, err
	}
	if len(bytes.TrimSpace(in.RawBody)) == 0 {
		return p, req, Errorf(http.StatusBadRequest, CodeValidation, "the request body is empty: send {\"prompt\": \"...\"} as JSON")
	}
	if err := json.Unmarshal(in.RawBody, &req); err != nil {
		return p, req, decodeError(err, "")
	}
	if err := req.Normalize(); err != nil {
		return p, req, strategyError(err)
	}
	return p, req, nil
}

// decodeError explains a failure to decode an agent body (or its part at
// prefix): an unknown key as the replay names it, else as bodyError does.
func decodeError(err error, prefix string) *Error {
	var re *replay.Error
	if !errors.As(err, &re) {
		return bodyError(err, prefix)
	}
	if prefix != "" {
		c := *re
		c.Field = prefix + "." + c.Field
		c.Message = strings.Replace(c.Message, `"`+re.Field+`"`, `"`+c.Field+`"`, 1)
		re = &c
	}
	return replayError(re)
}

func (s *Server) generate(ctx context.Context, in *aiInput) (*aiOutput, error) {
	p, req, err := s.generationRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	spec, q, err := s.generateStrategy(ctx, p, req)
	if err != nil {
		return nil, err
	}
	return s.success(ctx, generateData{GeneratedStrategy: spec, StrategyCode: strategy.FormatCode(spec.Rules), Quota: q})
}

func (s *Server) backtestStrategy(ctx context.Context, in *aiInput) (*aiOutput, error) {
	// The generation and the backtest wait JobWait in all: a request that
	// waited JobWait for each could run twice as long as any other, past
	// a client's or a proxy's timeout set above JobWait, which then lost
	// the job ids and with them the strategy the generation was spent on.
	ctx = withWaitUntil(ctx, time.Now().Add(s.cfg.JobWait))
	p, req, err := s.generationRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	// Markets first: a request that cannot be backtested must not spend
	// a generation.
	markets, versions, warning, err := s.backtestMarkets(ctx, p, req.Coin, req.MarketType, req.Count())
	if err != nil {
		return nil, err
	}
	spec, q, err := s.generateStrategy(ctx, p, req)
	var e *Error
	if errors.As(err, &e) && e.Code == CodeJobTimeout {
		// The generation's job answers the strategy alone, as /generate
		// would: nothing starts the backtest once this request is gone.
		c := *e
		c.Message += " (the generation: the backtest did not start; POST the generated_strategy it answers to /v1/backtest-ai/run, " +
			"which uses no quota)"
		return nil, &c
	}
	if err != nil {
		return nil, err
	}
	// The generation succeeded: it is spent whatever becomes of the
	// backtest (its job answers GET /v1/jobs/{id}). The backtest starts
	// whether or not the client is still there, as no job's wait ends with
	// its client (runJobThen): a client that hung up during the generation
	// left a request whose context had ended, on which the backtest's job
	// slot could not be taken, so the paid backtest never ran and the
	// hang-up was logged as a Redis outage and answered 503.
	ctx = context.WithoutCancel(ctx)
	out, err := s.runBacktest(ctx, p, backtest.Request{Strategy: spec, Markets: markets, Quota: q, Warning: warning, MarketVersions: versions},
		map[string]string{headerPaidStrategy: "1"})
	if errors.As(err, &e) {
		// A backtest that could not run (jobs in flight, the queue
		// down) must not lose the strategy the customer paid a
		// generation for: the answer carries it, for /run, which uses no
		// quota. So does a 504: its job id leads to the whole answer
		// (and to the strategy when the backtest fails: see
		// paidStrategyKept), but only while the job is kept (minutes),
		// and the strategy is the customer's for good.
		return nil, keepPaidStrategy(e, spec, q)
	}
	return out, err
}

// headerPaidStrategy marks the backtest job of a /strategy, whose
// strategy (in its payload) a generation was spent on.
const headerPaidStrategy = "updown-paid-strategy"

// keepPaidStrategy is e, the failure (or 504) of /strategy's backtest
// after its generation succeeded, carrying the generated strategy, its
// code and the quota in its details, for /run, which uses no quota.
func keepPaidStrategy(e *Error, spec strategy.Spec, q *backtest.Quota) *Error {
	e = e.With("generated_strategy", spec).With("strategy_code", strategy.FormatCode(spec.Rules)).With("quota", q)
	if e.Code == CodeJobTimeout {
		e.Message += " (its answer is kept for minutes, not for good); the generation is spent: details.generated_strategy holds its strategy, " +
			"which POST /v1/backtest-ai/run backtests again without using the quota"
		return e
	}
	e.Message += "; the generation is spent: details.generated_strategy holds its strategy, which POST /v1/backtest-ai/run backtests without using the quota"
	return e
}

// paidStrategyKept is GET /v1/jobs/{id}'s answer of a /strategy's
// backtest job that failed (err, its failure), after the request had
// answered 504: the failure as /strategy answers it, with the strategy the
// customer paid a generation for (keepPaidStrategy), read from the job's
// payload. Without it the strategy was lost with the backtest.
func (s *Server) paidStrategyKept(ctx context.Context, err error, st worker.JobState) error {
	var e *Error
	if st.Headers[headerPaidStrategy] == "" || !errors.As(err, &e) {
		return err
	}
	var req backtest.Request
	if dErr := json.Unmarshal(st.Payload, &req); dErr != nil {
		s.log.ErrorContext(ctx, "read the strategy of a failed backtest job", "request_id", RequestID(ctx), "job_id", st.ID, "err", dErr)
		return err
	}
	if nErr := req.Strategy.Normalize(); nErr != nil {
		s.log.ErrorContext(ctx, "read the strategy of a failed backtest job", "request_id", RequestID(ctx), "job_id", st.ID, "err", nErr)
		return err
	}
	return keepPaidStrategy(e, req.Strategy, req.Quota)
}

// generateStrategy takes a job slot, reserves a generation and runs it on
// the ai queue. A
// generation is spent once it succeeds, however it is collected (DESIGN
// 8): by this request, or by GET /v1/jobs/{id} after a 504 or a client
// that hung up. So the reservation is settled by the job's outcome, not by
// the request: only a generation that failed (or never reached the queue)
// gives it back, also when that is known only after the request ended.
func (s *Server) generateStrategy(ctx context.Context, p principal, req strategy.Request) (spec strategy.Spec, q *backtest.Quota, err error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return spec, nil, s.internal(ctx, "encode generation payload", err)
	}
	// Every request is a generation of its own: a job id from the payload
	// alone would answer a prompt sent again (by anyone, within the
	// results' retention) with the first one's finished result, spending a
	// generation the model never made and giving no fresh strategy.
	var nonce [12]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails
	job := worker.Job{Type: strategy.TaskType, Queue: jobs.QueueAI, Payload: payload, Version: hex.EncodeToString(nonce[:]),
		Retention: generationRetention}
	// The job's slot before the quota: a generation refused for the
	// customer's jobs in flight (429 concurrent_jobs) must not hold one of
	// the month's generations meanwhile, or a concurrent request for the
	// last one is told the quota is spent, with a Retry-After of the next
	// month, though nothing was.
	slot, err := s.jobSlot(ctx, job, p)
	if err != nil {
		return spec, nil, err
	}
	period := monthStart(s.now())
	limit := p.Plan.AIGenerationsPerMonth
	used, err := s.store.ReserveAIGeneration(ctx, p.Customer.ID, period, limit)
	if err != nil && slot.release != nil {
		slot.release()
	}
	if errors.Is(err, store.ErrQuotaExceeded) {
		return spec, nil, s.quotaExceeded(used, limit, period)
	}
	if err != nil {
		return spec, nil, s.storeFailure(ctx, "reserve AI generation", err)
	}
	// The quota this generation leaves travels with its job, so that GET
	// /v1/jobs/{id} answers it as this request would have, whatever was
	// spent since and in whichever month it is fetched (generatedAnswer).
	job.Headers = quotaHeaders(used, limit, period)
	giveBack := func() {
		// Not the request's context: it may be long gone.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if rErr := s.store.ReleaseAIGeneration(rctx, p.Customer.ID, period); rErr != nil {
			s.log.ErrorContext(ctx, "release AI generation", "request_id", RequestID(ctx), "customer_id", p.Customer.ID, "err", rErr)
		}
	}
	o, err := s.runHolding(ctx, job, p, slot, func(o *jobs.Outcome) {
		if o != nil && o.Failure != nil {
			giveBack()
		}
	})
	if err != nil {
		return spec, nil, promptRefused(err)
	}
	raw, err := o.Data()
	if err != nil {
		giveBack() // GET /v1/jobs/{id} cannot read it either
		return spec, nil, s.internal(ctx, "read generated strategy", err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		giveBack() // GET /v1/jobs/{id} cannot read it either
		return spec, nil, s.internal(ctx, "decode generated strategy", err)
	}
	if err := spec.Normalize(); err != nil {
		giveBack()
		return spec, nil, s.internal(ctx, "generated strategy", err)
	}
	return spec, quotaOf(used, limit, period), nil
}

// generationRetention is how long a finished generation's answer is kept
// for GET /v1/jobs/{id}: it is paid for (a generation of the month's
// quota), and small, so a customer whose request timed out (504) or hung
// up can collect it within the day, not only within the minutes the
// queue keeps other jobs' answers (worker.ClientConfig.Retention).
const generationRetention = 24 * time.Hour

// promptRefused is a generation's error as /generate answers it: a
// VALIDATION_ERROR names the prompt, since the request was checked before
// it was queued and what the generator refuses is the prompt.
func promptRefused(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeValidation {
		return e.With("field", "prompt")
	}
	return err
}

// Headers of a generation job: the quota its reservation left (used, the
// limit, the month), which /generate answers.
const (
	headerQuotaUsed   = "updown-quota-used"
	headerQuotaLimit  = "updown-quota-limit"
	headerQuotaPeriod = "updown-quota-period"
)

// quotaHeaders are a generation job's headers of its quota.
func quotaHeaders(used, limit int, period time.Time) map[string]string {
	return map[string]string{headerQuotaUsed: strconv.Itoa(used), headerQuotaLimit: strconv.Itoa(limit),
		headerQuotaPeriod: period.UTC().Format(time.RFC3339)}
}

// quotaFromHeaders reads quotaHeaders back; ok is false when they are
// missing or unreadable.
func quotaFromHeaders(h map[string]string) (q *backtest.Quota, ok bool) {
	used, err1 := strconv.Atoi(h[headerQuotaUsed])
	limit, err2 := strconv.Atoi(h[headerQuotaLimit])
	period, err3 := time.Parse(time.RFC3339, h[headerQuotaPeriod])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, false
	}
	return quotaOf(used, limit, period), true
}

// generatedAnswer turns a finished generation job's result into the answer
// /generate gives, so GET /v1/jobs/{id} after a 504 answers the same shape,
// and the same quota: the one the job's headers carry (quotaHeaders), as
// its request answered it; a job without them (from an api older than
// them) answers the quota as it is now.
func (s *Server) generatedAnswer(ctx context.Context, p principal, raw json.RawMessage, headers map[string]string) (json.RawMessage, error) {
	var spec strategy.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, s.internal(ctx, "decode generated strategy", err)
	}
	if err := spec.Normalize(); err != nil {
		return nil, s.internal(ctx, "generated strategy", err)
	}
	q, ok := quotaFromHeaders(headers)
	if !ok {
		period := monthStart(s.now())
		used, err := s.store.AIGenerationsUsed(ctx, p.Customer.ID, period)
		if err != nil {
			return nil, s.storeFailure(ctx, "count AI generations", err)
		}
		q = quotaOf(used, p.Plan.AIGenerationsPerMonth, period)
	}
	out, err := s.success(ctx, generateData{GeneratedStrategy: spec, StrategyCode: strategy.FormatCode(spec.Rules), Quota: q})
	if err != nil {
		return nil, err
	}
	return out.Body.Data, nil
}

// backtestMarkets picks the newest n resolved markets of the coin and type
// within the caller's data window. When there are fewer than n, the
// warning says so: the answer must not pass a smaller sample off as the
// one asked for. versions are the markets' versions (their updated_at
// and store.DataVersion), which make a backtest of a market corrected or
// given data since a new job (backtest.Request.MarketVersions).
func (s *Server) backtestMarkets(ctx context.Context, p principal, coin store.Coin, mt store.MarketType, n int) (slugs, versions []string, warning *string, err error) {
	w, err := s.marketWindow(ctx, p.Plan, coin, mt)
	if err != nil {
		return nil, nil, nil, err
	}
	resolved := true
	ms, _, err := s.store.ListMarkets(ctx, store.MarketFilter{Coin: coin, MarketType: mt, Resolved: &resolved, Window: w, Limit: n})
	if err != nil {
		return nil, nil, nil, s.storeFailure(ctx, "list backtest markets", err)
	}
	window := p.Plan.dataWindow()
	if len(ms) == 0 {
		return nil, nil, nil, Errorf(http.StatusNotFound, CodeNoBacktestMarkets, "no resolved %s %s markets %s to backtest on", coin, mt, window)
	}
	if len(ms) < n {
		msg := fmt.Sprintf("marketCount asked for %d markets, but only %d resolved %s %s markets are %s: the backtest ran on those %d",
			n, len(ms), coin, mt, window, len(ms))
		warning = &msg
	}
	slugs, versions = make([]string, len(ms)), make([]string, len(ms))
	for i, m := range ms {
		slugs[i] = m.Slug
	}
	// Data added to a market since (snapshots, trades, gaps) makes a new
	// version too, as for a replay: appends leave updated_at as it is.
	dvs, err := store.DataVersions(ctx, s.cfg.Store, slugs)
	if err != nil {
		return nil, nil, nil, s.storeFailure(ctx, "read the backtest markets' data versions", err)
	}
	for i, m := range ms {
		versions[i] = m.UpdatedAt.UTC().Format(time.RFC3339Nano) + "/" + dvs[i].String()
	}
	return slugs, versions, warning, nil
}

// runBacktest runs a batch on the workers, its job enqueued with headers;
// its result is the answer's data.
func (s *Server) runBacktest(ctx context.Context, p principal, req backtest.Request, headers map[string]string) (*aiOutput, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, s.internal(ctx, "encode backtest payload", err)
	}
	timeout := s.cfg.AI.BacktestTimeout
	if timeout <= 0 {
		timeout = defaultBacktestTimeout
	}
	data, err := s.runJob(ctx, worker.Job{Type: backtest.TaskType, Queue: jobs.QueueBacktest, Payload: payload, Timeout: timeout, Headers: headers}, p)
	if err != nil {
		return nil, err
	}
	// The worker wrote the report as this answer reads (Report.AppendJSON);
	// checked, so that a broken one is a clean 500 rather than a body cut
	// short.
	if !json.Valid(data) {
		return nil, s.internal(ctx, "read backtest report", errors.New("the worker's report is not JSON"))
	}
	return &aiOutput{Body: successBody{Success: true, Data: data, Timestamp: formatTime(s.now())}}, nil
}

// runRequest is the body of /run.
type runRequest struct {
	GeneratedStrategy json.RawMessage `json:"generatedStrategy"`
	StrategyCode      *string         `json:"strategy_code"`
	Coin              string          `json:"coin"`
	MarketType        string          `json:"marketType"`
	MarketCount       *float64        `json:"marketCount"` // any JSON number; whole (strategy.WholeNumber)
	// The replay's costs, replacing the strategy's when given.
	FeeModel    string   `json:"feeModel"`
	FeeRate     *float64 `json:"feeRate"`
	FeeExponent *float64 `json:"feeExponent"`
	LatencyMs   *float64 `json:"latencyMs"`
	// The order type, re-entry control and resting orders, replacing the
	// strategy's when given. (Not strategy.OrderSettings embedded: a type
	// error would then name "OrderSettings.postOnly".)
	OrderType           string   `json:"orderType"`
	ReentryCooldownMs   *float64 `json:"reentryCooldownMs"`
	MaxEntriesPerMarket *float64 `json:"maxEntriesPerMarket"`
	PostOnly            *bool    `json:"postOnly"`
	LimitOffsetTicks    *float64 `json:"limitOffsetTicks"`
	CancelAfterMs       *float64 `json:"cancelAfterMs"`
	QueueModel          string   `json:"queueModel"`
	IncludeRebates      *bool    `json:"includeRebates"`
}

// orderSettings are the body's settings of re-entry control and resting
// orders.
func (r *runRequest) orderSettings() strategy.OrderSettings {
	return strategy.OrderSettings{ReentryCooldownMs: r.ReentryCooldownMs, MaxEntriesPerMarket: r.MaxEntriesPerMarket, PostOnly: r.PostOnly,
		LimitOffsetTicks: r.LimitOffsetTicks, CancelAfterMs: r.CancelAfterMs, QueueModel: r.QueueModel, IncludeRebates: r.IncludeRebates}
}

// runKeys are the JSON keys of a /run body.
var runKeys = append([]string{"generatedStrategy", "strategy_code", "coin", "marketType", "marketCount", "feeModel", "feeRate", "feeExponent", "latencyMs",
	"orderType"}, strategy.OrderSettingKeys()...)

func (s *Server) runStrategy(ctx context.Context, in *aiInput) (*aiOutput, error) {
	p := principalFrom(ctx)
	if err := aiAllowed(p); err != nil {
		return nil, err
	}
	if err := requireJSON(in.ContentType); err != nil {
		return nil, err
	}
	var req runRequest
	if len(bytes.TrimSpace(in.RawBody)) == 0 {
		return nil, Errorf(http.StatusBadRequest, CodeValidation, "the request body is empty: send {\"generatedStrategy\": {...}} or {\"strategy_code\": \"...\"}")
	}
	if err := replay.CheckKeys(in.RawBody, "", runKeys, nil); err != nil {
		return nil, decodeError(err, "")
	}
	if err := json.Unmarshal(in.RawBody, &req); err != nil {
		return nil, bodyError(err, "")
	}
	count, err := strategy.WholeNumber(req.MarketCount, "marketCount")
	if err != nil {
		return nil, bodyError(err, "")
	}
	spec, err := req.spec()
	if err != nil {
		return nil, err
	}
	n := strategy.DefaultMarketCount
	if c := count; c != nil {
		if *c < strategy.MinMarketCount || *c > strategy.MaxMarketCount {
			return nil, Errorf(http.StatusBadRequest, CodeValidation, "marketCount %d is out of range: it must be between 1 and 100", *c).With("field", "marketCount")
		}
		n = *c
	}
	markets, versions, warning, err := s.backtestMarkets(ctx, p, spec.Coin, spec.MarketType, n)
	if err != nil {
		return nil, err
	}
	// /run answers the quota it leaves alone (DESIGN 8); it travels in
	// the request so that GET /v1/jobs/{id} answers it too.
	period := monthStart(s.now())
	used, err := s.store.AIGenerationsUsed(ctx, p.Customer.ID, period)
	if err != nil {
		return nil, s.storeFailure(ctx, "count AI generations", err)
	}
	return s.runBacktest(ctx, p, backtest.Request{Strategy: spec, Markets: markets,
		Quota: quotaOf(used, p.Plan.AIGenerationsPerMonth, period), Warning: warning, MarketVersions: versions}, nil)
}

// spec reads the strategy of a /run body: exactly one of generatedStrategy
// and strategy_code, on the body's coin and marketType when given, else
// the strategy's, else BTC 15m.
func (r *runRequest) spec() (strategy.Spec, error) {
	hasObject := len(r.GeneratedStrategy) > 0 && string(r.GeneratedStrategy) != "null"
	var spec strategy.Spec
	described := "" // the object's rules in words, before the body's settings change them
	switch {
	case hasObject && r.StrategyCode != nil:
		return spec, Errorf(http.StatusBadRequest, CodeValidation, "send generatedStrategy or strategy_code, not both")
	case hasObject:
		if err := json.Unmarshal(r.GeneratedStrategy, &spec); err != nil {
			return spec, decodeError(err, "generatedStrategy")
		}
		// Told of the object normalized, as the strategy run is below, so
		// that the defaults it leaves out (orderType, maxLossPercent, a
		// GTC's queueModel) are no change.
		if st := spec.Strategy; st.Normalize() == nil {
			described = strategy.Describe(strategy.Rules{Strategy: st})
		}
	case r.StrategyCode != nil:
		rules, err := strategy.ParseCode(*r.StrategyCode)
		if err != nil {
			return spec, strategyError(err)
		}
		spec.Rules = rules
	default:
		return spec, Errorf(http.StatusBadRequest, CodeValidation,
			"the body needs generatedStrategy (the object /generate answers) or strategy_code (e.g. %q)",
			"side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=100")
	}
	if r.Coin != "" {
		c, ok := store.ParseCoin(r.Coin)
		if !ok {
			return spec, Errorf(http.StatusBadRequest, CodeValidation, "coin %s is not one of BTC, ETH, SOL", quoteID(r.Coin)).With("field", "coin")
		}
		spec.Coin = c
	}
	if r.MarketType != "" {
		mt, ok := strategy.ParseMarketType(r.MarketType)
		if !ok {
			return spec, Errorf(http.StatusBadRequest, CodeValidation, "marketType %s is not one of 5m, 15m, 1h, 4h, 24h", quoteID(r.MarketType)).With("field", "marketType")
		}
		spec.MarketType = mt
	}
	if r.FeeModel != "" || r.FeeRate != nil || r.FeeExponent != nil || r.LatencyMs != nil {
		st := &spec.Strategy
		model, rate, exp := r.FeeModel, r.FeeRate, r.FeeExponent
		if model == "" && (rate != nil || exp != nil) && st.FeeModel == replay.FeeCustom {
			// A rate or an exponent alone tunes the strategy's own CUSTOM
			// fees, as a latencyMs alone replaces its latency; the part
			// not given is the strategy's.
			model = replay.FeeCustom
			if rate == nil {
				rate = st.FeeRate
			}
			if exp == nil && st.FeeExponent != 0 {
				e := float64(st.FeeExponent)
				exp = &e
			}
		}
		var costs replay.Strategy
		costs.SetCosts(model, rate, exp, r.LatencyMs)
		if err := costs.CheckCosts(); err != nil {
			var re *replay.Error
			errors.As(err, &re)
			return spec, replayError(re)
		}
		if model != "" {
			lat := float64(st.LatencyMs)
			st.SetCosts(model, rate, exp, &lat)
		}
		if r.LatencyMs != nil {
			var exp *float64
			if st.FeeExponent != 0 {
				e := float64(st.FeeExponent)
				exp = &e
			}
			st.SetCosts(st.FeeModel, st.FeeRate, exp, r.LatencyMs)
		}
	}
	if err := r.applyOrderSettings(&spec, hasObject); err != nil {
		return spec, err
	}
	if spec.Coin == "" {
		spec.Coin = store.BTC
	}
	if spec.MarketType == "" {
		spec.MarketType = store.M15
	}
	if err := spec.Normalize(); err != nil {
		var se *strategy.Error
		if hasObject && errors.As(err, &se) {
			err = se.In("generatedStrategy")
		}
		return spec, strategyError(err)
	}
	// A condition outside its field's range (price_up < 40, edited from
	// 0.4) is refused, not backtested as if it were the strategy meant;
	// of the seconds left, which the body's marketType may shorten, only
	// an entry that never holds or an exit that always holds is (an
	// entry's time_remaining_s <= 600 of a 15m strategy run on 5m is
	// "any time").
	if e := strategy.Untradable(spec.Rules); e != nil {
		if hasObject {
			return spec, strategyError(e.In("generatedStrategy"))
		}
		e.Field = "strategy_code"
		return spec, strategyError(e)
	}
	switch now := strategy.Describe(spec.Rules); {
	case spec.Explanation == "":
		spec.Explanation = now
	case hasObject && now != described:
		// The body's settings (orderType, reentryCooldownMs, fees, ...)
		// changed the rules: the object's explanation, which told the
		// old ones ("with LIMIT orders", "waits 30 s"), would contradict
		// the strategy answered and run. Its words of the rules are
		// told again, what it says beyond them kept, when they lead; an
		// explanation of its own words (a model's) is kept, and what the
		// settings changed is told after it.
		if rest, ok := strings.CutPrefix(spec.Explanation, described); ok && described != "" {
			spec.Explanation = now + rest
		} else {
			spec.Explanation = strings.TrimSpace(spec.Explanation) + " " + strategy.DescribeChange(described, now)
		}
	}
	return spec, nil
}

// applyOrderSettings puts /run's orderType and order settings into the
// strategy, after judging them on their own (400 naming the field) against
// the order type the strategy will have.
func (r *runRequest) applyOrderSettings(spec *strategy.Spec, hasObject bool) error {
	settings := r.orderSettings()
	if r.OrderType == "" && settings == (strategy.OrderSettings{}) {
		return nil
	}
	if r.OrderType != "" && !slices.Contains(replay.OrderTypes(), r.OrderType) {
		return strategyError(&strategy.Error{Code: replay.CodeInvalidOrderType, Field: "orderType",
			Message: fmt.Sprintf("orderType %s is not one of %s", quoteID(r.OrderType), strings.Join(replay.OrderTypes(), ", "))})
	}
	orderType := r.OrderType
	if orderType == "" {
		orderType = spec.Strategy.OrderType
	}
	if err := settings.Check(orderType); err != nil {
		return strategyError(err)
	}
	if hasObject {
		// Apply carries the object's whole-number rules over by value: one
		// it cannot carry (1.5, 0 entries) is refused first, by name.
		var re *replay.Error
		if err := spec.Strategy.Validate(); errors.As(err, &re) && slices.Contains(wholeOrderRules, re.Field) {
			return decodeError(re, "generatedStrategy")
		}
	}
	settings.Apply(&spec.Strategy, r.OrderType)
	return nil
}

// wholeOrderRules are the strategy's whole-number order rules.
var wholeOrderRules = []string{"reentryCooldownMs", "maxEntriesPerMarket", "limitOffsetTicks", "cancelAfterMs"}

func (s *Server) quota(ctx context.Context, _ *struct{}) (*aiOutput, error) {
	p := principalFrom(ctx)
	if err := aiAllowed(p); err != nil {
		return nil, err
	}
	period := monthStart(s.now())
	used, err := s.store.AIGenerationsUsed(ctx, p.Customer.ID, period)
	if err != nil {
		return nil, s.storeFailure(ctx, "count AI generations", err)
	}
	return s.success(ctx, quotaOf(used, p.Plan.AIGenerationsPerMonth, period))
}

// monthStart is the quota period containing t: the calendar month, UTC.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// quotaOf is the quota object; an unlimited plan (limit < 0) has null
// limit and remaining rather than a magic number.
func quotaOf(used, limit int, period time.Time) *backtest.Quota {
	q := &backtest.Quota{Used: used, ResetsAt: formatTime(period.AddDate(0, 1, 0))}
	if limit >= 0 {
		rem := max(0, limit-used)
		q.Limit, q.Remaining = &limit, &rem
	}
	return q
}

// quotaExceeded is 429 BACKTEST_AI_QUOTA_EXCEEDED with the quota and a
// Retry-After that says when the month turns.
func (s *Server) quotaExceeded(used, limit int, period time.Time) error {
	resets := period.AddDate(0, 1, 0)
	e := Errorf(http.StatusTooManyRequests, CodeAIQuotaExceeded,
		"the monthly Backtest AI quota is spent (%d of %d generations used); it resets at %s", used, limit, formatTime(resets)).
		With("used", used).With("limit", limit).With("resets_at", formatTime(resets))
	e.GetHeaders().Set("Retry-After", strconv.Itoa(int(math.Ceil(resets.Sub(s.now()).Seconds()))))
	return e
}

// strategyError answers a *strategy.Error with its code and field.
func strategyError(err error) error {
	var se *strategy.Error
	if !errors.As(err, &se) {
		return Errorf(http.StatusBadRequest, CodeValidation, "%s", err.Error())
	}
	e := &Error{Status: failureStatus(se.Code), Code: se.Code, Message: se.Message}
	if se.Field != "" {
		e = e.With("field", se.Field)
	}
	return e
}

// bodyError explains a JSON decoding failure of an agent body, naming the
// field (inside prefix, when given) with the replay code where one applies.
func bodyError(err error, prefix string) *Error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if prefix != "" {
			field = strings.TrimSuffix(prefix+"."+field, ".")
		}
		code := CodeValidation
		switch {
		case strings.HasSuffix(field, "side"):
			code = replay.CodeInvalidSide
		case strings.HasSuffix(field, "orderType"):
			code = replay.CodeInvalidOrderType
		case strings.HasSuffix(field, "].field"): // a condition's
			code = replay.CodeInvalidField
		case strings.HasSuffix(field, "].operator"):
			code = replay.CodeInvalidOperator
		}
		what := replay.JSONKind(te.Type)
		if what == "number" && strings.HasSuffix(field, "marketCount") {
			what = "whole number"
		}
		if field == "" { // the body itself, e.g. [] for {...}
			return Errorf(http.StatusBadRequest, CodeValidation, "the body must be a JSON %s, not a JSON %s", what, te.Value)
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && isFloat(te.Type) {
			// A number where a number goes, that a float64 cannot hold
			// (1e400): "must be a number, not a JSON number" misleads.
			return (&Error{Status: http.StatusBadRequest, Code: code,
				Message: field + " " + n + " is out of range: it is too large to be read as a number"}).With("field", field)
		}
		return (&Error{Status: http.StatusBadRequest, Code: code,
			Message: field + " must be " + replay.WithArticle(what) + ", not a JSON " + te.Value}).With("field", field)
	case errors.As(err, &se):
		return Errorf(http.StatusBadRequest, CodeValidation, "the body is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	}
	if prefix != "" {
		return Errorf(http.StatusBadRequest, CodeValidation, "%s could not be read: %s", prefix, err.Error()).With("field", prefix)
	}
	return Errorf(http.StatusBadRequest, CodeValidation, "the body could not be read: %s", err.Error())
}

// isFloat reports whether t, or what it points to, is a float type.
func isFloat(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32)
}

// Documentation of the bodies, for the OpenAPI document. The handlers
// decode with the jobs types; these mirror their JSON.

type backtestAIGenerateRequest struct {
	Prompt         string  `json:"prompt,omitempty" maxLength:"2000" doc:"The strategy idea in plain English; required unless a preset is given." example:"buy UP when price_up drops below 0.35, exit above 0.6 or with 20% left"`
	Preset         string  `json:"preset,omitempty" enum:"mean_reversion,dip_buying,momentum_entry,quick_scalp" doc:"A starting strategy, alone ({\"preset\":\"dip_buying\"}) or with a prompt, whose entry or exit conditions, when it has any, replace the preset's."`
	Coin           string  `json:"coin,omitempty" enum:"BTC,ETH,SOL" default:"BTC"`
	MarketType     string  `json:"marketType,omitempty" enum:"5m,15m,1h,4h,24h,1hr,4hr,24hr" default:"15m" doc:"4h and 24h are BTC only."`
	MarketCount    int     `json:"marketCount,omitempty" minimum:"1" maximum:"100" default:"10" doc:"Resolved markets /strategy backtests on (default 10). /generate checks it but does nothing else with it: generated_strategy and strategy_code do not carry it, and /run backtests its own marketCount (default 10)."`
	PositionSize   float64 `json:"positionSize,omitempty" minimum:"1" maximum:"10000" doc:"Shares per trade; wins over the prompt (default 100)."`
	MaxLossPercent float64 `json:"maxLossPercent,omitempty" minimum:"1" maximum:"100" doc:"Stop loss in percent of the entry cost; wins over the prompt."`
	OrderType      string  `json:"orderType,omitempty" enum:"MARKET,LIMIT,GTC" doc:"Wins over the prompt (default MARKET). GTC rests a maker order on the book (DESIGN 6); the resting-order settings need it."`
	FeeModel       string  `json:"feeModel,omitempty" enum:"NONE,MARKET,CUSTOM" doc:"Taker fees on every fill of every market, as POST /v1/replay counts them: MARKET the market's own schedule, CUSTOM feeRate and feeExponent. Wins over the prompt."`
	FeeRate        float64 `json:"feeRate,omitempty" minimum:"0" maximum:"1" doc:"CUSTOM only, and required there."`
	FeeExponent    int     `json:"feeExponent,omitempty" minimum:"1" maximum:"4" default:"1" doc:"CUSTOM only."`
	LatencyMs      int     `json:"latencyMs,omitempty" minimum:"0" maximum:"60000" default:"0" doc:"Order delay in milliseconds. Wins over the prompt."`
	OrderSettingsDoc
}

// OrderSettingsDoc documents, for the OpenAPI document only, the agent's
// settings of re-entry control and resting orders
// (strategy.OrderSettings). It is exported because Huma skips unexported
// embedded structs.
type OrderSettingsDoc struct {
	ReentryCooldownMs   int    `json:"reentryCooldownMs,omitempty" minimum:"0" maximum:"86400000" doc:"Milliseconds after an exit before the strategy may enter again; 0 for none. Generated strategies wait 30000 unless the prompt or this says otherwise."`
	MaxEntriesPerMarket int    `json:"maxEntriesPerMarket,omitempty" minimum:"1" maximum:"10000" doc:"At most this many entries in one market (default no limit)."`
	PostOnly            bool   `json:"postOnly,omitempty" doc:"GTC only: an order that would cross the book at activation is rejected instead of taking."`
	LimitOffsetTicks    int    `json:"limitOffsetTicks,omitempty" minimum:"0" maximum:"50" doc:"GTC only: a buy rests this many ticks above the best bid, a sell below the best ask (default 0)."`
	CancelAfterMs       int    `json:"cancelAfterMs,omitempty" minimum:"1" maximum:"86400000" doc:"GTC only: cancel a resting order this long after its signal (default: rests until filled or the market ends)."`
	QueueModel          string `json:"queueModel,omitempty" enum:"RISK_AVERSE,FRONT" doc:"GTC only: RISK_AVERSE (default) queues behind the displayed size at the order's price; FRONT at the front (the optimistic bound)."`
	IncludeRebates      bool   `json:"includeRebates,omitempty" doc:"GTC only (only maker fills earn rebates): count the estimated maker rebates in the pnl."`
}

type generatedStrategy struct {
	Side            string             `json:"side" enum:"UP,DOWN"`
	EntryConditions []replay.Condition `json:"entryConditions" doc:"All must hold to enter."`
	ExitConditions  []replay.Condition `json:"exitConditions" doc:"Any one exits."`
	PositionSize    float64            `json:"positionSize"`
	MaxLossPercent  float64            `json:"maxLossPercent"`
	OrderType       string             `json:"orderType" enum:"MARKET,LIMIT,GTC"`
	FeeModel        string             `json:"feeModel,omitempty" enum:"NONE,MARKET,CUSTOM" doc:"Present when the strategy counts fees (DESIGN 6)."`
	FeeRate         float64            `json:"feeRate,omitempty" minimum:"0" maximum:"1" doc:"CUSTOM only."`
	FeeExponent     int                `json:"feeExponent,omitempty" minimum:"1" maximum:"4" doc:"CUSTOM only."`
	LatencyMs       int                `json:"latencyMs,omitempty" minimum:"0" maximum:"60000" doc:"Present when orders are delayed."`
	OrderSettingsDoc
	Coin        string `json:"coin" enum:"BTC,ETH,SOL"`
	MarketType  string `json:"marketType" enum:"5m,15m,1hr,4hr,24hr"`
	Explanation string `json:"explanation"`
}

type backtestAIRunRequest struct {
	GeneratedStrategy *generatedStrategy `json:"generatedStrategy,omitempty" doc:"A strategy as /generate answers it (explanation optional). Give this or strategy_code."`
	StrategyCode      string             `json:"strategy_code,omitempty" doc:"A strategy code as /generate answers it." example:"coin=BTC type=15m side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET"`
	Coin              string             `json:"coin,omitempty" enum:"BTC,ETH,SOL" doc:"Backtest on this coin instead of the strategy's (default BTC when neither says)."`
	MarketType        string             `json:"marketType,omitempty" enum:"5m,15m,1h,4h,24h,1hr,4hr,24hr" doc:"Backtest on this market type instead of the strategy's (default 15m)."`
	MarketCount       int                `json:"marketCount,omitempty" minimum:"1" maximum:"100" default:"10" doc:"Resolved markets to backtest on (default 10). The strategy does not carry the marketCount given to /generate: give it here."`
	FeeModel          string             `json:"feeModel,omitempty" enum:"NONE,MARKET,CUSTOM" doc:"Taker fees on every fill of every market, as POST /v1/replay counts them: MARKET the market's own schedule, CUSTOM feeRate and feeExponent. Replaces the strategy's."`
	FeeRate           float64            `json:"feeRate,omitempty" minimum:"0" maximum:"1" doc:"CUSTOM only, and required there; alone, it replaces the rate of a strategy with CUSTOM fees."`
	FeeExponent       int                `json:"feeExponent,omitempty" minimum:"1" maximum:"4" default:"1" doc:"CUSTOM only; alone, it replaces the exponent of a strategy with CUSTOM fees."`
	LatencyMs         int                `json:"latencyMs,omitempty" minimum:"0" maximum:"60000" default:"0" doc:"Order delay in milliseconds. Replaces the strategy's."`
	OrderType         string             `json:"orderType,omitempty" enum:"MARKET,LIMIT,GTC" doc:"Replaces the strategy's; MARKET or LIMIT drops its resting-order fields."`
	OrderSettingsDoc
}

type backtestAIGenerateResponse struct {
	Success bool `json:"success"`
	Data    struct {
		GeneratedStrategy generatedStrategy `json:"generated_strategy"`
		StrategyCode      string            `json:"strategy_code"`
		Quota             backtest.Quota    `json:"quota"`
	} `json:"data"`
	Timestamp string `json:"timestamp" format:"date-time"`
}

type backtestAIBacktestResponse struct {
	Success bool `json:"success"`
	Data    struct {
		GeneratedStrategy generatedStrategy       `json:"generated_strategy"`
		StrategyCode      string                  `json:"strategy_code"`
		Aggregate         backtest.Aggregate      `json:"aggregate"`
		Results           []backtest.MarketResult `json:"results" doc:"Newest market first: its performance, or the error that stopped its replay."`
		Quota             *backtest.Quota         `json:"quota" doc:"The monthly generation quota: /strategy after its generation, /run as it is (/run uses none)."`
		Warning           *string                 `json:"warning" nullable:"true" doc:"Set when fewer resolved markets than marketCount (or its default) were in the plan's data window, saying how many were asked for and how many were tested; null otherwise."`
	} `json:"data"`
	Timestamp string `json:"timestamp" format:"date-time"`
}

type backtestAIQuotaResponse struct {
	Success   bool           `json:"success"`
	Data      backtest.Quota `json:"data"`
	Timestamp string         `json:"timestamp" format:"date-time"`
}
