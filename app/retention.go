package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/loop"
	"github.com/parleybot/parley/store"
)

// retentionEvery is how often the store is looked at for messages past
// retention.messages once it has caught up.
const retentionEvery = time.Hour

// retentionPause is the rest between two batches while a backlog goes:
// each batch is one short write, and turns' writes go between them.
const retentionPause = 100 * time.Millisecond

// startRetention deletes, in the background, every bot's messages older
// than keep (retention.messages), a batch at a time; nil when keep is 0.
// Summaries and facts stay.
func startRetention(ctx context.Context, st *store.Store, keep time.Duration, clock core.Clock, log *slog.Logger) *loop.Loop {
	if keep <= 0 {
		return nil
	}
	var deleted int64
	return loop.Start(ctx, clock, nil, func(ctx context.Context) time.Duration {
		n, err := st.AllBots().DeleteMessagesBefore(ctx, clock.Now().Add(-keep), store.RetentionBatch)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("retention: deleting old messages failed; tried again later", "err", err)
			}
			return retentionEvery
		}
		deleted += n
		if n == store.RetentionBatch {
			return retentionPause
		}
		if deleted > 0 {
			log.Info("retention: old messages deleted", "messages", deleted, "older_than", keep.String())
			deleted = 0
		}
		return retentionEvery
	})
}
