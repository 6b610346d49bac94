package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxDepth bounds nesting, which also stops alias loops (&a [*a]).
const maxDepth = 64

var (
	durationType        = reflect.TypeFor[time.Duration]()
	timeType            = reflect.TypeFor[time.Time]()
	nodeType            = reflect.TypeFor[yaml.Node]()
	secretType          = reflect.TypeFor[Secret]()
	sectionType         = reflect.TypeFor[Section]()
	botsType            = reflect.TypeFor[[]BotConfig]()
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoder decodes a yaml.Node tree strictly into Go values, collecting every
// error instead of stopping at the first. yaml.v3's own strict mode stops at
// the first problem and loses the key path, hence this small walker.
type decoder struct {
	file string
	errs []*Error
	// lines maps a key path to the line of its value, for validation errors.
	lines map[string]int
	// failed holds paths that already have an error, so validation does not
	// report the same value twice.
	failed map[string]bool
	// skip holds nodes whose environment expansion failed.
	skip map[*yaml.Node]bool
	// fromEnv holds paths whose value held an environment reference;
	// unset, those whose reference named an unset variable, with its name.
	fromEnv map[string]bool
	unset   map[string]string
	// secrets holds the values decoded into Secret fields, which err
	// takes out of every message: an alias, or the same text written
	// under another key, would show them.
	secrets []string
	// bots is the bots: list, decoded by decodeBots once the top-level
	// sections its bots inherit are decoded, wherever it is in the file.
	bots *yaml.Node
}

// hiddenEnvValue stands for a value from the environment in error messages:
// it may be a secret set in the wrong place, so it is never shown.
const hiddenEnvValue = "a value from the environment (not shown)"

func newDecoder(file string) *decoder {
	return &decoder{
		file:    file,
		lines:   map[string]int{},
		failed:  map[string]bool{},
		skip:    map[*yaml.Node]bool{},
		fromEnv: map[string]bool{},
		unset:   map[string]string{},
	}
}

// fail records an error at n's line.
func (d *decoder) fail(n *yaml.Node, path, msg string) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Key: path, Msg: msg})
	d.failed[path] = true
}

// err returns every recorded error in file order, or nil, with the
// secrets' values redacted.
func (d *decoder) err() error {
	for _, e := range d.errs {
		e.Msg = redact(e.Msg, d.secrets)
	}
	return joinErrors(d.errs)
}

// minRawSecret is the shortest secret redacted wherever it appears in a
// message; a shorter one is redacted only where a message quotes it, so
// that a test value like "x" does not garble the words around it.
const minRawSecret = 8

// redact replaces each secret in msg with "[redacted]".
func redact(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, strconv.Quote(s), strconv.Quote(redacted))
		if len(s) >= minRawSecret {
			msg = strings.ReplaceAll(msg, s, redacted)
		}
	}
	return msg
}

// value decodes n into v, which must be settable. A null value keeps what v
// already holds (its default).
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, depth int) {
	for n.Kind == yaml.AliasNode && n.Alias != nil && depth <= maxDepth {
		n = n.Alias
		depth++
	}
	if depth > maxDepth {
		d.fail(n, path, "nested too deeply (an alias loop?)")
		return
	}
	if d.skip[n] {
		return
	}
	d.lines[path] = n.Line
	t := v.Type()
	switch {
	case t == nodeType:
		v.Set(reflect.ValueOf(*n))
		return
	case t.Kind() == reflect.Pointer && t.Elem() == nodeType:
		v.Set(reflect.ValueOf(n))
		return
	case t == durationType:
		d.duration(n, v, path)
		return
	case t == botsType && path == "bots":
		d.bots = n
		return
	case t == timeType, reflect.PointerTo(t).Implements(unmarshalerType),
		reflect.PointerTo(t).Implements(textUnmarshalerType):
		d.delegate(n, v, path)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(n, v.Elem(), path, depth+1)
	case reflect.Struct:
		d.structure(n, v, path, depth)
	case reflect.Map:
		if t.Elem() == sectionType && t.Key().Kind() == reflect.String {
			d.sections(n, v, path)
		} else {
			d.mapping(n, v, path, depth)
		}
	case reflect.Slice:
		d.sequence(n, v, path, depth)
	case reflect.String:
		d.str(n, v, path)
	case reflect.Interface:
		d.delegate(n, v, path)
	default:
		d.scalar(n, v, path)
	}
}

// structure decodes a mapping into a struct's yaml-tagged fields.
func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string, depth int) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.wrongShape(n, path, "a mapping")
		return
	}
	fields := structFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.merge(val, v, path, depth)
			continue
		}
		if !d.key(k, path, seen) {
			continue
		}
		kp := joinPath(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			d.fail(k, kp, "unknown key")
			continue
		}
		d.value(val, v.FieldByIndex(idx), kp, depth+1)
	}
}

// merge applies a "<<" merge key: a mapping or a list of mappings whose keys
// the struct takes before its own later keys override them.
func (d *decoder) merge(n *yaml.Node, v reflect.Value, path string, depth int) {
	for n.Kind == yaml.AliasNode && n.Alias != nil && depth <= maxDepth {
		n = n.Alias
		depth++
	}
	if n.Kind == yaml.SequenceNode {
		for _, c := range n.Content {
			d.structure(c, v, path, depth+1)
		}
		return
	}
	d.structure(n, v, path, depth+1)
}

// key checks one mapping key: a string, not seen before in this mapping.
func (d *decoder) key(k *yaml.Node, path string, seen map[string]bool) bool {
	if k.Kind != yaml.ScalarNode {
		d.fail(k, path, "mapping keys must be strings")
		return false
	}
	if seen[k.Value] {
		d.fail(k, joinPath(path, k.Value), "duplicate key")
		return false
	}
	seen[k.Value] = true
	return true
}

