package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"

	"github.com/parleybot/parley/core/modeltext"
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
	maxTokens := c.maxTokens(req)
	x := &exchange{c: c, tools: tools, msgs: toOpenAIMessages(req.Messages)}
	p := newPartials(req.OnPartial)
	for {
		offer := apiTools
		if x.res.Rounds >= maxRounds {
			offer = nil
		}
		resp, err := c.create(ctx, model, x.msgs, offer, maxTokens, p)
		if err != nil {
			return x.res, err
		}
		x.forgetReadOnce()
		reply, refusal := x.answered(resp, model)
		if len(reply.ToolCalls) == 0 || len(offer) == 0 {
			// A final answer. Tool calls the model made without being
			// offered tools are dropped: nothing would answer them.
			reply.ToolCalls = nil
			x.res.Content = reply.Content
			x.res.Refusal = refusal
			x.res.Appended = append(x.res.Appended, reply)
			return x.res, nil
		}
		if err := x.runTools(ctx, reply); err != nil {
			return x.res, err
		}
	}
}

// exchange is one Run's conversation with the model: what is sent to it,
// and the Result so far.
type exchange struct {
	c     *Client
	tools toolSet
	msgs  []openai.ChatCompletionMessage
	res   Result
	// pending are the read-once tool results the model has not yet
	// answered after.
	pending []readOnce
}

// readOnce is a read-once tool result: its msgs index and what replaces
// it once the model has answered after it.
type readOnce struct {
	at          int
	placeholder string
}

// forgetReadOnce replaces the read-once results the model has now
// answered after with their placeholders.
func (x *exchange) forgetReadOnce() {
	for _, p := range x.pending {
		x.msgs[p.at].Content = p.placeholder
	}
	x.pending = x.pending[:0]
}

// answered adds the model's answer to the result (usage, model, finish
// reason, reasoning) and returns it as a message, with its refusal.
func (x *exchange) answered(resp openai.ChatCompletionResponse, model string) (Message, string) {
	x.res.Usage = x.res.Usage.Add(fromOpenAIUsage(resp.Usage))
	x.res.Model = answeredBy(resp, model)
	choice := resp.Choices[0]
	x.res.FinishReason = string(choice.FinishReason)
	x.res.Reasoning = joinReasoning(x.res.Reasoning, choice.Message.ReasoningContent)
	// The message carries no reasoning_content (see fromOpenAIMessage), so
	// what the model thought never goes back to it in later rounds.
	return fromOpenAIMessage(choice.Message), choice.Message.Refusal
}

// runTools runs a round of tool calls, reply, and adds it and the tools'
// results to what goes back to the model. It fails only when ctx ends.
func (x *exchange) runTools(ctx context.Context, reply Message) error {
	// Text beside tool calls may hold <think> blocks: they go to the
	// result's reasoning, not back to the model in the next round.
	var thought string
	reply.Content, thought = modeltext.StripReasoning(reply.Content)
	x.res.Reasoning = joinReasoning(x.res.Reasoning, thought)
	x.res.Rounds++
	x.add(reply)
	var images []Part
	for _, call := range reply.ToolCalls {
		if err := ctx.Err(); err != nil {
			return x.c.canceled(err)
		}
		out := x.c.execute(ctx, x.tools, call)
		x.res.ToolCalls = append(x.res.ToolCalls, out)
		x.add(Message{Role: RoleTool, Content: out.Result, ToolCallID: call.ID})
		if t, ok := x.tools.find(call.Name); ok && t.Placeholder != nil && !out.IsError {
			x.pending = append(x.pending, readOnce{at: len(x.msgs) - 1, placeholder: t.Placeholder(json.RawMessage(call.Arguments))})
		}
		if len(out.Images) > 0 {
			images = append(images, Part{Text: fmt.Sprintf("The image(s) %s (call %s) returned:", call.Name, call.ID)})
			for _, u := range out.Images {
				images = append(images, Part{ImageURL: u})
			}
		}
	}
	if len(images) > 0 {
		// After every tool message of the round: a tool message must
		// answer its call directly, and holds text only.
		x.add(Message{Role: RoleUser, Parts: images})
	}
	return nil
}

// add appends m to the result and to what goes back to the model.
func (x *exchange) add(m Message) {
	x.res.Appended = append(x.res.Appended, m)
	x.msgs = append(x.msgs, toOpenAIMessage(m))
}

