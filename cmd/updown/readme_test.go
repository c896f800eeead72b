package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadmeExamples runs every ```sh and ```python block of README.md and
// clients/python/README.md, in order, against a fresh `updown dev` (issue
// 25): what a newcomer copies must work. Shell blocks run in bash, one
// after another, as one terminal session: the variables a block sets are
// there in the next. http://localhost:8080, the address of `make run`, is
// replaced by the test's dev.
//
// In a shell block, curl fails on an answer that is not 2xx, and on a list
// answer (one with `total`, or a `data` array) with an empty array: the
// README's examples promise rows. jq fails when it prints nothing, null,
// [] or {}. Markers, full-line comments in a block, change that for the
// commands after them in the block:
//
//	# expect: 403            curl's answers must be 403 (any status, or 2xx)
//	# expect: may be empty   empty lists and null are fine (2xx)
//	# readme-test: skip ...  the block is not run (say why)
//	# "text"                 what the README shows the command before it
//	                         prints: a JSON string, which must be all that
//	                         the last jq before it printed
//	# -> {"key":…,...}       the answer the README shows for the curl
//	                         before it: JSON, … standing for what is left
//	                         out; the answer must have its keys, in its
//	                         order, with values of the same JSON types
//
// A Python block runs alone with Debian's python3 and the client from
// clients/python installed as pip does offline; it fails on an exception,
// or when a list, DataFrame or updown result it leaves in a global
// variable is empty (unless marked `# expect: may be empty`).
//
// It needs bash, curl, jq, openssl, base64, od and GNU date, and for the
// Python blocks python3 with pip and pandas: without them it skips on a
// laptop and fails under CI=true (.ci/run installs curl and jq).
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the README's examples run against a live updown dev: not in -short")
	}
	needTools(t, "bash", "curl", "jq", "openssl", "base64", "od", "date")
	if out, err := exec.Command("date", "-u", "-d", "yesterday", "+%F").CombinedOutput(); err != nil {
		missingTool(t, fmt.Sprintf("GNU date (date -d yesterday: %v %s)", err, out))
	}

	var blocks []readmeBlock
	for _, file := range []string{"README.md", "clients/python/README.md"} {
		bs, err := readmeBlocks(file)
		if err != nil {
			t.Fatal(err)
		}
		runnable := 0
		for _, b := range bs {
			if !b.skip {
				runnable++
			}
		}
		if runnable == 0 {
			t.Fatalf("%s: no sh or python block to run: has the test stopped finding them?", file)
		}
		blocks = append(blocks, bs...)
	}
	py := ""
	for _, b := range blocks {
		if b.lang == "python" && !b.skip {
			py = readmePython(t)
			break
		}
	}

	work := t.TempDir()
	var site string
	if py != "" {
		site = installPythonClient(t, py, work)
	}

	base := startDevProcess(t)

	sh := newReadmeShell(t, work)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	for _, b := range blocks {
		name := fmt.Sprintf("%s:%d", b.file, b.line)
		t.Run(name, func(t *testing.T) {
			if b.skip {
				t.Skipf("%s %s: marked readme-test: skip", name, b.lang)
			}
			code := strings.ReplaceAll(b.code, "http://localhost:8080", base)
			began := time.Now()
			var out []byte
			var err error
			switch b.lang {
			case "sh":
				out, err = sh.run(ctx, b, code)
			case "python":
				if py == "" {
					t.Skipf("%s: no python3 with pip and pandas", name)
				}
				out, err = runPythonBlock(ctx, py, site, sh.dir, b, code)
			}
			if err != nil {
				t.Fatalf("%s:%d: the %s block failed: %v\n%s", b.file, b.line, b.lang, err, lastN(string(out), 6000))
			}
			t.Logf("%s %s ok in %s; its output ends:\n%s", name, b.lang, time.Since(began).Round(time.Millisecond), lastN(string(out), 600))
		})
	}

	// The walk-through's agent examples use the ENTERPRISE key, so PRO's
	// monthly generations are left for the dashboard's agent page.
	status, account := get(t, base+"/v1/account", "ud_dev_pro")
	data, _ := account["data"].(map[string]any)
	quota, _ := data["ai_quota"].(map[string]any)
	if status != http.StatusOK || quota == nil || quota["used"] != 0.0 {
		t.Errorf("PRO's AI quota after the README's examples: %d %v; the agent examples must spend ud_dev_enterprise's generations, not PRO's", status, account)
	}
}

// needTools fails under CI=true, and skips elsewhere, without every tool.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missingTool(t, tool+" (apt-get install curl jq openssl coreutils; .ci/run installs curl and jq)")
		}
	}
}

