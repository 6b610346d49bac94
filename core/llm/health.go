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
// call (Run or Complete), for /healthz and the web chat's banner.
func (c *Client) Health() Health {
	return Health{State: HealthUnknown}
}