// mapping decodes a mapping into a map. Entries already in the map (defaults)
// are decoded onto, so a map of structs keeps its entries' defaults.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, depth int) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.wrongShape(n, path, "a mapping")
		return
	}
	t := v.Type()
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if !d.key(k, path, seen) {
			continue
		}
		kp := joinPath(path, k.Value)
		kv := reflect.New(t.Key()).Elem()
		if t.Key().Kind() == reflect.String {
			kv.SetString(k.Value)
		} else if err := k.Decode(kv.Addr().Interface()); err != nil {
			d.fail(k, kp, fmt.Sprintf("invalid key: %s", yamlMessage(err)))
			continue
		}
		ev := reflect.New(t.Elem()).Elem()
		if old := v.MapIndex(kv); old.IsValid() {
			ev.Set(old)
		}
		d.value(val, ev, kp, depth+1)
		v.SetMapIndex(kv, ev)
	}
}

// sequence decodes a sequence into a slice, replacing the default.
func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string, depth int) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.wrongShape(n, path, "a list")
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.value(c, s.Index(i), indexPath(path, i), depth+1)
	}
	v.Set(s)
}

// str decodes a scalar into a string kind (string, Secret). Any scalar is
// taken as written, so "on" or "123" stay text; a null written in the file
// keeps the default, but a reference that expanded to "" sets "".
func (d *decoder) str(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.wrongShape(n, path, "a string")
		return
	}
	if n.Tag == "!!null" {
		return
	}
	v.SetString(n.Value)
	if v.Type() == secretType && n.Value != "" {
		d.secrets = append(d.secrets, n.Value)
	}
}

// duration decodes a Go duration string ("1500ms", "2m"); negative durations
// are rejected because no setting means anything by them.
// parseDuration is time.ParseDuration with days too ("365d", "1d12h"):
// retention and other long spans read better in them.
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok || days == "" {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || n < 0 || n > 100_000 {
		return time.ParseDuration(s)
	}
	var more time.Duration
	if rest != "" {
		if more, err = time.ParseDuration(rest); err != nil {
			return 0, err
		}
	}
	return time.Duration(n*24*float64(time.Hour)) + more, nil
}

func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.wrongShape(n, path, `a duration like "1500ms" or "2m"`)
		return
	}
	if isNull(n) {
		return
	}
	dur, err := parseDuration(n.Value)
	if err != nil {
		msg := "invalid duration " + shown(n)
		if n.Tag == "" {
			msg = "invalid duration, got " + hiddenEnvValue
		}
		if _, numErr := strconv.ParseFloat(n.Value, 64); numErr == nil {
			msg += ` (add a unit, e.g. "60s")`
		}
		d.fail(n, path, msg)
		return
	}
	if dur < 0 {
		d.fail(n, path, "must not be negative, got "+shown(n))
		return
	}
	v.SetInt(int64(dur))
}

// scalar decodes numbers and booleans through yaml.v3, with a message that
// names what was expected.
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	want := kindName(v.Type())
	if n.Kind != yaml.ScalarNode {
		d.wrongShape(n, path, want)
		return
	}
	if isNull(n) {
		return
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		d.fail(n, path, fmt.Sprintf("expected %s, got %s", want, shown(n)))
	}
}

// delegate hands n to yaml.v3 (custom unmarshalers, time.Time, any).
func (d *decoder) delegate(n *yaml.Node, v reflect.Value, path string) {
	if err := n.Decode(v.Addr().Interface()); err != nil {
		msg := "invalid value: " + yamlMessage(err)
		if n.Kind == yaml.ScalarNode && n.Tag == "" {
			msg = "invalid value, got " + hiddenEnvValue
		}
		d.fail(n, path, msg)
	}
}

// wrongShape reports a value of the wrong kind without quoting it, since a
// misplaced value may be a secret.
func (d *decoder) wrongShape(n *yaml.Node, path, want string) {
	msg := fmt.Sprintf("expected %s, got %s", want, describe(n))
	if path == "" {
		msg = fmt.Sprintf("the top level must be a mapping, got %s", describe(n))
	}
	d.fail(n, path, msg)
}

// structFields maps yaml key names to field indexes. Only yaml-tagged
// exported fields are config; ",inline" struct fields contribute theirs.
func structFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok || !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if hasOption(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for k, idx := range structFields(f.Type) {
				if _, taken := out[k]; !taken {
					out[k] = append([]int{i}, idx...)
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// isNull reports whether n is a null scalar (~, null, empty, or a reference
// that expanded to nothing).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// shown quotes a scalar's value for an error message, unless it came from
// the environment (its tag was cleared by expandTree).
func shown(n *yaml.Node) string {
	if n.Tag == "" {
		return hiddenEnvValue
	}
	return strconv.Quote(n.Value)
}

// describe names a node's kind for error messages, without its value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		default:
			return "a string"
		}
	}
	return "nothing"
}

// kindName says what a scalar Go type expects, for error messages.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "a " + t.String()
}

// yamlMessage strips yaml.v3's "yaml: unmarshal errors:\n  line N: " framing,
// since our errors name the line themselves.
func yamlMessage(err error) string {
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			if _, rest, found := strings.Cut(m, ": "); found && strings.HasPrefix(m, "line ") {
				m = rest
			}
			msgs[i] = m
		}
		return strings.Join(msgs, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

// joinPath appends a mapping key to a dotted path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends a list index to a path.
func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
