package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs/replay"
)

// Error codes of SPEC 7 and DESIGN 5/7.
const (
	CodeValidation         = "VALIDATION_ERROR"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodeTierAccessDenied   = "TIER_ACCESS_DENIED"
	CodeNotFound           = "RESOURCE_NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	CodeBodyTooLarge       = "PAYLOAD_TOO_LARGE"
	CodeRateLimited        = "RATE_LIMIT_EXCEEDED"
	CodeInternal           = "INTERNAL_ERROR"
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
)

// Error is every error the API answers, written as SPEC 7's envelope. It
// implements huma.StatusError so handlers can return it directly, and
// huma.HeadersError so it can carry headers such as Retry-After.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	Headers http.Header
	// Cause is logged, never sent.
	Cause error
}

// maxMessage bounds a whole message, whatever it is made of: a last guard
// for an echo of client input not cut where it was written. It is well
// above the longest message written whole (a strategy_code word of the
// 4 KB code quoted twice, then the list of the fields allowed), so that it
// never cuts off what a message says after an echo.
const maxMessage = 16 << 10

// clip cuts a client's identifier or value as an error echoes it (a slug,
// market id, sweep or job id, a parameter's value): replay.ClipEcho, so
// that a 300 KB path does not come back as a 300 KB message.
func clip(s string) string { return replay.ClipEcho(s) }

// quoteID is strconv.Quote of a client's identifier, cut (clip).
func quoteID(s string) string { return strconv.Quote(clip(s)) }

// clipValue is a parameter's value as an error's details echo it: strings
// cut (clip), and no more than maxEchoValues of a list.
func clipValue(v any) any {
	switch v := v.(type) {
	case string:
		return clip(v)
	case []string:
		out := make([]string, 0, min(len(v), maxEchoValues))
		for _, s := range v[:min(len(v), maxEchoValues)] {
			out = append(out, clip(s))
		}
		return out
	}
	return v
}

// maxEchoValues is the most values of a repeated parameter an error echoes.
const maxEchoValues = 10

// Errorf builds an Error with a formatted message.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// GetStatus implements huma.StatusError.
func (e *Error) GetStatus() int { return e.Status }

// GetHeaders implements huma.HeadersError.
func (e *Error) GetHeaders() http.Header {
	if e.Headers == nil {
		e.Headers = http.Header{}
	}
	return e.Headers
}

// Unwrap exposes the cause to errors.Is/As.
func (e *Error) Unwrap() error { return e.Cause }

// With returns a copy of e with a detail added.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// MarshalJSON writes the SPEC 7 envelope.
func (e *Error) MarshalJSON() ([]byte, error) {
	return marshalJSON(envelope{
		Success:   false,
		Error:     errorBody{Code: e.Code, Message: replay.Clip(e.Message, maxMessage), Details: e.Details},
		Timestamp: formatTime(time.Now()),
	})
}

type envelope struct {
	Success   bool      `json:"success"`
	Error     errorBody `json:"error"`
	Timestamp string    `json:"timestamp"`
}

type errorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// ErrorEnvelope documents the error body in the OpenAPI document.
type ErrorEnvelope struct {
	Success bool `json:"success" doc:"Always false on errors."`
	Error   struct {
		Code    string         `json:"code" doc:"Machine-readable error code, e.g. VALIDATION_ERROR, UNAUTHORIZED, TIER_ACCESS_DENIED."`
		Message string         `json:"message" doc:"What went wrong, for a person."`
		Details map[string]any `json:"details,omitempty" doc:"Extra facts: offending fields on validation errors; required_tier, current_tier, upgrade_url on tier errors."`
	} `json:"error"`
	Timestamp string `json:"timestamp" format:"date-time"`
}

