package llm

import (
	"context"
	"net/http"
	"slices"
)

// Models lists the ids of the models the server offers (GET
// {BaseURL}/models), sorted, for `parley doctor`. Its errors are *Error
// values like Complete's, without the key: StatusCode 401 or 403 for a
// refused key, 0 when the server could not be reached. Not every
// OpenAI-compatible server has the endpoint; one without it answers 404
// (or 405, 501). Listing is not a chat call: it leaves Health as it was.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	actx, attempts := withAttempts(ctx)
	list, err := c.api.ListModels(actx)
	if err != nil {
		return nil, c.convertError(ctx, "listing models", err, int(attempts.Load()))
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// NoModelList reports whether err, from Models, says the server has no
// model list (404, 405 or 501), as some OpenAI-compatible servers have
// none; the way to learn whether a model exists is then to ask it.
func NoModelList(err error) bool {
	e, ok := asError(err)
	if !ok {
		return false
	}
	switch e.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}
