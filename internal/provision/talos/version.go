package talos

import (
	"errors"
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/compatibility"
	"github.com/siderolabs/talos/pkg/machinery/config"

	"github.com/pocbot/pocbot/internal/settings"
)

// DefaultTalosVersion is the version the seed pins (docs/seed.md, Talos configuration), defined in the settings table.
const DefaultTalosVersion = settings.DefaultTalosVersion

// ErrUnsupportedTalosVersion is returned for a Talos version whose config form this build cannot
// emit: anything newer than the machinery library pinned in go.mod (v1.14.1, contracts up to
// v1.14) and anything older than 1.12 (before the HostnameConfig document that pocbot patches).
var ErrUnsupportedTalosVersion = errors.New("unsupported Talos version")

var (
	minContract = config.TalosVersion1_12
	maxContract = config.TalosVersion1_14
)

// defaultKubernetes is the Kubernetes version generated for each supported Talos minor when
// Input.KubernetesVersion is empty. The machinery library's own default (constants.
// DefaultKubernetesVersion, 1.37.0 in v1.14.1) follows the library, not the node, and is outside
// the pinned Cilium's tested range (1.30–1.33, cilium.go). Every minor gets PinnedKubernetesVersion,
// which each runs (Talos 1.12: 1.30–1.35, 1.13: 1.31–1.36, 1.14: 1.32–1.37, machinery's
// compatibility table); a test keeps each entry inside both ranges.
var defaultKubernetes = map[string]string{
	"v1.12": PinnedKubernetesVersion,
	"v1.13": PinnedKubernetesVersion,
	"v1.14": PinnedKubernetesVersion,
}

// Contract returns the machinery version contract for a Talos version such as "v1.13.11".
func Contract(talosVersion string) (*config.VersionContract, error) {
	if talosVersion == "" {
		talosVersion = DefaultTalosVersion
	}

	c, err := config.ParseContractFromVersion(talosVersion)
	if err != nil {
		return nil, fmt.Errorf("talos version %q: %w: use a version such as %s", talosVersion, err, DefaultTalosVersion)
	}

	if c.Greater(maxContract) {
		return nil, fmt.Errorf("talos version %q: %w: the Talos machinery library in this build (v1.14.1) knows contracts up to %s and cannot emit the %s config; pin talos_version to %s or upgrade the machinery module",
			talosVersion, ErrUnsupportedTalosVersion, maxContract, c, DefaultTalosVersion)
	}

	if minContract.Greater(c) {
		return nil, fmt.Errorf("talos version %q: %w: pocbot needs the %s contract or later (HostnameConfig document); use %s",
			talosVersion, ErrUnsupportedTalosVersion, minContract, DefaultTalosVersion)
	}

	return c, nil
}

// DefaultKubernetesVersion returns the Kubernetes version generated for a Talos version when none
// is given (see defaultKubernetes); "" means DefaultTalosVersion.
func DefaultKubernetesVersion(talosVersion string) (string, error) {
	c, err := Contract(talosVersion)
	if err != nil {
		return "", err
	}

	v, ok := defaultKubernetes[c.String()]
	if !ok {
		return "", fmt.Errorf("talos version %q: %w: no default Kubernetes version for %s", talosVersion, ErrUnsupportedTalosVersion, c)
	}

	return v, nil
}

// CheckKubernetesVersion refuses a Kubernetes version the Talos version does not run, with
// machinery's compatibility table (e.g. Talos 1.13: 1.31.0 up to 1.36.x).
func CheckKubernetesVersion(talosVersion, kubernetesVersion string) error {
	if talosVersion == "" {
		talosVersion = DefaultTalosVersion
	}

	tv, err := compatibility.ParseTalosVersion(&machine.VersionInfo{Tag: "v" + trimV(talosVersion)})
	if err != nil {
		return fmt.Errorf("talos version %q: %w", talosVersion, err)
	}

	kv, err := compatibility.ParseKubernetesVersion(kubernetesVersion)
	if err != nil {
		return fmt.Errorf("kubernetes version %q: %w", kubernetesVersion, err)
	}

	if err := kv.SupportedWith(tv); err != nil {
		return fmt.Errorf("kubernetes version %q with Talos %s: %w", kubernetesVersion, talosVersion, err)
	}

	return nil
}

func trimV(s string) string {
	if len(s) > 0 && s[0] == 'v' {
		return s[1:]
	}

	return s
}
