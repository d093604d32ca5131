package repoinit

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	gh "github.com/google/go-github/v88/github"
)

// RecordVariable is the repository variable in which init records what it wrote: where each
// secret went and which IAM identities it made or found. Uninstall deletes only what it names.
//
// Anyone who may write a repository variable could write one of this name (GitHub's docs do not
// settle whether a writer may), so the record carries a MAC under a key derived from the App's
// private key, which init and uninstall hold and a GitHub user does not: a record that does not
// verify is ignored, as if there were none (uninstall then deletes no secret and says so).
const RecordVariable = "POCBOT_INIT"

// recordInfo binds a MAC to its purpose and format.
const recordInfo = "pocbot init record v1"

// record is what init wrote on one repository.
type record struct {
	Repository string          `json:"repository"`
	Secrets    []writtenSecret `json:"secrets,omitempty"`
	IAM        []iamRecord     `json:"iam,omitempty"`
}

// writtenSecret is a secret init wrote: its name and where (Env "" is the repository's secrets).
type writtenSecret struct {
	Name string `json:"name"`
	Env  string `json:"env,omitempty"`
}

// iamRecord is an IAM application init made or found for this repository's project, and the
// API key it minted on it for this repository.
type iamRecord struct {
	Identity      string `json:"identity"` // identity.name: pocbot or pocbot-presign
	ProjectID     string `json:"project_id"`
	ApplicationID string `json:"application_id"`
	Made          bool   `json:"made,omitempty"` // this repository's init created it (else it found it)
	AccessKey     string `json:"access_key,omitempty"`
}

// wrote tells whether init recorded writing the secret name in env ("" = the repository's).
func (rec *record) wrote(name, env string) bool {
	return slices.ContainsFunc(rec.Secrets, func(s writtenSecret) bool {
		return strings.EqualFold(s.Name, name) && strings.EqualFold(s.Env, env)
	})
}

func (rec *record) addSecret(name, env string) {
	if !rec.wrote(name, env) {
		rec.Secrets = append(rec.Secrets, writtenSecret{Name: strings.ToUpper(name), Env: env})
	}
}

func (rec *record) forgetSecret(name, env string) {
	rec.Secrets = slices.DeleteFunc(rec.Secrets, func(s writtenSecret) bool {
		return strings.EqualFold(s.Name, name) && strings.EqualFold(s.Env, env)
	})
}

// identity is the recorded application of identity id in project (nil: none).
func (rec *record) identity(id, project string) *iamRecord {
	for i := range rec.IAM {
		if rec.IAM[i].Identity == id && rec.IAM[i].ProjectID == project {
			return &rec.IAM[i]
		}
	}
	return nil
}

// setIdentity records x, replacing the entry of the same identity and project.
func (rec *record) setIdentity(x iamRecord) {
	if cur := rec.identity(x.Identity, x.ProjectID); cur != nil {
		*cur = x
		return
	}
	rec.IAM = append(rec.IAM, x)
}

func (rec *record) forgetIdentity(id, project string) {
	rec.IAM = slices.DeleteFunc(rec.IAM, func(x iamRecord) bool { return x.Identity == id && x.ProjectID == project })
}

func (rec *record) empty() bool { return len(rec.Secrets) == 0 && len(rec.IAM) == 0 }

// encode is the record in a stable form: equal records encode equally, so a rerun that changed
// nothing writes nothing.
func (rec *record) encode() []byte {
	c := *rec
	c.Secrets = slices.Clone(rec.Secrets)
	c.IAM = slices.Clone(rec.IAM)
	slices.SortFunc(c.Secrets, func(a, b writtenSecret) int { return strings.Compare(a.Env+"\x00"+a.Name, b.Env+"\x00"+b.Name) })
	slices.SortFunc(c.IAM, func(a, b iamRecord) int {
		return strings.Compare(a.ProjectID+"\x00"+a.Identity, b.ProjectID+"\x00"+b.Identity)
	})
	b, _ := json.Marshal(c) // strings and bools: cannot fail
	return b
}

// sealedRecord is the variable's value.
type sealedRecord struct {
	Record json.RawMessage `json:"record"`
	MAC    string          `json:"mac"`
}

// recordKey derives the record's MAC key from the App's private key (PEM, PKCS#1 or PKCS#8):
// the same key however the PEM is wrapped.
func recordKey(appKey []byte) ([]byte, error) {
	block, _ := pem.Decode(appKey)
	if block == nil {
		return nil, errors.New("the App's private key is not PEM")
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		key = k
	} else if k, err8 := x509.ParsePKCS8PrivateKey(block.Bytes); err8 == nil {
		if rk, ok := k.(*rsa.PrivateKey); ok {
			key = rk
		}
	}
	if key == nil {
		return nil, errors.New("the App's private key is not an RSA key")
	}
	return hkdf.Key(sha256.New, x509.MarshalPKCS1PrivateKey(key), nil, recordInfo, 32)
}

func recordMAC(key []byte, repo string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(recordInfo + "\x00" + strings.ToLower(repo) + "\x00"))
	m.Write(body)
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// recordStore reads and writes the record of one repository.
type recordStore struct {
	c           *gh.Client
	owner, name string
	key         []byte // nil: no App key, nothing can be trusted or written
	value       string // the variable's value as last read or written ("": none)
}

func (s *recordStore) repo() string { return s.owner + "/" + s.name }