// missingTool fails the test under CI=true and skips it elsewhere.
func missingTool(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("no %s", what)
	}
	t.Skipf("no %s", what)
}

// readmeBlock is one fenced code block of a README.
type readmeBlock struct {
	file string // relative to the repository's root
	line int    // of the opening fence
	lang string // sh or python
	code string // what is between the fences, markers as written
	skip bool   // marked readme-test: skip
}

var fence = regexp.MustCompile("^\\s*```\\s*([A-Za-z0-9_+-]*)\\s*$")

// readmeBlocks returns the sh and python blocks of file, in order.
func readmeBlocks(file string) ([]readmeBlock, error) {
	f, err := os.Open(filepath.Join("..", "..", file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	var body strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			lang := m[1]
			switch lang {
			case "bash", "shell":
				lang = "sh"
			case "py":
				lang = "python"
			}
			cur = &readmeBlock{file: file, line: n, lang: lang}
			body.Reset()
		case cur != nil && m != nil && m[1] == "":
			if cur.lang == "sh" || cur.lang == "python" {
				cur.code = body.String()
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
			if strings.HasPrefix(strings.TrimSpace(line), "# readme-test: skip") {
				cur.skip = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a code block that never ends", file, cur.line)
	}
	return blocks, nil
}

// marker parses a full-line `# expect: ...` comment: the status curl must
// see (three digits, or 2xx, the default) and whether empty answers fail
// ("may be empty" says they do not). Other words describe.
func marker(line string) (status string, rows, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# expect:")
	if !ok {
		return "", false, false
	}
	status, rows = "2xx", true
	rest = strings.ToLower(rest)
	if strings.Contains(rest, "may be empty") {
		rows = false
	}
	for _, word := range strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == ',' || r == '(' || r == ')' }) {
		if statusWord.MatchString(word) {
			status = word
			break
		}
	}
	return status, rows, true
}

var statusWord = regexp.MustCompile(`^([1-5][0-9][0-9]|2xx)$`)

// shownLine is a full-line comment that is a JSON string and nothing
// else: the output the README shows for the command before it, such as
// the strategy_code a generation answers.
var shownLine = regexp.MustCompile(`^\s*# ("(?:[^"\\]|\\.)*")\s*$`)

// answerLine is a full-line comment `# -> {...}`: the answer the README
// shows for the curl before it, … standing for what it leaves out.
var answerLine = regexp.MustCompile(`^\s*# -> (\{.*\})\s*$`)

// readmeShell runs shell blocks as one session: each block's variables
// are saved in state when it ends and restored before the next. Blocks
// run in dir.
type readmeShell struct {
	dir, prelude, state, tmp string
}

func newReadmeShell(t *testing.T, work string) readmeShell {
	t.Helper()
	sh := readmeShell{dir: filepath.Join(work, "cwd"), prelude: filepath.Join(work, "prelude.sh"),
		state: filepath.Join(work, "state.sh"), tmp: filepath.Join(work, "tmp")}
	for _, dir := range []string{sh.dir, sh.tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(sh.prelude, []byte(readmePrelude), 0o644); err != nil {
		t.Fatal(err)
	}
	return sh
}

func (s readmeShell) run(ctx context.Context, b readmeBlock, code string) ([]byte, error) {
	// The script's lines are the README's: line 1 sets up, the fence's
	// line and those before it are blank, so bash's LINENO names the line
	// in the README.
	var script strings.Builder
	fmt.Fprintf(&script, "__file=%q __tmp=%q __state=%q; source %q\n", b.file, s.tmp, s.state, s.prelude)
	script.WriteString(strings.Repeat("\n", b.line-1))
	for _, line := range strings.SplitAfter(code, "\n") {
		if status, rows, ok := marker(line); ok {
			fmt.Fprintf(&script, "__expect %s %t\n", status, rows)
		} else if m := shownLine.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(&script, "__shown '%s' \"$LINENO\"\n", strings.ReplaceAll(m[1], "'", `'\''`))
		} else if m := answerLine.FindStringSubmatch(line); m != nil {
			shown := strings.ReplaceAll(m[1], "…", "")
			if !json.Valid([]byte(shown)) {
				return nil, fmt.Errorf("%s: %q shows an answer that is not JSON once its … are left out", b.file, strings.TrimSpace(line))
			}
			fmt.Fprintf(&script, "__answer '%s' \"$LINENO\"\n", strings.ReplaceAll(shown, "'", `'\''`))
		} else {
			script.WriteString(line)
		}
	}
	path := filepath.Join(s.tmp, "block.sh")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		return nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, "bash", path)
	cmd.Dir = s.dir
	cmd.Env = readmeEnv()
	return cmd.CombinedOutput()
}

