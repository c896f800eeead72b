package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/mail"
	"strings"
	"time"
)

// listKeys is `updown keys list`: a customer's keys as stored, revoked
// ones included. Only the prefix of a key is known: the key is not.
func listKeys(ctx context.Context, fs *flag.FlagSet, args []string, stdout io.Writer) error {
	st, c, err := customerStore(ctx, registerCustomer(fs, "customer"), args)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.ListAPIKeys(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("list keys: %w", err)
	}
	type keyRow struct {
		KeyID      string  `json:"key_id"`
		CustomerID string  `json:"customer_id"`
		Prefix     string  `json:"prefix"`
		CreatedAt  string  `json:"created_at"`
		RevokedAt  *string `json:"revoked_at"`
	}
	out := make([]keyRow, len(keys))
	for i, k := range keys {
		out[i] = keyRow{KeyID: k.ID, CustomerID: k.CustomerID, Prefix: k.Prefix, CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339)}
		if k.RevokedAt != nil {
			r := k.RevokedAt.UTC().Format(time.RFC3339)
			out[i].RevokedAt = &r
		}
	}
	return writeJSON(stdout, out)
}

// validateEmail accepts a plain address (name@domain.tld), the form the
// billing webhooks name customers by; not a display name, not a list.
func validateEmail(email string) error {
	email = strings.TrimSpace(email)
	if email == "" {
		return errors.New("--email is required")
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return fmt.Errorf("--email %q is not an email address (want name@example.com)", email)
	}
	local, domain, _ := strings.Cut(email, "@")
	if local == "" || !strings.Contains(strings.Trim(domain, "."), ".") || strings.ContainsAny(domain, "[]") {
		return fmt.Errorf("--email %q is not an email address (want name@example.com)", email)
	}
	return nil
}
