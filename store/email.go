package store

import "strings"

// NormalizeEmail is the form customers' emails are kept and matched in:
// trimmed and lower-cased, so that emails match case-insensitively
// everywhere (create, lookup, uniqueness, billing webhooks).
func NormalizeEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}
