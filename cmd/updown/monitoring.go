package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"github.com/updown/updown/api"
)

// hiddenErrorText stands for a task's error message in the monitoring UI.
const hiddenErrorText = "(hidden: task errors may quote customer input; see the worker's log)"

// monitoringOptions configures the monitoring UI.
type monitoringOptions struct {
	// Dev opens the UI to anyone who reaches it (dev listens on loopback).
	Dev bool
	// AdminToken, outside dev, turns the UI on behind HTTP Basic auth with
	// the token as the password; without it the UI is off.
	AdminToken string
	// Write (MONITORING_WRITE=true) lets the UI change the queues: pause
	// them, delete, run or archive tasks. Without it the UI only shows.
	Write bool
}

// monitoringWrite reads MONITORING_WRITE (unset: false); a value that is
// not a boolean stops the process rather than guess.
func monitoringWrite(getenv func(string) string) (bool, error) {
	v := getenv("MONITORING_WRITE")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("MONITORING_WRITE=%q: want true or false", v)
	}
	return b, nil
}

// monitoringUI is the Asynq monitoring UI at /monitoring (DESIGN 3): open
// in dev; in production off (nil) without an admin token, and with one
// behind HTTP Basic auth, any user name and the token as the password, so
// that a browser asks for it. It never shows customer jobs' payloads,
// results or error texts, which quote customers' strategies and prompts.
//
// A browser that holds the Basic credentials sends them with any request
// to the UI, a cross-site form's included (issue 28, item 6: a page on
// another origin could pause the queues). So the UI is read-only unless
// o.Write, a state-changing request from another origin is refused
// whatever the credentials (sameOriginWrites), no other site may frame it,
// and its page loads nothing from outside (selfContained): operators run
// it air-gapped.
func monitoringUI(connOpt asynq.RedisConnOpt, o monitoringOptions) http.Handler {
	if !o.Dev && o.AdminToken == "" {
		return nil
	}
	hide := func(_ string, b []byte) string { return fmt.Sprintf("(%d bytes, hidden)", len(b)) }
	ui := selfContained(hideTaskErrors(asynqmon.New(asynqmon.Options{RootPath: "/monitoring", RedisConnOpt: connOpt,
		PayloadFormatter: asynqmon.PayloadFormatterFunc(hide), ResultFormatter: asynqmon.ResultFormatterFunc(hide),
		ReadOnly: !o.Write})))
	if !o.Dev {
		ui = basicAuth(ui, o.AdminToken)
	}
	return sameOriginWrites(ui)
}

// basicAuth lets through requests whose HTTP Basic password is token.
func basicAuth(next http.Handler, token string) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, password, _ := r.BasicAuth()
		got := sha256.Sum256([]byte(password))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="updown monitoring", charset="UTF-8"`)
			http.Error(w, "monitoring: give MONITORING_ADMIN_TOKEN as the password (any user name)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOriginWrites refuses with 403 a request that may change state (any
// method but GET, HEAD and OPTIONS) when the browser says it comes from
// another origin: a Sec-Fetch-Site other than same-origin, or an Origin
// whose host is not the one asked. A request with neither header is not a
// browser's (every current browser sends one of them with such a
// request), so it cannot be a forged one, and goes on to the credentials.
func sameOriginWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
		cross := site != "" && site != "same-origin"
		if origin != "" {
			u, err := url.Parse(origin)
			cross = cross || err != nil || u.Host == "" || u.Host != r.Host
		}
		if cross {
			http.Error(w, "monitoring: a request that changes the queues must come from the monitoring page itself", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// externalLink is a <link> (fonts, style sheets) to another host.
var externalLink = regexp.MustCompile(`(?i)<link\b[^>]*\bhref=["']?(?:https?:)?//[^>]*>`)

// inlineScript is an inline <script> of the page, to hash for its policy.
var inlineScript = regexp.MustCompile(`(?s)<script>(.*?)</script>`)

// selfContained serves the UI's page without what it would load from
// outside (asynqmon links Google Fonts: the page falls back to the
// browser's own fonts), under a Content-Security-Policy that admits only
// the UI's own files and the page's own inline scripts, and that no other
// site may frame (a framed page could be clicked into changing state).
func selfContained(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/monitoring/api/") {
			next.ServeHTTP(w, r)
			return
		}
		buf := &bufferedResponse{header: http.Header{}}
		next.ServeHTTP(buf, r)
		body := buf.body.Bytes()
		if ct := cmp.Or(buf.header.Get("Content-Type"), http.DetectContentType(body)); strings.HasPrefix(ct, "text/html") {
			body = externalLink.ReplaceAll(body, nil)
			buf.header.Set("Content-Type", "text/html; charset=utf-8")
			buf.header.Set("Content-Security-Policy", pagePolicy(body))
		}
		for k, vs := range buf.header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(cmp.Or(buf.status, http.StatusOK))
		_, _ = w.Write(body)
	})
}

