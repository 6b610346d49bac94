package userdata_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/userdata"
)

// secrets are what no export of the seeded user may hold: the other
// user's and the other bot's data, the bot's internal records, the
// platform's file reference, the deleted message's text.
var secrets = []string{otherUser, otherBot, internal, fileRef, "hunter2", "call_", "owner-"}

func requireNoSecrets(t *testing.T, out string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, out, s)
	}
}

func TestJSONHoldsEverythingOfTheUserAndNothingElse(t *testing.T) {
	w := newWorld(t)
	b, err := w.gather(t).JSON()
	require.NoError(t, err)
	requireNoSecrets(t, string(b))
	require.Contains(t, string(b), `"time": "2026-03-02T19:00:00+09:00"`, "times in the user's zone")

	var d userdata.Data
	require.NoError(t, json.Unmarshal(b, &d))
	again, err := d.JSON()
	require.NoError(t, err)
	require.Equal(t, string(b), string(again), "the JSON decodes back to the same data")

	require.Equal(t, "default", d.BotID)
	require.Equal(t, "telegram", d.Platform)
	require.Equal(t, w.conv.ID, d.ConversationID)
	require.Equal(t, "user-"+thread, d.UserID)
	require.Equal(t, "Ann", d.DisplayName)
	require.Equal(t, zone, d.TimeZone)
	require.True(t, d.ExportedAt.Equal(t0.Add(48*time.Hour)))

	requireMessages(t, w, d.Messages)
	require.Len(t, d.Facts, 1)
	require.Equal(t, "F01", d.Facts[0].Key)
	require.Equal(t, factText, d.Facts[0].Text)
	require.True(t, d.Facts[0].Created.Equal(t0.Add(time.Minute)))

	require.Len(t, d.Summaries, 2)
	require.Equal(t, w.recordIDs, []int64{d.Summaries[0].RecordID, d.Summaries[1].RecordID})
	require.Equal(t, summary, d.Summaries[0].Summary)
	require.True(t, d.Summaries[0].Started.Equal(t0))

	require.Len(t, d.Jobs, 3)
	for i, want := range []struct{ kind, status, text, recurrence string }{
		{"message", "pending", "Time to feed the starter!", ""},
		{"agent_turn", "pending", "Ask how the bread came out", "0 9 * * *"},
		{"proactive", "cancelled", "follow up on the exam", ""},
	} {
		j := d.Jobs[i]
		require.Equal(t, w.jobIDs[i], j.ID)
		require.Equal(t, want.kind, j.Kind)
		require.Equal(t, want.status, j.Status)
		require.Equal(t, want.text, j.Text)
		require.Equal(t, want.recurrence, j.Recurrence)
	}
	require.True(t, d.Jobs[0].Due.Equal(t0.Add(24*time.Hour)))

	require.Len(t, d.Mood, 2)
	require.InDelta(t, 0.6, d.Mood[1].Valence, 1e-9)
	require.Equal(t, "the user shared good news", d.Mood[1].Reason)

	require.Equal(t, []userdata.Limit{{Time: d.Messages[w.heldSeq-1].Time, Limit: core.LimitMessagesPerMinute, Seq: w.heldSeq}}, d.Limits)
}

// requireMessages checks the seeded transcript, in order.
func requireMessages(t *testing.T, w *world, ms []userdata.Message) {
	t.Helper()
	texts := []string{"hello bot", "Hi Ann!\n# not a heading", editedText, "", heldText, "Slow down a little.",
		"back again", "welcome back", "Daily check-in is due."}
	require.Len(t, ms, len(texts))
	for i, m := range ms {
		require.Equal(t, int64(i+1), m.Seq)
		require.Equal(t, texts[i], m.Text)
		require.Equal(t, m.Seq == w.deletedSeq, m.Deleted, "seq %d", m.Seq)
		require.Equal(t, m.Seq == w.editedSeq || m.Seq == w.deletedSeq, m.Edited, "seq %d", m.Seq)
	}
	require.Equal(t, "user", ms[0].Role)
	require.Equal(t, "assistant", ms[1].Role)
	require.Equal(t, "reply", ms[1].Source)
	require.Equal(t, "cron_turn", ms[8].Source)
	require.True(t, ms[0].Time.Equal(t0))
	require.True(t, ms[w.editedSeq-1].EditedAt.Equal(t0.Add(2*time.Minute)))
	require.Equal(t, []userdata.File{{Name: "starter.jpg", Kind: "image", MIME: "image/jpeg", Size: 2048}}, ms[0].Files)
	require.Equal(t, []userdata.File{{Name: "recipe.pdf", Kind: "document", MIME: "application/pdf", Size: 3}}, ms[1].Files)
	require.Equal(t, core.LimitMessagesPerMinute, ms[w.heldSeq-1].Limited)
}

