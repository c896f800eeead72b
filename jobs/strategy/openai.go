package strategy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/updown/updown/jobs/replay"
)

// maxExplanation bounds a model's explanation in bytes (replay.Clip, at a
// character's start); a model that rambles is cut, not failed.
const maxExplanation = 600

// OpenAI generates strategies with a model behind any OpenAI-compatible
// chat completions API, asking for JSON-schema structured output (see
// Schema). The answer is judged by the replay validator; an invalid one
// gets one repair round in which the model is told what was wrong.
type OpenAI struct {
	client  *openai.Client
	model   string
	timeout time.Duration
	apiKey  string // kept out of the errors it logs (redact)
}

// NewOpenAI returns the OpenAI generator of cfg (its Provider is ignored).
func NewOpenAI(cfg Config) *OpenAI {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = errorAnswers{base: base}
	oc.HTTPClient = &hc
	g := &OpenAI{client: openai.NewClientWithConfig(oc), model: cfg.Model, timeout: cfg.Timeout, apiKey: cfg.APIKey}
	if g.model == "" {
		g.model = DefaultModel
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	return g
}

// Generate implements Generator. When ctx ends before the model answers,
// the error is ctx's (wrapped), not an *Error: the caller gave up, the
// generation did not fail.
func (g *OpenAI) Generate(ctx context.Context, req Request) (Spec, error) {
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemPrompt},
		{Role: openai.ChatMessageRoleUser, Content: userPrompt(req)},
	}
	for attempt := 1; ; attempt++ {
		content, cut, err := g.complete(ctx, msgs)
		if err != nil {
			return Spec{}, err
		}
		spec, problem := readAnswer(req, content)
		if problem == nil {
			return spec, nil
		}
		if cut {
			// The output limit stopped the answer: what the decoder
			// says of its end ("unexpected EOF") helps neither the model
			// nor the user.
			problem = &Error{Code: CodeValidation, Message: "the answer was cut off at the output limit before the JSON object was complete; " +
				"answer with the whole object, shorter (a one-sentence explanation)", Cause: problem}
		}
		if attempt == 2 {
			if cut {
				return Spec{}, generationFailed(problem, "the model's answer was cut off at its output limit before the strategy was complete, "+
					"even when asked for a shorter one; the model or server must allow longer answers (the operator's setting)")
			}
			return Spec{}, generationFailed(problem, "the model did not produce a valid strategy, even after being told what was wrong: %s", problem.Message)
		}
		if content != "" {
			// An empty answer (no choices, null content and no tool
			// call's arguments) is not repeated: OpenAI's API refuses an assistant message
			// without content, and the repair round would be its 400.
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content})
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: repairPrompt(problem)})
	}
}

