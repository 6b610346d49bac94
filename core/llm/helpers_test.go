package llm_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

const apiKey = "sk-test-0123456789abcdef"

type testBundle struct {
	srv    *llmtest.Server
	client *llm.Client
	sleeps *sleepRecorder
	logs   *syncBuffer
}

// setup starts a fake server and a client for it whose retry waits are
// recorded instead of slept; tweak adjusts the config before New.
func setup(t *testing.T, tweak ...func(*llm.Config)) testBundle {
	t.Helper()
	srv := llmtest.NewServer(t)
	sleeps := &sleepRecorder{}
	logs := &syncBuffer{}
	cfg := llm.Config{
		BaseURL: srv.URL(),
		APIKey:  apiKey,
		Model:   "test-model",
		Sleep:   sleeps.sleep,
		Logger:  newLogger(logs),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	client, err := llm.New(cfg)
	require.NoError(t, err)
	return testBundle{srv: srv, client: client, sleeps: sleeps, logs: logs}
}

// newLogger logs everything, as text, to buf.
func newLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func userSays(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a test."},
		{Role: llm.RoleUser, Content: text},
	}}
}

// sleepRecorder stands in for Config.Sleep: it records each requested delay
// and returns at once.
type sleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
