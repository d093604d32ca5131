package provision

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Tags every resource carries. Look-ups and sweeps compare them EXACTLY: Scaleway's name and tag
// filters match partially, and cluster "t-4" must never adopt or delete cluster "t-42"'s things.
const (
	TagBot        = "pocbot"
	TagShared     = "pocbot-shared" // shared images and snapshots: never deleted by a cluster
	clusterPrefix = "pocbot-cluster="
	resPrefix     = "pocbot-res="
)

// MaxTagLen is the longest tag the bot gives a Scaleway resource. scaleway-sdk-go v1.39.0 states
// no length for the tags of Instance, Block Storage or Elastic Metal resources; the one length
// Scaleway documents for tags is IAM's, 1 to 70 characters key and value included
// (https://www.scaleway.com/en/docs/identity-and-access-management/iam/how-to/create-application).
// Source silent for the other products: the stricter reading, the same 70 characters everywhere.
// The emulator refuses a longer tag (internal/sim/scaleway, contract table).
const MaxTagLen = 70

// ClusterTag is the exact tag naming a cluster's resources.
func ClusterTag(id string) string { return clusterPrefix + id }

// ResTag is the tag naming which graph node a resource belongs to, so that a tag look-up after a
// crash adopts the right resource for the right node (three IPs have no name to tell them apart).
func ResTag(node string) string { return resPrefix + node }

// NodeTags are the tags of the resource of one node of a cluster: the bot, the exact cluster
// tag, the node.
func NodeTags(clusterID, node string) []string {
	return []string{TagBot, ClusterTag(clusterID), ResTag(node)}
}

// ResourceName is the name of a cluster's resource: poc-<cluster>-<suffix>.
func ResourceName(clusterID, suffix string) string { return "poc-" + clusterID + "-" + suffix }

// HasTag reports whether tags holds want exactly.
func HasTag(tags []string, want string) bool { return slices.Contains(tags, want) }

// OwnedBy reports whether tags mark a resource of exactly this cluster (and not a shared one).
func OwnedBy(tags []string, clusterID string) bool {
	return HasTag(tags, TagBot) && HasTag(tags, ClusterTag(clusterID)) && !HasTag(tags, TagShared)
}

// Node is one resource (or one out-of-state operation) of the graph. Apply must be idempotent:
// find what exists (state record first, then the exact tags), create only when nothing is found,
// record the id through Run.Record as soon as create returns, then wait until ready. Destroy must
// be idempotent too: not found is done.
type Node struct {
	Name  string
	Kind  string
	Needs []string
	// Preflight runs before any node is applied; it checks what can be checked without creating
	// anything (stock, zone, bucket) and returns a clear error. Optional.
	Preflight func(ctx context.Context, r *Run) error
	Apply     func(ctx context.Context, r *Run) error
	// Destroy removes what Apply made. Optional (nil: nothing to remove, e.g. a config render).
	Destroy func(ctx context.Context, r *Run) error
	// Timeout bounds Apply (and Destroy) with retries; 0 means Options.StepTimeout.
	Timeout time.Duration
}

// Sweeper deletes whatever still carries the cluster's exact tag after the graph was destroyed
// (orphans of a crash, resources of an older graph), reporting each through Run.Deleted.
type Sweeper struct {
	Name  string
	Sweep func(ctx context.Context, r *Run) error
}

// Graph is an open set of nodes: the Scaleway driver adds the infrastructure, other packages add
// Talos configuration, the worker's rescue write, bootstrap and so on.
type Graph struct {
	nodes    map[string]*Node
	order    []string
	sweepers []Sweeper
}

// NewGraph returns an empty graph.
func NewGraph() *Graph { return &Graph{nodes: map[string]*Node{}} }

// Add appends a node; names are unique, and Apply is required.
func (g *Graph) Add(n Node) error {
	if n.Name == "" || n.Apply == nil {
		return fmt.Errorf("graph: node %q needs a name and an Apply function", n.Name)
	}
	if _, dup := g.nodes[n.Name]; dup {
		return fmt.Errorf("graph: node %q added twice", n.Name)
	}
	n.Needs = slices.Clone(n.Needs)
	g.nodes[n.Name] = &n
	g.order = append(g.order, n.Name)
	return nil
}

// AddNeeds makes an existing node wait for more nodes (e.g. the Talos package makes the control
// planes' poweron wait for the node that renders their user data).
func (g *Graph) AddNeeds(node string, needs ...string) error {
	n, ok := g.nodes[node]
	if !ok {
		return fmt.Errorf("graph: AddNeeds on unknown node %q", node)
	}
	for _, m := range needs {
		if !slices.Contains(n.Needs, m) {
			n.Needs = append(n.Needs, m)
		}
	}
	return nil
}

