// Package jobs is the work itself, free of transport: task names and
// payloads, the replay engine, backtest fan-out, strategy generation,
// synthetic data and collectors. It never imports asynq or huma.
package jobs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/updown/updown/jobs/gzjoin"
)

// Task types, one per kind of work the workers do.
const (
	// TypePing is a no-op task: it measures queue overhead and proves a
	// worker is consuming.
	TypePing = "updown:ping"
)

// Queues and their priorities (DESIGN 7): user-facing work first, so that
// ingestion never starves a waiting request.
const (
	QueueReplay   = "replay"
	QueueBacktest = "backtest"
	QueueAI       = "ai"
	QueueCollect  = "collect"
	// QueueSweeps holds sweep shards (DESIGN 14), below the user-facing
	// queues so that a running sweep never holds a replay back.
	QueueSweeps = "sweeps"
)

// QueuePriorities is the weight of each queue for the worker's scheduler.
func QueuePriorities() map[string]int {
	return map[string]int{QueueReplay: 6, QueueBacktest: 6, QueueAI: 3, QueueSweeps: 2, QueueCollect: 1}
}

// TypeReplay replays one strategy against one resolved market. Its payload
// is a replay.Request (JSON); its result a replay.Result.
const TypeReplay = "updown:replay"

// TypeResolve settles one ended market (queue collect); payload collect.ResolveRequest.
const TypeResolve = "updown:resolve"

