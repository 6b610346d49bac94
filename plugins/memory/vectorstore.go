package memory

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// embeddingsMigration is the plugin's vectors: one row per message or
// session summary and embedding model, deleted with what it embeds; the
// model each bot embeds with; and each conversation's progress
// (conversations.embedded_seq: the seq of the newest message embedded).
func embeddingsMigration() core.Migration {
	return core.Migration{
		Version: 2,
		Name:    "embeddings",
		Statements: []string{
			`CREATE TABLE IF NOT EXISTS embeddings (
				id {{id}},
				conversation_id {{bigint}} NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
				message_id {{bigint}} REFERENCES messages (id) ON DELETE CASCADE,
				record_id {{bigint}} REFERENCES session_records (id) ON DELETE CASCADE,
				model TEXT NOT NULL,
				vec {{blob}} NOT NULL,
				created_at {{time}} NOT NULL
			)`,
			// A search loads one conversation's vectors of one model, and
			// catches up on the rows after the last it loaded.
			`CREATE INDEX IF NOT EXISTS embeddings_conversation ON embeddings (conversation_id, model, id)`,
			`CREATE UNIQUE INDEX IF NOT EXISTS embeddings_message ON embeddings (message_id, model)`,
			`CREATE UNIQUE INDEX IF NOT EXISTS embeddings_record ON embeddings (record_id, model)`,
			`CREATE TABLE IF NOT EXISTS embedding_models (bot_id TEXT PRIMARY KEY, model TEXT NOT NULL)`,
		},
		Columns: []core.Column{{Table: "conversations", Name: "embedded_seq", Definition: "{{bigint}} NOT NULL DEFAULT 0"}},
	}
}

// embedAgainMigration makes an edit reach the vectors: when a message
// with a vector changes its text (an edit, a deletion emptying it), its
// vector goes at once (a search never finds the old words' meaning) and
// the message joins embed_again, which the pass embeds from. A trigger,
// so that every writer (the intake, the API, another replica) is heard;
// a queue with ids of its own, so that an edit made while the pass embeds
// the one before is not lost.
func embedAgainMigration() core.Migration {
	return core.Migration{
		Version: 3,
		Name:    "embed_again",
		Statements: []string{
			`CREATE TABLE IF NOT EXISTS embed_again (
				id {{id}},
				message_id {{bigint}} NOT NULL REFERENCES messages (id) ON DELETE CASCADE
			)`,
		},
		SQLite: []string{
			`CREATE TRIGGER IF NOT EXISTS messages_embed_again AFTER UPDATE OF content ON messages
			WHEN OLD.content IS NOT NEW.content AND EXISTS (SELECT 1 FROM embeddings WHERE message_id = NEW.id)
			BEGIN
				INSERT INTO embed_again (message_id) VALUES (NEW.id);
				DELETE FROM embeddings WHERE message_id = NEW.id;
			END`,
		},
		Postgres: []string{
			`CREATE OR REPLACE FUNCTION memory_embed_again() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF EXISTS (SELECT 1 FROM embeddings WHERE message_id = NEW.id) THEN
					INSERT INTO embed_again (message_id) VALUES (NEW.id);
					DELETE FROM embeddings WHERE message_id = NEW.id;
				END IF;
				RETURN NULL;
			END $$`,
			`DROP TRIGGER IF EXISTS messages_embed_again ON messages`,
			`CREATE TRIGGER messages_embed_again AFTER UPDATE OF content ON messages
			FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION memory_embed_again()`,
		},
	}
}

// vectorStore is the plugin's vectors on the store's database, for one
// bot: only its conversations are read or written.
type vectorStore struct {
	db  core.Database
	bot string
	// pv is PostgreSQL's pgvector when the database has it (see Start).
	pv *pgvector
}

// embedWork is a conversation's messages not embedded yet: from < seq <= to.
type embedWork struct {
	ConversationID int64
	From, To       int64
}

// vecRow is one vector to keep, of a message or of a record's summary.
type vecRow struct {
	ConversationID int64
	MessageID      int64
	RecordID       int64
	Vec            []byte
}

