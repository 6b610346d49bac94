package telegram_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// BenchmarkVersusEchoBot measures each bot as issue 31 did, black-box: the
// bot in a process of its own, the fakes in the benchmark's, so a side's
// CPU time is its bot's alone (not the fakes', whose work grows with the
// prompt a bot sends, nor the garbage the other sides left).

// childEnv names the side a child process of the test binary runs; the
// other variables are its botEnv.
const (
	childEnv        = "PARLEY_BENCH_BOT"
	childAPIEnv     = "PARLEY_BENCH_API_URL"
	childTokenEnv   = "PARLEY_BENCH_TOKEN"
	childModelEnv   = "PARLEY_BENCH_MODEL_URL"
	childDirEnv     = "PARLEY_BENCH_DIR"
	childProfileEnv = "PARLEY_BENCH_CPUPROFILE_DIR"
)

// A child is the test binary run again with childEnv set: it runs that
// bot instead of the tests, until its standard input closes.
func init() {
	if side := os.Getenv(childEnv); side != "" {
		os.Exit(runChild(side))
	}
}

func runChild(side string) int {
	run, ok := bots[side]
	if !ok {
		fmt.Fprintf(os.Stderr, "no bot %q\n", side)
		return 2
	}
	if dir := os.Getenv(childProfileEnv); dir != "" {
		f, err := os.Create(dir + "/" + side + ".cpu.pprof")
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpu profile:", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() { obeyParent(os.Stdin, os.Stdout); stop() }()
	env := botEnv{APIURL: os.Getenv(childAPIEnv), Token: os.Getenv(childTokenEnv),
		ModelURL: os.Getenv(childModelEnv), Dir: os.Getenv(childDirEnv)}
	if err := run(ctx, env); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", side, err)
		return 1
	}
	return 0
}

// startChild starts side's bot in a child process against fakes of its
// own (the model's options after Echo, which they may replace), and returns once it has answered a first DM; the child stops at
// cleanup, failing b if it failed. With -cpuprofile's directory given in
// PARLEY_BENCH_CPUPROFILE_DIR, each child writes <side>.cpu.pprof there.
func startChild(b *testing.B, side string, modelOpts ...llmtest.Option) (*telegramtest.Server, int) {
	b.Helper()
	c := startChildWith(b, side, nil, nil, modelOpts...)
	return c.fake, c.pid
}

// child is a bot running in a process of its own (startChildWith).
type child struct {
	fake  *telegramtest.Server
	model *llmtest.Server
	pid   int
	stdin io.Writer
	out   *lockedBuffer
}

// startChildWith is startChild with the fake's options and a setup of
// the model (its speech, say) before the first DM, returning the child.
func startChildWith(b *testing.B, side string, fakeOpts []telegramtest.Option, setup func(*llmtest.Server), modelOpts ...llmtest.Option) *child {
	b.Helper()
	fake := telegramtest.NewServer(b, fakeOpts...)
	var model *llmtest.Server
	if side != "echo" {
		model = llmtest.NewServer(b, append([]llmtest.Option{llmtest.WithResponder(llmtest.Echo)}, modelOpts...)...)
		if setup != nil {
			setup(model)
		}
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+side, childAPIEnv+"="+fake.URL(),
		childTokenEnv+"="+fake.Token(), childDirEnv+"="+b.TempDir())
	if model != nil {
		cmd.Env = append(cmd.Env, childModelEnv+"="+model.URL())
	}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("the %s bot: %v\n%s", side, err, out.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			b.Errorf("the %s bot did not stop in 30s\n%s", side, out.String())
		}
	})
	warm := telegramtest.User{ID: 4_999_999, FirstName: "Warm"}
	fake.SendPrivate(warm, "hello")
	fake.WaitSent(b, warm.ID, 1, 30*time.Second)
	return &child{fake: fake, model: model, pid: cmd.Process.Pid, stdin: stdin, out: out}
}

// lockedBuffer is a child's output, written by the os/exec copiers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
