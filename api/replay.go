package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/gzjoin"
	"github.com/updown/updown/jobs/jsonenc"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
	"github.com/updown/updown/worker"
)

// JobRunner runs work on the workers and waits for it; worker.Client is
// the implementation.
type JobRunner interface {
	Run(ctx context.Context, j worker.Job, owner string, wait time.Duration) (jobs.Outcome, string, error)
	Status(ctx context.Context, id, owner string) (worker.JobState, error)
}

// Codes of the replay path (SPEC 7, DESIGN 7).
const (
	CodeTierRequired   = "TIER_REQUIRED"
	CodeMarketNotFound = "MARKET_NOT_FOUND"
	CodeJobTimeout     = "JOB_TIMEOUT"
)

// failureStatus maps a code a job can answer with to its HTTP status.
func failureStatus(code string) int {
	switch code {
	case CodeMarketNotFound, replay.CodeNoData, "NO_BACKTEST_MARKETS", CodeNotFound:
		return http.StatusNotFound
	case CodeInternal:
		return http.StatusInternalServerError
	case CodeServiceUnavailable:
		// The job's store was down on every attempt, or did not answer
		// a replay's query within the worker's bound (frozen: answered
		// at the first attempt, see worker.Config.QueryTimeout).
		return http.StatusServiceUnavailable
	case "AI_STRATEGY_GENERATION_FAILED":
		return http.StatusBadGateway
	case CodeTierRequired, CodeTierAccessDenied:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// Operations that answer a job's result read the request's
// Accept-Encoding (AcceptEncoding, hidden from the OpenAPI document:
// responses are compressed by the middleware all the same) so that a
// result the worker deflated goes to a client that takes gzip without
// being inflated (jobAnswer).
type replayInput struct {
	ContentType    string `header:"Content-Type"`
	AcceptEncoding string `header:"Accept-Encoding" hidden:"true"`
	RawBody        []byte
}

// takesGzip reports whether an Accept-Encoding accepts gzip (RFC 9110
// 12.5.3): "gzip" (or its alias "x-gzip") with a q-value above zero, or,
// when neither is named, "*" with one.
func takesGzip(acceptEncoding string) bool {
	named, star := -1.0, -1.0 // the q-values given; -1: none
	for _, c := range strings.Split(acceptEncoding, ",") {
		coding, params, _ := strings.Cut(c, ";")
		q := qValue(params)
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip", "x-gzip":
			named = max(named, q)
		case "*":
			star = max(star, q)
		}
	}
	if named >= 0 {
		return named > 0
	}
	return star > 0
}

// qValue is the weight (RFC 9110 12.4.2) among the ";"-separated
// parameters of one element of an Accept or Accept-Encoding header: its q,
// 1 when it names none, and a q that is not a number from 0 to 1 is taken
// as 1.
func qValue(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
				return f
			}
		}
	}
	return 1
}

// successBody is the {success, data, timestamp} wrapper of job answers.
// Data is the job's result as the worker encoded it.
type successBody struct {
	Success   bool            `json:"success"`
	Data      json.RawMessage `json:"data"`
	Timestamp string          `json:"timestamp"`
	// deflated, when set, replaces Data: the body is then written as one
	// gzip member around the result's DEFLATE blocks, for a response whose
	// Content-Encoding is gzip (jobAnswer).
	deflated *gzjoin.Deflated
}

