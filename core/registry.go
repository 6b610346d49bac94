package core

import (
	"fmt"
	"sort"
	"sync"
)

// Registry maps names to modules of one kind (plugins, adapters). Like
// caddy's RegisterModule it panics on an empty or duplicate name, because
// both are programming errors found at init.
type Registry[T any] struct {
	kind string
	mu   sync.RWMutex
	m    map[string]T
}

// NewRegistry returns an empty registry; kind names it in panics.
func NewRegistry[T any](kind string) *Registry[T] {
	return &Registry[T]{kind: kind, m: map[string]T{}}
}

// Register adds a module under name. It panics on an empty or taken name.
func (r *Registry[T]) Register(name string, v T) {
	if name == "" {
		panic(fmt.Sprintf("parley: %s registered with an empty name", r.kind))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("parley: %s %q registered twice", r.kind, name))
	}
	r.m[name] = v
}

// Lookup returns the module registered under name.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// The process-wide registries. They are written only from init functions
// (each plugin and adapter package registers itself, as telegraf's and
// caddy's do) and read afterwards; this is the one package-level state in
// Parley, and tests that need isolation build their own Registry.
var (
	pluginRegistry  = NewRegistry[PluginInfo]("plugin")
	adapterRegistry = NewRegistry[AdapterInfo]("adapter")
)

// RegisterPlugin registers a plugin module; call it from init.
func RegisterPlugin(info PluginInfo) { pluginRegistry.Register(info.Name, info) }

// RegisterAdapter registers an adapter module; call it from init.
func RegisterAdapter(info AdapterInfo) { adapterRegistry.Register(info.Name, info) }

// Plugins is the registry of plugin modules.
func Plugins() *Registry[PluginInfo] { return pluginRegistry }

// Adapters is the registry of adapter modules.
func Adapters() *Registry[AdapterInfo] { return adapterRegistry }
