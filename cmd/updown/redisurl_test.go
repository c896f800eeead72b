package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/updown/updown/store/redis/redistest"
)

// TestParseRedisURL: REDIS_URL's forms, one server or a Sentinel group,
// each read once into go-redis's options and Asynq's, which agree.
func TestParseRedisURL(t *testing.T) {
	t.Parallel()
	type want struct {
		addrs                  []string // sentinels; nil for one server
		addr                   string   // one server
		master                 string
		user, password         string
		sentinelUser, sentinel string
		db                     int
		tls                    bool
	}
	for _, tc := range []struct {
		url  string
		want want
	}{
		{"redis://127.0.0.1:6379/0", want{addr: "127.0.0.1:6379"}},
		{"redis://:pw@127.0.0.1:6380/3", want{addr: "127.0.0.1:6380", password: "pw", db: 3}},
		{"rediss://u:pw@redis.example:6380/1", want{addr: "redis.example:6380", user: "u", password: "pw", db: 1, tls: true}},
		{"redis+sentinel://127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381/mymaster/2",
			want{addrs: []string{"127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"}, master: "mymaster", db: 2}},
		{"redis+sentinel://:s3cret@10.0.0.1:26379,10.0.0.2:26379/mymaster/0",
			want{addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, master: "mymaster", password: "s3cret"}},
		{"redis+sentinel://app:p%40ss%2Fw@s1:5000/mymaster",
			want{addrs: []string{"s1:5000"}, master: "mymaster", user: "app", password: "p@ss/w"}},
		{"redis+sentinel://s1,s2:26380/mymaster/", // default port, trailing slash
			want{addrs: []string{"s1:26379", "s2:26380"}, master: "mymaster"}},
		{"redis+sentinel://[::1]:26379,[::1]:26380,[fe80::1]/my%20master/15",
			want{addrs: []string{"[::1]:26379", "[::1]:26380", "[fe80::1]:26379"}, master: "my master", db: 15}},
		{"redis+sentinel://:pw@s1:26379/m/1?sentinel_password=sp&sentinel_username=su",
			want{addrs: []string{"s1:26379"}, master: "m", password: "pw", sentinel: "sp", sentinelUser: "su", db: 1}},
		{"rediss+sentinel://:pw@s1:26379,s2:26379/m/0",
			want{addrs: []string{"s1:26379", "s2:26379"}, master: "m", password: "pw", tls: true}},
		{"REDIS+SENTINEL://s1:1/m", want{addrs: []string{"s1:1"}, master: "m"}},
	} {
		c, err := parseRedisURL(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		w := tc.want
		if w.addrs == nil {
			if c.failover != nil || c.single == nil {
				t.Errorf("%s: want one server, got %+v", tc.url, c)
				continue
			}
			o := c.single
			got := want{addr: o.Addr, user: o.Username, password: o.Password, db: o.DB, tls: o.TLSConfig != nil}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("%s: go-redis options %+v, want %+v", tc.url, got, w)
			}
			a, ok := c.asynq.(asynq.RedisClientOpt)
			if !ok || a.Addr != o.Addr || a.Username != o.Username || a.Password != o.Password || a.DB != o.DB || a.TLSConfig != o.TLSConfig {
				t.Errorf("%s: Asynq's options %+v differ from go-redis's %+v", tc.url, c.asynq, o)
			}
			continue
		}
		if c.failover == nil || c.single != nil {
			t.Errorf("%s: want a Sentinel group, got %+v", tc.url, c)
			continue
		}
		o := c.failover
		got := want{addrs: o.SentinelAddrs, master: o.MasterName, user: o.Username, password: o.Password,
			sentinelUser: o.SentinelUsername, sentinel: o.SentinelPassword, db: o.DB, tls: o.TLSConfig != nil}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: go-redis options %+v, want %+v", tc.url, got, w)
		}
		a, ok := c.asynq.(asynq.RedisFailoverClientOpt)
		if !ok || a.MasterName != o.MasterName || !reflect.DeepEqual(a.SentinelAddrs, o.SentinelAddrs) ||
			a.Username != o.Username || a.Password != o.Password || a.SentinelUsername != o.SentinelUsername ||
			a.SentinelPassword != o.SentinelPassword || a.DB != o.DB || a.TLSConfig != o.TLSConfig {
			t.Errorf("%s: Asynq's options %+v differ from go-redis's %+v", tc.url, c.asynq, o)
		}
		if o.TLSConfig != nil && (o.TLSConfig.InsecureSkipVerify || o.TLSConfig.ServerName != "") {
			t.Errorf("%s: TLS %+v; want verification against each host dialled", tc.url, o.TLSConfig)
		}
	}
}

