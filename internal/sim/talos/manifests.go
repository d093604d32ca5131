package talos

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"go.yaml.in/yaml/v4"
)

// Talos's manifest controller (k8s.ManifestApplyController, manifest_apply.go @v1.13.9), as each
// control plane runs it once its etcd member is healthy: the objects of the config's inline
// manifests, namespaces first, then CRDs, then the rest in their order; an object already in
// the keyspace is skipped (never updated), a missing one created; a failure on the connection
// stops the run, which the controller runtime starts again later. So a run cut short and run
// again converges: every object once. Contract rows in doc.go.

// manifestRetry is how long after a failed run the controller runs again (controller-runtime's
// restart backoff; source silent on the figure, the stand-in's).
const manifestRetry = 50 * time.Millisecond

// manifestObject is one object of the inline manifests, with its keyspace key.
type manifestObject struct {
	key, id string
	obj     map[string]any
}

// clusterScoped are the kinds the bot's manifests hold that have no namespace.
var clusterScoped = []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "PriorityClass",
	"StorageClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "IngressClass", "GatewayClass"}

// plural is the resource name of a kind, as the apiserver's keys use it.
func plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "y"):
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"):
		return k + "es"
	default:
		return k + "s"
	}
}

// inlineObjects decodes every inline manifest of cfg, sorted as the controller sorts them.
func inlineObjects(cfg config.Provider) ([]manifestObject, error) {
	var objs []manifestObject

	for _, m := range cfg.K8sInlineManifestConfigs() {
		dec := yaml.NewDecoder(strings.NewReader(m.Contents()))

		for {
			var o map[string]any

			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}

			if err != nil {
				return nil, fmt.Errorf("inline manifest %s: %w", m.Name(), err)
			}

			if o == nil {
				continue
			}

			kind, _ := o["kind"].(string)
			md, _ := o["metadata"].(map[string]any)
			name, _ := md["name"].(string)
			ns, _ := md["namespace"].(string)

			if kind == "" || name == "" {
				return nil, fmt.Errorf("inline manifest %s: an object without kind or name", m.Name())
			}

			key := "/registry/" + plural(kind) + "/"
			if slices.Contains(clusterScoped, kind) {
				ns = ""
				key += name
			} else {
				ns = cmpOr(ns, "default") // the controller defaults it
				key += ns + "/" + name
			}

			objs = append(objs, manifestObject{key: key, id: fmt.Sprintf("%v/%s/%s", o["apiVersion"], kind, name), obj: o})
		}
	}

	rank := func(o manifestObject) int {
		switch o.obj["kind"] {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		default:
			return 2
		}
	}
	slices.SortStableFunc(objs, func(a, b manifestObject) int { return rank(a) - rank(b) })

	return objs, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}

	return b
}

// applyManifests runs the controller once on n against its etcd member's keyspace: it creates
// what is missing, and stops at the first failure (NodeOptions.ManifestFault).
func (n *Node) applyManifests() error {
	cfg, cl, err := n.configured()
	if err != nil {
		return err
	}

	d, err := n.localStore(cl)
	if err != nil {
		return err // etcd not healthy here: the controller waits
	}

	objs, err := inlineObjects(cfg)
	if err != nil {
		return err
	}

	for _, o := range objs {
		if _, ok := d.get(o.key); ok {
			continue // existing: skipped, never updated
		}

		if f := n.opts.ManifestFault; f != nil {
			if err := f(o.id); err != nil {
				return fmt.Errorf("error creating %s: %w", o.id, err)
			}
		}

		now := n.opts.now()

		_, err := d.txn(o.key, func(_ etcdKV, ok bool) error {
			if ok {
				return errExists
			}

			return nil
		}, func(int64) ([]byte, error) {
			md, _ := o.obj["metadata"].(map[string]any)
			md["uid"], md["creationTimestamp"] = newUID(), now.UTC().Format(time.RFC3339)

			return json.Marshal(o.obj)
		})
		if err != nil && !errors.Is(err, errExists) {
			return err
		}

		if o.obj["kind"] == "DaemonSet" {
			cl.markApplied(d, now)
		}
	}

	return nil
}

var errExists = errors.New("exists")

// runManifests runs the controller, and again after manifestRetry while a run fails and the
// node is up.
func (n *Node) runManifests() {
	err := n.applyManifests()
	if err == nil {
		n.manifestRuns.Add(1)

		return
	}

	n.log.Debug("manifest apply failed, retrying", "err", err)

	time.AfterFunc(manifestRetry, func() {
		select {
		case <-n.stop:
		default:
			n.runManifests()
		}
	})
}

// markApplied records when the CNI's objects were first created in a keyspace (the agents
// start from then).
func (cl *clusterState) markApplied(d *etcdData, at time.Time) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	if _, ok := cl.applied[d]; !ok {
		cl.applied[d] = at
	}
}

// ManifestObjects lists the keys of the inline manifests' objects the keyspace n serves holds
// (tests: every object once after an interrupted run and its retry).
func (n *Node) ManifestObjects() ([]string, error) {
	cfg, cl, err := n.configured()
	if err != nil {
		return nil, err
	}

	d, err := n.apiStore(cl)
	if err != nil {
		return nil, err
	}

	objs, err := inlineObjects(cfg)
	if err != nil {
		return nil, err
	}

	var keys []string

	for _, o := range objs {
		if _, ok := d.get(o.key); ok {
			keys = append(keys, o.key)
		}
	}

	return keys, nil
}

// ManifestRuns counts the controller's runs on n that went through to the end.
func (n *Node) ManifestRuns() int64 { return n.manifestRuns.Load() }
