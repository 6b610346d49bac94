package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// trickler is one attacker connection after another from one address:
// each declares a body of 1,000 bytes and sends it a byte a second, and
// when the server closes it (or never takes it), the next follows a
// second later, for as long as the attack lasts.
type trickler struct {
	addr, route, ctype string
	local              *net.TCPAddr
	stop               <-chan struct{}
	// Counts over all tricklers: connections made, those the server
	// closed before a byte of an answer (refused or made room with),
	// those answered (a 400 for a body cut short, a 429), and the most
	// held at once.
	made, closedSilently, answered, held, peak *atomic.Int64
}

func (tr *trickler) run() {
	for {
		select {
		case <-tr.stop:
			return
		default:
		}
		tr.one()
		select {
		case <-tr.stop:
			return
		case <-time.After(time.Second): // the attacker's own pace, bounding the test's load
		}
	}
}

func (tr *trickler) one() {
	d := net.Dialer{LocalAddr: tr.local, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", tr.addr)
	if err != nil {
		return
	}
	defer c.Close()
	tr.made.Add(1)
	if n := tr.held.Add(1); n > tr.peak.Load() {
		tr.peak.Store(n) // racy maximum; a figure, not a check
	}
	defer tr.held.Add(-1)
	answered := make(chan bool, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		answered <- n > 0
	}()
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\n", tr.route, tr.addr, tr.ctype); err != nil {
		return
	}
	// A body that stays valid to the last byte, so that the server keeps
	// reading it: a form's token, a JSON message's text.
	body := "token=" + strings.Repeat("a", 994)
	if tr.ctype == "application/json" {
		body = `{"client_id":"slow-client-0001","text":"` + strings.Repeat("a", 958) + `"}`
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; i < len(body); i++ {
		if _, err := io.WriteString(c, body[i:i+1]); err != nil {
			break
		}
		select {
		case got := <-answered:
			if got {
				tr.answered.Add(1)
			} else {
				tr.closedSilently.Add(1)
			}
			return
		case <-tr.stop:
			return
		case <-tick.C:
		}
	}
}

// Slow bodies from one address, and from many, for as long as they last:
// /healthz and a user's DM on the web chat keep answering within 1 s on
// new connections (issue 30: 2,200 logins from one address trickling
// their forms a byte a second, or slow web posts from many addresses,
// had every new connection refused while the attack lasted).
func TestSlowBodiesCannotShutTheListener(t *testing.T) {
	const (
		maxConns = 256
		attack   = 9 * time.Second
		// probeFrom is when the probes begin: the attack has filled
		// every place it can by then.
		probeFrom = 3 * time.Second
	)
	for _, tc := range []struct {
		name, route, ctype string
		addrs, conns       int
	}{
		{"console logins from one address", "/console/login", "application/x-www-form-urlencoded", 1, 600},
		{"web posts from many addresses", "/web/messages", "application/json", 600, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			path := b.writeConfig(t, "runs:\n  debounce: 0s\n")
			text := strings.Replace(readConfig(t, path), "  listen: 127.0.0.1:0\n",
				fmt.Sprintf("  listen: 127.0.0.1:0\n  max_connections: %d\n", maxConns), 1)
			require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
			r := b.start(t, path)
			const user = "slowbody-user-01"
			events := openEvents(t, r.addr, user)

			stop := make(chan struct{})
			var made, silent, answered, held, peak atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for i := range tc.conns {
				tr := &trickler{addr: r.addr, route: tc.route, ctype: tc.ctype, local: floodAddr(7, i%tc.addrs), stop: stop,
					made: &made, closedSilently: &silent, answered: &answered, held: &held, peak: &peak}
				wg.Add(1)
				go func() {
					defer wg.Done()
					tr.run()
				}()
			}
			defer func() {
				close(stop)
				wg.Wait()
			}()

			// The probes: a new connection each, from the user's address.
			var lastDial atomic.Int64
			dialer := &net.Dialer{}
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
				t0 := time.Now()
				c, err := dialer.DialContext(ctx, n, a)
				lastDial.Store(int64(time.Since(t0)))
				return c, err
			}}, Timeout: 5 * time.Second}
			var health, dms []time.Duration
			var failures []string
			for time.Since(start) < probeFrom {
				time.Sleep(50 * time.Millisecond) // the attack's ramp; the probes measure what follows
			}
			pace := time.NewTicker(100 * time.Millisecond) // probes' pace: a DM every second stays within the user's limits
			defer pace.Stop()
			for n := 0; time.Since(start) < attack; n++ {
				<-pace.C
				t0 := time.Now()
				resp, err := client.Get("http://" + r.addr + "/healthz")
				if err != nil {
					failures = append(failures, fmt.Sprintf("/healthz at %s: %v", time.Since(start).Round(time.Millisecond), err))
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				health = append(health, time.Since(t0))
				if took := time.Since(t0); took > 500*time.Millisecond {
					// The connect's share tells a full accept queue from a slow server.
					t.Logf("a slow probe at %s: %s, of which connecting %s", time.Since(start).Round(time.Millisecond),
						took.Round(time.Millisecond), time.Duration(lastDial.Load()).Round(time.Millisecond))
				}
				if resp.StatusCode != http.StatusOK {
					failures = append(failures, fmt.Sprintf("/healthz: %d", resp.StatusCode))
				}
				if n%10 != 0 {
					continue
				}
				// A DM, answered on the page the user had open.
				reply := fmt.Sprintf("Still here (%d).", n)
				body, _ := json.Marshal(map[string]string{"client_id": user, "name": "Ada", "text": fmt.Sprintf("still there? %d", n)})
				b.model.Enqueue(llmtest.Text(reply))
				t0 = time.Now()
				resp, err = client.Post("http://"+r.addr+"/web/messages", "application/json", bytes.NewReader(body))
				if err != nil {
					failures = append(failures, fmt.Sprintf("a DM at %s: %v", time.Since(start).Round(time.Millisecond), err))
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					failures = append(failures, fmt.Sprintf("a DM: %d", resp.StatusCode))
					continue
				}
				if got := events.nextMessage(t); got != reply {
					failures = append(failures, fmt.Sprintf("a DM was answered %q, want %q", got, reply))
				}
				dms = append(dms, time.Since(t0))
			}
			fds := openFDs()
			t.Logf("%s: %d attacker connections made by %d tricklers from %d addresses in %s; peak held %d, %d closed without an answer, %d answered; %d fds open (test and bot)",
				tc.name, made.Load(), tc.conns, tc.addrs, attack, peak.Load(), silent.Load(), answered.Load(), fds)
			t.Logf("%s: /healthz %d probes, %s; DM %d, %s", tc.name, len(health), spread(health), len(dms), spread(dms))
			require.Empty(t, failures)
			require.NotEmpty(t, dms)
			for _, d := range append(health, dms...) {
				require.Less(t, d, time.Second)
			}
		})
	}
}

// spread is "min … p50 … max" of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("min %s, p50 %s, max %s", s[0].Round(100*time.Microsecond), s[len(s)/2].Round(100*time.Microsecond),
		s[len(s)-1].Round(100*time.Microsecond))
}
