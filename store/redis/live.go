// Package redislive keeps updown's hot exchange data, the latest depth and
// the recent trades of each coin and market kind, in Redis: it is the
// production store.LiveExchange, shared by every api process and written by
// the collector (DESIGN 9).
//
// The package lives at store/redis but is named redislive, so that it reads
// clearly beside github.com/redis/go-redis/v9, which callers import as redis.
//
// Layout, under a key prefix (DefaultPrefix unless given):
//
//	depth:<coin>:<kind>   string: the latest depth, packed (see codec.go)
//	trades:<coin>:<kind>  sorted set: recent trades, scored by trade id
//
// Each write is one Lua script, so it is atomic against every other writer
// and costs one round trip: the depth script compares times before it
// replaces the value (a late snapshot never rolls the latest back), and the
// trades script skips ids it holds and trims the set to
// store.MaxRecentTrades. Each script touches one key, so the layout works on
// Redis Cluster too.
package redislive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store"
)

// DefaultPrefix is the key prefix New uses when given none.
const DefaultPrefix = "updown:live:"

// maxTradeID bounds trade ids: a sorted-set score is a float64, exact for
// integers up to 2^53 (exchange ids are around 10^10).
const maxTradeID = 1 << 53

// setDepthSrc replaces the latest depth unless the stored one is newer. Both
// values start with their time as a fixed-width decimal (see codec.go).
const setDepthSrc = `
local cur = redis.call('GETRANGE', KEYS[1], 0, 19)
if #cur == 20 and tonumber(cur) > tonumber(string.sub(ARGV[1], 1, 20)) then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`

// addTradesSrc adds the (score, member) pairs from ARGV[4] on whose score
// (the trade id) is not in the set yet, then keeps only the ARGV[1]
// highest scores. ARGV[2] and ARGV[3] are the lowest and highest id of the
// batch: one range read finds the ids already kept, and one ZADD adds the
// rest, so a batch of a thousand trades is a few commands, not thousands.
// Ids are at most 2^53, exact as Lua numbers.
const addTradesSrc = `
local have = {}
local found = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[3], 'WITHSCORES')
for i = 2, #found, 2 do
	have[tonumber(found[i])] = true
end
local add = {}
for i = 4, #ARGV, 2 do
	local id = tonumber(ARGV[i])
	if not have[id] then
		have[id] = true
		add[#add + 1] = ARGV[i]
		add[#add + 1] = ARGV[i + 1]
	end
end
if #add > 0 then
	redis.call('ZADD', KEYS[1], unpack(add))
end
local keep = tonumber(ARGV[1])
local n = redis.call('ZCARD', KEYS[1])
if n > keep then
	redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - keep - 1)
end
return #add / 2
`

// LiveExchange is a store.LiveExchange in Redis. It is safe for concurrent
// use, as its client is.
type LiveExchange struct {
	rdb       redis.UniversalClient
	prefix    string
	setDepth  *redis.Script
	addTrades *redis.Script
}

var _ store.LiveExchange = (*LiveExchange)(nil)

// New returns a LiveExchange on rdb, keeping its keys under prefix
// (DefaultPrefix when empty). Tests and deployments that share one Redis
// between environments give each its own prefix.
func New(rdb redis.UniversalClient, prefix string) *LiveExchange {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &LiveExchange{
		rdb:       rdb,
		prefix:    prefix,
		setDepth:  redis.NewScript(setDepthSrc),
		addTrades: redis.NewScript(addTradesSrc),
	}
}

func (l *LiveExchange) key(what string, coin store.Coin, kind store.ExchangeKind) string {
	return l.prefix + what + ":" + strings.ToLower(string(coin)) + ":" + string(kind)
}

// SetLatestDepth implements store.LiveExchange. d.Kind may be empty (the
// kind argument says it) but not another kind; Time is kept to the
// millisecond.
func (l *LiveExchange) SetLatestDepth(ctx context.Context, coin store.Coin, kind store.ExchangeKind, d store.DepthSnapshot) error {
	op := fmt.Sprintf("set latest depth of %s %s", coin, kind)
	if err := checkSeries(coin, kind); err != nil {
		return fmt.Errorf("redislive: %s: %w", op, err)
	}
	if d.Kind != "" && d.Kind != kind {
		return fmt.Errorf("redislive: %s: snapshot is of kind %q: %w", op, d.Kind, store.ErrInvalid)
	}
	err := l.setDepth.Run(ctx, l.rdb, []string{l.key("depth", coin, kind)}, encodeDepth(d)).Err()
	return wrap(op, err)
}

// LatestDepth implements store.LiveExchange.
func (l *LiveExchange) LatestDepth(ctx context.Context, coin store.Coin, kind store.ExchangeKind) (store.DepthSnapshot, error) {
	op := fmt.Sprintf("latest depth of %s %s", coin, kind)
	if err := checkSeries(coin, kind); err != nil {
		return store.DepthSnapshot{}, fmt.Errorf("redislive: %s: %w", op, err)
	}
	b, err := l.rdb.Get(ctx, l.key("depth", coin, kind)).Result()
	if errors.Is(err, redis.Nil) {
		return store.DepthSnapshot{}, fmt.Errorf("redislive: %s: %w", op, store.ErrNotFound)
	}
	if err != nil {
		return store.DepthSnapshot{}, wrap(op, err)
	}
	d, err := decodeDepth(b)
	if err != nil {
		return store.DepthSnapshot{}, fmt.Errorf("redislive: %s: %w", op, err)
	}
	d.Kind = kind
	return d, nil
}

