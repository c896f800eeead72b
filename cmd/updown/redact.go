package main

import (
	"errors"
	"flag"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// redactedPassword stands for a password in printed URLs, as pgx writes it
// for DATABASE_URL.
const redactedPassword = "xxxxx"

// Passwords outside a URL's user info: a password parameter of its query
// (postgres://u@h/db?password=pw, the sentinels' sentinel_password of a
// redis+sentinel:// REDIS_URL), or of a key=value connection string
// (host=h user=u password=pw), the other form DATABASE_URL takes; and
// Postgres's sslpassword, the passphrase of the client's TLS key, in
// either form.
var (
	queryPassword = regexp.MustCompile(`(?i)([?&](?:sentinel_|ssl)?password=)([^&#]*)`)
	dsnPassword   = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
)

// redactURL returns raw with its password replaced, also when raw does not
// parse as a URL (the case its error messages quote it in): everything
// between "user:" and the last "@" before the host goes, and so does a
// password parameter, of the query or of a key=value connection string.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return dsnPassword.ReplaceAllString(raw, "${1}"+redactedPassword)
	}
	rest = queryPassword.ReplaceAllString(rest, "${1}"+redactedPassword)
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return scheme + "://" + rest
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return scheme + "://" + rest
	}
	return scheme + "://" + user + ":" + redactedPassword + rest[at:]
}

// urlFlag registers a flag holding a URL, such as DATABASE_URL, whose
// default comes from the environment: -h shows that default with its
// password redacted.
func urlFlag(fs *flag.FlagSet, name, value, usage string) *string {
	p := new(string)
	urlFlagVar(fs, p, name, value, usage)
	return p
}

// urlFlagVar is urlFlag storing into p.
func urlFlagVar(fs *flag.FlagSet, p *string, name, value, usage string) {
	*p = value
	fs.Var(redactedURLValue{p}, name, usage)
}

// redactedURLValue is a URL flag's value; its String, which -h prints as
// the default, is redacted.
type redactedURLValue struct{ p *string }

func (v redactedURLValue) String() string {
	if v.p == nil {
		return ""
	}
	return redactURL(*v.p)
}

func (v redactedURLValue) Set(s string) error {
	*v.p = s
	return nil
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
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return errors.New(msg)
	}
	_, password, _ := strings.Cut(rest[:at], ":")
	quoted := strconv.Quote(password)
	for _, p := range []string{password, url.QueryEscape(password), url.PathEscape(password), quoted[1 : len(quoted)-1]} {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, redactedPassword)
		}
	}
	return errors.New(msg)
}
