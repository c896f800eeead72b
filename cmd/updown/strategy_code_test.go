package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/updown/updown/jobs/replay"
	"github.com/updown/updown/jobs/strategy"
)

// The dashboard's strategy_code parser and formatter (web/src/strategy.ts)
// against the server's (jobs/strategy/code.go), on the same codes: valid
// ones Go's FormatCode wrote, the same ones spelled loosely, and broken
// ones. Both must accept the same codes, read them to the same rules,
// write them back byte for byte alike, and refuse the rest with the same
// code and message. The TypeScript runs in node, compiled by the
// lockfile's typescript (web/node_modules, from `make ui`).

// tsStrategyRunner compiles strategy.ts and runs parse/format on each input line.
const tsStrategyRunner = `
const fs = require('fs');
const ts = require(process.argv[1]);
const src = fs.readFileSync(process.argv[2], 'utf8');
const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
const mod = { exports: {} };
new Function('module', 'exports', js)(mod, mod.exports);
const { parseCode, formatCode } = mod.exports;
const codes = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = codes.map((c) => {
  try {
    const r = parseCode(c);
    return { ok: true, code: formatCode(r), rules: r };
  } catch (e) {
    return { ok: false, errCode: e.code, message: e.message };
  }
});
process.stdout.write(JSON.stringify(out));
`

type tsCodeAnswer struct {
	OK      bool           `json:"ok"`
	Code    string         `json:"code"`
	Rules   map[string]any `json:"rules"`
	ErrCode string         `json:"errCode"`
	Message string         `json:"message"`
}

// nodeTypeScript finds node and the dashboard's TypeScript compiler (make
// ui installs it), which the tests of the dashboard's code in node need:
// missing, the test fails under CI and is skipped elsewhere.
func nodeTypeScript(t *testing.T) (node, tsPath string) {
	t.Helper()
	node, err := exec.LookPath("node")
	tsPath, _ = filepath.Abs("../../web/node_modules/typescript")
	if _, serr := os.Stat(tsPath); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no node or web/node_modules/typescript: run make ui")
		}
		t.Skip("no node or web/node_modules/typescript (make ui installs it)")
	}
	return node, tsPath
}

