// Package botmux serves the HTTP routes of a process's bots' adapters
// (webhooks, the web chat), each bot's on a mux of its own, so that a bot
// a reload adds or removes brings or takes its routes along.
package botmux

import (
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Mux hands a request to the bot whose routes serve it.
type Mux struct {
	mu    sync.RWMutex
	ids   []string
	muxes map[string]*http.ServeMux
}

// New returns a Mux serving no bot yet.
func New() *Mux { return &Mux{muxes: map[string]*http.ServeMux{}} }

// Set serves bot id's routes from mux.
func (m *Mux) Set(id string, mux *http.ServeMux) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.muxes[id]; !ok {
		m.ids = append(m.ids, id)
	}
	m.muxes[id] = mux
}

// Remove drops bot id's routes.
func (m *Mux) Remove(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.muxes, id)
	m.ids = slices.DeleteFunc(m.ids, func(s string) bool { return s == id })
}

// ServeHTTP hands req to the bot its path names (/webhooks/BOT/...), else
// to the first bot whose mux has a route for it: with a hundred bots, a
// webhook is not matched against a hundred muxes.
func (m *Mux) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if mux := m.find(req); mux != nil {
		// The mux itself serves it: it sets the path's values.
		mux.ServeHTTP(w, req)
		return
	}
	http.NotFound(w, req)
}

func (m *Mux) find(req *http.Request) *http.ServeMux {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if rest, ok := strings.CutPrefix(req.URL.Path, "/webhooks/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		if mux := m.muxes[id]; mux != nil && serves(mux, req) {
			return mux
		}
	}
	for _, id := range m.ids {
		if mux := m.muxes[id]; serves(mux, req) {
			return mux
		}
	}
	return nil
}

func serves(mux *http.ServeMux, req *http.Request) bool {
	_, pattern := mux.Handler(req)
	return pattern != ""
}