// AddSweeper registers a sweep run at the end of every destroy.
func (g *Graph) AddSweeper(s Sweeper) { g.sweepers = append(g.sweepers, s) }

// WrapApply replaces a node's Apply by wrap(Apply): another package can put a lock or a check
// around a node it did not write (the shared image's lock around the driver's snapshot import).
func (g *Graph) WrapApply(name string, wrap func(apply func(ctx context.Context, r *Run) error) func(ctx context.Context, r *Run) error) error {
	n, ok := g.nodes[name]
	if !ok {
		return fmt.Errorf("graph: no node %q to wrap", name)
	}
	n.Apply = wrap(n.Apply)
	return nil
}

// WrapDestroy replaces a node's Destroy by wrap(Destroy) (the cluster parks its worker instead
// of deleting it).
func (g *Graph) WrapDestroy(name string, wrap func(destroy func(ctx context.Context, r *Run) error) func(ctx context.Context, r *Run) error) error {
	n, ok := g.nodes[name]
	if !ok {
		return fmt.Errorf("graph: no node %q to wrap", name)
	}
	n.Destroy = wrap(n.Destroy)
	return nil
}

// WrapPreflight replaces a node's Preflight by wrap(Preflight) (the cluster skips the worker's
// stock check when a parked worker can be adopted). A nil Preflight is passed as nil.
func (g *Graph) WrapPreflight(name string, wrap func(preflight func(ctx context.Context, r *Run) error) func(ctx context.Context, r *Run) error) error {
	n, ok := g.nodes[name]
	if !ok {
		return fmt.Errorf("graph: no node %q to wrap", name)
	}
	n.Preflight = wrap(n.Preflight)
	return nil
}

// Names lists the nodes in the order they were added.
func (g *Graph) Names() []string { return slices.Clone(g.order) }

// Node returns a copy of the named node.
func (g *Graph) Node(name string) (Node, bool) {
	n, ok := g.nodes[name]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Validate checks that every need names a node and that there is no cycle.
func (g *Graph) Validate() error {
	for _, name := range g.order {
		for _, need := range g.nodes[name].Needs {
			if _, ok := g.nodes[need]; !ok {
				return fmt.Errorf("graph: node %q needs %q, which is not in the graph", name, need)
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(string, []string) error
	visit = func(n string, path []string) error {
		switch color[n] {
		case grey:
			return fmt.Errorf("graph: dependency cycle %v", append(path, n))
		case black:
			return nil
		}
		color[n] = grey
		for _, m := range g.nodes[n].Needs {
			if err := visit(m, append(path, n)); err != nil {
				return err
			}
		}
		color[n] = black
		return nil
	}
	for _, n := range g.order {
		if err := visit(n, nil); err != nil {
			return err
		}
	}
	return nil
}

// CriticalPath returns the longest chain of per-node durations through the graph: the lower
// bound of a fully parallel run whose nodes take those durations.
func (g *Graph) CriticalPath(d func(name string) time.Duration) time.Duration {
	chain := g.CriticalChain(d)
	if len(chain) == 0 {
		return 0
	}
	return chain[len(chain)-1].Finish
}

// Step is one node of a critical chain: what it waits for and when it is done, counted from the
// start of the run.
type Step struct {
	Node   string
	Wait   time.Duration
	Finish time.Duration
}

// CriticalChain returns the chain CriticalPath measures, first node first: each step is the need
// of the next that finishes last (the first added, on a tie), so the chain says which waits an
// up can only have one after the other.
func (g *Graph) CriticalChain(d func(name string) time.Duration) []Step {
	finish := map[string]time.Duration{}
	prev := map[string]string{}
	var visit func(string) time.Duration
	visit = func(n string) time.Duration {
		if v, ok := finish[n]; ok {
			return v
		}
		var start time.Duration
		for _, m := range g.nodes[n].Needs {
			if f := visit(m); f > start || prev[n] == "" {
				start, prev[n] = f, m
			}
		}
		finish[n] = start + d(n)
		return finish[n]
	}
	last := ""
	for _, n := range g.order {
		if f := visit(n); last == "" || f > finish[last] {
			last = n
		}
	}
	var chain []Step
	for n := last; n != ""; n = prev[n] {
		chain = append(chain, Step{Node: n, Wait: d(n), Finish: finish[n]})
	}
	slices.Reverse(chain)
	return chain
}