// Complete sends req once without tools (req.Tools is ignored) and returns
// the model's answer; for summaries and fact extraction.
func (c *Client) Complete(ctx context.Context, req Request) (Result, error) {
	model, err := c.model(req)
	if err != nil {
		return Result{}, err
	}
	resp, err := c.create(ctx, model, toOpenAIMessages(req.Messages), nil, c.maxTokens(req), nil)
	if err != nil {
		return Result{}, err
	}
	choice := resp.Choices[0]
	reply := fromOpenAIMessage(choice.Message)
	reply.ToolCalls = nil
	return Result{
		Content:      reply.Content,
		Reasoning:    choice.Message.ReasoningContent,
		Refusal:      choice.Message.Refusal,
		Appended:     []Message{reply},
		Usage:        fromOpenAIUsage(resp.Usage),
		Model:        answeredBy(resp, model),
		FinishReason: string(choice.FinishReason),
	}, nil
}

// answeredBy is the model a response names (servers resolve aliases:
// "gpt-4o" answers as "gpt-4o-2024-08-06"), else the one asked for.
func answeredBy(resp openai.ChatCompletionResponse, asked string) string {
	if resp.Model != "" {
		return resp.Model
	}
	return asked
}

// joinReasoning appends one round's reasoning to the turn's, a blank line
// between rounds.
func joinReasoning(all, round string) string {
	switch {
	case round == "":
		return all
	case all == "":
		return round
	default:
		return all + "\n\n" + round
	}
}

// maxTokens is the completion bound for req: its own, else the client's.
func (c *Client) maxTokens(req Request) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return c.cfg.MaxTokens
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

// create sends one chat completion request (retried by the transport),
// streamed when p is set, checks that the answer has a choice, and
// records the outcome: the client's health and the finish reason.
func (c *Client) create(ctx context.Context, model string, msgs []openai.ChatCompletionMessage, tools []openai.Tool, maxTokens int, p *partials) (openai.ChatCompletionResponse, error) {
	resp, err := c.send(ctx, model, msgs, tools, maxTokens, p)
	c.recordHealth(err)
	if err == nil && c.cfg.OnFinish != nil {
		reason := string(resp.Choices[0].FinishReason)
		if reason == "" {
			reason = "unknown"
		}
		c.cfg.OnFinish(model, reason)
	}
	return resp, err
}

// Token bound fields of a chat completion request.
const (
	fieldMaxTokens           = "max_tokens"
	fieldMaxCompletionTokens = "max_completion_tokens"
)

// send sends the request with the token bound in the field the server
// takes. When the server refuses that field as unsupported, it switches the
// client to the other one and sends the request again, once, at once.
func (c *Client) send(ctx context.Context, model string, msgs []openai.ChatCompletionMessage, tools []openai.Tool, maxTokens int, p *partials) (openai.ChatCompletionResponse, error) {
	req := openai.ChatCompletionRequest{Model: model, Messages: msgs, Tools: tools}
	if p != nil {
		// Usage comes in a last chunk only when asked for.
		req.Stream, req.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	}
	// go-openai refuses max_tokens for its reasoning models before sending,
	// so for them there is no choice to make or remember.
	forced := maxTokens > 0 && refusesMaxTokens(model)
	// The budgets are charged in the transport, per attempt; only the
	// client sees the request's shape to estimate its tokens, and the
	// answer's usage to correct them.
	var pace *pacing
	if c.lim.paced() {
		pace = &pacing{}
		if c.lim.tokens != nil {
			pace.tokens = estimateTokens(msgs, tools, maxTokens)
		}
		ctx = withPacing(ctx, pace)
	}
	for retried, reshaped := false, false; ; {
		completion := forced || c.completionFor(model)
		setMaxTokens(&req, completion, maxTokens)
		shape := c.shapeFor(model)
		req.Messages = inShape(msgs, shape)
		actx, attempts := withAttempts(ctx)
		sent, actx := c.enc.Presplice(actx, req)
		resp, err := c.ask(actx, sent, attempts, p)
		if err == nil && pace != nil {
			c.lim.settle(pace.tokens, resp.Usage)
		}
		if err != nil {
			field := fieldMaxTokens
			if completion {
				field = fieldMaxCompletionTokens
			}
			if maxTokens > 0 && !forced && !retried && ctx.Err() == nil && refusesField(err, field) {
				if prev, _ := c.flipped.Swap(model, !completion); prev != !completion {
					c.log.WarnContext(ctx, "llm: the server does not take this token bound field for this model; using the other for it from now on",
						"refused", field, "model", model)
				}
				retried = true
				continue
			}
			if need := rolesRefusal(err); need > shape && !reshaped && ctx.Err() == nil {
				c.shapes.Store(model, need)
				c.log.WarnContext(ctx, "llm: the model's chat template refuses roles that do not alternate; its conversations are sent in the strict shape from now on",
					"model", model, "refusal", c.redact.clean(err.Error()))
				reshaped = true
				continue
			}
			return resp, c.convertError(ctx, "chat completion", err, int(attempts.Load()))
		}
		if len(resp.Choices) == 0 {
			return resp, &Error{Message: "llm: response has no choices", StatusCode: http.StatusOK, health: HealthServerError}
		}
		return resp, nil
	}
}

