package postgres_test

import (
	"strings"
	"testing"

	"github.com/updown/updown/store/postgres"
	"github.com/updown/updown/store/postgres/pgtest"
)

// TestPoolSize (issue 28, item 3): the pool is DefaultMaxConns unless
// DATABASE_URL sets pool_max_conns.
func TestPoolSize(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		url  string
		want int32
	}{
		{url, postgres.DefaultMaxConns()},
		{withParam(url, "pool_max_conns=3"), 3},
	} {
		st, err := postgres.Open(t.Context(), tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Pool().Config().MaxConns; got != tc.want {
			t.Errorf("%s: pool of %d, want %d", tc.url, got, tc.want)
		}
		st.Close()
	}
	if n := postgres.DefaultMaxConns(); n < 16 {
		t.Errorf("DefaultMaxConns() = %d, want at least 16", n)
	}
}

func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}