// pagePolicy is the Content-Security-Policy of the UI's page: its own
// files, its inline scripts by hash, inline styles (the UI's components
// write theirs at run time), and nothing from anywhere else.
func pagePolicy(page []byte) string {
	scripts := []string{"'self'"}
	for _, m := range inlineScript.FindAllSubmatch(page, -1) {
		h := sha256.Sum256(m[1])
		scripts = append(scripts, "'sha256-"+base64.StdEncoding.EncodeToString(h[:])+"'")
	}
	return "default-src 'self'; script-src " + strings.Join(scripts, " ") +
		"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'" +
		"; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
}

// hideTaskErrors rewrites the UI's JSON answers so that no task's
// error_message is shown: asynqmon formats payloads and results on request
// but passes errors through, and a failed task's error may quote the
// customer's prompt or strategy.
func hideTaskErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/monitoring/api/") {
			next.ServeHTTP(w, r)
			return
		}
		buf := &bufferedResponse{header: http.Header{}}
		next.ServeHTTP(buf, r)
		if buf.status >= http.StatusInternalServerError && queueNotFound(buf.body.Bytes()) {
			// asynqmon answers a queue that does not exist (none was
			// ever queued on it: backtest, ai or collect on a new
			// deployment) with asynq's NOT_FOUND error and a 500, which
			// was told as Redis failing: it is a 404.
			writeMonitoringError(w, http.StatusNotFound, api.CodeNotFound,
				"the monitoring UI found no such queue: a queue exists once a task was queued on it")
			return
		}
		if buf.status >= http.StatusInternalServerError {
			// asynqmon answers a failure of Redis with its error as plain
			// text, Redis's address included: the envelope instead.
			writeMonitoringError(w, http.StatusServiceUnavailable, api.CodeServiceUnavailable,
				"the monitoring UI could not read the queues: Redis is unavailable or failing (the api's /readyz and its log say more)")
			return
		}
		body := buf.body.Bytes()
		ct := buf.header.Get("Content-Type")
		if strings.HasPrefix(cmp.Or(ct, http.DetectContentType(body)), "text/html") {
			// asynqmon answers a path its API does not have with its
			// page, as it does the UI's own addresses: here, outside
			// selfContained, that was the page as asynqmon writes it,
			// fonts from Google and no Content-Security-Policy, with a
			// 200 to a script that asked for JSON.
			writeMonitoringError(w, http.StatusNotFound, api.CodeNotFound, "the monitoring UI's API has no such endpoint")
			return
		}
		// asynqmon writes its JSON without a Content-Type (the server
		// sniffs one later): every answer that parses as JSON is filtered.
		if ct == "" || strings.HasPrefix(ct, "application/json") {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			switch err := dec.Decode(&v); {
			case err == nil:
				hideErrorTexts(v)
				filtered, err := json.Marshal(v)
				if err != nil {
					http.Error(w, "monitoring: unreadable answer", http.StatusBadGateway)
					return
				}
				body = filtered
				buf.header.Set("Content-Type", "application/json")
			case ct != "":
				// Said to be JSON, is not: show nothing rather than something unfiltered.
				http.Error(w, "monitoring: unreadable answer", http.StatusBadGateway)
				return
			}
		}
		for k, vs := range buf.header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(cmp.Or(buf.status, http.StatusOK))
		_, _ = w.Write(body)
	})
}

// queueNotFound reports whether asynqmon's failure is a queue that does
// not exist, as asynq words it: its broker's NOT_FOUND (the queue itself),
// or its inspector's ErrQueueNotFound (the queue's lists of tasks).
func queueNotFound(body []byte) bool {
	return bytes.HasPrefix(body, []byte("NOT_FOUND")) || bytes.HasPrefix(body, []byte("asynq: "+asynq.ErrQueueNotFound.Error()))
}

// writeMonitoringError answers the UI's API in SPEC 7's envelope, its
// timestamp included (the API's own error body, not a copy of it).
func writeMonitoringError(w http.ResponseWriter, status int, code, message string) {
	body, err := api.Errorf(status, code, "%s", message).MarshalJSON()
	if err != nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// hideErrorTexts replaces every non-empty "error_message" in v.
func hideErrorTexts(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "error_message" && s != "" {
				x[k] = hiddenErrorText
				continue
			}
			hideErrorTexts(e)
		}
	case []any:
		for _, e := range x {
			hideErrorTexts(e)
		}
	}
}

// bufferedResponse holds an answer for hideTaskErrors to rewrite.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