// readmeEnv is the environment of the examples: this process's PATH, HOME
// and TMPDIR and nothing else, so that no variable of the machine's (a
// proxy, a KEY or SLUG of its own) changes what they do.
func readmeEnv(extra ...string) []string {
	env := []string{"LC_ALL=C"}
	for _, name := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env, extra...)
}

// readmePrelude is sourced by every shell block: the session's state, and
// curl and jq as functions that check what they see.
const readmePrelude = `set -eo pipefail
shopt -s inherit_errexit
__base_vars=" $(compgen -v | tr '\n' ' ') "
__status=2xx __rows=true
__expect() { __status=$1 __rows=$2; }
rm -f "$__tmp/jq.out" "$__tmp/curl.out"
# __shown checks a "# \"text\"" line: what the last jq printed, all of it.
__shown() {
  local want=$1 line=$2 got
  if [ ! -f "$__tmp/jq.out" ]; then
    echo "readme-test: $__file:$line shows $want, where no jq printed anything before it" >&2; return 6
  fi
  got=$(cat "$__tmp/jq.out"); rm -f "$__tmp/jq.out"
  if [ "$got" != "$want" ]; then echo "readme-test: $__file:$line shows $want, where jq printed $got" >&2; return 6; fi
}
# __answer checks a "# -> {...}" line: the last curl's answer has the keys
# shown, in their order, with values of the same types.
__answer() {
  local want=$1 line=$2 shape='[to_entries[] | {(.key): (.value | type)}] | add' w g
  if [ ! -f "$__tmp/curl.out" ]; then
    echo "readme-test: $__file:$line shows an answer, where no curl answered before it" >&2; return 6
  fi
  w=$(printf '%s' "$want" | command jq -c "$shape")
  if ! g=$(command jq -c "$shape" "$__tmp/curl.out" 2>&1); then
    echo "readme-test: $__file:$line shows an answer of $w, where curl's was not a JSON object: $(head -c 300 "$__tmp/curl.out")" >&2; return 6
  fi
  rm -f "$__tmp/curl.out"
  if [ "$w" != "$g" ]; then echo "readme-test: $__file:$line shows an answer of $w, where curl's was $g" >&2; return 6; fi
}
__save() {
  local __v
  for __v in $(compgen -v); do
    case "$__base_vars" in *" $__v "*) continue ;; esac
    case $__v in __*|_|FUNCNAME|BASH*|PIPESTATUS) continue ;; esac
    declare -p "$__v"
  done > "$__state"
}
if [ -f "$__state" ]; then source "$__state"; fi
trap __save EXIT
trap '__rc=$?; echo "readme-test: $__file:$LINENO failed (exit status $__rc)" >&2' ERR

# __empty names what is empty in an answer that promises rows.
__empty() {
  local ct=$1 body=$2
  case $ct in
  *json*)
    command jq -r 'if type == "array" then (if length == 0 then "the answer is []" else empty end)
      elif type == "object" and (has("total") or (.data | type) == "array") then
        [(to_entries[] | select((.value | type) == "array" and (.value | length) == 0) | .key),
         (.data | objects | to_entries[] | select((.value | type) == "array" and (.value | length) == 0) | "data." + .key)]
        | select(length > 0) | "empty " + join(", ") + " in a list answer"
      elif . == null then "the answer is null"
      else empty end' "$body" ;;
  *csv*)
    if [ "$(wc -l < "$body")" -lt 2 ]; then echo "a CSV answer with no rows"; fi ;;
  esac
}

curl() {
  local h b a own=true rc=0 st ct fail=
  h=$(mktemp "$__tmp/headers.XXXXXX") b=$(mktemp "$__tmp/body.XXXXXX")
  for a in "$@"; do case $a in -o|--output|-O|--remote-name) own=false ;; esac; done
  # -q first: no ~/.curlrc
  if $own; then command curl -q -D "$h" -o "$b" "$@" || rc=$?; else command curl -q -D "$h" "$@" || rc=$?; fi
  st=$(awk '/^HTTP\//{s=$2} END{print s}' "$h")
  ct=$(awk 'tolower($1)=="content-type:"{c=tolower($2)} END{print c}' "$h")
  if [ "$rc" != 0 ]; then fail="curl exited $rc (HTTP ${st:-none})"
  elif [ "$__status" = 2xx ]; then case $st in 2??) ;; *) fail="HTTP $st, where the example expects 2xx" ;; esac
  elif [ "$st" != "$__status" ]; then fail="HTTP $st, where the example expects $__status"
  fi
  if [ -z "$fail" ] && $__rows && $own && [ "$st" != 204 ]; then
    case $st in 2??) if [ ! -s "$b" ]; then fail="an empty answer"; else fail=$(__empty "$ct" "$b") || fail="an answer that is not $ct"; fi ;; esac
  fi
  if $own; then cat "$b"; cp "$b" "$__tmp/curl.out"; fi
  if [ -n "$fail" ]; then
    echo "readme-test: curl $*: $fail" >&2
    if $own; then echo "readme-test: the answer: $(head -c 3000 "$b")" >&2; fi
    return 22
  fi
}

jq() {
  local out
  if ! out=$(command jq "$@"); then echo "readme-test: jq $* failed" >&2; return 5; fi
  printf '%s' "$out" > "$__tmp/jq.out"
  if $__rows && [ -z "$(printf '%s' "$out" | sed -e 's/null//g' -e 's/[][{}[:space:]]//g')" ]; then
    echo "readme-test: jq $* printed ${out:-nothing}, where the example promises a result" >&2
    return 5
  fi
  if [ -n "$out" ]; then printf '%s\n' "$out"; fi
}
`

