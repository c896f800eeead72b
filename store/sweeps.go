package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// SweepStore keeps parameter sweeps (DESIGN 14) and the results of their
// shards, so that a sweep survives restarts of every process.
//
// A sweep is created QUEUED and ends DONE (FinishSweep), FAILED or
// CANCELLED (SetSweepStatus); those three are final: no transition leaves
// them. Every change is conditional on the status the caller expects, so
// that of two processes racing (a worker finishing, a customer cancelling)
// exactly one wins and the other gets ErrConflict.
//
// A shard is one market × every trial. Its results are stored once: a
// shard that runs twice (a redelivered task, a worker that died after
// writing) changes nothing the second time, so ReplaysDone counts each
// replay once.
type SweepStore interface {
	// CreateSweep stores a new QUEUED sweep and returns it. The store
	// assigns ID (NewSweepID), Status, ReplaysTotal (TrialCount ×
	// len(Markets)), ReplaysDone (0) and the timestamps; what sw holds in
	// those fields and in Result, Error and FinishedAt is ignored. A sweep
	// failing Sweep.Check is ErrInvalid; an unknown customer is
	// ErrNotFound.
	//
	// maxActive > 0 caps the customer's sweeps in flight (QUEUED or
	// RUNNING): a customer who has maxActive already gets
	// ErrSweepsInFlight and nothing is stored. The count and the insert
	// are one step against every other CreateSweep of the customer, in
	// every process: of concurrent creates, no more succeed than the cap
	// leaves room for. maxActive 0 is no cap; a negative one is
	// ErrInvalid.
	CreateSweep(ctx context.Context, sw Sweep, maxActive int) (Sweep, error)
	// GetSweep returns the sweep with the id, or ErrNotFound.
	GetSweep(ctx context.Context, id string) (Sweep, error)
	// ListSweeps returns one page of the customer's sweeps, newest first
	// (CreatedAt descending, ID descending on ties), and how many sweeps
	// the customer has in all. Listed sweeps leave Result nil (it may be
	// megabytes; GetSweep has it). limit 0 means no limit; a negative
	// limit or offset is ErrInvalid. A customer without sweeps, known or
	// not, has none: an empty slice and 0.
	ListSweeps(ctx context.Context, customerID string, limit, offset int) ([]Sweep, int, error)
	// CountActiveSweeps returns how many of the customer's sweeps are
	// QUEUED or RUNNING.
	CountActiveSweeps(ctx context.Context, customerID string) (int, error)
	// SetSweepStatus moves the sweep to status to if it is in one of from,
	// and returns it; otherwise it is ErrConflict and nothing changes.
	// errText is the sweep's Error and is required when to is FAILED and
	// refused otherwise. Moving to a final status sets FinishedAt; moving
	// to the status the sweep is in changes nothing. A bad transition
	// (CheckSweepTransition) is ErrInvalid, an unknown sweep ErrNotFound.
	SetSweepStatus(ctx context.Context, id string, from []SweepStatus, to SweepStatus, errText string) (Sweep, error)
	// PutSweepShard stores the results of the sweep's shard on market
	// (every trial's, in the sweep package's encoding) and advances ReplaysDone
	// by trials, atomically, and returns the sweep. A shard already stored
	// is left as it is, whatever results holds, and counts nothing again.
	// An unknown sweep is ErrNotFound; a market not among the sweep's
	// Markets, trials other than its TrialCount or empty results are
	// ErrInvalid; a sweep that is no longer QUEUED or RUNNING
	// takes no shard, not even a repeated one: ErrConflict.
	PutSweepShard(ctx context.Context, sweepID, market string, trials int, results []byte) (Sweep, error)
	// ListSweepShards returns the sweep's stored shards in the order of
	// its Markets; an unknown sweep is ErrNotFound.
	ListSweepShards(ctx context.Context, sweepID string) ([]SweepShard, error)
	// EachSweepShard is ListSweepShards a few shards at a time: it calls
	// f with each of the sweep's stored shards in the order of its
	// Markets, and holds no more than a few of them at once, so that a
	// sweep of thousands of markets (a gigabyte of results) is read
	// through without all of it in memory at once. f runs with no
	// connection or lock of the store held, and may use the store. f's
	// error stops it and is returned; an unknown sweep is ErrNotFound.
	EachSweepShard(ctx context.Context, sweepID string, f func(SweepShard) error) error
	// GetSweepInfo is GetSweep without the result (Result nil), as
	// ListSweeps lists a sweep: a DONE sweep's result may be a hundred
	// megabytes, and its state does not need it (SweepTrials and
	// WriteSweepResult read it a part at a time).
	GetSweepInfo(ctx context.Context, id string) (Sweep, error)
	// SweepTrials returns trials offset to offset+limit (fewer at the
	// end) of a DONE sweep's result, the elements of the "trials" array of
	// its top-level object (the first such key), each its JSON as
	// FinishSweep was given it without the white space around it, and how
	// many the array holds. The store reads those trials, not the whole
	// result: a page of a sweep of ten thousand trials costs what a page
	// of a small one does. A result that is not an object, or whose
	// trials are missing, null, empty or not an array, has none (0).
	// limit 0 means no limit; a negative limit or offset is ErrInvalid.
	// A sweep that is not DONE is ErrConflict, an unknown one
	// ErrNotFound.
	SweepTrials(ctx context.Context, id string, offset, limit int) ([][]byte, int, error)
	// WriteSweepResult writes a DONE sweep's result to w, byte for byte
	// as FinishSweep was given it, a part at a time: the store holds a
	// few of its trials at once, not the whole result, and w is called
	// with no connection or lock of the store held. w's error stops it
	// and is returned. A sweep that is not DONE is ErrConflict, an
	// unknown one ErrNotFound, and nothing is written then. A sweep whose
	// result is being written is spared by DeleteSweepsFinishedBefore
	// meanwhile (the answer's start is sent: a cut answer cannot be
	// mended), and deleted by a later call once the writing has ended.
	WriteSweepResult(ctx context.Context, id string, w io.Writer) error
	// FinishSweep moves a RUNNING sweep to DONE with its result (JSON);
	// a sweep in any other status is ErrConflict and nothing changes. It
	// answers no copy of the sweep: its caller has the result, which may
	// be a hundred megabytes, and nothing else changed but the status and
	// the times (GetSweepInfo reads them). It does not look at the shards: the caller gathers
	// them and decides that the sweep is done. Results that are not JSON
	// are ErrInvalid, an unknown sweep ErrNotFound.
	FinishSweep(ctx context.Context, id string, result []byte) error
	// DeleteSweepsFinishedBefore deletes every sweep whose FinishedAt is
	// before t, with its shards, and returns how many sweeps it deleted.
	// Sweeps still QUEUED or RUNNING are never deleted, nor one whose
	// result WriteSweepResult is writing (a later call deletes it).
	DeleteSweepsFinishedBefore(ctx context.Context, t time.Time) (int, error)
	// ListStalledSweeps returns the QUEUED and RUNNING sweeps of every
	// customer last updated before t, oldest first, without results: the
	// sweeps whose shards may have been lost with Redis.
	ListStalledSweeps(ctx context.Context, t time.Time) ([]Sweep, error)
	// StoredShardMarkets returns the markets of the sweep's stored shards,
	// in no order, without their results (a sweep of thousands of markets
	// holds megabytes of them); none for an unknown sweep.
	StoredShardMarkets(ctx context.Context, sweepID string) ([]string, error)
}

