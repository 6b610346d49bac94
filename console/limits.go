package console

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/console/chart"
	"github.com/parleybot/parley/console/words"
	"github.com/parleybot/parley/core"
)

// The overview's per-user limits: what bot.limits held in the last day.
const (
	limitsSince = 24 * time.Hour
	// limitedShown is how many of the most limited users are listed.
	limitedShown = 10
)

// LimitStats is an optional Store capability: the messages per-user
// limits held. *store.Store implements it; without it the overview says
// nothing of limits.
type LimitStats interface {
	// LimitedMessages counts the messages held since since, per limit,
	// and lists the top users with the most.
	LimitedMessages(ctx context.Context, since time.Time, top int) (core.LimitedSummary, error)
}

// limitsView is the overview's section on per-user limits.
type limitsView struct {
	// Counted is false when the store does not count held messages.
	Counted bool
	Total   string
	ByLimit []limitCount
	Users   []limitedUserItem
}

type limitCount struct {
	Limit, Count string
}

// limitedUserItem is one of the most limited users.
type limitedUserItem struct {
	ConversationID int64
	Name, Platform string
	Held           string
	// Limits are the limits that held them, with a count each.
	Limits  []limitCount
	Last    string
	LastAgo string
}

// limitOrder is the order limits are listed in, as bot.limits lists them.
var limitOrder = []string{core.LimitMessagesPerMinute, core.LimitTurnsPerDay, core.LimitTokensPerDay}

// buildLimits reads what the limits held in the last limitsSince.
func (s *reader) buildLimits(ctx context.Context, now time.Time) (limitsView, error) {
	ls, ok := s.store.(LimitStats)
	if !ok {
		return limitsView{}, nil
	}
	sum, err := ls.LimitedMessages(ctx, now.Add(-limitsSince), limitedShown)
	if err != nil {
		return limitsView{}, fmt.Errorf("counting messages held by limits: %w", err)
	}
	v := limitsView{Counted: true}
	var total int64
	for _, l := range limitOrder {
		if n := sum.ByLimit[l]; n > 0 {
			total += n
			v.ByLimit = append(v.ByLimit, limitCount{Limit: l, Count: chart.Count(n)})
		}
	}
	v.Total = chart.Count(total)
	for _, u := range sum.Users {
		it := limitedUserItem{ConversationID: u.ConversationID, Name: u.DisplayName, Platform: string(u.Platform),
			Held: chart.Count(u.Held), Last: u.Last.In(s.loc).Format(timeLayout), LastAgo: words.Ago(u.Last, now)}
		if it.Name == "" {
			it.Name = u.ChannelUserID
		}
		for _, l := range limitOrder {
			if n := u.ByLimit[l]; n > 0 {
				it.Limits = append(it.Limits, limitCount{Limit: l, Count: chart.Count(n)})
			}
		}
		v.Users = append(v.Users, it)
	}
	return v, nil
}
