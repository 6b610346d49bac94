package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
)

// fakeSpeaker speaks text as "OggS" and the text, or fails with err.
type fakeSpeaker struct {
	mu    sync.Mutex
	err   error
	heard []string
}

func (f *fakeSpeaker) Speak(_ context.Context, text string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heard = append(f.heard, text)
	if f.err != nil {
		return nil, f.err
	}
	return []byte("OggS" + text), nil
}

// voiceRig is a dispatcher answering by voice as mode says, through the
// in-memory adapter (a core.FileSender).
type voiceRig struct {
	model   *llmtest.Server
	adapter *coretest.Adapter
	speaker *fakeSpeaker
	disp    *engine.Dispatcher
	store   core.Store
}

func newVoiceRig(t *testing.T, mode string, maxChars int) *voiceRig {
	t.Helper()
	r := &voiceRig{model: llmtest.NewServer(t), adapter: coretest.NewAdapter(web), speaker: &fakeSpeaker{}}
	client, err := llm.New(llm.Config{BaseURL: r.model.URL(), APIKey: "sk-test", Model: "m", Timeout: waitFor, MaxRetries: llm.NoRetries})
	require.NoError(t, err)
	st := openStore(t)
	r.store = st
	r.disp, err = engine.New(engine.Config{Store: st, LLM: client, Adapters: []core.Adapter{r.adapter}, Logger: (&coretest.Logs{}).Logger(),
		Voice: core.VoiceReplies{Mode: mode, MaxChars: maxChars, Speaker: r.speaker}})
	require.NoError(t, err)
	require.NoError(t, r.adapter.Start(t.Context(), r.disp))
	require.NoError(t, r.disp.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, r.disp.Stop(context.Background())) })
	return r
}

// waitSent waits until the adapter has sent n messages, and returns them.
func (r *voiceRig) waitSent(t *testing.T, n int) []coretest.Sent {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.adapter.Sent()) >= n }, waitFor, 2*time.Millisecond)
	return r.adapter.Sent()
}

// With voice.replies always, the reply is spoken (as plain text) and goes
// as a voice note alone; the text is what is stored.
func TestVoiceRepliesAlwaysSpeakTheReply(t *testing.T) {
	t.Parallel()
	r := newVoiceRig(t, "always", 1000)
	r.model.Enqueue(llmtest.Text("Hello **Ada**, the tea is ready."))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	sent := r.waitSent(t, 1)
	require.Empty(t, sent[0].Text, "the voice note says it")
	require.Len(t, sent[0].Files, 1)
	f := sent[0].Files[0]
	require.Equal(t, core.OutboundFile{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg",
		Data: []byte("OggSHello Ada, the tea is ready.")}, f)
	require.Eventually(t, func() bool { return spokenReply(t, r) != nil }, waitFor, 2*time.Millisecond)
	m := spokenReply(t, r)
	require.Equal(t, "Hello **Ada**, the tea is ready.", m.Content, "the text is the message")
	require.Equal(t, true, m.Metadata[core.VoiceReplyKey])
}

// Speech that fails, or a reply too long to speak, goes as text.
func TestVoiceRepliesFallBackToText(t *testing.T) {
	t.Parallel()
	r := newVoiceRig(t, "always", 20)
	r.speaker.err = errors.New("tts: 503 Service Unavailable")
	r.model.Enqueue(llmtest.Text("Short one."), llmtest.Text(strings.Repeat("long ", 10)))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	sent := r.waitSent(t, 1)
	require.Equal(t, "Short one.", sent[0].Text)
	require.Empty(t, sent[0].Files)
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "and?"))
	sent = r.waitSent(t, 2)
	require.Equal(t, strings.TrimSpace(strings.Repeat("long ", 10)), sent[1].Text)
	require.Empty(t, sent[1].Files)
	r.speaker.mu.Lock()
	defer r.speaker.mu.Unlock()
	require.Equal(t, []string{"Short one."}, r.speaker.heard, "a reply too long is not even spoken")
}

// In mirror mode a voice note is answered by voice, text by text.
func TestVoiceRepliesMirrorTheUser(t *testing.T) {
	t.Parallel()
	r := newVoiceRig(t, "mirror", 1000)
	r.model.Enqueue(llmtest.Text("Text for text."), llmtest.Text("Voice for voice."))
	require.NoError(t, r.adapter.Deliver(t.Context(), "ada", "hi"))
	sent := r.waitSent(t, 1)
	require.Equal(t, "Text for text.", sent[0].Text)
	require.Empty(t, sent[0].Files)
	require.NoError(t, r.disp.HandleInbound(t.Context(), core.InboundMessage{Platform: web, ChannelThreadID: "ada", ChannelUserID: "ada",
		PlatformMessageID: "voice-1", Direct: true, SentAt: time.Now(),
		Attachments: []core.Attachment{{Kind: core.AttachVoice, MIME: "audio/ogg", Size: 4000, Ref: "v1"}}}))
	sent = r.waitSent(t, 2)
	require.Empty(t, sent[1].Text)
	require.Len(t, sent[1].Files, 1)
	require.Equal(t, "OggSVoice for voice.", string(sent[1].Files[0].Data))
}

// spokenReply is the conversation's newest reply, nil before there is one.
func spokenReply(t *testing.T, r *voiceRig) *core.Message {
	t.Helper()
	conv, err := r.store.ConversationByThread(t.Context(), web, "ada")
	if err != nil {
		return nil
	}
	msgs, err := r.store.RecentMessages(t.Context(), conv.ID, 10)
	require.NoError(t, err)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == core.RoleAssistant && msgs[i].Delivery == core.DeliverySent {
			return &msgs[i]
		}
	}
	return nil
}
