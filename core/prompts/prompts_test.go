package prompts_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/prompts"
)

func TestCronTemplateRendersAndNamesItself(t *testing.T) {
	t.Parallel()
	tpl, ok := prompts.Lookup("cron.agent_turn.reminder")
	require.True(t, ok)
	require.Equal(t, []string{"cron.agent_turn.reminder"}, prompts.IDs())
	require.Equal(t, "cron.agent_turn.reminder@v1", tpl.Ref())
	vars := map[string]string{
		"job_name": "daily check-in", "job_id": "7", "schedule": "0 9 * * *", "time_zone": "Asia/Shanghai",
		"occurrence_local": "Tuesday 24 November 2026, 09:00", "now_local": "Tuesday 24 November 2026, 11:30",
		"late": "", "instruction": "Ask how they slept.",
	}
	out, err := tpl.Render(vars)
	require.NoError(t, err)
	require.Contains(t, out, `Job: "daily check-in" (job 7)`)
	require.Contains(t, out, "This is the occurrence of Tuesday 24 November 2026, 09:00.\nWhat the job asks")
	require.Contains(t, out, "Ask how they slept.")

	vars["late"] = "yes"
	out, err = tpl.Render(vars)
	require.NoError(t, err)
	require.Contains(t, out, "It runs late, at Tuesday 24 November 2026, 11:30")

	delete(vars, "instruction")
	_, err = tpl.Render(vars)
	require.ErrorContains(t, err, "rendering prompt cron.agent_turn.reminder@v1")
	require.ErrorContains(t, err, "instruction")
}

func TestSHA256IsTheTextsHash(t *testing.T) {
	t.Parallel()
	tpl := prompts.New("x", 3, "Hello {{.name}}")
	sum := sha256.Sum256([]byte("Hello {{.name}}"))
	require.Equal(t, hex.EncodeToString(sum[:]), tpl.SHA256())
	require.Equal(t, 3, tpl.Version())
	_, err := tpl.Render(map[string]string{})
	require.Error(t, err, "a missing variable is an error")
}
