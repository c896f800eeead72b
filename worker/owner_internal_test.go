package worker

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/updown/updown/store/redis/redistest"
)

// TestOwnerRecordIsATransaction: a job's owner record, written in its
// enqueue's pipeline, is a transaction of its own there (its lifetime
// cannot be lost without the record), lasts its lifetime, and a write
// Redis refuses within the transaction is the record's error.
func TestOwnerRecordIsATransaction(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := context.Background()
	write := func(rec *ownerRecord) []string {
		t.Helper()
		var done func()
		cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			done = rec.add(ctx, p)
			return nil
		})
		done()
		var names []string
		for _, c := range cmds {
			names = append(names, c.Name())
		}
		return names
	}
	rec := &ownerRecord{key: jobKeyPrefix + t.Name(), queue: "replay", owner: "o", keep: 2 * time.Hour}
	if got := write(rec); len(got) != 4 || got[0] != "multi" || got[3] != "exec" {
		t.Errorf("the record's commands: %q, want them in MULTI/EXEC", got)
	}
	if err := rec.result(); err != nil {
		t.Fatalf("record: %v", err)
	}
	if ttl := rdb.TTL(ctx, rec.key).Val(); ttl <= time.Hour || ttl > 2*time.Hour {
		t.Errorf("the record lasts %v, want 2h", ttl)
	}
	if v := rdb.HGet(ctx, rec.key, "owner:o").Val(); v != "1" {
		t.Errorf("owner field = %q, want 1", v)
	}

	taken := &ownerRecord{key: jobKeyPrefix + t.Name() + "-taken", queue: "replay", owner: "o", keep: time.Hour}
	rdb.Set(ctx, taken.key, "not a hash", 0)
	write(taken)
	if err := taken.result(); err == nil {
		t.Error("a record Redis refused (WRONGTYPE) reported no error")
	}
}