// AddTrades implements store.LiveExchange. Ids must lie in [0, 2^53], where
// a sorted-set score is exact; a batch with any other is ErrInvalid and
// stores nothing. Of one id twice in a batch the first is kept.
func (l *LiveExchange) AddTrades(ctx context.Context, coin store.Coin, kind store.ExchangeKind, trades []store.Trade) error {
	op := fmt.Sprintf("add trades of %s %s", coin, kind)
	if err := checkSeries(coin, kind); err != nil {
		return fmt.Errorf("redislive: %s: %w", op, err)
	}
	for i, t := range trades {
		if t.ID < 0 || t.ID > maxTradeID {
			return fmt.Errorf("redislive: %s: trade %d of %d has id %d outside [0, 2^53]: %w", op, i+1, len(trades), t.ID, store.ErrInvalid)
		}
	}
	if len(trades) == 0 {
		return ctxErr(ctx, op)
	}
	// Only the batch's newest MaxRecentTrades can survive the trim, so only
	// they travel: a backfill of thousands is one bounded script.
	batch := firstOfEachID(trades)
	slices.SortFunc(batch, func(a, b store.Trade) int { return cmp.Compare(b.ID, a.ID) })
	batch = batch[:min(len(batch), store.MaxRecentTrades)]
	args := make([]any, 0, 3+2*len(batch))
	args = append(args, store.MaxRecentTrades, batch[len(batch)-1].ID, batch[0].ID)
	for _, t := range batch {
		args = append(args, strconv.FormatInt(t.ID, 10), encodeTrade(t))
	}
	err := l.addTrades.Run(ctx, l.rdb, []string{l.key("trades", coin, kind)}, args...).Err()
	return wrap(op, err)
}

// firstOfEachID returns trades without repeated ids, keeping the first of
// each, in a new slice.
func firstOfEachID(trades []store.Trade) []store.Trade {
	seen := make(map[int64]struct{}, len(trades))
	out := make([]store.Trade, 0, len(trades))
	for _, t := range trades {
		if _, dup := seen[t.ID]; !dup {
			seen[t.ID] = struct{}{}
			out = append(out, t)
		}
	}
	return out
}

// RecentTrades implements store.LiveExchange. A limit of 0 means every
// trade kept; a negative one is ErrInvalid.
func (l *LiveExchange) RecentTrades(ctx context.Context, coin store.Coin, kind store.ExchangeKind, limit int) ([]store.Trade, error) {
	op := fmt.Sprintf("recent trades of %s %s", coin, kind)
	if err := checkSeries(coin, kind); err != nil {
		return nil, fmt.Errorf("redislive: %s: %w", op, err)
	}
	if limit < 0 {
		return nil, fmt.Errorf("redislive: %s: limit %d: %w", op, limit, store.ErrInvalid)
	}
	if limit == 0 || limit > store.MaxRecentTrades {
		limit = store.MaxRecentTrades
	}
	members, err := l.rdb.ZRevRange(ctx, l.key("trades", coin, kind), 0, int64(limit-1)).Result()
	if err != nil {
		return nil, wrap(op, err)
	}
	out := make([]store.Trade, len(members))
	bestMatch := make([]bool, len(members))
	for i, m := range members {
		if out[i], err = decodeTrade(m, &bestMatch[i]); err != nil {
			return nil, fmt.Errorf("redislive: %s: %w", op, err)
		}
	}
	return out, nil
}

// checkSeries reports whether coin and kind name a series.
func checkSeries(coin store.Coin, kind store.ExchangeKind) error {
	if !coin.Valid() || !kind.Valid() {
		return fmt.Errorf("coin %q, kind %q: %w", coin, kind, store.ErrInvalid)
	}
	return nil
}

// ctxErr reports a done context the way a Redis call would have.
func ctxErr(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redislive: %s: %w", op, err)
	}
	return nil
}

// wrap adds the operation to a Redis error and marks the ones that mean
// Redis cannot be reached (refused or broken connections, timeouts, a
// closed client, a server still loading or failing over) as
// store.ErrUnavailable, which the api answers with 503 and clients retry.
// A reply error from a reachable server (a wrong type, a script bug) is a
// plain error: retrying will not mend it.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var reply redis.Error
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("redislive: %s: %w", op, err)
	case errors.As(err, &reply) && !transient(reply):
		return fmt.Errorf("redislive: %s: %w", op, err)
	}
	return fmt.Errorf("redislive: %s: %w: %w", op, store.ErrUnavailable, err)
}

// transient reports whether a reply error means the server cannot serve
// now but will: it is loading its data, is a replica or is failing over.
func transient(err redis.Error) bool {
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
