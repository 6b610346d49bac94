package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// Run executes one turn: it sends req, runs the tools the model asks for and
// sends their results back, until the model answers in text. After
// MaxToolRounds rounds of tool calls it asks once more without tools, so the
// model must answer in text; calls in that last answer are not executed.
// Tool failures are reported to the model and never fail the turn; an error
// (always an *Error) is returned only when a request to the server fails or
// ctx ends, together with the partial Result: the tools already executed may
// have had effects the caller wants to record.
func (c *Client) Run(ctx context.Context, req Request) (Result, error) {
	model, err := c.model(req)
	if err != nil {
		return Result{}, err
	}
	tools, err := indexTools(req.Tools)
	if err != nil {
		return Result{}, err
	}
	maxRounds := req.MaxToolRounds
	if maxRounds <= 0 {
		maxRounds = c.cfg.MaxToolRounds
	}
	apiTools := toOpenAITools(req.Tools)
	msgs := toOpenAIMessages(req.Messages)

	var res Result
	// readOnce are the read-once tool results the model has not yet
	// answered after: msgs index and placeholder.
	type readOnce struct {
		at          int
		placeholder string
	}
	var pending []readOnce
	for {
		offer := apiTools
		if res.Rounds >= maxRounds {
			offer = nil
		}
		resp, err := c.create(ctx, model, msgs, offer)
		if err != nil {
			return res, err
		}
		for _, p := range pending {
			msgs[p.at].Content = p.placeholder
		}
		pending = pending[:0]
		res.Usage = res.Usage.Add(fromOpenAIUsage(resp.Usage))
		choice := resp.Choices[0]
		reply := fromOpenAIMessage(choice.Message)
		res.FinishReason = string(choice.FinishReason)

		if len(reply.ToolCalls) == 0 || len(offer) == 0 {
			// A final answer. Tool calls the model made without being
			// offered tools are dropped: nothing would answer them.
			reply.ToolCalls = nil
			res.Content = reply.Content
			res.Appended = append(res.Appended, reply)
			return res, nil
		}

		res.Rounds++
		res.Appended = append(res.Appended, reply)
		msgs = append(msgs, toOpenAIMessage(reply))
		for _, call := range reply.ToolCalls {
			if err := ctx.Err(); err != nil {
				return res, c.canceled(err)
			}
			out := c.execute(ctx, tools, call)
			res.ToolCalls = append(res.ToolCalls, out)
			toolMsg := Message{Role: RoleTool, Content: out.Result, ToolCallID: call.ID}
			res.Appended = append(res.Appended, toolMsg)
			msgs = append(msgs, toOpenAIMessage(toolMsg))
			if t, ok := tools[call.Name]; ok && t.Placeholder != nil && !out.IsError {
				pending = append(pending, readOnce{at: len(msgs) - 1, placeholder: t.Placeholder(json.RawMessage(call.Arguments))})
			}
		}
	}
}

// Complete sends req once without tools (req.Tools is ignored) and returns
// the model's answer; for summaries and fact extraction.
func (c *Client) Complete(ctx context.Context, req Request) (Result, error) {
	model, err := c.model(req)
	if err != nil {
		return Result{}, err
	}
	resp, err := c.create(ctx, model, toOpenAIMessages(req.Messages), nil)
	if err != nil {
		return Result{}, err
	}
	choice := resp.Choices[0]
	reply := fromOpenAIMessage(choice.Message)
	reply.ToolCalls = nil
	return Result{
		Content:      reply.Content,
		Appended:     []Message{reply},
		Usage:        fromOpenAIUsage(resp.Usage),
		FinishReason: string(choice.FinishReason),
	}, nil
}

func (c *Client) model(req Request) (string, error) {
	if req.Model != "" {
		return req.Model, nil
	}
	if c.cfg.Model != "" {
		return c.cfg.Model, nil
	}
	return "", &Error{Message: "llm: no model: set Config.Model or Request.Model"}
}

// create sends one chat completion request (retried by the transport) and
// checks that the answer has a choice.
func (c *Client) create(ctx context.Context, model string, msgs []openai.ChatCompletionMessage, tools []openai.Tool) (openai.ChatCompletionResponse, error) {
	actx, attempts := withAttempts(ctx)
	resp, err := c.api.CreateChatCompletion(actx, openai.ChatCompletionRequest{
		Model:    model,
		Messages: msgs,
		Tools:    tools,
	})
	if err != nil {
		return resp, c.convertError(ctx, err, int(attempts.Load()))
	}
	if len(resp.Choices) == 0 {
		return resp, &Error{Message: "llm: response has no choices", StatusCode: http.StatusOK}
	}
	return resp, nil
}

// convertError turns whatever go-openai or the transport returned into an
// *Error without the API key.
func (c *Client) convertError(ctx context.Context, err error, attempts int) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return c.canceled(ctxErr)
	}
	if e, ok := asError(err); ok {
		return e
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return c.statusError(apiErr.HTTPStatusCode, apiErr.HTTPStatus, apiErr.Message, attempts, err)
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return c.statusError(reqErr.HTTPStatusCode, reqErr.HTTPStatus, string(reqErr.Body), attempts, err)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{
			StatusCode: http.StatusOK,
			Message:    "llm: malformed response: " + c.redact.clean(err.Error()),
			Err:        c.redact.wrap(err),
		}
	}
	return &Error{Message: "llm: chat completion: " + c.redact.clean(err.Error()), Err: c.redact.wrap(err)}
}

func (c *Client) statusError(code int, status, msg string, attempts int, err error) error {
	if status == "" {
		status = fmt.Sprintf("%d %s", code, http.StatusText(code))
	}
	text := fmt.Sprintf("llm: %s%s", status, attemptsText(attempts))
	if msg != "" {
		text += ": " + c.redact.clean(msg)
	}
	return &Error{
		StatusCode: code,
		Message:    text,
		Retryable:  retryableStatus(code),
		Err:        c.redact.wrap(err),
	}
}

func (c *Client) canceled(err error) error {
	return &Error{Message: "llm: request canceled: " + err.Error(), Err: err}
}
