package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/sweep"
	"github.com/updown/updown/jobs/transfer"
	"github.com/updown/updown/store"
)

// SweepQueue puts a sweep's shards on the workers' sweeps queue
// (worker.Client).
type SweepQueue interface {
	EnqueueSweep(ctx context.Context, shards []sweep.ShardTask) error
}

// sweepLimits are the plan's sweep sizes (DESIGN 14), the customer's own
// where it set them (customerPlan).
func sweepLimits(p Plan) sweep.Limits {
	return p.SweepSizes
}

type sweepInput struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

type sweepIDInput struct {
	ID string `path:"id" doc:"The sweep's id (sweep_id)."`
}

type sweepListInput struct {
	Limit  int `query:"limit" minimum:"1" maximum:"100" default:"20"`
	Offset int `query:"offset" minimum:"0" default:"0"`
}

type sweepTrialsInput struct {
	ID     string `path:"id" doc:"The sweep's id (sweep_id)."`
	Limit  int    `query:"limit" minimum:"1" maximum:"1000" default:"100"`
	Offset int    `query:"offset" minimum:"0" default:"0"`
	Accept string `header:"Accept" hidden:"true"`
}

// sweepProgress is how far a sweep has come.
type sweepProgress struct {
	ReplaysDone  int      `json:"replays_done"`
	ReplaysTotal int      `json:"replays_total"`
	ETASeconds   *float64 `json:"eta_seconds" doc:"Seconds to the end at the pace so far; null before the first shard, once finished, and while the sweep is past the end its pace foretold (a shard held up, such as one whose worker stopped)."`
}

// sweepJSON is a sweep as the api answers it.
type sweepJSON struct {
	SweepID    string          `json:"sweep_id"`
	Status     string          `json:"status" enum:"QUEUED,RUNNING,DONE,FAILED,CANCELLED"`
	Trials     int             `json:"trials"`
	Markets    int             `json:"markets" doc:"The markets the sweep runs: markets.count, or fewer where fewer resolved markets match."`
	Replays    int             `json:"replays" doc:"trials × markets: the replays the sweep runs."`
	Progress   sweepProgress   `json:"progress"`
	CreatedAt  string          `json:"created_at" format:"date-time"`
	FinishedAt *string         `json:"finished_at" format:"date-time"`
	Error      *string         `json:"error"`
	Request    json.RawMessage `json:"request,omitempty" doc:"The sweep as it runs: its body, normalized."`
	Results    json.RawMessage `json:"results,omitempty" doc:"When DONE: every trial's statistics on its train and test markets, best, folds (WALK_FORWARD), stability, dsr and pbo."`
}

type sweepBody struct {
	Success   bool      `json:"success"`
	Data      sweepJSON `json:"data"`
	Timestamp string    `json:"timestamp" format:"date-time"`
	// results, when set, are Data.Results, written from the store
	// (WriteTo) rather than held: getSweep's of a DONE sweep.
	results streamResults
}

type sweepOutput struct {
	Status int
	Body   sweepBody
}

type sweepListBody struct {
	Success bool `json:"success"`
	Data    struct {
		Sweeps []sweepJSON `json:"sweeps"`
		Total  int         `json:"total"`
		Limit  int         `json:"limit"`
		Offset int         `json:"offset"`
	} `json:"data"`
	Timestamp string `json:"timestamp" format:"date-time"`
}

type sweepListOutput struct{ Body sweepListBody }

type sweepTrialsBody struct {
	Success bool `json:"success"`
	Data    struct {
		SweepID string              `json:"sweep_id"`
		Trials  []sweep.TrialResult `json:"trials"`
		Total   int                 `json:"total"`
		Limit   int                 `json:"limit"`
		Offset  int                 `json:"offset"`
	} `json:"data"`
	Timestamp string `json:"timestamp" format:"date-time"`
	// params are the sweep's parameters, the CSV and Parquet columns.
	params []sweep.Parameter
}

type sweepTrialsOutput struct {
	PageHeaders
	Body *sweepTrialsBody
}

// WriteCSV writes the page's trials a row each (sweep.SweepTrialTable).
func (b *sweepTrialsBody) WriteCSV(w io.Writer) error {
	return sweep.SweepTrialTable(b.params, b.Data.Trials).WriteCSV(w)
}

// WriteParquet writes the page's trials as one Parquet file.
func (b *sweepTrialsBody) WriteParquet(w io.Writer) error {
	return sweep.SweepTrialTable(b.params, b.Data.Trials).WriteParquet(w)
}

