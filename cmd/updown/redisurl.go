package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// REDIS_URL takes one Redis server or a Redis Sentinel group (DESIGN 1):
//
//	redis://[[user]:password@]host:port[/db]        one server (go-redis's form, with its query options)
//	rediss://...                                     the same over TLS
//	redis+sentinel://[[user]:password@]host:port[,host:port...]/master-name[/db][?sentinel_password=P&sentinel_username=U]
//	rediss+sentinel://...                            the same over TLS, to the sentinels and to Redis
//
// In the sentinel form the hosts are the sentinels (port 26379 when
// omitted), master-name is the group the sentinels monitor, and the user
// and password are those of Redis itself (its primary and replicas).
// Sentinels that want a password of their own (their requirepass) take it
// as sentinel_password; without it they are asked nothing. Every Redis
// user of the process (sessions, rate limits, job slots, completions, the
// Asynq client, server and inspector, /monitoring) goes through the one
// client this yields, which follows the primary across failovers.

const (
	schemeSentinel    = "redis+sentinel"
	schemeSentinelTLS = "rediss+sentinel"
	// defaultSentinelPort is Redis Sentinel's own port.
	defaultSentinelPort = "26379"
)

// redisConn is a parsed REDIS_URL: options for go-redis, either for one
// server or for a Sentinel group, and the same connection for Asynq's
// monitoring UI, which makes its own clients.
type redisConn struct {
	single   *redis.Options         // one server; nil for a Sentinel group
	failover *redis.FailoverOptions // a Sentinel group; nil for one server
	asynq    asynq.RedisConnOpt
}

// parseRedisURL reads REDIS_URL (see above) for go-redis and for Asynq.
// Its errors name REDIS_URL and never print the URL's password.
func parseRedisURL(raw string) (redisConn, error) {
	scheme, _, _ := strings.Cut(raw, "://")
	switch strings.ToLower(scheme) {
	case schemeSentinel, schemeSentinelTLS:
		fo, err := parseSentinelURL(raw)
		if err != nil {
			return redisConn{}, fmt.Errorf("REDIS_URL: %w", redactedError(err, raw))
		}
		return redisConn{failover: fo, asynq: asynq.RedisFailoverClientOpt{
			MasterName: fo.MasterName, SentinelAddrs: fo.SentinelAddrs,
			SentinelUsername: fo.SentinelUsername, SentinelPassword: fo.SentinelPassword,
			Username: fo.Username, Password: fo.Password, DB: fo.DB, TLSConfig: fo.TLSConfig,
		}}, nil
	case "redis", "rediss":
		opt, err := redis.ParseURL(raw)
		if err != nil {
			return redisConn{}, fmt.Errorf("REDIS_URL: %w", redactedError(err, raw))
		}
		// go-redis takes a negative database (/-1, ?db=-1) and selects
		// none, so the process shared database 0 with whatever else uses
		// it; the sentinel form refuses it too.
		if opt.DB < 0 {
			return redisConn{}, fmt.Errorf("REDIS_URL: database \"%d\" is not a number 0 or above", opt.DB)
		}
		return redisConn{single: opt, asynq: asynq.RedisClientOpt{
			Network: opt.Network, Addr: opt.Addr, Username: opt.Username, Password: opt.Password, DB: opt.DB,
			DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout,
			PoolSize: opt.PoolSize, TLSConfig: opt.TLSConfig,
		}}, nil
	default:
		return redisConn{}, fmt.Errorf("REDIS_URL: scheme %q is not one of redis://, rediss://, %s:// or %s:// (e.g. redis://127.0.0.1:6379/0)",
			scheme, schemeSentinel, schemeSentinelTLS)
	}
}

// parseSentinelURL reads the sentinel form. It parses the URL by hand:
// net/url takes one host, not a list (nor a list of bracketed IPv6
// addresses). Its errors quote what they refuse but never a password.
func parseSentinelURL(raw string) (*redis.FailoverOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	rest, _, _ = strings.Cut(rest, "#")
	rest, query, _ := strings.Cut(rest, "?")
	fo := &redis.FailoverOptions{}
	if strings.EqualFold(scheme, schemeSentinelTLS) {
		// No ServerName: each connection checks the name of the host it dials.
		fo.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// The user info ends at the last "@": a password may hold a "/"
	// unescaped (base64 ones do), which would otherwise end the hosts.
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, password, hasPassword := strings.Cut(rest[:at], ":")
		rest = rest[at+1:]
		var err error
		if fo.Username, err = url.PathUnescape(user); err != nil {
			return nil, errors.New("the user name is not validly %-escaped")
		}
		if hasPassword {
			if fo.Password, err = url.PathUnescape(password); err != nil {
				return nil, errors.New("the password is not validly %-escaped")
			}
		}
	}
	hosts, path, _ := strings.Cut(rest, "/")
	addrs, err := sentinelAddrs(hosts)
	if err != nil {
		return nil, err
	}
	fo.SentinelAddrs = addrs

	segs := strings.Split(path, "/")
	if len(segs) > 0 && segs[len(segs)-1] == "" && len(segs) > 1 {
		segs = segs[:len(segs)-1] // a trailing slash
	}
	if path == "" || segs[0] == "" {
		return nil, fmt.Errorf("no master name: the sentinel form is %s://[:password@]host:port,host:port/master-name/db", schemeSentinel)
	}
	if fo.MasterName, err = url.PathUnescape(segs[0]); err != nil {
		return nil, fmt.Errorf("master name %q is not validly %%-escaped", segs[0])
	}
	switch len(segs) {
	case 1:
	case 2:
		db, err := strconv.Atoi(segs[1])
		if err != nil || db < 0 {
			return nil, fmt.Errorf("database %q after the master name is not a number 0 or above", segs[1])
		}
		fo.DB = db
	default:
		return nil, fmt.Errorf("path /%s has more than the master name and the database", path)
	}

	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, errors.New("the query is not validly %-escaped")
	}
	for k, v := range q {
		switch k {
		case "sentinel_password":
			fo.SentinelPassword = v[len(v)-1]
		case "sentinel_username":
			fo.SentinelUsername = v[len(v)-1]
		default:
			return nil, fmt.Errorf("unknown parameter %q: the sentinel form takes sentinel_password and sentinel_username", k)
		}
	}
	return fo, nil
}