// TestParseRedisURLRefuses: a REDIS_URL that cannot be right is refused
// before anything connects, with an error that names REDIS_URL, says what
// is wrong, and never prints the password.
func TestParseRedisURLRefuses(t *testing.T) {
	t.Parallel()
	const pw = "Pa55w0rd-zq"
	for _, tc := range []struct{ url, says string }{
		{"redis+sentinel://:" + pw + "@/mymaster/0", "no sentinel addresses"},
		{"redis+sentinel://:" + pw + "@s1:26379,s2:26379", "no master name"},
		{"redis+sentinel://:" + pw + "@s1:26379/", "no master name"},
		{"redis+sentinel://:" + pw + "@s1:26379//0", "no master name"},
		{"redis+sentinel://:" + pw + "@s1:26379/m/x", `database "x"`},
		{"redis+sentinel://:" + pw + "@s1:26379/m/-1", `database "-1"`},
		{"redis+sentinel://:" + pw + "@s1:26379/m/0/1", "more than the master name"},
		{"redis+sentinel://:" + pw + "@s1:99999/m", `"s1:99999" has no valid port`},
		{"redis+sentinel://:" + pw + "@s1:port/m", `"s1:port" has no valid port`},
		{"redis+sentinel://:" + pw + "@s1:1,,s2:2/m", "empty sentinel address"},
		{"redis+sentinel://:" + pw + "@s1:1,s1:1/m", "listed twice"},
		{"redis+sentinel://:" + pw + "@::1:26379/m", "in brackets"},
		{"redis+sentinel://:" + pw + "@:26379/m", "no valid host"},
		{"redis+sentinel://:" + pw + "@s 1:26379/m", "no valid host"},
		{"redis+sentinel://:ab/" + pw + "@s1:1/m/x", `database "x"`}, // an unescaped "/" in the password
		{"redis+sentinel://:" + pw + "@s1:1/m?master=x", `unknown parameter "master"`},
		{"redis+sentinel://:" + pw + "@s1:1/m?sentinel_password=%zz", "query"},
		{"redis+sentinel://:" + pw + "%zz@s1:1/m", "password is not validly"},
		{"redis+sentinel://:" + pw + "@s1:1/m%zz", "master name"},
		{"redis-sentinel://:" + pw + "@s1:1?master=m", "redis+sentinel://"}, // Asynq's spelling
		{"sentinel://:" + pw + "@s1:1/m", "is not one of"},
		{"127.0.0.1:6379", "is not one of"},
		{"", "is not one of"},
		{"redis://:" + pw + "@127.0.0.1:6379/zz", "REDIS_URL"},
		// go-redis selected no database for a negative one: database 0.
		{"redis://:" + pw + "@127.0.0.1:6379/-1", `database "-1"`},
		{"rediss://:" + pw + "@127.0.0.1:6379?db=-2", `database "-2"`},
	} {
		_, err := parseRedisURL(tc.url)
		if err == nil {
			t.Errorf("%s: parsed; want an error saying %q", tc.url, tc.says)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "REDIS_URL: ") || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %q; want REDIS_URL: ... %s", tc.url, msg, tc.says)
		}
		if strings.Contains(msg, pw) || strings.Contains(msg, "w0rd") {
			t.Errorf("%s: the error prints the password: %s", tc.url, msg)
		}
	}
}