// documentSweepTrials describes the CSV and Parquet forms of the trials
// page (documentCSV lists them as every route's with such forms).
func documentSweepTrials(doc *huma.OpenAPI) {
	item := doc.Paths["/v1/sweeps/{id}/trials"]
	if item == nil || item.Get == nil || item.Get.Responses["200"] == nil || item.Get.Responses["200"].Content == nil {
		return
	}
	const columns = "a row a trial: `trial`, each parameter by its path (`/entryConditions/0/value`), `train_objective`, `test_objective`, " +
		"then every figure of the train and test statistics as `train.<name>` and `test.<name>` (an interval as `_low` and `_high`, " +
		"`pnl_per_market` as `_mean`, `_sd`, `_p5`, `_p50`, `_p95`; `daily` and `calibration` only in JSON); a null is "
	content := item.Get.Responses["200"].Content
	content["text/csv"] = &huma.MediaType{Schema: &huma.Schema{Type: "string",
		Description: "With Accept: text/csv, a header row and " + columns + "an empty cell."}}
	content[transfer.ParquetMediaType] = &huma.MediaType{Schema: &huma.Schema{Type: "string", Format: "binary",
		Description: "With Accept: application/vnd.apache.parquet, one Parquet file of the page, " + columns + "a null (counts int64, figures double, parameters double, boolean or string; Parquet orders the columns by name)."}}
}

func (s *Server) registerSweeps() {
	security := []map[string][]string{{schemeAPIKey: {}}}
	huma.Register(s.api, huma.Operation{
		OperationID: "create-sweep",
		Method:      http.MethodPost,
		Path:        "/v1/sweeps",
		Summary:     "Sweep a strategy's parameters across many resolved markets",
		Description: "Runs one strategy over a grid (or a seeded random draw) of up to 4 of its parameters, given as JSON Pointers into the strategy, " +
			"across the newest resolved markets of a coin and type, split into train and test markets in time order (NONE, HOLDOUT or WALK_FORWARD with an embargo). " +
			"Answers 202 at once; GET /v1/sweeps/{id} follows its progress and, when DONE, answers every trial's statistics, the train-best trial and how it did on test, " +
			"its stability, the deflated Sharpe ratio (dsr) and the probability of backtest overfitting (pbo). PRO and ENTERPRISE; " +
			"PRO runs 1 sweep at a time of up to 200 trials, 200 markets and 20,000 replays, ENTERPRISE 4 of up to 10,000 trials, 5,000 markets and 2,000,000 replays.",
		Tags:             []string{"Sweeps"},
		Security:         security,
		DefaultStatus:    http.StatusAccepted,
		Errors:           []int{400, 401, 403, 404, 413, 415, 429, 500, 503},
		RequestBody:      jsonBody(s.sweepBodySchema()),
		SkipValidateBody: true, // sweep.Decode names the bad field, as DESIGN 14 asks
		MaxBodyBytes:     maxBodyBytes,
	}, s.createSweep)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-sweeps", Method: http.MethodGet, Path: "/v1/sweeps",
		Summary: "The caller's sweeps, newest first", Tags: []string{"Sweeps"}, Security: security,
		Errors: []int{401, 403, 429, 500, 503},
	}, s.listSweeps)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-sweep", Method: http.MethodGet, Path: "/v1/sweeps/{id}",
		Summary: "A sweep's state, progress and, when DONE, its results", Tags: []string{"Sweeps"}, Security: security,
		Errors: []int{401, 403, 404, 429, 500, 503},
	}, s.getSweep)
	huma.Register(s.api, huma.Operation{
		OperationID: "cancel-sweep", Method: http.MethodDelete, Path: "/v1/sweeps/{id}",
		Summary: "Cancel a sweep",
		Description: "A QUEUED or RUNNING sweep becomes CANCELLED; the workers stop its shards within about a second. A finished sweep is answered as it is. " +
			"The owner can cancel on any plan, so that a downgrade never leaves a sweep running that nobody can stop.",
		Tags: []string{"Sweeps"}, Security: security,
		Errors: []int{401, 403, 404, 429, 500, 503},
	}, s.cancelSweep)
	huma.Register(s.api, huma.Operation{
		OperationID: "list-sweep-trials", Method: http.MethodGet, Path: "/v1/sweeps/{id}/trials",
		Summary:     "A finished sweep's trials, a page at a time",
		Description: "A DONE sweep's trials in trial order, as JSON, or with Accept: text/csv or application/vnd.apache.parquet a row a trial (the columns of the Python client's trials_frame). limit and offset page every form.",
		Tags:        []string{"Sweeps"}, Security: security,
		Errors: []int{401, 403, 404, 409, 429, 500, 503},
	}, s.sweepTrials)
	s.documentSweepJSON()
}