// ask sends req once, retries aside: streamed when p is set.
func (c *Client) ask(ctx context.Context, req openai.ChatCompletionRequest, attempts *atomic.Int32, p *partials) (openai.ChatCompletionResponse, error) {
	if p != nil {
		return c.streamed(ctx, req, attempts, p)
	}
	return c.api.CreateChatCompletion(ctx, req)
}

// setMaxTokens puts the bound n in the field chosen, and clears the other.
func setMaxTokens(req *openai.ChatCompletionRequest, completion bool, n int) {
	req.MaxTokens, req.MaxCompletionTokens = 0, 0 //lint:ignore SA1019 local servers take only max_tokens
	if completion {
		req.MaxCompletionTokens = n
	} else {
		req.MaxTokens = n //lint:ignore SA1019 local servers take only max_tokens
	}
}

// refusesMaxTokens reports whether go-openai rejects max_tokens for model
// (its ReasoningValidator: o1*, o3*, o4*, gpt-5*, the GPT-6 ids). Asking the
// validator itself keeps this in step with the library.
func refusesMaxTokens(model string) bool {
	//lint:ignore SA1019 asking whether the library refuses the deprecated field
	err := openai.NewReasoningValidator().Validate(openai.ChatCompletionRequest{Model: model, MaxTokens: 1})
	return errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated)
}

// refusesField reports whether err is a server's refusal of the request
// because it carried field, e.g. OpenAI's 400 "Unsupported parameter:
// 'max_tokens' is not supported with this model. Use
// 'max_completion_tokens' instead." (and the reverse), or a 422 "Extra
// inputs are not permitted" for it. A 400 about the field's value ("too
// large") is not a refusal of the field.
func refusesField(err error, field string) bool {
	msg, param, errCode, ok := badRequest(err)
	if !ok {
		return false
	}
	if param != "" && param != field {
		return false
	}
	if errCode == "unsupported_parameter" && param == field {
		return true
	}
	// The field named first is the one complained about: "'max_tokens' is
	// not supported ... Use 'max_completion_tokens' instead".
	msg = strings.ToLower(msg)
	if firstField(msg) != field {
		return false
	}
	for _, phrase := range []string{"unsupported", "not supported", "not permitted", "unrecognized", "unknown"} {
		if strings.Contains(msg, phrase) {
			return true
		}
	}
	return false
}

// firstField returns whichever token bound field msg names first, or "".
// Neither name contains the other, so plain substring search is exact.
func firstField(msg string) string {
	i := strings.Index(msg, fieldMaxTokens)
	j := strings.Index(msg, fieldMaxCompletionTokens)
	switch {
	case i < 0 && j < 0:
		return ""
	case j < 0 || (i >= 0 && i < j):
		return fieldMaxTokens
	default:
		return fieldMaxCompletionTokens
	}
}

// badRequest reads a server's 400 or 422 refusal of a request: its
// message, and the param and code of OpenAI's error object (empty from a
// server that answers without one, as vLLM's template errors); ok is
// false for any other error.
func badRequest(err error) (msg, param, code string, ok bool) {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	status := 0
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
		if apiErr.Param != nil {
			param = *apiErr.Param
		}
		code, _ = apiErr.Code.(string)
	case errors.As(err, &reqErr):
		status, msg = reqErr.HTTPStatusCode, string(reqErr.Body)
	}
	if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
		return "", "", "", false
	}
	return msg, param, code, true
}
