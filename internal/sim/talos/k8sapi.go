package talos

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// The Kubernetes REST API the stand-in serves, kept in the cluster's etcd model (etcd.go):
// namespaces (get, list, create), ConfigMaps and Secrets (get, list, create, update, delete),
// in the core/v1 JSON shapes, with the errors as metav1.Status objects. Enough for a test — or
// kubectl with the kubeconfig — to write objects before a pause and read them after a resume.

type kubeResource struct {
	plural, kind string
	namespaced   bool
}

var (
	resNamespaces = kubeResource{"namespaces", "Namespace", false}
	resConfigMaps = kubeResource{"configmaps", "ConfigMap", true}
	resSecrets    = kubeResource{"secrets", "Secret", true}
)

// builtinNamespaces are created by the kube-apiserver when it starts on a fresh etcd.
var builtinNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// dns1123Subdomain is the rule for object names (k8s.io/apimachinery validation.IsDNS1123Subdomain).
var dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func registryKey(r kubeResource, ns, name string) string {
	if !r.namespaced {
		return "/registry/" + r.plural + "/" + name
	}

	return "/registry/" + r.plural + "/" + ns + "/" + name
}

// seedNamespaces writes the built-in namespaces into a fresh keyspace, as the apiserver's
// bootstrap controller does.
func seedNamespaces(d *etcdData, now time.Time) {
	for _, ns := range builtinNamespaces {
		key := registryKey(resNamespaces, "", ns)
		_, _ = d.txn(key, func(_ etcdKV, ok bool) error { //nolint:errcheck // cannot fail: the condition only skips
			if ok {
				return errors.New("exists")
			}

			return nil
		}, func(rev int64) ([]byte, error) {
			return json.Marshal(map[string]any{
				"kind": "Namespace", "apiVersion": "v1",
				"metadata": map[string]any{"name": ns, "uid": newUID(), "creationTimestamp": now.UTC().Format(time.RFC3339)},
				"spec":     map[string]any{"finalizers": []string{"kubernetes"}},
				"status":   map[string]any{"phase": "Active"},
			})
		})
	}
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80

	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// kubeStatus writes a metav1.Status failure.
func kubeStatus(w http.ResponseWriter, code int, reason, msg string, details map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)

	st := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": msg, "reason": reason, "code": code}
	if details != nil {
		st["details"] = details
	}

	_ = json.NewEncoder(w).Encode(st)
}

func notFound(w http.ResponseWriter, r kubeResource, name string) {
	kubeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", r.plural, name), map[string]any{"name": name, "kind": r.plural})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// registerKubeAPI adds the discovery documents and the resources' paths to mux.
func (n *Node) registerKubeAPI(mux *http.ServeMux, cl *clusterState) {
	mux.HandleFunc("GET /api", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": n.KubeAddr()}}})
	})
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{}})
	})
	mux.HandleFunc("GET /api/v1", func(w http.ResponseWriter, _ *http.Request) {
		var list []map[string]any
		for _, r := range []kubeResource{resNamespaces, resConfigMaps, resSecrets} {
			verbs := []string{"create", "delete", "get", "list", "update"}
			if r == resNamespaces {
				verbs = []string{"create", "get", "list"}
			}

			list = append(list, map[string]any{"name": r.plural, "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": verbs})
		}

		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": list})
	})

	h := &kubeHandler{n: n, cl: cl, now: n.opts.now}

	mux.HandleFunc("GET /api/v1/namespaces", h.list(resNamespaces))
	mux.HandleFunc("POST /api/v1/namespaces", h.create(resNamespaces))
	mux.HandleFunc("GET /api/v1/namespaces/{name}", h.get(resNamespaces))

	for _, r := range []kubeResource{resConfigMaps, resSecrets} {
		base := "/api/v1/namespaces/{ns}/" + r.plural
		mux.HandleFunc("GET "+base, h.list(r))
		mux.HandleFunc("POST "+base, h.create(r))
		mux.HandleFunc("GET "+base+"/{name}", h.get(r))
		mux.HandleFunc("PUT "+base+"/{name}", h.update(r))
		mux.HandleFunc("DELETE "+base+"/{name}", h.remove(r))
	}
}

type kubeHandler struct {
	n   *Node
	cl  *clusterState
	now func() time.Time
}

// withStore is a handler that runs fn with the running keyspace, answering 503 itself when there
// is none (see store).
func (h *kubeHandler) withStore(fn func(w http.ResponseWriter, req *http.Request, d *etcdData)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if d := h.store(w); d != nil {
			fn(w, req, d)
		}
	}
}

// store is the running keyspace; without one the apiserver cannot answer (its etcd is gone).
func (h *kubeHandler) store(w http.ResponseWriter) *etcdData {
	d, err := h.n.apiStore(h.cl)
	if err != nil {
		kubeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "etcd unavailable: "+err.Error(), nil)

		return nil
	}

	return d
}

