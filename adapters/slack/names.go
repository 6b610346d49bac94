package slack

import (
	"context"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// users answers questions about Slack users: their display names, the
// bot's DM with each, and OpenConversation.
type users struct {
	*state
	// names caches display names from users.info.
	names *nameCache
	// dms caches the bot's DM channel with each user (conversations.open),
	// which tells a slash command typed there from one typed elsewhere.
	dms *nameCache
}

// nameCache keeps a string per user for a while: display names from
// users.info, so that a DM costs a users.info call once an hour per user
// rather than every time, and the bot's DM channels (slash commands).
// Entries expire on the adapter's clock (not golang-lru's expirable, which
// reads the wall clock and runs a goroutine); a full cache lets the least
// recently used go.
type nameCache struct {
	ttl   time.Duration
	names *lru.Cache[string, cachedName]
}

type cachedName struct {
	name string
	at   time.Time
}

func newNameCache(ttl time.Duration, size int) *nameCache {
	// New fails only on a size below one.
	names, _ := lru.New[string, cachedName](max(size, 1))
	return &nameCache{ttl: ttl, names: names}
}

func (c *nameCache) get(userID string, now time.Time) (string, bool) {
	n, ok := c.names.Get(userID)
	if !ok || now.Sub(n.at) >= c.ttl {
		return "", false
	}
	return n.name, true
}

func (c *nameCache) put(userID, name string, now time.Time) {
	c.names.Add(userID, cachedName{name: name, at: now})
}

// nameLookup bounds one users.info call, so that a slow Slack leaves the
// rest of the ack budget to the core.
const nameLookup = time.Second

// displayName returns how the user shows in Slack: their display name,
// else their real name, else their username. When users.info fails the
// message goes on without a name.
func (u *users) displayName(ctx context.Context, userID string) string {
	now := u.clock.Now()
	if name, ok := u.names.get(userID, now); ok {
		return name
	}
	api, err := u.live()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, nameLookup)
	defer cancel()
	info, err := api.GetUserInfoContext(ctx, userID)
	if err != nil || info == nil {
		u.log.Debug("slack users.info failed; the message goes on without a display name", "user", userID, "err", u.scrub(err))
		return ""
	}
	name := info.Profile.DisplayName
	if name == "" {
		name = info.RealName
	}
	if name == "" {
		name = info.Profile.RealName
	}
	if name == "" {
		name = info.Name
	}
	u.names.put(userID, name, now)
	return name
}
