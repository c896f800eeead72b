package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/updown/updown/jobs"
	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/store"
)

// replayAsEngine posts body as a PRO replay through the queue and a
// worker, checks its answer is 200 and the engine's run of the same
// request byte for byte, and returns the answer's data and result.
func replayAsEngine(t *testing.T, b *bundle, q *queue, body string) (json.RawMessage, replay.Result) {
	t.Helper()
	r := b.replay(store.Pro, body)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatal(err)
	}
	var req replay.Request
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	want, err := jobs.Replay(t.Context(), q.store, req)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := json.Marshal(want); string(w) != string(env.Data) {
		t.Errorf("data differs from a direct engine run:\n got %.600s\nwant %.600s", env.Data, w)
	}
	var res replay.Result
	if err := json.Unmarshal(env.Data, &res); err != nil {
		t.Fatal(err)
	}
	return env.Data, res
}

// editFixtureMarket stores the fixture market as edit leaves it and
// returns its slug.
func editFixtureMarket(t *testing.T, q *queue, edit func(*store.Market)) string {
	t.Helper()
	slug, _ := snapshotMarket()
	m, err := q.store.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	edit(&m)
	if err := q.store.UpsertMarkets(t.Context(), []store.Market{m}); err != nil {
		t.Fatal(err)
	}
	return slug
}

// TestReplayCostsThroughWorker replays the fixture market with MARKET fees
// and 250 ms latency beside the same request without them: the plain
// answer pays no fee (its fee fields are 0), the other pays Polymarket's fee on every
// fill, and both are the engine's answers byte for byte.
func TestReplayCostsThroughWorker(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug := editFixtureMarket(t, q, func(m *store.Market) { m.TakerFeeRate, m.FeeExponent = ptr(0.07), ptr(1) })
	plainBody := replayBody(slug, nil)
	costBody := replayBody(slug, func(m map[string]any) { m["feeModel"], m["latencyMs"] = "MARKET", 250 })
	answers := map[string]replay.Result{}
	for name, body := range map[string]string{"plain": plainBody, "costs": costBody} {
		data, res := replayAsEngine(t, b, q, body)
		// DESIGN 6: fee and total_fees in every answer, costs or not.
		if !strings.Contains(string(data), `"fee"`) || !strings.Contains(string(data), "total_fees") {
			t.Errorf("%s: fee fields: %.600s", name, data)
		}
		answers[name] = res
	}
	plain, costs := answers["plain"], answers["costs"]
	if len(costs.Trades) == 0 || costs.Performance.TotalFees <= 0 {
		t.Fatalf("the replay with costs paid no fee: %+v", costs.Performance)
	}
	var sum float64
	for _, tr := range costs.Trades {
		sum += tr.Fee
	}
	if d := sum - costs.Performance.TotalFees; d > 1e-6 || d < -1e-6 {
		t.Errorf("total_fees %v, trades' fees sum to %v", costs.Performance.TotalFees, sum)
	}
	s := costs.Strategy
	if s.FeeModel != "MARKET" || s.FeeRate == nil || *s.FeeRate != 0.07 || s.FeeExponent == nil || *s.FeeExponent != 1 || s.LatencyMs == nil || *s.LatencyMs != 250 {
		t.Errorf("strategy echo %+v", s)
	}
	// The fixture's snapshots are 30 s apart, so every order executes one
	// snapshot after its signal: the entry's time moves.
	if plain.Trades[0].Time == costs.Trades[0].Time {
		t.Errorf("latency did not move the entry: %s", plain.Trades[0].Time)
	}
	if plain.Trades[0].Price != costs.Trades[0].Price {
		t.Errorf("the delayed entry shows price %v, the deciding snapshot's is %v", costs.Trades[0].Price, plain.Trades[0].Price)
	}
}