// readmePython returns an interpreter with pip and pandas: $PYTHON, else
// Debian's /usr/bin/python3, else python3 on PATH; "" (with the test
// failed under CI=true) when there is none.
func readmePython(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, c := range candidates {
		if err := exec.Command(c, "-c", "import pandas, pip").Run(); err == nil {
			return c
		}
	}
	msg := "no python3 with pip and pandas (apt-get install python3 python3-pip python3-pandas python3-setuptools)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Log(msg + ": the Python examples are skipped")
	return ""
}

// installPythonClient installs clients/python as pip does offline, into a
// directory of its own, and returns that directory (for PYTHONPATH).
func installPythonClient(t *testing.T, py, work string) string {
	t.Helper()
	src := filepath.Join(work, "python-src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join("..", "..", "clients", "python"))); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(work, "python-site")
	cmd := exec.Command(py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index", "--no-deps", "--target", site, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install clients/python: %v\n%s", err, out)
	}
	return site
}

// readmeEmptyCheck ends every Python block: a list, DataFrame or updown
// result left in a global variable must not be empty.
const readmeEmptyCheck = `
def __readme_check():
    import sys
    empty = []
    for name, v in list(globals().items()):
        if name.startswith("_"):
            continue
        mod = type(v).__module__ or ""
        if isinstance(v, (list, tuple)) or mod.startswith(("pandas", "updown")):
            try:
                n = len(v)
            except TypeError:
                continue
            if n == 0:
                empty.append(name)
    if empty:
        sys.exit("readme-test: empty, where the example promises rows: " + ", ".join(sorted(empty)))
__readme_check()
`

func runPythonBlock(ctx context.Context, py, site, dir string, b readmeBlock, code string) ([]byte, error) {
	// Blank lines before the code, so a traceback names the README's line.
	src := strings.Repeat("\n", b.line) + code
	rows := true
	for _, line := range strings.Split(code, "\n") {
		if _, r, ok := marker(line); ok && !r {
			rows = false
		}
	}
	if rows {
		src += readmeEmptyCheck
	}
	// Named as the README, so a traceback names it and its line.
	path := filepath.Join(dir, fmt.Sprintf("python-block-%d", b.line), b.file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		return nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, py, path)
	cmd.Dir = dir
	cmd.Env = readmeEnv("PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1", "MPLBACKEND=Agg")
	return cmd.CombinedOutput()
}

// startDevProcess runs `updown dev args...` as the built binary on a
// loopback port of its own until the test ends, with no secrets from the
// environment, and returns its base URL once it is ready. The binary is
// not this test's -race build, which generates dev's data ten times
// slower (15 s of CPU for the default 1000 snapshots per market); dev in
// process under the race detector is TestDevEndToEnd's.
func startDevProcess(t *testing.T, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	dev := startProc(t, "dev", []string{"TOKEN_SECRET=", "WEBHOOK_SECRET=", "AI_PROVIDER=builtin", "LOG_FORMAT=text"},
		append([]string{"dev", "--addr", addr}, args...)...)
	base := "http://" + addr
	waitReady(t, dev, base, patience)
	return base
}

// waitReady waits for base's /readyz, generously: dev generates its data
// first, which takes a while on a loaded machine.
func waitReady(t *testing.T, p *proc, base string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", p.name, p.err, lastN(p.out.String(), 2000))
		default:
		}
		if res, err := http.Get(base + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready within %s", base, within)
}

