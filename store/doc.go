// Package store is Parley's persistence: conversations, messages, session
// records, runs and jobs on gorm, over SQLite (the default, one file) or
// PostgreSQL (several processes sharing one database).
//
// Store implements core.Store. Every query is hand-written SQL run through
// gorm, so each statement is exactly what the indexes were built for: the
// hot path of a turn (RecordInbound, ClaimRun, RecentMessages, CompleteRun)
// is a handful of statements, each served by one index.
//
// Store is made of role types (RunQueue, JobQueue, Directory, MessageLog,
// Sessions, ...) that share its database handles; it embeds them all, so
// st.ClaimRun works, and a caller that needs one role can take only it.
//
// Several bots share one database: each conversation, and the runs and
// jobs of it, belong to a bot, and Store.ForBot is that bot's view (Open's
// Store is the "default" bot's; AllBots sees every bot's). See bots.go.
//
// The schema is versioned (Migrate, SchemaVersion): each migration is
// explicit SQL per dialect, applied once in its own transaction and recorded
// in schema_migrations.
//
// Concurrency rests on the database, not on process memory:
//   - a conversation's message seq comes from conversations.last_seq, bumped
//     with UPDATE ... RETURNING in the transaction that inserts the message;
//   - partial unique indexes allow at most one queued and one running run per
//     conversation, so planners upsert onto the queued run and claimers can
//     never run two turns of one conversation at once;
//   - a run is completed only while it is still running for its owner.
//
// Times are stored in UTC with microsecond precision and returned in UTC.
package store