// TestSentinelURLRedacted: -h of every service command, and the
// redaction the log uses, print a sentinel REDIS_URL without its
// passwords, Redis's and the sentinels'.
func TestSentinelURLRedacted(t *testing.T) {
	const url = "redis+sentinel://app:Redis-Pw-1@s1:26379,s2:26379/mymaster/0?sentinel_password=Sentinel-Pw-2"
	const want = "redis+sentinel://app:xxxxx@s1:26379,s2:26379/mymaster/0?sentinel_password=xxxxx"
	if got := redactURL(url); got != want {
		t.Errorf("redactURL = %q, want %q", got, want)
	}
	t.Setenv("REDIS_URL", url)
	for _, cmd := range []string{"api", "worker", "collect"} {
		var stdout, stderr bytes.Buffer
		_ = run(context.Background(), []string{cmd, "-h"}, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if !strings.Contains(out, "s1:26379,s2:26379/mymaster") {
			t.Errorf("updown %s -h does not show REDIS_URL's default:\n%s", cmd, out)
		}
		if strings.Contains(out, "Redis-Pw") || strings.Contains(out, "Sentinel-Pw") {
			t.Errorf("updown %s -h prints a password:\n%s", cmd, out)
		}
	}
}

// FuzzParseRedisURL: whatever REDIS_URL holds, parsing it does not panic,
// an error names REDIS_URL and never quotes the URL's password, and what
// parses as a Sentinel group is a usable one that reads back the same
// from its canonical spelling.
func FuzzParseRedisURL(f *testing.F) {
	for _, s := range []string{
		"redis+sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/0",
		"rediss+sentinel://u:p%40w@[::1]:1,h/m?sentinel_password=x",
		"redis+sentinel://h/m/0/1", "redis+sentinel://:secretpw@h:1/m/zz", "redis://:pw@h:6379/0",
		"redis+sentinel://@,/", "redis+sentinel://:pw@h:1/m?sentinel_username=a&sentinel_username=b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := parseRedisURL(raw)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "REDIS_URL: ") {
				t.Fatalf("%q: error %q does not name REDIS_URL", raw, msg)
			}
			if pw := sentinelPassword(raw); len(pw) >= 6 && strings.Contains(msg, pw) && !strings.Contains(strings.Replace(raw, pw, "", 1), pw) {
				t.Fatalf("%q: error %q quotes the password", raw, msg)
			}
			return
		}
		fo := c.failover
		if fo == nil {
			if c.single == nil || c.asynq == nil {
				t.Fatalf("%q: parsed into %+v", raw, c)
			}
			return
		}
		if len(fo.SentinelAddrs) == 0 || fo.MasterName == "" || fo.DB < 0 || c.asynq == nil {
			t.Fatalf("%q: parsed into an unusable %+v", raw, fo)
		}
		again, err := parseRedisURL(canonicalSentinelURL(c))
		if err != nil {
			t.Fatalf("%q: its canonical form %q: %v", raw, canonicalSentinelURL(c), err)
		}
		if !reflect.DeepEqual(again.failover, fo) && !(fo.TLSConfig != nil && again.failover.TLSConfig != nil) {
			t.Fatalf("%q reads %+v; its canonical form %+v", raw, fo, again.failover)
		}
	})
}

// sentinelPassword is the password in a sentinel URL's user info, as
// written (escaped), or "".
func sentinelPassword(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	rest, _, _ = strings.Cut(rest, "#")
	rest, _, _ = strings.Cut(rest, "?")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	_, pw, _ := strings.Cut(rest[:at], ":")
	return pw
}

// escape %-escapes every byte but the unreserved ones.
func escape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// canonicalSentinelURL writes a parsed Sentinel group back as a URL.
func canonicalSentinelURL(c redisConn) string {
	fo := c.failover
	scheme := schemeSentinel
	if fo.TLSConfig != nil {
		scheme = schemeSentinelTLS
	}
	q := url.Values{}
	if fo.SentinelPassword != "" {
		q.Set("sentinel_password", fo.SentinelPassword)
	}
	if fo.SentinelUsername != "" {
		q.Set("sentinel_username", fo.SentinelUsername)
	}
	s := fmt.Sprintf("%s://%s:%s@%s/%s/%s", scheme, escape(fo.Username), escape(fo.Password),
		strings.Join(fo.SentinelAddrs, ","), escape(fo.MasterName), strconv.Itoa(fo.DB))
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// TestSentinelUnreachableSaysWhy: a Sentinel REDIS_URL that does not
// answer is refused at start with what each sentinel said: one that
// refuses connections by its error (go-redis says only "context deadline
// exceeded"), one that monitors no master of the URL's name as such
// (go-redis says "all sentinels ... are unreachable: redis: nil").
func TestSentinelUnreachableSaysWhy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	c, err := parseRedisURL("redis+sentinel://" + closed + "/mymaster/0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = openRedis(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "sentinel "+closed+": dial tcp") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a sentinel that refuses connections: %v; want its address and the refusal named", err)
	}

	s := redistest.StartSentinel(t, redistest.SentinelOptions{})
	c, err = parseRedisURL("redis+sentinel://" + s.Sentinels[0] + "/nosuchmaster/0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = openRedis(context.Background(), c)
	if want := "sentinel " + s.Sentinels[0] + ` monitors no master named "nosuchmaster"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a master name the sentinel does not know: %v; want %q", err, want)
	}
}

// TestRedisRefusalIsNotUnreachable: a Redis that answers but refuses the
// connection's setup (a database index over its count) is told as a
// refusal with its own words, not as a Redis out of reach.
func TestRedisRefusalIsNotUnreachable(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(redistest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseRedisURL(fmt.Sprintf("redis://%s/99", u.Host))
	if err != nil {
		t.Fatal(err)
	}
	_, err = openRedis(context.Background(), c)
	if err == nil || strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Errorf("a database index the server lacks: %v; want the server's refusal, not 'unreachable'", err)
	}
}
