// Package modeltext reads what a model wrote before anything of it reaches
// a user, the database or a later prompt: its reasoning is taken out
// (StripReasoning), and its control tokens are read and stripped
// (ParseTokens), so that none of them, nor anything that looks like one,
// is ever shown. Clean does both for text the model wrote elsewhere (a
// scheduled message's text, a recurring job's instruction). Partial is
// what of an answer still being streamed may be shown so far: never more
// than Clean of the whole answer will show.
//
// The core runs both on every answer, whatever plugins are enabled; the
// control_tokens plugin decides whether the tokens are acted on. The
// package imports nothing of Parley.
package modeltext