// fromHuma turns Huma's own errors (parameter and body validation, body
// too large, unsupported content type) into the envelope. Huma reports
// validation problems as 422; DESIGN 5 makes them 400 VALIDATION_ERROR.
func fromHuma(status int, msg string, errs ...error) *Error {
	var fields []map[string]any
	var parts []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		var d huma.ErrorDetailer
		if errors.As(err, &d) {
			detail := d.ErrorDetail()
			if detail.Message == "invalid boolean" {
				// Huma's word for what strconv.ParseBool refused: say
				// what it takes.
				c := *detail
				c.Message = booleanMessage
				detail = &c
			} else if hint := signReadAsSpace(detail); hint != "" {
				c := *detail
				c.Message += ": " + hint
				detail = &c
			}
			f := map[string]any{"message": detail.Message}
			if detail.Location != "" {
				f["location"] = clip(detail.Location)
			}
			if detail.Value != nil {
				f["value"] = clipValue(detail.Value)
			}
			fields = append(fields, f)
			parts = append(parts, describeDetail(detail))
			continue
		}
		fields = append(fields, map[string]any{"message": err.Error()})
		parts = append(parts, err.Error())
	}
	e := &Error{Status: status, Message: msg}
	switch status {
	case http.StatusUnprocessableEntity, http.StatusBadRequest:
		e.Status, e.Code = http.StatusBadRequest, CodeValidation
		if len(parts) > 0 {
			e.Message = "invalid request: " + strings.Join(parts, "; ")
		}
	case http.StatusUnauthorized:
		e.Code = CodeUnauthorized
	case http.StatusNotFound:
		e.Code = CodeNotFound
	case http.StatusMethodNotAllowed:
		e.Code = CodeMethodNotAllowed
	case http.StatusUnsupportedMediaType:
		e.Code = CodeUnsupportedMedia
		e.Message = "Content-Type must be application/json"
	case http.StatusRequestEntityTooLarge:
		e.Code = CodeBodyTooLarge
		e.Message = "request body is larger than 1 MiB"
	case http.StatusTooManyRequests:
		e.Code = CodeRateLimited
	case http.StatusServiceUnavailable:
		e.Code = CodeServiceUnavailable
	default:
		if status >= 500 {
			e.Code, e.Message = CodeInternal, "internal server error"
		} else {
			e.Code = CodeValidation
			e.Status = http.StatusBadRequest
		}
	}
	if e.Message == "" {
		e.Message = strings.ToLower(http.StatusText(e.Status))
	}
	if len(fields) > 0 && e.Code == CodeValidation {
		e.Details = map[string]any{"errors": fields}
	}
	return e
}

// booleanMessage says which values a boolean query parameter takes
// (include_orderbook, resolved): those of strconv.ParseBool, by which Huma
// reads them.
const booleanMessage = "must be true or false (also taken: 1 or 0, t or f, T or F, True or False, TRUE or FALSE)"

// plusReadAsSpace says why a value sent with an unescaped + arrived with
// a space: URL decoding reads a query string's + as one.
const plusReadAsSpace = "a + in a query string is read as a space"

// signReadAsSpace is the hint for a number query parameter Huma could not
// read (limit=+5 arrives as " 5") that reads with its space as a +: say
// why, and what to send. "" for any other problem.
func signReadAsSpace(d *huma.ErrorDetail) string {
	v, ok := d.Value.(string)
	i := strings.IndexByte(v, ' ')
	if !ok || i < 0 {
		return ""
	}
	signed := v[:i] + "+" + v[i+1:]
	var err error
	switch d.Message {
	case "invalid integer":
		_, err = strconv.ParseInt(signed, 10, 64)
	case "invalid float":
		_, err = strconv.ParseFloat(signed, 64)
	default:
		return ""
	}
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s: send %s, without the + (or the + as %%2B)", plusReadAsSpace, v[:i]+v[i+1:])
}

// describeDetail renders "query.limit: expected number <= 100 (got 101)" from
// Huma's "query.limit" locations.
func describeDetail(d *huma.ErrorDetail) string {
	loc := clip(d.Location)
	for _, p := range []string{"query.", "path.", "header.", "body."} {
		loc = strings.TrimPrefix(loc, p)
	}
	s := d.Message
	if loc != "" && loc != "body" {
		s = loc + ": " + s
	}
	if d.Value != nil {
		if b, err := marshalJSON(d.Value); err == nil && len(b) <= 64 {
			s += " (got " + string(b) + ")"
		}
	}
	return s
}

// writeError writes err as the envelope. Anything that is not an *Error is
// logged and answered as 500 INTERNAL_ERROR without internals.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal server error", Cause: err}
	}
	if e.Status >= 500 && log != nil {
		log.ErrorContext(r.Context(), "request failed", "request_id", RequestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "err", errOrSelf(e))
	}
	for k, vs := range e.Headers {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	// Not json.Marshal(e): it would escape the < and > that
	// MarshalJSON left as they are.
	body, mErr := e.MarshalJSON()
	if mErr != nil {
		body = []byte(`{"success":false,"error":{"code":"INTERNAL_ERROR","message":"internal server error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

func errOrSelf(e *Error) error {
	if e.Cause != nil {
		return e.Cause
	}
	return e
}

// timeLayout is ISO 8601 in UTC with millisecond precision, as JavaScript's
// toISOString writes it (the reference service's format): the answers' own
// times (the envelope's timestamp, quota resets). Stored records' times
// have microseconds (formatRecordTime).
const timeLayout = "2006-01-02T15:04:05.000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }
