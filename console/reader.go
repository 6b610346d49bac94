package console

import (
	"context"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/httpapi"
)

// reader reads what the console's pages show: the overview, the jobs, one
// job, a conversation. It only reads; the Console serves the pages,
// their live updates and the owner's actions.
type reader struct {
	store     Store
	facts     FactReader
	mood      core.MoodKeeper
	loc       *time.Location
	clock     core.Clock
	log       *slog.Logger
	health    func(ctx context.Context) []httpapi.Component
	prices    map[string]config.Price
	platforms []core.Platform
	// fetch, when set, downloads a user's file: the transcript links it.
	fetch FetchFunc
	// bots are the process's bots (nil: one, and store is its view).
	bots func() []Bot
	// pick is the bot a request picked (see forRequest).
	pick botPick
	// userData answers pairing codes and hands data over (nil: none).
	userData UserData
}
