package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Search finds messages and conversations by their words, and keeps the
// SQLite search index caught up with the writes.
type Search struct{ *dbs }

// Message search. Chinese, Japanese and Korean have no spaces between
// words, so a word tokenizer finds nothing in them. The store therefore
// writes its own tokens for each message: lower-case words for scripts
// with spaces, and for CJK runs every pair of neighbouring characters
// (bigrams) plus the run's last character, so that any character is the
// start of some token. A query is tokenized the same way and every token
// must match, as a prefix. SQLite keeps the tokens in an FTS4 table (no
// build tags: go-sqlite3 compiles FTS3/4 in), filled in batches behind the
// writes (IndexPending; a search first catches up, so it never misses a
// message); PostgreSQL in a tsvector column with a GIN index, written with
// the row. Both carry the conversation, so a search only ever reads one
// conversation's messages.

// maxIndexedBytes bounds the text of a message that is indexed.
const maxIndexedBytes = 16 << 10

// isCJK reports whether r is written without spaces between words.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// searchTokens splits text into the tokens the index keeps.
func searchTokens(text string) []string {
	if len(text) > maxIndexedBytes {
		text = text[:maxIndexedBytes]
		for len(text) > 0 && !utf8.ValidString(text[len(text)-1:]) && !utf8.RuneStart(text[len(text)-1]) {
			text = text[:len(text)-1]
		}
	}
	var out []string
	var word []rune
	var run []rune
	flushWord := func() {
		if len(word) > 0 {
			out = append(out, string(word))
			word = word[:0]
		}
	}
	flushRun := func() {
		for i := 0; i+1 < len(run); i++ {
			out = append(out, string(run[i:i+2]))
		}
		if len(run) > 0 {
			out = append(out, string(run[len(run)-1]))
		}
		run = run[:0]
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			run = append(run, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushRun()
			word = append(word, unicode.ToLower(r))
		default:
			flushWord()
			flushRun()
		}
	}
	flushWord()
	flushRun()
	return out
}

// queryTokens is searchTokens for a search: a CJK run of one character is
// searched as itself, of more as its bigrams (without the trailing
// unigram, which every bigram query already covers).
func queryTokens(keyword string) []string {
	var out []string
	for _, tok := range searchTokens(keyword) {
		if utf8.RuneCountInString(tok) == 1 && isCJK([]rune(tok)[0]) && len(out) > 0 {
			if last := []rune(out[len(out)-1]); len(last) == 2 && last[1] == []rune(tok)[0] {
				continue // the unigram closing a run: its bigram covers it
			}
		}
		out = append(out, tok)
	}
	return out
}

// indexed reports whether a message goes into the search index.
func indexed(m *core.Message) bool {
	return (m.Role == core.RoleUser || m.Role == core.RoleAssistant) && strings.TrimSpace(m.Content) != "" &&
		m.Metadata["failure_notice"] != true && m.Metadata["busy_notice"] != true && m.Metadata["limit_notice"] == nil
}

// indexMessage adds m to the SQLite search indexes: message_search, whose
// terms carry the conversation, and message_search_all, whose plain terms
// find the conversations any message of which holds a word (the owner's
// console; allDocID).
func (s *dbs) indexMessage(tx *gorm.DB, m *core.Message) error {
	if !indexed(m) {
		return nil
	}
	toks := searchTokens(m.Content)
	prefix := convPrefix(m.ConversationID)
	var body strings.Builder
	for i, t := range toks {
		if i > 0 {
			body.WriteByte(' ')
		}
		body.WriteString(prefix)
		body.WriteString(t)
	}
	if err := tx.Exec(`INSERT INTO message_search (docid, body) VALUES (?, ?)`, m.ID, body.String()).Error; err != nil {
		return fmt.Errorf("indexing message: %w", err)
	}
	if doc, ok := allDocID(m.ConversationID, m.ID); ok {
		// OR REPLACE: a search index rebuilt from scratch (migration 3
		// applied again) reads messages this one already holds.
		if err := tx.Exec(`INSERT OR REPLACE INTO message_search_all (docid, body) VALUES (?, ?)`,
			doc, strings.Join(toks, " ")).Error; err != nil {
			return fmt.Errorf("indexing message: %w", err)
		}
	}
	return nil
}

// allShift packs a message's conversation above its id in the docids of
// message_search_all, so the conversations a search finds come from the
// index alone, with no message read: for a common word that is tens of
// thousands of reads saved. Ids fit below 2^36 (68 billion messages) and
// conversations below 2^27 (134 million); a message beyond is not in that
// index.
const allShift = 36