// documentSweepJSON gives a sweep's request and results, stored and
// answered as JSON bytes, the schemas of what they hold: the sweep body,
// and sweep.Results.
func (s *Server) documentSweepJSON() {
	schemas := s.api.OpenAPI().Components.Schemas
	js := schemas.SchemaFromRef(schemas.Schema(reflect.TypeFor[sweepJSON](), true, "").Ref)
	for name, ref := range map[string]string{
		"request": schemas.Schema(reflect.TypeFor[sweepRequest](), true, "").Ref,
		"results": schemas.Schema(reflect.TypeFor[sweep.Results](), true, "").Ref,
	} {
		js.Properties[name] = &huma.Schema{Ref: ref, Description: js.Properties[name].Description}
	}
}

// sweepRequest documents a sweep's body; the handler reads it with
// sweep.Decode, which names each bad field.
type sweepRequest struct {
	Strategy   map[string]any   `json:"strategy" doc:"The strategy: a replay body (POST /v1/replay) without marketSlug, every field of it allowed (SweepStrategy)."`
	Parameters []sweepParameter `json:"parameters" minItems:"1" maxItems:"4" doc:"The parameters swept: each a JSON Pointer into strategy with its values, or a range."`
	Search     struct {
		Kind   string `json:"kind" enum:"GRID,RANDOM" doc:"GRID tries every combination of the values; RANDOM draws trials distinct combinations with seed."`
		Trials int    `json:"trials,omitempty" minimum:"1" doc:"RANDOM only: how many distinct combinations to draw."`
		Seed   uint64 `json:"seed,omitempty" maximum:"9007199254740992" doc:"RANDOM only: the same seed draws the same trials."`
	} `json:"search"`
	Markets struct {
		Coin       string `json:"coin" enum:"BTC,ETH,SOL"`
		MarketType string `json:"market_type" enum:"5m,15m,1hr,4hr,24hr" doc:"4hr and 24hr markets exist for BTC only."`
		StartTime  string `json:"start_time,omitempty" format:"date-time" doc:"Only markets starting at or after this time (inclusive, unlike GET /v1/markets' start_time: a sweep from midnight includes the market that opens at midnight)."`
		EndTime    string `json:"end_time,omitempty" format:"date-time" doc:"Only markets starting before this time."`
		Count      int    `json:"count" minimum:"1" doc:"The newest this many resolved markets in the caller's window, run oldest first (fewer where fewer exist: the answer's markets); the plan bounds the markets found (400 naming the limit when more than it allows exist; a count over it runs on fewer that exist), and its replays limit counts the trials × the markets found."`
	} `json:"markets"`
	Split struct {
		Kind           string  `json:"kind,omitempty" enum:"NONE,HOLDOUT,WALK_FORWARD" default:"NONE" doc:"NONE: every market trains. HOLDOUT: the first markets train, the last testFraction test, embargoMarkets dropped between. WALK_FORWARD: the markets cut in time order into folds + 1 blocks; fold k trains on blocks 0..k-1 and tests on block k."`
		TestFraction   float64 `json:"testFraction,omitempty" minimum:"0.1" maximum:"0.5" default:"0.3" doc:"HOLDOUT only."`
		EmbargoMarkets int     `json:"embargoMarkets,omitempty" minimum:"0" maximum:"1000" default:"1" doc:"HOLDOUT and WALK_FORWARD: markets dropped between train and test."`
		Folds          int     `json:"folds,omitempty" minimum:"2" maximum:"10" doc:"WALK_FORWARD only."`
	} `json:"split,omitempty" doc:"Left out, every market trains (NONE)."`
	Objective string `json:"objective,omitempty" enum:"total_pnl,ev_per_trade,sharpe_per_market,sqn" default:"total_pnl" doc:"What the train-best trial maximizes."`
}

// sweepParameter documents one swept parameter.
type sweepParameter struct {
	Path   string `json:"path" example:"/entryConditions/0/value" doc:"A JSON Pointer to a number or enum of strategy: /entryConditions/0/value, /maxLossPercent, /latencyMs, /orderType, ..."`
	Values []any  `json:"values,omitempty" minItems:"1" doc:"The values tried (numbers, or an enum's names). Give values or range."`
	Range  *struct {
		From float64 `json:"from"`
		To   float64 `json:"to"`
		Step float64 `json:"step" exclusiveMinimum:"0"`
	} `json:"range,omitempty" doc:"from, from+step, ... up to to, inclusive. Give values or range."`
}

