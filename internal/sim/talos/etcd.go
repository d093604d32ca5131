package talos

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// etcdData is a cluster's etcd keyspace as the stand-in keeps it: the Kubernetes objects the
// kube-apiserver stand-in serves, under the keys the real apiserver uses (/registry/<resource>/
// <namespace>/<name>), each with the revisions etcd gives it. It exists from the cluster's
// Bootstrap (empty, or restored from a snapshot) until the last control plane holding it goes.
type etcdData struct {
	mu  sync.Mutex
	rev int64
	kvs map[string]etcdKV
}

type etcdKV struct {
	Key    string `json:"key"`
	Value  []byte `json:"value"`
	Create int64  `json:"create_revision"`
	Mod    int64  `json:"mod_revision"`
}

func newEtcdData() *etcdData { return &etcdData{rev: 1, kvs: map[string]etcdKV{}} }

// get returns a key's value and modification revision.
func (d *etcdData) get(key string) (etcdKV, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()

	kv, ok := d.kvs[key]

	return kv, ok
}

// list returns the keys under prefix, sorted, and the store's revision.
func (d *etcdData) list(prefix string) ([]etcdKV, int64) {
	d.mu.Lock()
	defer d.mu.Unlock()

	var out []etcdKV

	for k, kv := range d.kvs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, kv)
		}
	}

	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })

	return out, d.rev
}

// txn writes key when cond holds for its current entry (ok: present), returning the new revision;
// value nil deletes. It is etcd's compare-and-swap, the apiserver's guaranteed update.
func (d *etcdData) txn(key string, cond func(cur etcdKV, ok bool) error, value func(rev int64) ([]byte, error)) (etcdKV, error) {
	d.mu.Lock()
	defer d.mu.Unlock()

	cur, ok := d.kvs[key]
	if err := cond(cur, ok); err != nil {
		return etcdKV{}, err
	}

	rev := d.rev + 1

	v, err := value(rev)
	if err != nil {
		return etcdKV{}, err
	}

	d.rev = rev

	if v == nil {
		delete(d.kvs, key)

		return cur, nil
	}

	kv := etcdKV{Key: key, Value: v, Create: rev, Mod: rev}
	if ok {
		kv.Create = cur.Create
	}

	d.kvs[key] = kv

	return kv, nil
}

// Snapshot format. A real snapshot is etcd's bbolt database file (pages of 4096 bytes) followed
// by the SHA-256 of the database, sent by etcd's maintenance Snapshot call as its last message;
// etcdutl tells a snapshot that carries the hash by its size (size mod 512 == 32). The stand-in
// keeps that framing exactly — the body a multiple of 4096 bytes, the SHA-256 of the body after
// it — and puts its own body inside: a magic line, then the keyspace as JSON, padded with
// newlines. The body is not bbolt; nothing outside this package reads it.
const (
	snapshotMagic = "POCBOT-SIM-ETCD-SNAPSHOT v1\n"
	snapshotPage  = 4096
)

type snapshotBody struct {
	Revision int64    `json:"revision"`
	KVs      []etcdKV `json:"kvs"`
}

// snapshot serialises the keyspace as a snapshot stream: body, then its SHA-256.
func (d *etcdData) snapshot() []byte {
	d.mu.Lock()
	body := snapshotBody{Revision: d.rev, KVs: make([]etcdKV, 0, len(d.kvs))}

	for _, kv := range d.kvs {
		body.KVs = append(body.KVs, kv)
	}
	d.mu.Unlock()

	sort.Slice(body.KVs, func(i, j int) bool { return body.KVs[i].Key < body.KVs[j].Key })

	js, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("sim/talos: marshal etcd snapshot: %v", err)) // plain data: cannot fail
	}

	buf := append([]byte(snapshotMagic), js...)
	buf = append(buf, '\n')

	if pad := len(buf) % snapshotPage; pad != 0 {
		buf = append(buf, bytes.Repeat([]byte{'\n'}, snapshotPage-pad)...)
	}

	sum := sha256.Sum256(buf)

	return append(buf, sum[:]...)
}

// errSnapshotStatus is a snapshot that does not open as a database: etcd's restore stops before
// it writes anything to the data directory.
var errSnapshotStatus = errors.New("error verifying snapshot")

// hasChecksum is etcdutl's test: a snapshot carries its SHA-256 when its size mod 512 is 32.
func hasChecksum(n int) bool { return n%512 == sha256.Size }

// restoreSnapshot is what Talos's etcd service does with the uploaded snapshot on a Bootstrap
// with recover_etcd: Status (the file must open as a database), then Restore (the hash appended
// to the file must match the database unless skipHashCheck). A Status failure wraps
// errSnapshotStatus (the data directory stays empty); a hash failure does not (etcdutl copied
// the database into the data directory before it compared the hash, so the directory is no
// longer empty).
func restoreSnapshot(snap []byte, skipHashCheck bool) (*etcdData, error) {
	if snap == nil {
		return nil, fmt.Errorf("%w: open /var/lib/etcd.snapshot: no such file or directory", errSnapshotStatus)
	}

	db := snap
	withHash := hasChecksum(len(snap))

	if withHash {
		db = snap[:len(snap)-sha256.Size]
	}

	body, err := parseSnapshotBody(db)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSnapshotStatus, err)
	}

	switch {
	case !withHash && !skipHashCheck:
		return nil, errors.New("error recovering from the snapshot: snapshot missing hash but --skip-hash-check=false")
	case withHash && !skipHashCheck:
		if sum := sha256.Sum256(db); !bytes.Equal(sum[:], snap[len(db):]) {
			return nil, fmt.Errorf("error recovering from the snapshot: expected sha256 %v, got %v", snap[len(db):], sum[:])
		}
	}

	d := newEtcdData()
	d.rev = max(body.Revision, 1)

	for _, kv := range body.KVs {
		d.kvs[kv.Key] = kv
	}

	return d, nil
}

func parseSnapshotBody(db []byte) (*snapshotBody, error) {
	rest, ok := bytes.CutPrefix(db, []byte(snapshotMagic))
	if !ok {
		return nil, errors.New("invalid database (not a snapshot of this etcd)")
	}

	var body snapshotBody

	dec := json.NewDecoder(bytes.NewReader(rest))
	if err := dec.Decode(&body); err != nil {
		return nil, fmt.Errorf("invalid database: %w", err)
	}

	if slices.ContainsFunc(rest[dec.InputOffset():], func(b byte) bool { return b != '\n' }) {
		return nil, errors.New("invalid database: bytes after the keyspace")
	}

	return &body, nil
}

// SnapshotKeys lists the keys a snapshot stream holds, verifying its framing and hash as a
// restore would: for tests that check what a bucket holds without a node.
func SnapshotKeys(snap []byte) ([]string, error) {
	d, err := restoreSnapshot(snap, false)
	if err != nil {
		return nil, err
	}

	kvs, _ := d.list("")
	keys := make([]string, 0, len(kvs))

	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}

	return keys, nil
}