// allDocID is the message_search_all docid of a message, and whether it
// has one.
func allDocID(conversationID, messageID int64) (int64, bool) {
	if messageID <= 0 || messageID >= 1<<allShift || conversationID <= 0 || conversationID >= 1<<(63-allShift) {
		return 0, false
	}
	return conversationID<<allShift | messageID, true
}

// unindexMessage takes a message out of the SQLite search indexes.
func unindexMessage(tx *gorm.DB, conversationID, messageID int64) error {
	if err := tx.Exec(`DELETE FROM message_search WHERE docid = ?`, messageID).Error; err != nil {
		return err
	}
	if doc, ok := allDocID(conversationID, messageID); ok {
		return tx.Exec(`DELETE FROM message_search_all WHERE docid = ?`, doc).Error
	}
	return nil
}

// indexBatch bounds the messages one IndexPending transaction reads.
const indexBatch = 2000

// IndexPending adds the messages stored since the last call to the
// search index, a batch per transaction, and returns how many it read. On
// SQLite indexing in every message's own write would cost a turn about a
// third of its speed; in batches it costs a fraction. PostgreSQL indexes
// each row as it is written, so there it does nothing.
func (s *Search) IndexPending(ctx context.Context) (int, error) {
	if !s.q.sqlite {
		return 0, nil
	}
	// Most calls find nothing new: look on a reader before taking the
	// write lock.
	var pending bool
	if err := s.r.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM messages
		WHERE id > (SELECT last_message_id FROM search_progress WHERE id = 1))`).Row().Scan(&pending); err != nil {
		return 0, fmt.Errorf("checking the search index: %w", err)
	}
	if !pending {
		return 0, nil
	}
	total := 0
	for {
		n := 0
		err := s.write(ctx, func(tx *gorm.DB) error {
			n = 0
			var after int64
			if err := tx.Raw(`SELECT last_message_id FROM search_progress WHERE id = 1`).Row().Scan(&after); err != nil {
				return err
			}
			batch, err := queryAll(tx, `SELECT `+messageCols+` FROM messages WHERE id > ? ORDER BY id LIMIT ?`,
				[]any{after, indexBatch}, messageDest)
			if err != nil || len(batch) == 0 {
				return err
			}
			for i := range batch {
				if err := s.indexMessage(tx, &batch[i]); err != nil {
					return err
				}
			}
			n = len(batch)
			return tx.Exec(`UPDATE search_progress SET last_message_id = ? WHERE id = 1`, batch[n-1].ID).Error
		})
		if err != nil {
			return total, fmt.Errorf("indexing messages for search: %w", err)
		}
		total += n
		if n < indexBatch {
			return total, nil
		}
	}
}

// convPrefix starts every SQLite index term of a conversation's messages
// ("c12x" then the token): a term's entries are one conversation's, so a
// search walks only them, however many messages the others hold. The x
// ends the digits: no other conversation's terms share the prefix.
func convPrefix(id int64) string { return "c" + strconv.FormatInt(id, 10) + "x" }

// SearchMessages returns up to limit of the conversation's messages that
// hold every word of keyword (a prefix of each), newest first. A keyword
// with nothing to search for is core.ErrEmptyQuery.
func (s *Search) SearchMessages(ctx context.Context, conversationID int64, keyword string, limit int) ([]core.Message, error) {
	toks := queryTokens(keyword)
	if len(toks) == 0 {
		return nil, core.ErrEmptyQuery
	}
	if len(toks) > 32 {
		toks = toks[:32]
	}
	if _, err := s.IndexPending(ctx); err != nil {
		return nil, err
	}
	db := s.r.WithContext(ctx)
	var q string
	var args []any
	if s.q.sqlite {
		var match strings.Builder
		prefix := convPrefix(conversationID)
		for i, t := range toks {
			if i > 0 {
				match.WriteByte(' ')
			}
			fmt.Fprintf(&match, "%s%s*", prefix, t)
		}
		q = `SELECT ` + messageCols + ` FROM messages WHERE id IN (
				SELECT docid FROM message_search WHERE message_search MATCH ? ORDER BY docid DESC LIMIT ?)
			AND conversation_id = ? ORDER BY seq DESC`
		args = []any{match.String(), limit, conversationID}
	} else {
		parts := make([]string, len(toks))
		for i, t := range toks {
			parts[i] = "'" + t + "':*"
		}
		// The matches are found first, then the newest kept: asked for
		// the newest matches at once, the planner walks the
		// conversation's messages newest first, testing each, and a rare
		// word in a long conversation read all of them (100,000 in
		// 150 ms). Found first, it takes the GIN index or, for a short
		// conversation, its messages, whichever its estimates say.
		q = `WITH hits AS MATERIALIZED (SELECT id, seq FROM messages WHERE conversation_id = ? AND search @@ to_tsquery('simple', ?))
			SELECT ` + messageCols + ` FROM messages WHERE id IN (SELECT id FROM hits ORDER BY seq DESC LIMIT ?) ORDER BY seq DESC`
		args = []any{conversationID, strings.Join(parts, " & "), limit}
	}
	var out []core.Message
	var err error
	if s.q.sqlite {
		out, err = queryAll(db, q, args, messageDest)
	} else {
		// Planned for its words each time: the cached statement's generic
		// plan cannot tell a rare word from a one-letter prefix, and
		// intersected every conversation's matches of the GIN index with
		// this one's messages (50 ms in a store of 1,000,000 where the
		// plan for the words reads the conversation's 1,000 in 0.3 ms).
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`SET LOCAL plan_cache_mode = force_custom_plan`).Error; err != nil {
				return err
			}
			out, err = queryAll(tx, q, args, messageDest)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("searching messages of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// backfillSearch indexes, on PostgreSQL, the messages stored before search
// existed (SQLite's IndexPending starts from the first message anyway).
func backfillSearch(s *dbs, tx *gorm.DB) error {
	if s.q.sqlite {
		return nil
	}
	var after int64
	for {
		// The columns of version 3, which this backfill belongs to.
		batch, err := queryAll(tx, `SELECT `+messageColsV3+` FROM messages WHERE id > ? ORDER BY id LIMIT 1000`,
			[]any{after}, messageDestV3)
		if err != nil {
			return fmt.Errorf("reading messages to index: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for i := range batch {
			m := &batch[i]
			after = m.ID
			if !indexed(m) {
				continue
			}
			if err := tx.Exec(`UPDATE messages SET search = to_tsvector('simple', ?) WHERE id = ?`,
				strings.Join(searchTokens(m.Content), " "), m.ID).Error; err != nil {
				return fmt.Errorf("indexing message %d: %w", m.ID, err)
			}
		}
	}
}

// SearchConversations finds the view's bot's conversations whose display name or
// channel user id holds q (ignoring case: on SQLite, of ASCII letters
// only), or with a message holding every word of q (as SearchMessages
// finds them: words as prefixes; a failure or busy notice is not
// searched), most recently active first (as ConversationsByActivity lists
// them); limit <= 0 lists them all. A q of only spaces is
// core.ErrEmptyQuery.
//
// The cost follows the number of matching messages. SQLite finds their
// conversations in message_search_all alone (see migration 10);
// PostgreSQL reads each matching message's row.
func (s *Search) SearchConversations(ctx context.Context, q string, limit, offset int) ([]core.Conversation, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, core.ErrEmptyQuery
	}
	if limit <= 0 {
		limit = math.MaxInt32
	}
	toks := queryTokens(q)
	if len(toks) > 32 {
		toks = toks[:32]
	}
	db := s.r.WithContext(ctx)
	pattern := "%" + likeEscaper.Replace(q) + "%"
	like := `LIKE` // SQLite's ignores the case of ASCII letters
	if !s.q.sqlite {
		like = `ILIKE`
	}
	where := `c.display_name ` + like + ` ? ESCAPE '\' OR c.channel_user_id ` + like + ` ? ESCAPE '\'`
	args := []any{pattern, pattern}
	switch {
	case len(toks) == 0:
	case s.q.sqlite:
		if _, err := s.IndexPending(ctx); err != nil {
			return nil, err
		}
		match := make([]string, len(toks))
		for i, t := range toks {
			match[i] = t + "*"
		}
		where += fmt.Sprintf(` OR c.id IN (SELECT docid >> %d FROM message_search_all WHERE message_search_all MATCH ?)`, allShift)
		args = append(args, strings.Join(match, " "))
	default:
		// The messages' own GIN index; each match's row is read for its
		// conversation.
		parts := make([]string, len(toks))
		for i, t := range toks {
			parts[i] = "'" + t + "':*"
		}
		where += ` OR c.id IN (SELECT conversation_id FROM messages WHERE search @@ to_tsquery('simple', ?))`
		args = append(args, strings.Join(parts, " & "))
	}
	cond, botArgs := s.botCond(`c.bot_id`)
	sqlq := `SELECT ` + conversationCols + ` FROM conversations c WHERE (` + where + `)` + cond + byActivity + ` LIMIT ? OFFSET ?`
	out, err := queryAll(db, sqlq, append(append(args, botArgs...), limit, max(offset, 0)), conversationDest)
	if err != nil {
		return nil, fmt.Errorf("searching conversations: %w", err)
	}
	return out, nil
}