// TestReadmeChecks holds the checks of TestReadmeExamples to what they
// promise, against a small server: a run that never fails would pass
// every README.
func TestReadmeChecks(t *testing.T) {
	t.Parallel()
	needTools(t, "bash", "curl", "jq")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answers := map[string]struct {
			status int
			ctype  string
			body   string
		}{
			"/list":       {200, "application/json", `{"markets":[{"slug":"a"}],"total":1,"warning":null}`},
			"/list-empty": {200, "application/json", `{"markets":[],"total":0,"warning":null}`},
			"/data-empty": {200, "application/json", `{"data":[],"total":0}`},
			"/one":        {200, "application/json", `{"slug":"a","tick_size_changes":[],"winner":null}`},
			"/forbidden":  {403, "application/json", `{"success":false,"error":{"code":"TIER_ACCESS_DENIED"}}`},
			"/csv":        {200, "text/csv", "time,price\n1,0.5\n"},
			"/csv-empty":  {200, "text/csv", "time,price\n"},
		}
		a, ok := answers[r.URL.Path]
		if !ok {
			a.status, a.ctype, a.body = 404, "application/json", `{"success":false}`
		}
		w.Header().Set("Content-Type", a.ctype)
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()

	sh := newReadmeShell(t, t.TempDir())
	for _, c := range []struct {
		code string
		fail string // in the output when the block must fail; "" when it must pass
	}{
		{`curl -s "$BASE/list"`, ""},
		{`curl -s "$BASE/one" | jq .slug`, ""},
		{`curl -s "$BASE/list-empty"`, "empty markets in a list answer"},
		{`curl -s "$BASE/data-empty" | jq .`, "empty data in a list answer"},
		{"# expect: may be empty\ncurl -s \"$BASE/list-empty\"", ""},
		{`curl -s "$BASE/forbidden"`, "HTTP 403, where the example expects 2xx"},
		{`curl -s "$BASE/nowhere" | jq .success`, "HTTP 404"},
		{"# expect: 403 TIER_ACCESS_DENIED\ncurl -s \"$BASE/forbidden\" | jq .error.code", ""},
		{"# expect: 403\ncurl -s \"$BASE/list\"", "HTTP 200, where the example expects 403"},
		{"# expect: 403\ncurl -s \"$BASE/forbidden\"\n# expect: 2xx\ncurl -s \"$BASE/forbidden\"", "where the example expects 2xx"},
		{`curl -s "$BASE/list" | jq .warning`, "printed null"},
		{`curl -s "$BASE/list" | jq '.markets[] | select(.slug == "b")'`, "printed nothing"},
		{"# expect: may be empty\ncurl -s \"$BASE/list\" | jq .warning", ""},
		{`X=$(curl -s "$BASE/forbidden" | jq -r .error.code)`, "README.md:12 failed"},
		{`curl -s -H 'Accept: text/csv' "$BASE/csv"`, ""},
		{`curl -s "$BASE/csv-empty"`, "a CSV answer with no rows"},
		{`curl -s "$BASE/list" -o list.json && test -s list.json`, ""},
		{`SAVED=$(curl -s "$BASE/list" | jq -r '.markets[0].slug')`, ""},
		{`test "$SAVED" = a`, ""}, // the block before set it
		{"curl -s \"$BASE/one\" | jq .slug\n# \"a\"", ""},
		{"curl -s \"$BASE/one\" | jq .slug\n# \"b\"", `README.md:13 shows "b", where jq printed "a"`},
		{"curl -s \"$BASE/one\" | jq -r .slug\n# \"a\"", `shows "a", where jq printed a`},
		{"true\n# \"a\"", `README.md:13 shows "a", where no jq printed anything`},
		{"# \"a comment\" that quotes\ntrue", ""},
		{"curl -s \"$BASE/list\"\n# -> {\"markets\":[…],\"total\":7,\"warning\":null}", ""},
		{"curl -s \"$BASE/list\"\n# -> {\"markets\":[…],\"total\":1}", `README.md:13 shows an answer of {"markets":"array","total":"number"}, where curl's was {"markets":"array","total":"number","warning":"null"}`},
		{"curl -s \"$BASE/list\"\n# -> {\"total\":1,\"markets\":[…],\"warning\":null}", "shows an answer of"},
		{"curl -s \"$BASE/list\"\n# -> {\"markets\":{…},\"total\":1,\"warning\":null}", "shows an answer of"},
		{"true\n# -> {\"total\":1}", "README.md:13 shows an answer, where no curl answered before it"},
		{`false`, "README.md:12 failed"},
	} {
		b := readmeBlock{file: "README.md", line: 10, lang: "sh", code: "BASE=" + srv.URL + "\n" + c.code + "\n"}
		// The fence is on line 10, BASE on 11, the code under test on 12.
		out, err := sh.run(t.Context(), b, b.code)
		switch {
		case c.fail == "" && err != nil:
			t.Errorf("%q failed: %v\n%s", c.code, err, out)
		case c.fail != "" && err == nil:
			t.Errorf("%q passed, want a failure with %q:\n%s", c.code, c.fail, out)
		case c.fail != "" && !strings.Contains(string(out), c.fail):
			t.Errorf("%q failed without %q:\n%s", c.code, c.fail, out)
		}
	}
}

