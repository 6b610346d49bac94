package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
)

var (
	ipA = netip.MustParseAddr("203.0.113.1")
	ipB = netip.MustParseAddr("203.0.113.2")
)

func TestBackoffGrowsPerAddress(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := httpapi.NewBackoff(httpapi.BackoffConfig{Now: clock.Now})
	for i := 1; i <= 5; i++ {
		require.Zero(t, b.Fail(ipA).Wait, "failure %d is free", i)
		require.Zero(t, b.Check(ipA).Wait)
	}
	// Then 1 s, 2 s, 4 s … each failure after its wait.
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300} {
		require.Equal(t, want*time.Second, b.Fail(ipA).Wait, "failure %d", i+6)
		require.Equal(t, want*time.Second, b.Check(ipA).Wait)
		require.Zero(t, b.Check(ipB).Wait, "another address is not slowed down")
		clock.Advance(want*time.Second - time.Millisecond)
		require.Equal(t, time.Millisecond, b.Check(ipA).Wait)
		clock.Advance(time.Millisecond)
		require.Zero(t, b.Check(ipA).Wait)
	}
	// A success forgets the failures.
	b.Succeed(ipA)
	require.Zero(t, b.Fail(ipA).Wait)

	// So does 15 minutes of quiet after the last wait.
	c := httpapi.NewBackoff(httpapi.BackoffConfig{Now: clock.Now})
	for range 6 {
		c.Fail(ipB)
	}
	clock.Advance(15 * time.Minute)
	require.Zero(t, c.Fail(ipB).Wait, "the count starts afresh")
}

// One log line per address per minute, counting what it kept back.
func TestBackoffLogsOncePerMinute(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := httpapi.NewBackoff(httpapi.BackoffConfig{Now: clock.Now})
	v := b.Fail(ipA)
	require.Equal(t, httpapi.Verdict{Log: true, Failures: 1}, v)
	for range 9 {
		require.False(t, b.Fail(ipA).Log)
	}
	require.True(t, b.Fail(ipB).Log, "each address has its own line")
	require.False(t, b.Check(ipA).Log, "refused unchecked (failure 10 waits 16 s), kept back")
	clock.Advance(time.Minute)
	require.Equal(t, httpapi.Verdict{}, b.Check(ipA), "the wait is over")
	v = b.Fail(ipA)
	require.Equal(t, httpapi.Verdict{Wait: 32 * time.Second, Log: true, Failures: 10, Refused: 1}, v,
		"failure 11, with the 9 failures and the refusal kept back")
}

// IPv6 addresses are counted per /64; the table never outgrows its cap.
func TestBackoffIPv6AndMemory(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := httpapi.NewBackoff(httpapi.BackoffConfig{Now: clock.Now, MaxTracked: 100})
	for i := range 6 {
		b.Fail(netip.MustParseAddr(fmt.Sprintf("2001:db8:1:2::%x", i+1)))
	}
	require.Equal(t, time.Second, b.Check(netip.MustParseAddr("2001:db8:1:2:ffff::1")).Wait, "the same /64")
	require.Zero(t, b.Check(netip.MustParseAddr("2001:db8:1:3::1")).Wait, "another /64")
	require.Equal(t, time.Second, b.Check(netip.MustParseAddr("2001:db8:1:2::1%eth0")).Wait, "a zone is the same address")
	for i := range 10000 {
		b.Fail(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
		require.LessOrEqual(t, b.Tracked(), 100)
	}
}

// Wrong bearer tokens from one address: 401s, then 429 with Retry-After
// for every request of that address, the right token included, until
// the wait is over; a line per address per minute, never the token.
func TestAPIBacksOffWrongTokens(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	logs := &coretest.Logs{}
	srv := httpapi.New("127.0.0.1:0", logs.Logger())
	httpapi.NewAPI(httpapi.APIConfig{Token: token, Store: &fakeStore{}, Now: clock.Now}, logs.Logger()).Mount(srv.Mux())
	do := func(remote, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodDelete, "/api/v1/conversations/4", nil)
		req.RemoteAddr = remote
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	const attacker, owner = "198.51.100.7:4000", "198.51.100.8:4000"
	for i := range 6 {
		require.Equal(t, http.StatusUnauthorized, do(attacker, fmt.Sprintf("Bearer guess-%d", i)).Code)
	}
	for _, auth := range []string{"Bearer guess-7", "Bearer " + token, ""} {
		rec := do(attacker, auth)
		require.Equal(t, http.StatusTooManyRequests, rec.Code)
		require.Equal(t, "1", rec.Header().Get("Retry-After"))
		require.JSONEq(t, `{"error":"too many wrong tokens from your address: wait 1 s before trying again (until then even the right token is refused)"}`,
			rec.Body.String())
	}
	require.Equal(t, http.StatusOK, do(owner, "Bearer "+token).Code, "another address is not slowed down")
	require.Equal(t, http.StatusUnauthorized, do(owner, "").Code, "a request without a token is no guess")

	clock.Advance(time.Second)
	require.Equal(t, http.StatusOK, do(attacker, "Bearer "+token).Code, "the wait is over")

	lines := strings.Count(logs.String(), "api requests refused: wrong bearer token")
	require.Equal(t, 1, lines, logs.String())
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "ip=198.51.100.7 wrong_tokens=1 refused_while_waiting=0")
	require.NotContains(t, logs.String(), "guess-")
	require.NotContains(t, logs.String(), token)
}

// Behind a trusted proxy the back-off is per client, not per proxy.
func TestBackoffBehindATrustedProxy(t *testing.T) {
	t.Parallel()
	srv := httpapi.NewWithOptions("127.0.0.1:0", nil, httpapi.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}})
	httpapi.NewAPI(httpapi.APIConfig{Token: token, Store: &fakeStore{}}, nil).Mount(srv.Mux())
	do := func(client, auth string) int {
		req := httptest.NewRequest(http.MethodDelete, "/api/v1/conversations/4", nil)
		req.RemoteAddr = "10.0.0.1:3000"
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	for range 6 {
		require.Equal(t, http.StatusUnauthorized, do("198.51.100.7", "Bearer wrong"))
	}
	require.Equal(t, http.StatusTooManyRequests, do("198.51.100.7", "Bearer "+token))
	require.Equal(t, http.StatusOK, do("198.51.100.9", "Bearer "+token), "another client behind the same proxy")
}