// WriteTo writes the body as encoding/json would, newline included, but
// with Data as it is: a worker encoded it, and a 24hr replay's result runs
// to megabytes that encoding/json would scan and copy again.
func (b successBody) WriteTo(w io.Writer) (int64, error) {
	head, tail := b.frame()
	if b.deflated != nil {
		return gzjoin.WriteMember(w, head, *b.deflated, tail)
	}
	data := []byte(b.Data)
	if len(data) == 0 {
		data = []byte("null")
	}
	var n int64
	for _, p := range [][]byte{head, data, tail} {
		m, err := w.Write(p)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// frame returns what is written before and after the data.
func (b successBody) frame() (head, tail []byte) {
	head = make([]byte, 0, 32)
	head = append(head, `{"success":`...)
	head = strconv.AppendBool(head, b.Success)
	head = append(head, `,"data":`...)
	tail = jsonenc.AppendString(append(make([]byte, 0, 48), `,"timestamp":`...), b.Timestamp)
	tail = append(tail, "}\n"...)
	return head, tail
}

// jobAnswer is the body of a finished job's answer. A result the worker
// deflated goes to a client that takes gzip as it is, in one gzip member
// (a 24hr replay's megabytes are then never inflated nor compressed
// again here), and encoding is "gzip"; any other client gets it inflated.
func (s *Server) jobAnswer(ctx context.Context, o jobs.Outcome, acceptEncoding string) (body successBody, encoding *string, err error) {
	body = successBody{Success: true, Timestamp: formatTime(s.now())}
	if o.Deflated != nil && takesGzip(acceptEncoding) {
		body.deflated = o.Deflated
		gz := "gzip"
		return body, &gz, nil
	}
	if body.Data, err = o.Data(); err != nil {
		return body, nil, s.internal(ctx, "read job result", err)
	}
	return body, nil, nil
}

type replayOutput struct {
	ContentEncoding *string `header:"Content-Encoding"`
	Body            successBody
}

// replayResponseDoc documents the replay answer.
type replayResponseDoc struct {
	Success   bool          `json:"success"`
	Data      replay.Result `json:"data"`
	Timestamp string        `json:"timestamp" format:"date-time"`
}

type jobInput struct {
	ID             string `path:"id" doc:"Job id from a 504 JOB_TIMEOUT answer's details.job_id."`
	AcceptEncoding string `header:"Accept-Encoding" hidden:"true"`
}

type jobOutput struct {
	Status          int
	ContentEncoding *string `header:"Content-Encoding"`
	Body            successBody
}

func (s *Server) registerReplay() {
	reqSchema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[replayRequest](), true, "ReplayRequest")
	respSchema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[replayResponseDoc](), true, "ReplayResponse")
	huma.Register(s.api, huma.Operation{
		OperationID: "replay",
		Method:      http.MethodPost,
		Path:        "/v1/replay",
		Summary:     "Replay a strategy against a resolved market",
		Description: "Evaluates every snapshot oldest first, walks the recorded order book for fills and reports trades, PnL, drawdown, slippage and an equity curve. " +
			"Runs on the workers; the answer is synchronous. A replay that outlasts the wait answers 504 JOB_TIMEOUT with details.job_id for GET /v1/jobs/{id}.",
		Tags:     []string{"Replay"},
		Security: []map[string][]string{{schemeAPIKey: {}}},
		RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: reqSchema,
			Examples: map[string]*huma.Example{
				"plain": {Summary: "Buy UP under 0.35 while 20% of the market is left; sell at 0.6", Value: replayExample(false)},
				"costs": {Summary: "The same with Polymarket's taker fees and a 250 ms order delay", Value: replayExample(true)},
			}}}},
		Responses: jsonResponse("Replay result", respSchema),
		Errors:    []int{400, 401, 403, 404, 413, 415, 429, 500, 503, 504},
		// The handler validates the body itself, to answer SPEC 7's replay
		// codes (INVALID_SIDE, ...) rather than a generic schema error.
		SkipValidateBody: true,
		// Huma bounds only operations with a Body field; say the bound here
		// so an oversized body is 413, not a failed read.
		MaxBodyBytes: maxBodyBytes,
	}, s.replay)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-job",
		Method:      http.MethodGet,
		Path:        "/v1/jobs/{id}",
		Summary:     "Fetch a job that outlasted its request",
		Description: "202 with {id, state} while the job runs; once done, the very answer the original request would have given. " +
			"The job answers to its owner, with the credentials that made the request: an X-API-Key, or the bearer token of an agent request.",
		Tags:     []string{"Replay"},
		Security: []map[string][]string{{schemeAPIKey: {}}, {schemeBearer: {}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "The job's answer", Content: map[string]*huma.MediaType{"application/json": {Schema: respSchema}}},
			"202": {Description: "Still running: data is {id, state}"},
		},
		Errors: []int{400, 401, 404, 429, 500, 502, 503},
	}, s.getJob)
}

