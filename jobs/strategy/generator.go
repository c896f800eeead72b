package strategy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// TaskType is the worker task that generates a strategy. Its payload is a
// normalized Request (JSON), its result a Spec. It runs on the ai queue.
const TaskType = "updown:ai-generate"

// Generator turns a normalized Request into a normalized Spec.
//
// Errors are *Error: CodeGenerationFailed when the generator could not do
// its job (the model timed out, answered 5xx, or twice answered rules that
// do not validate), CodeValidation when the prompt itself cannot be read
// (the built-in generator). Generators are safe for concurrent use.
type Generator interface {
	Generate(ctx context.Context, req Request) (Spec, error)
}

// Providers, as AI_PROVIDER names them.
const (
	ProviderBuiltin = "builtin"
	ProviderOpenAI  = "openai"
)

// Defaults of Config.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "gpt-4o-mini"
	DefaultTimeout = 20 * time.Second
)

// Config chooses and configures a generator (the AI_PROVIDER,
// OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL settings).
type Config struct {
	// Provider is "builtin", "openai", or empty: openai when APIKey is set,
	// else builtin.
	Provider string
	APIKey   string
	// BaseURL is an OpenAI-compatible API root, including /v1 (default
	// the OpenAI API).
	BaseURL string
	// Model must support JSON-schema structured output (default gpt-4o-mini).
	Model string
	// Timeout bounds one call to the model (default 20 s). A generation
	// makes at most two calls (one repair), so it ends, answer or 502,
	// within twice this: keep that under the API's JobWait (60 s).
	Timeout time.Duration
	// HTTPClient makes the calls (a client without a timeout of its own
	// when nil: Timeout applies per call through the context).
	HTTPClient *http.Client
}

// New returns the generator cfg chooses. The openai provider needs an API
// key unless BaseURL names another server (a local OpenAI-compatible one
// may need none).
func New(cfg Config) (Generator, error) {
	switch p := strings.ToLower(cfg.Provider); {
	case p == ProviderBuiltin, p == "" && cfg.APIKey == "" && openAIs(cfg.BaseURL):
		// With no provider named, a key or a server of one's own (a
		// keyless local model's OPENAI_BASE_URL) chooses openai.
		return Builtin{}, nil
	case p == ProviderOpenAI, p == "":
		if cfg.APIKey == "" && openAIs(cfg.BaseURL) {
			return nil, fmt.Errorf("strategy: AI_PROVIDER=openai needs OPENAI_API_KEY (or an OPENAI_BASE_URL of a server that takes none)")
		}
		return NewOpenAI(cfg), nil
	default:
		return nil, fmt.Errorf("strategy: unknown AI_PROVIDER %q: use %s or %s", cfg.Provider, ProviderBuiltin, ProviderOpenAI)
	}
}

// openAIs reports whether base is OpenAI's own API (or unset, which is
// it), written in any case and with or without a closing slash: a server
// that needs a key.
func openAIs(base string) bool {
	b := strings.TrimRight(strings.ToLower(strings.TrimSpace(base)), "/")
	return b == "" || b == strings.ToLower(DefaultBaseURL)
}
