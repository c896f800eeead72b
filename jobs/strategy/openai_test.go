package strategy_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/updown/updown/jobs/strategy"
	"github.com/updown/updown/jobs/strategy/openaitest"
)

// good is a valid answer of the schema's shape.
func good() map[string]any {
	return map[string]any{
		"side":            "UP",
		"entryConditions": []map[string]any{{"field": "price_up", "operator": "<", "value": 0.35}},
		"exitConditions":  []map[string]any{{"field": "price_up", "operator": ">=", "value": 0.6}},
		"positionSize":    50,
		"maxLossPercent":  25,
		"orderType":       "MARKET",
		"explanation":     "Buys UP cheap and sells it back near 0.6.",
	}
}

func with(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func newOpenAI(fake *openaitest.Server, timeout time.Duration) *strategy.OpenAI {
	return strategy.NewOpenAI(strategy.Config{APIKey: "sk-test", BaseURL: fake.URL, Model: "test-model", Timeout: timeout})
}

func request(t *testing.T) strategy.Request {
	t.Helper()
	req := strategy.Request{Prompt: "buy UP when it is cheap, sell when it recovers", Coin: "ETH", MarketType: "5m"}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestOpenAIGenerates(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t, openaitest.JSON(good()))
	spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	const want = "coin=ETH type=5m side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=50 maxloss=25 order=MARKET cooldown=30000"
	if got := strategy.FormatCode(spec.Rules); got != want || spec.Explanation != "Buys UP cheap and sells it back near 0.6." {
		t.Errorf("got %s / %q", got, spec.Explanation)
	}
	calls := fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	c := calls[0]
	if c.Authorization != "Bearer sk-test" || c.Request.Model != "test-model" {
		t.Errorf("auth %q model %q", c.Authorization, c.Request.Model)
	}
	rf := c.Request.ResponseFormat
	if rf == nil || rf.Type != openai.ChatCompletionResponseFormatTypeJSONSchema || rf.JSONSchema == nil || !rf.JSONSchema.Strict {
		t.Fatalf("response_format %+v", rf)
	}
	sent, _ := json.Marshal(rf.JSONSchema.Schema)
	if string(sent) != string(strategy.Schema()) {
		t.Errorf("schema sent differs from Schema()")
	}
	if len(c.Request.Messages) != 2 || !strings.Contains(c.Request.Messages[1].Content, "buy UP when it is cheap") ||
		!strings.Contains(c.Request.Messages[1].Content, "ETH 5m") {
		t.Errorf("messages %+v", c.Request.Messages)
	}
}

// TestOpenAIRepairs: an answer that is not valid gets one repair round
// that quotes the problem; a good repair is used.
func TestOpenAIRepairs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, bad, told string
	}{
		{"invalid JSON", `{"side": "UP", "entryConditions": [`, "not the JSON object of the schema"},
		{"unknown field", mustJSON(with(good(), "leverage", 10)), `unknown field "leverage"`},
		{"bad field", mustJSON(with(good(), "entryConditions", []map[string]any{{"field": "rsi", "operator": "<", "value": 30}})),
			`(at entryConditions[0].field): entryConditions[0].field "rsi" is not one of`},
		{"size out of range", mustJSON(with(good(), "positionSize", 0)), "positionSize is missing or 0"},
		{"explicit zero stop loss", mustJSON(with(good(), "maxLossPercent", 0)), "maxLossPercent 0 is out of range"},
		{"empty", "", "the answer was empty"},
		{"trailing text", mustJSON(good()) + " I hope this helps!", "text after the JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := openaitest.New(t, openaitest.Content(tc.bad), openaitest.JSON(good()))
			if _, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t)); err != nil {
				t.Fatal(err)
			}
			calls := fake.Calls()
			if len(calls) != 2 {
				t.Fatalf("%d calls, want 2", len(calls))
			}
			msgs := calls[1].Request.Messages
			if tc.bad == "" {
				// Nothing to repeat: an assistant message without content
				// is refused by OpenAI (the fake too).
				if len(msgs) != 3 || msgs[2].Role != "user" || !strings.Contains(msgs[2].Content, tc.told) {
					t.Errorf("repair messages %+v\nwant a message saying %q", msgs[2:], tc.told)
				}
				return
			}
			if len(msgs) != 4 || msgs[2].Role != "assistant" || msgs[2].Content != tc.bad || msgs[3].Role != "user" ||
				!strings.Contains(msgs[3].Content, tc.told) {
				t.Errorf("repair messages %+v\nwant the bad answer, then a message saying %q", msgs[2:], tc.told)
			}
		})
	}
	// An answer cut off at the output limit is repaired by asking for a
	// shorter one, not by quoting the decoder.
	fake := openaitest.New(t, openaitest.Answer{Content: `{"side": "UP", "entryConditions": [`, FinishReason: openai.FinishReasonLength}, openaitest.JSON(good()))
	if _, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t)); err != nil {
		t.Fatal(err)
	}
	if calls := fake.Calls(); len(calls) != 2 || !strings.Contains(calls[1].Request.Messages[len(calls[1].Request.Messages)-1].Content, "cut off at the output limit") {
		t.Errorf("repair of a cut-off answer: %d calls, want 2 whose last message says it was cut off at the output limit", len(calls))
	}
	// No choices at all is repaired the same way.
	fake = openaitest.New(t, openaitest.Answer{NoChoices: true}, openaitest.JSON(good()))
	if _, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAIReadsWrappedAnswers: the schema's object is read, without a