func (s *Server) replay(ctx context.Context, in *replayInput) (*replayOutput, error) {
	p := principalFrom(ctx)
	if !p.Plan.Replay {
		e := tierDenied(p.Plan, store.Pro, "strategy replay needs the PRO, PRO_TRIAL or ENTERPRISE plan; yours is %s", p.Plan.Tier)
		e.Code = CodeTierRequired
		return nil, e
	}
	if err := requireJSON(in.ContentType); err != nil {
		return nil, err
	}
	req, err := decodeReplayRequest(in.RawBody)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, s.internal(ctx, "encode replay payload", err)
	}
	job := worker.Job{Type: jobs.TypeReplay, Queue: jobs.QueueReplay, Payload: payload}
	// The caller's slot of jobs in flight is taken while the market is
	// read, the Redis round trip beside the store's: under the request's
	// id, since the job's id waits on the market's version (a corrected
	// winner makes a new job). Identical requests still share their slot;
	// two of them across a correction of their market share one too. A
	// request the checks below refuse gives its slot back.
	slotID := job.ID()
	var slot heldSlot
	var slotErr error
	var taken chan struct{}
	if s.cfg.Jobs != nil {
		taken = make(chan struct{})
		go func() {
			defer close(taken)
			slot.id = slotID
			slot.release, slot.added, slotErr = s.takeJobSlot(ctx, p, slotID, s.cfg.JobWait)
		}()
	}
	// The market and its data's counts are read together, once: for a
	// strategy that reads trades, with its trades and gaps (its
	// store.DataVersion) side by side; else its snapshots' counts alone, in
	// one round trip to a store that can (store.MarketSeriesCounter), else
	// side by side. The counts are used only once the market is known to
	// exist and to be the caller's. The store itself, not its gate of
	// heavy reads (both are light), so that the store's own way is seen.
	var m store.Market
	var sc store.SeriesCount
	var dv *store.DataVersion
	if req.Strategy.Needs().Trades {
		var v store.DataVersion
		m, v, err = store.GetMarketVersion(ctx, s.cfg.Store, req.MarketSlug)
		dv, sc = &v, v.SeriesCount
	} else {
		m, sc, err = store.GetMarketSeries(ctx, s.cfg.Store, req.MarketSlug)
	}
	n := sc.N
	if taken != nil {
		<-taken
	}
	// A refused request gives back only a slot it added: an identical
	// request's job may be running on one it found (a 504 that keeps its
	// slot), and a client hanging up must not free that.
	refuse := func(err error) (*replayOutput, error) {
		if slot.release != nil && slot.added {
			slot.release()
		}
		return nil, err
	}
	if errors.Is(err, store.ErrNotFound) {
		return refuse(Errorf(http.StatusNotFound, CodeMarketNotFound, "market %s does not exist", quoteID(req.MarketSlug)).With("field", "marketSlug"))
	}
	if err != nil {
		return refuse(s.storeFailure(ctx, "get market", err))
	}
	if err := s.checkMarketAccess(ctx, p.Plan, m); err != nil {
		return refuse(err)
	}
	if !m.Resolved() {
		return refuse(Errorf(http.StatusBadRequest, replay.CodeMarketNotResolved, "market %q is not resolved yet: only resolved markets can be replayed", m.Slug).With("field", "marketSlug"))
	}
	if n == 0 {
		return refuse(Errorf(http.StatusNotFound, replay.CodeNoData, "market %q is resolved but has no recorded snapshots (a collector gap)", m.Slug).With("field", "marketSlug"))
	}
	// A result is reused only for the market as it is now: a corrected
	// winner (or any other change of its record), snapshots added (a late
	// flush, an archive import) or dropped make a new job, and so do
	// trades added and gaps changed (a backfill) for a strategy that reads
	// them (store.DataVersion). The record alone would not do: appends
	// leave it as it is. The worker is sent (sc) the very counts the
	// version names, so that its tape (its cache's key) is the data the
	// version labels.
	job.Version = m.UpdatedAt.UTC().Format(time.RFC3339Nano) + "/"
	switch {
	case dv != nil:
		job.Version += dv.String()
	case sc.Dropped > 0:
		// A drop of old months and as many snapshots imported again
		// leave n as it was, not the count of those dropped (read with
		// it). Without a drop the version is as it always was, so that
		// results kept before this is known stay in use.
		job.Version += strconv.Itoa(n) + "/dropped" + strconv.Itoa(sc.Dropped)
	default:
		job.Version += strconv.Itoa(n)
	}
	// The worker replays the market as read here, without reading it
	// again; without the headers it reads the market itself.
	if job.Headers, err = worker.MarketHeaders(m, sc); err != nil {
		s.log.WarnContext(ctx, "the market goes to the worker unread: encoding it failed", "request_id", RequestID(ctx), "market", m.Slug, "err", err)
		job.Headers = nil
	}
	var o jobs.Outcome
	switch {
	case s.cfg.Jobs == nil:
		o, err = s.runJobThen(ctx, job, p, nil) // 503: no queue
	case slotErr != nil:
		// 429: the caller's jobs in flight are at its cap. The answer of
		// this very job, finished and kept, takes no job to give. (A 503,
		// Redis unreachable, is answered at once: the look would wait on
		// the same Redis.)
		var e *Error
		if errors.As(slotErr, &e) && e.Status == http.StatusTooManyRequests {
			if done, ok := s.finishedJob(ctx, job, p); ok {
				o = done
				break
			}
		}
		err = slotErr
	default:
		o, err = s.runHolding(ctx, job, p, slot, func(*jobs.Outcome) {})
	}
	if err != nil {
		return nil, err
	}
	body, enc, err := s.jobAnswer(ctx, o, in.AcceptEncoding)
	if err != nil {
		return nil, err
	}
	return &replayOutput{ContentEncoding: enc, Body: body}, nil
}

