package userdata_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/plugins/mood"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
	"github.com/parleybot/parley/userdata"
)

var _ userdata.Source = (*store.Store)(nil)

// t0 is a Monday, 19:00 in Tokyo (the user's zone, +9 all year).
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

const (
	zone       = "Asia/Tokyo"
	gap        = 10 * time.Minute
	thread     = "4242"
	otherUser  = "OTHERUSERMARK"
	otherBot   = "OTHERBOTMARK"
	internal   = "INTERNALMARK" // in what the bot keeps for itself only
	fileRef    = "platform-file-ref-INTERNALMARK"
	factText   = "bakes rye bread on Sundays"
	summary    = "Ann talked about her sourdough starter."
	heldText   = "spam spam spam"
	editedText = "see you at eight (edited)"
)

// world is a store with one user's conversation seeded through the
// store's own methods, beside another user's and another bot's.
type world struct {
	ctx    context.Context
	st     *store.Store
	facts  *memory.FactStore
	points *mood.Points
	conv   core.Conversation
	// deletedSeq, editedSeq and heldSeq are the seqs of the message the
	// user deleted, edited, and the one a limit held.
	deletedSeq, editedSeq, heldSeq int64
	recordIDs                      []int64
	jobIDs                         []int64
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	require.NoError(t, st.Migrate(ctx, memory.New(), mood.New()))
	w := &world{ctx: ctx, st: st, facts: memory.NewFactStore(st.Database()), points: mood.NewPoints(st.Database())}
	w.seedUser(t)
	w.seedOthers(t)
	return w
}

func (w *world) inbound(t *testing.T, st *store.Store, thread, text string, at time.Time, meta map[string]any) core.InboundResult {
	t.Helper()
	res, err := st.RecordInbound(w.ctx, core.InboundRecord{Platform: "telegram", ChannelThreadID: thread,
		ChannelUserID: "user-" + thread, DisplayName: "Ann", Text: text, PlatformMessageID: text, Metadata: meta,
		Now: at, SessionGap: gap})
	require.NoError(t, err)
	return res
}

func (w *world) append(t *testing.T, m *core.Message) {
	t.Helper()
	require.NoError(t, w.st.AppendMessage(w.ctx, m))
}

// seedUser seeds the exported conversation: two sessions of messages
// (one edited, one deleted, one with a picture, one held by a limit, a
// reply with a file, a recurring job's trigger), a run with its internal
// record, facts, summaries, jobs and moods.
func (w *world) seedUser(t *testing.T) {
	first := w.inbound(t, w.st, thread, "hello bot", t0, map[string]any{
		"attachments": []core.Attachment{{Kind: core.AttachImage, Name: "starter.jpg", MIME: "image/jpeg", Size: 2048, Ref: fileRef}}})
	w.conv = first.Conversation
	require.NoError(t, w.st.SetTimeZone(w.ctx, w.conv.ID, zone))
	reply := &core.Message{ConversationID: w.conv.ID, Role: core.RoleAssistant, Source: core.SourceReply,
		Content: "Hi Ann!\n# not a heading", CreatedAt: t0.Add(5 * time.Second), Delivery: core.DeliverySent}
	reply.AttachFiles([]core.OutboundFile{{Kind: core.AttachDocument, Name: "recipe.pdf", MIME: "application/pdf", Data: []byte("pdf")}})
	w.append(t, reply)

	edited := w.inbound(t, w.st, thread, "see you at seven", t0.Add(time.Minute), nil).Message
	edited.Content = editedText
	edited.Metadata = map[string]any{core.EditedAtKey: t0.Add(2 * time.Minute).Format(time.RFC3339)}
	require.NoError(t, w.st.SetMessageText(w.ctx, edited))
	w.editedSeq = edited.Seq

	deleted := w.inbound(t, w.st, thread, "my password is hunter2", t0.Add(3*time.Minute), nil).Message
	deleted.Content = ""
	deleted.Metadata = map[string]any{core.DeletedKey: true, core.EditedAtKey: t0.Add(4 * time.Minute).Format(time.RFC3339)}
	require.NoError(t, w.st.SetMessageText(w.ctx, deleted))
	w.deletedSeq = deleted.Seq

	held := w.inbound(t, w.st, thread, heldText, t0.Add(5*time.Minute), map[string]any{"limited": core.LimitMessagesPerMinute})
	w.heldSeq = held.Message.Seq
	w.append(t, &core.Message{ConversationID: w.conv.ID, Role: core.RoleAssistant, Source: core.SourceSystem,
		Content: "Slow down a little.", CreatedAt: t0.Add(5*time.Minute + time.Second),
		Metadata: map[string]any{"limit_notice": core.LimitMessagesPerMinute}})
	w.seedSecondSession(t, first.Message.SessionRecordID)
	w.seedKept(t)
}