// TestReadmePythonChecks: a Python block fails on an exception and on an
// empty list or DataFrame it leaves behind, unless marked.
func TestReadmePythonChecks(t *testing.T) {
	t.Parallel()
	py := readmePython(t)
	if py == "" {
		t.Skip("no python3 with pip and pandas")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		code string
		fail string // in the output when the block must fail; "" when it must pass
	}{
		{"import pandas\nrows = [1]\ndf = pandas.DataFrame({'a': [1]})\n", ""},
		{"rows = []\n", "empty, where the example promises rows: rows"},
		{"import pandas\ndf = pandas.DataFrame()\n", "empty, where the example promises rows: df"},
		{"# expect: may be empty\nrows = []\n", ""},
		{"x = 1\nraise SystemExit(x / 0)\n", "README.md\", line 12"},
	} {
		b := readmeBlock{file: "README.md", line: 10, lang: "python", code: c.code}
		out, err := runPythonBlock(t.Context(), py, dir, dir, b, c.code)
		switch {
		case c.fail == "" && err != nil:
			t.Errorf("%q failed: %v\n%s", c.code, err, out)
		case c.fail != "" && err == nil:
			t.Errorf("%q passed, want a failure with %q:\n%s", c.code, c.fail, out)
		case c.fail != "" && !strings.Contains(string(out), c.fail):
			t.Errorf("%q failed without %q:\n%s", c.code, c.fail, out)
		}
	}
}

// readmeCommands are the command lines whose -h the README's configuration
// table answers for, each with the name the table's "used by" column gives
// it.
var readmeCommands = []struct{ args, name string }{
	{"api", "api"}, {"worker", "worker"}, {"collect", "collect"}, {"dev", "dev"},
	{"migrate", "migrate"}, {"seed", "seed"}, {"export", "export"},
	{"import", "import"}, {"import events", "import"}, {"import list", "import"},
	{"markets fetch", "markets fetch"}, {"markets fill-fees", "markets fill-fees"},
	{"customers create", "customers"}, {"customers list", "customers"}, {"customers set-tier", "customers"},
	{"customers set-limits", "customers"},
	{"keys create", "keys"}, {"keys list", "keys"}, {"keys revoke", "keys"},
}

