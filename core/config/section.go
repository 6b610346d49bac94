package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"

	"gopkg.in/yaml.v3"
)

// sections decodes the adapters: or plugins: mapping. Each value must be a
// mapping (or empty); its "enabled" key (a bool, default true because
// writing a section means you want it) is taken out and the rest kept
// undecoded for the module that owns the section.
func (d *decoder) sections(n *yaml.Node, v reflect.Value, path string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.wrongShape(n, path, "a mapping")
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if !d.key(k, path, seen) {
			continue
		}
		kp := joinPath(path, k.Value)
		for val.Kind == yaml.AliasNode && val.Alias != nil && val.Alias != val {
			val = val.Alias
		}
		if d.skip[val] {
			continue
		}
		d.lines[kp] = val.Line
		sec := Section{Enabled: true, File: d.file, Line: k.Line, Path: kp}
		switch {
		case isNull(val):
			sec.Node = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: val.Line, Column: val.Column}
		case val.Kind != yaml.MappingNode:
			d.wrongShape(val, kp, "a mapping")
			continue
		default:
			node := *val
			node.Content = nil
			for j := 0; j+1 < len(val.Content); j += 2 {
				sk, sv := val.Content[j], val.Content[j+1]
				if sk.Kind == yaml.ScalarNode && sk.Value == "enabled" {
					d.enabled(sv, joinPath(kp, "enabled"), &sec.Enabled)
					continue
				}
				node.Content = append(node.Content, sk, sv)
			}
			sec.Node = &node
		}
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), reflect.ValueOf(sec))
	}
}

// enabled decodes a section's "enabled" key, which must be a boolean.
func (d *decoder) enabled(n *yaml.Node, path string, out *bool) {
	for n.Kind == yaml.AliasNode && n.Alias != nil && n.Alias != n {
		n = n.Alias
	}
	if d.skip[n] {
		return
	}
	d.lines[path] = n.Line
	var b bool
	if n.Kind != yaml.ScalarNode || isNull(n) || n.Decode(&b) != nil {
		got := describe(n)
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			got = shown(n)
		}
		d.fail(n, path, fmt.Sprintf("must be true or false, got %s", got))
		return
	}
	*out = b
}

// Decode strictly decodes the section into v, a pointer to the module's
// config struct with its defaults already set: keys absent or null keep their
// default, unknown keys and wrong types are *Error values naming the file,
// line and key ("plugins.persona.nmae"), joined like Load's. Only the
// struct's yaml-tagged fields are config. An empty section leaves v as is.
func (s Section) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decoding %s: need a non-nil pointer, got %T", s.Path, v)
	}
	if s.Node == nil {
		return nil
	}
	d := newDecoder(s.File)
	d.value(s.Node, rv.Elem(), s.Path, 0)
	return d.err()
}

// String describes the section without its contents, which may hold a
// module's secrets (an adapter's token is a plain string in the node).
func (s Section) String() string {
	return fmt.Sprintf("{Enabled:%t Path:%s}", s.Enabled, s.Path)
}

// Format prints String under every verb, so %+v and %#v of a Config never
// dump a section's raw YAML.
func (s Section) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue logs only the section's path and whether it is enabled.
func (s Section) LogValue() slog.Value {
	return slog.GroupValue(slog.Bool("enabled", s.Enabled), slog.String("path", s.Path))
}

// MarshalJSON encodes only the section's path and whether it is enabled.
func (s Section) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Enabled bool   `json:"enabled"`
		Path    string `json:"path,omitempty"`
	}{s.Enabled, s.Path})
}

// MarshalYAML encodes only the section's enabled key; its other keys are left
// out because they may be a module's secrets.
func (s Section) MarshalYAML() (any, error) {
	return map[string]bool{"enabled": s.Enabled}, nil
}

// Interface guards.
var (
	_ fmt.Formatter  = Section{}
	_ slog.LogValuer = Section{}
	_ json.Marshaler = Section{}
	_ yaml.Marshaler = Section{}
)