// sweepBodySchema is the sweep body's schema, its strategy the replay
// body's without marketSlug.
func (s *Server) sweepBodySchema() *huma.Schema {
	schemas := s.api.OpenAPI().Components.Schemas
	replaySchema := schemas.SchemaFromRef(schemas.Schema(reflect.TypeFor[replayRequest](), true, "").Ref)
	strategy := *replaySchema
	strategy.Properties = maps.Clone(replaySchema.Properties)
	// A sweep's strategy is a replay body without the market and without
	// the paging of its trades, which a sweep does not list (nor the
	// generated_strategy keys a replay body takes and ignores).
	notSwept := replay.RequestKeys
	for _, p := range notSwept {
		delete(strategy.Properties, p)
	}
	strategy.Required = slices.DeleteFunc(slices.Clone(replaySchema.Required), func(p string) bool { return slices.Contains(notSwept, p) })
	strategy.Description = "A replay body (POST /v1/replay) without marketSlug, tradesOffset and tradesLimit."
	schemas.Map()["SweepStrategy"] = &strategy
	ref := schemas.Schema(reflect.TypeFor[sweepRequest](), true, "").Ref
	body := schemas.SchemaFromRef(ref)
	body.Properties["strategy"] = &huma.Schema{Ref: "#/components/schemas/SweepStrategy", Description: body.Properties["strategy"].Description}
	return &huma.Schema{Ref: ref}
}

// sweepsIn reports whether the plan has sweeps: with the Backtest AI
// agent (DESIGN 4).
func sweepsIn(p Plan) bool { return p.BacktestAI }

// sweepAllowed answers 403 for plans without sweeps (DESIGN 4: with the
// Backtest AI agent, PRO and ENTERPRISE).
func sweepAllowed(p principal) error {
	if sweepsIn(p.Plan) {
		return nil
	}
	return tierDenied(p.Plan, store.Pro, "parameter sweeps need the PRO or ENTERPRISE plan; yours is %s", p.Plan.Tier)
}

func (s *Server) createSweep(ctx context.Context, in *sweepInput) (*sweepOutput, error) {
	p := principalFrom(ctx)
	if err := sweepAllowed(p); err != nil {
		return nil, err
	}
	if s.cfg.Sweeps == nil {
		return nil, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "sweeps need the workers' queue, which this server was not given")
	}
	if err := requireJSON(in.ContentType); err != nil {
		return nil, err
	}
	if len(in.RawBody) == 0 {
		return nil, Errorf(http.StatusBadRequest, CodeValidation, "the request body is empty: send the sweep as JSON")
	}
	req, err := sweep.Decode(in.RawBody)
	if err != nil {
		return nil, sweepError(err)
	}
	plan, err := req.Normalize(sweepLimits(p.Plan))
	if err != nil {
		return nil, sweepError(err)
	}
	r := plan.Request
	slugs, err := s.sweepMarkets(ctx, p, r.Markets)
	if err != nil {
		return nil, err
	}
	// The markets and replays that run: the trials over the markets found,
	// which may be fewer than markets.count.
	if err := sweepLimits(p.Plan).CheckFound(&plan, len(slugs)); err != nil {
		return nil, sweepError(err)
	}
	if _, err := r.Split.Cut(len(slugs)); err != nil {
		return nil, sweepError(err)
	}
	body, err := json.Marshal(r)
	if err != nil {
		return nil, s.internal(ctx, "encode sweep request", err)
	}
	// The cap is checked where the sweep is stored, in one step with it:
	// of two concurrent POSTs at the cap's edge, one is stored and the
	// other refused.
	limit := p.Plan.SweepsInFlight
	sw, err := s.store.CreateSweep(ctx, store.Sweep{CustomerID: p.Customer.ID, Request: body, TrialCount: len(plan.Trials), Markets: slugs}, limit)
	if errors.Is(err, store.ErrSweepsInFlight) {
		return nil, s.sweepsInFlight(ctx, p.Plan, p.Customer.ID)
	}
	if err != nil {
		return nil, s.storeFailure(ctx, "create sweep", err)
	}
	if err := s.recheckPlan(ctx, p, sw, req); err != nil {
		return nil, err
	}
	shards := make([]sweep.ShardTask, len(slugs))
	for i, m := range slugs {
		shards[i] = sweep.ShardTask{Sweep: sw.ID, Market: m}
	}
	if err := s.cfg.Sweeps.EnqueueSweep(ctx, shards); err != nil {
		_, _ = s.store.SetSweepStatus(context.WithoutCancel(ctx), sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepFailed, "its shards could not be queued")
		s.log.ErrorContext(ctx, "enqueue sweep", "sweep", sw.ID, "err", err)
		return nil, Errorf(http.StatusServiceUnavailable, CodeServiceUnavailable, "the sweep could not be queued; try again shortly")
	}
	if running, err := s.store.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepRunning, ""); err == nil {
		sw = running
	} else if !errors.Is(err, store.ErrConflict) { // a fast worker may have finished it already
		return nil, s.storeFailure(ctx, "start sweep", err)
	}
	return &sweepOutput{Status: http.StatusAccepted, Body: sweepBody{Success: true, Data: s.sweepJSON(sw, false), Timestamp: formatTime(s.now())}}, nil
}

