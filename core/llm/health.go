package llm

import "time"

// Health states: what the last chat call said about the model server.
const (
	HealthUnknown     = "unknown"      // no call has finished yet
	HealthOK          = "ok"           // the last call succeeded
	HealthAuth        = "auth"         // 401 or 403: the key is wrong or lacks access
	HealthUnreachable = "unreachable"  // no answer: refused, DNS, timeout
	HealthServerError = "server_error" // 5xx, a malformed answer, or another 4xx
	HealthRateLimited = "rate_limited" // 429 after the retries
)

// Health is the model server's state as the client last saw it.
type Health struct {
	// State is one of the Health* constants.
	State string
	// Err is the last failed call's error (no secrets in it); "" once a
	// call succeeds.
	Err string
	// Since is when State began; zero while unknown.
	Since time.Time
}

// Health reports the state of the server as of the last finished chat
// call (Run or Complete), for /healthz and the web chat's banner. A call
// its caller cancelled leaves the state as it was.
func (c *Client) Health() Health {
	if h := c.health.Load(); h != nil {
		return *h
	}
	return Health{State: HealthUnknown}
}

// setHealth records the outcome of a finished call. It is on the path of
// every model call, so the common case (the state has not changed) only
// loads a pointer; a new value is allocated only on a change, and the
// compare-and-swap keeps concurrent calls from losing an update's Since.
func (c *Client) setHealth(state, errText string) {
	for {
		old := c.health.Load()
		if old != nil && old.State == state && old.Err == errText {
			return
		}
		next := &Health{State: state, Err: errText}
		if old != nil && old.State == state {
			next.Since = old.Since // same trouble, new wording: it began earlier
		} else {
			next.Since = c.cfg.Now()
		}
		if c.health.CompareAndSwap(old, next) {
			return
		}
	}
}

// recordHealth updates the health from a call's error (nil: success).
func (c *Client) recordHealth(err error) {
	if err == nil {
		c.setHealth(HealthOK, "")
		return
	}
	// The errors create returns are *Error themselves; errors.As would
	// allocate on every failed call.
	e, ok := err.(*Error)
	if !ok {
		e, ok = asError(err)
	}
	if !ok || e.health == "" {
		return
	}
	c.setHealth(e.health, e.Message)
}

// statusHealth maps a final HTTP error status to a Health state.
func statusHealth(code int) string {
	switch {
	case code == 401 || code == 403:
		return HealthAuth
	case code == 429:
		return HealthRateLimited
	default:
		return HealthServerError
	}
}
