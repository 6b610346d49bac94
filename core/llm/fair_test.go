package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Two bots on one provider account share its limits: with one request in
// flight allowed, bob's one request goes after at most one more of ada's
// three, not after all of them; and the two never have more in flight
// than the one the account allows.
func TestClientsSharingLimitsTakeTurns(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate) // a failed test lets the held requests go
	b := setup(t, func(c *llm.Config) { c.MaxConcurrency = 1 })
	b.srv.Respond(func(r llmtest.Request) llmtest.Response {
		<-gate
		return llmtest.Text("re: " + r.LastUserMessage())
	})
	bob, err := llm.New(llm.Config{BaseURL: b.srv.URL(), APIKey: apiKey, Model: "test-model", ShareLimits: b.client,
		MaxConcurrency: 50})
	require.NoError(t, err)

	done := make(chan string, 4)
	ask := func(c *llm.Client, text string) {
		go func() {
			res, err := c.Run(context.Background(), userSays(text))
			if err != nil {
				done <- err.Error()
				return
			}
			done <- res.Content
		}()
	}
	ask(b.client, "ada 1")
	b.srv.WaitRequests(t, 1, waitLimit)
	ask(b.client, "ada 2")
	require.Eventually(t, func() bool { return b.client.Waiting() == 1 }, waitLimit, time.Millisecond)
	ask(b.client, "ada 3")
	require.Eventually(t, func() bool { return b.client.Waiting() == 2 }, waitLimit, time.Millisecond)
	ask(bob, "bob 1")
	require.Eventually(t, func() bool { return bob.Waiting() == 1 }, waitLimit, time.Millisecond,
		"bob waits for the slot ada holds: the account's limit is one, not one each")
	require.Equal(t, 2, b.client.Waiting(), "each client counts its own requests")
	require.Equal(t, 1, b.client.InFlight())
	require.Zero(t, bob.InFlight())

	var order []string
	for i := range 4 {
		require.Len(t, b.srv.Requests(), i+1, "one request in flight at a time")
		order = append(order, b.srv.Requests()[i].LastUserMessage())
		gate <- struct{}{}
		<-done
		if i < 3 {
			b.srv.WaitRequests(t, i+2, waitLimit)
		}
	}
	require.Equal(t, []string{"ada 1", "ada 2", "bob 1", "ada 3"}, order)
}

// A request that gives up waiting for a slot leaves its place; one the slot
// reached as it gave up hands it on, so no slot is lost.
func TestAWaiterThatGivesUpLosesNoSlot(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate) // a failed test lets the held requests go
	b := setup(t, func(c *llm.Config) { c.MaxConcurrency = 1 })
	b.srv.Respond(func(r llmtest.Request) llmtest.Response {
		<-gate
		return llmtest.Text("re: " + r.LastUserMessage())
	})
	bob, err := llm.New(llm.Config{BaseURL: b.srv.URL(), APIKey: apiKey, Model: "test-model", ShareLimits: b.client})
	require.NoError(t, err)

	first := make(chan error, 1)
	go func() {
		_, err := b.client.Run(context.Background(), userSays("ada 1"))
		first <- err
	}()
	b.srv.WaitRequests(t, 1, waitLimit)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := bob.Run(ctx, userSays("bob gives up"))
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return bob.Waiting() == 1 }, waitLimit, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	require.Zero(t, bob.Waiting())
	gate <- struct{}{}
	require.NoError(t, <-first)

	// The slot is free for the next, at once.
	go func() { gate <- struct{}{} }()
	res, err := bob.Run(context.Background(), userSays("bob again"))
	require.NoError(t, err)
	require.Equal(t, "re: bob again", res.Content)
	require.Len(t, b.srv.Requests(), 2, "the request that gave up never went")
}
