package store

import (
	"fmt"
	"regexp"
)

// DefaultBot is the id of the one bot of a config without bots:, and of
// every row of a database from before there were several (migration 18).
const DefaultBot = "default"

// botIDPattern is what a bot id may be: short, and safe in a metric
// label, a URL and a log line.
var botIDPattern = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// ValidBotID reports an error naming id when it is not a bot id
// ([a-z0-9_-]{1,32}).
func ValidBotID(id string) error {
	if !botIDPattern.MatchString(id) {
		return fmt.Errorf("bot id %q: want 1 to 32 of a-z, 0-9, _ and -", id)
	}
	return nil
}

// ForBot is the view of the database that belongs to bot id: the
// conversations its RecordInbound creates and finds (one per bot,
// platform and thread), and the conversations, runs, jobs and session
// records its lists, claims and next-due times see, are that bot's only.
// A lookup by primary key (Conversation, Run, Job, Messages of a
// conversation id...) is not scoped: the id names the row, and
// core.Conversation.BotID says whose it is.
//
// Every view shares the pools, the SQLite write batcher, the failure
// tracking and the clock of the Store it came from: it is cheap (no
// connection of its own), and closing any view closes them all. An id
// that is not valid (ValidBotID) panics: ids come from a validated config.
func (s *Store) ForBot(id string) *Store {
	if err := ValidBotID(id); err != nil {
		panic("store.ForBot: " + err.Error())
	}
	return newStore(&dbs{shared: s.shared, bot: id})
}

// AllBots is the view of every bot's rows at once, for the console and the
// HTTP API's lists across bots and for tools (doctor, the CLI) that look
// at the whole database: its lists, counts and claims take any bot's.
// It creates no conversation: RecordInbound and EnsureConversation on it
// fail, since a new conversation must belong to some bot.
func (s *Store) AllBots() *Store { return newStore(&dbs{shared: s.shared}) }

// Bot is the id of the bot whose view s is; "" for AllBots.
func (s *Store) Bot() string { return s.bot }

// errNoBot refuses to create a conversation on the AllBots view.
var errNoBot = fmt.Errorf("the all-bots view creates no conversation: use ForBot")

// botCond is the condition ANDed to a query that limits the rows whose
// bot_id is col to the view's bot, and its argument; nothing on AllBots.
func (s *dbs) botCond(col string) (string, []any) {
	if s.bot == "" {
		return "", nil
	}
	return ` AND ` + col + ` = ?`, []any{s.bot}
}

// convBotCond is botCond for a table without bot_id (messages, session
// records): its row's conversation, conversation_id of alias, is the
// view's bot's.
func (s *dbs) convBotCond(alias string) (string, []any) {
	if s.bot == "" {
		return "", nil
	}
	return ` AND EXISTS (SELECT 1 FROM conversations cb WHERE cb.id = ` + alias + `.conversation_id AND cb.bot_id = ?)`,
		[]any{s.bot}
}

// botOf is the subquery that gives a run or a job inserted for the
// conversation bound to its '?' the conversation's bot: runs and jobs
// carry it so that each bot's claims walk an index of its own.
const botOf = `(SELECT bot_id FROM conversations WHERE id = ?)`
