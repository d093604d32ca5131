package fidelity

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/pocbot/pocbot/internal/record"
)

// Answer is one side of a compared exchange: the recorded answer or the stand-in's.
type Answer struct {
	Code int
	Body string
}

// Verdict is what Compare found; Why is empty when the answers match.
type Verdict struct {
	Why string
	// Missing are the fields the recorded answer has and the stand-in's lacks; Extra the reverse.
	Missing, Extra []string
}

// Match tells whether the answers matched.
func (v Verdict) Match() bool { return v.Why == "" }

// Compare decides whether the stand-in's answer got matches the recorded one want, for an exchange
// on route of svc whose answer the SDK reads as typ (nil: no SDK type is known for the route):
//
//  1. the same status class, and for a 4xx the same code: the SDKs treat every 2xx alike
//     (scaleway-sdk-go scw/errors.go hasResponseError; smithy's deserializers check the class),
//     while the bot tells 404, 409, 412 and 429 apart;
//  2. a JSON body decodes into the route's SDK type on both sides (typ nil: any JSON);
//  3. the same fields are present: every JSON key the SDK type knows, at every depth, found on one
//     side is found on the other. Lists are compared by the union of their elements' fields and
//     maps (keyed by data, like an Instance server's volumes) by the union of their values'; a
//     list, map or object empty or null on either side is not descended into (the two worlds'
//     contents differ, not their shapes). Values are never compared: the ids, addresses, states
//     and dates of two runs differ;
//  4. an XML body (Object Storage) has the same root element and the same element paths, by the
//     same rules; an error document the same Code (the bot branches on it);
//  5. an empty body answers an empty body, and an object's bytes (kept out of the recording: a
//     summary) answer any bytes.
func Compare(want, got Answer, typ reflect.Type) Verdict {
	if want.Code/100 != got.Code/100 || (want.Code/100 == 4 && want.Code != got.Code) {
		return Verdict{Why: fmt.Sprintf("status %d, recorded %d (%s)", got.Code, want.Code, clip(got.Body))}
	}
	w, g := strings.TrimSpace(want.Body), strings.TrimSpace(got.Body)
	switch {
	case strings.HasPrefix(w, record.ElidedPrefix):
		return Verdict{}
	case w == "" || g == "":
		if (w == "") != (g == "") {
			return Verdict{Why: fmt.Sprintf("body %q, recorded %q", clip(g), clip(w))}
		}
		return Verdict{}
	case strings.HasPrefix(w, "<"):
		return compareXML(w, g)
	case strings.HasPrefix(w, "{") || strings.HasPrefix(w, "["):
		return compareJSON(w, g, typ)
	}
	return Verdict{} // text (user data read back): its content is the run's, not the API's shape
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

func compareJSON(want, got string, typ reflect.Type) Verdict {
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return Verdict{} // the recorded body is not JSON: nothing to hold the stand-in to
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return Verdict{Why: "the answer is not JSON: " + clip(got)}
	}
	if typ != nil {
		for side, b := range map[string]string{"recorded": want, "stand-in's": got} {
			if err := json.Unmarshal([]byte(b), reflect.New(typ).Interface()); err != nil {
				return Verdict{Why: fmt.Sprintf("the %s answer does not decode as %s: %v", side, typ, err)}
			}
		}
	}
	wf, gf := shape{}, shape{}
	wf.walkJSON(w, typ, "")
	gf.walkJSON(g, typ, "")
	return diff(wf, gf)
}

// shape is the fields an answer has: fields by path, and the paths of the containers it has
// something in.
type shape struct {
	fields, filled map[string]bool
}

func (s *shape) add(path string, filled bool) {
	if s.fields == nil {
		s.fields, s.filled = map[string]bool{}, map[string]bool{"": true}
	}
	s.fields[path] = true
	if filled {
		s.filled[path] = true
	}
}

