package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
	"github.com/updown/updown/store/redis/redistest"
)

// TestReadyzNeedsTheSchema: a database whose schema falls behind the
// build's under running processes (recreated empty, restored from an
// older backup) makes the api's and a worker's /readyz 503, naming the
// store, and ready again once it is migrated. A ping alone kept them
// ready while the api answered every request 500 (relation does not
// exist), so a load balancer kept sending traffic to it.
func TestReadyzNeedsTheSchema(t *testing.T) {
	t.Parallel()
	updownBinary(t)
	dbURL := pgtest.NewDatabase(t)
	rd := redistest.Start(t)
	s := services{dbURL: dbURL, redisURL: rd.URL}
	_, apiBase := startAPI(t, s)
	workerAddr := freeAddr(t)
	workerBase := "http://" + workerAddr
	waitUp(t, startProc(t, "worker", s.environ(), "worker", "--ops-addr", workerAddr), workerBase)

	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	version, err := st.SchemaVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	setVersion := func(v int) {
		t.Helper()
		if _, err := st.Pool().Exec(context.Background(), `update schema_version set version = $1`, v); err != nil {
			t.Fatal(err)
		}
	}
	readyz := func(base string) func() answer {
		return func() answer { return do(nil, http.MethodGet, base+"/readyz", "", "") }
	}
	storeIs := func(status int, store string) func(answer) bool {
		return func(a answer) bool {
			checks, _ := a.body["checks"].(map[string]any)
			return a.status == status && checks["store"] == store
		}
	}
	for name, base := range map[string]string{"api": apiBase, "worker": workerBase} {
		eventually(t, name+" ready on the migrated schema", readyz(base), storeIs(http.StatusOK, "ok"))
	}

	setVersion(version - 1)
	for name, base := range map[string]string{"api": apiBase, "worker": workerBase} {
		if a := readyz(base)(); !storeIs(http.StatusServiceUnavailable, "unavailable")(a) {
			t.Errorf("%s /readyz on a schema older than the build's: %v; want 503 with the store unavailable", name, a)
		}
	}

	setVersion(version)
	for name, base := range map[string]string{"api": apiBase, "worker": workerBase} {
		eventually(t, name+" ready again once migrated", readyz(base), storeIs(http.StatusOK, "ok"))
	}
}
