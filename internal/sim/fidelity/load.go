package fidelity

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/pocbot/pocbot/internal/record"
)

// Exchange is one recorded interaction, with the service it was with.
type Exchange struct {
	File    string // the cassette's base name
	Service record.Service
	*cassette.Interaction
}

// botCassette is the name record gives a process's cassette of one service:
// <command>-<start>-<pid>.<service>.cassette.yaml.
var botCassette = regexp.MustCompile(`^(.*-(\d{8}T\d{6}(?:\.\d+)?Z)-\d+)\.(scaleway|s3|github)\.cassette\.yaml$`)

// Load reads every cassette of dir with go-vcr and returns their exchanges in the order they
// happened: the processes by their start, each process's exchanges by id (record counts one
// process's requests across its services). A cassette not named by record (another tool's) is one
// process of its own, its exchanges' services told by their hosts.
func Load(dir string) ([]Exchange, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.cassette.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("fidelity: no *.cassette.yaml in %s", dir)
	}
	type proc struct {
		key, start string
		ex         []Exchange
	}
	procs := map[string]*proc{}
	for _, f := range files {
		c, err := cassette.Load(strings.TrimSuffix(f, ".yaml"))
		if err != nil {
			return nil, fmt.Errorf("fidelity: load %s: %w", f, err)
		}
		base := filepath.Base(f)
		key, start, svc := base, "", record.Service("")
		if m := botCassette.FindStringSubmatch(base); m != nil {
			key, start, svc = m[1], m[2], record.Service(m[3])
		}
		p := procs[key]
		if p == nil {
			p = &proc{key: key, start: start}
			procs[key] = p
		}
		for _, it := range c.Interactions {
			s := svc
			if s == "" {
				s = serviceOf(it.Request.URL)
			}
			p.ex = append(p.ex, Exchange{File: base, Service: s, Interaction: it})
		}
	}
	var order []*proc
	for _, p := range procs {
		sort.SliceStable(p.ex, func(i, j int) bool { return p.ex[i].ID < p.ex[j].ID })
		order = append(order, p)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].start != order[j].start {
			return order[i].start < order[j].start
		}
		return order[i].key < order[j].key
	})
	var out []Exchange
	for _, p := range order {
		out = append(out, p.ex...)
	}
	return out, nil
}

// serviceOf tells a real API's service by its host.
func serviceOf(raw string) record.Service {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	h := u.Hostname()
	switch {
	case h == "api.scaleway.com":
		return record.Scaleway
	case strings.HasSuffix(h, ".scw.cloud") || strings.HasPrefix(h, "s3."):
		return record.ObjectStorage
	case h == "api.github.com" || strings.HasSuffix(u.Path, "/api/v3"):
		return record.GitHub
	}
	return ""
}