// repair round, where a model behind an OpenAI-compatible endpoint that
// does not enforce the schema wraps it: in a Markdown code fence (also one
// amid prose, as chat models write it), or as the arguments of a tool call
// with no content.
func TestOpenAIReadsWrappedAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer openaitest.Answer
	}{
		{"json fence", openaitest.Content("```json\n" + mustJSON(good()) + "\n```")},
		{"bare fence", openaitest.Content("```\n" + mustJSON(good()) + "\n```\n")},
		{"fence on one line", openaitest.Content("```json " + mustJSON(good()) + "```")},
		{"tool call", openaitest.ToolCall("strategy", good())},
		{"prose around a fence", openaitest.Content("Here is the strategy you asked for:\n\n```json\n" + mustJSON(good()) + "\n```\n\nIt buys UP when cheap.")},
		{"prose before a fence", openaitest.Content("Sure! ```json\n" + mustJSON(good()) + "\n```")},
		// Reasoning models behind OpenAI-compatible servers (DeepSeek-R1,
		// Qwen3 through Ollama or vLLM without a reasoning parser) answer
		// their thinking first, in <think> tags, then the object.
		{"thinking first", openaitest.Content("<think>\nThe user wants to buy UP when it is cheap; price_up < 0.35 {not JSON}.\n</think>\n\n" + mustJSON(good()))},
		{"thinking before a fence", openaitest.Content("<think>Cheap is below 0.35.</think>\n```json\n" + mustJSON(good()) + "\n```")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := openaitest.New(t, tc.answer)
			spec, err := newOpenAI(fake, 30*time.Second).Generate(context.Background(), request(t))
			if err != nil {
				t.Fatal(err)
			}
			const want = "coin=ETH type=5m side=UP entry: price_up < 0.35 exit: price_up >= 0.6 size=50 maxloss=25 order=MARKET cooldown=30000"
			if got := strategy.FormatCode(spec.Rules); got != want {
				t.Errorf("got %s", got)
			}
			if n := len(fake.Calls()); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
		})
	}
	// A fence around something else is still repaired, and said so.
	fake := openaitest.New(t, openaitest.Content("```json\n{\"side\": \n```"), openaitest.JSON(good()))
	if _, err := newOpenAI(fake, 30*time.Second).Generate(context.Background(), request(t)); err != nil {
		t.Fatal(err)
	}
	if calls := fake.Calls(); len(calls) != 2 || !strings.Contains(calls[1].Request.Messages[3].Content, "not the JSON object of the schema") {
		t.Errorf("calls %+v", calls)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestOpenAIFails: every failure kind is AI_STRATEGY_GENERATION_FAILED,
// with a message for the user that never quotes the provider.
func TestOpenAIFails(t *testing.T) {
	t.Parallel()
	secret := "Incorrect API key provided: sk-secret. Your key sk-test is not valid"
	cases := []struct {
		name    string
		answers []openaitest.Answer
		msg     string
		calls   int
	}{
		{"invalid twice", []openaitest.Answer{openaitest.Content("nope"), openaitest.Content("{")}, "even after being told what was wrong", 2},
		// The decoder's words for a value of the wrong type name Go's
		// types: the schema's are said instead.
		{"wrong types twice", []openaitest.Answer{openaitest.JSON(with(good(), "entryConditions", "price_up < 0.4")), openaitest.JSON(with(good(), "side", 1))},
			"side is a JSON number where the schema wants a string", 2},
		{"invalid rules twice", []openaitest.Answer{openaitest.JSON(with(good(), "side", "SIDEWAYS")), openaitest.JSON(with(good(), "side", "LEFT"))},
			`side "LEFT" is not one of UP, DOWN`, 2},
		{"slow", []openaitest.Answer{openaitest.Slow(2*time.Second, openaitest.JSON(good()))}, "did not answer within 200ms", 1},
		{"slow repair", []openaitest.Answer{openaitest.Content("{"), openaitest.Slow(2*time.Second, openaitest.JSON(good()))}, "did not answer within", 2},
		{"5xx", []openaitest.Answer{openaitest.Error(http.StatusInternalServerError, secret)}, "answered HTTP 500", 1},
		{"401", []openaitest.Answer{openaitest.Error(http.StatusUnauthorized, secret)}, "refused this service's credentials (HTTP 401); retrying will not help", 1},
		{"404 model", []openaitest.Answer{openaitest.Error(http.StatusNotFound, "The model `gpt-9` does not exist")}, `does not know the model "test-model" (HTTP 404)`, 1},
		{"429", []openaitest.Answer{openaitest.Error(http.StatusTooManyRequests, "rate limited")}, "answered HTTP 429", 1},
		{"429 rate limit", []openaitest.Answer{openaitest.APIError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
			"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.")}, "answered HTTP 429; try again later", 1},
		// OpenAI answers an account out of credits, or past its spend
		// limit, with 429 too: a wait mends nothing, the operator must.
		{"429 insufficient quota", []openaitest.Answer{openaitest.APIError(http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota",
			"You exceeded your current quota, please check your plan and billing details.")},
			"the model provider refused this service's account for its quota or spending limit (HTTP 429); retrying will not help: the operator must add credits or raise the limit", 1},
		{"429 credit balance", []openaitest.Answer{openaitest.APIError(http.StatusTooManyRequests, "insufficient_quota", "credit_balance_exhausted",
			"Your credit balance is too low.")}, "retrying will not help: the operator must add credits", 1},
		{"429 spend limit", []openaitest.Answer{openaitest.APIError(http.StatusTooManyRequests, "invalid_request_error", "project_spend_limit_exceeded",
			"This project has exceeded its monthly spend limit.")}, "retrying will not help: the operator must add credits", 1},
		{"401 invalid key", []openaitest.Answer{openaitest.APIError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", secret)},
			"refused this service's credentials (HTTP 401); retrying will not help", 1},
		{"not JSON error body", []openaitest.Answer{{Status: http.StatusBadGateway, Raw: "<html>bad gateway</html>"}}, "answered HTTP 502", 1},
		{"error string", []openaitest.Answer{{Status: http.StatusInternalServerError, Raw: `{"error":"` + secret + `"}`}}, "answered HTTP 500; try again later", 1},
		{"not JSON answer", []openaitest.Answer{{Status: http.StatusOK, Raw: "<html>welcome</html>"}}, "was not a chat completion", 1},
		{"cut-off answer", []openaitest.Answer{{Status: http.StatusOK, Raw: `{"choices":[{"message":`}}, "was cut off; try again later", 1},
		{"empty body", []openaitest.Answer{{EmptyBody: true}}, "answered HTTP 200 with an empty body", 1},
		// An answer the output limit cut short, twice, is said to be
		// that, not "unexpected EOF".
		{"cut off twice", []openaitest.Answer{{Content: `{"side": "UP", "entryConditions": [`, FinishReason: openai.FinishReasonLength},
			{Content: `{"side": "UP", "entry`, FinishReason: openai.FinishReasonLength}}, "cut off at its output limit", 2},
		// OpenAI-compatible routers (OpenRouter) answer some upstream
		// failures as a 200 whose body is an error object: that is the
		// provider failing, not a model's empty answer to repair.
		{"error in a 200", []openaitest.Answer{{Status: http.StatusOK, Raw: `{"error":{"message":"Provider returned error: ` + secret + `","code":502}}`}},
			"answered with an error in place of a chat completion", 1},
		// A body past 8 MiB is refused, not read whole into memory: a
		// good answer padded past it, and an error page as large.
		{"oversize answer", []openaitest.Answer{{Status: http.StatusOK, Raw: strings.Repeat(" ", 9<<20) + completionJSON(t, good())}},
			"answer was over 8 MiB", 1},
		{"oversize error", []openaitest.Answer{{Status: http.StatusBadGateway, Message: strings.Repeat("x", 9<<20)}}, "answer was over 8 MiB", 1},
		{"refusal", []openaitest.Answer{{Refusal: "I can't help with that."}}, "declined the prompt: I can't help with that.", 1},
		{"content filter", []openaitest.Answer{{FinishReason: openai.FinishReasonContentFilter}}, "content filter", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := openaitest.New(t, tc.answers...)
			// Only the slow cases meet the timeout; the others get one a
			// loaded machine cannot miss.
			timeout := 30 * time.Second
			if strings.HasPrefix(tc.name, "slow") {
				timeout = 200 * time.Millisecond
			}
			_, err := newOpenAI(fake, timeout).Generate(context.Background(), request(t))
			var e *strategy.Error
			if !errors.As(err, &e) || e.Code != strategy.CodeGenerationFailed || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("error %v, want AI_STRATEGY_GENERATION_FAILED saying %q", err, tc.msg)
			}
			if strings.Contains(e.Message, "Go struct") || strings.Contains(e.Message, "Go value") {
				t.Errorf("message %q names Go's types", e.Message)
			}
			if strings.Contains(e.Message, "sk-secret") || e.Cause == nil {
				t.Errorf("message %q leaks the provider's words, or no cause is kept for the logs", e.Message)
			}
			// The cause goes to the logs: without the key the provider quoted.
			if c := e.Cause.Error(); strings.Contains(c, "sk-secret") || strings.Contains(c, "sk-test") {
				t.Errorf("cause %q, logged, quotes an API key", c)
			}
			if n := len(fake.Calls()); n != tc.calls {
				t.Errorf("%d calls, want %d", n, tc.calls)
			}
		})
	}
	// No server at all.
	g := strategy.NewOpenAI(strategy.Config{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1", Timeout: time.Second})
	_, err := g.Generate(context.Background(), request(t))
	var e *strategy.Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "could not be reached") {
		t.Errorf("unreachable provider: %v", err)
	}
	// A server that closes the connection without answering is not an
	// empty answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	g = strategy.NewOpenAI(strategy.Config{APIKey: "k", BaseURL: "http://" + ln.Addr().String() + "/v1", Timeout: 30 * time.Second})
	_, err = g.Generate(context.Background(), request(t))
	if !errors.As(err, &e) || !strings.Contains(e.Message, "could not be reached") {
		t.Errorf("a provider that hangs up: %v", err)
	}
}

