package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestAbout(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		20 * time.Second:              "moments",
		time.Minute:                   "~1 minute",
		10 * time.Minute:              "~10 minutes",
		12*time.Hour + 10*time.Minute: "~12 hours",
		47 * time.Hour:                "~47 hours",
		3*24*time.Hour + 5*time.Hour:  "~3 days",
	} {
		require.Equal(t, want, core.About(d), d.String())
	}
}