// complete makes one call and returns the answer's text, and whether the
// output limit cut it off (finish_reason length). Transport and provider
// failures are final (*Error with CodeGenerationFailed); an empty or
// truncated answer is returned for readAnswer to judge.
func (g *OpenAI) complete(ctx context.Context, msgs []openai.ChatCompletionMessage) (string, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	req := openai.ChatCompletionRequest{
		Model:       g.model,
		Messages:    msgs,
		Temperature: 0.2, // some variety across prompts, little within one
		ResponseFormat: &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   schemaName,
				Schema: Schema(),
				Strict: true,
			},
		},
	}
	if openai.NewReasoningValidator().Validate(req) != nil {
		// A reasoning model (o1, o3, o4, gpt-5, ...) takes no sampling
		// temperature: the provider, and go-openai before it, refuse the
		// request that sends one. Left out (0 is omitted), it is the
		// model's own.
		req.Temperature = 0
	}
	resp, err := g.client.CreateChatCompletion(cctx, req)
	if err != nil {
		err = redacted{err: err, secret: g.apiKey}
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", false, fmt.Errorf("generate strategy: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return "", false, generationFailed(err, "the model did not answer within %s; try again later", g.timeout)
	case errors.Is(err, errAnswerTooLarge):
		return "", false, generationFailed(err, "the model provider's answer was over %d MiB, far more than a strategy (is OPENAI_BASE_URL an OpenAI-compatible endpoint?)", maxAnswer>>20)
	case errors.As(err, new(*errorAnswer)):
		// Its words go to the logs through Cause only, as an APIError's.
		return "", false, generationFailed(err, "the model provider answered with an error in place of a chat completion (HTTP 200); try again later")
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
		// (An error body whose "error" is not an object, {"error":"model
		// 'x' not found"}, is a *RequestError around an empty APIError
		// without the status: it is read below, as other bodies are.)
		// The provider's message can quote credentials ("Incorrect API
		// key provided: sk-..."): it goes to the logs through Cause only.
		if accountRefused(apiErr) {
			return "", false, generationFailed(err, "the model provider refused this service's account for its quota or spending limit (HTTP %d); "+
				"retrying will not help: the operator must add credits or raise the limit", apiErr.HTTPStatusCode)
		}
		if apiErr.HTTPStatusCode == http.StatusNotFound {
			code, _ := apiErr.Code.(string)
			return "", false, generationFailed(err, "%s", g.notFound(code == "model_not_found", apiErr.Message))
		}
		return "", false, generationFailed(err, "%s", providerRefusal(apiErr.HTTPStatusCode))
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusMethodNotAllowed:
		// A server's page: something answers at the URL, but not chat
		// completions, most often a base URL without its /v1.
		return "", false, generationFailed(err, "%s", noEndpoint(reqErr.HTTPStatusCode))
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusNotFound:
		// Not OpenAI's error object: a proxy's page, a server's plain
		// "404 page not found", vLLM's {"detail":"Not Found"}, or a
		// server's own words of a model it does not have.
		body := reqErr.Body
		if len(body) > maxNotFoundBody {
			body = body[:maxNotFoundBody]
		}
		return "", false, generationFailed(err, "%s", g.notFound(false, string(body)))
	case errors.As(err, &reqErr):
		return "", false, generationFailed(err, "%s", providerRefusal(reqErr.HTTPStatusCode))
	case errors.Is(err, io.EOF) && !errors.As(err, new(*url.Error)):
		// The answer was read, and held nothing: a 200 with no body (a
		// connection closed before any answer is a *url.Error, below).
		return "", false, generationFailed(err, "the model provider answered HTTP 200 with an empty body (is OPENAI_BASE_URL an OpenAI-compatible endpoint?); try again later")
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The body ended early: a connection cut, or a proxy's.
		return "", false, generationFailed(err, "the model provider's answer was cut off; try again later")
	case undecodable(err):
		// A 200 whose body is not a chat completion: an HTML page, a proxy's
		// answer, an endpoint that is not OpenAI-compatible.
		return "", false, generationFailed(err, "the model provider's answer was not a chat completion (is OPENAI_BASE_URL an OpenAI-compatible endpoint?)")
	default:
		return "", false, generationFailed(err, "the model provider could not be reached; try again later")
	}
	if len(resp.Choices) == 0 {
		return "", false, nil
	}
	ch := resp.Choices[0]
	if r := ch.Message.Refusal; r != "" {
		return "", false, generationFailed(errors.New("refusal: "+r), "the model declined the prompt: %s", replay.Clip(r, 200))
	}
	if ch.FinishReason == openai.FinishReasonContentFilter {
		return "", false, generationFailed(errors.New("content filter"), "the model provider's content filter stopped the answer")
	}
	if ch.Message.Content == "" {
		// A model (or a proxy) that gives structured output as a tool
		// call answers the object as its arguments.
		return toolArguments(ch.Message), ch.FinishReason == openai.FinishReasonLength, nil
	}
	return ch.Message.Content, ch.FinishReason == openai.FinishReasonLength, nil
}

// errorAnswer is a provider's error that came as an HTTP 200 answer:
// OpenAI-compatible routers (OpenRouter) answer some failures upstream of
// them so, with an error object in place of the completion. go-openai
// reads such a body as a completion without choices, which would be taken
// for the model's empty answer and repaired in vain.
type errorAnswer struct{ err string }