// ErrSweepsInFlight is a CreateSweep refused because the customer already
// has as many sweeps in flight as its cap allows.
var ErrSweepsInFlight = errors.New("sweeps in flight at the customer's cap")

// CheckSweepCap reports why maxActive is not a CreateSweep cap (an error
// matching ErrInvalid), or nil.
func CheckSweepCap(maxActive int) error {
	if maxActive < 0 {
		return fmt.Errorf("sweep: a cap of %d sweeps in flight: want 0 (none) or more: %w", maxActive, ErrInvalid)
	}
	return nil
}

// SweepStatus is where a sweep is in its life, by its wire name.
type SweepStatus string

// Sweep statuses (DESIGN 14).
const (
	SweepQueued    SweepStatus = "QUEUED"
	SweepRunning   SweepStatus = "RUNNING"
	SweepDone      SweepStatus = "DONE"
	SweepFailed    SweepStatus = "FAILED"
	SweepCancelled SweepStatus = "CANCELLED"
)

// SweepStatuses lists every status in the order of a sweep's life.
var SweepStatuses = []SweepStatus{SweepQueued, SweepRunning, SweepDone, SweepFailed, SweepCancelled}

// Valid reports whether s is a known status.
func (s SweepStatus) Valid() bool { return slices.Contains(SweepStatuses, s) }

// Final reports whether s is DONE, FAILED or CANCELLED: no transition
// leaves it.
func (s SweepStatus) Final() bool { return s == SweepDone || s == SweepFailed || s == SweepCancelled }

// Active reports whether s is QUEUED or RUNNING: the sweep counts towards
// the customer's sweeps in flight and takes shards.
func (s SweepStatus) Active() bool { return s == SweepQueued || s == SweepRunning }

