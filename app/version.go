package app

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Build metadata that a build without version control information can set
// with -ldflags "-X github.com/parleybot/parley/app.NAME=..." (deploy/build.sh
// does, from PARLEY_VERSION, PARLEY_COMMIT and PARLEY_DATE: a Docker build
// context has no .git). Empty values leave the build info's in place.
var (
	version = ""
	commit  = ""
	date    = ""
)

// linkedMeta is what the linker set in version, commit and date.
type linkedMeta struct{ version, commit, date string }

// versionLine is what `parley version` prints for this binary.
func versionLine() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(bi, linkedMeta{version: version, commit: commit, date: date})
}

// formatVersion renders one line such as
//
//	parley v0.3.1 (commit 1a2b3c4d5e6f, built 2026-11-26T12:00:00Z, go1.26.8 linux/amd64)
//
// from the build info (bi may be nil) and what the linker set, which wins
// where it is not empty. The version is the main module's (Go stamps a
// tag or a pseudo-version when it builds from a git checkout), "(devel)"
// when there is none; the commit is vcs.revision, cut to 12 characters,
// with "+dirty" for a build with uncommitted changes; the date is
// vcs.time, the commit's time. Parts that are unknown are left out.
func formatVersion(bi *debug.BuildInfo, ld linkedMeta) string {
	settings := map[string]string{}
	var ver, goVersion string
	if bi != nil {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		ver = bi.Main.Version
		goVersion = bi.GoVersion
	}
	if ld.version != "" {
		ver = ld.version
	}
	if ver == "" {
		ver = "(devel)"
	}
	rev := shortRevision(settings["vcs.revision"])
	if rev != "" && settings["vcs.modified"] == "true" {
		rev += "+dirty"
	}
	if ld.commit != "" {
		rev = shortRevision(ld.commit)
	}
	built := settings["vcs.time"]
	if ld.date != "" {
		built = ld.date
	}
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	goos, goarch := settings["GOOS"], settings["GOARCH"]
	if goos == "" || goarch == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "commit "+rev)
	}
	if built != "" {
		parts = append(parts, "built "+built)
	}
	parts = append(parts, goVersion+" "+goos+"/"+goarch)
	return fmt.Sprintf("parley %s (%s)", ver, strings.Join(parts, ", "))
}

// shortRevision cuts a full commit hash to 12 hex digits (as Go's
// pseudo-versions do), keeping a suffix such as "+dirty" or "-dirty".
func shortRevision(rev string) string {
	hash, suffix := rev, ""
	if i := strings.IndexAny(rev, "+-"); i >= 0 {
		hash, suffix = rev[:i], rev[i:]
	}
	if len(hash) > 12 && strings.Trim(hash, "0123456789abcdefABCDEF") == "" {
		hash = hash[:12]
	}
	return hash + suffix
}
