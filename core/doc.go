// Package core holds Parley's contracts: the normalised model
// (conversations, messages, session records, runs, jobs), the interfaces
// adapters and plugins implement, the Host adapters are handed, the store's
// role interfaces, the clock and the registry. The engines that turn an
// inbound direct message into a run, an LLM turn and a reply live in
// package engine and below (docs/architecture.md).
//
// core imports no adapter, plugin or engine. Adapters hand InboundMessages
// to a Host; plugins contribute prompt layers, tools, output processing and
// turn observers through small optional interfaces that the engines find by
// type assertion.
//
// A conversation is cut into session records by the gap between messages
// (SessionPolicy). At a record's first turn the plugins' layers (L0–L4)
// are rendered and frozen on the record; every turn of the record reuses
// them, with the record's newest messages as L5. Output processors turn
// control tokens into a Reply's Silent, Continue and Proactive; a
// proactive request becomes a job that the job loop turns into a proactive
// run at its time (ProactivePolicy decides when).
package core
