package attach_test

import (
	"testing"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/attach"
)

func TestPhotoSizeOverTheBotAPILimitIsSkipped(t *testing.T) {
	t.Parallel()
	sizes := []models.PhotoSize{
		{FileID: "small", Width: 90, FileSize: 1000},
		{FileID: "medium", Width: 1280, FileSize: 300_000},
		{FileID: "huge", Width: 10000, FileSize: attach.MaxBotAPIFile + 1},
	}
	require.Equal(t, "medium", attach.LargestPhoto(sizes).FileID)
	require.Equal(t, "huge", attach.LargestPhoto(sizes[2:]).FileID, "the only size, whatever its size")
	require.Equal(t, "big", attach.LargestPhoto([]models.PhotoSize{{FileID: "small"}, {FileID: "big"}}).FileID,
		"sizes not given: the last, the largest")
}