func TestMarkdownIsATranscriptInTheUsersZone(t *testing.T) {
	w := newWorld(t)
	md := w.gather(t).Markdown()
	requireNoSecrets(t, md)
	for _, want := range []string{
		"# Your data with default\n",
		"exported Wed 4 Mar 2026 19:00 (Asia/Tokyo)",
		"- Name: Ann\n- Platform: telegram, user id user-4242\n",
		"**You** · Mon 2 Mar 2026 19:00\n\n> hello bot\n> Attached: starter.jpg (image, image/jpeg, 2 KB)\n",
		"**Bot** · Mon 2 Mar 2026 19:00\n\n> Hi Ann!\n> # not a heading\n> Attached: recipe.pdf (document, application/pdf, 3 bytes)\n",
		"**You** · Mon 2 Mar 2026 19:01 · edited\n\n> " + editedText + "\n",
		"**You** · Mon 2 Mar 2026 19:03\n\n(deleted)\n",
		"**You** · Mon 2 Mar 2026 19:05 · held by the limit messages_per_minute\n\n> " + heldText + "\n",
		"**Bot** · Mon 2 Mar 2026 20:00\n\n> welcome back\n",
		"**Scheduled job** · Mon 2 Mar 2026 20:01\n\n> Daily check-in is due.\n",
		"- F01 · " + factText + " (since Mon 2 Mar 2026 19:01)\n",
		"### Session " + itoa(w.recordIDs[0]) + " · Mon 2 Mar 2026 19:00 – ",
		"> " + summary + "\n",
		"### Session " + itoa(w.recordIDs[1]) + " · Mon 2 Mar 2026 20:00 – ongoing\n\n(not summarised)\n",
		"- Message " + itoa(w.jobIDs[0]) + " “starter” · pending · due Tue 3 Mar 2026 19:00",
		"  > Time to feed the starter!\n",
		"- Recurring job " + itoa(w.jobIDs[1]) + " “daily bread” · pending · due Tue 3 Mar 2026 18:00 · repeats 0 9 * * *",
		"- Check-in " + itoa(w.jobIDs[2]) + " · cancelled",
		"- Mon 2 Mar 2026 20:00 · valence +0.60, arousal -0.20 · set_mood · the user shared good news\n",
		"- Mon 2 Mar 2026 19:05 · message " + itoa(w.heldSeq) + " held by the limit messages_per_minute\n",
	} {
		require.Contains(t, md, want)
	}
	last := -1
	for _, s := range []string{"Conversation", "What I remember", "Earlier sessions", "Scheduled", "Mood", "Limits"} {
		i := strings.Index(md, "\n## "+s+"\n")
		require.Greater(t, i, last, "section %s, in its place", s)
		last = i
	}
	for line := range strings.SplitSeq(md, "\n") {
		require.False(t, strings.HasPrefix(line, "# not"), "the user's text never makes a heading")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestGatherOfAnUnknownConversationIsNotFound(t *testing.T) {
	w := newWorld(t)
	_, err := userdata.Gather(w.ctx, w.st, w.facts, w.conv.ID+1000, t0)
	require.Error(t, err)
	require.True(t, errors.Is(err, core.ErrNotFound), "%v", err)
}

func TestGatherWithoutFactsOrMoodListsNone(t *testing.T) {
	w := newWorld(t)
	d, err := userdata.Gather(w.ctx, userdata.WithMood(w.st, nil), nil, w.conv.ID, t0)
	require.NoError(t, err)
	require.Len(t, d.Messages, 9)
	b, err := d.JSON()
	require.NoError(t, err)
	require.Contains(t, string(b), `"facts": []`)
	require.Contains(t, string(b), `"mood": []`)
	md := d.Markdown()
	require.Contains(t, md, "## What I remember\n\nNothing stored.\n")
	require.Contains(t, md, "## Mood\n\nNothing stored.\n")
}

func TestAnUnknownZoneIsUTC(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, w.st.SetTimeZone(w.ctx, w.conv.ID, "Not/A_Zone"))
	d := w.gather(t)
	require.Equal(t, "UTC", d.TimeZone)
	require.Contains(t, d.Markdown(), "**You** · Mon 2 Mar 2026 10:00\n\n> hello bot\n")
}

func TestFileNameNamesNoUser(t *testing.T) {
	w := newWorld(t)
	d := w.gather(t)
	require.Equal(t, "parley-export-telegram-2026-03-04", d.FileName())
	late := userdata.Data{BotID: "other", Platform: "We b/../x", UserID: "u1", DisplayName: "Ann",
		ExportedAt: time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC)}
	require.Equal(t, "parley-export-other-webx-2026-12-31", late.FileName())
}
