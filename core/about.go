package core

import (
	"fmt"
	"math"
	"time"
)

// About says a duration the way a person would, for prompts: "moments",
// "~12 minutes", "~12 hours", "~3 days".
func About(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "moments"
	case d < time.Hour:
		return approx(int(math.Round(d.Minutes())), "minute")
	case d < 48*time.Hour:
		return approx(int(math.Round(d.Hours())), "hour")
	default:
		return approx(int(math.Round(d.Hours()/24)), "day")
	}
}

func approx(n int, unit string) string {
	if n == 1 {
		return "~1 " + unit
	}
	return fmt.Sprintf("~%d %ss", n, unit)
}
