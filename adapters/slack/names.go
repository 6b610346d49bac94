package slack

import (
	"context"
	"sync"
	"time"
)

// nameCache keeps a string per user for a while: display names from
// users.info, so that a DM costs a users.info call once an hour per user
// rather than every time, and the bot's DM channels (slash commands).
type nameCache struct {
	ttl time.Duration
	max int

	mu    sync.Mutex
	names map[string]cachedName
}

type cachedName struct {
	name string
	at   time.Time
}

func newNameCache(ttl time.Duration, max int) *nameCache {
	return &nameCache{ttl: ttl, max: max, names: make(map[string]cachedName)}
}

func (c *nameCache) get(userID string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.names[userID]
	if !ok || now.Sub(n.at) >= c.ttl {
		return "", false
	}
	return n.name, true
}

func (c *nameCache) put(userID, name string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.names) >= c.max {
		// Rare (max is far above a bot's active users): start afresh.
		clear(c.names)
	}
	c.names[userID] = cachedName{name: name, at: now}
}

// nameLookup bounds one users.info call, so that a slow Slack leaves the
// rest of the ack budget to the core.
const nameLookup = time.Second

// displayName returns how the user shows in Slack: their display name,
// else their real name, else their username. When users.info fails the
// message goes on without a name.
func (a *Adapter) displayName(ctx context.Context, userID string) string {
	now := a.clock.Now()
	if name, ok := a.names.get(userID, now); ok {
		return name
	}
	api, err := a.live()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, nameLookup)
	defer cancel()
	u, err := api.GetUserInfoContext(ctx, userID)
	if err != nil || u == nil {
		a.log.Debug("slack users.info failed; the message goes on without a display name", "user", userID, "err", a.scrub(err))
		return ""
	}
	name := u.Profile.DisplayName
	if name == "" {
		name = u.RealName
	}
	if name == "" {
		name = u.Profile.RealName
	}
	if name == "" {
		name = u.Name
	}
	a.names.put(userID, name, now)
	return name
}
