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
// when it was left alone ("active", "completed", "archived", "scheduled"),
// and after a state taken, the task's message. It is one round trip where
// looking (GetTaskInfo) and then taking (DeleteTask) cost four, and no
// worker can start the task between the look and the take.
//
// It reads Asynq's layout of a queue in Redis (internal/rdb): a task's hash
// asynq:{queue}:t:<id>, its "state" and "msg" fields, the queue's pending
// list and its retry set. TestTakeQueuedTask holds it to the Asynq of
// go.mod.
var takeScript = redis.NewScript(`
local state = redis.call("HGET", KEYS[1], "state")
if not state then
	return {"gone"}
end
local answer = "taken"
if state == "pending" then
	if redis.call("LREM", KEYS[2], 0, ARGV[1]) == 0 then
		return redis.error_reply("task " .. ARGV[1] .. " is pending but not in " .. KEYS[2])
	end
elseif state == "retry" then
	if redis.call("ZREM", KEYS[3], ARGV[1]) == 0 then
		return redis.error_reply("task " .. ARGV[1] .. " is to be retried but not in " .. KEYS[3])
	end
	answer = "taken-retry"
else
	return {state}
end
local msg = redis.call("HGET", KEYS[1], "msg")
redis.call("DEL", KEYS[1])
return {answer, msg}
`)

// What take answers besides a task's state.
const (
	taken      = "taken"
	takenRetry = "taken-retry"
	gone       = "gone"
)

// take runs takeScript on task id of queue. retried is, for a task taken,
// how often it had been retried (its failed tries: a pending task may have
// come due from the retry set); a worker's failed tries of it, which whoever
// runs it next counts on.
func take(ctx context.Context, rdb redis.Scripter, queue, id string) (state string, retried int, err error) {
	prefix := "asynq:{" + queue + "}:"
	res, err := takeScript.Run(ctx, rdb, []string{prefix + "t:" + id, prefix + "pending", prefix + "retry"}, id).Slice()
	if err != nil {
		return "", 0, fmt.Errorf("take task %s off queue %s: %w", id, queue, err)
	}
	if len(res) == 0 {
		return "", 0, fmt.Errorf("take task %s off queue %s: an empty answer", id, queue)
	}
	state, ok := res[0].(string)
	if !ok {
		return "", 0, fmt.Errorf("take task %s off queue %s: answered %v", id, queue, res[0])
	}
	if len(res) > 1 {
		if msg, ok := res[1].(string); ok {
			retried = retriedOf([]byte(msg))
		}
	}
	if state == takenRetry {
		retried = max(retried, 1) // it failed once at least, whatever its message says
	}
	return state, retried, nil
}
