package strategy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/updown/updown/jobs/replay"
)

// Error codes of the agent (SPEC 7). Validation problems of the rules
// themselves keep the replay codes (INVALID_SIDE, INVALID_FIELD, ...), so a
// strategy is judged the same way wherever it comes from.
const (
	CodeValidation       = replay.CodeValidation
	CodeGenerationFailed = "AI_STRATEGY_GENERATION_FAILED"
)

// Error is a problem the caller should see: a bad request or strategy
// (Code is VALIDATION_ERROR or a replay code, Field names the offending
// value) or a generation that failed (CodeGenerationFailed).
type Error struct {
	Code string
	// Field is the JSON path of the offending value ("marketType",
	// "entryConditions[0].field", "strategy_code"); empty when the error is
	// not about one value.
	Field string
	// Message is written for the person who sent the request.
	Message string
	// Cause is what went wrong underneath (a transport error, the model's
	// bad answer): for logs, never for the response.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// In returns a copy of e whose field is inside prefix
// ("generatedStrategy" + "side" is "generatedStrategy.side"); a message
// that begins with the field's name names it so too, as details.field
// does.
func (e *Error) In(prefix string) *Error {
	c := *e
	switch {
	case c.Field == "":
		c.Field = prefix
	case c.Field[0] == '[':
		c.Field = prefix + c.Field
	default:
		c.Field = prefix + "." + c.Field
	}
	if e.Field != "" {
		if rest, ok := strings.CutPrefix(c.Message, e.Field); ok && (rest == "" || !isNameByte(rest[0])) {
			c.Message = c.Field + rest
		}
	}
	return &c
}

// isNameByte reports whether b continues a field's name, so that the
// field "side" is not found at the start of "sides".
func isNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func invalid(field, message string) *Error {
	return &Error{Code: CodeValidation, Field: field, Message: message}
}

// fromReplay turns the replay validator's answer into an *Error, keeping
// its code and field.
func fromReplay(err error) *Error {
	var re *replay.Error
	if errors.As(err, &re) {
		return &Error{Code: re.Code, Field: re.Field, Message: re.Message}
	}
	return &Error{Code: CodeValidation, Message: err.Error()}
}

func generationFailed(cause error, format string, args ...any) *Error {
	return &Error{Code: CodeGenerationFailed, Message: fmt.Sprintf(format, args...), Cause: cause}
}