// useModel makes model the bot's embedding model. When it was another,
// that model's vectors go (vectors of two models are never compared) and
// every conversation of the bot is embedded again from its start.
func (s *vectorStore) useModel(ctx context.Context, model string, now time.Time) (changed bool, err error) {
	err = s.db.Write(ctx, func(tx *gorm.DB) error {
		var prev []string
		if err := tx.Raw(`SELECT model FROM embedding_models WHERE bot_id = ?`, s.bot).Scan(&prev).Error; err != nil {
			return err
		}
		if changed = len(prev) == 0 || prev[0] != model; !changed {
			return nil
		}
		if err := tx.Exec(`DELETE FROM embeddings WHERE model <> ? AND conversation_id IN (SELECT id FROM conversations WHERE bot_id = ?)`,
			model, s.bot).Error; err != nil {
			return err
		}
		if len(prev) > 0 {
			if err := tx.Exec(`UPDATE conversations SET embedded_seq = 0 WHERE bot_id = ?`, s.bot).Error; err != nil {
				return err
			}
		}
		if err := tx.Exec(`DELETE FROM embedding_models WHERE bot_id = ?`, s.bot).Error; err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO embedding_models (bot_id, model) VALUES (?, ?)`, s.bot, model).Error
	})
	if err != nil {
		return false, fmt.Errorf("memory: switching embeddings to %s: %w", model, err)
	}
	return changed, nil
}

// pending is up to limit of the bot's conversations with messages not
// embedded yet, read on a reader (the scan must not hold SQLite's writer).
func (s *vectorStore) pending(ctx context.Context, limit int) ([]embedWork, error) {
	var rows []struct{ ID, EmbeddedSeq, LastSeq int64 }
	err := s.db.Read(ctx).Raw(`SELECT id, embedded_seq, last_seq FROM conversations
		WHERE bot_id = ? AND last_seq > embedded_seq ORDER BY id LIMIT ?`, s.bot, limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("memory: looking for messages to embed: %w", err)
	}
	out := make([]embedWork, len(rows))
	for i, r := range rows {
		out[i] = embedWork{ConversationID: r.ID, From: r.EmbeddedSeq, To: r.LastSeq}
	}
	return out, nil
}

// save keeps the vectors of each conversation's messages in (From, To]
// and moves its progress to To, in one transaction. A conversation
// another process embedded meanwhile (its progress moved) keeps that
// process's vectors: both read the same messages, one writes them.
func (s *vectorStore) save(ctx context.Context, model string, done []embedWork, rows []vecRow, now time.Time) error {
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		for _, w := range done {
			res := tx.Exec(`UPDATE conversations SET embedded_seq = ? WHERE id = ? AND embedded_seq = ?`, w.To, w.ConversationID, w.From)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				continue
			}
			for _, r := range rows {
				if r.ConversationID != w.ConversationID {
					continue
				}
				if err := s.insert(tx, model, r, now); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: keeping %d vectors: %w", len(rows), err)
	}
	return nil
}

// insert keeps one vector, replacing one of the same message or record
// and model (an edit embedded again); the row gets a new id, so a search
// index holding the old one finds it gone.
func (s *vectorStore) insert(tx *gorm.DB, model string, r vecRow, now time.Time) error {
	if r.MessageID != 0 {
		if err := tx.Exec(`DELETE FROM embeddings WHERE message_id = ? AND model = ?`, r.MessageID, model).Error; err != nil {
			return err
		}
	} else if err := tx.Exec(`DELETE FROM embeddings WHERE record_id = ? AND model = ?`, r.RecordID, model).Error; err != nil {
		return err
	}
	if s.pv != nil {
		lit, err := s.pv.value(r.Vec)
		if err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO embeddings (conversation_id, message_id, record_id, model, vec, created_at, embedding)
			VALUES (?, ?, ?, ?, ?, ?, CAST(? AS `+s.pv.schema+`.vector))`,
			r.ConversationID, nullID(r.MessageID), nullID(r.RecordID), model, r.Vec, s.db.Time(now), lit).Error
	}
	return tx.Exec(`INSERT INTO embeddings (conversation_id, message_id, record_id, model, vec, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		r.ConversationID, nullID(r.MessageID), nullID(r.RecordID), model, r.Vec, s.db.Time(now)).Error
}

// againWork is an edited message to embed again.
type againWork struct {
	ID, MessageID, ConversationID int64
	Role, Source, Content         string
}

// editedMessages is up to limit of the bot's messages whose text changed
// since they were embedded, oldest edit first.
func (s *vectorStore) editedMessages(ctx context.Context, limit int) ([]againWork, error) {
	var out []againWork
	err := s.db.Read(ctx).Raw(`SELECT a.id, a.message_id, m.conversation_id, m.role, m.source, m.content FROM embed_again a
		JOIN messages m ON m.id = a.message_id JOIN conversations c ON c.id = m.conversation_id
		WHERE c.bot_id = ? ORDER BY a.id LIMIT ?`, s.bot, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("memory: looking for edited messages: %w", err)
	}
	return out, nil
}

// saveAgain keeps the new vectors of edited messages and takes their
// edits off the queue, in one transaction.
func (s *vectorStore) saveAgain(ctx context.Context, model string, done []againWork, rows []vecRow, now time.Time) error {
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		for _, r := range rows {
			if err := s.insert(tx, model, r, now); err != nil {
				return err
			}
		}
		for _, w := range done {
			if err := tx.Exec(`DELETE FROM embed_again WHERE id = ?`, w.ID).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: keeping %d edited messages' vectors: %w", len(rows), err)
	}
	return nil
}

// saveRecords keeps the vectors of session summaries.
func (s *vectorStore) saveRecords(ctx context.Context, model string, rows []vecRow, now time.Time) error {
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		for _, r := range rows {
			if err := s.insert(tx, model, r, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: keeping %d summary vectors: %w", len(rows), err)
	}
	return nil
}

// summaryWork is a session summary to embed.
type summaryWork struct {
	RecordID, ConversationID int64
	Summary                  string
}

// unembeddedSummaries is up to limit of the bot's summaries with no
// vector of model, with record ids above after (the caller walks them all
// once, after a start or a model change; new ones are embedded as made).
func (s *vectorStore) unembeddedSummaries(ctx context.Context, model string, after int64, limit int) ([]summaryWork, error) {
	var out []summaryWork
	err := s.db.Read(ctx).Raw(`SELECT r.id AS record_id, r.conversation_id, r.summary FROM session_records r
		JOIN conversations c ON c.id = r.conversation_id
		WHERE c.bot_id = ? AND r.id > ? AND r.summary <> ''
		  AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.record_id = r.id AND e.model = ?)
		ORDER BY r.id LIMIT ?`, s.bot, after, model, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("memory: looking for summaries to embed: %w", err)
	}
	return out, nil
}

// storedVec is a kept vector as a search index loads it.
type storedVec struct {
	ID  int64
	Vec []byte
}

// vectorsAfter is the conversation's vectors of model with ids above
// after, oldest first.
func (s *vectorStore) vectorsAfter(ctx context.Context, conversationID int64, model string, after int64) ([]storedVec, error) {
	rows, err := s.db.Read(ctx).Raw(`SELECT id, vec FROM embeddings WHERE conversation_id = ? AND model = ? AND id > ? ORDER BY id`,
		conversationID, model, after).Rows()
	if err != nil {
		return nil, fmt.Errorf("memory: reading the vectors of conversation %d: %w", conversationID, err)
	}
	defer func() { _ = rows.Close() }()
	var out []storedVec
	for rows.Next() {
		var v storedVec
		if err := rows.Scan(&v.ID, &v.Vec); err != nil {
			return nil, fmt.Errorf("memory: reading the vectors of conversation %d: %w", conversationID, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: reading the vectors of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// recalled is what a vector stands for: a message or a session summary.
type recalled struct {
	VectorID  int64
	MessageID int64
	RecordID  *int64
	Role      core.Role
	Source    core.Source
	Text      string
	At        time.Time
	Score     float32
}

// resolve reads what the conversation's vectors with the given ids stand
// for; ids with no row (deleted since they were loaded) are left out. The
// rows are found by id: the unary plus keeps the planner from walking the
// conversation's index instead (all its vectors) to check the scope.
func (s *vectorStore) resolve(ctx context.Context, conversationID int64, ids []int64) (map[int64]recalled, error) {
	out := map[int64]recalled{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Read(ctx).Raw(`SELECT e.id, COALESCE(m.id, 0), COALESCE(m.session_record_id, r.id), COALESCE(m.role, ''), COALESCE(m.source, ''),
			COALESCE(m.content, r.summary, ''), COALESCE(m.created_at, r.started_at)
		FROM embeddings e
		LEFT JOIN messages m ON m.id = e.message_id
		LEFT JOIN session_records r ON r.id = e.record_id
		WHERE e.id IN ? AND +e.conversation_id = ?`, ids, conversationID).Rows()
	if err != nil {
		return nil, fmt.Errorf("memory: reading what was found by meaning: %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var r recalled
		var role, source string
		if err := rows.Scan(&r.VectorID, &r.MessageID, &r.RecordID, &role, &source, &r.Text, s.db.ScanTime(&r.At)); err != nil {
			return nil, fmt.Errorf("memory: reading what was found by meaning: %w", err)
		}
		r.Role, r.Source = core.Role(role), core.Source(source)
		out[r.VectorID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: reading what was found by meaning: %w", err)
	}
	return out, nil
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}
