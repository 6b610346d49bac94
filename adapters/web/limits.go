package web

import (
	"fmt"
	"time"
)

// Limits bound what one browser (client id), one network address and
// everyone together may do with the web chat, so that a script cannot run
// up the owner's model bill or hold the server's connections. A person
// chatting never meets them. 0 turns a limit off.
type Limits struct {
	// MessagesPerMinutePerClient is how many messages one browser may post
	// per minute, in a burst or spread out (default 20).
	MessagesPerMinutePerClient int `yaml:"messages_per_minute_per_client"`
	// MessagesPerMinutePerIP is how many posts one address (an IPv6 /64)
	// may make per minute, whatever their client ids (default 60).
	MessagesPerMinutePerIP int `yaml:"messages_per_minute_per_ip"`
	// NewConversationsPerHourPerIP is how many client ids the bot has no
	// conversation with yet one address may start per hour (default 20).
	NewConversationsPerHourPerIP int `yaml:"new_conversations_per_hour_per_ip"`
	// StreamsPerClient is how many event streams (open pages) one browser
	// may hold (default 4).
	StreamsPerClient int `yaml:"streams_per_client"`
	// StreamsPerIP is how many event streams one address may hold
	// (default 16).
	StreamsPerIP int `yaml:"streams_per_ip"`
	// MaxStreams is how many event streams the web chat holds in all
	// (default 1000); each is a connection and a file descriptor. When
	// they are all taken, a new stream takes the place of the oldest
	// stream of the address holding the most, if it holds at least two
	// more than the newcomer's address.
	MaxStreams int `yaml:"max_streams"`
	// StreamLifetime is how long an event stream lasts before the server
	// ends it (default 10m; 0: for ever); the page reconnects at once and
	// reloads its history, so nothing is lost. Streams held by whoever
	// reads nothing then have to be opened again, and compete for their
	// places. Each stream ends up to a tenth earlier, so that pages opened
	// together do not come back together.
	StreamLifetime time.Duration `yaml:"stream_lifetime"`
}

// DefaultLimits is the web chat's limits when the config sets none.
func DefaultLimits() Limits {
	return Limits{
		MessagesPerMinutePerClient:   20,
		MessagesPerMinutePerIP:       60,
		NewConversationsPerHourPerIP: 20,
		StreamsPerClient:             4,
		StreamsPerIP:                 16,
		MaxStreams:                   1000,
		StreamLifetime:               10 * time.Minute,
	}
}

// validate rejects negative limits, naming the key.
func (l Limits) validate() error {
	for _, f := range []struct {
		key string
		v   int
	}{
		{"messages_per_minute_per_client", l.MessagesPerMinutePerClient},
		{"messages_per_minute_per_ip", l.MessagesPerMinutePerIP},
		{"new_conversations_per_hour_per_ip", l.NewConversationsPerHourPerIP},
		{"streams_per_client", l.StreamsPerClient},
		{"streams_per_ip", l.StreamsPerIP},
		{"max_streams", l.MaxStreams},
	} {
		if f.v < 0 {
			return fmt.Errorf("web adapter: limits.%s is %d; it must be 0 (no limit) or more", f.key, f.v)
		}
	}
	if l.StreamLifetime != 0 && l.StreamLifetime < time.Second {
		// Shorter, and pages would spend their time reconnecting.
		return fmt.Errorf("web adapter: limits.stream_lifetime is %s; it must be 0 (for ever) or at least 1s", l.StreamLifetime)
	}
	return nil
}
