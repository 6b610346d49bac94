package memory

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/vectors"
)

// pgvector is PostgreSQL's vector search (the pgvector extension), used
// when the database has it: each vector is kept in the embeddings row's
// embedding column too, and each model's vectors get an HNSW index of
// their own (a partial index on the column cast to the model's
// dimensions: one column holds vectors of several lengths only so). The
// extension's objects are named with its schema, wherever it was
// installed, whatever the connection's search_path.
type pgvector struct {
	schema string // quoted
	// indexed is the models whose HNSW index exists.
	mu      sync.Mutex
	indexed map[string]bool
	// exactBelow is exactBelow, lowered by tests to take the index.
	exactBelow int64
}

// PgvectorState says whether PostgreSQL's pgvector serves the search, for
// doctor and the start's log.
type PgvectorState struct {
	// Used is true when vectors are searched by pgvector.
	Used bool
	// Why says why not (empty when used or on SQLite).
	Why string
}

// detectPgvector finds pgvector in the database, installing it when the
// server has it and the role may; nil (with why) when it is not there.
func detectPgvector(ctx context.Context, db core.Database) (*pgvector, string, error) {
	if db.Dialect() != core.DialectPostgres {
		return nil, "", nil
	}
	schema, err := pgvectorSchema(ctx, db)
	if err != nil {
		return nil, "", err
	}
	if schema == "" {
		var available int
		if err := db.Read(ctx).Raw(`SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'`).Scan(&available).Error; err != nil {
			return nil, "", fmt.Errorf("memory: looking for pgvector: %w", err)
		}
		if available == 0 {
			return nil, "the PostgreSQL server has no pgvector extension", nil
		}
		if err := db.Read(ctx).Exec(`CREATE EXTENSION IF NOT EXISTS vector`).Error; err != nil {
			return nil, "pgvector is on the server but not in this database, and creating it failed (" + oneLine(err.Error()) +
				"): run CREATE EXTENSION vector as a superuser", nil
		}
		if schema, err = pgvectorSchema(ctx, db); err != nil || schema == "" {
			return nil, "pgvector could not be found after creating it", err
		}
	}
	pv := &pgvector{schema: `"` + strings.ReplaceAll(schema, `"`, `""`) + `"`, indexed: map[string]bool{}, exactBelow: exactBelow}
	if err := db.Read(ctx).Exec(`ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS embedding ` + pv.schema + `.vector`).Error; err != nil {
		return nil, "", fmt.Errorf("memory: adding the pgvector column: %w", err)
	}
	return pv, "", nil
}

func pgvectorSchema(ctx context.Context, db core.Database) (string, error) {
	var schema []string
	err := db.Read(ctx).Raw(`SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'`).
		Scan(&schema).Error
	if err != nil {
		return "", fmt.Errorf("memory: looking for pgvector: %w", err)
	}
	if len(schema) == 0 {
		return "", nil
	}
	return schema[0], nil
}

// literal is v as pgvector's text form.
func literal(v []float32) string {
	b := make([]byte, 0, len(v)*10+2)
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', 7, 32)
	}
	return string(append(b, ']'))
}

// value is the embedding column's value of a stored vector.
func (pv *pgvector) value(vec []byte) (string, error) {
	v, err := vectors.Decode(vec)
	if err != nil {
		return "", err
	}
	return literal(v), nil
}