// walkJSON records v's fields under prefix, reading v as t (nil: as it is). Keys t does not know are
// left out: what the SDK does not read, the bot cannot depend on.
func (s *shape) walkJSON(v any, t reflect.Type, prefix string) {
	s.add(prefix, false)
	t = leafless(t)
	switch x := v.(type) {
	case map[string]any:
		if t != nil && t.Kind() == reflect.Map {
			// Keyed by data (an Instance server's volumes): held when it has members.
			if len(x) > 0 {
				s.filled[prefix] = true
			}
			for _, e := range x {
				s.walkJSON(e, t.Elem(), prefix+"{}")
			}
			return
		}
		s.filled[prefix] = true // an object: its fields are held, even when it has none
		for k, e := range x {
			var ft reflect.Type
			if t != nil {
				f, ok := jsonField(t, k)
				if !ok {
					continue
				}
				ft = f
			}
			s.walkJSON(e, ft, prefix+"."+k)
		}
	case []any:
		if len(x) == 0 {
			return
		}
		s.filled[prefix] = true
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for _, e := range x {
			s.walkJSON(e, et, prefix+"[]")
		}
	}
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// leafless is t without its pointers; nil for a type that decodes itself (a time, an amount, an
// address): its JSON form is a value, not fields.
func leafless(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshaler) || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

// jsonField is the type of t's field whose JSON name is key, as encoding/json finds it (exact,
// then case-insensitive; embedded structs' fields included).
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	var fold reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if ft, ok := jsonField(et, key); ok {
				return ft, true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}

// diff is the verdict on two shapes: a field counts where its container is filled on both sides.
func diff(w, g shape) Verdict {
	var missing, extra []string
	both := func(path string) bool {
		parent := path
		if i := strings.LastIndexAny(path, ".[{"); i >= 0 {
			parent = path[:i]
		} else {
			parent = ""
		}
		return w.filled[parent] && g.filled[parent]
	}
	for p := range w.fields {
		if p != "" && !g.fields[p] && both(p) {
			missing = append(missing, p)
		}
	}
	for p := range g.fields {
		if p != "" && !w.fields[p] && both(p) {
			extra = append(extra, p)
		}
	}
	if len(missing)+len(extra) == 0 {
		return Verdict{}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return Verdict{Why: fmt.Sprintf("fields: missing %v, extra %v", missing, extra), Missing: missing, Extra: extra}
}

// compareXML compares two Object Storage documents: root element, element paths, error code.
func compareXML(want, got string) Verdict {
	ws, wroot, wcode, err := xmlShape(want)
	if err != nil {
		return Verdict{}
	}
	gs, groot, gcode, err := xmlShape(got)
	if err != nil {
		return Verdict{Why: "the answer is not XML: " + clip(got)}
	}
	switch {
	case wroot != groot:
		return Verdict{Why: fmt.Sprintf("document <%s>, recorded <%s>", groot, wroot)}
	case wroot == "Error" && wcode != gcode:
		return Verdict{Why: fmt.Sprintf("error %s, recorded %s", gcode, wcode)}
	}
	return diff(ws, gs)
}

// xmlShape reads a document's element paths (repeated elements are one path, as a list's
// elements are), its root element and, for an error, its Code.
func xmlShape(doc string) (s shape, root, code string, err error) {
	dec := xml.NewDecoder(strings.NewReader(doc))
	var stack []string
	var text bytes.Buffer
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, "", "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				root = t.Name.Local
			} else {
				s.add(strings.Join(stack, "."), true)
			}
			stack = append(stack, t.Name.Local)
			s.add(strings.Join(stack, "."), false)
			text.Reset()
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if strings.Join(stack, ".") == "Error.Code" {
				code = strings.TrimSpace(text.String())
			}
			stack = stack[:len(stack)-1]
		}
	}
	if root == "" {
		return s, "", "", fmt.Errorf("no root element")
	}
	if s.fields == nil {
		s.add(root, false)
	}
	s.filled[root] = true
	return s, root, code, nil
}