var (
	// helpEnvLine is a line of a -h's Environment section that names
	// variables: two spaces, then one name or several parted by ", ".
	helpEnvLine = regexp.MustCompile(`^  ((?:[A-Z][A-Z0-9_]*, )*[A-Z][A-Z0-9_]*)(?:\s|$)`)
	// helpEnvFlag is a flag's "(env NAME)", the variable it defaults from.
	helpEnvFlag = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)\)`)
	// readmeVar is a variable in the README's table, in backticks.
	readmeVar = regexp.MustCompile("`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)`")
)

// helpVariables returns the variables a command's -h says it reads: those
// its Environment section lists and those its flags default from.
func helpVariables(help string) []string {
	var vars []string
	for _, m := range helpEnvFlag.FindAllStringSubmatch(help, -1) {
		vars = append(vars, m[1])
	}
	if i := strings.Index(help, "\nEnvironment"); i >= 0 {
		for _, line := range strings.Split(help[i+1:], "\n") {
			if m := helpEnvLine.FindStringSubmatch(line); m != nil {
				vars = append(vars, strings.Split(m[1], ", ")...)
			}
		}
	}
	slices.Sort(vars)
	return slices.Compact(vars)
}

// readmeConfiguration returns the variables of the README's configuration
// table, each with its "used by" cells. A row names its variables in its
// first cell, or (the upstream base URLs) in its meaning.
func readmeConfiguration(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Configuration\n")
	if !ok {
		t.Fatal(`README.md has no "## Configuration" section: has this test stopped finding it?`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	usedBy := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 || cells[0] == "variable" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		vars := readmeVar.FindAllStringSubmatch(cells[0], -1)
		if len(vars) == 0 {
			vars = readmeVar.FindAllStringSubmatch(cells[2], -1)
		}
		for _, v := range vars {
			usedBy[v[1]] += " " + cells[1]
		}
	}
	if len(usedBy) < 20 {
		t.Fatalf("README.md's configuration table names %d variables: has this test stopped reading it?", len(usedBy))
	}
	return usedBy
}

// TestReadmeConfigurationNamesEveryVariable: the README's configuration
// table names every variable a command's -h says it reads, with that
// command in its "used by" column, and no variable that no command reads
// (README: "updown <command> -h lists a command's flags and every variable
// it reads"; TestHelpNamesEveryVariable holds -h to the code).
func TestReadmeConfigurationNamesEveryVariable(t *testing.T) {
	t.Parallel()
	usedBy := readmeConfiguration(t)
	read := map[string]bool{}
	for _, c := range readmeCommands {
		code, stdout, stderr := runBinary(t, nil, append(strings.Fields(c.args), "-h")...)
		if code != 0 {
			t.Fatalf("updown %s -h: exit %d\n%s%s", c.args, code, stdout, stderr)
		}
		names := regexp.MustCompile(`\b(all|` + regexp.QuoteMeta(c.name) + `)\b`)
		for _, v := range helpVariables(stdout + stderr) {
			read[v] = true
			switch cells, ok := usedBy[v]; {
			case !ok:
				t.Errorf("updown %s -h names %s, which README.md's configuration table does not", c.args, v)
			case !names.MatchString(cells):
				t.Errorf("updown %s -h names %s, whose row in README.md's configuration table says it is used by%s, not by %s",
					c.args, v, cells, c.name)
			}
		}
	}
	for v := range usedBy {
		if !read[v] {
			t.Errorf("README.md's configuration table names %s, which no command's -h says it reads", v)
		}
	}
}

// TestReadmePythonInstallsInAVenv runs the README's way into a virtual
// environment as written, offline: its `python3 -m venv` line, then its
// `pip install --no-build-isolation` line, with Debian's python3 first on
// PATH and a copy of clients/python where the README has it. The client
// and pandas, which the README's Python examples use, must then import in
// the venv. (TestReadmeExamples installs the client with --target, the
// README's other way.)
func TestReadmePythonInstallsInAVenv(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("creates a virtual environment and installs into it: not in -short")
	}
	py := readmePython(t)
	if py == "" {
		t.Skip("no python3 with pip and pandas")
	}
	if out, err := exec.Command(py, "-c", "import ensurepip, venv, wheel").CombinedOutput(); err != nil {
		missingTool(t, fmt.Sprintf("python3's venv and wheel (apt-get install python3-venv python3-wheel): %v %s", err, out))
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var venv, install string
	for _, line := range strings.Split(string(readme), "\n") {
		cmd, _, _ := strings.Cut(line, " #")
		cmd = strings.TrimSpace(cmd)
		switch {
		case venv == "" && strings.HasPrefix(cmd, "python3 -m venv "):
			venv = cmd
		case install == "" && strings.HasPrefix(cmd, "pip install --no-build-isolation "):
			install = cmd
		}
	}
	if venv == "" || install == "" {
		t.Fatalf("README.md: no `python3 -m venv` line (%q) or no offline `pip install --no-build-isolation` line (%q): has this test stopped finding them?", venv, install)
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "clients", "python"), os.DirFS(filepath.Join("..", "..", "clients", "python"))); err != nil {
		t.Fatal(err)
	}
	// The README's python3 is Debian's (or $PYTHON), whatever else PATH has.
	bin := filepath.Join(work, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := exec.LookPath(py)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, filepath.Join(bin, "python3")); err != nil {
		t.Fatal(err)
	}
	script := "set -e\n" + venv + "\n" + install + " --quiet --no-index\n" +
		"python -c 'import updown, pandas; print(updown.__file__)'\n"
	cmd := exec.CommandContext(t.Context(), "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = []string{"LC_ALL=C", "HOME=" + work, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PIP_DISABLE_PIP_VERSION_CHECK=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's venv install, offline:\n%s\n%s\nfailed: %v\n%s", venv, install, err, lastN(string(out), 4000))
	}
	if !strings.Contains(string(out), filepath.Join(work, ".venv")) {
		t.Errorf("the client imported from outside the venv:\n%s", out)
	}
}

// TestReadmeNamesEveryClientMethod: the README's Python client section
// names every public method of updown.Client and of its agent, and every
// exception and warning the package exports, in backticks.
func TestReadmeNamesEveryClientMethod(t *testing.T) {
	t.Parallel()
	py := readmePython(t)
	if py == "" {
		t.Skip("no python3 with pip and pandas")
	}
	const list = `import inspect, updown