// object decodes a stored object and sets its resourceVersion from etcd's revision.
// writeStoredKV answers the object a write stored (err is the write's), or the write's failure as
// a Kubernetes Status.
func writeStoredKV(w http.ResponseWriter, status int, kv etcdKV, err error) {
	if err != nil {
		writeStored(w, err)

		return
	}

	out, err := object(kv)
	if err != nil {
		writeStored(w, err)

		return
	}

	writeJSON(w, status, out)
}

// errNotFound is the Status of a missing object of resource r.
func errNotFound(r kubeResource, name string) *storedError {
	return &storedError{code: http.StatusNotFound, reason: "NotFound", msg: fmt.Sprintf("%s %q not found", r.plural, name), name: name, plural: r.plural}
}

func object(kv etcdKV) (map[string]any, error) {
	var obj map[string]any
	if err := json.Unmarshal(kv.Value, &obj); err != nil {
		return nil, fmt.Errorf("stored object %s: %w", kv.Key, err)
	}

	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}

	meta["resourceVersion"] = strconv.FormatInt(kv.Mod, 10)

	return obj, nil
}

func (h *kubeHandler) namespaceExists(w http.ResponseWriter, d *etcdData, r kubeResource, ns string) bool {
	if !r.namespaced {
		return true
	}

	if _, ok := d.get(registryKey(resNamespaces, "", ns)); !ok {
		notFound(w, resNamespaces, ns)

		return false
	}

	return true
}

func (h *kubeHandler) get(r kubeResource) http.HandlerFunc {
	return h.withStore(func(w http.ResponseWriter, req *http.Request, d *etcdData) {
		name := req.PathValue("name")

		kv, ok := d.get(registryKey(r, req.PathValue("ns"), name))
		if !ok {
			notFound(w, r, name)

			return
		}

		obj, err := object(kv)
		if err != nil {
			kubeStatus(w, http.StatusInternalServerError, "InternalError", err.Error(), nil)

			return
		}

		writeJSON(w, http.StatusOK, obj)
	})
}

func (h *kubeHandler) list(r kubeResource) http.HandlerFunc {
	return h.withStore(func(w http.ResponseWriter, req *http.Request, d *etcdData) {
		prefix := "/registry/" + r.plural + "/"
		if r.namespaced {
			prefix += req.PathValue("ns") + "/"
		}

		kvs, rev := d.list(prefix)
		items := make([]map[string]any, 0, len(kvs))

		for _, kv := range kvs {
			obj, err := object(kv)
			if err != nil {
				kubeStatus(w, http.StatusInternalServerError, "InternalError", err.Error(), nil)

				return
			}

			items = append(items, obj)
		}

		writeJSON(w, http.StatusOK, map[string]any{"kind": r.kind + "List", "apiVersion": "v1",
			"metadata": map[string]any{"resourceVersion": strconv.FormatInt(rev, 10)}, "items": items})
	})
}

// decode reads a request's object and checks what the apiserver checks before storing it:
// kind and apiVersion (when given), a valid name, the namespace of the path, a Secret's data.
func (h *kubeHandler) decode(w http.ResponseWriter, req *http.Request, r kubeResource, ns, urlName string) (map[string]any, map[string]any, bool) {
	var obj map[string]any

	if err := json.NewDecoder(io.LimitReader(req.Body, 3<<20)).Decode(&obj); err != nil {
		kubeStatus(w, http.StatusBadRequest, "BadRequest", "the body of the request was in an unknown format: "+err.Error(), nil)

		return nil, nil, false
	}

	if k, ok := obj["kind"]; ok && k != r.kind {
		kubeStatus(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("the kind in the data (%v) does not match the expected kind (%s)", k, r.kind), nil)

		return nil, nil, false
	}

	if v, ok := obj["apiVersion"]; ok && v != "v1" {
		kubeStatus(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("the API version in the data (%v) does not match the expected API version (v1)", v), nil)

		return nil, nil, false
	}

	obj["kind"], obj["apiVersion"] = r.kind, "v1"

	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}

	name, _ := meta["name"].(string)

	switch {
	case urlName != "" && name != "" && name != urlName:
		kubeStatus(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, urlName), nil)

		return nil, nil, false
	case urlName != "":
		name = urlName
	}

	if name == "" || len(name) > 253 || !dns1123Subdomain.MatchString(name) {
		kubeStatus(w, http.StatusUnprocessableEntity, "Invalid", fmt.Sprintf("%s %q is invalid: metadata.name: Invalid value: %q: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'", r.kind, name, name),
			map[string]any{"name": name, "kind": r.kind})

		return nil, nil, false
	}

	meta["name"] = name

	if r.namespaced {
		if got, ok := meta["namespace"].(string); ok && got != "" && got != ns {
			kubeStatus(w, http.StatusBadRequest, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request", nil)

			return nil, nil, false
		}

		meta["namespace"] = ns
	}

	if r == resSecrets {
		if !normaliseSecret(w, obj) {
			return nil, nil, false
		}
	}

	return obj, meta, true
}

