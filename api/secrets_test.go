package api_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/updown/updown/api"
)

// TestIsDevWebhookSecret: every spelling of the dev webhook key is the dev
// secret, since each verifies the signatures the dev secret makes.
func TestIsDevWebhookSecret(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		secret string
		dev    bool
	}{
		{api.DevWebhookSecret, true},
		{strings.TrimRight(api.DevWebhookSecret, "="), true},              // unpadded base64
		{"whsec_dXBkb3duLWRldi13ZWJob29rLXNl\nY3JldC0wMDAwMDA=", true},    // a line break, which base64 skips
		{"whsec_dXBkb3duLWRldi13ZWJob29rLXNlY3JldC0wMDAwMDAA", true},      // the key and a zero byte: the same HMAC key
		{"whsec_dXBkb3duLWRldi13ZWJob29rLXNlY3JldC0wMDAwMDAAAA==", true},  // two zero bytes
		{"whsec_dGVzdC13ZWJob29rLXNlY3JldC1mb3ItdXBkb3duLXRlc3Rz", false}, // another key
		{"whsec_dXBkb3duLWRldi13ZWJob29rLXNlY3JldC0wMDAwMDAx", false},     // the key and "1"
		{"dXBkb3duLWRldi13ZWJob29rLXNlY3JldC0wMDAwMDA=", false},           // no prefix: not a secret at all
	} {
		if got := api.IsDevWebhookSecret(c.secret); got != c.dev {
			t.Errorf("IsDevWebhookSecret(%q) = %v, want %v", c.secret, got, c.dev)
		}
	}
}

func TestSameHMACKey(t *testing.T) {
	t.Parallel()
	long := []byte(strings.Repeat("k", 100))
	sum := sha256.Sum256(long)
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"secret", "secret", true},
		{"secret", "secret\x00\x00", true},
		{string(long), string(sum[:]), true}, // HMAC hashes a key longer than its block
		{"secret", "secret ", false},
		{"secret", "\x00secret", false},
		{"", "\x00", true},
	} {
		if got := api.SameHMACKey([]byte(c.a), []byte(c.b)); got != c.same {
			t.Errorf("SameHMACKey(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
