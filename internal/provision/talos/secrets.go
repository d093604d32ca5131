package talos

import (
	"bytes"
	"fmt"

	"github.com/pocbot/pocbot/internal/settings"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"go.yaml.in/yaml/v4"
)

// NewSecrets generates a fresh secrets bundle (CAs, etcd and service-account keys, tokens) for
// talosVersion's contract and returns it as YAML. The caller keeps it in the encrypted state and
// hands it back to every later Generate, so that reruns produce configs for the same cluster.
// saKey chooses the service-account key's type ("" is the contract's, RSA since Talos 1.7).
func NewSecrets(talosVersion string, saKey settings.ServiceAccountKey) ([]byte, error) {
	contract, err := Contract(talosVersion)
	if err != nil {
		return nil, err
	}

	var opts []secrets.Option
	switch saKey {
	case "", settings.ServiceAccountKeyRSA:
	case settings.ServiceAccountKeyECDSA:
		opts = append(opts, secrets.WithECDSAServiceAccountKey())
	default:
		return nil, fmt.Errorf("generate Talos secrets bundle: service-account key type %q: %w", saKey, settings.CheckServiceAccountKey(string(saKey)))
	}

	bundle, err := secrets.NewBundle(secrets.NewClock(), contract, opts...)
	if err != nil {
		return nil, fmt.Errorf("generate Talos secrets bundle for %s: %w", contract, err)
	}

	out, err := yaml.Marshal(bundle)
	if err != nil {
		return nil, fmt.Errorf("encode Talos secrets bundle: %w", err)
	}

	return out, nil
}

// LoadSecrets decodes a bundle made by NewSecrets and checks it is complete.
func LoadSecrets(data []byte) (*secrets.Bundle, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("load Talos secrets bundle: empty input: generate one with NewSecrets and keep it in the state")
	}

	bundle := &secrets.Bundle{Clock: secrets.NewClock()}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)

	if err := dec.Decode(bundle); err != nil {
		return nil, fmt.Errorf("decode Talos secrets bundle: %w", err)
	}

	// The contract only matters to a bundle for a cluster without Kubernetes or etcd; pocbot's
	// clusters have both, so the current (strictest) contract checks every part.
	if err := bundle.Validate(config.TalosVersionCurrent); err != nil {
		return nil, fmt.Errorf("Talos secrets bundle is incomplete: %w", err)
	}

	return bundle, nil
}
