package testskip_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/internal/testskip"
)

func TestToldOncePerRunAndReason(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out strings.Builder
	require.True(t, testskip.Tell(&out, dir, 4242, "Chromium", "apt-get install chromium"))
	require.False(t, testskip.Tell(&out, dir, 4242, "Chromium", "apt-get install chromium"), "another package of the same run")
	require.True(t, testskip.Tell(&out, dir, 4242, "PostgreSQL", "set PARLEY_TEST_POSTGRES_DSN"), "another reason")
	require.True(t, testskip.Tell(&out, dir, 4343, "Chromium", "apt-get install chromium"), "the next run")
	require.Equal(t, "parley tests: SKIPPED the tests that need Chromium: apt-get install chromium\n"+
		"parley tests: SKIPPED the tests that need PostgreSQL: set PARLEY_TEST_POSTGRES_DSN\n"+
		"parley tests: SKIPPED the tests that need Chromium: apt-get install chromium\n", out.String())
}

func TestSkipSkips(t *testing.T) {
	t.Parallel()
	var inner *testing.T
	var out strings.Builder
	t.Run("needs chromium", func(t *testing.T) {
		inner = t
		testskip.SkipTo(t, &out, t.TempDir(), 7, "a browser", "install one")
		t.Error("not reached")
	})
	require.True(t, inner.Skipped())
	require.Equal(t, "parley tests: SKIPPED the tests that need a browser: install one\n", out.String())
}