// TestReplayCryptoFeesCurveThroughWorker replays a market of Polymarket's
// first crypto fee type (crypto_fees: rate 0.25, exponent 2, times p)
// through the queue and a worker with MARKET fees: the answer is the
// engine's byte for byte, echoes the fee type, and charges no fill more
// (and the whole replay less) than the same schedule without the type.
func TestReplayCryptoFeesCurveThroughWorker(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug := editFixtureMarket(t, q, func(m *store.Market) {
		m.TakerFeeRate, m.FeeExponent, m.FeeType = ptr(store.FeeTypeCryptoRate), ptr(store.FeeTypeCryptoExponent), store.FeeTypeCrypto
	})
	body := replayBody(slug, func(m map[string]any) { m["feeModel"] = "MARKET" })
	_, got := replayAsEngine(t, b, q, body)
	var req replay.Request
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	if s := got.Strategy; s.FeeType != store.FeeTypeCrypto || s.FeeRate == nil || *s.FeeRate != 0.25 || s.FeeExponent == nil || *s.FeeExponent != 2 {
		t.Errorf("strategy echo %+v, want feeType crypto_fees at 0.25 and 2", s)
	}
	// The same schedule on the later curve (no fee type) charges more on
	// every fill: the first curve's fee is that one times p < 1.
	editFixtureMarket(t, q, func(m *store.Market) { m.FeeType = "" })
	plain, err := jobs.Replay(t.Context(), q.store, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Trades) == 0 || len(got.Trades) != len(plain.Trades) || got.Performance.TotalFees <= 0 || got.Performance.TotalFees >= plain.Performance.TotalFees {
		t.Fatalf("%d trades against %d, total fees %v against %v", len(got.Trades), len(plain.Trades), got.Performance.TotalFees, plain.Performance.TotalFees)
	}
	for i, tr := range got.Trades {
		if tr.Fee > plain.Trades[i].Fee {
			t.Errorf("trade %d at %v: fee %v, over the later curve's %v", i, tr.FillPrice, tr.Fee, plain.Trades[i].Fee)
		}
	}
}

// TestReplayCostsRejected: bad costs, unknown keys and conditions without
// values are 400 VALIDATION_ERROR naming the field, before any queueing.
func TestReplayCostsRejected(t *testing.T) {
	t.Parallel()
	b, _ := replaySetup(t, 5*time.Second, false)
	slug, _ := snapshotMarket()
	set := func(kv ...any) func(map[string]any) {
		return func(m map[string]any) {
			for i := 0; i < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
		}
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"unknown model", replayBody(slug, set("feeModel", "POLY")), "feeModel"},
		{"rate without CUSTOM", replayBody(slug, set("feeModel", "MARKET", "feeRate", 0.07)), "feeRate"},
		{"rate over 1", replayBody(slug, set("feeModel", "CUSTOM", "feeRate", 2)), "feeRate"},
		{"CUSTOM without rate", replayBody(slug, set("feeModel", "CUSTOM")), "feeRate"},
		{"exponent 5", replayBody(slug, set("feeModel", "CUSTOM", "feeRate", 0.1, "feeExponent", 5)), "feeExponent"},
		{"exponent 1.5", replayBody(slug, set("feeModel", "CUSTOM", "feeRate", 0.1, "feeExponent", 1.5)), "feeExponent"},
		{"latency over a minute", replayBody(slug, set("latencyMs", 60001)), "latencyMs"},
		{"latency fractional", replayBody(slug, set("latencyMs", 0.5)), "latencyMs"},
		{"latency a string", replayBody(slug, set("latencyMs", "250")), "latencyMs"},
		{"unknown key", replayBody(slug, set("foo", 1)), "foo"},
		{"misspelt max loss", replayBody(slug, set("maxLossPct", 5)), "maxLossPct"},
		{"misspelt value", replayBody(slug, set("entryConditions", []any{map[string]any{"field": "price_up", "operator": "<", "val": 0.6}})), "entryConditions[0].val"},
		{"no value", replayBody(slug, set("exitConditions", []any{map[string]any{"field": "price_up", "operator": "<"}})), "exitConditions[0].value"},
		{"null value", replayBody(slug, set("exitConditions", []any{map[string]any{"field": "price_up", "operator": "<", "value": nil}})), "exitConditions[0].value"},
		// Re-entry control and resting orders (DESIGN 6).
		{"cooldown over a day", replayBody(slug, set("reentryCooldownMs", 86400001)), "reentryCooldownMs"},
		{"cooldown fractional", replayBody(slug, set("reentryCooldownMs", 1.5)), "reentryCooldownMs"},
		{"no entries", replayBody(slug, set("maxEntriesPerMarket", 0)), "maxEntriesPerMarket"},
		{"entries over 10000", replayBody(slug, set("maxEntriesPerMarket", 10001)), "maxEntriesPerMarket"},
		{"postOnly with MARKET", replayBody(slug, set("postOnly", true)), "postOnly"},
		{"postOnly false with LIMIT", replayBody(slug, set("orderType", "LIMIT", "postOnly", false)), "postOnly"},
		{"offset with MARKET", replayBody(slug, set("limitOffsetTicks", 1)), "limitOffsetTicks"},
		{"offset over 50", replayBody(slug, set("orderType", "GTC", "limitOffsetTicks", 51)), "limitOffsetTicks"},
		{"cancel of 0", replayBody(slug, set("orderType", "GTC", "cancelAfterMs", 0)), "cancelAfterMs"},
		{"cancel with LIMIT", replayBody(slug, set("orderType", "LIMIT", "cancelAfterMs", 1000)), "cancelAfterMs"},
		{"unknown queue model", replayBody(slug, set("orderType", "GTC", "queueModel", "BACK")), "queueModel"},
		{"queue model with MARKET", replayBody(slug, set("queueModel", "FRONT")), "queueModel"},
		{"rebates with MARKET", replayBody(slug, set("includeRebates", true)), "includeRebates"},
		{"rebates with LIMIT", replayBody(slug, set("orderType", "LIMIT", "includeRebates", true)), "includeRebates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := wantError(t, b.replay(store.Pro, tc.body), http.StatusBadRequest, "VALIDATION_ERROR")
			if d, _ := e["details"].(map[string]any); d["field"] != tc.field || !strings.Contains(e["message"].(string), tc.field) {
				t.Errorf("error %v, want field %s named", e, tc.field)
			}
		})
	}
}

