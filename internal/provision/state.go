package provision

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
)

// StateVersion is the schema version of State; bump it on an incompatible change.
const StateVersion = 1

// State is the encrypted body of one cluster's document. The engine mutates it only through a
// Run; the caller persists it through a Saver.
type State struct {
	Version   int    `json:"version"`
	ClusterID string `json:"cluster_id"`
	Spec      Spec   `json:"spec"`
	// Resources maps a graph node name to what exists for it.
	Resources map[string]*Record `json:"resources"`
	// SSHKey is the key pair the bot generated for this cluster (opens the worker's rescue session).
	SSHKey *SSHKeyPair `json:"ssh_key,omitempty"`
	// Triggers holds the trigger hash last applied by out-of-state operations (docs/seed.md, Work outside the state), by node.
	Triggers map[string]string `json:"triggers,omitempty"`
	// Secrets and Outputs are free for other packages (Talos secrets bundle, kubeconfig, endpoints).
	Secrets map[string][]byte `json:"secrets,omitempty"`
	Outputs map[string]string `json:"outputs,omitempty"`
	// CancelRequested asks a running up to stop between steps (set by a down).
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// Record is one resource the engine made (or adopted by tag).
type Record struct {
	Kind   string            `json:"kind"`
	ID     string            `json:"id"`
	Zone   string            `json:"zone,omitempty"`
	Status string            `json:"status,omitempty"`
	Attrs  map[string]string `json:"attrs,omitempty"`
}

// SSHKeyPair is an ed25519 key pair; PrivateKey is an OpenSSH PEM block.
type SSHKeyPair struct {
	PublicKey  string `json:"public_key"`  // authorized_keys line
	PrivateKey []byte `json:"private_key"` // "-----BEGIN OPENSSH PRIVATE KEY-----"
}

// Signer parses the private half for an SSH client.
func (k *SSHKeyPair) Signer() (ssh.Signer, error) {
	s, err := ssh.ParsePrivateKey(k.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("parse the cluster's SSH private key from state: %w", err)
	}
	return s, nil
}

// GenerateSSHKey makes a fresh ed25519 pair whose public line carries comment.
func GenerateSSHKey(comment string) (*SSHKeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("encode ed25519 private key: %w", err)
	}
	spub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode ed25519 public key: %w", err)
	}
	line := string(ssh.MarshalAuthorizedKey(spub))
	line = line[:len(line)-1] + " " + comment
	return &SSHKeyPair{PublicKey: line, PrivateKey: pem.EncodeToMemory(block)}, nil
}

// NewState starts the state of a new cluster, with its SSH key pair.
func NewState(clusterID string, spec Spec) (*State, error) {
	if err := ValidateClusterID(clusterID); err != nil {
		return nil, err
	}
	key, err := GenerateSSHKey("pocbot-" + clusterID)
	if err != nil {
		return nil, err
	}
	st := &State{Version: StateVersion, ClusterID: clusterID, Spec: spec, SSHKey: key}
	st.init()
	return st, nil
}

func (st *State) init() {
	if st.Resources == nil {
		st.Resources = map[string]*Record{}
	}
	if st.Triggers == nil {
		st.Triggers = map[string]string{}
	}
	if st.Secrets == nil {
		st.Secrets = map[string][]byte{}
	}
	if st.Outputs == nil {
		st.Outputs = map[string]string{}
	}
}

// Clone deep-copies the state (through JSON: the state is its JSON form).
func (st *State) Clone() *State {
	b, err := json.Marshal(st)
	if err != nil {
		panic("provision: state does not marshal: " + err.Error()) // only plain data inside
	}
	var c State
	if err := json.Unmarshal(b, &c); err != nil {
		panic("provision: state does not unmarshal: " + err.Error())
	}
	c.init()
	return &c
}

// Saver persists the state. Save is called after every change (an id is recorded as soon as
// create returns) and must write the whole document atomically; it must not keep st.
type Saver interface {
	Save(ctx context.Context, st *State) error
}

// CancelChecker is optionally implemented by a Saver: the engine asks it between steps whether a
// cancel was recorded by another run (a down stopping an up).
type CancelChecker interface {
	CancelRequested(ctx context.Context) (bool, error)
}

// MemorySaver keeps the last saved state in memory (tests, dry runs, the CLI's demo world).
type MemorySaver struct {
	mu     chan struct{}
	last   *State
	saves  int
	cancel bool
}

// NewMemorySaver returns an empty MemorySaver.
func NewMemorySaver() *MemorySaver { return &MemorySaver{mu: make(chan struct{}, 1)} }

// Save implements Saver.
func (m *MemorySaver) Save(ctx context.Context, st *State) error {
	select {
	case m.mu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-m.mu }()
	m.last = st.Clone()
	m.saves++
	return nil
}

// Last returns a copy of the last saved state (nil before the first save) and the save count.
func (m *MemorySaver) Last() (*State, int) {
	m.mu <- struct{}{}
	defer func() { <-m.mu }()
	if m.last == nil {
		return nil, m.saves
	}
	return m.last.Clone(), m.saves
}

// RequestCancel records a cancel request, as a concurrent down would.
func (m *MemorySaver) RequestCancel() {
	m.mu <- struct{}{}
	m.cancel = true
	<-m.mu
}

// CancelRequested implements CancelChecker.
func (m *MemorySaver) CancelRequested(ctx context.Context) (bool, error) {
	m.mu <- struct{}{}
	defer func() { <-m.mu }()
	return m.cancel, nil
}
