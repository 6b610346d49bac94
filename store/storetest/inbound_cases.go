package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

func testMigrateTwice(t *testing.T, open Opener) {
	st := open(t)
	ctx := t.Context()

	v, err := st.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, v, "an empty database has no schema")

	require.NoError(t, st.Migrate(ctx))
	v, err = st.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, store.LatestSchemaVersion(), v)

	require.NoError(t, st.Migrate(ctx), "a second migrate is a no-op")
	v, err = st.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, store.LatestSchemaVersion(), v)

	var rows int64
	require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM schema_migrations`).Row().Scan(&rows))
	require.Equal(t, int64(store.LatestSchemaVersion()), rows, "each migration is recorded once")

	var name string
	require.NoError(t, st.DB().Raw(`SELECT name FROM schema_migrations WHERE version = 1`).Row().Scan(&name))
	require.NotEmpty(t, name)
}

func testPendingMigrations(t *testing.T, open Opener) {
	st := open(t)
	ctx := t.Context()

	pending, err := st.PendingMigrations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, store.LatestSchemaVersion(), "an empty database lacks every migration")
	require.Equal(t, 1, pending[0].Version)
	require.NotEmpty(t, pending[0].Name)
	v, err := st.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Zero(t, v, "listing created nothing")

	require.NoError(t, st.Migrate(ctx))
	pending, err = st.PendingMigrations(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)

	// A database one migration behind this build, as after an upgrade.
	latest := store.LatestSchemaVersion()
	require.NoError(t, st.DB().Exec(`DELETE FROM schema_migrations WHERE version = ?`, latest).Error)
	pending, err = st.PendingMigrations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, latest, pending[0].Version)
}

func testMigrateConcurrently(t *testing.T, open Opener) {
	st := open(t)
	ctx := t.Context()
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() { errs <- st.Migrate(ctx) }()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	v, err := st.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, store.LatestSchemaVersion(), v)
	var rows int64
	require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM schema_migrations`).Row().Scan(&rows))
	require.Equal(t, int64(store.LatestSchemaVersion()), rows)
}

func testRecordInboundCreatesOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	var convID int64
	for i := 1; i <= 3; i++ {
		res := b.inbound(t, "chat-1", fmt.Sprintf("message %d", i), b.at(time.Duration(i)*time.Second), false)
		if i == 1 {
			convID = res.Conversation.ID
		}
		require.Equal(t, convID, res.Conversation.ID, "the conversation is created once")
		require.Equal(t, int64(i), res.Message.Seq)
		require.NotZero(t, res.Message.ID)
		require.Equal(t, convID, res.Message.ConversationID)
		require.Equal(t, core.RoleUser, res.Message.Role)
		require.Equal(t, core.SourceUser, res.Message.Source)
	}
	require.Equal(t, int64(1), b.count(t, "conversations", "1 = 1"))

	msgs, err := b.st.Messages(b.ctx, convID)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	for i, m := range msgs {
		require.Equal(t, int64(i+1), m.Seq)
		require.Equal(t, fmt.Sprintf("message %d", i+1), m.Content)
		require.Equal(t, core.RoleUser, m.Role)
		require.Equal(t, core.SourceUser, m.Source)
		require.Equal(t, b.at(time.Duration(i+1)*time.Second), m.CreatedAt)
	}

	conv, err := b.st.ConversationByThread(b.ctx, telegram, "chat-1")
	require.NoError(t, err)
	require.Equal(t, convID, conv.ID)
	require.Equal(t, telegram, conv.Platform)
	require.Equal(t, "user-chat-1", conv.ChannelUserID)
	require.Equal(t, "Ann", conv.DisplayName)
	require.Equal(t, "Europe/Berlin", conv.TimeZone)
	require.Equal(t, b.at(time.Second), conv.CreatedAt)

	// The same thread id on another platform is another conversation.
	other, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: discord, ChannelThreadID: "chat-1", Text: "hey", Now: b.t0,
	})
	require.NoError(t, err)
	require.NotEqual(t, convID, other.Conversation.ID)
	require.Equal(t, int64(1), other.Message.Seq)
}