// Failure is a task outcome a user should see: the request was fine when it
// was checked but the work cannot be done (the market vanished, has no
// data). Code is a SPEC 7 error code; the api maps it to a status.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// Outcome is what a finished task leaves for whoever waits on it: its
// result, or the failure to answer. Workers write it as the task result
// and announce it on Redis (Encode); the api decodes it (DecodeOutcome)
// and reads its result with Data. The failure comes first on the wire, so that an encoded
// outcome that starts with the result holds nothing else.
type Outcome struct {
	Failure *Failure `json:"failure,omitempty"`
	// Refused marks a Failure that refuses the user's input after judging
	// it (a prompt the generator cannot read): the task did its work and
	// completed, where another Failure archives it.
	Refused bool            `json:"refused,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Deflated, when set, is the result still deflated as the worker sent
	// it (DecodeOutcome), and Result is empty: Data inflates it, and the api
	// can hand it to a client that takes gzip as it is.
	Deflated *gzjoin.Deflated `json:"-"`
}

// Data returns the result, inflated when it is still deflated.
func (o Outcome) Data() (json.RawMessage, error) {
	if o.Deflated == nil {
		return o.Result, nil
	}
	b, err := o.Deflated.Inflate(maxOutcome)
	if err != nil {
		return nil, fmt.Errorf("inflate outcome: %w", err)
	}
	return b, nil
}

// resultPrefix starts an encoded outcome that holds a result alone.
const resultPrefix = `{"result":`

// compressAbove is the size past which an encoded outcome is compressed: a
// 24hr replay that trades often answers megabytes of JSON, which Redis
// would otherwise store (retained for reuse) and carry (announced) whole,
// at a few hundred MB/s. DEFLATE at its fastest level shrinks it tenfold in
// less time than Redis takes to move it, and the api passes the deflated
// bytes on to a client that takes gzip without inflating them.
const compressAbove = 64 << 10

// maxOutcome bounds the size a compressed outcome may announce, so that a
// corrupt one cannot ask for an absurd allocation.
const maxOutcome = 1 << 30

// deflatedMagic starts an outcome that is a result alone, deflated: the
// magic, the result's CRC-32 and length (uint32, little-endian), then its
// DEFLATE blocks (gzjoin.Deflated). No JSON text, and no gzip stream,
// starts with a zero byte.
var deflatedMagic = []byte{0, 'u', 'd', 1}

const deflatedHeader = 12 // magic, CRC-32, length

// Encode writes o as JSON; past compressAbove, a result alone is written
// deflated and anything else gzipped. An outcome with a result alone,
// which a worker encoded with encoding/json or a writer pinned to it
// (compact, valid), is framed as it is rather than scanned again:
// encoding/json would check and copy every byte of it.
func (o Outcome) Encode() ([]byte, error) {
	switch {
	case len(o.Result) > maxOutcome:
		return nil, fmt.Errorf("encode outcome: a result of %d bytes is over the bound of %d", len(o.Result), maxOutcome)
	case o.Failure == nil && len(o.Result) == 0 && o.Deflated != nil:
		return appendDeflated(nil, *o.Deflated), nil
	case o.Failure == nil && len(o.Result) > compressAbove:
		d, err := gzjoin.Deflate(o.Result)
		if err != nil {
			return nil, fmt.Errorf("compress outcome: %w", err)
		}
		return appendDeflated(nil, d), nil
	}
	var b []byte
	if o.Failure != nil || len(o.Result) == 0 {
		var err error
		if b, err = json.Marshal(o); err != nil {
			return nil, err
		}
	} else {
		b = make([]byte, 0, len(resultPrefix)+len(o.Result)+1)
		b = append(b, resultPrefix...)
		b = append(b, o.Result...)
		b = append(b, '}')
	}
	if len(b) <= compressAbove {
		return b, nil
	}
	return compress(b)
}

func appendDeflated(b []byte, d gzjoin.Deflated) []byte {
	b = slices.Grow(b, deflatedHeader+len(d.Blocks))
	b = append(b, deflatedMagic...)
	b = binary.LittleEndian.AppendUint32(b, d.CRC)
	b = binary.LittleEndian.AppendUint32(b, uint32(d.Len))
	return append(b, d.Blocks...)
}

func compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(b)/8 + 1024)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer func() {
		zw.Reset(io.Discard) // let go of buf: the pool keeps the writer, not the outcome
		gzipWriters.Put(zw)
	}()
	zw.Reset(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("compress outcome: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress outcome: %w", err)
	}
	return buf.Bytes(), nil
}

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// DecodeOutcome reads an outcome Encode wrote, compressed or not. A
// deflated result stays so, in Deflated, until Data is called: the api
// hands it on to a client that takes gzip as it is, and inflates it for
// one that does not. A result alone is taken as it is, without a scan of
// its bytes (see Encode); anything else is decoded by encoding/json.
// Result and Deflated may share b's memory; read the result with Data.
func DecodeOutcome(b []byte) (Outcome, error) {
	if bytes.HasPrefix(b, deflatedMagic) {
		if len(b) < deflatedHeader {
			return Outcome{}, errors.New("decode outcome: deflated outcome truncated")
		}
		return Outcome{Deflated: &gzjoin.Deflated{
			CRC:    binary.LittleEndian.Uint32(b[4:]),
			Len:    int(binary.LittleEndian.Uint32(b[8:])),
			Blocks: b[deflatedHeader:],
		}}, nil
	}
	if len(b) > 18 && b[0] == 0x1f && b[1] == 0x8b { // gzip's magic: no JSON starts so
		var err error
		if b, err = decompress(b); err != nil {
			return Outcome{}, err
		}
	}
	if bytes.HasPrefix(b, []byte(resultPrefix)) && len(b) > len(resultPrefix)+1 && b[len(b)-1] == '}' {
		return Outcome{Result: b[len(resultPrefix) : len(b)-1]}, nil
	}
	var o Outcome
	err := json.Unmarshal(b, &o)
	return o, err
}

func decompress(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decompress outcome: %w", err)
	}
	// The trailer holds the size: the buffer is made once, not regrown,
	// unless the size claims more than JSON ever shrinks by.
	size := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	var out bytes.Buffer
	out.Grow(min(size, 128*len(b)) + bytes.MinRead)
	if _, err := out.ReadFrom(io.LimitReader(zr, maxOutcome+1)); err != nil {
		return nil, fmt.Errorf("decompress outcome: %w", err)
	}
	if out.Len() > maxOutcome {
		return nil, fmt.Errorf("decompress outcome: over %d bytes", maxOutcome)
	}
	return out.Bytes(), nil
}