// load reads the record. A missing variable is an empty record; a variable that does not verify
// is an empty record too, and untrusted says why (for the output).
func (s *recordStore) load(ctx context.Context) (rec *record, untrusted string, err error) {
	rec = &record{Repository: s.repo()}
	v, resp, err := s.c.Actions.GetRepoVariable(ctx, s.owner, s.name, RecordVariable)
	switch {
	case resp != nil && resp.StatusCode == http.StatusNotFound:
		return rec, "", nil
	case err != nil:
		return nil, "", fmt.Errorf("read the repository variable %s of %s: %w (the token needs the repo scope, or Variables: read)", RecordVariable, s.repo(), err)
	}
	s.value = v.Value
	if s.key == nil {
		return rec, "no App private key was given, so it cannot be checked", nil
	}
	var sealed sealedRecord
	var got record
	switch {
	case json.Unmarshal([]byte(v.Value), &sealed) != nil || sealed.MAC == "":
		return rec, "it is not a record of init's", nil
	case !hmac.Equal([]byte(sealed.MAC), []byte(recordMAC(s.key, s.repo(), sealed.Record))):
		return rec, "its MAC does not verify with this App's key (someone else wrote it, or the App's key changed)", nil
	case json.Unmarshal(sealed.Record, &got) != nil || !strings.EqualFold(got.Repository, s.repo()):
		return rec, "it names another repository", nil
	}
	return &got, "", nil
}

// save writes rec when it differs from what the variable holds; it reports whether it wrote.
func (s *recordStore) save(ctx context.Context, rec *record) (bool, error) {
	if s.key == nil {
		return false, errors.New("no App private key: init's record cannot be written")
	}
	body := rec.encode()
	value, _ := json.Marshal(sealedRecord{Record: body, MAC: recordMAC(s.key, s.repo(), body)})
	if string(value) == s.value {
		return false, nil
	}
	v := &gh.ActionsVariable{Name: RecordVariable, Value: string(value)}
	var err error
	if s.value == "" {
		_, err = s.c.Actions.CreateRepoVariable(ctx, s.owner, s.name, v)
	} else {
		_, err = s.c.Actions.UpdateRepoVariable(ctx, s.owner, s.name, v)
	}
	if err != nil {
		return false, fmt.Errorf("write the repository variable %s of %s (init's record of what it wrote): %w (the token needs the repo scope, or Variables: write)", RecordVariable, s.repo(), err)
	}
	s.value = string(value)
	return true, nil
}

// remove deletes the variable (gone already counts as done).
func (s *recordStore) remove(ctx context.Context) error {
	if s.value == "" {
		return nil
	}
	resp, err := s.c.Actions.DeleteRepoVariable(ctx, s.owner, s.name, RecordVariable)
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return fmt.Errorf("delete the repository variable %s of %s: %w (rerun)", RecordVariable, s.repo(), err)
	}
	s.value = ""
	return nil
}

// loadRecord reads init's record of earlier runs; one that does not verify is replaced by the
// first write of this run.
func (r *runner) loadRecord(ctx context.Context) error {
	key, err := recordKey(r.cfg.AppKey)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	r.store = &recordStore{c: r.c, owner: r.owner, name: r.name, key: key}
	rec, untrusted, err := r.store.load(ctx)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if untrusted != "" {
		fmt.Fprintf(r.out, "! the repository variable %s is not init's record (%s): ignored, and replaced by this run's\n", RecordVariable, untrusted)
	}
	r.rec = rec
	return nil
}

// saveRecord writes the record when it changed (never in a dry run).
func (r *runner) saveRecord(ctx context.Context) error {
	if r.cfg.DryRun {
		return nil
	}
	wrote, err := r.store.save(ctx, r.rec)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if wrote {
		r.rep.Changes++
	}
	return nil
}

// openRecord reads init's record for uninstall: with appKey, the record if it verifies; without,
// or when it does not verify, an empty one (no secret is deleted) and the output says why.
func openRecord(ctx context.Context, c *gh.Client, owner, name string, appKey []byte, out io.Writer) (*recordStore, *record, error) {
	store := &recordStore{c: c, owner: owner, name: name}
	if len(appKey) > 0 {
		key, err := recordKey(appKey)
		if err != nil {
			return nil, nil, fmt.Errorf("uninstall: %w (POC_APP_PRIVATE_KEY)", err)
		}
		store.key = key
	}
	rec, untrusted, err := store.load(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("uninstall: %w", err)
	}
	switch {
	case untrusted != "":
		fmt.Fprintf(out, "! the repository variable %s cannot be used: %s. Uninstall deletes only the secrets init's record names: none here\n", RecordVariable, untrusted)
		store.key = nil // never rewritten nor deleted by this run
	case store.value == "":
		fmt.Fprintf(out, "! no record of init's in %s (the repository variable %s): it was set up by hand or by an older init, so uninstall deletes no secret\n", store.repo(), RecordVariable)
	}
	return store, rec, nil
}

// closeRecord writes back what is left of the record once uninstall removed what it names, or
// deletes the variable when nothing is left; it returns the number of writing requests.
func closeRecord(ctx context.Context, store *recordStore, rec *record, dryRun bool, out io.Writer) (int, error) {
	switch {
	case store.key == nil || store.value == "":
		return 0, nil
	case dryRun:
		fmt.Fprintf(out, "- would delete (or, when IAM identities stay, rewrite) the repository variable %s, init's record\n", RecordVariable)
		return 0, nil
	case rec.empty():
		if err := store.remove(ctx); err != nil {
			return 0, fmt.Errorf("uninstall: %w", err)
		}
		fmt.Fprintf(out, "- repository variable %s (init's record)\n", RecordVariable)
		return 1, nil
	}
	wrote, err := store.save(ctx, rec)
	if err != nil {
		return 0, fmt.Errorf("uninstall: %w", err)
	}
	if wrote {
		fmt.Fprintf(out, "✓ repository variable %s kept: it still records the IAM identities (uninstall --iam removes them)\n", RecordVariable)
		return 1, nil
	}
	return 0, nil
}