// sweepsInFlight is the 429 of a sweep past the plan's sweeps in flight.
func (s *Server) sweepsInFlight(ctx context.Context, plan Plan, customerID string) *Error {
	limit := plan.SweepsInFlight
	e := Errorf(http.StatusTooManyRequests, CodeRateLimited,
		"a sweep is already running: the %s plan runs at most %d at once per customer; retry when it has finished, or cancel it (DELETE /v1/sweeps/{id})", plan.Tier, limit)
	wait := s.sweepSlotWait(ctx, customerID)
	e = e.With("limit", "concurrent_sweeps").With("max", limit).With("retry_after", wait).With("upgrade_url", upgradeURL)
	e.GetHeaders().Set("Retry-After", strconv.Itoa(wait))
	return e
}

// sweepMarkets picks the newest Count resolved markets of the coin and type
// in the caller's window (and the request's time range), oldest first; of
// a Count over the plan's markets a sweep, one more than those
// (Limits.MarketsToFind), which CheckFound refuses.
func (s *Server) sweepMarkets(ctx context.Context, p principal, m sweep.Markets) ([]string, error) {
	if (m.Coin == store.ETH || m.Coin == store.SOL) && !p.Plan.AltCoins {
		return nil, tierDenied(p.Plan, store.Pro, "%s markets need the PRO plan or above; yours is %s", m.Coin, p.Plan.Tier)
	}
	w, err := s.marketWindow(ctx, p.Plan, m.Coin, m.MarketType)
	if err != nil {
		return nil, err
	}
	resolved := true
	f := store.MarketFilter{Coin: m.Coin, MarketType: m.MarketType, Resolved: &resolved, Window: w, Limit: sweepLimits(p.Plan).MarketsToFind(m.Count)}
	if m.StartTime != nil {
		after := m.StartTime.Add(-time.Microsecond) // from inclusive
		f.StartAfter = &after
	}
	f.StartBefore = m.EndTime
	ms, _, err := s.store.ListMarkets(ctx, f)
	if err != nil {
		return nil, s.storeFailure(ctx, "list sweep markets", err)
	}
	if len(ms) == 0 {
		return nil, Errorf(http.StatusNotFound, CodeNoBacktestMarkets, "no resolved %s %s markets %s (and in the sweep's time range) to sweep", m.Coin, m.MarketType, p.Plan.dataWindow())
	}
	slugs := make([]string, len(ms))
	for i, mk := range ms { // newest first: reverse into time order
		slugs[len(ms)-1-i] = mk.Slug
	}
	return slugs, nil
}

// sweepError answers a sweep validation problem with its code and field.
func sweepError(err error) error {
	var re *replay.Error
	if errors.As(err, &re) {
		return replayError(re)
	}
	return Errorf(http.StatusBadRequest, CodeValidation, "%s", err.Error())
}

// sweepSlotWait is how many seconds a customer at its cap of sweeps
// should wait before asking again: until the running sweep expected to end
// first ends, by its pace so far (its ETA); a minute when no running sweep
// has one (no shard done yet, or past the end its pace foretold) or they
// cannot be read, and at least a second. A sweep runs for minutes: Retry-After 1 sent a client that
// honours it back to a refusal.
func (s *Server) sweepSlotWait(ctx context.Context, customerID string) int {
	const unknown = 60
	sws, _, err := s.store.ListSweeps(ctx, customerID, 0, 0)
	if err != nil {
		return unknown
	}
	wait := math.Inf(1)
	for _, sw := range sws {
		if eta, ok := s.sweepETA(sw); ok {
			wait = min(wait, eta)
		}
	}
	if math.IsInf(wait, 1) {
		return unknown
	}
	return max(1, int(math.Ceil(wait)))
}

// sweepETA is the seconds, to a tenth, until sw should end at its pace so
// far; ok is false for a sweep not running or without a pace yet, and for
// one past the end its pace foretold. The pace is the one up to its last
// stored shard (UpdatedAt), and the time since counts down: a sweep
// waiting on a shard held up (one whose worker stopped, back on the queue
// only once its lease lapses, a minute or more) would otherwise say "a
// second left" for as long as it waits, the little its pace leaves for one
// shard, and send a client at its cap of sweeps back every second
// (sweepSlotWait).
func (s *Server) sweepETA(sw store.Sweep) (eta float64, ok bool) {
	if !sw.Status.Active() || sw.ReplaysDone <= 0 || sw.ReplaysDone >= sw.ReplaysTotal {
		return 0, false
	}
	now := s.now()
	last := sw.UpdatedAt
	if last.IsZero() || last.After(now) {
		last = now
	}
	ran := max(last.Sub(sw.CreatedAt).Seconds(), 0)
	eta = ran*float64(sw.ReplaysTotal-sw.ReplaysDone)/float64(sw.ReplaysDone) - now.Sub(last).Seconds()
	if eta <= 0 && last.Before(now) {
		return 0, false
	}
	return float64(int64(max(eta, 0)*10)) / 10, true
}

