package replay

import "errors"

// ErrBadData is the error (wrapped) of a market whose recorded data the
// engine cannot replay: snapshots out of time order, a non-finite price,
// tapes of the two outcomes that do not line up. The same data fails the
// same way every time: a retry cannot mend it.
var ErrBadData = errors.New("the market's recorded data cannot be replayed")

// Error codes a replay can fail with. They are SPEC 7's wire codes, so the
// api maps them to HTTP statuses without translating them.
const (
	CodeValidation        = "VALIDATION_ERROR"
	CodeInvalidSide       = "INVALID_SIDE"
	CodeInvalidField      = "INVALID_FIELD"
	CodeInvalidOperator   = "INVALID_OPERATOR"
	CodeInvalidOrderType  = "INVALID_ORDER_TYPE"
	CodeMarketNotResolved = "MARKET_NOT_RESOLVED"
	CodeNoData            = "NO_DATA"
)

// Error is a problem the caller can mend: a bad strategy, or a market that
// cannot be replayed. Any other error from this package is a fault of the
// data or the code and should be answered as an internal error.
type Error struct {
	// Code is one of the Code constants.
	Code string
	// Field is the JSON path of the offending value, for example
	// "entryConditions[1].operator"; empty when the error is not about one
	// value (an unresolved market).
	Field string
	// Message is written for the person who sent the request: what is
	// wrong and what is allowed.
	Message string
}

func (e *Error) Error() string { return e.Message }

// codeRank orders the validation codes by precedence, highest first. SPEC 7
// lists the replay codes in this order and DESIGN 5 puts INVALID_SIDE before
// VALIDATION_ERROR; the specific codes all go before the generic one so that
// a client fixing one problem at a time is told the most specific thing first.
func codeRank(code string) int {
	switch code {
	case CodeInvalidSide:
		return 0
	case CodeInvalidField:
		return 1
	case CodeInvalidOperator:
		return 2
	case CodeInvalidOrderType:
		return 3
	}
	return 4
}