// finishedJob returns the outcome of j when j has finished (completed, not
// failed: a failed job is run again) and its answer is kept for the
// caller, who asked for it before.
func (s *Server) finishedJob(ctx context.Context, j worker.Job, p principal) (jobs.Outcome, bool) {
	st, err := s.cfg.Jobs.Status(ctx, j.ID(), p.Customer.ID)
	if err != nil || st.State != "completed" || st.Outcome == nil {
		return jobs.Outcome{}, false
	}
	return *st.Outcome, true
}

// runJob runs a job on the workers for the caller and turns its outcome
// into a result or an API error.
func (s *Server) runJob(ctx context.Context, j worker.Job, p principal) (json.RawMessage, error) {
	o, err := s.runJobThen(ctx, j, p, nil)
	if err != nil {
		return nil, err
	}
	data, err := o.Data()
	if err != nil {
		return nil, s.internal(ctx, "read job result", err)
	}
	return data, nil
}

// notQueued is the outcome runJobThen reports for a job that never
// reached the queue.
var notQueued = &jobs.Outcome{Failure: &jobs.Failure{Code: CodeServiceUnavailable, Message: "the job was not queued"}}

// runJobThen is runJob answering the outcome as it came (its result
// perhaps still deflated), holding one of the caller's slots of jobs in
// flight (jobcap.go) for as long as the job runs. done, when set, is
// called once with the job's final outcome: before runJobThen returns
// when the wait saw the job end, or when the job never reached the queue
// (notQueued); else, after a 504, later from a watcher, with nil when the
// outcome never became known.
//
// The wait does not end when the client goes away: the job runs on
// either way, so its slot stays taken and its outcome settles what it
// must (a generation's quota) exactly as if the client had stayed, and a
// client cannot shed its jobs' slots by hanging up.
func (s *Server) runJobThen(ctx context.Context, j worker.Job, p principal, done func(*jobs.Outcome)) (jobs.Outcome, error) {
	if done == nil {
		done = func(*jobs.Outcome) {}
	}
	slot, err := s.jobSlot(ctx, j, p)
	if err != nil {
		// 429: the caller's jobs in flight are at its cap. The answer of
		// this very job, finished and kept, takes no job to give (as a
		// replay's).
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusTooManyRequests {
			if o, ok := s.finishedJob(ctx, j, p); ok {
				done(&o)
				return o, outcomeFailure(o)
			}
		}
		done(notQueued)
		return jobs.Outcome{}, err
	}
	return s.runHolding(ctx, j, p, slot, done)
}