// seedSecondSession starts a session an hour later, summarises the first,
// and runs a turn whose internal record and frozen prompt must stay out.
func (w *world) seedSecondSession(t *testing.T, firstRecord *int64) {
	later := t0.Add(time.Hour)
	res, err := w.st.RecordInbound(w.ctx, core.InboundRecord{Platform: "telegram", ChannelThreadID: thread,
		ChannelUserID: "user-" + thread, DisplayName: "Ann", Text: "back again", Now: later, SessionGap: gap, PlanRun: true})
	require.NoError(t, err)
	require.True(t, res.NewRecord)
	require.NotNil(t, firstRecord)
	w.recordIDs = []int64{*firstRecord, *res.Message.SessionRecordID}
	require.NoError(t, w.st.SaveSummary(w.ctx, *firstRecord, summary))
	_, err = w.st.FreezePrompt(w.ctx, *res.Message.SessionRecordID, "frozen stack "+internal)
	require.NoError(t, err)

	run, err := w.st.ClaimRun(w.ctx, "worker", later)
	require.NoError(t, err)
	require.NotNil(t, run)
	require.NoError(t, w.st.CompleteRun(w.ctx, run.ID, "worker", core.RunCompletion{Status: core.RunSucceeded, Now: later.Add(time.Second),
		Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: "welcome back",
			CreatedAt: later.Add(time.Second), Delivery: core.DeliverySent}},
		Record: core.RunRecord{Prompt: []core.RecordMessage{{Role: "system", Content: "system prompt " + internal}},
			Reasoning: "thinking " + internal}}))
	w.append(t, &core.Message{ConversationID: w.conv.ID, Role: core.RoleUser, Source: core.SourceCronTurn,
		Content: "Daily check-in is due.", CreatedAt: later.Add(time.Minute)})
}

// seedKept seeds what the bot keeps about the user: a fact, jobs of each
// kind, moods.
func (w *world) seedKept(t *testing.T) {
	_, _, err := w.facts.Remember(w.ctx, w.conv.ID, factText, 30, t0.Add(time.Minute))
	require.NoError(t, err)
	msg := &core.Job{ConversationID: w.conv.ID, Text: "Time to feed the starter!", Name: "starter", DueAt: t0.Add(24 * time.Hour),
		CreatedByToolCallID: "call_" + internal, Origin: "tool"}
	_, err = w.st.ScheduleMessage(w.ctx, msg, false, 10)
	require.NoError(t, err)
	daily := &core.Job{ConversationID: w.conv.ID, Text: "Ask how the bread came out", Name: "daily bread",
		Recurrence: "0 9 * * *", DueAt: t0.Add(23 * time.Hour)}
	require.NoError(t, w.st.CreateRecurringJob(w.ctx, daily, 5))
	check := &core.Job{ConversationID: w.conv.ID, Kind: core.JobProactive, Status: core.JobCancelled,
		Text: "follow up on the exam", DueAt: t0.Add(2 * time.Hour), LastError: "error " + internal, Owner: "owner-" + internal}
	require.NoError(t, w.st.CreateJob(w.ctx, check))
	w.jobIDs = []int64{msg.ID, daily.ID, check.ID}
	for i, reason := range []string{"", "the user shared good news"} {
		src := map[int]string{0: "initial", 1: "set_mood"}[i]
		require.NoError(t, w.points.Add(w.ctx, &core.MoodPoint{ConversationID: w.conv.ID, Valence: 0.1 + float64(i)*0.5,
			Arousal: -0.2, Source: src, Reason: reason, CreatedAt: t0.Add(time.Duration(i) * time.Hour)}))
	}
}

// seedOthers seeds another user of the same bot and the same user with
// another bot, each with every kind of data, marked.
func (w *world) seedOthers(t *testing.T) {
	other := w.st.ForBot("other")
	for _, o := range []struct {
		st     *store.Store
		thread string
		mark   string
	}{{w.st, "777", otherUser}, {other, thread, otherBot}} {
		res := w.inbound(t, o.st, o.thread, "hello "+o.mark, t0.Add(30*time.Second), map[string]any{"limited": "turns_per_day"})
		id := res.Conversation.ID
		require.NotEqual(t, w.conv.ID, id)
		w.append(t, &core.Message{ConversationID: id, Role: core.RoleAssistant, Source: core.SourceReply, Content: "hi " + o.mark})
		require.NoError(t, o.st.SaveSummary(w.ctx, *res.Message.SessionRecordID, "summary "+o.mark))
		_, _, err := w.facts.Remember(w.ctx, id, "fact "+o.mark, 30, t0)
		require.NoError(t, err)
		_, err = o.st.ScheduleMessage(w.ctx, &core.Job{ConversationID: id, Text: "job " + o.mark, DueAt: t0.Add(time.Hour)}, false, 10)
		require.NoError(t, err)
		require.NoError(t, w.points.Add(w.ctx, &core.MoodPoint{ConversationID: id, Source: "set_mood", Reason: "mood " + o.mark,
			CreatedAt: t0}))
	}
}

// gather exports the seeded user's conversation.
func (w *world) gather(t *testing.T) userdata.Data {
	t.Helper()
	d, err := userdata.Gather(w.ctx, userdata.WithMood(w.st, w.points), w.facts, w.conv.ID, t0.Add(48*time.Hour))
	require.NoError(t, err)
	return d
}