func (s *Server) sweepJSON(sw store.Sweep, full bool) sweepJSON {
	out := sweepJSON{SweepID: sw.ID, Status: string(sw.Status), Trials: sw.TrialCount, Markets: len(sw.Markets), Replays: sw.ReplaysTotal,
		Progress:  sweepProgress{ReplaysDone: sw.ReplaysDone, ReplaysTotal: sw.ReplaysTotal},
		CreatedAt: formatTime(sw.CreatedAt)}
	if sw.FinishedAt != nil {
		f := formatTime(*sw.FinishedAt)
		out.FinishedAt = &f
	}
	if sw.Error != "" {
		e := sw.Error
		out.Error = &e
	}
	if eta, ok := s.sweepETA(sw); ok {
		out.Progress.ETASeconds = &eta
	}
	if full {
		out.Request = sw.Request
		if sw.Status == store.SweepDone {
			out.Results = sw.Result
		}
	}
	return out
}

// StopSweepsOffPlan cancels the customer's QUEUED and RUNNING sweeps that
// its plan, as c now has it, could not have started: all of them when it
// has no sweeps (a cancelled subscription), those larger than its sweep
// sizes when they are smaller (ENTERPRISE to PRO, or an ENTERPRISE
// customer's own sizes lowered), and, of the others, those past the
// sweeps it runs at once, the newest (ENTERPRISE's 4 to PRO's 1). It returns how many it
// cancelled. A sweep runs for as long as its thousands of replays take on
// the workers, and the plan that allowed it is gone: it stops as a DELETE
// stops it (its shards within about a second), and its owner still sees
// it through DELETE /v1/sweeps/{id}. The billing webhook and `updown
// customers set-tier` and `set-limits` call it after the change is stored; a sweep stored
// while they run checks the tier again itself (createSweep).
func StopSweepsOffPlan(ctx context.Context, st store.SweepStore, c store.Customer) (int, error) {
	if n, err := st.CountActiveSweeps(ctx, c.ID); err != nil || n == 0 {
		return 0, err
	}
	sws, _, err := st.ListSweeps(ctx, c.ID, 0, 0)
	if err != nil {
		return 0, err
	}
	_, stop := sweepsPlanKeeps(customerPlan(c), sws)
	stopped := 0
	for _, sw := range stop {
		_, err := st.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued, store.SweepRunning}, store.SweepCancelled, "")
		switch {
		case err == nil:
			stopped++
		case errors.Is(err, store.ErrConflict): // it finished meanwhile
		default:
			return stopped, err
		}
	}
	return stopped, nil
}

