package mcp

import (
	"bufio"
	"errors"
	"os"
	"sync"
	"time"
)

// maxStderrLine bounds one logged line of a server's stderr; the rest of a
// longer line is dropped.
const maxStderrLine = 4096

// stderrLog copies a stdio server's stderr to the logger at debug, line by
// line, and keeps the last line for the reason of a failure.
type stderrLog struct {
	r    *os.File
	done chan struct{}

	mu   sync.Mutex
	last string
}

func readStderr(r *os.File, s *server) *stderrLog {
	l := &stderrLog{r: r, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		br := bufio.NewReaderSize(r, maxStderrLine)
		for {
			line, err := readLine(br)
			if line != "" {
				line = s.redact.text(line)
				l.mu.Lock()
				l.last = line
				l.mu.Unlock()
				s.log.Debug("mcp: server stderr", "line", line)
			}
			if err != nil {
				return
			}
		}
	}()
	return l
}

// readLine reads one line without its end, at most maxStderrLine bytes of
// it.
func readLine(br *bufio.Reader) (string, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxStderrLine - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
			line = line[:len(line)-1]
		}
		return string(line), err
	}
}

func (l *stderrLog) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// finish waits up to wait for the last writer to close the pipe (so that a
// crash's last words are logged), then closes it to stop the reader.
func (l *stderrLog) finish(wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
	_ = l.r.Close()
	<-l.done
}
