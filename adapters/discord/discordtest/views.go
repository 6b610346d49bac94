package discordtest

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// views tells tests what a user sees of the bot's messages now: deleted
// ones left out, edited ones as they read after their edits.
type views struct{ *state }

// Visible returns the bot's messages in channelID that are not deleted,
// in order, as a user sees them now.
func (s *views) Visible(channelID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return visible(s.sentToLocked(channelID))
}

// WaitVisible waits until cond holds for Visible(channelID) and returns
// it; after timeout it fails the test (call it from the test goroutine)
// with what the channel shows.
func (s *views) WaitVisible(t testing.TB, channelID string, cond func([]SentMessage) bool, timeout time.Duration) []SentMessage {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return cond(visible(s.sentToLocked(channelID))) },
		func() string {
			return fmt.Sprintf("a condition on the messages of channel %s, it shows %q", channelID, contents(s.Visible(channelID)))
		})
	return s.Visible(channelID)
}

// WaitShows waits until the bot's messages a user sees in channelID (as
// Visible returns them) read exactly want, in order, and returns them.
// A reply the bot grows by edits shows its first words before it is
// finished, so a test reading a streamed reply waits for the final text
// here rather than after WaitSent. After timeout it fails the test (call
// it from the test goroutine) with what the channel shows.
func (s *views) WaitShows(t testing.TB, channelID string, timeout time.Duration, want ...string) []SentMessage {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return slices.Equal(contents(visible(s.sentToLocked(channelID))), want) },
		func() string {
			return fmt.Sprintf("channel %s to show %q, it shows %q", channelID, want, contents(s.Visible(channelID)))
		})
	return s.Visible(channelID)
}

// contents is each message's content, in order.
func contents(ms []SentMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func visible(all []SentMessage) []SentMessage {
	out := all[:0]
	for _, m := range all {
		if !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}
