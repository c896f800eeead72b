// Package openaitest is a fake OpenAI-compatible server for tests: it
// answers POST /v1/chat/completions with scripted answers, in order, and
// records every request, so tests can drive a generator through good
// answers, invalid JSON, rules that fail validation, slow answers and
// provider errors without a network. Like OpenAI's API, it refuses (400)
// a request with an assistant message that has no content.
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"
)

// Answer is one scripted response.
type Answer struct {
	// Status is the HTTP status (200 when 0). A status other than 200
	// answers OpenAI's error body with Message, and ErrType and ErrCode
	// as its type and code (server_error and null when empty).
	Status  int
	Message string
	ErrType string
	ErrCode string
	// Content is the assistant message of a 200 answer.
	Content string
	// Refusal, when set, is the message's refusal (Content is then empty).
	Refusal string
	// FinishReason defaults to "stop".
	FinishReason openai.FinishReason
	// ToolCalls, when set, are the message's tool calls (Content is then
	// usually empty and FinishReason "tool_calls").
	ToolCalls []openai.ToolCall
	// NoChoices answers 200 with an empty choices array.
	NoChoices bool
	// Raw, when set, is written as the whole body of the answer, with
	// Status: a 200 that is no completion, or an error that is not
	// OpenAI's error object (a proxy's HTML page, a server's plain-text
	// 404, vLLM's {"detail":"Not Found"}).
	Raw string
	// EmptyBody answers 200 with no body at all.
	EmptyBody bool
	// Delay is waited before answering; a client that gives up first
	// ends the wait.
	Delay time.Duration
}

// JSON answers v, encoded, as the message content.
func JSON(v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("openaitest: JSON: %v", err))
	}
	return Answer{Content: string(b)}
}

// ToolCall answers v, encoded, as the arguments of one function call
// named name, with no content: the shape of a model (or a proxy) that
// gives structured output as a tool call.
func ToolCall(name string, v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("openaitest: ToolCall: %v", err))
	}
	return Answer{FinishReason: openai.FinishReasonToolCalls, ToolCalls: []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: name, Arguments: string(b)}}}}
}

// Content answers s as the message content.
func Content(s string) Answer { return Answer{Content: s} }

// Error answers an OpenAI error body with the status.
func Error(status int, message string) Answer { return Answer{Status: status, Message: message} }

// APIError answers an OpenAI error body with the status, type and code
// OpenAI gives it: 429 requests/rate_limit_exceeded (wait and retry), 429
// insufficient_quota (the account's credits or spend limit),
// 401 invalid_request_error/invalid_api_key.
func APIError(status int, typ, code, message string) Answer {
	return Answer{Status: status, Message: message, ErrType: typ, ErrCode: code}
}

// Slow is a after a delay.
func Slow(d time.Duration, a Answer) Answer {
	a.Delay = d
	return a
}

// Call is one request the server received.
type Call struct {
	Authorization string
	Request       openai.ChatCompletionRequest
}

// Server is the fake. URL is the API root to configure a client with
// (it includes /v1).
type Server struct {
	URL string

	t       testing.TB
	mu      sync.Mutex
	answers []Answer
	calls   []Call
}

// New starts a server answering with answers, in order, and closes it
// when the test ends. A request past the script fails the test and gets a
// 500.
func New(t testing.TB, answers ...Answer) *Server {
	t.Helper()
	s := &Server{t: t, answers: answers}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}

// Push appends answers to the script.
func (s *Server) Push(answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, answers...)
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.t.Errorf("openaitest: undecodable request: %v", err)
		writeError(w, http.StatusBadRequest, "undecodable request: "+err.Error())
		return
	}
	for i, m := range req.Messages {
		// OpenAI refuses an assistant message with neither content nor
		// tool calls (go-openai leaves an empty content out).
		if m.Role == openai.ChatMessageRoleAssistant && m.Content == "" && len(m.MultiContent) == 0 && len(m.ToolCalls) == 0 && m.FunctionCall == nil {
			s.t.Errorf("openaitest: messages[%d] is an assistant message without content", i)
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Invalid value for 'content' of messages[%d]: an assistant message needs content or tool_calls", i))
			return
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Authorization: r.Header.Get("Authorization"), Request: req})
	n := len(s.calls)
	var a Answer
	ok := len(s.answers) > 0
	if ok {
		a, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("openaitest: request %d has no scripted answer", n)
		writeError(w, http.StatusInternalServerError, "no scripted answer")
		return
	}
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		if a.Raw != "" {
			w.Header().Set("Content-Type", http.DetectContentType([]byte(a.Raw)))
			w.WriteHeader(a.Status)
			_, _ = w.Write([]byte(a.Raw))
			return
		}
		writeAPIError(w, a.Status, a.ErrType, a.ErrCode, a.Message)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if a.EmptyBody {
		return
	}
	if a.Raw != "" {
		_, _ = w.Write([]byte(a.Raw))
		return
	}
	resp := openai.ChatCompletionResponse{
		ID: fmt.Sprintf("chatcmpl-test-%d", n), Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
		Choices: []openai.ChatCompletionChoice{},
		Usage:   openai.Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150},
	}
	if !a.NoChoices {
		fr := a.FinishReason
		if fr == "" {
			fr = openai.FinishReasonStop
		}
		resp.Choices = append(resp.Choices, openai.ChatCompletionChoice{
			Message:      openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a.Content, Refusal: a.Refusal, ToolCalls: a.ToolCalls},
			FinishReason: fr,
		})
	}
	_ = json.NewEncoder(w).Encode(resp)
}

// writeError writes OpenAI's error body of a server error.
func writeError(w http.ResponseWriter, status int, message string) {
	writeAPIError(w, status, "", "", message)
}

// writeAPIError writes OpenAI's error body: type server_error and code
// null when not given.
func writeAPIError(w http.ResponseWriter, status int, typ, code, message string) {
	if typ == "" {
		typ = "server_error"
	}
	var c any
	if code != "" {
		c = code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": c,
	}})
}