func (e *errorAnswer) Error() string {
	return "the provider answered HTTP 200 with an error: " + e.err
}

// maxErrorAnswer bounds how much of such an error is kept for the logs.
const maxErrorAnswer = 500

// maxAnswer bounds an answer's body (an error's too): a strategy is a few
// kilobytes, and go-openai reads whatever comes into memory, so an
// OPENAI_BASE_URL that streams something else would fill the worker's
// memory until the call's timeout.
const maxAnswer = 8 << 20

// errAnswerTooLarge is an answer whose body is over maxAnswer.
var errAnswerTooLarge = fmt.Errorf("the answer's body is over %d MiB", maxAnswer>>20)

// errorAnswers is the transport of the generator's HTTP client: it refuses
// an answer over maxAnswer (errAnswerTooLarge), turns a 200 answer whose
// body is an error object without choices into an *errorAnswer, and
// leaves every other answer as it came.
type errorAnswers struct{ base http.RoundTripper }

func (t errorAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	resp.Body.Close()
	if len(body) > maxAnswer {
		return nil, errAnswerTooLarge
	}
	if rerr != nil {
		// What was read, then the failure, as the client would have met it.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failingReader{rerr}))
		return resp, nil
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	var a struct {
		Error   json.RawMessage `json:"error"`
		Choices json.RawMessage `json:"choices"`
	}
	if json.Unmarshal(body, &a) == nil && !isEmptyJSON(a.Error) && isEmptyJSON(a.Choices) {
		return nil, &errorAnswer{err: replay.Clip(string(a.Error), maxErrorAnswer)}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// isEmptyJSON reports whether a JSON value is absent, null or [].
func isEmptyJSON(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// toolArguments is the arguments of the message's first function call
// that has any (a tool call, or the older function_call), else "".
func toolArguments(m openai.ChatCompletionMessage) string {
	for _, c := range m.ToolCalls {
		if a := strings.TrimSpace(c.Function.Arguments); a != "" {
			return a
		}
	}
	if m.FunctionCall != nil {
		return strings.TrimSpace(m.FunctionCall.Arguments)
	}
	return ""
}

// unfenced is s without a Markdown code fence around it ("```json\n{...}\n```"),
// which models behind endpoints that do not enforce the schema put around
// JSON; s as it is when it is not fenced.
//
// A chat model's habit of words around the fence ("Here is the strategy:
// ```json {...} ``` It buys UP when ...") is read the same way when the
// answer has exactly one fenced block: the fence says where the object is,
// and a repair round would most often get the same words again.
func unfenced(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") {
		open := strings.Index(s, "```")
		if open < 0 || strings.HasPrefix(s, "{") { // a bare object's explanation may quote a fence
			return s
		}
		closing := strings.Index(s[open+3:], "```")
		if closing < 0 {
			return s
		}
		end := open + 3 + closing + 3
		if strings.Contains(s[end:], "```") {
			return s // more than one block: which one is meant is unsaid
		}
		s = s[open:end]
	}
	if len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	// The fence's language tag, if any ("json").
	inner = strings.TrimLeftFunc(inner, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
	return strings.TrimSpace(inner)
}

// withoutThinking is s without the reasoning a model wrote before its
// answer in <think> tags, as reasoning models (DeepSeek-R1, Qwen3) answer
// through OpenAI-compatible servers that do not parse it out into a field
// of its own: the object follows it. s as it is without such a block.
func withoutThinking(s string) string {
	rest, ok := strings.CutPrefix(s, "<think>")
	if !ok {
		return s
	}
	if _, after, found := strings.Cut(rest, "</think>"); found {
		return strings.TrimSpace(after)
	}
	return s
}

// redacted is a provider's error as the logs may show it: providers quote
// the key they were sent ("Incorrect API key provided: sk-..."), in part
// or whole, so the configured key and every word that starts as OpenAI's
// keys do ("sk-") are blotted out. Unwrap gives the error itself.
type redacted struct {
	err    error
	secret string
}

func (r redacted) Error() string {
	msg := r.err.Error()
	if len(r.secret) >= 4 {
		msg = strings.ReplaceAll(msg, r.secret, "[redacted]")
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		if strings.HasPrefix(msg[i:], "sk-") && (i == 0 || !isKeyChar(msg[i-1])) {
			j := i + 3
			for j < len(msg) && isKeyChar(msg[j]) {
				j++
			}
			b.WriteString("sk-[redacted]")
			i = j
			continue
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

func (r redacted) Unwrap() error { return r.err }

// isKeyChar reports whether c can be part of an API key as providers
// write them, masked ones included ("sk-proj-abc*****xyz").
func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '*'
}

// undecodable reports whether err is the provider's answer failing to
// decode as JSON.
func undecodable(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ)
}

// jsonProblem says what the decoder found wrong with an answer in the
// schema's words, where encoding/json names Go's types ("cannot unmarshal
// string into Go struct field answer.entryConditions of type
// []replay.Condition"): the message goes to the model to mend, and to the
// user when it does not.
func jsonProblem(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		where := typ.Field
		if where == "" {
			where = "the answer"
		}
		return fmt.Sprintf("%s is a JSON %s where the schema wants %s", where, typ.Value, replay.WithArticle(replay.JSONKind(typ.Type)))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// answer is the shape Schema describes, used to catch fields it does not.
type answer struct {
	Side            string             `json:"side"`
	EntryConditions []replay.Condition `json:"entryConditions"`
	ExitConditions  []replay.Condition `json:"exitConditions"`
	PositionSize    float64            `json:"positionSize"`
	MaxLossPercent  *float64           `json:"maxLossPercent"`
	OrderType       string             `json:"orderType"`
	FeeModel        string             `json:"feeModel"`
	FeeRate         *float64           `json:"feeRate"`
	FeeExponent     *float64           `json:"feeExponent"`
	LatencyMs       *float64           `json:"latencyMs"`

	ReentryCooldownMs   *float64 `json:"reentryCooldownMs"`
	MaxEntriesPerMarket *float64 `json:"maxEntriesPerMarket"`
	PostOnly            *bool    `json:"postOnly"`
	LimitOffsetTicks    *float64 `json:"limitOffsetTicks"`
	CancelAfterMs       *float64 `json:"cancelAfterMs"`
	QueueModel          *string  `json:"queueModel"`
	IncludeRebates      *bool    `json:"includeRebates"`

	Explanation string `json:"explanation"`
}

// withoutPlaceholders returns the answer b without the keys whose value
// is a placeholder for "none": the strict schema makes the model answer
// every key, and models put the "nothing" of a number or an enum where the
// schema asks for null (or false), while /v1/replay refuses these keys
// stated where they do not apply. Read as absent they say what the
// answer's other keys say already: postOnly false (with GTC, what its
// absence means), feeRate 0 and feeExponent 1 without CUSTOM fees, and
// queueModel RISK_AVERSE (the default) without GTC. (null needs no help:
// the replay decoder reads it as absent. The whole-number rules are the
// answer's own numbers, given to finish: see readAnswer.) A value that
// says something (a rate of 0.05 without CUSTOM) is kept, for the repair
// round to mend.
//
// With the request's orderType MARKET or LIMIT (orderType), which wins
// over the answer's (finish), the answer's details of a resting order go
// too, whatever they say: the model was asked for a resting order in the
// user's words, and the built-in generator drops the prompt's the same
// way; readAnswer notes them (droppedResting).
func withoutPlaceholders(b []byte, a answer, orderType string) ([]byte, error) {
	drop := map[string]bool{}
	if orderType == replay.OrderMarket || orderType == replay.OrderLimit {
		for _, k := range restingKeys {
			drop[strings.ToLower(k)] = true
		}
	}
	if a.PostOnly != nil && !*a.PostOnly {
		drop["postonly"] = true
	}
	if a.FeeModel != replay.FeeCustom {
		if a.FeeRate != nil && *a.FeeRate == 0 {
			drop["feerate"] = true
		}
		if a.FeeExponent != nil && *a.FeeExponent == 1 {
			drop["feeexponent"] = true
		}
	}
	if a.OrderType != replay.OrderGTC && a.QueueModel != nil && *a.QueueModel == replay.QueueRiskAverse {
		drop["queuemodel"] = true
	}
	if len(drop) == 0 {
		return b, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k := range m {
		if drop[strings.ToLower(k)] { // keys match in any case, as encoding/json's
			delete(m, k)
		}
	}
	return json.Marshal(m)
}

// readAnswer judges a model's answer: JSON of the schema's shape whose
// rules (with the request's explicit values put in) pass the replay
// validator. A problem is said so that the model can mend it.
func readAnswer(req Request, content string) (Spec, *Error) {
	content = unfenced(withoutThinking(strings.TrimSpace(content)))
	if content == "" {
		return Spec{}, invalid("", "the answer was empty; answer with the JSON object of the schema")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(content)))
	dec.DisallowUnknownFields()
	var a answer
	if err := dec.Decode(&a); err != nil {
		return Spec{}, invalid("", "the answer is not the JSON object of the schema: "+jsonProblem(err))
	}
	if dec.More() {
		return Spec{}, invalid("", "the answer has text after the JSON object; answer with the object alone")
	}
	// replay decodes the rules itself so that an explicit maxLossPercent
	// of 0 is refused, not taken for the default.
	rules, err := withoutPlaceholders([]byte(content), a, req.OrderType)
	if err != nil {
		return Spec{}, invalid("", "the answer is not the JSON object of the schema: "+jsonProblem(err))
	}
	st, err := replay.DecodeStrategy(rules, "explanation")
	if err != nil {
		return Spec{}, invalid("", "the answer is not the JSON object of the schema: "+err.Error())
	}
	if st.FeeModel == replay.FeeNone {
		// The schema makes the model answer a fee model; its NONE is "no
		// fees asked for", as a strategy without one says.
		st.FeeModel = ""
	}
	if a.LimitOffsetTicks != nil && *a.LimitOffsetTicks == 0 {
		// The default, and refused stated with MARKET or LIMIT: absent.
		a.LimitOffsetTicks = nil
	}
	// 0 is no count of entries (they start at 1): the placeholder of null,
	// no limit. So is a cancelAfterMs of 0 without GTC, where nothing
	// rests; with GTC it may mean "at once", and gets the repair round.
	if a.MaxEntriesPerMarket != nil && *a.MaxEntriesPerMarket == 0 {
		a.MaxEntriesPerMarket = nil
	}
	if a.CancelAfterMs != nil && *a.CancelAfterMs == 0 && a.OrderType != replay.OrderGTC {
		a.CancelAfterMs = nil
	}
	spec, ferr := finish(req, st, orderRules{a.ReentryCooldownMs, a.MaxEntriesPerMarket, a.LimitOffsetTicks, a.CancelAfterMs}, "")
	if ferr != nil {
		var e *Error
		if errors.As(ferr, &e) {
			return Spec{}, e
		}
		return Spec{}, invalid("", ferr.Error())
	}
	if e := OutOfDomain(spec.Rules); e != nil {
		return Spec{}, e
	}
	spec.Explanation = replay.Clip(strings.TrimSpace(a.Explanation), maxExplanation)
	if spec.Explanation == "" {
		spec.Explanation = Describe(spec.Rules)
	}
	if note := droppedResting(a.resting(), req.OrderType, "model's answer"); note != "" {
		spec.Explanation += " " + note
	}
	return spec, nil
}

// resting is the answer's details of a resting order, as droppedResting
// lists them: what the strict schema makes a model answer where it means
// none (postOnly and includeRebates false, limitOffsetTicks and
// cancelAfterMs 0, queueModel RISK_AVERSE, the default) is no detail.
func (a answer) resting() restingDetails {
	d := restingDetails{order: a.OrderType, postOnly: a.PostOnly != nil && *a.PostOnly, rebates: a.IncludeRebates != nil && *a.IncludeRebates}
	if a.LimitOffsetTicks != nil && *a.LimitOffsetTicks > 0 {
		d.offset = a.LimitOffsetTicks
	}
	if a.CancelAfterMs != nil && *a.CancelAfterMs > 0 {
		d.cancel = a.CancelAfterMs
	}
	if a.QueueModel != nil && *a.QueueModel == replay.QueueFront {
		d.queue = replay.QueueFront
	}
	return d
}

// systemPrompt tells the model the domain and the rules of the game.
const systemPrompt = `You write trading strategies for short up/down prediction markets on BTC, ETH and SOL.
Each market asks whether the coin's price at the end of its window (5 minutes to 24 hours) is at or above the price at the start.
Two tokens trade: UP and DOWN. The winning token pays 1 per share at the end, the other 0, so price_up is the market's probability that UP wins (0 to 1) and price_down is about 1 - price_up.
A strategy buys one side (UP or DOWN) when all of its entry conditions hold on a snapshot, and sells the whole position when any exit condition holds, or when the position has lost maxLossPercent of its cost; a position still open at the end settles at 1 or 0. After an exit it may enter again.
A condition compares one field of a snapshot with a number:
- price_up, price_down: token prices, 0 to 1
- coin_price: the coin's price in USD
- spread: |price_up - price_down|, 0 to 1
- time_remaining_pct: percent of the market's window left, 100 at the start, 0 at the end
Time left said as a share of the window ("with 20% left") is time_remaining_pct; said as a duration ("with 2 minutes left", "in the last 30 s", "with 1h to go") it is time_remaining_s in seconds (time_remaining_s <= 120), never a rounded percentage, which misses the snapshot at exactly that time.
Operators: <, >, <=, >=, == (exact equality, rarely useful), crosses_above and crosses_below (the field passed the value since the previous snapshot).
Give 1 to 20 entry conditions and 1 to 20 exit conditions. positionSize is shares per trade (1 to 10000), maxLossPercent is 1 to 100, orderType is MARKET, LIMIT (fills only at the signal price or better) or GTC (a maker order resting on the book until trades fill it; postOnly, limitOffsetTicks, cancelAfterMs and queueModel tune it and are false, 0, null and null otherwise).
More fields, beyond the five above: bid_up/bid_down (best bid), mid_up/mid_down, display_up/display_down (the price Polymarket shows), coin_move_pct (percent from the price to beat: >= 0 while UP wins), time_remaining_s (seconds left), coin_return_60s (percent change over 60 s), imbalance_up/imbalance_down (book imbalance, -1 to 1).
After an exit the strategy waits reentryCooldownMs before entering again: 30000 unless the user asks otherwise (0 for none). A duration between trades is that wait, never the markets (they are named below): "5m between trades" is 300000, "wait 15m between entries" 900000, "1h cooldown" 3600000. So is a rhythm of trades ("trade every 5m" is 300000, "once every hour" 3600000), never the markets; a rhythm of checks ("check every 5 minutes") is no field: the conditions are checked on every snapshot, so leave it out and say so in the explanation. maxEntriesPerMarket caps entries per market (null: no cap). includeRebates counts the estimated maker rebates of GTC fills.
The backtest can count costs when the user asks: feeModel MARKET charges the market's own taker fee (Polymarket's: shares x 0.07 x p(1-p)), CUSTOM charges feeRate (0 to 1) with feeExponent (1 to 4), NONE charges nothing (the default); latencyMs (0 to 60000) delays every order by that many milliseconds. feeRate and feeExponent are null unless feeModel is CUSTOM.
Answer with the JSON object the schema describes. The explanation says in one or two sentences what the strategy does. If the idea needs something these fields cannot express (indicators, volume, news), approximate it with them and say so in the explanation.`

// userPrompt states the request: the idea, the markets, and the values the
// caller fixed.
func userPrompt(req Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Markets: %s %s up/down markets.\n", req.Coin, req.MarketType)
	if p, ok := presetNamed(req.Preset); ok {
		fmt.Fprintf(&b, "Start from the %s preset: %s. Its rules: %s.\n", p.name, p.description,
			FormatCode(Rules{Strategy: replay.Strategy{Side: p.side, EntryConditions: p.entry, ExitConditions: p.exit,
				PositionSize: DefaultPositionSize, MaxLossPercent: p.maxLoss, OrderType: replay.OrderMarket}}))
	}
	if req.PositionSize != nil {
		fmt.Fprintf(&b, "Use positionSize %s.\n", replay.FormatNum(*req.PositionSize))
	}
	if req.MaxLossPercent != nil {
		fmt.Fprintf(&b, "Use maxLossPercent %s.\n", replay.FormatNum(*req.MaxLossPercent))
	}
	if req.OrderType != "" {
		fmt.Fprintf(&b, "Use orderType %s.\n", req.OrderType)
	}
	if req.FeeModel != "" {
		fmt.Fprintf(&b, "Use feeModel %s.\n", req.FeeModel)
	}
	if req.LatencyMs != nil {
		fmt.Fprintf(&b, "Use latencyMs %s.\n", replay.FormatNum(*req.LatencyMs))
	}
	o := req.OrderSettings
	for _, n := range []struct {
		key string
		v   *float64
	}{{"reentryCooldownMs", o.ReentryCooldownMs}, {"maxEntriesPerMarket", o.MaxEntriesPerMarket},
		{"limitOffsetTicks", o.LimitOffsetTicks}, {"cancelAfterMs", o.CancelAfterMs}} {
		if n.v != nil {
			fmt.Fprintf(&b, "Use %s %s.\n", n.key, replay.FormatNum(*n.v))
		}
	}
	if o.PostOnly != nil {
		fmt.Fprintf(&b, "Use postOnly %t.\n", *o.PostOnly)
	}
	if o.QueueModel != "" {
		fmt.Fprintf(&b, "Use queueModel %s.\n", o.QueueModel)
	}
	if o.IncludeRebates != nil {
		fmt.Fprintf(&b, "Use includeRebates %t.\n", *o.IncludeRebates)
	}
	if req.Prompt == "" {
		b.WriteString("The user gave no idea of their own: use the preset as it is.")
		return b.String()
	}
	fmt.Fprintf(&b, "The idea, in the user's words:\n%s", req.Prompt)
	return b.String()
}

func repairPrompt(problem *Error) string {
	where := ""
	if problem.Field != "" {
		where = " (at " + problem.Field + ")"
	}
	return "That answer cannot be used" + where + ": " + problem.Message +
		"\nAnswer again with the whole corrected JSON object."
}

// accountErrors are the error codes (and types) with which OpenAI refuses
// an account out of credits or past a spending or usage limit. It answers
// them with 429, as it answers a rate limit, but no wait mends them: only
// the operator's billing does.
var accountErrors = map[string]bool{
	"insufficient_quota":                true,
	"credit_balance_exhausted":          true,
	"organization_spend_limit_exceeded": true,
	"project_spend_limit_exceeded":      true,
	"organization_usage_limit_exceeded": true,
}

// accountRefused reports whether the provider refused the account's
// quota or spending (accountErrors), not the rate of its requests.
func accountRefused(e *openai.APIError) bool {
	code, _ := e.Code.(string)
	return accountErrors[code] || accountErrors[e.Type]
}

// maxNotFoundBody bounds how much of a 404's body is searched for what
// was not found: the words are at its start, and a proxy's page may be
// long.
const maxNotFoundBody = 4 << 10

// reModelUnknown is a provider's words for a model it does not have, in
// the phrasings of OpenAI ("The model `gpt-9` does not exist"), Ollama
// ("model \"llama9\" not found, try pulling it first"), vLLM ("The model
// `x` does not exist.", a name that may hold a slash) and others ("Unknown
// model: x", "no such model"). A server's page that echoes a path with
// "models" in it matches too ("The requested URL /openai/models/chat/completions
// was not found"): reRouteWords tells it apart.
var reModelUnknown = regexp.MustCompile(`(?i)\bmodels?\b[^\n]{0,120}?(?:\bnot\s+found\b|\bdoes\s+not\s+exist\b|\bdoesn['’]t\s+exist\b|\bis\s+unknown\b|\bnot\s+available\b)|` +
	`\b(?:unknown|no\s+such|nonexistent|non-existent)\s+models?\b|\bmodel[_ ]not[_ ]found\b`)

// reRouteUnknown is a server's words for a path it does not serve:
// OpenAI's own for a URL without its /v1 ("Invalid URL (POST
// /chat/completions)", "Unknown request URL: POST ..."), Express's
// "Cannot POST /chat/completions".
var reRouteUnknown = regexp.MustCompile(`(?i)\binvalid\s+url\b|\bunknown\s+request\s+url\b|\bcannot\s+post\s+/`)

// reRouteWords is a server's words that name the request's URL or path:
// those of reRouteUnknown, Apache's "The requested URL ... was not found",
// or the path itself. Where they are, words of reModelUnknown may be the
// path's ("/openai/models/chat/completions"), not a model's.
var reRouteWords = regexp.MustCompile(reRouteUnknown.String() + `|\brequested\s+url\b|/chat/completions\b`)

// notFound says what a provider's 404 means. The same status answers a
// model the provider does not have (OpenAI's model_not_found, Ollama's
// "model not found") and a URL where nothing answers chat completions (an
// OPENAI_BASE_URL without its /v1): the operator's fix is one or the
// other, so the message names the one the provider's words (said) point
// at, and both when they tell nothing apart ("Not Found", a proxy's page).
// modelCode is whether the provider said so by its error code
// (model_not_found), which its words cannot gainsay; words of a model
// beside words of a URL (reRouteWords) tell nothing apart either.
// The provider's words themselves go to the logs only, through the cause.
func (g *OpenAI) notFound(modelCode bool, said string) string {
	modelWords, routeWords := reModelUnknown.MatchString(said), reRouteWords.MatchString(said)
	switch {
	case modelCode || modelWords && !routeWords:
		return fmt.Sprintf("the model provider does not know the model %q (HTTP 404); retrying will not help: "+
			"the operator must check OPENAI_MODEL, which must name a model this provider serves", g.model)
	case !modelWords && reRouteUnknown.MatchString(said):
		return noEndpoint(http.StatusNotFound)
	default:
		return fmt.Sprintf("the model provider answered HTTP 404 without saying whether its chat completions endpoint or the model %q was not found; "+
			"retrying will not help: the operator must check that OPENAI_BASE_URL is the API's root, with its /v1 (https://api.openai.com/v1, http://localhost:11434/v1), "+
			"and that OPENAI_MODEL names a model this provider serves", g.model)
	}
}

// noEndpoint is the message of a URL where nothing answers chat
// completions, most often an OPENAI_BASE_URL without its /v1 (Ollama's
// http://localhost:11434).
func noEndpoint(status int) string {
	return fmt.Sprintf("the model provider has no chat completions endpoint at OPENAI_BASE_URL (HTTP %d); retrying will not help: "+
		"the operator must check that OPENAI_BASE_URL is the API's root, with its /v1 (https://api.openai.com/v1, http://localhost:11434/v1)", status)
}

// providerRefusal says what the provider's HTTP status means to the user:
// a busy or failing provider (429, 5xx) is worth a retry; a refused key or
// a model or option it does not take (other 4xx) is the operator's to fix,
// and a retry only spends the user's time.
func providerRefusal(status int) string {
	switch {
	case status == http.StatusTooManyRequests || status >= 500 || status < 400:
		return fmt.Sprintf("the model provider answered HTTP %d; try again later", status)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("the model provider refused this service's credentials (HTTP %d); retrying will not help: the operator must check its API key", status)
	default:
		return fmt.Sprintf("the model provider refused the request (HTTP %d), as it does a model or an option it does not offer; retrying will not help: the operator must check the model setting", status)
	}
}