func testRecordInboundUpdatesNames(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inbound(t, "chat-1", "hi", b.t0, false)

	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform:        telegram,
		ChannelThreadID: "chat-1",
		ChannelUserID:   "user-new",
		DisplayName:     "Annie",
		TimeZone:        "Asia/Tokyo",
		Text:            "I renamed myself",
		Now:             b.at(time.Minute),
	})
	require.NoError(t, err)
	require.Equal(t, first.Conversation.ID, res.Conversation.ID)
	require.Equal(t, "Annie", res.Conversation.DisplayName)
	require.Equal(t, "user-new", res.Conversation.ChannelUserID)
	require.Equal(t, "Europe/Berlin", res.Conversation.TimeZone, "the time zone is set on create only")
	require.Equal(t, b.t0, res.Conversation.CreatedAt)
	require.Equal(t, b.at(time.Minute), res.Conversation.UpdatedAt)

	// Empty names do not erase known ones.
	res, err = b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: telegram, ChannelThreadID: "chat-1", Text: "again", Now: b.at(2 * time.Minute),
	})
	require.NoError(t, err)
	require.Equal(t, "Annie", res.Conversation.DisplayName)
	require.Equal(t, "user-new", res.Conversation.ChannelUserID)

	conv, err := b.st.Conversation(b.ctx, first.Conversation.ID)
	require.NoError(t, err)
	require.Equal(t, res.Conversation, conv)
}

func testSeqConcurrentWriters(t *testing.T, open Opener) {
	b := setup(t, open)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
					Platform:        web,
					ChannelThreadID: "busy",
					Text:            fmt.Sprintf("w%d-%d", w, i),
					Now:             b.at(time.Duration(i) * time.Millisecond),
					PlanRun:         true,
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	require.Empty(t, all, "no writer may fail (database is locked, unique violations)")

	conv, err := b.st.ConversationByThread(b.ctx, web, "busy")
	require.NoError(t, err)
	msgs, err := b.st.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, writers*each)
	texts := map[string]bool{}
	for i, m := range msgs {
		require.Equal(t, int64(i+1), m.Seq, "seqs are gap-free")
		texts[m.Content] = true
	}
	require.Len(t, texts, writers*each, "every message is stored once")

	runs, err := b.st.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, runs, 1, "concurrent planners share one queued run")
	require.Equal(t, core.RunQueued, runs[0].Status)
}

func testPlanningReusesQueuedRun(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inbound(t, "chat-1", "one", b.t0, true)
	require.NotNil(t, first.Run)
	require.Equal(t, core.RunQueued, first.Run.Status)
	require.Equal(t, core.RunUserTurn, first.Run.Kind)
	require.Equal(t, first.Message.ID, *first.Run.TriggerMessageID)
	require.Equal(t, first.Message.ID, *first.Run.ExpectedLastMessageID)
	require.Equal(t, b.t0, first.Run.RunAfter)

	second := b.inbound(t, "chat-1", "two", b.at(3*time.Second), true)
	require.NotNil(t, second.Run)
	require.Equal(t, first.Run.ID, second.Run.ID, "the queued run is reused")
	require.Equal(t, second.Message.ID, *second.Run.TriggerMessageID)
	require.Equal(t, second.Message.ID, *second.Run.ExpectedLastMessageID)
	require.Equal(t, b.at(3*time.Second), second.Run.RunAfter)

	runs, err := b.st.Runs(b.ctx, first.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, *second.Run, runs[0])

	// Once the run is running, the next message plans a new one.
	claimed, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Minute))
	require.NoError(t, err)
	require.Equal(t, first.Run.ID, claimed.ID)
	third := b.inbound(t, "chat-1", "three", b.at(2*time.Minute), true)
	require.NotEqual(t, first.Run.ID, third.Run.ID)
	require.Equal(t, third.Message.ID, *third.Run.TriggerMessageID)
}

func testRecordInboundWithoutPlan(t *testing.T, open Opener) {
	b := setup(t, open)
	res := b.inbound(t, "chat-1", "no run", b.t0, false)
	require.Nil(t, res.Run)
	require.Equal(t, int64(0), b.count(t, "runs", "1 = 1"))

	_, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: web, Text: "no thread", Now: b.t0})
	require.ErrorContains(t, err, "channel thread id are required")
	require.Equal(t, int64(1), b.count(t, "messages", "1 = 1"))
}