// jobSlot takes the caller's slot of jobs in flight for j (jobcap.go): a
// 429 at the plan's cap, a 503 without a job queue.
func (s *Server) jobSlot(ctx context.Context, j worker.Job, p principal) (heldSlot, error) {
	if s.cfg.Jobs == nil {
		return heldSlot{}, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "no job queue is configured")
	}
	release, _, err := s.takeJobSlot(ctx, p, j.ID(), s.cfg.JobWait)
	return heldSlot{id: j.ID(), release: release}, err
}

// waitUntilKey is the context key of when a request's waits on its jobs
// end (withWaitUntil).
type waitUntilKey struct{}

// withWaitUntil bounds the waits of a request that runs jobs one after
// the other (/strategy: a generation, then its backtest): together they
// end at t, so that the request answers within JobWait (504 with the job
// id of the one it was waiting on), as every other request does, rather
// than within JobWait for each.
func withWaitUntil(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, waitUntilKey{}, t)
}

// jobWait is how long the request may wait for its next job: JobWait, or
// what is left of its wait (withWaitUntil); a request with nothing left
// queues the job and answers 504 with its id at once.
func (s *Server) jobWait(ctx context.Context) time.Duration {
	wait := s.cfg.JobWait
	if t, ok := ctx.Value(waitUntilKey{}).(time.Time); ok {
		wait = min(wait, time.Until(t))
	}
	return max(wait, time.Nanosecond)
}

// runHolding is runJobThen for a job whose slot the caller holds already
// (a replay's, taken while its market was read); done is not nil.
func (s *Server) runHolding(ctx context.Context, j worker.Job, p principal, slot heldSlot, done func(*jobs.Outcome)) (jobs.Outcome, error) {
	release := slot.release
	started := time.Now()
	wait := s.jobWait(ctx)
	o, id, err := s.cfg.Jobs.Run(context.WithoutCancel(ctx), j, p.Customer.ID, wait)
	var te *worker.TimeoutError
	switch {
	case errors.As(err, &te):
		// The job goes on without its request.
		go s.watchJob(p, id, jobBound(j), slot, done)
		why := "the job did not finish within " + s.cfg.JobWait.String()
		if wait < s.cfg.JobWait {
			why = "the job did not finish within what was left of the request's wait of " + s.cfg.JobWait.String()
		}
		if waited := time.Since(started); waited < wait {
			// The wait was cut short: this api process is stopping
			// (worker.Client.StopWaiting), and answers before it exits.
			why = "this server is shutting down and stopped waiting for the job after " + waited.Round(time.Second).String()
		}
		return jobs.Outcome{}, Errorf(http.StatusGatewayTimeout, CodeJobTimeout,
			"%s; it goes on: fetch its result with GET /v1/jobs/%s", why, id).With("job_id", id)
	case err != nil:
		if release != nil {
			release()
		}
		done(notQueued)
		if !s.clientWentAway(ctx, "run job "+id, err) {
			s.log.ErrorContext(ctx, "run job", "request_id", RequestID(ctx), "job_id", id, "err", err)
		}
		return jobs.Outcome{}, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "the job queue is unavailable; retry with backoff (request id %s)", RequestID(ctx))
	}
	if release != nil {
		release()
	}
	done(&o)
	return o, outcomeFailure(o)
}

// outcomeFailure is the API error of a job that failed, else nil.
func outcomeFailure(o jobs.Outcome) error {
	if o.Failure != nil {
		return &Error{Status: failureStatus(o.Failure.Code), Code: o.Failure.Code, Message: o.Failure.Message}
	}
	return nil
}

