package api

import (
	"bytes"
	"crypto/sha256"
)

// hmacBlockSize is SHA-256's block size, which shapes HMAC-SHA256 keys.
const hmacBlockSize = 64

// SameHMACKey reports whether a and b are the same HMAC-SHA256 key, that
// is, sign every message alike. HMAC hashes a key longer than the block
// and pads a shorter one with zero bytes, so keys that differ only there
// are one key. The guards against the public dev secrets compare keys
// this way, not as the strings that spell them.
func SameHMACKey(a, b []byte) bool {
	return bytes.Equal(hmacKeyForm(a), hmacKeyForm(b))
}

func hmacKeyForm(k []byte) []byte {
	if len(k) > hmacBlockSize {
		h := sha256.Sum256(k)
		k = h[:]
	}
	return bytes.TrimRight(k, "\x00")
}

// CheckWebhookSecret reports why secret is not a Standard Webhooks
// signing secret ("whsec_" and the base64 of at least 16 key bytes), or
// nil when it is one. The error never quotes the secret.
func CheckWebhookSecret(secret string) error {
	_, err := webhookKey(secret)
	return err
}

// IsDevWebhookSecret reports whether secret verifies what DevWebhookSecret
// verifies, however it is spelt (padded or unpadded base64, say): such a
// secret is public, and production refuses it. A secret that does not
// decode is not the dev one (api.New refuses it anyway).
func IsDevWebhookSecret(secret string) bool {
	key, err := webhookKey(secret)
	if err != nil {
		return false
	}
	dev, err := webhookKey(DevWebhookSecret)
	if err != nil { // cannot happen: a constant, decoded by the tests
		return secret == DevWebhookSecret
	}
	return SameHMACKey(key, dev)
}
