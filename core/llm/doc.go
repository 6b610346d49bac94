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
// Client.Run sends the messages and tools, executes the tools the model asks
// for, feeds their results back and repeats, for at most MaxToolRounds rounds;
// then it asks once more without tools so the model must answer in text. A
// tool's failure (error, panic, unknown name, bad arguments) is reported to
// the model as the tool's result and never fails the turn. Client.Complete is
// a single request without tools, for summaries and fact extraction.
//
// Every error the package returns is an *Error; none contains the API key.
package llm
