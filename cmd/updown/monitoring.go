package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
)

// hiddenErrorText stands for a task's error message in the monitoring UI.
const hiddenErrorText = "(hidden: task errors may quote customer input; see the worker's log)"

// monitoringUI is the Asynq monitoring UI at /monitoring (DESIGN 3): open
// in dev; in production off (nil) without an admin token, and with one
// behind HTTP Basic auth, any user name and the token as the password, so
// that a browser asks for it. It never shows customer jobs' payloads,
// results or error texts, which quote customers' strategies and prompts.
func monitoringUI(connOpt asynq.RedisConnOpt, dev bool, adminToken string) http.Handler {
	if !dev && adminToken == "" {
		return nil
	}
	hide := func(_ string, b []byte) string { return fmt.Sprintf("(%d bytes, hidden)", len(b)) }
	ui := hideTaskErrors(asynqmon.New(asynqmon.Options{RootPath: "/monitoring", RedisConnOpt: connOpt,
		PayloadFormatter: asynqmon.PayloadFormatterFunc(hide), ResultFormatter: asynqmon.ResultFormatterFunc(hide)}))
	if dev {
		return ui
	}
	want := sha256.Sum256([]byte(adminToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, password, _ := r.BasicAuth()
		got := sha256.Sum256([]byte(password))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="updown monitoring", charset="UTF-8"`)
			http.Error(w, "monitoring: give MONITORING_ADMIN_TOKEN as the password (any user name)", http.StatusUnauthorized)
			return
		}
		ui.ServeHTTP(w, r)
	})
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
		body := buf.body.Bytes()
		// asynqmon writes its JSON without a Content-Type (the server
		// sniffs one later): every answer that parses as JSON is filtered.
		ct := buf.header.Get("Content-Type")
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