public = lambda cls: [n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)]
names = public(updown.Client) + public(updown.Agent)
names += [n for n in updown.__all__ if isinstance(getattr(updown, n), type) and issubclass(getattr(updown, n), (Exception, Warning))]
print("\n".join(names))
`
	cmd := exec.Command(py, "-c", list)
	cmd.Env = readmeEnv("PYTHONPATH="+filepath.Join("..", "..", "clients", "python", "src"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("listing the client's methods: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Python client\n")
	if !ok {
		t.Fatal(`README.md has no "### Python client" section: has this test stopped finding it?`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := strings.Fields(string(out))
	if len(names) < 30 {
		t.Fatalf("the client lists %d methods and exceptions: has this test stopped finding them?\n%s", len(names), out)
	}
	for _, name := range names {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("README.md's Python client section does not name `%s`", name)
		}
	}
}

var (
	// apiCodeConst is an error code the api declares as a constant.
	apiCodeConst = regexp.MustCompile(`\bCode\w*\s*=\s*"([A-Z][A-Z_]*[A-Z])"`)
	// apiCodeLiteral is an error code the api answers in place.
	apiCodeLiteral = regexp.MustCompile(`Errorf\(http\.Status\w+,\s*"([A-Z][A-Z_]*[A-Z])"`)
)

// TestReadmeErrorsNameEveryCode: the README's Errors section names every
// error code the api declares or answers (KEY_LIMIT_REACHED and
// SWEEP_NOT_DONE were missing from its table).
func TestReadmeErrorsNameEveryCode(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Errors\n")
	if !ok {
		t.Fatal(`README.md has no "### Errors" section: has this test stopped finding it?`)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	files, err := filepath.Glob(filepath.Join("..", "..", "api", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{apiCodeConst, apiCodeLiteral} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				codes[m[1]] = filepath.Base(file)
			}
		}
	}
	if len(codes) < 15 {
		t.Fatalf("found %d error codes in api/: has this test stopped finding them? %v", len(codes), codes)
	}
	for code, file := range codes {
		if !regexp.MustCompile(`\b` + code + `\b`).MatchString(section) {
			t.Errorf("api/%s answers %s, which README.md's Errors section does not name", file, code)
		}
	}
}

// TestReadmeBenchmarksExist: every benchmark the README's Benchmarks
// table names (`name`, or `package name`), and every BenchmarkX and
// `make bench BENCH=X` in the README, is a benchmark (or test) of the
// repository that `make bench BENCH=<name>` runs.
func TestReadmeBenchmarksExist(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^bench:`).Match(makefile) || !strings.Contains(string(makefile), "-bench '$(BENCH)'") {
		t.Errorf("the Makefile has no bench target running -bench '$(BENCH)', which the README's `make bench BENCH=<name>` runs")
	}
	// Every function of every test file, by directory.
	funcs := map[string][]string{}
	decl := regexp.MustCompile(`(?m)^func ((?:Benchmark|Test)\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			funcs[filepath.ToSlash(dir)] = append(funcs[filepath.ToSlash(dir)], m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(dir, name string) bool {
		for d, fs := range funcs {
			if (dir == "" || d == dir) && (slices.Contains(fs, "Benchmark"+name) || strings.HasPrefix(name, "Test") && slices.Contains(fs, name)) {
				return true
			}
		}
		return false
	}
	_, section, ok := strings.Cut(string(readme), "\n## Benchmarks\n")
	if !ok {
		t.Fatal(`README.md has no "## Benchmarks" section: has this test stopped finding it?`)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	named := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			dir, name := "", m[1]
			if f := strings.Fields(m[1]); len(f) == 2 && funcs[f[0]] != nil {
				dir, name = f[0], f[1]
			} else if len(f) != 1 {
				continue // `make test`
			}
			named++
			if !exists(dir, name) {
				t.Errorf("README.md's Benchmarks table names `%s`, which is no benchmark (or test) of %s", m[1], cmp.Or(dir, "the repository"))
			}
		}
	}
	if named < 20 {
		t.Fatalf("README.md's Benchmarks table names %d benchmarks: has this test stopped reading it?", named)
	}
	for _, m := range regexp.MustCompile(`\bBenchmark([A-Z]\w*)|make bench BENCH=([A-Za-z0-9]+)`).FindAllStringSubmatch(string(readme), -1) {
		if name := m[1] + m[2]; !exists("", name) {
			t.Errorf("README.md names %q, which is no benchmark of the repository", m[0])
		}
	}
}
