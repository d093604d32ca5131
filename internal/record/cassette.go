package record

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v4"
)

// FormatVersion is go-vcr v4's cassette format version (cassette.CassetteFormatVersion).
const FormatVersion = 2

// Request, Response and Interaction carry go-vcr v4.0.8's field names and YAML keys
// (pkg/cassette/cassette.go): a file this package writes loads with cassette.Load.
type Request struct {
	Proto            string      `yaml:"proto"`
	ProtoMajor       int         `yaml:"proto_major"`
	ProtoMinor       int         `yaml:"proto_minor"`
	ContentLength    int64       `yaml:"content_length"`
	TransferEncoding []string    `yaml:"transfer_encoding,omitempty"`
	Trailer          http.Header `yaml:"trailer,omitempty"`
	Host             string      `yaml:"host"`
	RemoteAddr       string      `yaml:"remote_addr,omitempty"`
	RequestURI       string      `yaml:"request_uri,omitempty"`
	Body             string      `yaml:"body,omitempty"`
	Form             url.Values  `yaml:"form,omitempty"`
	Headers          http.Header `yaml:"headers,omitempty"`
	URL              string      `yaml:"url"`
	Method           string      `yaml:"method"`
}

// Response is the recorded answer. Code 0 with Status "error: …" is an exchange that got no answer
// (a timeout, a reset): go-vcr has no field for it, and a real run's failures are what a recording
// is for.
type Response struct {
	Proto            string        `yaml:"proto"`
	ProtoMajor       int           `yaml:"proto_major"`
	ProtoMinor       int           `yaml:"proto_minor"`
	TransferEncoding []string      `yaml:"transfer_encoding,omitempty"`
	Trailer          http.Header   `yaml:"trailer,omitempty"`
	ContentLength    int64         `yaml:"content_length"`
	Uncompressed     bool          `yaml:"uncompressed,omitempty"`
	Body             string        `yaml:"body"`
	Headers          http.Header   `yaml:"headers"`
	Status           string        `yaml:"status"`
	Code             int           `yaml:"code"`
	Duration         time.Duration `yaml:"duration"`
}

// Interaction is one request and its answer; ID is the order in which the requests started.
type Interaction struct {
	ID       int      `yaml:"id"`
	Request  Request  `yaml:"request"`
	Response Response `yaml:"response"`
}

// cassetteDoc is the whole file's shape (go-vcr's Cassette minus its unexported state).
type cassetteDoc struct {
	Version      int            `yaml:"version"`
	Interactions []*Interaction `yaml:"interactions"`
}

// cassetteFile appends interactions to one file. The file starts as a cassette with no
// interaction; each append adds one item to its interactions list, so the file is a whole
// cassette after every append.
type cassetteFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	n    int // interactions written
}

// header is what precedes the first interaction, as go-vcr writes it.
const header = "---\nversion: 2\ninteractions:\n"

// appendItem writes it as the next item of the interactions list.
func (c *cassetteFile) appendItem(it *Interaction) error {
	item, err := listItem(it)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("record: create the cassette %s: %w", c.path, err)
		}
		if _, err := f.WriteString(header); err != nil {
			_ = f.Close()
			return fmt.Errorf("record: write %s: %w", c.path, err)
		}
		c.f = f
	}
	if _, err := c.f.Write(item); err != nil {
		return fmt.Errorf("record: write %s: %w", c.path, err)
	}
	c.n++
	return nil
}

// listItem is it marshalled as one item of the cassette's interactions list, indented as the YAML
// encoder indents a list of one under "interactions:".
func listItem(it *Interaction) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(cassetteDoc{Version: FormatVersion, Interactions: []*Interaction{it}}); err != nil {
		return nil, fmt.Errorf("record: marshal interaction %d: %w", it.ID, err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	out, ok := bytes.CutPrefix(buf.Bytes(), []byte("version: 2\ninteractions:\n"))
	if !ok {
		return nil, fmt.Errorf("record: the YAML encoder wrote an unexpected cassette head: %.40q", buf.String())
	}
	return out, nil
}
