package talos

import (
	"errors"
	"fmt"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// DefaultTalosVersion is the version the seed pins (SPEC §4).
const DefaultTalosVersion = "v1.13.11"

// ErrUnsupportedTalosVersion is returned for a Talos version whose config form this build cannot
// emit. Today that is 1.14 and later (the machinery library pinned in go.mod is v1.13.9, which has
// neither the 1.14 contract nor its multi-document types) and anything older than 1.12 (before the
// HostnameConfig document that pocbot patches).
var ErrUnsupportedTalosVersion = errors.New("unsupported Talos version")

var (
	minContract = config.TalosVersion1_12
	maxContract = config.TalosVersion1_13
)

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
		return nil, fmt.Errorf("talos version %q: %w: the Talos machinery library in this build (v1.13.9) knows contracts up to %s and cannot emit the %s multi-document config; pin talos_version to %s or upgrade the machinery module",
			talosVersion, ErrUnsupportedTalosVersion, maxContract, c, DefaultTalosVersion)
	}

	if minContract.Greater(c) {
		return nil, fmt.Errorf("talos version %q: %w: pocbot needs the %s contract or later (HostnameConfig document); use %s",
			talosVersion, ErrUnsupportedTalosVersion, minContract, DefaultTalosVersion)
	}

	return c, nil
}

// DefaultKubernetesVersion returns the Kubernetes version the machinery library defaults to.
func DefaultKubernetesVersion() string {
	return constants.DefaultKubernetesVersion
}
