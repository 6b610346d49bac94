// Package core is Parley's domain and engine: the normalised model
// (conversations, messages, session records, runs, jobs), the contracts that
// adapters and plugins implement, and the dispatcher that turns an inbound
// direct message into a run, an LLM turn and a reply.
//
// core imports no adapter and no plugin. Adapters hand it InboundMessages
// through an InboundHandler; plugins contribute prompt layers, tools, output
// processing and turn observers through small optional interfaces that the
// dispatcher finds by type assertion.
//
// A conversation is cut into session records by the gap between messages
// (SessionPolicy). At a record's first turn the plugins' layers (L0–L4)
// are rendered and frozen on the record; every turn of the record reuses
// them, with the record's newest messages as L5. Output processors turn
// control tokens into a Reply's Silent, Continue and Proactive; a
// proactive request becomes a job that the job loop turns into a proactive
// run at its time (ProactivePolicy decides when).
package core
