package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/stretchr/testify/require"
)

// msgStore is a Reader holding one conversation's messages; its reads
// are counted.
type msgStore struct {
	msgs  []core.Message
	reads int
}

func (s *msgStore) add(n int) []core.Message {
	var out []core.Message
	for range n {
		seq := int64(len(s.msgs) + 1)
		m := core.Message{ID: seq, ConversationID: 1, Seq: seq, Role: core.RoleUser, Content: fmt.Sprint("m", seq)}
		s.msgs = append(s.msgs, m)
		out = append(out, m)
	}
	return out
}

func (s *msgStore) MessagesAfter(_ context.Context, _ int64, after int64, limit int) ([]core.Message, error) {
	s.reads++
	var out []core.Message
	for _, m := range s.msgs {
		if m.Seq > after {
			out = append(out, m)
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (s *msgStore) conv(created time.Time) core.Conversation {
	return core.Conversation{ID: 1, LastSeq: int64(len(s.msgs)), CreatedAt: created}
}

func seqs(ms []core.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func TestHistoryCacheReadsOnlyWhatItLacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &msgStore{}
	h := New(3, 10)

	st.add(5)
	win, err := h.Window(ctx, st, st.conv(created))
	require.NoError(t, err)
	require.Equal(t, []int64{3, 4, 5}, seqs(win), "the newest limit, oldest first")
	require.Equal(t, 1, st.reads)

	// Nothing new: no read.
	win, err = h.Window(ctx, st, st.conv(created))
	require.NoError(t, err)
	require.Equal(t, []int64{3, 4, 5}, seqs(win))
	require.Equal(t, 1, st.reads)

	// Written through by this process: no read.
	h.Appended(st.conv(created), st.add(1)...)
	win, err = h.Window(ctx, st, st.conv(created))
	require.NoError(t, err)
	require.Equal(t, []int64{4, 5, 6}, seqs(win))
	require.Equal(t, 1, st.reads)

	// Stored by another process: read, only what is new.
	st.add(2)
	win, err = h.Window(ctx, st, st.conv(created))
	require.NoError(t, err)
	require.Equal(t, []int64{6, 7, 8}, seqs(win))
	require.Equal(t, 2, st.reads)

	// A message that does not follow the window is not taken on trust.
	st.add(1) // seq 9, never announced
	h.Appended(st.conv(created), st.add(1)...)
	win, err = h.Window(ctx, st, st.conv(created))
	require.NoError(t, err)
	require.Equal(t, []int64{8, 9, 10}, seqs(win))
	require.Equal(t, 3, st.reads)
}

func TestHistoryCacheForgetsAReusedConversationID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &msgStore{}
	h := New(5, 10)
	st.add(2)
	_, err := h.Window(ctx, st, st.conv(time.Unix(1, 0)))
	require.NoError(t, err)

	// The conversation was deleted and id 1 reused by a new one.
	st.msgs = nil
	st.add(2)
	win, err := h.Window(ctx, st, st.conv(time.Unix(2, 0)))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, seqs(win))
	require.Equal(t, 2, st.reads)
}

func TestHistoryCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	h := New(5, 2)
	for id := int64(1); id <= 3; id++ {
		h.Appended(core.Conversation{ID: id}, core.Message{Seq: 1})
	}
	require.Nil(t, h.get(core.Conversation{ID: 1}))
	require.NotNil(t, h.get(core.Conversation{ID: 2}))
	require.NotNil(t, h.get(core.Conversation{ID: 3}))
}

func TestHistoryCacheWindowIsNotChangedByLaterAppends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &msgStore{}
	h := New(3, 10)
	st.add(3)
	win, err := h.Window(ctx, st, st.conv(time.Time{}))
	require.NoError(t, err)
	before := append([]core.Message(nil), win...)
	h.Appended(st.conv(time.Time{}), st.add(1)...)
	require.Equal(t, before, win, "a turn's window stays as it was given")
}

// The window keeps no file's bytes.
func TestCacheKeepsNoFileBytes(t *testing.T) {
	t.Parallel()
	h := New(10, 10)
	conv := core.Conversation{ID: 1, LastSeq: 1}
	m := core.Message{ID: 1, ConversationID: 1, Seq: 1, Role: core.RoleAssistant, Content: "Here is Miso."}
	m.AttachFiles([]core.OutboundFile{{Kind: core.AttachImage, Name: "miso.png", Data: make([]byte, 1<<20)}})
	h.Appended(conv, m)
	win, err := h.Window(context.Background(), nil, conv)
	require.NoError(t, err)
	require.Len(t, win, 1)
	require.Nil(t, win[0].Files)
	require.NotNil(t, win[0].Metadata[core.FilesKey], "described all the same")
	require.NotNil(t, m.Files, "the caller's message is left as it was")
}