// TestReplayOpenAPIBody: the documented body shows its enums, ranges and
// defaults, refuses unknown keys, and its examples pass validation.
func TestReplayOpenAPIBody(t *testing.T) {
	t.Parallel()
	b, _ := replaySetup(t, 5*time.Second, false)
	type schema struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Required             []string                   `json:"required"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Examples map[string]struct {
						Value json.RawMessage `json:"value"`
					} `json:"examples"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.get("", "/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	req := doc.Components.Schemas["ReplayRequest"]
	if req.AdditionalProperties == nil || *req.AdditionalProperties {
		t.Errorf("ReplayRequest takes unknown keys: %v", req.AdditionalProperties)
	}
	want := map[string][]string{
		"side":           {`"enum":["UP","DOWN"]`},
		"orderType":      {`"enum":["MARKET","LIMIT","GTC"]`, `"default":"MARKET"`},
		"positionSize":   {`"minimum":1`, `"maximum":10000`},
		"maxLossPercent": {`"minimum":1`, `"maximum":100`, `"default":50`},
		"feeModel":       {`"enum":["NONE","MARKET","CUSTOM"]`, `"default":"NONE"`},
		"feeRate":        {`"minimum":0`, `"maximum":1`},
		"feeExponent":    {`"minimum":1`, `"maximum":4`, `"default":1`},
		"latencyMs":      {`"minimum":0`, `"maximum":60000`, `"default":0`},

		"reentryCooldownMs":   {`"minimum":0`, `"maximum":86400000`, `"default":0`},
		"maxEntriesPerMarket": {`"minimum":1`, `"maximum":10000`},
		"postOnly":            {`"type":"boolean"`, `"default":false`},
		"limitOffsetTicks":    {`"minimum":0`, `"maximum":50`, `"default":0`},
		"cancelAfterMs":       {`"minimum":1`, `"maximum":86400000`},
		"queueModel":          {`"enum":["RISK_AVERSE","FRONT"]`, `"default":"RISK_AVERSE"`},
		"includeRebates":      {`"type":"boolean"`},
	}
	for prop, parts := range want {
		for _, part := range parts {
			if !strings.Contains(string(req.Properties[prop]), part) {
				t.Errorf("%s: %s lacks %s", prop, req.Properties[prop], part)
			}
		}
	}
	// DESIGN 6: fee and total_fees are in every answer, not only when a
	// fee model or a latency is named (as the description once said).
	if d := string(req.Properties["feeModel"]); !strings.Contains(d, "Every answer carries") || strings.Contains(d, "When feeModel or latencyMs is given") {
		t.Errorf("feeModel's description says when fees show: %s", d)
	}
	var cond schema
	for name, sc := range doc.Components.Schemas {
		if strings.Contains(name, "Condition") && sc.Properties["operator"] != nil && strings.Contains(string(sc.Properties["operator"]), "crosses_above") {
			cond = sc
		}
	}
	if !strings.Contains(string(cond.Properties["field"]), `"time_remaining_pct"`) || cond.AdditionalProperties == nil || *cond.AdditionalProperties ||
		!strings.Contains(strings.Join(cond.Required, ","), "value") {
		t.Errorf("condition schema %+v", cond)
	}
	examples := doc.Paths["/v1/replay"]["post"].RequestBody.Content["application/json"].Examples
	if len(examples) != 2 {
		t.Fatalf("examples %v", examples)
	}
	for name, ex := range examples {
		var r replay.Request
		if err := json.Unmarshal(ex.Value, &r); err != nil {
			t.Fatalf("example %s: %v", name, err)
		}
		if err := r.Normalize(); err != nil {
			t.Errorf("example %s does not validate: %v", name, err)
		}
	}
}

// TestReplayRestingThroughWorker replays a GTC strategy through the api
// and a worker: the worker reads the market's recorded trades beside its
// snapshots, and the answer, the engine's byte for byte, carries the
// orders and a maker fill at the instant a trade reached the order.
func TestReplayRestingThroughWorker(t *testing.T) {
	t.Parallel()
	b, q := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	m, err := q.store.GetMarket(t.Context(), slug)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's first snapshot shows 100 bid at 0.49: a BUY resting
	// there has 100 ahead. A taker sale of 300 at 0.49 at 45 s works
	// them off and fills the 100 asked for.
	fillAt := m.StartTime.Add(45 * time.Second)
	trades := []store.MarketTrade{
		{Time: m.StartTime.Add(10 * time.Second), Outcome: store.OutcomeUp, Side: store.SideBuy, Price: 0.51, Size: 500, TxHash: "0x01"},
		{Time: fillAt, Outcome: store.OutcomeUp, Side: store.SideSell, Price: 0.49, Size: 300, TxHash: "0x02"},
	}
	if _, err := q.store.AppendMarketTrades(t.Context(), slug, trades); err != nil {
		t.Fatal(err)
	}
	body := replayBody(slug, func(m map[string]any) { m["orderType"], m["reentryCooldownMs"] = "GTC", 30000 })
	_, res := replayAsEngine(t, b, q, body)
	if len(res.Trades) == 0 || res.Trades[0].Liquidity != replay.LiquidityMaker || res.Trades[0].FillPrice != 0.49 ||
		res.Trades[0].Time != fillAt.UTC().Format("2006-01-02T15:04:05.000000Z") {
		t.Fatalf("trades %+v", res.Trades)
	}
	if len(res.Orders) < 2 || res.Orders[0].Action != replay.OrderPlaced || res.Orders[1].Action != replay.OrderFilled ||
		res.Orders[1].Reason != replay.OrderReasonTrade || res.Performance.OrdersPlaced == nil || *res.Performance.OrdersFilled < 1 {
		t.Errorf("orders %+v, performance %+v", res.Orders, res.Performance)
	}
	if len(res.Warnings) != 0 || res.Strategy.OrderType != "GTC" || res.Strategy.QueueModel != replay.QueueRiskAverse || res.Strategy.ReentryCooldownMs != 30000 {
		t.Errorf("warnings %q, strategy %+v", res.Warnings, res.Strategy)
	}
}

// TestReplayRestingWithoutOrders: a GTC strategy whose entry conditions
// never hold placed no order, and its answer says so with an empty orders
// list beside its zero counters (DESIGN 6: a GTC result carries orders),
// as trades is [] for a replay that never traded; a MARKET answer has no
// orders at all.
func TestReplayRestingWithoutOrders(t *testing.T) {
	t.Parallel()
	b, _ := replaySetup(t, 30*time.Second, true)
	slug, _ := snapshotMarket()
	never := func(m map[string]any) {
		m["entryConditions"] = []map[string]any{{"field": "price_up", "operator": ">", "value": 2}}
	}
	for _, orderType := range []string{"GTC", "MARKET"} {
		r := b.replay(store.Pro, replayBody(slug, func(m map[string]any) { never(m); m["orderType"] = orderType }))
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", orderType, r.status, r.body)
		}
		var env struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatal(err)
		}
		orders, listed := env.Data["orders"]
		switch {
		case string(env.Data["trades"]) != "[]":
			t.Errorf("%s: trades %s, want []", orderType, env.Data["trades"])
		case orderType == "GTC" && string(orders) != "[]":
			t.Errorf("GTC: orders %q (listed %v), want []; performance %s", orders, listed, env.Data["performance"])
		case orderType == "MARKET" && listed:
			t.Errorf("MARKET: orders %s, want none", orders)
		}
	}
}
