package python_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPythonWithoutABuildModuleSkips: an interpreter with pytest and pandas
// but without pip, or without the setuptools and wheel an offline
// `pip install --no-build-isolation` builds with (Debian's python3-pytest
// and python3-pandas bring none of them), is no interpreter to run the
// client's tests with: the test skips naming what to install, as without
// pandas, rather than fail in `pip install`.
func TestPythonWithoutABuildModuleSkips(t *testing.T) {
	for _, missing := range []string{"pip", "setuptools", "wheel"} {
		t.Run(missing, func(t *testing.T) {
			// The fake python3 has every module but the missing one.
			fake := filepath.Join(t.TempDir(), "python3")
			script := "#!/bin/sh\ncase \"$2\" in *" + missing + "*) exit 1;; esac\nexit 0\n"
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PYTHON", fake)
			t.Setenv("CI", "")
			skipped := false
			t.Run("probe", func(t *testing.T) {
				defer func() { skipped = t.Skipped() }()
				python(t)
			})
			if !skipped {
				t.Errorf("a python3 without %s was taken to run the client's tests", missing)
			}
		})
	}
}
