package strategy_test

import (
	"testing"

	"github.com/updown/updown/jobs/strategy"
)

// TestErrorIn: an error moved inside a field of the request (Error.In)
// names the field there in details.field and, when its message begins
// with the field's name, in the message too, so that the two agree; a
// message that does not begin with the name, or begins with a longer
// word, is left as it is.
func TestErrorIn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ field, message, wantField, wantMessage string }{
		{"entryConditions[0].field", `entryConditions[0].field "x" is not a field`,
			"generatedStrategy.entryConditions[0].field", `generatedStrategy.entryConditions[0].field "x" is not a field`},
		{"side", "side must be UP or DOWN", "generatedStrategy.side", "generatedStrategy.side must be UP or DOWN"},
		{"side", "sides are UP and DOWN", "generatedStrategy.side", "sides are UP and DOWN"},
		{"positionSize", "give a positionSize", "generatedStrategy.positionSize", "give a positionSize"},
		{"", "the strategy is empty", "generatedStrategy", "the strategy is empty"},
		{"[2]", "[2] is not an object", "generatedStrategy[2]", "generatedStrategy[2] is not an object"},
	} {
		e := (&strategy.Error{Code: strategy.CodeValidation, Field: c.field, Message: c.message}).In("generatedStrategy")
		if e.Field != c.wantField || e.Message != c.wantMessage {
			t.Errorf("%q %q: In gives %q %q, want %q %q", c.field, c.message, e.Field, e.Message, c.wantField, c.wantMessage)
		}
	}
}
