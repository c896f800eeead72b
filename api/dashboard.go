package api

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// dashboardFiles is the dashboard's build (web/, `make ui`), committed so
// that `go build` never needs Node. index.html is the app at /app/,
// docs.html the API reference at /docs; both load only from /app/assets/.
//
//go:embed all:dashboard
var dashboardFiles embed.FS

// dashboardCSP is the policy of /app/ and /docs (DESIGN 12): everything from
// this origin, no inline script, no eval, no frames.
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// registerDashboard registers what the dashboard (DESIGN 12) needs beside
// the data endpoints (sessions, chart series, the plan catalogue,
// self-service keys) and serves its pages.
func (s *Server) registerDashboard() {
	s.registerSession()
	s.registerSeries()
	s.registerAccountBilling()
	s.registerAccountKeys()
	documentSessions(s.api.OpenAPI())

	files, err := fs.Sub(dashboardFiles, "dashboard")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	s.mux.Handle("GET /{$}", http.RedirectHandler("/app/", http.StatusFound))
	s.mux.Handle("GET /app", http.RedirectHandler("/app/", http.StatusMovedPermanently))
	s.mux.Handle("GET /app/", dashboardHandler(files, "index.html"))
	s.mux.Handle("GET /docs", dashboardHandler(files, "docs.html"))
	s.mux.Handle("GET /docs/{$}", http.RedirectHandler("/docs", http.StatusMovedPermanently))
	s.mux.Handle("GET /favicon.ico", faviconHandler(files))
}

// faviconHandler answers /favicon.ico, which browsers ask for on every
// page whatever the pages link, with the build's SVG icon (the one the
// pages' <link rel="icon"> names, under its hashed name).
func faviconHandler(files fs.FS) http.Handler {
	names, _ := fs.Glob(files, "assets/favicon-*.svg")
	var icon []byte
	if len(names) > 0 {
		icon, _ = fs.ReadFile(files, names[0])
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if icon == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		_, _ = w.Write(icon)
	})
}

// dashboardHandler serves the built assets under /app/assets/ (hashed
// names: cached for good) and page for every other path, so that a
// reload on any dashboard address lands in the app.
func dashboardHandler(files fs.FS, page string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", dashboardCSP)
		name := page
		if rest, ok := strings.CutPrefix(r.URL.Path, "/app/assets/"); ok {
			name = path.Join("assets", path.Clean("/" + rest)[1:])
			// Files only: a directory would be answered with a listing of
			// the build's files (cached for good, as an asset).
			if st, err := fs.Stat(files, name); err != nil || st.IsDir() {
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		http.ServeFileFS(w, r, files, name)
	})
}
