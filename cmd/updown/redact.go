package main

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// redactedPassword stands for a password in printed URLs, as pgx writes it
// for DATABASE_URL.
const redactedPassword = "xxxxx"

// redactURL returns raw with the password of its user info replaced, also
// when raw does not parse as a URL (the case its error messages quote it
// in): everything between "user:" and the last "@" before the host goes.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return raw
	}
	return scheme + "://" + user + ":" + redactedPassword + rest[at:]
}

// redactedError is err with every spelling of raw's password in its text
// replaced, for errors of URL parsers that quote the URL they refused.
func redactedError(err error, raw string) error {
	msg := err.Error()
	red := redactURL(raw)
	if red == raw {
		return err
	}
	msg = strings.ReplaceAll(msg, raw, red)
	// The parsers may quote the URL escaped, or the password alone.
	_, rest, _ := strings.Cut(raw, "://")
	_, password, _ := strings.Cut(rest[:strings.LastIndex(rest, "@")], ":")
	quoted := strconv.Quote(password)
	for _, p := range []string{password, url.QueryEscape(password), url.PathEscape(password), quoted[1 : len(quoted)-1]} {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, redactedPassword)
		}
	}
	return errors.New(msg)
}
