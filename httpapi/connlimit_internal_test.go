package httpapi

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
)

// failingListener fails every accept as a process out of file
// descriptors does.
type failingListener struct{ net.Listener }

func (failingListener) Accept() (net.Conn, error) {
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

// Failed accepts are warnings that say what to do, one line per 10 s
// with the count, not a debug line per failure.
func TestAcceptErrorsAreRateLimitedWarnings(t *testing.T) {
	t.Parallel()
	logs := &coretest.Logs{}
	clock := coretest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l := newConnLimiter(failingListener{}, connLimits{max: 10}, logs.Logger(), clock.Now)
	for range 1000 {
		_, err := l.Accept()
		require.True(t, errors.Is(err, syscall.EMFILE))
	}
	require.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	require.Contains(t, logs.String(), "http server cannot accept connections: the process is out of file descriptors; "+
		"lower http.max_connections or raise the open-file limit (ulimit -n)")
	require.Contains(t, logs.String(), "errors=1 ")
	clock.Advance(10 * time.Second)
	_, _ = l.Accept()
	require.Equal(t, 2, strings.Count(logs.String(), "level=WARN"))
	require.Contains(t, logs.String(), fmt.Sprintf("errors=%d ", 1000))
	require.EqualValues(t, 1001, l.snapshot().AcceptErrors)
}

// net/http's own lines: a failed accept is the listener's to log, a
// panic is an error, the rest stays at debug.
func TestErrorLogLevels(t *testing.T) {
	t.Parallel()
	logs := &coretest.Logs{}
	e := errorLog{logs.Logger()}
	_, _ = e.Write([]byte("http: Accept error: accept tcp: too many open files; retrying in 5ms\n"))
	require.Empty(t, logs.String())
	_, _ = e.Write([]byte("http: TLS handshake error from 1.2.3.4:5: EOF\n"))
	require.Contains(t, logs.String(), "level=DEBUG")
	_, _ = e.Write([]byte("http: panic serving 1.2.3.4:5: boom\n"))
	require.Contains(t, logs.String(), `level=ERROR msg="http handler panicked"`)
}
