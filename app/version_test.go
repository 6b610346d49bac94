package app

import (
	"context"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
)

func fakeBuildInfo(version string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/parleybot/parley", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestFormatVersion(t *testing.T) {
	t.Parallel()
	platform := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ld   linkedMeta
		want string
	}{
		{
			name: "a tagged release from a clean checkout",
			bi: fakeBuildInfo("v0.4.0", "GOOS", "linux", "GOARCH", "arm64",
				"vcs", "git", "vcs.revision", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", "vcs.time", "2026-11-26T12:00:00Z", "vcs.modified", "false"),
			want: "parley v0.4.0 (commit 1a2b3c4d5e6f, built 2026-11-26T12:00:00Z, go1.26.8 linux/arm64)",
		},
		{
			name: "a pseudo-version with uncommitted changes",
			bi: fakeBuildInfo("v0.0.0-20261126120000-1a2b3c4d5e6f+dirty", "GOOS", "linux", "GOARCH", "amd64",
				"vcs.revision", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", "vcs.time", "2026-11-26T12:00:00Z", "vcs.modified", "true"),
			want: "parley v0.0.0-20261126120000-1a2b3c4d5e6f+dirty (commit 1a2b3c4d5e6f+dirty, built 2026-11-26T12:00:00Z, go1.26.8 linux/amd64)",
		},
		{
			name: "no version control: (devel) and the platform only",
			bi:   fakeBuildInfo("(devel)", "GOOS", "darwin", "GOARCH", "arm64"),
			want: "parley (devel) (go1.26.8 darwin/arm64)",
		},
		{
			name: "what the linker set wins (a Docker build without .git)",
			bi:   fakeBuildInfo("(devel)", "GOOS", "linux", "GOARCH", "amd64"),
			ld:   linkedMeta{version: "v1.2.3", commit: "0123456789abcdef0123456789abcdef01234567", date: "2026-01-02T03:04:05Z"},
			want: "parley v1.2.3 (commit 0123456789ab, built 2026-01-02T03:04:05Z, go1.26.8 linux/amd64)",
		},
		{
			name: "the linker's values over the build info's",
			bi: fakeBuildInfo("v0.4.0", "GOOS", "linux", "GOARCH", "amd64",
				"vcs.revision", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", "vcs.time", "2026-11-26T12:00:00Z", "vcs.modified", "true"),
			ld:   linkedMeta{commit: "abc1234-dirty", date: "2026-12-01"},
			want: "parley v0.4.0 (commit abc1234-dirty, built 2026-12-01, go1.26.8 linux/amd64)",
		},
		{
			name: "no build info at all",
			want: "parley (devel) (" + platform + ")",
		},
		{
			name: "an empty main version",
			bi:   &debug.BuildInfo{},
			want: "parley (devel) (" + platform + ")",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, formatVersion(tc.bi, tc.ld))
		})
	}
}

func TestShortRevision(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d":       "1a2b3c4d5e6f",
		"1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d+dirty": "1a2b3c4d5e6f+dirty",
		"abc1234":                 "abc1234",
		"abc1234-dirty":           "abc1234-dirty",
		"release-candidate-build": "release-candidate-build",
		"":                        "",
	} {
		require.Equal(t, want, shortRevision(in), in)
	}
}

// In a test binary the build info has no main module version: the line is
// still complete.
func TestVersionCommandPrintsOneLine(t *testing.T) {
	t.Parallel()
	var out coretest.Logs
	require.Equal(t, 0, Run(context.Background(), []string{"version"}, IO{Out: &out, Err: io.Discard}, lookupIn(nil)))
	line := out.String()
	require.True(t, strings.HasSuffix(line, "\n"))
	require.Equal(t, 1, strings.Count(line, "\n"))
	require.Regexp(t, `^parley \S+ \(.*`+regexp.QuoteMeta(runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)+`\)$`, strings.TrimSpace(line))
}
