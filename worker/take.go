package worker

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// takeScript takes a queued task off its queue, as Inspector.DeleteTask
// does, but only when no worker has started it, and answers where the task
// stood: "taken" (it was pending), "taken-retry" (it was waiting to be
// retried: an attempt of it failed), "gone" (no such task), or its state
// when it was left alone ("active", "completed", "archived", "scheduled"). It is one round
// trip where looking (GetTaskInfo) and then taking (DeleteTask) cost four,
// and no worker can start the task between the look and the take.
//
// It reads Asynq's layout of a queue in Redis (internal/rdb): a task's hash
// asynq:{queue}:t:<id> and its "state" field, the queue's pending list and
// its retry set. TestTakeQueuedTask holds it to the Asynq of go.mod.
var takeScript = redis.NewScript(`
local state = redis.call("HGET", KEYS[1], "state")
if not state then
	return "gone"
end
if state == "pending" then
	if redis.call("LREM", KEYS[2], 0, ARGV[1]) == 0 then
		return redis.error_reply("task " .. ARGV[1] .. " is pending but not in " .. KEYS[2])
	end
elseif state == "retry" then
	if redis.call("ZREM", KEYS[3], ARGV[1]) == 0 then
		return redis.error_reply("task " .. ARGV[1] .. " is to be retried but not in " .. KEYS[3])
	end
	redis.call("DEL", KEYS[1])
	return "taken-retry"
else
	return state
end
redis.call("DEL", KEYS[1])
return "taken"
`)

// What take answers besides a task's state.
const (
	taken      = "taken"
	takenRetry = "taken-retry"
	gone       = "gone"
)

// take runs takeScript on task id of queue.
func take(ctx context.Context, rdb redis.Scripter, queue, id string) (string, error) {
	prefix := "asynq:{" + queue + "}:"
	state, err := takeScript.Run(ctx, rdb, []string{prefix + "t:" + id, prefix + "pending", prefix + "retry"}, id).Text()
	if err != nil {
		return "", fmt.Errorf("take task %s off queue %s: %w", id, queue, err)
	}
	return state, nil
}
