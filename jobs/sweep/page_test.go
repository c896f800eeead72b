package sweep

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
)

// TestTrialsPageAsAFullDecode: every page of a sweep's stored results is
// the trials a full decode of them has at that offset, and the total is
// theirs, whatever the results hold around and inside the trials
// (strings with escaped quotes and brackets, nested lists, white space,
// trials not the first key); results that are not the stored form are an
// error.
func TestTrialsPageAsAFullDecode(t *testing.T) {
	t.Parallel()
	res, _ := summarizeHoldout(t, 12, 1, func(m, tr int) TrialMarket {
		if m == 3 {
			return TrialMarket{Error: `NO_DATA "]}{[\`}
		}
		return TrialMarket{Performance: &replay.Performance{TotalPnL: float64(m-tr) / 3, TotalTrades: 1}}
	})
	for i := range res.Trials {
		res.Trials[i].Parameters[0].Value = fmt.Sprintf(`a "quoted" ]}, \ value %d`, i)
	}
	compact, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	indented, _ := json.MarshalIndent(res, " ", "\t")
	var asMap map[string]json.RawMessage
	_ = json.Unmarshal(compact, &asMap)
	trials := asMap["trials"]
	delete(asMap, "trials")
	rest, _ := json.Marshal(asMap)
	trialsLast := []byte(strings.TrimSuffix(string(rest), "}") + `, "trials" :` + string(trials) + "}\n")
	for name, b := range map[string][]byte{"compact": compact, "indented": indented, "trials last": trialsLast} {
		var full Results
		if err := json.Unmarshal(b, &full); err != nil {
			t.Fatal(err)
		}
		for _, pg := range [][2]int{{0, 1}, {0, 100}, {1, 1}, {1, 5}, {2, 0}, {5, 3}} {
			got, total, err := TrialsPage(b, pg[0], pg[1])
			if err != nil {
				t.Fatalf("%s: page %v: %v", name, pg, err)
			}
			lo := min(pg[0], len(full.Trials))
			want := full.Trials[lo:min(lo+pg[1], len(full.Trials))]
			if total != len(full.Trials) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: page %v: %d trials of %d, want %d of %d", name, pg, len(got), total, len(want), len(full.Trials))
			}
		}
	}
	if got, total, err := TrialsPage([]byte(`{"objective":"total_pnl","trials":null,"best":null}`), 0, 10); err != nil || total != 0 || len(got) != 0 {
		t.Errorf("null trials: %v of %d, %v", got, total, err)
	}
	for _, b := range []string{``, `[]`, `{"trials":{}}`, `{"trials":[{"trial":1}`, `{"trials":[{"trial":"x"}]}`, `{"trials":[]}x`} {
		if _, _, err := TrialsPage([]byte(b), 0, 10); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
}
