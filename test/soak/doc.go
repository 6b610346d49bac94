// Package soak is Parley's fault suite (issue 12, part 2): it proves that
// scheduled messages are neither lost nor sent twice when `parley run`
// processes are killed with SIGKILL while the platforms answer with rate
// limits and server errors.
//
// The tests build the real binary once, run replicas as separate processes
// against one store (three on PostgreSQL, or one on SQLite), and point them
// at the fake Telegram and Discord servers of adapters/*/…test, which run in
// the test process and inject 429s and 5xx. Message jobs are seeded through
// store with a unique text each; the fakes' records are then checked
// against the jobs table: every job sent or failed with a reason, no job
// lost, no duplicate on Discord (nonce), and at most
// scheduler.max_sends_in_doubt (4) Telegram duplicates per kill, each
// explained by a job the killed replica had in flight.
//
// The short form runs with every `go test ./...`; the long form (10,000
// jobs, 500 conversations) needs the build tag soak. See README.md.
package soak
