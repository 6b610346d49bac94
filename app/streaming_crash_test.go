package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// childConfigEnv makes the test binary run `parley run -c` with the config
// it names instead of the tests: a process a test can kill.
const childConfigEnv = "PARLEY_TEST_RUN_CONFIG"

func init() {
	if cfg := os.Getenv(childConfigEnv); cfg != "" {
		os.Exit(Run(context.Background(), []string{"run", "-c", cfg}, IO{In: strings.NewReader(""), Out: io.Discard, Err: os.Stderr}, os.LookupEnv))
	}
}

// startChild runs parley with cfgPath in a child process, and kills it
// (SIGKILL, no shutdown) at cleanup if the test has not.
func (b *testBundle) startChild(t *testing.T, cfgPath string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childConfigEnv+"="+cfgPath)
	for k, v := range b.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out coretest.Logs
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the killed process's log:\n%s", out.String())
		}
	})
	return cmd
}

// A process killed while a reply grows on Discord leaves half an answer
// on screen; the process that starts after it deletes that message and
// answers the user once, whole, with no half answer left behind.
func TestDiscordKilledMidStreamLeavesNoHalfAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	gate := make(chan struct{})
	b.model.Enqueue(llmtest.Text("The first answer, which a crash will cut off half way through.").WithWordDeltas().WithDeltaGate(gate),
		llmtest.Text("The answer after the restart, whole."))
	cfg := b.writeConfig(t, discordConfig(fake))
	child := b.startChild(t, cfg)
	fake.WaitReady(t, waitFor)

	channel, _ := fake.SendDM(lin, "tell me")
	for range 5 {
		gate <- struct{}{}
	}
	half := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) == 1 && strings.HasPrefix(ms[0].Content, "The first")
	}, waitFor)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_, _ = child.Process.Wait()
	close(gate)

	r := b.start(t, cfg)
	shown := fake.WaitVisible(t, channel, func(ms []discordtest.SentMessage) bool {
		return len(ms) == 1 && ms[0].Content == "The answer after the restart, whole."
	}, waitFor)
	require.Len(t, shown, 1, "one message: the half answer is gone")
	gone, ok := fake.Message(half[0].MessageID)
	require.True(t, ok)
	require.True(t, gone.Deleted, "the half answer was deleted")

	r.stop(t) // the reply's delivery is stored by then
	stored := b.storedMessagesOn(t, discord.Platform, channel)
	var replies []string
	for _, m := range stored {
		if m.Role == core.RoleAssistant && m.Delivery == core.DeliverySent {
			replies = append(replies, m.Content)
		}
	}
	require.Equal(t, []string{"The answer after the restart, whole."}, replies, fmt.Sprintf("stored: %+v", stored))
}
