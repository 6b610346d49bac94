// Package llm is Parley's client for OpenAI-compatible chat servers (OpenAI,
// Ollama at http://localhost:11434/v1, vLLM, …) and the tool-call loop that
// runs one turn of a conversation.
//
// A Client wraps go-openai. Retries live below it, in an http.RoundTripper:
// go-openai does not expose response headers, so only the transport can honour
// Retry-After; it retries 429, 5xx and connection errors with exponential
// backoff and jitter, and go-openai only ever sees the final response. Each
// HTTP attempt has its own timeout (Config.Timeout).
//
// Every attempt keeps to the provider's limits (limit.go): at most
// Config.MaxConcurrency requests in flight, each held until its answer is
// read; Config.RequestsPerMinute and Config.TokensPerMinute pace the
// attempts with token buckets (tokens estimated before a request goes and
// corrected by the usage it reports); and a 429 pauses every request of
// the client until its Retry-After (or the backoff), not just the one that
// got it. Waits end with the caller's context. Client.InFlight and
// Client.Waiting count the requests in flight and waiting.
//
// Client.Run sends the messages and tools, executes the tools the model asks
// for, feeds their results back and repeats, for at most MaxToolRounds rounds;
// then it asks once more without tools so the model must answer in text. A
// tool's failure (error, panic, unknown name, bad arguments) is reported to
// the model as the tool's result and never fails the turn. Client.Complete is
// a single request without tools, for summaries and fact extraction.
//
// With Request.OnPartial set, Run reads every completion as a stream
// (stream.go) and accumulates it into the response the non-streamed request
// returns, so tools, usage, limits and health take the same path; the
// request's slot is held until the stream ends. OnPartial hears the whole
// text of the current completion as it grows, and an empty text when a new
// completion begins. A stream that breaks mid-answer (cut, malformed, an
// error event, an end without finish_reason or [DONE]) is asked again whole,
// under the same retry budget as the transport's retries; when that runs
// out Run fails rather than return half an answer.
//
// Config.MaxTokens goes out as max_tokens, or as max_completion_tokens for
// api.openai.com and OpenAI's reasoning models; a server that answers 400
// "Unsupported parameter" for one gets the other, at once and from then on
// for that model.
// Result.Reasoning and Result.Refusal carry the reasoning_content and
// refusal the server returned; reasoning is never sent back to the model.
//
// A Message with Parts (text and images as data: URLs) goes out as a
// multi-part content array; without Parts, as plain Content.
//
// A Transcriber turns voice and audio into text through POST
// {base}/audio/transcriptions, sending the file as received, over the same
// retrying transport and with the same errors as a Client. A Speaker says
// text through POST {base}/audio/speech and returns Ogg Opus (what Telegram
// plays as a voice note); an Imager draws a prompt through POST
// {base}/images/generations and returns the picture (b64_json decoded).
// Both check the answer before returning it (an audio Content-Type and a
// whole Ogg Opus stream; base64 that decodes whole as an image) and bound
// its size (internal/output), so garbage is an *Error, never a file sent
// to a user.
//
// An Embedder turns texts into vectors through POST {base}/embeddings
// (256 inputs a request at most), checks that there is one vector per input
// and all of one length, and, sharing a Client's limits, is charged to its
// per-minute budgets as chat requests are.
//
// Client.Models lists the server's models (GET {base}/models), for `parley
// doctor`; NoModelList tells a server without that endpoint.
//
// Client.Health reports what the last finished call said about the server
// (ok, auth, unreachable, server_error, rate_limited); calls the caller
// cancelled do not count.
//
// Every error the package returns is an *Error; none contains the API key.
package llm