func (s *Server) getJob(ctx context.Context, in *jobInput) (*jobOutput, error) {
	if s.cfg.Jobs == nil {
		return nil, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "no job queue is configured")
	}
	st, err := s.cfg.Jobs.Status(ctx, in.ID, principalFrom(ctx).Customer.ID)
	if errors.Is(err, worker.ErrJobNotFound) {
		return nil, Errorf(http.StatusNotFound, CodeNotFound, "job %s not found (unknown, expired, or not yours)", clip(in.ID))
	}
	if err != nil {
		if !s.clientWentAway(ctx, "job status "+in.ID, err) {
			s.log.ErrorContext(ctx, "job status", "request_id", RequestID(ctx), "job_id", in.ID, "err", err)
		}
		return nil, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "the job queue is unavailable; retry with backoff")
	}
	now := formatTime(s.now())
	if st.Outcome == nil {
		data, _ := json.Marshal(map[string]string{"id": st.ID, "state": st.State})
		return &jobOutput{Status: http.StatusAccepted, Body: successBody{Success: true, Data: data, Timestamp: now}}, nil
	}
	generation := strings.HasPrefix(in.ID, jobs.QueueAI+"-")
	if err := outcomeFailure(*st.Outcome); err != nil {
		if generation {
			err = promptRefused(err)
		} else {
			err = s.paidStrategyKept(ctx, err, st)
		}
		return nil, err
	}
	if generation {
		// A generation: answer as /generate would have.
		data, err := st.Outcome.Data()
		if err != nil {
			return nil, s.internal(ctx, "read job result", err)
		}
		if data, err = s.generatedAnswer(ctx, principalFrom(ctx), data, st.Headers); err != nil {
			return nil, err
		}
		return &jobOutput{Status: http.StatusOK, Body: successBody{Success: true, Data: data, Timestamp: now}}, nil
	}
	body, enc, err := s.jobAnswer(ctx, *st.Outcome, in.AcceptEncoding)
	if err != nil {
		return nil, err
	}
	return &jobOutput{Status: http.StatusOK, ContentEncoding: enc, Body: body}, nil
}

// requireJSON answers 415 unless the body is declared JSON.
func requireJSON(contentType string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != "application/json" && !(len(mt) > 5 && mt[len(mt)-5:] == "+json")) {
		got := contentType
		if got == "" {
			got = "none"
		}
		return Errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "Content-Type must be application/json (got %s)", clip(got))
	}
	return nil
}

// decodeReplayRequest decodes and validates a replay body, answering the
// replay codes of SPEC 7 (INVALID_SIDE before VALIDATION_ERROR).
func decodeReplayRequest(body []byte) (replay.Request, error) {
	var req replay.Request
	if len(body) == 0 {
		return req, Errorf(http.StatusBadRequest, CodeValidation, "the request body is empty: send the replay request as JSON")
	}
	var re *replay.Error
	if err := json.Unmarshal(body, &req); errors.As(err, &re) {
		return req, replayError(re)
	} else if err != nil {
		return req, bodyError(err, "")
	}
	if err := req.Normalize(); err != nil {
		if errors.As(err, &re) {
			return req, replayError(re)
		}
		return req, Errorf(http.StatusBadRequest, CodeValidation, "%s", err.Error())
	}
	return req, nil
}

// replayError answers a replay validation problem with its code and field.
func replayError(re *replay.Error) *Error {
	e := &Error{Status: http.StatusBadRequest, Code: re.Code, Message: re.Message}
	if re.Field != "" {
		e = e.With("field", clip(re.Field))
	}
	return e
}

// Documentation of the replay body, for the OpenAPI document: the handler
// decodes with replay.Request, whose JSON this mirrors, and answers SPEC 7's
// codes itself (the schema is not used to validate).

type replayCondition struct {
	Field    string  `json:"field" enum:"price_up,price_down,coin_price,spread,time_remaining_pct,bid_up,bid_down,mid_up,mid_down,display_up,display_down,coin_move_pct,time_remaining_s,coin_return_60s,imbalance_up,imbalance_down" example:"price_up" doc:"What the condition reads at each snapshot. price_up/price_down: the outcome's recorded price (its best ask, 0 to 1). coin_price: the coin's price. spread: |price_up − price_down|. time_remaining_pct: percent of the market's window left. bid_up/bid_down: the best bid (the price a sale gets now; the recorded price without a bid). mid_up/mid_down: (best bid + best ask) / 2 (the recorded price without both). display_up/display_down: the price polymarket.com shows: the mid when the spread is at most 0.10, else the last trade of that outcome, else the mid. coin_move_pct: 100 × (coin_price − price to beat) / price to beat (the market's price_to_beat, else coin_price_start, else the first snapshot's coin price); at or above 0 exactly while Up is winning. time_remaining_s: seconds to end_time. coin_return_60s: the coin's percent change over the last 60 s (no value in the first 60 s). imbalance_up/imbalance_down: (Σ bid sizes − Σ ask sizes) / (Σ bid sizes + Σ ask sizes) over the outcome's recorded levels, −1 to 1. A field with no value at a snapshot makes its conditions false there."`
	Operator string  `json:"operator" enum:"<,>,<=,>=,==,crosses_above,crosses_below" example:"<" doc:"== compares within 1e-9; crosses_above/crosses_below compare with the previous snapshot (nothing crosses on the first)."`
	Value    float64 `json:"value" example:"0.35" doc:"The number the field is compared with. Required."`
}

