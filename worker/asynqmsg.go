package worker

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// taskMessageName is the protobuf name of Asynq's task message
// (internal/proto), which Asynq registers with protobuf: a task's "msg" in
// Redis is one, encoded.
const taskMessageName = "asynq.TaskMessage"

// decodeTaskMessage decodes a task's message as Asynq does (base.DecodeMessage).
// known is false, and nothing is decoded, when Asynq's message type is not
// registered (a later Asynq renamed it).
func decodeTaskMessage(data []byte) (m protoreflect.Message, known bool, err error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(taskMessageName)
	if err != nil {
		return nil, false, nil
	}
	m = mt.New()
	return m, true, proto.Unmarshal(data, m.Interface())
}

// retriedOf is how often the task whose message this is has been retried:
// Asynq's count of its failed tries (a worker died in one counts too). It
// is 0 when the message does not say.
func retriedOf(data []byte) int {
	m, known, err := decodeTaskMessage(data)
	if !known || err != nil {
		return 0
	}
	fd := m.Descriptor().Fields().ByName("retried")
	if fd == nil || fd.Kind() != protoreflect.Int32Kind {
		return 0
	}
	return int(m.Get(fd).Int())
}