// TestOpenAIBaseURLWithoutItsRoot: an OPENAI_BASE_URL without the API's
// /v1 (Ollama's http://localhost:11434, where http://localhost:11434/v1
// is meant) finds no chat completions: the server's plain "404 page not
// found", which does not say what was not found, so the 502 names the
// base URL as well as the model, where it sent the operator to the model
// setting alone.
func TestOpenAIBaseURLWithoutItsRoot(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t)
	g := strategy.NewOpenAI(strategy.Config{APIKey: "sk-test", BaseURL: strings.TrimSuffix(fake.URL, "/v1"), Model: "test-model", Timeout: 30 * time.Second})
	_, err := g.Generate(context.Background(), request(t))
	var e *strategy.Error
	if !errors.As(err, &e) || e.Code != strategy.CodeGenerationFailed ||
		!strings.Contains(e.Message, "OPENAI_BASE_URL is the API's root, with its /v1") || !strings.Contains(e.Message, `the model "test-model"`) {
		t.Errorf("error %v, want AI_STRATEGY_GENERATION_FAILED naming OPENAI_BASE_URL's /v1 and the model", err)
	}
}

// TestOpenAINotFound: a provider's 404 is either a model it does not have
// or a URL where nothing answers chat completions. The message names the
// one the body points at, and both when the body does not tell them apart
// (it blamed the base URL for every body that was not OpenAI's error
// object, a model Ollama or vLLM said it did not have included, and the
// model for every one that was, OpenAI's "Invalid URL" of a base URL
// without its /v1 included). The provider's own words stay in the logs.
func TestOpenAINotFound(t *testing.T) {
	t.Parallel()
	const (
		model    = `the model provider does not know the model "test-model" (HTTP 404); retrying will not help: the operator must check OPENAI_MODEL`
		endpoint = "the model provider has no chat completions endpoint at OPENAI_BASE_URL (HTTP 404); retrying will not help"
		both     = `the model provider answered HTTP 404 without saying whether its chat completions endpoint or the model "test-model" was not found; ` +
			"retrying will not help: the operator must check that OPENAI_BASE_URL is the API's root, with its /v1 (https://api.openai.com/v1, http://localhost:11434/v1), " +
			"and that OPENAI_MODEL names a model this provider serves"
	)
	raw := func(status int, body string) openaitest.Answer { return openaitest.Answer{Status: status, Raw: body} }
	for _, tc := range []struct {
		name   string
		answer openaitest.Answer
		want   string
	}{
		// OpenAI's error object.
		{"openai model_not_found", openaitest.APIError(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"The model `gpt-9` does not exist or you do not have access to it."), model},
		{"openai error object, model words only", openaitest.Error(http.StatusNotFound, "The model `gpt-9` does not exist"), model},
		{"ollama error object", openaitest.APIError(http.StatusNotFound, "api_error", "", `model "llama9" not found, try pulling it first`), model},
		{"openai invalid url", openaitest.APIError(http.StatusNotFound, "invalid_request_error", "", "Invalid URL (POST /chat/completions)"), endpoint},
		{"openai unknown request url", openaitest.APIError(http.StatusNotFound, "invalid_request_error", "",
			"Unknown request URL: POST /chat/completions. Please check the URL for typos."), endpoint},
		{"error object saying not found", openaitest.Error(http.StatusNotFound, "Not Found"), both},
		// Other bodies.
		{"vllm model", raw(http.StatusNotFound, `{"object":"error","message":"The model `+"`llama9`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`), model},
		{"error string", raw(http.StatusNotFound, `{"error":"model 'llama9' not found"}`), model},
		{"plain unknown model", raw(http.StatusNotFound, "Unknown model: llama9"), model},
		{"plain no such model", raw(http.StatusNotFound, "no such model"), model},
		{"fastapi detail", raw(http.StatusNotFound, `{"detail":"Not Found"}`), both},
		{"go plain text", raw(http.StatusNotFound, "404 page not found\n"), both},
		{"nginx html", raw(http.StatusNotFound, "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n"+
			"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"), both},
		{"empty", raw(http.StatusNotFound, " "), both},
		// A path that names models is not the model: Apache's page
		// echoes the URL it did not find.
		{"apache, a path with models", raw(http.StatusNotFound, "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>404 Not Found</title>\n</head><body>\n"+
			"<h1>Not Found</h1>\n<p>The requested URL /openai/models/chat/completions was not found on this server.</p>\n</body></html>\n"), both},
		{"url and model words", openaitest.Error(http.StatusNotFound, "Unknown request URL: POST /v1/models/gpt-9/chat/completions. The model does not exist."), both},
		// A model's name may hold a slash (vLLM's, from Hugging Face).
		{"vllm model with a slash", raw(http.StatusNotFound, `{"object":"error","message":"The model `+"`meta-llama/Llama-9`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`), model},
		{"express", raw(http.StatusNotFound, "<!DOCTYPE html><html><body><pre>Cannot POST /chat/completions</pre></body></html>"), endpoint},
		{"method not allowed", raw(http.StatusMethodNotAllowed, "Method Not Allowed"),
			"the model provider has no chat completions endpoint at OPENAI_BASE_URL (HTTP 405); retrying will not help"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := openaitest.New(t, tc.answer)
			_, err := newOpenAI(fake, 30*time.Second).Generate(context.Background(), request(t))
			var e *strategy.Error
			if !errors.As(err, &e) || e.Code != strategy.CodeGenerationFailed || !strings.HasPrefix(e.Message, tc.want) {
				t.Fatalf("error %v, want AI_STRATEGY_GENERATION_FAILED saying %q", err, tc.want)
			}
			// Each names only what it blames.
			if tc.want == model && strings.Contains(e.Message, "OPENAI_BASE_URL") || tc.want == endpoint && strings.Contains(e.Message, "OPENAI_MODEL") {
				t.Errorf("message %q blames what the body does not", e.Message)
			}
			for _, words := range []string{"llama9", "gpt-9", "try pulling", "nginx", "Invalid URL"} {
				if strings.Contains(e.Message, words) {
					t.Errorf("message %q quotes the provider (%q)", e.Message, words)
				}
			}
			if e.Cause == nil {
				t.Error("no cause kept for the logs")
			}
			if n := len(fake.Calls()); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
		})
	}
}

// completionJSON is a chat completion whose answer is the JSON of v.
func completionJSON(t *testing.T, v any) string {
	t.Helper()
	content, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(openai.ChatCompletionResponse{Object: "chat.completion", Choices: []openai.ChatCompletionChoice{{
		Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: string(content)}, FinishReason: openai.FinishReasonStop}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOpenAICancelled: a caller that gives up is not a failed generation.
func TestOpenAICancelled(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t, openaitest.Slow(5*time.Second, openaitest.JSON(good())))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newOpenAI(fake, 10*time.Second).Generate(ctx, request(t))
	var e *strategy.Error
	if errors.As(err, &e) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's, not an *Error", err)
	}
}

// TestOpenAIRequestWins: the request's explicit values replace the
// model's and are stated in the prompt.
func TestOpenAIRequestWins(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t, openaitest.JSON(with(good(), "positionSize", 0))) // would be invalid
	req := request(t)
	size, loss := 33.0, 12.0
	req.PositionSize, req.MaxLossPercent, req.OrderType, req.Preset = &size, &loss, "LIMIT", "quick_scalp"
	spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if s := spec.Strategy; s.PositionSize != 33 || s.MaxLossPercent != 12 || s.OrderType != "LIMIT" {
		t.Errorf("%+v", s)
	}
	prompt := fake.Calls()[0].Request.Messages[1].Content
	for _, want := range []string{"positionSize 33", "maxLossPercent 12", "orderType LIMIT", "quick_scalp preset"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// TestSchemaIsStrict: every object of the schema lists all its properties
// as required and forbids others, as strict structured output demands.
func TestSchemaIsStrict(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(strategy.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	objects := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch n := v.(type) {
		case map[string]any:
			if n["type"] == "object" {
				objects++
				props, _ := n["properties"].(map[string]any)
				req, _ := n["required"].([]any)
				if n["additionalProperties"] != false || len(props) == 0 || len(req) != len(props) {
					t.Errorf("%s: additionalProperties %v, %d properties, %d required", path, n["additionalProperties"], len(props), len(req))
				}
				for _, r := range req {
					if _, ok := props[r.(string)]; !ok {
						t.Errorf("%s: required %v is not a property", path, r)
					}
				}
			}
			for k, c := range n {
				walk(path+"."+k, c)
			}
		case []any:
			for _, c := range n {
				walk(path+"[]", c)
			}
		}
	}
	walk("$", s)
	if objects != 3 {
		t.Errorf("%d objects in the schema, want 3 (the strategy and the condition of each list)", objects)
	}
}

func TestNewChoosesProvider(t *testing.T) {
	cases := []struct {
		cfg     strategy.Config
		builtin bool
		err     bool
	}{
		{strategy.Config{}, true, false},
		{strategy.Config{Provider: "builtin", APIKey: "sk"}, true, false},
		{strategy.Config{APIKey: "sk"}, false, false},
		{strategy.Config{Provider: "OpenAI", APIKey: "sk"}, false, false},
		{strategy.Config{Provider: "openai", BaseURL: "http://localhost:11434/v1"}, false, false},
		// No provider named: a keyless local server's address chooses it.
		{strategy.Config{BaseURL: "http://localhost:11434/v1"}, false, false},
		{strategy.Config{BaseURL: strategy.DefaultBaseURL}, true, false},
		{strategy.Config{BaseURL: "https://API.openai.com/v1/"}, true, false},
		{strategy.Config{Provider: "openai", BaseURL: "https://api.openai.com/v1/"}, false, true},
		{strategy.Config{Provider: "openai"}, false, true},
		{strategy.Config{Provider: "claude"}, false, true},
	}
	for _, tc := range cases {
		g, err := strategy.New(tc.cfg)
		if (err != nil) != tc.err {
			t.Errorf("%+v: error %v", tc.cfg, err)
			continue
		}
		if _, ok := g.(strategy.Builtin); err == nil && ok != tc.builtin {
			t.Errorf("%+v: %T", tc.cfg, g)
		}
	}
}

// TestOpenAICosts: the model answers the costs the strict schema asks for;
// its NONE means none asked for, and the request's settings reach the
// prompt and win.
func TestOpenAICosts(t *testing.T) {
	t.Parallel()
	costly := with(with(with(with(good(), "feeModel", "MARKET"), "feeRate", nil), "feeExponent", nil), "latencyMs", 250)
	none := with(with(with(with(good(), "feeModel", "NONE"), "feeRate", nil), "feeExponent", nil), "latencyMs", 0)
	fake := openaitest.New(t, openaitest.JSON(costly), openaitest.JSON(none), openaitest.JSON(none))
	g := newOpenAI(fake, time.Second)
	spec, err := g.Generate(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	if s := spec.Strategy; s.FeeModel != "MARKET" || s.FeeRate != nil || s.LatencyMs != 250 {
		t.Errorf("costs of the answer: %+v", s)
	}
	if spec, err = g.Generate(context.Background(), request(t)); err != nil || spec.Strategy.FeeModel != "" || spec.Strategy.LatencyMs != 0 {
		t.Errorf("NONE answer: %+v, %v", spec.Strategy, err)
	}
	req := request(t)
	lat := 300.0
	req.FeeModel, req.LatencyMs = "MARKET", &lat
	if spec, err = g.Generate(context.Background(), req); err != nil || spec.Strategy.FeeModel != "MARKET" || spec.Strategy.LatencyMs != 300 {
		t.Errorf("request's costs: %+v, %v", spec.Strategy, err)
	}
	prompt := fake.Calls()[2].Request.Messages[1].Content
	for _, want := range []string{"Use feeModel MARKET", "Use latencyMs 300"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// orderRules sets the seven keys of re-entry control and resting orders
// on an answer, as the strict schema makes a model answer them.
func orderRules(m map[string]any, cooldown, maxEntries any, postOnly bool, offset int, cancel, queue any, rebates bool) map[string]any {
	for k, v := range map[string]any{"reentryCooldownMs": cooldown, "maxEntriesPerMarket": maxEntries, "postOnly": postOnly,
		"limitOffsetTicks": offset, "cancelAfterMs": cancel, "queueModel": queue, "includeRebates": rebates} {
		m[k] = v
	}
	return m
}

// TestOpenAIOrderRules: a model's answer of the strict schema decodes with
// re-entry control and resting orders: null, false and 0 are absent (also
// with MARKET, where /v1/replay refuses the GTC fields stated), and a GTC
// answer keeps what it says. A GTC field with MARKET gets the repair round.
func TestOpenAIOrderRules(t *testing.T) {
	t.Parallel()
	market := orderRules(good(), 30000, nil, false, 0, nil, nil, false)
	gtc := orderRules(with(good(), "orderType", "GTC"), 0, 3, true, 2, 60000, "FRONT", true)
	plainGTC := orderRules(with(good(), "orderType", "GTC"), 45000, nil, false, 0, nil, nil, false)
	wrong := orderRules(good(), 30000, nil, false, 0, nil, "FRONT", false)
	fake := openaitest.New(t, openaitest.JSON(market), openaitest.JSON(gtc), openaitest.JSON(plainGTC),
		openaitest.JSON(wrong), openaitest.JSON(market))
	g := newOpenAI(fake, time.Second)
	for _, want := range []string{
		" order=MARKET cooldown=30000",
		" order=GTC postonly=true offset=2 cancel=60000 queue=front rebates=true maxentries=3",
		" order=GTC cooldown=45000",
		" order=MARKET cooldown=30000",
	} {
		spec, err := g.Generate(context.Background(), request(t))
		if err != nil {
			t.Fatalf("want %s: %v", want, err)
		}
		if got := strategy.FormatCode(spec.Rules); !strings.HasSuffix(got, want) {
			t.Errorf("got %s\nwant ...%s", got, want)
		}
	}
	calls := fake.Calls()
	if repair := calls[len(calls)-1].Request.Messages; len(repair) != 4 || !strings.Contains(repair[3].Content, "queueModel applies only with orderType GTC") {
		t.Errorf("repair round: %+v", repair)
	}
}

// TestOpenAINotesDroppedResting: a request's MARKET or LIMIT orderType
// wins over the model's resting order as it does over the prompt's with
// the built-in generator: the answer's details are dropped and the
// explanation says which, in one call. They got a repair round (postOnly
// "applies only with orderType GTC"), and a 502 when the model, asked in
// the user's words for a resting order, answered it again; or were dropped
// without a word.
func TestOpenAINotesDroppedResting(t *testing.T) {
	t.Parallel()
	details := []string{"a resting (GTC) order", "1 tick above the best bid", "post only", "cancel after 10 s", "queue at the front", "include rebates"}
	for _, tc := range []struct {
		answer map[string]any
		want   []string
	}{
		{orderRules(with(good(), "orderType", "GTC"), 30000, nil, true, 1, 10000, "FRONT", true), details},
		{orderRules(good(), 30000, nil, true, 1, 10000, "FRONT", true), details[1:]},
		{orderRules(with(good(), "orderType", "GTC"), 30000, nil, false, 0, nil, "RISK_AVERSE", false), details[:1]},
	} {
		for _, order := range []string{"LIMIT", "MARKET"} {
			// Each answer twice: one repair round asking again gets it again.
			fake := openaitest.New(t, openaitest.JSON(tc.answer), openaitest.JSON(tc.answer))
			req := request(t)
			req.Prompt = "buy UP below 0.35, exit above 0.6; rest a bid 1 tick above, post only, cancel after 10 s, queue at the front"
			req.OrderType = order
			if err := req.Normalize(); err != nil {
				t.Fatal(err)
			}
			spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), req)
			if err != nil {
				t.Errorf("%s, answer %v: %v", order, tc.answer, err)
				continue
			}
			if n := len(fake.Calls()); n != 1 {
				t.Errorf("%s, answer %v: %d calls, want 1 (no repair round)", order, tc.answer, n)
			}
			if got, want := strategy.FormatCode(spec.Rules), " size=50 maxloss=25 order="+order+" cooldown=30000"; !strings.HasSuffix(got, want) {
				t.Errorf("%s: got %s\nwant ...%s", order, got, want)
			}
			if !strings.HasPrefix(spec.Explanation, "Buys UP cheap and sells it back near 0.6. ") {
				t.Errorf("%s: the model's explanation is lost: %q", order, spec.Explanation)
			}
			for _, want := range slices.Concat(tc.want, []string{"orderType " + order + " wins over the model's answer"}) {
				if !strings.Contains(spec.Explanation, want) {
					t.Errorf("%s: explanation %q does not say %q", order, spec.Explanation, want)
				}
			}
			for _, d := range details {
				if !slices.Contains(tc.want, d) && strings.Contains(spec.Explanation, d) {
					t.Errorf("%s: explanation %q lists %q, which the answer did not say", order, spec.Explanation, d)
				}
			}
		}
	}
	// Nothing dropped, nothing said: a plain answer with LIMIT, and a
	// resting one with GTC.
	for _, tc := range []struct {
		answer map[string]any
		order  string
	}{
		{orderRules(with(good(), "orderType", "LIMIT"), 30000, nil, false, 0, nil, "RISK_AVERSE", false), "LIMIT"},
		{orderRules(with(good(), "orderType", "GTC"), 30000, nil, true, 1, 10000, "FRONT", false), "GTC"},
	} {
		fake := openaitest.New(t, openaitest.JSON(tc.answer))
		req := request(t)
		req.OrderType = tc.order
		if err := req.Normalize(); err != nil {
			t.Fatal(err)
		}
		spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), req)
		if err != nil || strings.Contains(spec.Explanation, "dropped") {
			t.Errorf("%s: %q, %v", tc.order, spec.Explanation, err)
		}
	}
}

// TestOpenAIClipsLongText: a model's rambling explanation, and its
// refusal as the error quotes it, are cut to a bound in bytes at a
// character's start, marked with "…" (replay.Clip, the one cut of the
// jobs packages): 1000 "é" were cut to 599 characters, 1,201 bytes.
func TestOpenAIClipsLongText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 1000)
	fake := openaitest.New(t, openaitest.JSON(with(good(), "explanation", long)), openaitest.Answer{Refusal: long})
	g := newOpenAI(fake, time.Second)
	spec, err := g.Generate(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	if e := spec.Explanation; len(e) != 600+len("…") || e != strings.Repeat("é", 300)+"…" {
		t.Errorf("explanation of %d bytes: %.40q...", len(e), e)
	}
	_, err = g.Generate(context.Background(), request(t))
	var e *strategy.Error
	if !errors.As(err, &e) || !strings.HasSuffix(e.Message, "declined the prompt: "+strings.Repeat("é", 100)+"…") {
		t.Errorf("refusal: %v", err)
	}
}

// TestSchemaOrderRules: the schema asks for the new fields in the shapes
// strict mode allows, nullable where absent means something, and says
// what the new condition fields mean.
func TestSchemaOrderRules(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Type  any   `json:"type"`
			Enum  []any `json:"enum"`
			Items struct {
				Properties map[string]struct {
					Enum        []string `json:"enum"`
					Description string   `json:"description"`
				} `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(strategy.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"reentryCooldownMs": `"integer"`, "maxEntriesPerMarket": `["integer","null"]`, "postOnly": `"boolean"`,
		"limitOffsetTicks": `"integer"`, "cancelAfterMs": `["integer","null"]`, "queueModel": `["string","null"]`, "includeRebates": `"boolean"`,
	} {
		if got := mustJSON(s.Properties[k].Type); got != want {
			t.Errorf("%s: type %s, want %s", k, got, want)
		}
	}
	if got := mustJSON(s.Properties["queueModel"].Enum); got != `["RISK_AVERSE","FRONT",null]` {
		t.Errorf("queueModel enum %s", got)
	}
	if got := mustJSON(s.Properties["orderType"].Enum); got != `["MARKET","LIMIT","GTC"]` {
		t.Errorf("orderType enum %s", got)
	}
	field := s.Properties["entryConditions"].Items.Properties["field"]
	for _, f := range field.Enum {
		if !strings.Contains(field.Description, f) {
			t.Errorf("the field description does not say what %s means", f)
		}
	}
}

// TestOpenAIDefaultCooldown: an answer without a cooldown (no key, or
// null) gets DefaultReentryCooldownMs; the model's own, 0 included, is
// kept.
func TestOpenAIDefaultCooldown(t *testing.T) {
	t.Parallel()
	cases := []struct {
		answer map[string]any
		want   int
	}{
		{good(), strategy.DefaultReentryCooldownMs},
		{with(good(), "reentryCooldownMs", nil), strategy.DefaultReentryCooldownMs},
		{with(good(), "reentryCooldownMs", 0), 0},
		{with(good(), "reentryCooldownMs", 5000), 5000},
	}
	fake := openaitest.New(t)
	g := newOpenAI(fake, time.Second)
	for _, tc := range cases {
		fake.Push(openaitest.JSON(tc.answer))
		spec, err := g.Generate(context.Background(), request(t))
		if err != nil || spec.Strategy.ReentryCooldownMs != tc.want {
			t.Errorf("%v: cooldown %d (%v), want %d", tc.answer["reentryCooldownMs"], spec.Strategy.ReentryCooldownMs, err, tc.want)
		}
	}
}

// TestOpenAIOrderSettings: the request's settings reach the prompt and win
// over the model's answer, an explicit 0 cooldown included.
func TestOpenAIOrderSettings(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t, openaitest.JSON(orderRules(good(), 30000, 2, false, 0, nil, nil, false)))
	req := request(t)
	zero, five, one := 0.0, 5000.0, 1.0
	yes := true
	req.OrderType = "GTC"
	req.OrderSettings = strategy.OrderSettings{ReentryCooldownMs: &zero, CancelAfterMs: &five, LimitOffsetTicks: &one, PostOnly: &yes, QueueModel: "FRONT"}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strategy.FormatCode(spec.Rules), " order=GTC postonly=true offset=1 cancel=5000 queue=front maxentries=2"; !strings.HasSuffix(got, want) {
		t.Errorf("got %s\nwant ...%s", got, want)
	}
	prompt := fake.Calls()[0].Request.Messages[1].Content
	for _, want := range []string{"Use orderType GTC", "Use reentryCooldownMs 0", "Use limitOffsetTicks 1", "Use cancelAfterMs 5000", "Use postOnly true", "Use queueModel FRONT"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// TestOpenAIReasoningModels: a reasoning model (o3, gpt-5) takes no
// sampling temperature (OpenAI's API and go-openai refuse a request that
// sends one, and every generation failed); it is left out for them and
// sent to the others.
func TestOpenAIReasoningModels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		model string
		temp  float32
	}{{"o3-mini", 0}, {"gpt-5", 0}, {"gpt-4o-mini", 0.2}, {"llama3.1:8b", 0.2}} {
		fake := openaitest.New(t, openaitest.JSON(good()))
		g := strategy.NewOpenAI(strategy.Config{APIKey: "sk-test", BaseURL: fake.URL, Model: c.model, Timeout: 5 * time.Second})
		if _, err := g.Generate(context.Background(), request(t)); err != nil {
			t.Errorf("%s: %v", c.model, err)
			continue
		}
		if calls := fake.Calls(); len(calls) != 1 || calls[0].Request.Temperature != c.temp {
			t.Errorf("%s: %d calls, temperature %v; want %v", c.model, len(calls), calls[len(calls)-1].Request.Temperature, c.temp)
		}
	}
}

// TestOpenAIPlaceholders: the strict schema makes a model answer every
// key, and models put the "nothing" of a number where null was asked for
// (feeRate 0 and feeExponent 1 without CUSTOM fees, queueModel RISK_AVERSE
// without GTC, cancelAfterMs 0, maxEntriesPerMarket 0). Those say nothing
// the answer's other keys do not, and are read as absent: they cost a
// repair round, and a 502 when the model answered them again. A value that
// says something (a rate of 0.05 without CUSTOM) still gets the repair.
func TestOpenAIPlaceholders(t *testing.T) {
	t.Parallel()
	none := with(with(with(good(), "feeModel", "NONE"), "feeRate", 0), "feeExponent", 1)
	market := with(with(with(good(), "feeModel", "MARKET"), "feeRate", 0), "feeExponent", 1)
	rules := orderRules(good(), 30000, 0, false, 0, 0, "RISK_AVERSE", false)
	fake := openaitest.New(t, openaitest.JSON(none), openaitest.JSON(market), openaitest.JSON(rules))
	g := newOpenAI(fake, time.Second)
	for _, want := range []string{" order=MARKET cooldown=30000", " order=MARKET fees=market cooldown=30000", " order=MARKET cooldown=30000"} {
		spec, err := g.Generate(context.Background(), request(t))
		if err != nil {
			t.Fatalf("want %s: %v", want, err)
		}
		if code := strategy.FormatCode(spec.Rules); !strings.HasSuffix(code, want) {
			t.Errorf("code %s, want it ending %q", code, want)
		}
	}
	if n := len(fake.Calls()); n != 3 {
		t.Errorf("%d calls, want 3: a placeholder cost a repair round", n)
	}
	said := with(with(good(), "feeModel", "NONE"), "feeRate", 0.05)
	fake = openaitest.New(t, openaitest.JSON(said), openaitest.JSON(good()))
	if _, err := newOpenAI(fake, time.Second).Generate(context.Background(), request(t)); err != nil || len(fake.Calls()) != 2 {
		t.Errorf("feeRate 0.05 without CUSTOM: %v after %d calls, want the repair round", err, len(fake.Calls()))
	}
}

// TestOpenAITimeLeftAsDuration: the model is told what the built-in
// generator does with time left said as a duration: time_remaining_s in
// seconds ("with 2 minutes left" is time_remaining_s <= 120), not a
// percentage of the window, which rounded (13.333333 on a 15m market)
// misses the snapshot at exactly 2:00 left. Its answer of that kind is
// kept as given.
func TestOpenAITimeLeftAsDuration(t *testing.T) {
	t.Parallel()
	answer := with(good(), "exitConditions", []map[string]any{{"field": "time_remaining_s", "operator": "<=", "value": 120}})
	fake := openaitest.New(t, openaitest.JSON(answer))
	req := strategy.Request{Prompt: "buy UP below 0.35, exit with 2 minutes left", Coin: "BTC", MarketType: "15m"}
	if err := req.Normalize(); err != nil {
		t.Fatal(err)
	}
	spec, err := newOpenAI(fake, time.Second).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := strategy.FormatCode(spec.Rules); !strings.Contains(got, "exit: time_remaining_s <= 120 ") {
		t.Errorf("got %s", got)
	}
	builtin, err := strategy.Builtin{}.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := builtin.Strategy.ExitConditions, spec.Strategy.ExitConditions; !reflect.DeepEqual(got, want) {
		t.Errorf("the built-in generator reads the prompt as %+v, the model was told to answer %+v", got, want)
	}
	calls := fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	system := calls[0].Request.Messages[0].Content
	for _, want := range []string{`("with 2 minutes left", "in the last 30 s", "with 1h to go") it is time_remaining_s in seconds (time_remaining_s <= 120)`,
		`("with 20% left") is time_remaining_pct`} {
		if !strings.Contains(system, want) {
			t.Errorf("the system prompt does not say %s", want)
		}
	}
	var s struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(strategy.Schema(), &s); err != nil {
		t.Fatal(err)
	}
	if d := s.Properties["exitConditions"].Items.Properties["field"].Description; !strings.Contains(d, `"with 2 minutes left" is time_remaining_s <= 120`) {
		t.Errorf("the schema's field description does not say how a duration left is written: %s", d)
	}
}

// TestOpenAICooldownIsNotMarkets: "5m between trades" and the like are a
// cooldown: the model is asked for the request's markets (BTC 15m here),
// where the prompt's "5m" was read as the 5m markets, and is told such a
// duration is reentryCooldownMs, as the built-in generator reads it.
func TestOpenAICooldownIsNotMarkets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prompt, markets string }{
		{"buy UP below 0.4, exit above 0.6, 5m between trades", "BTC 15m"},
		{"buy UP below 0.4, exit above 0.6, 1h between trades", "BTC 15m"},
		{"buy UP on ETH 5m markets below 0.4, exit above 0.6, 15m between entries", "ETH 5m"},
	} {
		fake := openaitest.New(t, openaitest.JSON(with(good(), "reentryCooldownMs", 300000)))
		req := strategy.Request{Prompt: tc.prompt}
		if err := req.Normalize(); err != nil {
			t.Fatalf("%q: %v", tc.prompt, err)
		}
		if _, err := newOpenAI(fake, time.Second).Generate(context.Background(), req); err != nil {
			t.Fatalf("%q: %v", tc.prompt, err)
		}
		calls := fake.Calls()
		if len(calls) != 1 {
			t.Fatalf("%d calls", len(calls))
		}
		if user := calls[0].Request.Messages[1].Content; !strings.Contains(user, "Markets: "+tc.markets+" up/down markets.") {
			t.Errorf("%q: the model was asked for %q, want %s markets", tc.prompt, user, tc.markets)
		}
		if system := calls[0].Request.Messages[0].Content; !strings.Contains(system, `A duration between trades is that wait, never the markets`) ||
			!strings.Contains(system, `"5m between trades" is 300000`) {
			t.Errorf("the system prompt does not say a duration between trades is the cooldown")
		}
	}
}
