// Package wire reads what Slack sends about its users (messages' files,
// edits, deletions, reactions, button taps, timestamps, emoji names) as
// the core's types, apart from the adapter that receives it.
package wire

import (
	"strconv"
	"strings"
	"time"
)

// ParseTS reads a Slack timestamp ("1700000000.000100", seconds and
// microseconds); fallback when it is not one.
func ParseTS(ts string, fallback time.Time) time.Time {
	secs, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || s <= 0 {
		return fallback
	}
	var us int64
	if frac != "" {
		if len(frac) > 6 {
			frac = frac[:6]
		}
		frac += strings.Repeat("0", 6-len(frac))
		if us, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return fallback
		}
	}
	return time.Unix(s, us*1000).UTC()
}
