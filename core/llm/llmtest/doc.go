// Package llmtest is a fake OpenAI-compatible server for tests.
//
// It speaks the real wire protocol over real HTTP (httptest): POST
// {base}/chat/completions, as JSON or, when the request asks for
// "stream": true, as server-sent events ending in "data: [DONE]"; GET
// {base}/models; and POST {base}/audio/transcriptions, answered from its own
// queue (EnqueueTranscription, WithTranscriber) and recorded apart
// (TranscriptionRequests); POST {base}/audio/speech (valid Ogg Opus, see
// OggOpus) and POST {base}/images/generations (b64_json of a PNG drawn from
// the prompt, see PNGFor), each scripted and recorded through its Endpoint
// (Server.Speech, Server.Images); and POST {base}/embeddings, whose
// deterministic vectors put chosen paraphrases near each other (Embedding,
// WithEmbedding). So the real go-openai client, and anything built on it such
// as llm.Client, can be pointed at it unchanged.
//
// A test scripts the model's answers in order with Enqueue (text, tool calls,
// error statuses, malformed bodies, slow answers), or installs a dynamic
// responder with Respond, and then inspects what reached the "model" with
// Requests or WaitRequests. Like a real server it honours max_tokens, and it
// can require an API key (WithAPIKey), refuse a token bound field
// (WithMaxTokensField) or answer slowly (WithLatency). A streamed answer's
// text can arrive word by word (WithWordDeltas), spread over a time
// (WithStreamDelay), released delta by delta by the test (WithDeltaGate), or
// break mid-answer (WithStreamCut, WithStreamEndEarly, WithStreamError). With nothing scripted
// the server answers 500 with "llmtest: no scripted response", so a test
// that forgets to script fails loudly instead of hanging.
package llmtest
