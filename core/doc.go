// Package core is Parley's domain and engine: the normalised model
// (conversations, messages, session records, runs, jobs), the contracts that
// adapters and plugins implement, and the dispatcher that turns an inbound
// direct message into a run, an LLM turn and a reply.
//
// core imports no adapter and no plugin. Adapters hand it InboundMessages
// through an InboundHandler; plugins contribute prompt layers, tools, output
// processing and turn observers through small optional interfaces that the
// dispatcher finds by type assertion.
package core