// fill writes the embedding column of up to limit of the bot's vectors of
// model that lack it (kept before pgvector was installed), in one
// transaction; it reports how many it wrote and their length.
func (pv *pgvector) fill(ctx context.Context, db core.Database, bot, model string, limit int) (n, dims int, err error) {
	var rows []storedVec
	err = db.Read(ctx).Raw(`SELECT e.id, e.vec FROM embeddings e JOIN conversations c ON c.id = e.conversation_id
		WHERE c.bot_id = ? AND e.model = ? AND e.embedding IS NULL ORDER BY e.id LIMIT ?`, bot, model, limit).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return 0, 0, err
	}
	err = db.Write(ctx, func(tx *gorm.DB) error {
		for _, r := range rows {
			v, err := vectors.Decode(r.Vec)
			if err != nil {
				return fmt.Errorf("vector %d: %w", r.ID, err)
			}
			dims = len(v)
			if err := tx.Exec(`UPDATE embeddings SET embedding = CAST(? AS `+pv.schema+`.vector) WHERE id = ?`, literal(v), r.ID).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("memory: giving pgvector the vectors kept before it: %w", err)
	}
	return len(rows), dims, nil
}

// ensureIndex creates model's HNSW index for vectors of dims, once: a
// search of one conversation's vectors walks it (iteratively, skipping
// other conversations' rows) when the planner finds it cheaper than
// reading them all.
func (pv *pgvector) ensureIndex(ctx context.Context, db core.Database, model string, dims int, log *slog.Logger) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if pv.indexed[model] {
		return
	}
	q := pv.indexStatement(model, dims)
	if err := db.Read(ctx).Exec(q).Error; err != nil {
		log.Warn("memory: creating the pgvector index failed; searches read the conversation's vectors instead", "model", model, "err", err)
		return
	}
	pv.indexed[model] = true
}

// indexStatement creates model's HNSW index for vectors of dims, unless
// it exists.
func (pv *pgvector) indexStatement(model string, dims int) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(model))
	name := fmt.Sprintf("embeddings_hnsw_%x", h.Sum64())
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON embeddings USING hnsw ((embedding::%s.vector(%d)) %s.vector_cosine_ops) WHERE model = '%s'`,
		name, pv.schema, dims, pv.schema, strings.ReplaceAll(model, "'", "''"))
}

// exactBelow is the conversation size (messages) under which its vectors
// are compared one by one rather than by walking the HNSW index. A walk
// for one conversation among a store's skips the other conversations'
// rows (the hybrid search's p95 was 30 ms for a user of 1,000 messages
// among 1,000,000) and misses some of the nearest; one by one PostgreSQL
// compares about 330 vectors of 256 dimensions a millisecond (300 ms for
// 100,000), so 2,000 cost some 6 ms, exactly.
const exactBelow = 2_000

// search is the conversation's k vectors of model nearest to q with a
// cosine similarity of at least min.
func (pv *pgvector) search(ctx context.Context, db core.Database, conversationID int64, model string, q []float32, k int, min float32) ([]vectors.Hit, error) {
	cast := fmt.Sprintf(`%s.vector(%d)`, pv.schema, len(q))
	dist := `(embedding::` + cast + ` OPERATOR(` + pv.schema + `.<=>) CAST(? AS ` + cast + `))`
	mine := `conversation_id = ? AND model = ? AND embedding IS NOT NULL AND ` + pv.schema + `.vector_dims(embedding) = ?`
	var hits []vectors.Hit
	lit := literal(q)
	err := db.Read(ctx).Transaction(func(tx *gorm.DB) error {
		var size int64
		if err := tx.Raw(`SELECT last_seq FROM conversations WHERE id = ?`, conversationID).Row().Scan(&size); err != nil {
			return err
		}
		query := `WITH mine AS MATERIALIZED (SELECT id, embedding FROM embeddings WHERE ` + mine + `)
			SELECT id, 1 - ` + dist + ` AS score FROM mine ORDER BY ` + dist + ` LIMIT ?`
		args := []any{conversationID, model, len(q), lit, lit, k}
		if size >= pv.exactBelow {
			// Iterative scans go on past the rows of other conversations
			// instead of returning fewer than k; the default 40
			// candidates lose some of the k nearest among them.
			if err := tx.Exec(`SET LOCAL hnsw.iterative_scan = relaxed_order`).Error; err != nil {
				return err
			}
			if err := tx.Exec(`SET LOCAL hnsw.ef_search = 100`).Error; err != nil {
				return err
			}
			query = `SELECT id, 1 - ` + dist + ` AS score FROM embeddings WHERE ` + mine + ` ORDER BY ` + dist + ` LIMIT ?`
			args = []any{lit, conversationID, model, len(q), lit, k}
		}
		rows, err := tx.Raw(query, args...).Rows()
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var h vectors.Hit
			var score float64
			if err := rows.Scan(&h.ID, &score); err != nil {
				return err
			}
			if h.Score = float32(score); h.Score >= min {
				hits = append(hits, h)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("memory: searching with pgvector: %w", err)
	}
	return hits, nil
}
