package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestRedisURLErrorsHidePassword: a REDIS_URL that does not parse is
// quoted in the error without its password, for every process that reads
// it, before any connection is tried.
func TestRedisURLErrorsHidePassword(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://127.0.0.1:1/none")
	t.Setenv("TOKEN_SECRET", testTokenSecret)
	t.Setenv("WEBHOOK_SECRET", testWebhookSecret)
	const password = "s3cret-Pa55"
	for _, url := range []string{
		"redis://:" + password + "@127.0.0.1:6379/zz",           // bad database number
		"redis://user:" + password + " x@127.0.0.1:6379/0",      // invalid user info
		"redis://user:" + password + "@[::1/0",                  // bad host
		"redis://default:" + password + "@127.0.0.1:6379/0?x=1", // unknown option
		"http://:" + password + "@127.0.0.1:6379/0",             // wrong scheme
	} {
		t.Setenv("REDIS_URL", url)
		for _, cmd := range []string{"api", "worker"} {
			err := run(context.Background(), []string{cmd}, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
				t.Errorf("%s with REDIS_URL %q: %v; want a REDIS_URL error", cmd, url, err)
				continue
			}
			if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "Pa55") {
				t.Errorf("%s prints the password: %v", cmd, err)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://:pw@h:6379/0":                               "redis://:xxxxx@h:6379/0",
		"redis://u:pw@h:6379/0":                              "redis://u:xxxxx@h:6379/0",
		"redis://u:p@w@h:6379/0":                             "redis://u:xxxxx@h:6379/0",
		"redis://u:p w@[::1/0":                               "redis://u:xxxxx@[::1/0",
		"redis://u@h:6379/0":                                 "redis://u@h:6379/0",
		"redis://h:6379/0":                                   "redis://h:6379/0",
		"not a url at all":                                   "not a url at all",
		"rediss://:pw@h:6379/0?x=1#frag":                     "rediss://:xxxxx@h:6379/0?x=1#frag",
		"postgres://u@h/db?password=pw":                      "postgres://u@h/db?password=xxxxx",
		"postgres://u@h/db?sslmode=disable&PASSWORD=p@w&x=1": "postgres://u@h/db?sslmode=disable&PASSWORD=xxxxx&x=1",
		"postgres://u:pw@h/db?password=pw2":                  "postgres://u:xxxxx@h/db?password=xxxxx",
		"host=h user=u password=pw dbname=d":                 "host=h user=u password=xxxxx dbname=d",
		"host=h password = 'p w\\'x' dbname=d":               "host=h password = xxxxx dbname=d",
		// sslpassword unlocks the client's TLS key: a secret as much.
		"postgres://u@h/db?sslmode=verify-full&sslpassword=kp": "postgres://u@h/db?sslmode=verify-full&sslpassword=xxxxx",
		"host=h sslkey=/k.pem sslpassword=kp dbname=d":         "host=h sslkey=/k.pem sslpassword=xxxxx dbname=d",
		"host=h SSLPASSWORD = 'k p' password=pw":               "host=h SSLPASSWORD = xxxxx password=xxxxx",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHelpHidesDatabasePasswords: -h shows DATABASE_URL as the
// --database-url default without its secrets, sslpassword (the client
// key's passphrase) as well as password.
func TestHelpHidesDatabasePasswords(t *testing.T) {
	for _, url := range []string{
		"postgres://u:s3cret-Pa55@db.example/updown?sslmode=verify-full&sslkey=/k.pem&sslpassword=k3y-Pa55",
		"host=db.example user=u password=s3cret-Pa55 sslkey=/k.pem sslpassword=k3y-Pa55 dbname=updown",
	} {
		t.Setenv("DATABASE_URL", url)
		var out, errOut strings.Builder
		_ = run(context.Background(), []string{"migrate", "-h"}, &out, &errOut)
		help := out.String() + errOut.String()
		if !strings.Contains(help, "database-url") {
			t.Fatalf("migrate -h does not show --database-url:\n%s", help)
		}
		if strings.Contains(help, "Pa55") {
			t.Errorf("migrate -h with DATABASE_URL %q shows a secret:\n%s", url, help)
		}
	}
}