type replayRequest struct {
	MarketSlug      string            `json:"marketSlug" minLength:"1" example:"btc-updown-15m-1764000000" doc:"A resolved market's slug."`
	Side            string            `json:"side" enum:"UP,DOWN" example:"UP" doc:"The token to buy (case-sensitive)."`
	EntryConditions []replayCondition `json:"entryConditions" nullable:"false" minItems:"1" maxItems:"20" doc:"All must hold to enter."`
	ExitConditions  []replayCondition `json:"exitConditions" nullable:"false" minItems:"1" maxItems:"20" doc:"Any one exits."`
	PositionSize    float64           `json:"positionSize" minimum:"1" maximum:"10000" example:"100" doc:"Shares per trade."`
	MaxLossPercent  float64           `json:"maxLossPercent,omitempty" minimum:"1" maximum:"100" default:"50" doc:"Exit (MAX_LOSS, at MARKET) once the open position has lost this percent of its entry cost, fees included."`
	OrderType       string            `json:"orderType,omitempty" enum:"MARKET,LIMIT,GTC" default:"MARKET" doc:"MARKET walks the book. LIMIT is immediate-or-cancel: an entry buys only asks at or under the signal's price (its best ask), an exit sells the whole position at or over the best bid or nothing. GTC rests a maker order on the book (a BUY at the best bid, a SELL at the best ask, moved by limitOffsetTicks) that fills at its limit, with no fee, once recorded trades at or through the limit have worked off the queue ahead of it or the book crosses it; MAX_LOSS exits are always MARKET."`
	FeeModel        string            `json:"feeModel,omitempty" enum:"NONE,MARKET,CUSTOM" default:"NONE" doc:"Taker fees on every fill, shares × rate × (p(1−p))^exponent, rounded down to 5 decimals: MARKET uses the market's recorded schedule (Polymarket's crypto markets: rate 0.07, exponent 1), CUSTOM feeRate and feeExponent. Every answer carries each trade's fee (0 under NONE) and performance total_fees, whether or not the request names a fee model."`
	FeeRate         float64           `json:"feeRate,omitempty" minimum:"0" maximum:"1" example:"0.07" doc:"CUSTOM only, and required there."`
	FeeExponent     int               `json:"feeExponent,omitempty" minimum:"1" maximum:"4" default:"1" doc:"CUSTOM only."`
	LatencyMs       int               `json:"latencyMs,omitempty" minimum:"0" maximum:"60000" default:"0" doc:"Order delay: a decision on one snapshot executes on the first snapshot at least this many milliseconds later, against its book; price and slippage stay relative to the deciding snapshot."`

	ReentryCooldownMs   int    `json:"reentryCooldownMs,omitempty" minimum:"0" maximum:"86400000" default:"0" example:"30000" doc:"No entry is decided until this many milliseconds after the last exit."`
	MaxEntriesPerMarket int    `json:"maxEntriesPerMarket,omitempty" minimum:"1" maximum:"10000" example:"3" doc:"At most this many entries in the market; left out, no limit."`
	PostOnly            bool   `json:"postOnly,omitempty" default:"false" doc:"GTC only: an order that would cross the book when it goes live is rejected instead of taking liquidity."`
	LimitOffsetTicks    int    `json:"limitOffsetTicks,omitempty" minimum:"0" maximum:"50" default:"0" doc:"GTC only: ticks inside the spread from the best bid (a BUY, capped at 1 − tick) or the best ask (a SELL, floored at one tick)."`
	CancelAfterMs       int    `json:"cancelAfterMs,omitempty" minimum:"1" maximum:"86400000" doc:"GTC only: cancel an order still resting this many milliseconds after its decision (plus latencyMs); left out, it rests until filled or the market ends."`
	QueueModel          string `json:"queueModel,omitempty" enum:"RISK_AVERSE,FRONT" default:"RISK_AVERSE" doc:"GTC only: RISK_AVERSE puts the order behind the size shown at its price when it goes live (and never further back than the book later shows); FRONT at the front of the queue, the optimistic bound."`
	TradesOffset        int    `json:"tradesOffset,omitempty" minimum:"0" maximum:"1000000" doc:"Page through the trade events of a replay whose answer lists some only (trades_truncated): list the events from this one on (0 is the first). Each page replays the market again; the replay is deterministic, so pages fit together."`
	TradesLimit         int    `json:"tradesLimit,omitempty" minimum:"1" maximum:"1000" doc:"With tradesOffset: at most this many events (default 1000). Without either, an answer lists at most 1,000 events: the first and the last 500."`
	IncludeRebates      bool   `json:"includeRebates,omitempty" default:"false" doc:"GTC only (only maker fills earn rebates): count the estimated maker rebates (the market's maker_rebate_rate of the taker fee a maker fill would have paid) in the pnl; they are always reported in total_maker_rebates."`

	// The Backtest AI agent's generated_strategy, with a marketSlug added,
	// replays as it is (replay.DescriptiveKeys).
	Coin        string `json:"coin,omitempty" enum:"BTC,ETH,SOL" doc:"As generated_strategy carries it: taken and ignored (the replay runs on marketSlug's market)."`
	MarketType  string `json:"marketType,omitempty" enum:"5m,15m,1hr,4hr,24hr" doc:"As generated_strategy carries it: taken and ignored."`
	Explanation string `json:"explanation,omitempty" doc:"As generated_strategy carries it: taken and ignored."`
}

