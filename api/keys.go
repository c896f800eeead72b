package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/updown/updown/store"
)

// Key prefixes. Live keys are random; dev keys are fixed demo keys that only
// `updown dev` accepts.
const (
	liveKeyPrefix = "ud_live_"
	DevKeyPrefix  = "ud_dev_"
)

// HashKey is how keys are kept at rest. Keys carry 160 random bits, so a
// plain SHA-256 is enough: there is nothing to brute-force.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// NewKey makes a new random API key for the customer. The plain key is
// returned once and never stored; the APIKey holds its hash.
func NewKey(customerID string) (plain string, k store.APIKey) {
	var b [20]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	plain = liveKeyPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	return plain, KeyRecord(customerID, plain)
}

// KeyRecord is the stored form of a known key (used for the fixed dev keys).
func KeyRecord(customerID, plain string) store.APIKey {
	return store.APIKey{CustomerID: customerID, Prefix: plain[:min(len(plain), len(liveKeyPrefix)+4)], Hash: HashKey(plain)}
}