// sentinelAddrs reads the comma-separated sentinels, host:port each (port
// 26379 when omitted; IPv6 hosts in brackets).
func sentinelAddrs(hosts string) ([]string, error) {
	if hosts == "" {
		return nil, errors.New("no sentinel addresses: list them as host:port,host:port")
	}
	var addrs []string
	seen := map[string]bool{}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("empty sentinel address in %q", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: the sentinel's default one.
			if strings.Count(h, ":") > 0 && !strings.HasPrefix(h, "[") {
				return nil, fmt.Errorf("sentinel address %q is not host:port (an IPv6 host goes in brackets)", h)
			}
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultSentinelPort
		}
		if !validHost(host) {
			return nil, fmt.Errorf("sentinel address %q has no valid host", h)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("sentinel address %q has no valid port", h)
		}
		addr := net.JoinHostPort(host, port)
		if seen[addr] {
			return nil, fmt.Errorf("sentinel %s is listed twice", addr)
		}
		seen[addr] = true
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// validHost is a host name or an IP address (an IPv6 one with its zone).
func validHost(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-_:%", r)) {
			return false
		}
	}
	return true
}

// describe says what the process connects to, without secrets: for the
// log line at start.
func (c redisConn) describe() string {
	if c.failover != nil {
		return fmt.Sprintf("Redis Sentinel master %q db %d via %s", c.failover.MasterName, c.failover.DB, strings.Join(c.failover.SentinelAddrs, ","))
	}
	return fmt.Sprintf("Redis %s db %d", c.single.Addr, c.single.DB)
}

// openRedis connects to Redis (one server, or the primary the sentinels
// name, followed across failovers) and checks that it answers.
func openRedis(ctx context.Context, c redisConn) (redis.UniversalClient, error) {
	// Fail fast when Redis is gone: requests answer 503 (or pass the rate
	// limiter, counted per process) rather than hang on retries. During a failover
	// that is the window until the sentinels name the new primary, which
	// the client hears of at once (+switch-master) and moves to.
	var rdb redis.UniversalClient
	if c.failover != nil {
		fo := *c.failover
		fo.ContextTimeoutEnabled = true
		fo.MaxRetries = 1
		rdb = redis.NewFailoverClient(&fo)
	} else {
		opt := *c.single
		opt.ContextTimeoutEnabled = true
		opt.MaxRetries = 1
		rdb = redis.NewClient(&opt)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		if c.failover != nil {
			// go-redis says "all sentinels ... are unreachable: redis: nil"
			// of a master name the sentinels do not know, and "context
			// deadline exceeded" of sentinels that refuse connections: ask
			// each sentinel what it knows, and say so.
			return nil, fmt.Errorf("redis unreachable at REDIS_URL (%s): %w (%s)", c.describe(), err, askSentinels(ctx, c.failover))
		}
		var refused redis.Error // the server's own error reply: it answered
		if errors.As(err, &refused) && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redis at REDIS_URL (%s) refused the connection: %w", c.describe(), err)
		}
		return nil, fmt.Errorf("redis unreachable at REDIS_URL (%s): %w", c.describe(), err)
	}
	return rdb, nil
}

// askSentinels asks each sentinel of a group for its primary, and tells
// what each answered: the primary's address, no master of that name, or
// why it could not be asked.
func askSentinels(ctx context.Context, fo *redis.FailoverOptions) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	notes := make([]string, len(fo.SentinelAddrs))
	for i, addr := range fo.SentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: fo.SentinelUsername, Password: fo.SentinelPassword,
			TLSConfig: fo.TLSConfig, DialTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
		primary, err := sc.GetMasterAddrByName(ctx, fo.MasterName).Result()
		_ = sc.Close()
		switch {
		case errors.Is(err, redis.Nil):
			notes[i] = fmt.Sprintf("sentinel %s monitors no master named %q", addr, fo.MasterName)
		case err != nil:
			notes[i] = fmt.Sprintf("sentinel %s: %v", addr, err)
		case len(primary) == 2:
			notes[i] = fmt.Sprintf("sentinel %s names the primary %s", addr, net.JoinHostPort(primary[0], primary[1]))
		default:
			notes[i] = fmt.Sprintf("sentinel %s answered %q", addr, primary)
		}
	}
	return strings.Join(notes, "; ")
}