// replayExample is a body that passes validation (its slug is a shape;
// take a real one from GET /v1/markets?resolved=true).
func replayExample(withCosts bool) map[string]any {
	ex := map[string]any{
		"marketSlug": "btc-updown-15m-1764000000",
		"side":       "UP",
		"entryConditions": []map[string]any{
			{"field": "price_up", "operator": "<", "value": 0.35},
			{"field": "time_remaining_pct", "operator": ">", "value": 20},
		},
		"exitConditions": []map[string]any{{"field": "price_up", "operator": ">=", "value": 0.6}},
		"positionSize":   100,
		"maxLossPercent": 25,
		"orderType":      "MARKET",
	}
	if withCosts {
		ex["feeModel"], ex["latencyMs"] = "MARKET", 250
	}
	return ex
}

// jobRunningDoc documents the 202 of GET /v1/jobs/{id}.
type jobRunningDoc struct {
	Success bool `json:"success"`
	Data    struct {
		ID    string `json:"id" doc:"The job's id."`
		State string `json:"state" doc:"The queue's state of the job (Asynq's: pending, active, retry, scheduled)."`
	} `json:"data"`
	Timestamp string `json:"timestamp" format:"date-time"`
}

// documentJobs documents GET /v1/jobs/{id}'s answers once every job's
// answer has its schema: a job is a replay's or the Backtest AI agent's
// (/generate, /strategy, /run), and its 200 is the very answer that
// request gives.
func documentJobs(doc *huma.OpenAPI) {
	item := doc.Paths["/v1/jobs/{id}"]
	if item == nil || item.Get == nil {
		return
	}
	schemas := doc.Components.Schemas
	ref := func(t reflect.Type) *huma.Schema {
		return &huma.Schema{Ref: schemas.Schema(t, true, "").Ref}
	}
	done := &huma.Schema{OneOf: []*huma.Schema{ref(reflect.TypeFor[replayResponseDoc]()), ref(reflect.TypeFor[backtestAIBacktestResponse]()),
		ref(reflect.TypeFor[backtestAIGenerateResponse]())},
		Description: "A replay's answer (POST /v1/replay) or the Backtest AI agent's (POST /v1/backtest-ai/generate, /strategy or /run), as the job's request would have answered."}
	item.Get.Responses["200"] = &huma.Response{Description: "The job's answer",
		Content: map[string]*huma.MediaType{"application/json": {Schema: done}}}
	item.Get.Responses["202"] = &huma.Response{Description: "Still running",
		Content: map[string]*huma.MediaType{"application/json": {Schema: schemas.Schema(reflect.TypeFor[jobRunningDoc](), true, "JobRunning")}}}
}