// Sweep is one parameter sweep and its progress.
type Sweep struct {
	// ID is assigned by the store: "sw_" and 16 random characters.
	ID         string
	CustomerID string
	Status     SweepStatus
	// Request is the normalized body of POST /v1/sweeps, as JSON.
	Request []byte
	// TrialCount is how many trials the sweep runs on every market.
	TrialCount int
	// Markets are the slugs of the sweep's markets, in start_time order;
	// each is one shard.
	Markets []string
	// ReplaysTotal is TrialCount × len(Markets); ReplaysDone counts the
	// replays of the shards stored so far.
	ReplaysTotal int
	ReplaysDone  int
	// Result is the sweep's results as JSON, set when it is DONE (nil
	// before, and in listings).
	Result []byte
	// Error says why the sweep FAILED ("" otherwise).
	Error      string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt *time.Time // when it reached a final status; nil before
}

// SweepShard is the stored results of one market of a sweep.
type SweepShard struct {
	SweepID string
	Market  string
	Trials  int
	// Results is the shard's results as PutSweepShard was given them,
	// in the sweep package's encoding (opaque to the store).
	Results   []byte
	CreatedAt time.Time
}

// sweepIDEncoding spells sweep ids: lower-case base32, no padding.
var sweepIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// SweepIDPrefix starts every sweep id.
const SweepIDPrefix = "sw_"

// NewSweepID returns a random sweep id: SweepIDPrefix and 16 characters
// holding 80 random bits.
func NewSweepID() string {
	var b [10]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return SweepIDPrefix + sweepIDEncoding.EncodeToString(b[:])
}

// Check reports why sw cannot be created (an error matching ErrInvalid), or
// nil: it needs a customer, a JSON request, at least one trial (and at
// most math.MaxInt32) and at least one market, its markets distinct,
// non-empty, valid UTF-8 without NUL.
func (sw Sweep) Check() error {
	why := ""
	switch {
	case sw.CustomerID == "":
		why = "no customer"
	case !isJSON(sw.Request):
		why = "the request is not JSON"
	case sw.TrialCount < 1 || sw.TrialCount > math.MaxInt32:
		why = fmt.Sprintf("%d trials: want 1 to %d", sw.TrialCount, math.MaxInt32)
	case len(sw.Markets) == 0:
		why = "no markets"
	default:
		seen := make(map[string]bool, len(sw.Markets))
		for _, m := range sw.Markets {
			switch {
			case m == "" || !utf8.ValidString(m) || strings.ContainsRune(m, 0):
				why = fmt.Sprintf("market %q is not a slug", m)
			case seen[m]:
				why = fmt.Sprintf("market %q is listed twice", m)
			}
			if why != "" {
				break
			}
			seen[m] = true
		}
		if why == "" {
			return nil
		}
	}
	return fmt.Errorf("sweep: %s: %w", why, ErrInvalid)
}

// CheckSweepTransition reports why a status change from one of from to to
// is not one SetSweepStatus makes (an error matching ErrInvalid), or nil.
// from must name at least one status and no final one; to must be a known
// status other than DONE (which only FinishSweep sets, with the result);
// errText must be given with FAILED and only with it.
func CheckSweepTransition(from []SweepStatus, to SweepStatus, errText string) error {
	why := ""
	switch {
	case len(from) == 0:
		why = "no status to move from"
	case !to.Valid():
		why = fmt.Sprintf("unknown status %q", to)
	case to == SweepDone:
		why = "a sweep becomes DONE only with its result (FinishSweep)"
	case to == SweepFailed && errText == "":
		why = "a FAILED sweep needs its error"
	case to != SweepFailed && errText != "":
		why = fmt.Sprintf("an error given for status %s", to)
	default:
		for _, f := range from {
			switch {
			case !f.Valid():
				why = fmt.Sprintf("unknown status %q", f)
			case f.Final():
				why = fmt.Sprintf("%s is final: no status follows it", f)
			}
			if why != "" {
				break
			}
		}
		if why == "" {
			return nil
		}
	}
	return fmt.Errorf("sweep status %v → %s: %s: %w", from, to, why, ErrInvalid)
}

// CheckSweepJSON reports why b cannot be stored as a sweep's result (an
// error matching ErrInvalid), or nil: it must be valid JSON in UTF-8.
func CheckSweepJSON(what string, b []byte) error {
	if !isJSON(b) {
		return fmt.Errorf("sweep %s: not JSON: %w", what, ErrInvalid)
	}
	return nil
}

// CheckSweepShard reports why b cannot be stored as a shard's results (an
// error matching ErrInvalid), or nil. The results are the sweep package's
// own encoding, opaque to the store: they must only be there.
func CheckSweepShard(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("sweep shard results: empty: %w", ErrInvalid)
	}
	return nil
}

// isJSON reports whether b is one JSON value, in valid UTF-8 (which
// json.Valid does not require but Postgres does).
func isJSON(b []byte) bool { return utf8.Valid(b) && json.Valid(b) }