func TestStrategyCodeAgreesWithDashboard(t *testing.T) {
	t.Parallel()
	node, tsPath := nodeTypeScript(t)
	src, _ := filepath.Abs("../../web/src/strategy.ts")

	r := rand.New(rand.NewPCG(23, 23))
	var codes []string
	// A thousand codes Go reads (each also as Go writes it back) and a
	// thousand it refuses.
	for valid, refused := 0, 0; valid < 1000 || refused < 1000; {
		c := randomCode(r)
		rules, err := strategy.ParseCode(c)
		switch {
		case err == nil && valid < 1000:
			valid++
			codes = append(codes, c, strategy.FormatCode(rules))
		case err != nil && refused < 1000:
			refused++
			codes = append(codes, c)
		}
	}
	codes = append(codes, "", "   ", strings.Repeat("x", strategy.MaxCodeLength+1),
		"side=UP entry: price_up < 0.35 and time_remaining_pct > 20 exit: price_up >= 0.6 size=100 maxloss=25 order=MARKET",
		"side=UP entry: coin_move_pct >= 0.1 exit: bid_up >= 0.6 size=100 maxloss=50 order=GTC postonly=true offset=1 cancel=60000 queue=front rebates=true cooldown=30000 maxentries=3",
		"side=UP entry: price_up == -0 and price_up > .5 exit: price_up < 1e-7 size=10000",
		"side=UP entry: price_up < 5e-324 exit: price_up > 1e300 or price_up > 1.5e21 or price_up < -123456.789 size=1",
		"side=UP entry: price_up < 0.3 exit: price_up > 0.6 size=10 fees=custom feeexp=-0",
		"side=UP entry: price_up < 0.3 exit: price_up > 0.6 size=10 maxentries=-0")
	in, _ := json.Marshal(codes)
	cmd := exec.Command(node, "-e", tsStrategyRunner, tsPath, src)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var answers []tsCodeAnswer
	if err := json.Unmarshal(out, &answers); err != nil || len(answers) != len(codes) {
		t.Fatalf("node answered %d of %d (%v)", len(answers), len(codes), err)
	}
	valid, bad := 0, 0
	for i, code := range codes {
		ts := answers[i]
		rules, err := strategy.ParseCode(code)
		if err != nil {
			bad++
			e := err.(*strategy.Error)
			if ts.OK || ts.ErrCode != e.Code || ts.Message != e.Message {
				t.Errorf("%.200q\n Go refuses: %s %s\n TS: ok=%v %s %s", code, e.Code, e.Message, ts.OK, ts.ErrCode, ts.Message)
			}
			continue
		}
		valid++
		if !ts.OK {
			t.Errorf("%.200q\n Go reads it, TS refuses: %s %s", code, ts.ErrCode, ts.Message)
			continue
		}
		if want := strategy.FormatCode(rules); ts.Code != want {
			t.Errorf("%.200q\n Go writes %q\n TS writes %q", code, want, ts.Code)
		}
		// The rules as the request body names them.
		b, _ := json.Marshal(rules.Strategy)
		var want map[string]any
		_ = json.Unmarshal(b, &want)
		if rules.Coin != "" {
			want["coin"] = string(rules.Coin)
		}
		if rules.MarketType != "" {
			want["marketType"] = string(rules.MarketType)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(ts.Rules)
		if string(wb) != string(gb) {
			t.Errorf("%.200q\n Go reads %s\n TS reads %s", code, wb, gb)
		}
	}
	if valid < 2000 || bad < 1000 {
		t.Errorf("only %d valid and %d refused codes: the generator needs more of each", valid, bad)
	}
}

// randomCode writes a strategy code word by word, mostly well formed, with
// awkward numbers, loose spellings and, now and then, a wrong word.
func randomCode(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	chance := func(n int) bool { return r.IntN(n) == 0 }
	number := func() string {
		switch r.IntN(8) {
		case 0:
			return pick("0", "-0", "1", "-1", ".5", "0.35", "1e-7", "5e-324", "1e21", "1.5e300", "-123456.789", "0095000.0", "9.50e4", "+10")
		case 1:
			return strconv.FormatFloat(math.Float64frombits(r.Uint64()&^(0x7ff<<52)|uint64(r.IntN(0x7fe))<<52), 'g', -1, 64)
		case 2:
			if chance(12) {
				return pick("abc", "NaN", "Inf", "0x1p-2", "1e999", "1_000", "")
			}
		}
		return strconv.FormatFloat(r.Float64()*float64([]int{1, 100, 10000}[r.IntN(3)]), 'f', r.IntN(5), 64)
	}
	whole := func(hi int) string {
		switch r.IntN(30) {
		case 0:
			return pick("0", "-0", "-1", "1.5", "1e3", strconv.Itoa(hi+1), "x")
		case 1:
			return strconv.Itoa(hi)
		}
		return strconv.Itoa(r.IntN(hi + 1))
	}
	var w []string
	add := func(s ...string) { w = append(w, s...) }
	if chance(3) {
		add("coin=" + pick("BTC", "eth", "Sol", "DOGE", ""))
	}
	if chance(3) {
		add("type=" + pick("5m", "15m", "1h", "1HR", "4h", "24hr", "2h", ""))
	}
	if !chance(40) {
		add("side=" + pick("UP", "DOWN", "UP", "DOWN", "up", "SIDEWAYS", ""))
	}
	fields := replay.Fields()
	conds := func(joiner, wrong string) {
		n := 1 + r.IntN(3)
		if chance(30) {
			n = 21
		}
		for i := range n {
			if i > 0 {
				if chance(60) {
					add(wrong)
				} else {
					add(joiner)
				}
			}
			f := fields[r.IntN(len(fields))]
			if chance(60) {
				f = pick("volume", "PRICE_UP", "exit:")
			}
			op := replay.Operators()[r.IntN(7)]
			if chance(60) {
				op = pick("=<", "=", "")
			}
			add(f, op, number())
		}
	}
	add("entry:")
	conds("and", "or")
	if !chance(60) {
		add("exit:")
	}
	conds("or", "and")
	if !chance(60) {
		add("size=" + pick(number(), "100", "10001", "0", "1", "25", "5000", "0.5", "10000"))
	}
	if chance(2) {
		add("maxloss=" + pick(number(), "25", "0", "101", "50"))
	}
	order := ""
	if chance(4) == false {
		order = pick("MARKET", "LIMIT", "GTC", "GTC", "GTC", "gtc", "STOP")
		add("order=" + order)
	}
	gtcWords := order == "GTC" || chance(15)
	if gtcWords && chance(2) {
		add("postonly=" + pick("true", "false", "TRUE", "yes"))
	}
	if gtcWords && chance(2) {
		add("offset=" + whole(50))
	}
	if gtcWords && chance(2) {
		add("cancel=" + whole(86_400_000))
	}
	if gtcWords && chance(2) {
		add("queue=" + pick("front", "risk_averse", "FRONT", "back"))
	}
	if chance(3) {
		add("rebates=" + pick("true", "false", "True", "1"))
	}
	model := ""
	if chance(2) {
		model = pick("none", "market", "custom", "custom", "CUSTOM", "free")
		add("fees=" + model)
	}
	if strings.EqualFold(model, "custom") && !chance(10) || chance(20) {
		add("feerate=" + pick("0", "1", "0.07", "0.25", "-0", number(), "1.5"))
	}
	if strings.EqualFold(model, "custom") && chance(2) || chance(30) {
		add("feeexp=" + whole(4))
	}
	if chance(2) {
		add("latency=" + whole(60_000))
	}
	if chance(2) {
		add("cooldown=" + whole(86_400_000))
	}
	if chance(2) {
		add("maxentries=" + whole(10_000))
	}
	if chance(40) {
		add(pick("extra", "size=1", "latency=5"))
	}
	sep := " "
	if chance(5) {
		sep = pick("  ", "\t", "\n ")
	}
	return strings.Join(w, sep)
}