// normaliseSecret checks data's values are base64 and folds stringData into data, as the
// apiserver does (stringData is write-only).
func normaliseSecret(w http.ResponseWriter, obj map[string]any) bool {
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}

	for k, v := range data {
		s, ok := v.(string)
		if _, err := base64.StdEncoding.DecodeString(s); !ok || err != nil {
			kubeStatus(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in data[%q]", k), nil)

			return false
		}
	}

	if sd, ok := obj["stringData"].(map[string]any); ok {
		for k, v := range sd {
			s, _ := v.(string)
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}

		delete(obj, "stringData")
	}

	if len(data) > 0 {
		obj["data"] = data
	}

	if t, _ := obj["type"].(string); t == "" {
		obj["type"] = "Opaque"
	}

	return true
}

// storedError is an HTTP answer decided inside an etcd transaction.
type storedError struct {
	code          int
	reason, msg   string
	name, plural  string
	withoutDetail bool
}

func (e *storedError) Error() string { return e.msg }

func (e *storedError) write(w http.ResponseWriter) {
	var details map[string]any
	if !e.withoutDetail {
		details = map[string]any{"name": e.name, "kind": e.plural}
	}

	kubeStatus(w, e.code, e.reason, e.msg, details)
}

func writeStored(w http.ResponseWriter, err error) {
	var se *storedError
	if errors.As(err, &se) {
		se.write(w)

		return
	}

	kubeStatus(w, http.StatusInternalServerError, "InternalError", err.Error(), nil)
}

func (h *kubeHandler) create(r kubeResource) http.HandlerFunc {
	return h.withStore(func(w http.ResponseWriter, req *http.Request, d *etcdData) {
		ns := req.PathValue("ns")

		obj, meta, ok := h.decode(w, req, r, ns, "")
		if !ok || !h.namespaceExists(w, d, r, ns) {
			return
		}

		name := meta["name"].(string) //nolint:forcetypeassert // set by decode

		delete(meta, "resourceVersion")
		meta["uid"] = newUID()
		meta["creationTimestamp"] = h.now().UTC().Format(time.RFC3339)

		kv, err := d.txn(registryKey(r, ns, name), func(_ etcdKV, exists bool) error {
			if exists {
				return &storedError{code: http.StatusConflict, reason: "AlreadyExists", msg: fmt.Sprintf("%s %q already exists", r.plural, name), name: name, plural: r.plural}
			}

			return nil
		}, func(int64) ([]byte, error) { return json.Marshal(obj) })
		writeStoredKV(w, http.StatusCreated, kv, err)
	})
}

func (h *kubeHandler) update(r kubeResource) http.HandlerFunc {
	return h.withStore(func(w http.ResponseWriter, req *http.Request, d *etcdData) {
		ns, name := req.PathValue("ns"), req.PathValue("name")

		obj, meta, ok := h.decode(w, req, r, ns, name)
		if !ok {
			return
		}

		want, _ := meta["resourceVersion"].(string)
		delete(meta, "resourceVersion")

		kv, err := d.txn(registryKey(r, ns, name), func(cur etcdKV, exists bool) error {
			if !exists {
				return errNotFound(r, name)
			}

			if want != "" && want != strconv.FormatInt(cur.Mod, 10) {
				return &storedError{code: http.StatusConflict, reason: "Conflict", name: name, plural: r.plural,
					msg: fmt.Sprintf("Operation cannot be fulfilled on %s %q: the object has been modified; please apply your changes to the latest version and try again", r.plural, name)}
			}

			// uid and creationTimestamp are the stored object's, whatever the request says.
			var prev map[string]any
			if err := json.Unmarshal(cur.Value, &prev); err == nil {
				if pm, ok := prev["metadata"].(map[string]any); ok {
					meta["uid"], meta["creationTimestamp"] = pm["uid"], pm["creationTimestamp"]
				}
			}

			return nil
		}, func(int64) ([]byte, error) { return json.Marshal(obj) })
		writeStoredKV(w, http.StatusOK, kv, err)
	})
}

func (h *kubeHandler) remove(r kubeResource) http.HandlerFunc {
	return h.withStore(func(w http.ResponseWriter, req *http.Request, d *etcdData) {
		ns, name := req.PathValue("ns"), req.PathValue("name")

		kv, err := d.txn(registryKey(r, ns, name), func(_ etcdKV, exists bool) error {
			if !exists {
				return errNotFound(r, name)
			}

			return nil
		}, func(int64) ([]byte, error) { return nil, nil })
		if err != nil {
			writeStored(w, err)

			return
		}

		var prev map[string]any

		uid := ""
		if json.Unmarshal(kv.Value, &prev) == nil {
			if pm, ok := prev["metadata"].(map[string]any); ok {
				uid, _ = pm["uid"].(string)
			}
		}

		writeJSON(w, http.StatusOK, map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
			"details": map[string]any{"name": name, "kind": r.plural, "uid": uid}})
	})
}
