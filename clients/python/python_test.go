// Package python_test runs the Python client's tests (clients/python/tests)
// under `go test ./...`, so `make test` and CI run them: it installs the
// client as `pip install --no-build-isolation --no-index` would offline,
// builds the updown binary and runs pytest, whose fixtures start a live
// `updown dev`. Without python3, pytest, pandas or what pip builds the
// client with the test skips, and under CI=true fails.
package python_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// probe imports what the test runs with, pytest and pandas, and finds pip
// and what it builds the client with offline (--no-build-isolation):
// setuptools, and wheel where setuptools has no bdist_wheel of its own
// (before 70.1). It does not import setuptools: after pandas has imported
// distutils, Debian's setuptools refuses to load.
const probe = `import importlib.util as u, os
import pytest, pandas
for m in ("pip", "setuptools"):
    if u.find_spec(m) is None:
        raise SystemExit(m + " is missing")
s = u.find_spec("setuptools").submodule_search_locations[0]
if not os.path.exists(os.path.join(s, "command", "bdist_wheel.py")) and u.find_spec("wheel") is None:
    raise SystemExit("wheel is missing")
`

// python returns an interpreter that has pytest, pandas, pip, setuptools
// and wheel: $PYTHON, else python3 on PATH, else Debian's /usr/bin/python3.
func python(t *testing.T) string {
	t.Helper()
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, c := range candidates {
		if err := exec.Command(c, "-c", probe).Run(); err == nil {
			return c
		}
	}
	msg := "no python3 with pytest, pandas, pip, setuptools and wheel " +
		"(apt-get install python3 python3-pytest python3-pandas python3-pip python3-setuptools python3-wheel)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func TestPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("the Python client's tests start a server: not in -short")
	}
	py := python(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	tmp := t.TempDir()

	run := func(dir string, env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		t.Logf("%s %v:\n%s", filepath.Base(name), args, lastLines(out, 15))
	}

	// Install from a copy, so pip's build directory stays out of the tree.
	src := filepath.Join(tmp, "src")
	if err := os.CopyFS(src, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(tmp, "site")
	run(src, nil, py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index", "--no-deps", "--target", site, ".")

	bin := filepath.Join(tmp, "updown")
	run("../..", nil, "go", "build", "-o", bin, "./cmd/updown")

	run(filepath.Join(src, "tests"), []string{"PYTHONPATH=" + site, "UPDOWN_BIN=" + bin, "PYTHONDONTWRITEBYTECODE=1"},
		py, "-m", "pytest", "-q", "-p", "no:cacheprovider", ".")
}

func lastLines(b []byte, n int) string {
	end := len(b)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' && i < end-1 {
			if n--; n == 0 {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}