// sweepsPlanKeeps splits the customer's QUEUED and RUNNING sweeps among
// sws into those plan keeps and those it stops, each oldest first. It is
// the one rule of which sweeps a plan runs, for StopSweepsOffPlan after a
// plan change and for recheckPlan after a sweep is stored, so that the two
// never each cancel a different sweep and leave none: of the sweeps the
// plan's sizes allow, those it runs at once (SweepsInFlight) go on, the
// ones stored first (CreatedAt, then ID), which have come furthest; the
// plan could not have started the others beside them (429
// concurrent_sweeps), nor those over its sizes.
func sweepsPlanKeeps(plan Plan, sws []store.Sweep) (keep, stop []store.Sweep) {
	active := make([]store.Sweep, 0, len(sws))
	for _, sw := range sws {
		if sw.Status.Active() {
			active = append(active, sw)
		}
	}
	slices.SortFunc(active, func(a, b store.Sweep) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	for _, sw := range active {
		if sweepFits(plan, sw) && len(keep) < plan.SweepsInFlight {
			keep = append(keep, sw)
		} else {
			stop = append(stop, sw)
		}
	}
	return keep, stop
}

// stopSweepsOffPlan is StopSweepsOffPlan for the customer with the id, as
// stored now (its tier and its own limits).
func (s *Server) stopSweepsOffPlan(ctx context.Context, customerID string) (int, error) {
	c, err := s.store.GetCustomer(ctx, customerID)
	if err != nil {
		return 0, fmt.Errorf("read the customer: %w", err)
	}
	return StopSweepsOffPlan(ctx, s.store, c)
}

// sweepFits tells whether plan allows a sweep of sw's size.
func sweepFits(plan Plan, sw store.Sweep) bool {
	if !sweepsIn(plan) {
		return false
	}
	l := sweepLimits(plan)
	return uint64(sw.TrialCount) <= l.Trials && uint64(len(sw.Markets)) <= l.Markets && uint64(sw.ReplaysTotal) <= l.Replays
}

// recheckPlan reads the customer's tier again once sw is stored. A billing
// webhook or `set-tier` that lowered the plan meanwhile, after this
// request read it, stores the tier and then stops the sweeps it finds: it
// may have looked before sw was stored. Read after the store, the tier is
// the new one whenever that look could have missed sw, and a sweep the
// new plan could not have started (over its sizes, or, when it runs fewer
// sweeps at once, past them beside the customer's older ones) is
// cancelled here and refused as the new plan refuses it.
func (s *Server) recheckPlan(ctx context.Context, p principal, sw store.Sweep, req sweep.Request) error {
	c, err := s.store.GetCustomer(ctx, p.Customer.ID)
	if err != nil {
		return s.storeFailure(ctx, "read the customer's plan", err)
	}
	plan := customerPlan(c)
	fits := sweepFits(plan, sw)
	if fits && plan.SweepsInFlight >= p.Plan.SweepsInFlight {
		// The cap CreateSweep held sw to is the new plan's, or below it:
		// fewer than it were in flight, all stored before sw, so
		// sweepsPlanKeeps keeps sw.
		return nil
	}
	if fits {
		// The new plan runs fewer sweeps at once: sw goes on only if the
		// plan keeps it as StopSweepsOffPlan does (the oldest of those
		// its sizes allow), whichever of the two looks first.
		sws, _, err := s.store.ListSweeps(ctx, c.ID, 0, 0)
		if err != nil {
			return s.storeFailure(ctx, "list the customer's sweeps", err)
		}
		keep, _ := sweepsPlanKeeps(plan, sws)
		if slices.ContainsFunc(keep, func(k store.Sweep) bool { return k.ID == sw.ID }) {
			return nil
		}
	}
	if _, err := s.store.SetSweepStatus(context.WithoutCancel(ctx), sw.ID, []store.SweepStatus{store.SweepQueued}, store.SweepCancelled, ""); err != nil && !errors.Is(err, store.ErrConflict) {
		return s.storeFailure(ctx, "cancel a sweep off the new plan", err)
	}
	s.log.InfoContext(ctx, "sweep cancelled as it was stored: the customer's plan changed meanwhile",
		"sweep", sw.ID, "customer_id", c.ID, "tier", string(c.Tier), "was", string(p.Plan.Tier))
	np := p
	np.Plan = plan
	if err := sweepAllowed(np); err != nil {
		return err
	}
	if fits {
		return s.sweepsInFlight(ctx, plan, c.ID)
	}
	// Refused as the new plan refuses it, over the markets found.
	lim := sweepLimits(plan)
	sp, err := req.Normalize(lim)
	if err == nil {
		err = lim.CheckFound(&sp, len(sw.Markets))
	}
	if err != nil {
		return sweepError(err)
	}
	return tierDenied(plan, store.Enterprise, "your plan changed to %s while the sweep was submitted, and its sweeps are smaller than this one", c.Tier)
}

// callersSweep reads the caller's sweep, once the plan allows sweeps;
// another customer's is 404 like an unknown one.
func (s *Server) callersSweep(ctx context.Context, id string) (store.Sweep, error) {
	if err := sweepAllowed(principalFrom(ctx)); err != nil {
		return store.Sweep{}, err
	}
	return s.ownSweep(ctx, id)
}

// ownSweep reads the caller's sweep whatever the plan: a customer whose
// plan lost sweeps while one ran can still stop it (cancelSweep).
func (s *Server) ownSweep(ctx context.Context, id string) (store.Sweep, error) {
	p := principalFrom(ctx)
	// Without its result: a large sweep's is a hundred megabytes, which
	// getSweep writes out a part at a time and sweepTrials pages.
	sw, err := s.store.GetSweepInfo(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && sw.CustomerID != p.Customer.ID {
		return store.Sweep{}, Errorf(http.StatusNotFound, CodeNotFound, "sweep %s does not exist", quoteID(id))
	}
	if err != nil {
		return store.Sweep{}, s.storeFailure(ctx, "read sweep", err)
	}
	return sw, nil
}

func (s *Server) getSweep(ctx context.Context, in *sweepIDInput) (*getSweepOutput, error) {
	sw, err := s.callersSweep(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	body := &sweepBody{Success: true, Data: s.sweepJSON(sw, true), Timestamp: formatTime(s.now())}
	if sw.Status == store.SweepDone {
		// Written from the store as the answer is (sweepstream.go): a
		// large sweep's results are a hundred megabytes and more.
		body.results = func(w io.Writer) error {
			err := s.store.WriteSweepResult(ctx, sw.ID, w)
			if err == nil {
				return nil
			}
			// The answer's status and start are sent: a truncated answer
			// must not end as if whole, nor have an error appended to it.
			// net/http drops the connection for ErrAbortHandler.
			if aw, ok := w.(*answerJSON); !ok || aw.err == nil { // the store's failure, not the client gone
				s.log.ErrorContext(ctx, "write sweep results", "sweep", sw.ID, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
	}
	return &getSweepOutput{Body: body}, nil
}

func (s *Server) listSweeps(ctx context.Context, in *sweepListInput) (*sweepListOutput, error) {
	p := principalFrom(ctx)
	if err := sweepAllowed(p); err != nil {
		return nil, err
	}
	sws, total, err := s.store.ListSweeps(ctx, p.Customer.ID, in.Limit, in.Offset)
	if err != nil {
		return nil, s.storeFailure(ctx, "list sweeps", err)
	}
	out := &sweepListOutput{Body: sweepListBody{Success: true, Timestamp: formatTime(s.now())}}
	out.Body.Data.Sweeps = make([]sweepJSON, len(sws))
	for i, sw := range sws {
		out.Body.Data.Sweeps[i] = s.sweepJSON(sw, false)
	}
	out.Body.Data.Total, out.Body.Data.Limit, out.Body.Data.Offset = total, in.Limit, in.Offset
	return out, nil
}

// cancelSweep stops the caller's sweep. Unlike the other sweep
// operations it does not ask for a plan with sweeps: a downgrade (a billing
// webhook) must not leave a customer's sweep running on the workers, up to
// its end, with nobody able to stop it but an operator.
func (s *Server) cancelSweep(ctx context.Context, in *sweepIDInput) (*sweepOutput, error) {
	sw, err := s.ownSweep(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	if sw.Status.Active() {
		got, err := s.store.SetSweepStatus(ctx, sw.ID, []store.SweepStatus{store.SweepQueued, store.SweepRunning}, store.SweepCancelled, "")
		switch {
		case err == nil:
			sw = got
		case errors.Is(err, store.ErrConflict): // it finished meanwhile
			if sw, err = s.ownSweep(ctx, in.ID); err != nil {
				return nil, err
			}
		default:
			return nil, s.storeFailure(ctx, "cancel sweep", err)
		}
	}
	return &sweepOutput{Status: http.StatusOK, Body: sweepBody{Success: true, Data: s.sweepJSON(sw, false), Timestamp: formatTime(s.now())}}, nil
}

func (s *Server) sweepTrials(ctx context.Context, in *sweepTrialsInput) (*sweepTrialsOutput, error) {
	sw, err := s.callersSweep(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case sw.Status.Final() && sw.Status != store.SweepDone:
		return nil, Errorf(http.StatusConflict, "SWEEP_NOT_DONE", "sweep %s is %s: it ended before its trials were summarized, and has none to list", sw.ID, sw.Status)
	case sw.Status != store.SweepDone:
		return nil, Errorf(http.StatusConflict, "SWEEP_NOT_DONE", "sweep %s is %s: its trials are listed once it is DONE", sw.ID, sw.Status)
	}
	// Only the page's trials are read: a large sweep's results are a
	// hundred megabytes and more.
	raw, total, err := s.store.SweepTrials(ctx, sw.ID, in.Offset, in.Limit)
	if errors.Is(err, store.ErrNotFound) { // deleted meanwhile (retention)
		return nil, Errorf(http.StatusNotFound, CodeNotFound, "sweep %s does not exist", quoteID(in.ID))
	}
	if err != nil {
		return nil, s.storeFailure(ctx, "read sweep trials", err)
	}
	trials := make([]sweep.TrialResult, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &trials[i]); err != nil {
			return nil, s.internal(ctx, "decode sweep results", fmt.Errorf("sweep %s: trial %d: %w", sw.ID, in.Offset+i, err))
		}
	}
	var req sweep.Request
	if err := json.Unmarshal(sw.Request, &req); err != nil {
		return nil, s.internal(ctx, "decode sweep request", fmt.Errorf("sweep %s: %w", sw.ID, err))
	}
	out := &sweepTrialsOutput{Body: &sweepTrialsBody{Success: true, Timestamp: formatTime(s.now())}}
	out.Body.params = req.Parameters
	d := &out.Body.Data
	d.SweepID, d.Total, d.Limit, d.Offset, d.Trials = sw.ID, total, in.Limit, in.Offset, trials
	if s.wantsRows(in.Accept) {
		out.PageHeaders = rowsPageHeaders(nil, d.Total, -1, "")
	}
	return out, nil
}

// sweepPkg is the import path of package sweep, whose results' types are
// named in the document with a Sweep prefix (schemaName).
var sweepPkg = reflect.TypeFor[sweep.Results]().PkgPath()

// schemaName names the document's schemas as Huma does, but for the types
// of package sweep, prefixed with Sweep: sweep.MarketPnL is not the
// agent's backtest.MarketPnL, and two schemas of one name cannot be.
func schemaName(t reflect.Type, hint string) string {
	name := huma.DefaultSchemaNamer(t, hint)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == sweepPkg && !strings.HasPrefix(name, "Sweep") {
		return "Sweep" + name
	}
	return name
}
