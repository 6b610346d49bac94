package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Memory is the memory plugin's tables: the facts (facts.go) and the
// engines' work on facts and summaries (engines.go).
type Memory struct{ *dbs }

// Moods is the mood plugin's table (mood.go).
type Moods struct{ *dbs }

// What the chat commands (commands) need beyond the other queries.

// ForgetAllFacts deletes every fact of the conversation and returns how
// many there were. The messages the fact engine has not read yet are
// passed over too (facts_seq moves to last_seq): what the user said
// before asking to be forgotten is not read back into new facts.
func (s *Memory) ForgetAllFacts(ctx context.Context, conversationID int64) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`DELETE FROM facts WHERE conversation_id = ?`, conversationID)
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		return tx.Exec(`UPDATE conversations SET facts_seq = last_seq WHERE id = ?`, conversationID).Error
	})
	if err != nil {
		return 0, fmt.Errorf("forgetting the facts of conversation %d: %w", conversationID, err)
	}
	return int(n), nil
}
